"""Index helpers and functional updates: `s_`, `index_exp`, `r_`, `c_`, `mgrid`, `ogrid`,
`ix_`, the `*_indices_from` family, `ravel_multi_index`, and numpy's in-place functions
(`put`, `place`, `put_along_axis`, `fill_diagonal`), which, JAX arrays being immutable,
take `inplace=False` and return the updated array; `compress` and `extract`.
"""
from __future__ import annotations

import operator

import numpy as np

from minijax.core import dtypes
from minijax.numpy import _util

newaxis = None
s_ = np.s_
index_exp = np.index_exp


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _immutable(name: str, inplace: bool) -> None:
  if inplace:
    raise ValueError(f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")


def _slice_range(s: slice):
  """The values of `start:stop:step` as numpy's index tricks read it (a complex step is a
  count of points, stop included)."""
  jnp = _jnp()
  start = 0 if s.start is None else s.start
  step = 1 if s.step is None else s.step
  if isinstance(step, complex):
    return jnp.linspace(start, s.stop, int(abs(step)))
  return jnp.arange(start, s.stop, step)


class _Grid:
  """`mgrid[...]` / `ogrid[...]`: numpy's grids of slices (a complex step is a count)."""

  def __init__(self, sparse: bool):
    self.sparse = sparse

  def __getitem__(self, key):
    jnp = _jnp()
    single = isinstance(key, slice)
    keys = (key,) if single else tuple(key)
    axes = [_slice_range(k) for k in keys]
    if single:
      return axes[0]
    grids = jnp.meshgrid(*axes, indexing="ij", sparse=self.sparse)
    return grids if self.sparse else jnp.stack(grids)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)


class _Concatenator:
  """`r_[...]` / `c_[...]`: slices become ranges, scalars and sequences arrays, all joined
  along an axis; a leading string 'axis[,ndmin[,trans1d]]' or 'r'/'c' directs it."""

  def __init__(self, axis: int, ndmin: int, trans1d: int):
    self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

  def __getitem__(self, key):
    jnp = _jnp()
    items = key if isinstance(key, tuple) else (key,)
    axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, None
    if items and isinstance(items[0], str):
      directive, items = items[0], items[1:]
      if directive in ("r", "c"):
        matrix = directive
      else:
        parts = [int(p) for p in directive.split(",")]
        axis = parts[0]
        ndmin = parts[1] if len(parts) > 1 else ndmin
        trans1d = parts[2] if len(parts) > 2 else -1
    arrays = []
    for item in items:
      arr = _slice_range(item) if isinstance(item, slice) else jnp.asarray(item)
      if _util.ndim(arr) < ndmin:  # its axes placed from `trans1d` on, ones elsewhere
        shape = _util.shape(arr)
        first = min(trans1d if trans1d >= 0 else trans1d + ndmin, ndmin - len(shape))
        new_shape = [1] * ndmin
        new_shape[first:first + len(shape)] = shape
        arr = jnp.reshape(arr, new_shape)
      arrays.append(jnp.atleast_1d(arr))
    out = jnp.concatenate(arrays, axis=axis)
    if matrix == "r":
      return jnp.atleast_2d(out)
    if matrix == "c":
      return jnp.atleast_2d(out).T
    return out

  def __len__(self):
    return 0


r_ = _Concatenator(0, 1, -1)
c_ = _Concatenator(-1, 2, 0)


def ix_(*args):
  """Open meshes from 1-d sequences: the i-th has shape (1, ..., n_i, ..., 1)."""
  jnp = _jnp()
  out = []
  for i, a in enumerate(args):
    a = jnp.asarray(a)
    if _util.ndim(a) != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                       f"{_util.shape(a)}")
    if _util.dtype(a) == dtypes.bool_:
      raise TypeError("jax.numpy.ix_ does not support boolean arguments")
    shape = [1] * len(args)
    shape[i] = _util.shape(a)[0]
    out.append(jnp.reshape(a, shape))
  return tuple(out)


def diag_indices_from(arr):
  shape = _util.shape(arr)
  if len(shape) < 2 or len(set(shape)) != 1:
    raise ValueError("input array must be at least 2-d and all its dimensions equal")
  return _jnp().diag_indices(shape[0], len(shape))


def tril_indices_from(arr, k=0):
  shape = _util.shape(arr)
  if len(shape) != 2:
    raise ValueError("input array must be 2-d")
  return _jnp().tril_indices(shape[0], k=k, m=shape[1])


def triu_indices_from(arr, k=0):
  shape = _util.shape(arr)
  if len(shape) != 2:
    raise ValueError("input array must be 2-d")
  return _jnp().triu_indices(shape[0], k=k, m=shape[1])


