"""Helpers that build the common shapes of primitive blocks.

`standard_primitive(name, shape_rule, dtype_rule, weak_type_rule)` gives a primitive whose
abstract evaluation derives the output aval from those rules and whose evaluation is the
runtime's compiled dispatch.  `nary_lowering(op_class)` is the lowering of an MHLO op
whose result type is the equation's output type.

Elementwise n-ary primitives share one shape rule, `elementwise_shapes`: their operands
have one rank R and, along each axis, one size or 1 (a size-1 axis broadcasts), except that
any of them may be rank 0 (a scalar); the result has the common sizes.  That is the only
broadcasting lax does (JAX 0.10.2's); every rule that touches these primitives handles it
through the helpers here and in `ad`/`batching` (`broadcast_operands` in lowering,
`unbroadcast` in transposes, `ad.defjvp`'s fit of each tangent to the result, and
`batching.defbroadcasting`).  Their lowerings are registered with `splat_literals=True`, so
`mlir.jaxpr_subcomp` hands them operands of rank R already broadcast, and a rank-0 literal
operand (the 1.0 of `x + 1.0`) as a splat constant of the result's shape instead of a
scalar constant that would then need broadcasting.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from jaxlib.mlir.dialects import mhlo

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
  """Shape rule of elementwise primitives: one rank, sizes equal or 1 along each axis
  (size-1 axes broadcast), rank-0 operands allowed."""
  def rule(*avals, **params):
    shapes = [a.shape for a in avals if a.shape]
    if not shapes:
      return ()
    if len(shapes) == len(avals) and all(s == shapes[0] for s in shapes):
      return shapes[0]
    hint = (" Rank-0 operands and size-1 axes broadcast; broadcast the others first "
            "(minijax.numpy broadcasts for you).")
    ranks = sorted({len(s) for s in shapes})
    if len(ranks) > 1:
      raise TypeError(f"{name}: arrays must have the same number of dimensions, got "
                      f"{{{', '.join(map(str, ranks))}}} "
                      f"({', '.join(a.str_short() for a in avals)}).{hint}")
    out = []
    for sizes in zip(*shapes):
      large = {d for d in sizes if d != 1}
      if len(large) > 1:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        f"{', '.join(str(tuple(s)) for s in shapes)}.{hint}")
      out.append(large.pop() if large else 1)
    return tuple(out)
  return rule


def broadcast_elementwise(name: str, *arrays) -> list:
  """`arrays` broadcast to their common shape by `elementwise_shapes`' rule (for a function
  made of elementwise primitives that needs its operands of one shape)."""
  from minijax.lax.structural import broadcast_in_dim
  avals = [get_aval(a) for a in arrays]
  shape = elementwise_shapes(name)(*avals)
  return [a if v.shape == shape else broadcast_in_dim(a, shape, tuple(range(v.ndim)))
          for a, v in zip(arrays, avals)]


def in_float32_for_halves(fn: Callable, *arrays):
  """`fn(*arrays)`, computed in float32 when they are float16 or bfloat16 (whose range and
  precision the series and fractions of special functions outrun) and cast back, as JAX
  computes them."""
  dtype = get_aval(arrays[0]).dtype
  if dtype.itemsize != 2 or not dtypes.is_float(dtype):
    return fn(*arrays)
  from minijax.lax.misc import convert_element_type
  out = fn(*(convert_element_type(a, np.float32) for a in arrays))
  if isinstance(out, tuple):
    return tuple(convert_element_type(o, dtype) for o in out)
  return convert_element_type(out, dtype)


# The kinds of dtype an op accepts are named as in JAX's errors: numpy's abstract dtypes.
NUMBER_KINDS = "integer, floating, complexfloating"


def check_same_dtypes(name: str, *avals) -> None:
  """JAX's TypeError for the operands of a lax op that must share one dtype."""
  if len({a.dtype for a in avals}) > 1:
    shown = ", ".join(a.dtype.name for a in avals)
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {shown}. "
                    "(Tip: minijax.numpy's functions promote their inputs' types; or convert "
                    "them with lax.convert_element_type.)")


