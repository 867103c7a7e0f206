"""JAX's lax functions that rearrange arrays by composing the structural primitives:
`collapse`, `split`, `tile`, `stack`, `unstack`, `broadcast_like`, `index_take`,
`shape_as_value`, `dtype` (the canonical dtype of a value), and `composite` (a named call).
None is a primitive of its own here, so each differentiates, batches and lowers through
what it is made of."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.lax import utils
from minijax.lax.slicing import slice as lax_slice
from minijax.lax.structural import (broadcast_in_dim, concatenate, convert_to_array,
                                    expand_dims, reshape, squeeze)

__all__ = ["collapse", "split", "tile", "stack", "unstack", "broadcast_like", "index_take",
           "shape_as_value", "dtype", "composite"]


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
  """`operand` with dimensions `start_dimension` up to (not including) `stop_dimension`
  (the end when None) merged into one."""
  operand = convert_to_array(operand)
  shape = get_aval(operand).shape
  lo = utils.canonicalize_axis(start_dimension, len(shape) + 1, "start_dimension")
  hi = len(shape) if stop_dimension is None else utils.canonicalize_axis(
      stop_dimension, len(shape) + 1, "stop_dimension")
  if lo > hi:
    raise ValueError(f"collapse: start_dimension {start_dimension} is past stop_dimension "
                     f"{stop_dimension}")
  return reshape(operand, (*shape[:lo], int(np.prod(shape[lo:hi], dtype=np.int64)),
                           *shape[hi:]))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
  """`operand` cut along `axis` into consecutive pieces of `sizes` (which sum to its
  size)."""
  operand = convert_to_array(operand)
  shape = get_aval(operand).shape
  axis = utils.canonicalize_axis(axis, len(shape))
  sizes = [int(s) for s in sizes]
  if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                     f"operand shape {shape}")
  starts = np.cumsum([0] + sizes)
  out = []
  for start, size in zip(starts, sizes):
    lo, hi = [0] * len(shape), list(shape)
    lo[axis], hi[axis] = int(start), int(start) + size
    out.append(lax_slice(operand, lo, hi))
  return out


def tile(operand, reps: Sequence[int]):
  """`operand` repeated `reps[i]` times along each dimension i (one rep per dimension)."""
  operand = convert_to_array(operand)
  shape = get_aval(operand).shape
  reps = tuple(int(r) for r in reps)
  if len(reps) != len(shape):
    raise ValueError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                     f"and x.ndim={len(shape)}.")
  wide = broadcast_in_dim(operand, tuple(x for r, n in zip(reps, shape) for x in (r, n)),
                          tuple(range(1, 2 * len(shape), 2)))
  return reshape(wide, tuple(r * n for r, n in zip(reps, shape)))


def stack(operands: Sequence, axis: int = 0):
  """`operands` (of one shape) joined along a new dimension `axis`."""
  operands = [convert_to_array(x) for x in operands]
  if not operands:
    raise ValueError("stack needs at least one operand")
  axis = utils.canonicalize_axis(axis, get_aval(operands[0]).ndim + 1)
  return concatenate([expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x, axis: int = 0) -> tuple:
  """The slices of `x` along `axis`, that dimension removed."""
  x = convert_to_array(x)
  shape = get_aval(x).shape
  axis = utils.canonicalize_axis(axis, len(shape))
  return tuple(squeeze(piece, (axis,)) for piece in split(x, [1] * shape[axis], axis))


def broadcast_like(arr, like_arr):
  """`arr` broadcast (numpy's rules) to the shape of `like_arr`."""
  arr, shape = convert_to_array(arr), tuple(np.shape(like_arr))
  rank = get_aval(arr).ndim
  return broadcast_in_dim(arr, shape, tuple(range(len(shape) - rank, len(shape))))


def index_take(src, idxs: Sequence, axes: Sequence[int]):
  """`src` indexed by the integer arrays `idxs` (of one length N) along `axes`, one each:
  the result's first dimension is N, followed by the dimensions not indexed."""
  from minijax.lax.gather import GatherDimensionNumbers, gather
  src = convert_to_array(src)
  shape = get_aval(src).shape
  axes = tuple(utils.canonicalize_axis(a, len(shape)) for a in axes)
  if len(idxs) != len(axes):
    raise ValueError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes")
  columns = [convert_to_array(i) for i in idxs]
  index_dtype = dtypes.promote_types(*[get_aval(c).dtype for c in columns]) if columns \
      else np.dtype(np.int32)
  columns = [c.astype(index_dtype) for c in columns]
  indices = concatenate([expand_dims(c, (1,)) for c in columns], 1)
  kept = tuple(d for d in range(len(shape)) if d not in axes)
  dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, len(kept) + 1)),
                                 collapsed_slice_dims=tuple(sorted(axes)),
                                 start_index_map=axes)
  sizes = tuple(1 if d in axes else shape[d] for d in range(len(shape)))
  return gather(src, indices, dnums, sizes, mode="promise_in_bounds")


def shape_as_value(shape: Sequence[int]):
  """The sizes of `shape` as an integer array (of the default integer dtype)."""
  return convert_to_array(np.array(tuple(int(d) for d in shape),
                                   dtype=dtypes.default_int_dtype()))


def dtype(x):
  """The dtype minijax gives `x` (a value, a scalar type or a dtype), canonicalized for
  the 64-bit mode."""
  if isinstance(x, type) and issubclass(x, (bool, int, float, complex)):
    return dtypes.python_scalar_dtype(x(0))
  if isinstance(x, (bool, int, float, complex)):
    return dtypes.python_scalar_dtype(x)
  found = getattr(x, "dtype", None)
  return dtypes.canonicalize_dtype(found if found is not None else np.dtype(x))


def composite(decomposition, name: str, version: int = 0):
  """`decomposition`, marked as one operation named `name`: JAX emits a StableHLO composite
  a backend may replace; minijax stages it as a `named_call_p` of that name (one call
  equation, one named function in the lowered module), computing the decomposition."""
  from minijax.lax.remat import staged_call
  if not isinstance(name, str) or not name:
    raise ValueError(f"composite: name must be a non-empty string, got {name!r}")
  return staged_call(decomposition, name=name)
