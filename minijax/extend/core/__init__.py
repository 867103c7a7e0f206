"""`minijax.extend.core`: minijax's core classes and trace queries under JAX's
`jax.extend.core` names (`Primitive`, `Jaxpr`, `ClosedJaxpr`, `Var`, `Literal`,
`find_top_trace`, ...); `primitives` holds the primitives themselves."""
from __future__ import annotations

import contextlib
import weakref
from typing import Any, Callable

from minijax.core.avals import AbstractToken, AbstractValue, ShapedArray, Token, valid_jaxtype
from minijax.core.effects import Effect
from minijax.core.jaxpr import (ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, JaxprTypeError, Literal,
                                Var, eval_jaxpr, typecheck_jaxpr as check_jaxpr)
from minijax.core import axes
from minijax.core.primitive import Primitive
from minijax.api_util import DebugInfo
from minijax.core.trace import current_trace, eval_trace, set_current_trace
from minijax.extend.core import primitives

Effects = frozenset
no_effects: frozenset = frozenset()


def find_top_trace(xs) -> Any:
  """The trace values are being processed by now (minijax's traces form a context, so
  this does not depend on `xs`)."""
  del xs
  return current_trace()


@contextlib.contextmanager
def take_current_trace():
  """Yields the current trace, with this thread's bottom (evaluating) trace current until
  the block ends: where a user's `Trace` binds on the trace it was started in."""
  taken = current_trace()
  with set_current_trace(eval_trace()):
    yield taken


class TraceTag:
  """An identity for one run of a transformation (what JAX's traces carry as `tag`): equal
  only to itself."""
  __slots__ = ()

  def __repr__(self):
    return f"TraceTag({id(self):#x})"


class OpaqueTraceState:
  """What `get_opaque_trace_state` returns: equal only to the state of the same trace."""
  __slots__ = ("_trace",)

  def __init__(self, trace):
    self._trace = weakref.ref(trace)

  def __eq__(self, other):
    return isinstance(other, OpaqueTraceState) and self._trace() is other._trace()

  def __hash__(self):
    return id(self._trace())


def get_opaque_trace_state(convention: str | None = None) -> OpaqueTraceState:
  """A token of the current trace, for libraries that check a value is used in the
  trace it was made in (flax's scopes, nnx's graphs)."""
  del convention
  return OpaqueTraceState(current_trace())


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
  """`aval` without its mapped axis `axis` (of length `size`)."""
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} is not of size {size}")
  shape = aval.shape[:axis] + aval.shape[axis + 1:]
  return ShapedArray(shape, aval.dtype, aval.weak_type)


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray, *_) -> ShapedArray:
  """`aval` with a new axis of length `size` at `axis`."""
  if axis is None:
    return aval
  shape = aval.shape[:axis] + (size,) + aval.shape[axis:]
  return ShapedArray(shape, aval.dtype, aval.weak_type)


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr) -> Callable:
  """A function evaluating `closed_jaxpr` on its arguments (returns the list of outputs)."""
  return lambda *args: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def jaxprs_in_params(params: dict) -> list[Jaxpr]:
  """The jaxprs among an equation's parameters (in control flow and calls)."""
  out = []
  for value in params.values():
    for v in (value if isinstance(value, (tuple, list)) else (value,)):
      if isinstance(v, ClosedJaxpr):
        out.append(v.jaxpr)
      elif isinstance(v, Jaxpr):
        out.append(v)
  return out


def unsafe_get_axis_names_DO_NOT_USE() -> list:  # noqa: N802  (JAX's names)
  """The axis names bound here (by `pmap`, `shard_map` or `vmap`'s `axis_name`)."""
  return [f.name for f in axes.current_frames()]


def nonempty_axis_env_DO_NOT_USE() -> bool:  # noqa: N802
  return bool(axes.current_frames())


def _traces_in_force() -> list[str]:
  names, trace = [], current_trace()
  while trace is not None:
    names.append(type(trace).__name__)
    trace = trace.parent
  return names


def unsafe_am_i_under_a_jit_DO_NOT_USE() -> bool:  # noqa: N802
  """Whether a function is being staged out here (by `jit`, `make_jaxpr`, a loop body)."""
  return "DynamicJaxprTrace" in _traces_in_force()


def unsafe_am_i_under_a_vmap_DO_NOT_USE() -> bool:  # noqa: N802
  return "BatchTrace" in _traces_in_force()


def gensym(suffix: str = "") -> Callable[[AbstractValue], Var]:
  """A maker of fresh variables of a given type (for jaxprs built by hand)."""
  return lambda aval: Var(aval, suffix)


def new_jaxpr_eqn(invars, outvars, primitive, params, effects, source_info=None,
                  ctx=None) -> JaxprEqn:
  """An equation built by hand (`ctx`, JAX's per-equation context, has no counterpart)."""
  del ctx
  return JaxprEqn(list(invars), list(outvars), primitive, dict(params), frozenset(effects),
                  source_info)


def subjaxprs(jaxpr: Jaxpr):
  """The jaxprs in the parameters of `jaxpr`'s equations (one level down)."""
  for eqn in jaxpr.eqns:
    yield from jaxprs_in_params(eqn.params)


__all__ = ["AbstractToken", "Token", "AbstractValue", "ClosedJaxpr", "DebugInfo", "DropVar", "Effect", "Effects",
           "Jaxpr", "JaxprEqn", "JaxprTypeError", "Literal", "Primitive", "ShapedArray", "Var",
           "check_jaxpr", "find_top_trace", "gensym", "get_opaque_trace_state", "jaxpr_as_fun",
           "jaxprs_in_params", "mapped_aval", "new_jaxpr_eqn", "no_effects", "primitives", "set_current_trace",
           "take_current_trace", "TraceTag",
           "subjaxprs", "unmapped_aval", "valid_jaxtype", "nonempty_axis_env_DO_NOT_USE",
           "unsafe_am_i_under_a_jit_DO_NOT_USE", "unsafe_am_i_under_a_vmap_DO_NOT_USE",
           "unsafe_get_axis_names_DO_NOT_USE"]
