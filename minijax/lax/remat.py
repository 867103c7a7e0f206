"""`checkpoint` (remat) and `named_call`: call primitives over a staged jaxpr.

`named_call_p` is an inlined call that keeps a name in jaxprs and in the lowered module (a
`func.call` to a function of that name).  `remat_p` marks a computation whose intermediate
values reverse mode should recompute rather than save: its partial-evaluation rule computes
the known outputs now but saves no residuals; it stages the whole computation (restricted
to the unknown outputs) as one `remat_p` equation reading the known inputs, so the
backward pass re-runs the forward part: its transpose splits that equation's jaxpr by
partial evaluation into the recomputation and the linear rest, as JAX's does, so that no
non-linear equation (a `sin` in the primal carry of a recomputed `scan`) reaches a
transpose rule.  Both take `jaxpr` (a ClosedJaxpr without constants,
which are passed as leading arguments).
"""
from __future__ import annotations

import functools
from typing import Callable

from minijax.core import pretty
from minijax.core.effects import check_allowed, must_keep
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr, hoist_consts
from minijax.core.primitive import Primitive
from minijax.core.trace import set_current_trace
from minijax.interpreters import partial_eval as pe
from minijax.interpreters import ad
from minijax.lax.call import call_transpose_rule, register_call_rules
from minijax.lowering import mlir

__all__ = ["checkpoint", "remat", "named_call", "remat_p", "named_call_p", "checkpoint_policies"]


def _call_abstract_eval(*avals, jaxpr, **params):
  return jaxpr.out_avals, jaxpr.effects


def _call_impl(*args, jaxpr, **params):
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _pp_call(params, names, indent):
  lines = [f"{k}={v}" for k, v in params.items() if k != "jaxpr"]
  lines.append("jaxpr=" + pretty._pp_jaxpr_lines(params["jaxpr"], names, indent))
  return lines


def _stage_fun(fun, args, kwargs):
  """`(closed jaxpr with constants as leading inputs, constants, flat args, out tree)`."""
  jaxpr, consts, flat, out_tree = pe.trace_pytree_fun(fun, args, kwargs)
  closed, hoisted = hoist_consts(ClosedJaxpr(jaxpr, consts))
  return closed, hoisted, flat, out_tree


# ---- named_call
named_call_p = Primitive("named_call")
named_call_p.multiple_results = True
named_call_p.def_effectful_abstract_eval(_call_abstract_eval)
named_call_p.def_impl(_call_impl)
register_call_rules(named_call_p)
pretty.pp_rules[named_call_p] = _pp_call
mlir.register_lowering(named_call_p, lambda ctx, *args, jaxpr, name: mlir.call_lowered_function(
    ctx, name, jaxpr, *args))


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
  """`fun`, appearing as one `named_call` equation (and one named function when lowered)."""
  name = name or getattr(fun, "__name__", "named_call")

  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    closed, consts, flat, out_tree = _stage_fun(fun, args, kwargs)
    outs = named_call_p.bind(*consts, *flat, jaxpr=closed, name=name)
    return out_tree.unflatten(outs)
  return wrapped


# ---- checkpoint / remat
remat_p = Primitive("checkpoint")
remat_p.multiple_results = True
def _remat_abstract_eval(*avals, jaxpr, **params):
  if jaxpr.effects:
    check_allowed(jaxpr.effects, "remat", "checkpoint")
  return jaxpr.out_avals, jaxpr.effects


remat_p.def_effectful_abstract_eval(_remat_abstract_eval)
remat_p.def_impl(_call_impl)
register_call_rules(remat_p, partial_eval=False)
# (its transpose recomputes the primal part, split off by partial evaluation, then
# transposes the rest: the staged recomputation holds non-linear equations, loops included)
ad.primitive_transposes[remat_p] = call_transpose_rule(remat_p, lambda params, n: params,
                                                       split=True)
pretty.pp_rules[remat_p] = _pp_call
mlir.register_lowering(remat_p, lambda ctx, *args, jaxpr, **params: mlir.lower_call_inline(
    ctx, jaxpr, *args))


def _remat_partial_eval(trace, args, *, jaxpr, **params):
  unknowns = [trace.owns(x) for x in args]
  known, _, out_uk, num_res = pe.partial_eval_jaxpr(jaxpr, unknowns, instantiate=False)
  num_known_out = len(known.out_avals) - num_res
  known, _ = pe.dce_closed_jaxpr(known, [True] * num_known_out + [False] * num_res,
                                 instantiate=True)
  with set_current_trace(trace.parent):
    known_outs = iter(eval_jaxpr(known.jaxpr, known.consts,
                                 *(x for x, uk in zip(args, unknowns) if not uk)))
  if not any(out_uk) and not must_keep(jaxpr.effects):
    return list(known_outs)
  recompute, _ = pe.dce_closed_jaxpr(jaxpr, out_uk, instantiate=True)
  # `differentiated` marks the recomputation (as JAX does): effect handlers replay it.
  unknown_outs = iter(trace.stage(remat_p, args,
                                  dict(params, jaxpr=recompute, differentiated=True)))
  return [next(unknown_outs) if uk else next(known_outs) for uk in out_uk]


pe.partial_eval_rules[remat_p] = _remat_partial_eval


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy=None,
               static_argnums=()) -> Callable:
  """`fun`, whose intermediate values reverse-mode differentiation recomputes in the
  backward pass instead of saving (`policy` is accepted and ignored: nothing is saved)."""
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    static = {i: args[i] for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]

    def dyn_fun(*dyn_args, **kw):
      it = iter(dyn_args)
      return fun(*(static[i] if i in static else next(it) for i in range(len(args))), **kw)

    closed, consts, flat, out_tree = _stage_fun(dyn_fun, dyn, kwargs)
    outs = remat_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=prevent_cse)
    return out_tree.unflatten(outs)
  return wrapped


remat = checkpoint


class checkpoint_policies:
  """JAX's policy names, accepted by `checkpoint(policy=...)` so ported code runs.  This
  simple remat saves nothing whatever the policy says (it recomputes everything)."""

  @staticmethod
  def everything_saveable(prim, *avals, **params) -> bool:
    return True

  @staticmethod
  def nothing_saveable(prim, *avals, **params) -> bool:
    return False

  @staticmethod
  def dots_saveable(prim, *avals, **params) -> bool:
    return prim.name == "dot_general"

  checkpoint_dots = dots_saveable
  dots_with_no_batch_dims_saveable = dots_saveable

  @staticmethod
  def save_only_these_names(*names):
    return lambda prim, *avals, **params: prim.name == "name" and params.get("name") in names

  @staticmethod
  def save_any_names_but_these(*names):
    return lambda prim, *avals, **params: prim.name == "name" and params.get("name") not in names