def mask_indices(n, mask_func, k=0, *, size=None):
  jnp = _jnp()
  return jnp.nonzero(mask_func(jnp.ones((n, n)), k), size=size)


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
  """Flat indices of the `multi_index` tuple into an array of shape `dims`."""
  jnp = _jnp()
  dims = tuple(operator.index(d) for d in dims)
  if len(multi_index) != len(dims):
    raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
  if order not in ("C", "F"):
    raise ValueError("only 'C' or 'F' order is permitted")
  index = [jnp.asarray(i) for i in multi_index]
  for i in index:
    if not dtypes.is_integer(_util.dtype(i)):
      raise TypeError("only int indices permitted")
  if mode == "raise":
    values = [_util.concrete_value(i) for i in index]
    if any(v is None for v in values):
      raise TypeError("ravel_multi_index(mode='raise') needs concrete indices; use "
                      "mode='wrap' or mode='clip' under jit")
    if any(np.any((v < 0) | (v >= d)) for v, d in zip(values, dims)):
      raise ValueError("invalid entry in coordinates array")
  elif mode == "wrap":
    index = [i % d for i, d in zip(index, dims)]
  elif mode == "clip":
    index = [jnp.clip(i, 0, d - 1) for i, d in zip(index, dims)]
  else:
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
  strides = np.cumprod((1,) + (dims[::-1] if order == "C" else dims)[:-1])
  strides = strides[::-1] if order == "C" else strides
  out_dtype = dtypes.default_int_dtype() if dtype is None else dtype
  total = jnp.zeros((), out_dtype)
  for i, s in zip(index, strides):
    total = total + i.astype(out_dtype) * int(s)
  return total


def put(a, ind, v, mode=None, *, inplace=True):
  """`a` with `a.flat[ind] = v` (values cycled), indices clipped or wrapped (`mode`)."""
  _immutable("put", inplace)
  jnp = _jnp()
  flat = jnp.ravel(jnp.asarray(a))
  ind = jnp.ravel(jnp.asarray(ind))
  v = jnp.ravel(jnp.asarray(v)).astype(_util.dtype(flat))
  if _util.size(ind) == 0 or _util.size(v) == 0:
    return jnp.asarray(a)
  n = _util.size(flat)
  if mode is None or mode == "clip":
    ind = jnp.clip(ind, 0, n - 1)
  elif mode == "wrap":
    ind = ind % n
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
  values = jnp.resize(v, _util.shape(ind))
  return flat.at[ind].set(values).reshape(_util.shape(a))


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
  """`arr` with `values` written at `indices` along `axis` (take_along_axis's inverse)."""
  _immutable("put_along_axis", inplace)
  jnp = _jnp()
  arr = jnp.asarray(arr)
  if axis is None:
    arr, axis = jnp.ravel(arr), 0
  indices = jnp.asarray(indices)
  (axis,) = _util.canonicalize_axes(axis, _util.ndim(arr))
  values = jnp.broadcast_to(jnp.asarray(values, _util.dtype(arr)), _util.shape(indices))
  index = []
  for d in range(_util.ndim(arr)):
    if d == axis:
      index.append(indices)
    else:
      shape = [1] * _util.ndim(arr)
      shape[d] = _util.shape(arr)[d]
      index.append(jnp.arange(_util.shape(arr)[d]).reshape(shape))
  return arr.at[tuple(index)].set(values, mode=mode)


def place(arr, mask, vals, *, inplace=True):
  """`arr` with the places where `mask` holds set to `vals`, in order, cycled."""
  _immutable("place", inplace)
  jnp = _jnp()
  arr = jnp.asarray(arr)
  where = np.flatnonzero(_util.concrete_or_error("place", jnp.asarray(mask, bool)))
  if where.size == 0:
    return arr
  vals = jnp.ravel(jnp.asarray(vals, _util.dtype(arr)))
  return jnp.ravel(arr).at[where].set(jnp.resize(vals, where.shape)).reshape(_util.shape(arr))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  """`a` with its main diagonal set to `val` (cycled)."""
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  jnp = _jnp()
  a = jnp.asarray(a)
  shape = _util.shape(a)
  if len(shape) < 2:
    raise ValueError("array must be at least 2-d")
  if len(shape) > 2 and len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  if len(shape) == 2:
    step = shape[1] + 1
    end = shape[1] * shape[1]
  else:
    step = 1 + int(np.sum(np.cumprod(shape[:-1])))
    end = None
  positions = np.arange(_util.size(a))[:end:step]
  vals = jnp.ravel(jnp.asarray(val, _util.dtype(a)))
  values = jnp.resize(vals, positions.shape)
  return jnp.ravel(a).at[positions].set(values).reshape(shape)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """The slices of `a` along `axis` where `condition` holds (with `size`: a fixed count)."""
  _util.reject_out("compress", out)
  jnp = _jnp()
  if _util.ndim(condition) != 1:
    raise ValueError("condition must be a 1D array")
  condition = jnp.asarray(condition)
  a = jnp.asarray(a)
  if axis is None:
    a, axis = jnp.ravel(a), 0
  (axis,) = _util.canonicalize_axes(axis, _util.ndim(a))
  length = _util.shape(a)[axis]
  if size is not None and not 0 < size <= length:
    raise ValueError("size must be positive and not greater than the size of the array "
                     f"axis; got size={size} for a.shape[axis]={length}")
  condition = condition[:length]
  if _util.shape(condition)[0] < length:
    condition = jnp.concatenate([condition, jnp.zeros(length - _util.shape(condition)[0],
                                                      _util.dtype(condition))])
  (picked,) = jnp.nonzero(condition, size=size, fill_value=length if size else None)
  moved = jnp.moveaxis(a, axis, 0)
  taken = moved.at[picked].get(mode="fill", fill_value=fill_value)
  return jnp.moveaxis(taken, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
  """The elements of `arr` (flattened) where `condition` (flattened, no longer) holds."""
  jnp = _jnp()
  if _util.size(condition) > _util.size(arr):
    raise ValueError("condition contains entries that are out of bounds")
  return compress(jnp.ravel(condition), jnp.ravel(arr), size=size, fill_value=fill_value)
