"""Shape manipulation: reshape, ravel, transpose, swapaxes, moveaxis, squeeze, expand_dims,
broadcast_to/arrays, concatenate, stack, hstack, vstack, split, tile, repeat, flip, roll,
atleast_*d, sort, argsort, take, take_along_axis, diagonal, trace (pad: padding.py).

Shapes are static, so everything here is a composition of lax's structural primitives with
the sizes computed in Python.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from minijax import lax
from minijax.lax.sharding import takes_out_sharding
from minijax.core import dtypes
from minijax.core.errors import ConcretizationTypeError
from minijax.core.trace import Tracer
from minijax.numpy import _util
from minijax.numpy.ufuncs import remainder


def _arr(name, a):
  (a,) = _util.arrays_of(name, (a,))  # (lists are refused, as JAX refuses them)
  return lax.convert_to_array(a)


def reshape(a, newshape=None, order="C", *, shape=None, copy=None, out_sharding=None):
  """`a` with a new shape, its elements read and placed in row-major ("C") or column-major
  ("F") order."""
  newshape = shape if shape is not None else newshape
  if order is None:
    order = "C"
  if order == "A":  # (numpy's reads an F-contiguous numpy array column-major)
    raise NotImplementedError("reshape: order='A' is not supported (use 'C' or 'F')")
  if order == "K":
    raise ValueError("order 'K' is not permitted for reshaping")
  if order not in ("C", "F"):
    raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
  if out_sharding is not None:
    raise NotImplementedError("reshape: out_sharding is not supported")
  x = _arr("reshape", a)
  if order == "F":  # column-major: the reversed axes, reshaped in row-major order
    if isinstance(newshape, (int, np.integer)):
      newshape = (int(newshape),)
    flipped = reshape(lax.transpose(x, tuple(range(x.ndim))[::-1]), tuple(newshape)[::-1])
    return lax.transpose(flipped, tuple(range(flipped.ndim))[::-1])
  newshape = list(_util.shape_argument(newshape))
  size, asked = _util.size(x), tuple(newshape)
  what = f"cannot reshape array of shape {_util.shape(x)} (size {size}) into shape {asked}"
  if newshape.count(-1) > 1:  # (JAX's TypeErrors and words)
    raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {asked}")
  if -1 in newshape:
    known = math.prod(s for s in newshape if s != -1)
    if known == 0 or size % known:
      raise TypeError(f"{what} because the product of specified axis sizes ({known}) does "
                      f"not evenly divide {size}")
    newshape[newshape.index(-1)] = size // known
  if math.prod(newshape) != size:
    raise TypeError(f"{what} (size {math.prod(newshape)})")
  return lax.reshape(x, tuple(newshape))


@takes_out_sharding
def ravel(a, order="C"):
  """`a` flattened, its elements read in row-major ("C") or column-major ("F") order."""
  if order == "K":
    raise NotImplementedError("Ravel not implemented for order='K'.")
  if order == "A":
    raise NotImplementedError("np.reshape order=A is not implemented.")
  if order not in ("C", "F"):
    raise ValueError(f"Unexpected value for 'order' argument: {order}.")
  x = _arr("ravel", a)
  if order == "F":
    x = lax.transpose(x, tuple(range(_util.ndim(x)))[::-1])
  return lax.reshape(x, (_util.size(x),))


def transpose(a, axes=None):
  x = _arr("transpose", a)
  nd = _util.ndim(x)
  if axes is None:
    axes = tuple(reversed(range(nd)))
  axes = tuple(int(ax) % nd if nd else int(ax) for ax in axes)
  if sorted(axes) != list(range(nd)):
    raise TypeError(f"transpose: axes {axes} don't match an array of dimension {nd}")
  return lax.transpose(x, axes)


def permute_dims(a, /, axes):
  return transpose(a, axes)


def swapaxes(a, axis1, axis2):
  x = _arr("swapaxes", a)
  nd = _util.ndim(x)
  a1, a2 = _util.canonicalize_axes((axis1,), nd)[0], _util.canonicalize_axes((axis2,), nd)[0]
  perm = list(range(nd))
  perm[a1], perm[a2] = perm[a2], perm[a1]
  return lax.transpose(x, perm)


def moveaxis(a, source, destination):
  x = _arr("moveaxis", a)
  nd = _util.ndim(x)
  src = _util.canonicalize_axes(source, nd, "source")
  dst = _util.canonicalize_axes(destination, nd, "destination")
  if len(src) != len(dst):
    raise ValueError("moveaxis: source and destination must have the same number of axes")
  rest = [i for i in range(nd) if i not in src]
  perm = [None] * nd
  for s, d in zip(src, dst):
    perm[d] = s
  it = iter(rest)
  perm = [p if p is not None else next(it) for p in perm]
  return lax.transpose(x, perm)


def squeeze(a, axis=None):
  x = _arr("squeeze", a)
  shape = _util.shape(x)
  if axis is None:
    axes = tuple(i for i, s in enumerate(shape) if s == 1)
  else:
    axes = _util.canonicalize_axes(axis, len(shape))
    if any(shape[ax] != 1 for ax in axes):
      raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                       f"one, got shape={shape} and dimensions={axes}")
  return lax.squeeze(x, axes)


def expand_dims(a, axis):
  x = _arr("expand_dims", a)
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  out_nd = _util.ndim(x) + len(axes)
  axes = _util.canonicalize_axes(axes, out_nd)
  return lax.expand_dims(x, axes)


@takes_out_sharding
def broadcast_to(array, shape):
  x = _arr("broadcast_to", array)
  shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
  return _util.broadcast_to(x, shape)


def broadcast_shapes(*shapes):
  return _util.broadcast_shapes("broadcast_shapes", *shapes)


def broadcast_arrays(*args):
  xs = [_arr("broadcast_arrays", a) for a in args]
  shape = _util.broadcast_shapes("broadcast_arrays", *(_util.shape(x) for x in xs))
  return [_util.broadcast_to(x, shape) for x in xs]


def atleast_1d(*arys):
  outs = [reshape(a, (1,)) if _util.ndim(_arr("atleast_1d", a)) == 0 else _arr("atleast_1d", a)
          for a in arys]
  return outs[0] if len(outs) == 1 else outs


def atleast_2d(*arys):
  outs = []
  for a in arys:
    x = _arr("atleast_2d", a)
    nd = _util.ndim(x)
    outs.append(lax.reshape(x, (1,) * (2 - nd) + _util.shape(x)) if nd < 2 else x)
  return outs[0] if len(outs) == 1 else outs


def atleast_3d(*arys):
  outs = []
  for a in arys:
    x = _arr("atleast_3d", a)
    s = _util.shape(x)
    if len(s) == 0:
      x = lax.reshape(x, (1, 1, 1))
    elif len(s) == 1:
      x = lax.reshape(x, (1, s[0], 1))
    elif len(s) == 2:
      x = lax.reshape(x, s + (1,))
    outs.append(x)
  return outs[0] if len(outs) == 1 else outs


def concatenate(arrays, axis=0, dtype=None):
  if not isinstance(arrays, (list, tuple)):
    arrays = list(arrays)
  if not arrays:
    raise ValueError("need at least one array to concatenate")
  xs = [_arr("concatenate", a) for a in arrays]
  if axis is None:
    xs = [ravel(x) for x in xs]
    axis = 0
  xs = _util.promote("concatenate", *xs)
  if dtype is not None:
    xs = [lax.convert_element_type(x, dtype) for x in xs]
  nd = _util.ndim(xs[0])
  if nd == 0:
    raise ValueError("zero-dimensional arrays cannot be concatenated")
  if any(_util.ndim(x) != nd for x in xs):
    shapes = ", ".join(str(_util.shape(x)) for x in xs)
    raise TypeError(f"concatenate: all arrays must have the same number of dimensions, got "
                     f"shapes {shapes}")
  (ax,) = _util.canonicalize_axes(axis, nd)
  return lax.concatenate(xs, ax)


concat = concatenate


def stack(arrays, axis=0, out=None, dtype=None):
  _util.reject_out("stack", out)
  xs = [_arr("stack", a) for a in arrays]
  if not xs:
    raise ValueError("need at least one array to stack")
  shapes = {_util.shape(x) for x in xs}
  if len(shapes) != 1:
    raise ValueError(f"stack: all input arrays must have the same shape, got "
                     f"{[_util.shape(x) for x in xs]}")
  nd = _util.ndim(xs[0]) + 1
  (ax,) = _util.canonicalize_axes(axis, nd)
  return concatenate([lax.expand_dims(x, (ax,)) for x in xs], ax, dtype)


def hstack(tup, dtype=None):
  xs = [atleast_1d(a) for a in tup]
  return concatenate(xs, 0 if _util.ndim(xs[0]) == 1 else 1, dtype)


def vstack(tup, dtype=None):
  return concatenate([atleast_2d(a) for a in tup], 0, dtype)


def dstack(tup, dtype=None):
  return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
  xs = []
  for a in tup:
    x = _arr("column_stack", a)
    xs.append(lax.reshape(x, (_util.size(x), 1)) if _util.ndim(x) < 2 else x)
  return concatenate(xs, 1)


def split(ary, indices_or_sections, axis=0):
  return _split("split", ary, indices_or_sections, axis, strict=True)


def array_split(ary, indices_or_sections, axis=0):
  return _split("array_split", ary, indices_or_sections, axis, strict=False)


def _split(name, ary, sections, axis, strict):
  x = _arr(name, ary)
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  n = _util.shape(x)[ax]
  if isinstance(sections, (int, np.integer)):
    k = int(sections)
    if k <= 0:
      raise ValueError(f"{name}: number of sections must be larger than 0")
    if strict and n % k:
      raise ValueError("array split does not result in an equal division")
    q, r = divmod(n, k)
    sizes = [q + 1] * r + [q] * (k - r)
    bounds = np.cumsum([0] + sizes).tolist()
  else:
    idx = [builtins.min(builtins.max(int(i) if i >= 0 else int(i) + n, 0), n) for i in sections]
    bounds = [0] + idx + [n]
  outs = []
  for lo, hi in zip(bounds[:-1], bounds[1:]):
    hi = builtins.max(hi, lo)
    outs.append(lax.slice_in_dim(x, lo, hi, 1, ax))
  return outs


def hsplit(ary, indices_or_sections):
  return split(ary, indices_or_sections, 1 if _util.ndim(ary) > 1 else 0)


def vsplit(ary, indices_or_sections):
  return split(ary, indices_or_sections, 0)


def tile(A, reps):
  x = _arr("tile", A)
  reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
  nd = builtins.max(len(reps), _util.ndim(x))
  reps = (1,) * (nd - len(reps)) + reps
  x = lax.reshape(x, (1,) * (nd - _util.ndim(x)) + _util.shape(x))
  shape = _util.shape(x)
  # broadcast to (r0, s0, r1, s1, ...) then merge each pair
  big = []
  dims = []
  for i, (r, s) in enumerate(zip(reps, shape)):
    big += [r, s]
    dims.append(2 * i + 1)
  out = lax.broadcast_in_dim(x, tuple(big), tuple(dims))
  return lax.reshape(out, tuple(r * s for r, s in zip(reps, shape)))


@takes_out_sharding
def repeat(a, repeats, axis=None, total_repeat_length=None):
  """Each element of `a` along `axis` repeated `repeats` times.  Traced `repeats` need a
  static `total_repeat_length`: the result is cut to it, or filled with the last element."""
  x = _arr("repeat", a)
  if axis is None:
    x = ravel(x)
    axis = 0
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  shape = _util.shape(x)
  static = _static_repeats(repeats)
  if total_repeat_length is None:
    if static is None:
      raise ConcretizationTypeError(
          repeats, "jnp.repeat", "When repeat is traced, the total number of repeats must be "
          "static: pass a static `repeats`, or a static `total_repeat_length`. ")
    reps = static if static.ndim == 0 else np.ravel(static)
    if reps.ndim == 0:
      return _repeat_each(x, ax, int(reps))
    _check_repeats(reps.shape, shape[ax], ax)
    index = np.repeat(np.arange(shape[ax]), reps)
    return take(x, index.astype(np.int32), axis=ax)
  length = int(total_repeat_length)
  if static is not None and static.ndim == 0:
    reps = np.full(shape[ax], int(static))
  else:
    reps = ravel(lax.convert_to_array(repeats))
    _check_repeats(_util.shape(reps), shape[ax], ax)
  if length == 0 or shape[ax] == 0:
    return lax.slice_in_dim(x, 0, 0 if length == 0 else shape[ax], 1, ax)
  # A 1 at each element's first position, summed up the result: the element's index.
  ends = lax.cumsum(lax.convert_element_type(lax.convert_to_array(reps), np.int32), 0)
  starts = ends - lax.convert_element_type(lax.convert_to_array(reps), np.int32)
  from minijax.numpy.creation import zeros
  marks = zeros((length,), np.int32).at[starts].add(1, mode="drop")
  return take(x, lax.cumsum(marks, 0) - 1, axis=ax)


def _static_repeats(repeats):
  """`repeats` as a numpy array, or None where it is traced."""
  if isinstance(repeats, Tracer):
    repeats = repeats.to_concrete_value()
    if repeats is None:
      return None
  return np.asarray(repeats)


def _repeat_each(x, ax, r):
  shape = _util.shape(x)
  big = shape[:ax + 1] + (r,) + shape[ax + 1:]
  dims = tuple(i if i <= ax else i + 1 for i in range(len(shape)))
  out = lax.broadcast_in_dim(x, big, dims)
  return lax.reshape(out, shape[:ax] + (shape[ax] * r,) + shape[ax + 1:])


def _check_repeats(repeats_shape, size, ax):
  if len(repeats_shape) != 1 or repeats_shape[0] != size:
    raise ValueError(f"repeat: repeats of shape {tuple(repeats_shape)} do not match axis "
                     f"{ax} of size {size}: give an int, or one repeat per element")


def flip(m, axis=None):
  x = _arr("flip", m)
  return lax.rev(x, _util.canonicalize_axes(axis, _util.ndim(x)))


def fliplr(m):
  return flip(m, 1)


def flipud(m):
  return flip(m, 0)


def roll(a, shift, axis=None):
  """`a`'s elements shifted by `shift` along `axis` (each of several, `shift` and `axis`
  broadcast against each other as in numpy), those pushed off one end coming back at the
  other; without `axis`, along the flattened array.  A traced shift slides a window over
  the axis doubled."""
  x = _arr("roll", a)
  if axis is None:
    return reshape(roll(ravel(x), shift, 0), _util.shape(x))
  if isinstance(shift, Tracer):  # (fractional shifts truncated, as numpy's are)
    traced = ravel(shift)
    if not dtypes.issubdtype(traced.dtype, np.integer) or traced.dtype.itemsize < 4:
      traced = lax.convert_element_type(traced, dtypes.default_int_dtype())
    shifts = [traced[i] for i in range(_util.shape(traced)[0])]
  else:
    shifts = [int(v) for v in np.ravel(shift)]
  axes = list(np.ravel(axis))
  if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
    raise ValueError(f"roll: shift and axis must broadcast against each other; got "
                     f"{len(shifts)} shifts for {len(axes)} axes")
  if len(shifts) == 1:
    shifts = shifts * len(axes)
  if len(axes) == 1:
    axes = axes * len(shifts)
  for s, ax in zip(shifts, axes):
    (ax,) = _util.canonicalize_axes(int(ax), _util.ndim(x))
    n = _util.shape(x)[ax]
    if n == 0:
      continue
    if isinstance(s, Tracer):
      doubled = lax.concatenate([x, x], ax)
      x = lax.dynamic_slice_in_dim(doubled, n - remainder(s, n), n, ax)
      continue
    s %= n
    if s:
      x = lax.concatenate([lax.slice_in_dim(x, n - s, n, 1, ax),
                           lax.slice_in_dim(x, 0, n - s, 1, ax)], ax)
  return x


def rot90(m, k=1, axes=(0, 1)):
  x = _arr("rot90", m)
  k %= 4
  a0, a1 = axes
  for _ in range(k):
    x = swapaxes(flip(x, a1), a0, a1)
  return x


def _sort_options(name, kind, order):
  """numpy's `kind` and `order` have no meaning here (every sort is stable); refused as JAX
  refuses them, never ignored."""
  if kind is not None:
    raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                    "stable=False to specify sort stability.")
  if order is not None:
    raise TypeError(f"'order' argument to {name} is not supported.")


def sort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
  x = _arr("sort", a)
  _sort_options("sort", kind, order)
  if axis is None:
    x, axis = ravel(x), 0
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  out = lax.sort(x, ax, is_stable=True)
  return lax.rev(out, (ax,)) if descending else out


def argsort(a, axis=-1, kind=None, order=None, stable=True, descending=False, dtype=None):
  """The indices that sort `a` along `axis`, of `dtype` (the default integer type; any
  other dtype holds them converted, as JAX's)."""
  x = _arr("argsort", a)
  _sort_options("argsort", kind, order)
  if axis is None:
    x, axis = ravel(x), 0
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  iota = lax.broadcasted_iota(dtypes.default_int_dtype(), _util.shape(x), ax)
  if descending:
    x = lax.rev(x, (ax,))
    iota = lax.rev(iota, (ax,))
  _, perm = lax.sort((x, iota), ax, is_stable=True, num_keys=1)
  perm = lax.rev(perm, (ax,)) if descending else perm
  if dtype is None:
    return perm
  return lax.convert_element_type(perm, dtypes.canonicalize_user_dtype(dtype, "argsort"))


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
  """Values of `arr` at `indices` along `axis`, the other axes broadcast.  Negative indices
  count from the end (unless `wrap_negative_indices=False`); out-of-bounds ones give
  `fill_value` (mode "fill", the default) or the nearest element (mode "clip")."""
  x = _arr("take_along_axis", arr)
  idx = _arr("take_along_axis", indices)
  if axis is None:
    x, idx, axis = ravel(x), ravel(idx), 0
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  if not dtypes.is_integer(_util.dtype(idx)):
    raise TypeError(f"take_along_axis: indices must be integers, got {_util.dtype(idx)}")
  if _util.ndim(idx) != _util.ndim(x):
    raise ValueError("indices and arr must have the same number of dimensions; "
                     f"{_util.ndim(idx)} vs. {_util.ndim(x)}")
  mode = "fill" if mode is None else str(getattr(mode, "name", mode)).lower()
  if mode not in ("fill", "clip", "promise_in_bounds"):
    raise ValueError(f'Unknown gather mode "{mode}"')
  shape = list(_util.shape(x))
  ishape = _util.shape(idx)
  out_shape = tuple(builtins.max(a, b) if i != ax else b
                    for i, (a, b) in enumerate(zip(shape, ishape)))
  bshape = list(out_shape)
  bshape[ax] = shape[ax]
  x = _util.broadcast_to(x, tuple(bshape))
  idx = _util.broadcast_to(idx, out_shape)
  # the indices reach the gather as given (negative ones counted from the end), where the
  # mode treats those out of bounds and checkify sees them, as in JAX
  idx = lax.convert_element_type(idx, dtypes.int32)
  if shape[ax] == 0 and _util.size(idx):
    raise IndexError("Cannot do a non-empty jnp.take_along_axis() from an empty axis.")
  if wrap_negative_indices is not False:
    idx = _normalize_index(idx, shape[ax])
  from minijax.numpy.indexing import fill_value_for
  fill = fill_value_for(_util.dtype(x), fill_value) if mode == "fill" else None
  return lax.take_along_axis(x, idx, ax, mode=mode, fill_value=fill)


def _take_indices(idx, n: int, mode: str):
  """int32 indices into an axis of size `n`, wrapped around (mode "wrap") or clamped into
  it ("clip", negative ones to 0)."""
  idx = lax.convert_element_type(idx, dtypes.int32)
  if n == 0:
    return idx
  full = lambda v: lax.full(_util.shape(idx), v, dtypes.int32)  # noqa: E731
  if mode == "wrap":
    return lax.rem(lax.add(lax.rem(idx, full(n)), full(n)), full(n))
  return lax.clamp(full(0), idx, full(n - 1))


def _normalize_index(idx, n):
  """Negative indices count from the end."""
  idx = lax.convert_element_type(idx, dtypes.int32)
  zero = lax.full(_util.shape(idx), 0, dtypes.int32)
  size = lax.full(_util.shape(idx), n, dtypes.int32)
  return lax.select(lax.lt(idx, zero), lax.add(idx, size), idx)


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """Elements of `a` (flattened when `axis` is None) at `indices` along `axis`.  Negative
  indices from -n to -1 count from the end; others out of bounds give `fill_value` (mode
  "fill", the default: NaN, the lowest signed or highest unsigned integer, or True), the
  nearest end (mode "clip", which clamps the indices as given), or wrap around ("wrap")."""
  _util.reject_out("take", out)
  if mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
  mode = "fill" if mode is None else mode
  if mode not in ("fill", "clip", "wrap"):
    raise ValueError(f"Invalid mode '{mode}' for np.take")
  x = _arr("take", a)
  idx = _arr("take", indices)
  if _util.dtype(idx) == dtypes.bool_:  # (as numpy's and JAX's: the indices 0 and 1)
    idx = lax.convert_element_type(idx, dtypes.int32)
  if not dtypes.is_integer(_util.dtype(idx)):
    raise ValueError(f"take: indices must have an integer type, got {_util.dtype(idx)}")
  if axis is None:
    x, axis = ravel(x), 0
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  if _util.shape(x)[ax] == 0 and _util.size(idx):
    raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
  from minijax.numpy.indexing import getitem, getitem_filled
  if mode == "fill":  # what x.at[...].get(mode="fill") reads
    return getitem_filled(x, (slice(None),) * ax + (idx,), fill_value)
  idx = _take_indices(idx, _util.shape(x)[ax], mode)
  return getitem(x, (slice(None),) * ax + (idx,))


def diagonal(a, offset=0, axis1=0, axis2=1):
  from minijax.numpy.indexing import getitem
  x = _arr("diagonal", a)
  nd = _util.ndim(x)
  a1, a2 = _util.canonicalize_axes((axis1, axis2), nd)
  x = moveaxis(x, (a1, a2), (-2, -1))
  n, m = _util.shape(x)[-2:]
  i = np.arange(builtins.max(0, builtins.min(n, m - offset) if offset >= 0
                             else builtins.min(n + offset, m)))
  rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
  return getitem(x, (Ellipsis, rows.astype(np.int32), cols.astype(np.int32)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  _util.reject_out("trace", out)
  from minijax.numpy.reductions import sum as _sum
  return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diag(v, k=0):
  x = _arr("diag", v)
  if _util.ndim(x) == 2:
    return diagonal(x, k)
  if _util.ndim(x) != 1:
    raise ValueError("diag: input must be 1-d or 2-d")
  n = _util.shape(x)[0] + builtins.abs(k)
  from minijax.numpy.creation import eye
  padded = lax.pad(x, lax.full_like(x, 0, shape=()), [(0, builtins.abs(k), 0)])
  mask = eye(n, k=k, dtype=dtypes.bool_)
  vals = lax.broadcast_in_dim(padded, (n, n), (0,) if k >= 0 else (1,))
  return lax.select(mask, vals, lax.full_like(vals, 0))  # (weakly typed if `v` is)


def rollaxis(a, axis, start=0):
  """`axis` moved to just before `start` (numpy's older spelling of moveaxis)."""
  x = _arr("rollaxis", a)
  n = _util.ndim(x)
  (axis,) = _util.canonicalize_axes(axis, n)
  if not -n <= start <= n:
    raise ValueError(f"start={start} must satisfy {-n} <= start <= {n}")
  start = start + n if start < 0 else start
  if axis < start:
    start -= 1
  return moveaxis(x, axis, start)


def resize(a, new_shape):
  """`a`'s elements, repeated as needed, in the shape `new_shape`."""
  x = ravel(_arr("resize", a))
  new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
  if any(d < 0 for d in new_shape):
    raise ValueError("All elements of `new_shape` must be non-negative")
  total = math.prod(new_shape)
  n = _util.size(x)
  if n == 0 or total == 0:
    return lax.full(new_shape, 0, _util.dtype(x))
  repeats = -(-total // n)
  return reshape(tile(x, repeats)[:total], new_shape)


def dsplit(ary, indices_or_sections):
  x = _arr("dsplit", ary)
  if _util.ndim(x) < 3:
    raise ValueError("dsplit only works on arrays of 3 or more dimensions")
  return split(x, indices_or_sections, axis=2)


def diagflat(v, k=0):
  """A 2-d array with the flattened `v` on its k-th diagonal."""
  return diag(ravel(_arr("diagflat", v)), k)


def block(arrays):
  """An array assembled from nested lists of blocks (numpy's `block`)."""
  def depth(x):
    return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)

  def assemble(x, level, max_depth):
    if isinstance(x, tuple):
      raise TypeError("jax.numpy.block does not allow tuples, got tuple")
    if isinstance(x, list):
      if not x:
        raise ValueError("Lists cannot be empty")
      parts = [assemble(e, level + 1, max_depth) for e in x]
      return concatenate(parts, axis=level - d)  # (the innermost lists join along -1)
    arr = _util.asarray(x)
    return arr if _util.ndim(arr) >= max_depth else reshape(
        arr, (1,) * (max_depth - _util.ndim(arr)) + _util.shape(arr))

  d = depth(arrays)
  leaves = []

  def collect(x):
    if isinstance(x, list):
      for e in x:
        collect(e)
    else:
      leaves.append(_util.ndim(_util.asarray(x)))
  collect(arrays)
  max_depth = builtins.max([d, *leaves])
  return assemble(arrays, 0, max_depth) if isinstance(arrays, list) else _util.asarray(arrays)


def trim_zeros(filt, trim="fb", axis=None):
  """`filt` without its leading ('f') and trailing ('b') zeros along `axis` (all axes by
  default): where they end is read from its concrete value, and `filt` itself is sliced,
  so that derivatives flow through."""
  x = _arr("trim_zeros", filt)
  value = _util.concrete_or_error("trim_zeros", x) != 0
  axes = set(_util.canonicalize_axes(tuple(range(value.ndim)) if axis is None else axis,
                                     value.ndim))
  front, back = "f" in trim.lower(), "b" in trim.lower()
  if not (front or back):
    return x
  index = []
  for ax in range(value.ndim):
    if ax not in axes:
      index.append(slice(None))
      continue
    present = value.any(axis=tuple(i for i in range(value.ndim) if i != ax))
    if not present.any():
      index.append(slice(0, 0))
      continue
    index.append(slice(int(present.argmax()) if front else None,
                       value.shape[ax] - int(present[::-1].argmax()) if back else None))
  return x[tuple(index)]


def sort_complex(a):
  """Sorted by real part, then imaginary part, as complex numbers."""
  x = _arr("sort_complex", a)
  out = sort(x)
  if not np.issubdtype(_util.dtype(out), np.complexfloating):
    out = lax.convert_element_type(out, dtypes.to_complex_dtype(_util.dtype(out)))
  return out


def lexsort(keys, axis=-1):
  """The indices that sort by the last key, then the one before, ... (stable)."""
  keys = [_arr("lexsort", k) for k in (keys if isinstance(keys, (list, tuple)) else
                                       [keys[i] for i in range(_util.shape(keys)[0])])]
  if not keys:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  shape = _util.shape(keys[0])
  if any(_util.shape(k) != shape for k in keys):
    raise ValueError("all keys need to be the same shape")
  if len(shape) == 0:
    return lax.convert_to_array(np.asarray(0, dtypes.default_int_dtype()))
  (axis,) = _util.canonicalize_axes(axis, len(shape))
  order = lax.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
  for k in keys:  # the first key least significant: a stable sort per key
    order = take_along_axis(order, argsort(take_along_axis(k, order, axis), axis=axis,
                                           stable=True), axis)
  return order


def partition(a, kth, axis=-1):
  """The k-th smallest in place kth, smaller ones before it (sorted, as JAX returns
  them: the smallest kth+1 first, then the rest in descending order)."""
  x = _arr("partition", a)
  (axis,) = _util.canonicalize_axes(axis, _util.ndim(x))
  moved = moveaxis(x, axis, -1)
  n = _util.shape(moved)[-1]
  kth = kth + n if kth < 0 else kth
  s = sort(moved, axis=-1)
  low, high = s[..., :kth + 1], flip(s[..., kth + 1:], axis=-1)
  return moveaxis(concatenate([low, high], axis=-1), -1, axis)


def argpartition(a, kth, axis=-1):
  """Indices that partition `a` around its kth smallest (int32, as JAX): those of the
  kth + 1 smallest by increasing value, then the others in their original order."""
  x = _arr("argpartition", a)
  (axis,) = _util.canonicalize_axes(axis, _util.ndim(x))
  moved = moveaxis(x, axis, -1)
  n = _util.shape(moved)[-1]
  kth = kth + n if kth < 0 else kth
  order = argsort(moved, axis=-1, stable=True, dtype=np.int32)
  low = order[..., :kth + 1]
  rank = argsort(order, axis=-1, stable=True, dtype=np.int32)  # each index's place in order
  rest = argsort((rank <= kth).astype(np.int32), axis=-1, stable=True, dtype=np.int32)
  return moveaxis(concatenate([low, rest[..., :n - kth - 1]], axis=-1), -1, axis)