def reject_dtype(name: str, dtype, kinds: str):
  raise TypeError(f"{name} does not accept dtype {dtype}. Accepted dtypes are "
                  f"subtypes of {kinds}.")


def same_dtypes_accepting(name: str, accepted: Callable[[np.dtype], bool], kinds: str):
  """A dtype rule: operands of one dtype, of the kinds `accepted` (named `kinds`)."""
  def rule(*avals, **params):
    dtypes.check_not_float0(name, [a.dtype for a in avals])
    check_same_dtypes(name, *avals)
    if not accepted(avals[0].dtype):
      reject_dtype(name, avals[0].dtype, kinds)
    return avals[0].dtype
  return rule


def any_dtype(_):
  return True


def is_number(dtype):
  return dtype != dtypes.bool_


def is_inexact(dtype):
  return dtypes.is_inexact(dtype)


def is_int_or_bool(dtype):
  return dtypes.is_integer(dtype) or dtype == dtypes.bool_


def broadcast_operands(ctx, args) -> list:
  """The operands of an elementwise op broadcast to the result's shape: a rank-0 constant
  becomes a splat constant of that shape, anything else a `broadcast_in_dim`."""
  shape = ctx.avals_out[0].shape
  if not shape:
    return list(args)
  out = list(args)
  for i, aval in enumerate(ctx.avals_in):
    if aval.shape != shape:
      out[i] = mlir.broadcast_to(out[i], aval, shape)
  return out


def nary_lowering(op_class) -> Callable:
  name = op_class.OPERATION_NAME
  def rule(ctx, *args, **params):
    shape = ctx.avals_out[0].shape
    for aval in ctx.avals_in:
      if aval.shape != shape:
        args = broadcast_operands(ctx, args)
        break
    return mlir.emit_elementwise(ctx, name, args)
  return rule


def nan_through(ctx, x, out):
  """`out`, an exponential of `x` (exp, exp2, sinh, cosh), with `x` where `x` is NaN.
  XLA's CPU exponential of float32 and narrower returns garbage, not NaN, for a NaN the
  compiler can see (`exp(x + nan)`, `exp(where(never, x, nan))`: jaxlib 0.10.2, and JAX
  with it); through the select a known NaN never reaches it.  float64 and complex are
  computed right and left alone."""
  dtype = np.dtype(ctx.avals_in[0].dtype)
  if not is_float(dtype) or dtype.itemsize > 4:
    return out
  is_nan = mhlo.CompareOp(x, x, mhlo.ComparisonDirectionAttr.get("NE"),
                          compare_type=mhlo.ComparisonTypeAttr.get("FLOAT")).result
  return mhlo.SelectOp(is_nan, x, out).result


def unbroadcast(ct, aval):
  """A cotangent of an elementwise op's result, for an operand of `aval`: summed over the
  axes along which the operand was broadcast (all of them for a rank-0 operand)."""
  shape = get_aval(ct).shape
  if aval.shape == shape:
    return ct
  from minijax.lax.reductions import reduce_sum
  if not aval.shape:
    return reduce_sum(ct, tuple(range(len(shape))))
  from minijax.lax.structural import reshape
  axes = tuple(d for d, (a, c) in enumerate(zip(aval.shape, shape)) if a == 1 and c != 1)
  return reshape(reduce_sum(ct, axes), aval.shape)


def is_float(dtype):
  return dtypes.is_float(dtype)


def is_integer(dtype):
  return dtypes.is_integer(dtype)


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
  """`axis` in [0, ndim), negative ones counting from the end; a ValueError in numpy's
  words otherwise (as JAX's)."""
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name} {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def lowering_from_function(fn: Callable) -> Callable:
  """A lowering rule emitting `fn` (a function of arrays built of lax operations, with one
  result) traced at the operands' avals, inline: for primitives XLA has no operation for."""
  def rule(ctx, *operands, **params):
    from minijax.interpreters import partial_eval as pe
    closed = pe.trace_to_closed_jaxpr(lambda *xs: [fn(*xs, **params)], list(ctx.avals_in))
    (out,) = mlir.lower_call_inline(ctx, closed, *operands)
    return out
  return rule
