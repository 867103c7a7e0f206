"""Helpers that build the common shapes of primitive blocks.

`standard_primitive(name, shape_rule, dtype_rule, weak_type_rule)` gives a primitive whose
abstract evaluation derives the output aval from those rules and whose evaluation is the
runtime's compiled dispatch.  `nary_lowering(op_class)` is the lowering of an MHLO op
whose result type is the equation's output type.

Elementwise n-ary primitives share one shape rule, `elementwise_shapes`: their operands
have one common shape S, except that any of them may be rank 0 (a scalar, as JAX allows),
and the result has shape S.  That is the only broadcasting lax does; every rule that
touches these primitives handles it through the helpers here and in `ad`/`batching`
(`broadcast_scalar_operands` in lowering, `unbroadcast_scalar` in transposes, the
broadcast of a rank-0 tangent in `ad.defjvp`, and `batching.defbroadcasting`).  Their
lowerings are registered with `splat_literals=True`, so a rank-0 literal operand (the 1.0
of `x + 1.0`) arrives as a splat constant of the result's shape instead of a scalar
constant that would then need broadcasting.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.lowering import mlir


def standard_primitive(name: str, shape_rule: Callable, dtype_rule: Callable,
                       weak_type_rule: Callable | None = None) -> Primitive:
  prim = Primitive(name)
  weak_type_rule = weak_type_rule or _all_weak

  def abstract_eval(*avals, **params):
    return ShapedArray(shape_rule(*avals, **params), dtype_rule(*avals, **params),
                       weak_type_rule(*avals, **params))
  prim.def_abstract_eval(abstract_eval)
  return prim


def _all_weak(*avals, **params) -> bool:
  return bool(avals) and all(a.weak_type for a in avals)


def elementwise_shapes(name: str):
  """Shape rule of elementwise primitives: one common shape, rank-0 operands allowed."""
  def rule(*avals, **params):
    shape = avals[0].shape
    for a in avals:
      if a.shape != shape:
        if not shape:
          shape = a.shape
        elif a.shape:
          shown = ", ".join(a.str_short() for a in avals)
          raise TypeError(f"{name} requires arguments of the same shape, got {shown}; "
                          "rank-0 ones broadcast, broadcast the others first "
                          "(minijax.numpy broadcasts for you)")
    return shape
  return rule


def same_dtypes_accepting(name: str, accepted: Callable[[np.dtype], bool], what: str):
  def rule(*avals, **params):
    dtypes.check_not_float0(name, [a.dtype for a in avals])
    dts = {a.dtype for a in avals}
    if len(dts) != 1:
      shown = ", ".join(a.str_short() for a in avals)
      raise TypeError(f"{name} requires arguments of the same dtype, got {shown}; "
                      "convert them with lax.convert_element_type (minijax.numpy promotes)")
    dtype = avals[0].dtype
    if not accepted(dtype):
      raise TypeError(f"{name} does not accept dtype {dtype}; it accepts {what}")
    return dtype
  return rule


def any_dtype(_):
  return True


def is_number(dtype):
  return dtype != dtypes.bool_


def is_inexact(dtype):
  return dtypes.is_inexact(dtype)


def is_int_or_bool(dtype):
  return dtypes.is_integer(dtype) or dtype == dtypes.bool_


def broadcast_scalar_operands(ctx, args) -> list:
  """The operands of an elementwise op, rank-0 ones broadcast to the result's shape: a
  scalar constant becomes a splat constant of that shape, anything else a
  `broadcast_in_dim` with no dimensions."""
  shape = ctx.avals_out[0].shape
  if not shape:
    return list(args)
  out = list(args)
  for i, aval in enumerate(ctx.avals_in):
    if aval.shape != shape:
      out[i] = mlir.broadcast_scalar(out[i], aval.update(shape=shape))
  return out


def nary_lowering(op_class) -> Callable:
  name = op_class.OPERATION_NAME
  def rule(ctx, *args, **params):
    shape = ctx.avals_out[0].shape
    for aval in ctx.avals_in:
      if aval.shape != shape:
        args = broadcast_scalar_operands(ctx, args)
        break
    return mlir.emit_elementwise(ctx, name, args)
  return rule


def unbroadcast_scalar(ct, aval):
  """A cotangent of an elementwise op's result, for an operand of `aval`: summed to rank 0
  when the operand was a rank-0 one broadcast against a larger shape."""
  ndim = len(get_aval(ct).shape)
  if aval.shape or not ndim:
    return ct
  from minijax.lax.reductions import reduce_sum
  return reduce_sum(ct, tuple(range(ndim)))


def is_float(dtype):
  return dtypes.is_float(dtype)


def is_integer(dtype):
  return dtypes.is_integer(dtype)


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
  return axis % ndim
