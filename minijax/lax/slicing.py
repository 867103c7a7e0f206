"""Static and dynamic slicing: slice (with strides), dynamic_slice, dynamic_update_slice.

Static slices transpose to a pad with interior padding.  The dynamic ops clamp their start
indices so the window fits (XLA's semantics); under vmap with batched indices they become
a gather / scatter (see gather.py), with the indices clamped first to keep those semantics.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.structural import (_ct_rule, _unary_linear_jvp, convert_to_array, full,
                                    pad, reshape, squeeze)
from minijax.lowering import mlir

__all__ = ["slice", "slice_in_dim", "index_in_dim", "dynamic_slice", "dynamic_slice_in_dim",
           "dynamic_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
           "dynamic_update_index_in_dim",
           "slice_p", "dynamic_slice_p", "dynamic_update_slice_p"]


# ---- slice
slice_p = Primitive("slice")


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
  starts, limits = start_indices, limit_indices
  if len(starts) != x.ndim:
    raise TypeError(f"slice start_indices must have length equal to the number of dimensions "
                    f"of the operand, got indices {starts} for operand shape {x.shape}.")
  if len(limits) != len(starts):
    raise TypeError(f"slice limit_indices must have the same length as start_indices, got "
                    f"start_indices {starts} and limit_indices {limits}.")
  if any(l > n for l, n in zip(limits, x.shape)):
    raise TypeError(f"slice limit_indices must be less than or equal to operand shape, got "
                    f"limit_indices {limits} for operand shape {x.shape}.")
  if any(s < 0 for s in starts):
    raise TypeError(f"slice start_indices must be greater than or equal to zero, got "
                    f"start_indices of {starts}.")
  if any(l < s for s, l in zip(starts, limits)):
    raise TypeError(f"slice limit_indices must be greater than or equal to start_indices, got "
                    f"start_indices {starts} and limit_indices {limits}.")
  if len(strides) != x.ndim:
    raise TypeError(f"slice strides must have length equal to the number of dimensions of the "
                    f"operand, got strides {strides} for operand shape {x.shape}.")
  if any(st < 1 for st in strides):
    raise TypeError(f"slice strides must be positive, got {strides}")
  shape = tuple((l - s + st - 1) // st for s, l, st in zip(start_indices, limit_indices, strides))
  return ShapedArray(shape, x.dtype, x.weak_type)


slice_p.def_abstract_eval(_slice_abstract_eval)
mlir.register_lowering(slice_p, lambda ctx, x, *, start_indices, limit_indices, strides:
                       mhlo.SliceOp(x, list(start_indices), list(limit_indices),
                                    list(strides)).result)
_unary_linear_jvp(slice_p)


def _slice_transpose(ct, aval, *, start_indices, limit_indices, strides):
  out_shape = ct.shape
  if 0 in out_shape:
    return full(aval.shape, 0, ct.dtype)
  config = []
  for n, s, st, m in zip(aval.shape, start_indices, strides, out_shape):
    last = s + (m - 1) * st
    config.append((s, n - 1 - last, st - 1))
  return pad(ct, full((), 0, ct.dtype), config)


ad.primitive_transposes[slice_p] = _ct_rule(_slice_transpose)


def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
  (x,), (d,) = args, dims
  x = batching.moveaxis(x, d, 0)
  return slice_p.bind(x, start_indices=(0,) + start_indices,
                      limit_indices=(x.shape[0],) + limit_indices,
                      strides=(1,) + strides), 0


batching.primitive_batchers[slice_p] = _slice_batch


def slice(operand, start_indices, limit_indices, strides=None):
  operand = convert_to_array(operand)
  start = tuple(int(i) for i in start_indices)
  limit = tuple(int(i) for i in limit_indices)
  strides = tuple(int(i) for i in strides) if strides is not None else (1,) * len(start)
  if start == (0,) * len(start) and limit == tuple(operand.shape) and strides == (1,) * len(start):
    return operand
  return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
  """`slice` along one axis; None bounds are the axis' ends and negative ones count from
  its end, as in Python."""
  operand = convert_to_array(operand)
  size = operand.shape[axis]
  start = 0 if start_index is None else int(start_index)
  limit = size if limit_index is None else int(limit_index)
  starts, limits, strides = [0] * operand.ndim, list(operand.shape), [1] * operand.ndim
  starts[axis] = start + size if start < 0 else start
  limits[axis] = limit + size if limit < 0 else limit
  strides[axis] = stride
  return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
  """The `index`-th slice along `axis` (negative counts from the end)."""
  operand = convert_to_array(operand)
  size = operand.shape[axis]
  wrapped = int(index) + size if int(index) < 0 else int(index)
  if not 0 <= wrapped < size:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
  out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return out if keepdims else squeeze(out, (axis,))


# ---- dynamic_slice
dynamic_slice_p = Primitive("dynamic_slice")


def _check_starts(name, x, starts):
  if len(starts) != x.ndim:
    raise TypeError(f"{name} start_indices must have length equal to the number of dimensions "
                    f"of the operand, got indices {[s.str_short() for s in starts]} for "
                    f"operand shape {x.shape}.")
  if any(s.ndim for s in starts):
    raise TypeError(f"start_indices arguments to {name} must be scalars, got indices "
                    f"{[s.str_short() for s in starts]}")


def _check_index_dtypes(name, starts):
  if any(s.dtype != starts[0].dtype or not dtypes.is_integer(s.dtype) for s in starts):
    raise TypeError(f"index arguments to {name} must be integers of the same type, got: "
                    f"{', '.join(s.dtype.name for s in starts)}")


def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
  if len(slice_sizes) != x.ndim:
    raise TypeError(f"dynamic_slice slice_sizes must have length equal to the number of "
                    f"dimensions of the operand, got slice_sizes {slice_sizes} for operand "
                    f"shape {x.shape}.")
  if any(s > n for s, n in zip(slice_sizes, x.shape)):
    raise TypeError(f"slice slice_sizes must be less than or equal to operand shape, got "
                    f"slice_sizes {slice_sizes} for operand shape {x.shape}.")
  if any(s < 0 for s in slice_sizes):
    raise TypeError(f"slice slice_sizes must be greater than or equal to zero, got "
                    f"slice_sizes of {slice_sizes}.")
  _check_starts("dynamic_slice", x, starts)
  _check_index_dtypes("dynamic_slice", starts)
  return ShapedArray(slice_sizes, x.dtype, x.weak_type)


dynamic_slice_p.def_abstract_eval(_dynamic_slice_abstract_eval)
mlir.register_lowering(dynamic_slice_p, lambda ctx, x, *starts, slice_sizes: mhlo.DynamicSliceOp(
    x, list(starts), list(slice_sizes)).result)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
  x, *starts = primals
  out = dynamic_slice_p.bind(*primals, slice_sizes=slice_sizes)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
  rest = [None] * len(starts)
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)] + rest
  zeros = full(x.aval.shape, 0, ct.dtype)
  return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + rest


def _starts_vector(starts, dims, size):
  """Start indices as one int32 index vector per batch element: (size, k)."""
  from minijax.lax.misc import convert_element_type
  from minijax.lax.structural import broadcast_in_dim, concatenate
  cols = []
  for s, d in zip(starts, dims):
    s = convert_element_type(s, dtypes.int32)
    s = broadcast_in_dim(s, (size,), ()) if d is None else s
    cols.append(reshape(s, (size, 1)))
  return concatenate(cols, 1)


def _dynamic_slice_batch(args, dims, *, slice_sizes):
  from minijax.lax.gather import GatherDimensionNumbers, gather
  x, *starts = args
  dx, *dstarts = dims
  if all(d is None for d in dstarts):
    x = batching.moveaxis(x, dx, 0)
    zero = full((), 0, get_aval(starts[0]).dtype if starts else dtypes.int32)
    return dynamic_slice_p.bind(x, zero, *starts, slice_sizes=(x.shape[0],) + slice_sizes), 0
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  index = _starts_vector(starts, dstarts, size)  # (clamped by the CLIP gather, as XLA
  n = len(slice_sizes)                            # clamps a dynamic slice's starts)
  if dx is None:  # one operand, a batch of starts: a gather that reads it without copies
    dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                                   start_index_map=tuple(range(n)))
    return gather(x, index, dnums, tuple(slice_sizes), mode="clip"), 0
  x = batching.bdim_at_front(x, dx, size)
  dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                                 start_index_map=tuple(range(1, n + 1)),
                                 operand_batching_dims=(0,), start_indices_batching_dims=(0,))
  return gather(x, index, dnums, (1,) + tuple(slice_sizes), mode="clip"), 0


ad.primitive_jvps[dynamic_slice_p] = _dynamic_slice_jvp
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose
batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch


def _as_index(i, name="dynamic_slice"):
  """`i` as an int32 scalar, the start index of a `name` op."""
  from minijax.lax.misc import convert_element_type
  i = convert_to_array(i)
  aval = get_aval(i)
  if aval.ndim:
    raise TypeError(f"start_indices arguments to {name} must be scalars, got indices "
                    f"{aval.str_short()}")
  _check_index_dtypes(name, [aval])
  return convert_element_type(i, dtypes.int32) if aval.dtype != dtypes.int32 or aval.weak_type else i


def _start_indices(start_indices, shape, allow_negative_indices=True, name="dynamic_slice"):
  """Start indices as int32 scalars; where `allow_negative_indices` (one flag, or one per
  index) a negative one counts from the end of its dimension (once, as JAX does; the clamp
  into range follows in XLA)."""
  from minijax.lax.elementwise import add, lt
  from minijax.lax.misc import select
  if len(start_indices) != len(shape):
    raise ValueError("Length of slice indices must match number of operand dimensions "
                     f"({len(start_indices)} vs {tuple(shape)})")
  allow = ([bool(allow_negative_indices)] * len(shape)
           if isinstance(allow_negative_indices, (bool, np.bool_))
           else [bool(a) for a in allow_negative_indices])
  out = []
  for i, n, negative in zip(start_indices, shape, allow):
    if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
      out.append(_as_index(int(i) + n if negative and i < 0 else int(i), name))
      continue
    unsigned = np.issubdtype(get_aval(convert_to_array(i)).dtype, np.unsignedinteger)
    i = _as_index(i, name)
    if negative and not unsigned:
      zero, size = full((), 0, dtypes.int32), full((), n, dtypes.int32)
      i = select(lt(i, zero), add(i, size), i)
    out.append(i)
  return out


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  operand = convert_to_array(operand)
  starts = _start_indices(start_indices, get_aval(operand).shape, allow_negative_indices)
  return dynamic_slice_p.bind(operand, *starts, slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *, allow_negative_indices=True):
  operand = convert_to_array(operand)
  starts = [0] * operand.ndim
  sizes = list(operand.shape)
  starts[axis], sizes[axis] = start_index, slice_size
  return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
  out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
  return out if keepdims else squeeze(out, (axis,))


# ---- dynamic_update_slice
dynamic_update_slice_p = Primitive("dynamic_update_slice")


def _dus_abstract_eval(x, update, *starts):
  if update.ndim != x.ndim:
    raise TypeError(f"dynamic_update_slice update must have the same rank as operand, got "
                    f"update shape {update.shape} for operand shape {x.shape}.")
  _check_starts("dynamic_update_slice", x, starts)
  if any(u > n for u, n in zip(update.shape, x.shape)):
    raise TypeError(f"dynamic_update_slice update shape must be smaller than operand shape, "
                    f"got update shape {update.shape} for operand shape {x.shape}.")
  utils.check_same_dtypes("dynamic_update_slice", x, update)
  _check_index_dtypes("dynamic_update_slice", starts)
  return ShapedArray(x.shape, x.dtype, x.weak_type)


dynamic_update_slice_p.def_abstract_eval(_dus_abstract_eval)
mlir.register_lowering(dynamic_update_slice_p, lambda ctx, x, update, *starts:
                       mhlo.DynamicUpdateSliceOp(x, update, list(starts)).result)


def _dus_jvp(primals, tangents):
  x, update, *starts = primals
  out = dynamic_update_slice_p.bind(*primals)
  tx, tu = tangents[:2]
  if type(tx) is ad.Zero and type(tu) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  tx, tu = ad.instantiate_zeros(tx), ad.instantiate_zeros(tu)
  return out, dynamic_update_slice_p.bind(tx, tu, *starts)


def _dus_transpose(ct, x, update, *starts):
  rest = [None] * len(starts)
  u_aval = update.aval if ad.is_undefined_primal(update) else get_aval(update)
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None,
            ad.Zero(u_aval) if ad.is_undefined_primal(update) else None] + rest
  t_x = t_u = None
  if ad.is_undefined_primal(x):
    t_x = dynamic_update_slice_p.bind(ct, full(u_aval.shape, 0, ct.dtype), *starts)
  if ad.is_undefined_primal(update):
    t_u = dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape)
  return [t_x, t_u] + rest


def _dus_batch(args, dims):
  from minijax.lax.gather import ScatterDimensionNumbers, scatter
  x, update, *starts = args
  dx, du, *dstarts = dims
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  x = batching.bdim_at_front(x, dx, size)
  update = batching.bdim_at_front(update, du, size)
  if all(d is None for d in dstarts):
    zero = full((), 0, dtypes.int32)
    return dynamic_update_slice_p.bind(x, update, zero, *starts), 0
  index = _starts_vector(starts, dstarts, size)
  n = x.ndim - 1
  dnums = ScatterDimensionNumbers(update_window_dims=tuple(range(1, n + 1)),
                                  inserted_window_dims=(),
                                  scatter_dims_to_operand_dims=tuple(range(1, n + 1)),
                                  operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
  # clamped as XLA clamps a dynamic update's starts (a scatter would drop the window)
  return scatter(x, index, update, dnums, mode="clip"), 0


ad.primitive_jvps[dynamic_update_slice_p] = _dus_jvp
ad.primitive_transposes[dynamic_update_slice_p] = _dus_transpose
batching.primitive_batchers[dynamic_update_slice_p] = _dus_batch


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
  operand, update = convert_to_array(operand), convert_to_array(update)
  starts = _start_indices(start_indices, get_aval(operand).shape, allow_negative_indices,
                          "dynamic_update_slice")
  return dynamic_update_slice_p.bind(operand, update, *starts)


def dynamic_update_slice_in_dim(operand, update, start_index, axis=0, *, allow_negative_indices=True):
  operand = convert_to_array(operand)
  starts = [0] * operand.ndim
  starts[axis] = start_index
  return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis=0, *, allow_negative_indices=True):
  """Writes `update` (without the `axis` dimension, or with it of size 1) at `index`."""
  operand, update = convert_to_array(operand), convert_to_array(update)
  if get_aval(update).ndim == get_aval(operand).ndim - 1:
    shape = list(get_aval(update).shape)
    shape.insert(axis, 1)
    update = reshape(update, shape)
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)
