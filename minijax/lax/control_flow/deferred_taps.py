"""The deferral rules of control flow and calls (see `interpreters.deferral`).

`scan` runs its body's taps once per iteration, so their values leave the loop as extra
`ys`, stacked one row per iteration (a `Loop` in the plan).  A `cond` runs one branch: each
branch outputs its own taps' values and zeros in the places of the others', and the index
comes out beside them so that the host walks only the branch taken (a `Branch`).  Calls
(`jit`, `checkpoint`, `named_call`, `custom_jvp`/`custom_vjp` calls) are inlined: nothing
transforms the program after the deferral, which runs just before it is compiled.
`while_loop` has no rule (its trip count is unknown, so its taps' values have no fixed
place): a computation with a tap in one keeps all its taps immediate.
"""
from __future__ import annotations

from minijax.core.deliveries import Branch, Loop
from minijax.core.jaxpr import eval_jaxpr
from minijax.interpreters.deferral import deferral_rules, inline_call_rule, trace_deferred
from minijax.interpreters.partial_eval import trace_to_closed_jaxpr
from minijax.lax.control_flow.cond import cond_p
from minijax.lax.control_flow.scan import scan_p
from minijax.lax.structural import full


def _scan_deferral(eqn, ins):
  params = eqn.params
  body, plan = trace_deferred(params["jaxpr"])
  outs = scan_p.bind(*ins, **dict(params, jaxpr=body))
  n = len(eqn.outvars)
  return outs[:n], outs[n:], Loop(params["length"], params["reverse"], plan)


def _cond_deferral(eqn, ins):
  index, *args = ins
  n = len(eqn.outvars)
  traced = [trace_deferred(branch) for branch in eqn.params["branches"]]
  extra_avals = [branch.out_avals[n:] for branch, _ in traced]

  def padded(i, branch):
    def fun(*xs):
      outs = eval_jaxpr(branch.jaxpr, branch.consts, *xs)
      extras = []
      for j, avals in enumerate(extra_avals):
        extras += outs[n:] if j == i else [full(a.shape, 0, a.dtype) for a in avals]
      return [*outs[:n], *extras]
    return trace_to_closed_jaxpr(fun, branch.in_avals)

  branches = tuple(padded(i, branch) for i, (branch, _) in enumerate(traced))
  outs = cond_p.bind(index, *args, **dict(eqn.params, branches=branches))
  return outs[:n], [index, *outs[n:]], Branch([plan for _, plan in traced])


def _install() -> None:
  from minijax import custom_derivatives
  from minijax.lax import call, remat
  deferral_rules[scan_p] = _scan_deferral
  deferral_rules[cond_p] = _cond_deferral
  for prim in (call.jit_p, remat.remat_p, remat.named_call_p):
    deferral_rules[prim] = inline_call_rule("jaxpr")
  for prim in (custom_derivatives.custom_jvp_call_p, custom_derivatives.custom_vjp_call_p):
    deferral_rules[prim] = inline_call_rule("call_jaxpr")


_install()
