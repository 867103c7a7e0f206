"""Staging Python functions into jaxprs, and splitting jaxprs into known and unknown parts.

`DynamicJaxprTrace` records every primitive applied to its tracers as an equation, in
program order, so effects keep their order.  A value that is not one of its tracers is a
constant: Python scalars and 0-d numpy values become inline literals, anything else (an
Array, a numpy array, a tracer of an enclosing transformation) becomes a constant variable
of the jaxpr, with the value returned alongside so the caller can close over it.

Partial evaluation (`JaxprTrace`, a staging trace) splits a computation into the part that
can run now, from known values, and the part that must wait for unknown ones.  It is how
`linearize`/`vjp` separate the primal computation from the linear tangent computation, and
`partial_eval_jaxpr` applies it to a whole jaxpr (for `jit_p` and control flow).
`dce_jaxpr` removes unused equations, keeping every equation that has effects.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from minijax import tree_util
from minijax.config import config
from minijax.core import avals as avals_lib
from minijax.core import dtypes
from minijax.core.effects import must_keep
from minijax.interpreters.ad import creates_tangent_ref
from minijax.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var,
                                literalable, user_source_info)
from minijax.core.jaxpr import eval_jaxpr, typecheck_jaxpr
from minijax.core.trace import Trace, Tracer, check_no_leaks, new_trace, set_current_trace
from minijax.core import trace as trace_lib


class DynamicJaxprTracer(Tracer):
  __slots__ = ("_aval", "_var", "_debug_name")

  def __init__(self, trace, aval, var, debug_name=None):
    self._trace = trace
    self._aval = aval
    self._var = var
    self._debug_name = debug_name

  @property
  def aval(self):
    return self._aval


def _check_value(x) -> None:
  if isinstance(x, (Tracer, bool, int, float, complex, np.ndarray, np.generic)):
    return
  if hasattr(x, "aval") or (hasattr(x, "shape") and hasattr(x, "dtype")):
    return
  if type(x) in avals_lib.pytype_aval_mappings:  # a Token, or a type a library registered
    return
  raise TypeError(
      f"Argument '{x!s:.60}' of type {type(x)} is not a valid JAX type; "
      "arguments and results must be arrays, numpy arrays or Python scalars (or pytrees "
      "of them). Mark non-array arguments static with `static_argnums`.")


class DynamicJaxprTrace(Trace):
  def __init__(self):
    super().__init__()
    self.invars: list[Var] = []
    self.eqns: list[JaxprEqn] = []
    self.constvars: list[Var] = []
    self.consts: list[Any] = []
    self._const_var_by_id: dict[int, Var] = {}

  def new_arg(self, aval, debug_name=None) -> DynamicJaxprTracer:
    var = Var(aval)
    self.invars.append(var)
    return DynamicJaxprTracer(self, aval, var, debug_name)

  def new_literal(self, x) -> DynamicJaxprTracer:
    """A tracer of a 0-d host constant (`jnp.array(1.0)` under `jit`): traced like any
    other value, but inlined into the jaxpr as a literal."""
    atom = self.to_atom(x)
    return DynamicJaxprTracer(self, atom.aval, atom)

  def to_atom(self, x) -> Var | Literal:
    if self.owns(x):
      return x._var
    var = self._const_var_by_id.get(id(x))
    if var is not None:
      return var
    _check_value(x)
    if not isinstance(x, Tracer) and literalable(x):
      dtype, weak = dtypes.dtype_and_weak_type(x)
      return Literal(np.asarray(x, dtype) if not weak else x,
                     avals_lib.ShapedArray((), dtype, weak))
    aval = x.aval if isinstance(x, Tracer) else avals_lib.get_aval(x)
    var = Var(aval)
    self._const_var_by_id[id(x)] = var
    self.constvars.append(var)
    self.consts.append(x)
    return var

  def process_primitive(self, primitive, args, params):
    if trace_lib._context.eager_constant_folding and not any(isinstance(x, Tracer) for x in args):
      with set_current_trace(trace_lib.eval_trace()):
        return primitive.bind(*args, **params)
    in_atoms = [self.to_atom(x) for x in args]
    out_avals, effects = primitive.abstract_eval(*(a.aval for a in in_atoms), **params)
    if primitive.multiple_results:
      out_tracers = [DynamicJaxprTracer(self, a, Var(a)) for a in out_avals]
    else:
      out_tracers = [DynamicJaxprTracer(self, out_avals, Var(out_avals))]
    self.eqns.append(JaxprEqn(in_atoms, [t._var for t in out_tracers], primitive, params,
                              effects, user_source_info()))
    return out_tracers if primitive.multiple_results else out_tracers[0]

  def to_jaxpr(self, outs: Sequence[Any], debug_info=None) -> tuple[Jaxpr, list[Any]]:
    out_atoms = [self.to_atom(x) for x in outs]
    jaxpr = Jaxpr(self.constvars, self.invars, out_atoms, self.eqns, debug_info=debug_info)
    return jaxpr, list(self.consts)


def trace_to_jaxpr_dynamic(fun: Callable, in_avals: Sequence[Any],
                           debug_info=None) -> tuple[Jaxpr, list[Any]]:
  """Stages `fun(*flat_args) -> flat_outs` into a jaxpr and its constants."""
  trace = DynamicJaxprTrace()
  with new_trace(trace):
    names = getattr(debug_info, "arg_names", None) or [None] * len(in_avals)
    in_tracers = [trace.new_arg(a, n) for a, n in zip(in_avals, names)]
    outs = fun(*in_tracers)
    jaxpr, consts = trace.to_jaxpr(list(outs), debug_info)
  del in_tracers, outs
  check_no_leaks(trace)
  if config.enable_checks:
    typecheck_jaxpr(jaxpr)
  return jaxpr, consts


def trace_pytree_fun(fun: Callable, args: Sequence[Any], kwargs: dict | None = None):
  """Stages `fun(*args, **kwargs)`, whose arguments and result are pytrees.  Returns the
  jaxpr over the flat leaves, its constants, the flat arguments and the output tree."""
  flat, in_tree = tree_util.tree_flatten((tuple(args), kwargs or {}))
  flat_fun, out_tree = tree_util.flatten_fun(fun, in_tree)
  jaxpr, consts = trace_to_jaxpr_dynamic(flat_fun, [avals_lib.get_aval(x) for x in flat])
  return jaxpr, consts, flat, out_tree()


def trace_to_closed_jaxpr(fun: Callable, in_avals: Sequence[Any], debug_info=None) -> ClosedJaxpr:
  jaxpr, consts = trace_to_jaxpr_dynamic(fun, in_avals, debug_info)
  return ClosedJaxpr(jaxpr, consts)


# ----------------------------------------------------------------------------- partial evaluation

PartialEvalRule = Callable[..., Any]
# partial_eval_rules[p](trace, args, **params) -> outputs: for primitives (call-like ones)
# that can split themselves into a known part, bound on trace.parent, and an unknown part,
# staged with trace.stage(...).  Without a rule an operation with an unknown input is
# staged whole.
partial_eval_rules: dict[Any, PartialEvalRule] = {}


class JaxprTrace(DynamicJaxprTrace):
  """Partial evaluation.  Known values are ordinary values of the parent trace (not this
  trace's tracers); unknown values are this trace's tracers.  An operation whose inputs are
  all known is bound on the parent at once, effects included (so a tap on primals fires
  in the forward pass); one with an unknown input is recorded into the jaxpr of the
  unknown part, whose constants (the known values it reads) are the residuals."""

  def process_primitive(self, primitive, args, params):
    if not any(self.owns(x) for x in args) and not creates_tangent_ref(params):
      with set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    rule = partial_eval_rules.get(primitive)
    if rule is not None:
      return rule(self, args, **params)
    return self.stage(primitive, args, params)

  def stage(self, primitive, args, params):
    return DynamicJaxprTrace.process_primitive(self, primitive, args, params)

  def is_known(self, x) -> bool:
    return not self.owns(x)


def _broadcast(flags, n):
  return [bool(flags)] * n if isinstance(flags, bool) else list(flags)


def partial_eval_jaxpr_nounits(closed: ClosedJaxpr, unknowns: Sequence[bool],
                               instantiate: bool | Sequence[bool]):
  """Splits `closed` into the part computable from the known inputs and the rest.

  Returns `(jaxpr_known, jaxpr_unknown, out_unknowns, res_avals)`:
    jaxpr_known:   [*known inputs]              -> [*known outputs, *residuals]
    jaxpr_unknown: [*residuals, *unknown inputs] -> [*unknown outputs]
  both ClosedJaxprs.  An output is unknown when it depends on an unknown input or
  `instantiate` (bool or one per output) forces it.  Effectful equations whose inputs are
  all known stay in `jaxpr_known`; the others go to `jaxpr_unknown`.
  """
  instantiate = _broadcast(instantiate, len(closed.out_avals))
  box = {}

  def known_fun(*known_ins):
    trace = JaxprTrace()
    with new_trace(trace):
      it = iter(known_ins)
      ins = [trace.new_arg(a) if uk else next(it) for a, uk in zip(closed.in_avals, unknowns)]
      outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
      out_uk = [trace.owns(o) or inst for o, inst in zip(outs, instantiate)]
      jaxpr_uk, residuals = trace.to_jaxpr([o for o, uk in zip(outs, out_uk) if uk])
    box["uk"], box["out_uk"] = jaxpr_uk, out_uk
    return [*(o for o, uk in zip(outs, out_uk) if not uk), *residuals]

  known_avals = [a for a, uk in zip(closed.in_avals, unknowns) if not uk]
  jaxpr_k, consts_k = trace_to_jaxpr_dynamic(known_fun, known_avals)
  jaxpr_uk = box["uk"]
  res_avals = [v.aval for v in jaxpr_uk.constvars]
  jaxpr_uk = Jaxpr([], [*jaxpr_uk.constvars, *jaxpr_uk.invars], jaxpr_uk.outvars,
                   jaxpr_uk.eqns, jaxpr_uk.effects)
  return (ClosedJaxpr(jaxpr_k, consts_k), ClosedJaxpr(jaxpr_uk, []), box["out_uk"], res_avals)


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False):
  """Like `partial_eval_jaxpr_nounits`, returning the number of residuals last:
  `(jaxpr_known, jaxpr_unknown, out_unknowns, num_res)`."""
  known, unknown, out_uk, res_avals = partial_eval_jaxpr_nounits(closed, unknowns, instantiate)
  return known, unknown, out_uk, len(res_avals)


# ----------------------------------------------------------------------------- dead code

def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[Jaxpr, list[bool]]:
  """Removes what the used outputs do not need.  Returns `(new_jaxpr, used_inputs)`;
  `new_jaxpr` keeps the used outputs, its constvars, and only the inputs in `used_inputs`
  (or every input where `instantiate` says so).  Equations whose effects must be kept
  (`effects.must_keep`) are never removed."""
  instantiate = _broadcast(instantiate, len(jaxpr.invars))
  live = {v for v, used in zip(jaxpr.outvars, used_outputs) if used and type(v) is Var}
  new_eqns = []
  for eqn in reversed(jaxpr.eqns):
    if must_keep(eqn.effects) or any(v in live for v in eqn.outvars):
      new_eqns.append(eqn)
      live.update(a for a in eqn.invars if type(a) is not Literal)
  used_inputs = [v in live or inst for v, inst in zip(jaxpr.invars, instantiate)]
  new = Jaxpr(jaxpr.constvars, [v for v, u in zip(jaxpr.invars, used_inputs) if u],
              [v for v, used in zip(jaxpr.outvars, used_outputs) if used],
              new_eqns[::-1], debug_info=jaxpr.debug_info)
  return new, used_inputs


def dce_closed_jaxpr(closed: ClosedJaxpr, used_outputs: Sequence[bool],
                     instantiate: bool | Sequence[bool] = False):
  jaxpr, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs, instantiate)
  return ClosedJaxpr(jaxpr, closed.consts), used_inputs


class PartialVal(tuple):
  """JAX's partial value, for libraries: `(None, value)` is known, `(aval, None)` unknown."""

  def __new__(cls, xs):
    return tuple.__new__(cls, xs)

  @classmethod
  def known(cls, const) -> "PartialVal":
    return PartialVal((None, const))

  @classmethod
  def unknown(cls, aval) -> "PartialVal":
    return PartialVal((aval, None))

  def is_known(self) -> bool:
    return self[0] is None

  def get_known(self):
    return self[1] if self[0] is None else None

  def get_aval(self):
    return avals_lib.get_aval(self[1]) if self[0] is None else self[0]


def trace_to_jaxpr_nounits(fun: Callable, pvals: Sequence[PartialVal],
                           instantiate: bool = False):
  """Partially evaluates `fun(*flat_args)` on known and unknown inputs: the known part runs
  now; returns `(jaxpr of the unknown part, one PartialVal per output, its constants)`."""
  trace = JaxprTrace()
  with new_trace(trace):
    args = [pv.get_known() if pv.is_known() else trace.new_arg(pv[0], None) for pv in pvals]
    outs = list(fun(*args))
    flags = _broadcast(instantiate, len(outs))
    out_pvals, unknown = [], []
    for x, inst in zip(outs, flags):
      if trace.owns(x) or inst:
        unknown.append(x)
        out_pvals.append(PartialVal.unknown(avals_lib.get_aval(x)))
      else:
        out_pvals.append(PartialVal.known(x))
    jaxpr, consts = trace.to_jaxpr(unknown)
  return jaxpr, out_pvals, consts
