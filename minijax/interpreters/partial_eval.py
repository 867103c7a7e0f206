"""Staging Python functions into jaxprs, and splitting jaxprs into known and unknown parts.

`DynamicJaxprTrace` records every primitive applied to its tracers as an equation, in
program order, so effects keep their order.  A value that is not one of its tracers is a
constant: Python scalars and 0-d numpy values become inline literals, anything else (an
Array, a numpy array, a tracer of an enclosing transformation) becomes a constant variable
of the jaxpr, with the value returned alongside so the caller can close over it.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from minijax.core import avals as avals_lib
from minijax.core import dtypes
from minijax.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var,
                                literalable, user_source_info)
from minijax.core.trace import Trace, Tracer, new_trace


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
  raise TypeError(
      f"value of type {type(x).__name__} ({x!r:.60}) is not a valid minijax type; "
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
    aval = x.aval if isinstance(x, Tracer) else avals_lib.shaped_abstractify(x)
    var = Var(aval)
    self._const_var_by_id[id(x)] = var
    self.constvars.append(var)
    self.consts.append(x)
    return var

  def process_primitive(self, primitive, args, params):
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
  return jaxpr, consts


def trace_to_closed_jaxpr(fun: Callable, in_avals: Sequence[Any], debug_info=None) -> ClosedJaxpr:
  jaxpr, consts = trace_to_jaxpr_dynamic(fun, in_avals, debug_info)
  return ClosedJaxpr(jaxpr, consts)
