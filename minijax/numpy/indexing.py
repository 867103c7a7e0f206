"""numpy indexing (`x[idx]`) and functional updates (`x.at[idx]`'s set, add, subtract,
multiply, divide, power, min, max, apply and get, with JAX's keywords: `mode`,
`wrap_negative_indices`, the index hints `unique_indices` and `indices_are_sorted`).

`getitem` first turns `None` and boolean scalars into new size-1 axes (so they become plain
slices), expands `Ellipsis`, and concrete boolean masks into integer arrays.  Then:
  * only ints and slices: one `slice` (strided), a `rev` for negative steps, a `squeeze`;
  * traced scalar indices too: a `dynamic_slice` for those axes;
  * integer arrays: a `gather` whose index vector stacks the broadcast advanced indices; the
    broadcast axes go where numpy puts them (in place if the advanced indices are adjacent,
    else first).
Negative indices count from the end; out-of-bounds array indices clamp when reading and are
dropped when updating, as in JAX (static out-of-bounds ints raise IndexError, as in numpy).

Updates find the flat positions an index selects by indexing an iota of the array's size
with the same expression, then scatter into the flattened array; so every index form that
`getitem` accepts can be updated, under every transformation.
"""
from __future__ import annotations


import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.core.errors import NonConcreteBooleanIndexError
from minijax.core.trace import Tracer
from minijax.lax.gather import default_fill_value
from minijax.numpy import _util

_INTS = (int, np.integer)


def _is_array(x) -> bool:
  return isinstance(x, (Tracer, np.ndarray)) or (hasattr(x, "aval") and hasattr(x, "shape"))


_concrete_value = _util.concrete_value


class _Mask:
  """A concrete boolean mask of rank >= 1 among the entries, until its axes are known."""

  def __init__(self, value: np.ndarray):
    self.value = value


def _normalize_entries(idx, shape: tuple):
  """Turns `idx` into a list of entries that are ints, slices, None, Ellipsis or arrays, with
  concrete boolean masks replaced by integer arrays (after checking them against the axes
  they index, as numpy does)."""
  nd = len(shape)
  if isinstance(idx, list):
    use = "tuple(seq)" if any(isinstance(e, slice) or e is None for e in idx) else "array(seq)"
    raise TypeError("Using a non-tuple sequence for multidimensional indexing is not allowed; "
                    f"use `arr[{use}]` instead of `arr[seq]` (as in JAX)")
  if not isinstance(idx, tuple):
    idx = (idx,)
  out = []
  for e in idx:
    if isinstance(e, list):
      e = np.asarray(e)
      if e.dtype == object or e.dtype.kind not in "biu":
        raise IndexError(f"index lists must hold integers or bools, got {e!r:.60}")
      if e.size == 0:
        e = e.astype(np.int32)
    if isinstance(e, (bool, np.bool_)):
      out.append(bool(e))
    elif isinstance(e, _INTS):
      out.append(int(e))
    elif e is None or e is Ellipsis or isinstance(e, slice):
      if isinstance(e, slice):
        parts = []
        for part in (e.start, e.stop, e.step):
          if part is not None and not isinstance(part, _INTS):
            if isinstance(part, Tracer):
              raise IndexError("slice bounds must be static Python ints; traced slice "
                               "bounds cannot be used (use lax.dynamic_slice instead)")
            try:  # a 0-d integer array (numpy's, or a concrete Array), as JAX takes them
              part = operator.index(part)
            except TypeError:
              raise TypeError(f"slice indices must be integers or None, got "
                              f"{type(part).__name__}") from None
          parts.append(part)
        e = slice(*parts)
      out.append(e)
    elif _is_array(e):
      dt = _util.dtype(e)
      if dt == dtypes.bool_:
        value = _concrete_value(e)
        if value is None:
          raise NonConcreteBooleanIndexError(
              f"boolean mask indexing needs a concrete mask, but got a traced "
              f"{get_aval(e).str_short()}: its result shape would depend on its values. "
              "Use minijax.numpy.where(mask, x, 0) instead.")
        if value.ndim == 0:
          out.append(bool(value))
        else:
          out.append(_Mask(value))
      elif dtypes.is_integer(dt):
        if isinstance(e, np.ndarray) and e.ndim == 0:
          out.append(int(e))
        else:
          out.append(e)
      else:
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{dt}")
    else:
      raise TypeError(f"invalid index of type {type(e).__name__} ({e!r:.60}); indices must be "
                      "ints, slices, None, Ellipsis, bools or integer arrays")
  if sum(e is Ellipsis for e in out) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  consumed = sum(e.value.ndim if isinstance(e, _Mask) else 1 for e in out
                 if not (e is None or e is Ellipsis or isinstance(e, bool)))
  if consumed > nd:
    raise IndexError(f"too many indices for array: array is {nd}-dimensional, but "
                     f"{consumed} were indexed")
  if any(e is Ellipsis for e in out):
    i = next(k for k, e in enumerate(out) if e is Ellipsis)
    out[i:i + 1] = [slice(None)] * (nd - consumed)
  else:
    out += [slice(None)] * (nd - consumed)
  return _expand_masks(out, shape)


def _expand_masks(entries, shape):
  out, axis = [], 0
  for e in entries:
    if isinstance(e, _Mask):
      for k, (n, m) in enumerate(zip(shape[axis:], e.value.shape)):
        if n != m:
          raise IndexError(f"boolean index did not match indexed array along axis "
                           f"{axis + k}; size of axis is {n} but size of corresponding "
                           f"boolean axis is {m}")
      out.extend(np.asarray(i, np.int32) for i in np.nonzero(e.value))
      axis += e.value.ndim
    else:
      out.append(e)
      axis += not (e is None or isinstance(e, bool))
  return out


def _insert_new_axes(x, entries):
  """Makes None and bool entries into axes of size 1 of `x`, indexed by a slice."""
  if not any(e is None or isinstance(e, bool) for e in entries):
    return x, entries
  new_axes, new_entries = [], []
  for k, e in enumerate(entries):
    if e is None or isinstance(e, bool):
      new_axes.append(k)
      new_entries.append(slice(0, 0) if e is False else slice(None))
    else:
      new_entries.append(e)
  return lax.expand_dims(x, tuple(new_axes)), new_entries


def _normalize_array_index(i, n: int):
  i = lax.convert_to_array(i)
  dt = _util.dtype(i)
  if dt != dtypes.int32:
    i = lax.convert_element_type(i, dtypes.int32)
  shape = _util.shape(i)
  return lax.select(lax.lt(i, lax.full(shape, 0, dtypes.int32)),
                    lax.add(i, lax.full(shape, n, dtypes.int32)), i)


def _clamp_static(e: int, n: int, d: int) -> tuple[int, bool]:
  """A static integer index of an axis of size `n`, made non-negative and clamped into
  the axis as JAX does (`arange(10)[11]` is 9); and whether it was out of bounds."""
  if n == 0:
    raise IndexError(f"index {e} is out of bounds for axis {d} with size 0")
  in_bounds = -n <= e < n
  e = e + n if e < 0 else e
  return min(max(e, 0), n - 1), not in_bounds


def _static_slices(x, entries, keep_arrays: bool, oob: list | None = None):
  """Applies slices (and static ints unless `keep_arrays`) as one strided slice plus rev;
  returns the new x, and for each axis the entry left to apply (None when done).  A static
  int out of bounds is clamped, and noted by appending True to `oob`."""
  shape = _util.shape(x)
  starts, limits, strides, flips, left = [], [], [], [], []
  for d, (e, n) in enumerate(zip(entries, shape)):
    if isinstance(e, slice):
      start, stop, step = e.indices(n)
      if step > 0:
        m = len(range(start, stop, step))
        starts.append(start), limits.append(start + (m - 1) * step + 1 if m else start)
        strides.append(step)
      else:
        m = len(range(start, stop, step))
        low = start + (m - 1) * step if m else 0
        starts.append(low), limits.append(start + 1 if m else 0), strides.append(-step)
        if m:
          flips.append(d)
      left.append(None)
    elif isinstance(e, int) and not keep_arrays:
      e, out_of_bounds = _clamp_static(e, n, d)
      if out_of_bounds and oob is not None:
        oob.append(True)
      starts.append(e), limits.append(e + 1), strides.append(1)
      left.append("squeeze")
    else:
      starts.append(0), limits.append(n), strides.append(1)
      left.append(e)
  x = lax.slice(x, starts, limits, strides)
  if flips:
    x = lax.rev(x, flips)
  return x, left


def getitem(x, idx):
  return _getitem(x, idx)[0]


def _in_bounds(e, n):
  """Whether integer index array `e` is within [-n, n)."""
  e = lax.convert_element_type(lax.convert_to_array(e), dtypes.int32)
  shape = _util.shape(e)
  return lax.bitwise_and(lax.ge(e, lax.full(shape, -n, dtypes.int32)),
                         lax.lt(e, lax.full(shape, n, dtypes.int32)))


def _getitem(x, idx, want_valid=False):
  """`x[idx]`, and with `want_valid` a bool array of the result's shape telling which
  elements came from in-bounds indices (None when every index was in bounds and static).
  Out-of-bounds integer indices are clamped into their axis, as in JAX."""
  x = lax.convert_to_array(x)
  entries = _normalize_entries(idx, _util.shape(x))
  x, entries = _insert_new_axes(x, entries)
  if any(type(e) is int and n and not -n <= e < n for e, n in zip(entries, _util.shape(x))):
    # As in JAX, static ints are read by a dynamic slice that clamps them, which
    # checkify's index checks see (in bounds, they are cheaper as a static slice).
    entries = [np.asarray(min(max(e, -2**31), 2**31 - 1), np.int32) if type(e) is int else e
               for e in entries]
  arrays = [e for e in entries if _is_array(e)]
  if not arrays or all(_util.ndim(a) == 0 for a in arrays):
    oob: list = []
    x, left = _static_slices(x, entries, keep_arrays=False, oob=oob)
    shape = _util.shape(x)
    valid = lax.full((), False, dtypes.bool_) if oob and want_valid else None
    if arrays:
      starts = [lax.full((), 0, dtypes.int32)] * len(shape)
      sizes = list(shape)
      for d, e in enumerate(left):
        if _is_array(e):
          starts[d] = _clamped_scalar(e, shape[d])
          sizes[d] = 1
          if want_valid:
            ok = _in_bounds(e, shape[d])
            valid = ok if valid is None else lax.bitwise_and(valid, ok)
      x = lax.dynamic_slice(x, starts, sizes, allow_negative_indices=False)
    squeeze = [d for d, e in enumerate(left) if e is not None]
    out = lax.squeeze(x, squeeze) if squeeze else x
    if valid is not None:
      valid = lax.broadcast_in_dim(valid, _util.shape(out), ())
    return out, valid
  x, left = _static_slices(x, entries, keep_arrays=True)
  shape = _util.shape(x)
  adv = [d for d, e in enumerate(left) if e is not None]
  index_arrays, valid = [], None
  for d in adv:
    e = left[d]
    if isinstance(e, int):
      e, out_of_bounds = _clamp_static(e, shape[d], d)
      if out_of_bounds and want_valid:
        valid = lax.full(() if valid is None else _util.shape(valid), False, dtypes.bool_)
      e = np.int32(e)
    elif want_valid:
      ok = _in_bounds(e, shape[d])
      valid = ok if valid is None else lax.bitwise_and(
          *(_util.broadcast_to(v, _util.broadcast_shapes("indexing", _util.shape(valid),
                                                         _util.shape(ok))) for v in (valid, ok)))
    index_arrays.append(_normalize_array_index(e, shape[d]))
  bshape = _util.broadcast_shapes("indexing", *(_util.shape(a) for a in index_arrays))
  index_arrays = [_util.broadcast_to(a, bshape) for a in index_arrays]
  indices = lax.concatenate([lax.reshape(a, bshape + (1,)) for a in index_arrays],
                            len(bshape))
  contiguous = adv == list(range(adv[0], adv[-1] + 1))
  rest = [d for d in range(len(shape)) if d not in adv]
  p = sum(1 for d in rest if d < adv[0]) if contiguous else 0
  nb = len(bshape)
  offset_dims = tuple(list(range(p)) + list(range(p + nb, nb + len(rest))))
  dnums = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(adv),
                                     start_index_map=tuple(adv))
  sizes = tuple(1 if d in adv else s for d, s in enumerate(shape))
  out = lax.gather(x, indices, dnums, sizes)
  if valid is not None:
    valid = lax.broadcast_in_dim(_util.broadcast_to(valid, bshape), _util.shape(out),
                                 tuple(range(p, p + nb)))
  return out, valid


def _clamped_scalar(e, n):
  return _normalize_array_index(e, n)


def fill_value_for(dtype, fill_value=None):
  """What an out-of-bounds read gives: `fill_value`, else lax's default (JAX's)."""
  return default_fill_value(dtype) if fill_value is None else fill_value


def getitem_filled(x, index, fill_value=None):
  """`x[index]`, where out-of-bounds array indices read `fill_value_for` (in-range negative
  ones count from the end): `x.at[index].get(mode="fill")` and `jnp.take`'s default mode."""
  out, valid = _getitem(x, index, want_valid=True)
  if valid is None:
    return out
  aval = get_aval(out)
  fill = lax.full(aval.shape, fill_value_for(aval.dtype, fill_value), aval.dtype)
  return lax.select(valid, out, fill)


# ---- functional updates

class _IndexUpdateHelper:
  """`x.at`: `x.at[idx]` gives the updater for those positions."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, idx):
    return _IndexUpdateRef(self.array, idx)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array = array
    self.index = index

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None, out_sharding=None, wrap_negative_indices=True):
    """`x[idx]`; out-of-bounds indices are clamped, or with mode='fill' read `fill_value`
    (NaN for floats, the extreme value for integers, True for bools).  The index hints
    (`indices_are_sorted`, `unique_indices`) change nothing here."""
    _no_out_sharding(out_sharding)
    filled = _mode(mode, "get") is lax.GatherScatterMode.FILL_OR_DROP
    index = _unwrapped(self.index, wrap_negative_indices, out_of_bounds=filled)
    if not filled:
      return getitem(self.array, index)
    return getitem_filled(self.array, index, fill_value)

  def set(self, values, **kw):
    return _update(lax.scatter, self.array, self.index, values, **kw)

  def add(self, values, **kw):
    return _update(lax.scatter_add, self.array, self.index, values, **kw)

  def subtract(self, values, **kw):
    from minijax.numpy.ufuncs import negative
    return self.add(negative(values), **kw)

  def multiply(self, values, **kw):
    return _update(lax.scatter_mul, self.array, self.index, values, **kw)

  mul = multiply

  def divide(self, values, **kw):
    """`x / d`, where `d` is 1 but at `idx`, which hold the product of their values (JAX's
    construction: an integer `x` gives floating point)."""
    from minijax.numpy.creation import ones_like
    from minijax.numpy.ufuncs import true_divide
    return true_divide(self.array, ones_like(self.array).at[self.index].multiply(values, **kw))

  def power(self, values, **kw):
    """`x ** e`, where `e` is 1 but at `idx`, which hold the product of their values."""
    from minijax.numpy.creation import ones_like
    from minijax.numpy.ufuncs import power
    return power(self.array, ones_like(self.array).at[self.index].multiply(values, **kw))

  def min(self, values, **kw):
    return _update(lax.scatter_min, self.array, self.index, values, **kw)

  def max(self, values, **kw):
    return _update(lax.scatter_max, self.array, self.index, values, **kw)

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """`func` applied to the elements at `idx` (as often as the index names them)."""
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
              mode=mode, wrap_negative_indices=wrap_negative_indices)
    return _update(_scatter_apply(func), self.array, self.index, None, **kw)


def _no_out_sharding(out_sharding):
  if out_sharding is not None:
    raise NotImplementedError("x.at[...]: out_sharding is not supported by minijax (it has "
                              "no explicit sharding in types); place the result with "
                              "jax.device_put or lax.with_sharding_constraint")


def _mode(mode, what: str):
  """`mode` (a name or a `GatherScatterMode`) as the mode in force: a read clamps out-of-
  bounds indices unless told to fill, an update drops them unless told to clip."""
  if mode is None:
    return lax.GatherScatterMode.CLIP if what == "get" else lax.GatherScatterMode.FILL_OR_DROP
  mode = lax.GatherScatterMode.from_any(mode)
  if mode is lax.GatherScatterMode.ONE_HOT:
    raise NotImplementedError("x.at[...]: mode='one_hot' is not supported; use 'clip', "
                              "'fill' (or 'drop') or 'promise_in_bounds'")
  return mode


def _unwrapped(idx, wrap_negative_indices: bool, out_of_bounds: bool):
  """`idx` with its negative integer indices made to read or write nothing when
  `wrap_negative_indices` is False: past every axis's end (`out_of_bounds`, where they are
  filled or dropped), else 0 (where out-of-bounds indices are clamped)."""
  if wrap_negative_indices:
    return idx
  past = 2**31 - 1 if out_of_bounds else 0

  def entry(e):
    if isinstance(e, _INTS) and not isinstance(e, (bool, np.bool_)):
      return past if e < 0 else e
    if isinstance(e, np.ndarray) and e.dtype.kind in "iu":
      return np.where(e < 0, past, e.astype(np.int64))
    if _is_array(e) and dtypes.is_integer(_util.dtype(e)):
      e = lax.convert_element_type(e, dtypes.int32)
      zeros = lax.full(_util.shape(e), 0, dtypes.int32)
      return lax.select(lax.lt(e, zeros), lax.full(_util.shape(e), past, dtypes.int32), e)
    return e
  return tuple(entry(e) for e in idx) if isinstance(idx, tuple) else entry(idx)


def _scatter_apply(func):
  """A scatter-like function applying `func` at the indexed elements."""
  def scatter(operand, indices, updates, dnums, **kw):
    return lax.scatter_apply(operand, indices, func, dnums, update_shape=updates.shape, **kw)
  return scatter


_BOX_COMBINE = {lax.scatter: None, lax.scatter_add: "add", lax.scatter_mul: "mul",
                lax.scatter_min: "min", lax.scatter_max: "max"}


def _box(x, idx):
  """For an index of static ints and unit-step slices only: the (starts, sizes, kept axes)
  of the box it selects, or "out of bounds" when an int is outside its axis; else None."""
  shape = _util.shape(x)
  if not isinstance(idx, tuple):
    idx = (idx,)
  if any(not (isinstance(e, _INTS) and not isinstance(e, (bool, np.bool_)) or
              isinstance(e, slice) and e.step in (None, 1) and
              all(p is None or isinstance(p, _INTS) for p in (e.start, e.stop)))
         for e in idx) or len(idx) > len(shape):
    return None
  idx = idx + (slice(None),) * (len(shape) - len(idx))
  starts, sizes, kept = [], [], []
  for d, (e, n) in enumerate(zip(idx, shape)):
    if isinstance(e, slice):
      start, stop, _ = e.indices(n)
      starts.append(start), sizes.append(max(stop - start, 0)), kept.append(d)
    else:
      if not -n <= e < n:
        return "out of bounds"
      starts.append(int(e) % n), sizes.append(1)
  return starts, sizes, kept


def _update_box(scatter_fn, x, box, values):
  """An update of a box: slice, combine, dynamic_update_slice (no scatter needed)."""
  starts, sizes, kept = box
  aval = get_aval(x)
  region_shape = tuple(sizes[d] for d in kept)
  values = _util.broadcast_to(_cast_values(values, aval), region_shape)
  values = lax.reshape(values, tuple(sizes))
  combine = _BOX_COMBINE[scatter_fn]
  if combine is not None:
    region = lax.slice(x, starts, [s + n for s, n in zip(starts, sizes)])
    if aval.dtype == dtypes.bool_ and combine in ("add", "mul"):
      combine = "bitwise_or" if combine == "add" else "bitwise_and"
    values = getattr(lax, combine)(region, values)
  return lax.dynamic_update_slice(x, values, [np.int32(s) for s in starts],
                                  allow_negative_indices=False)


def _cast_values(values, aval):
  if _util.is_arraylike(values) and not isinstance(values, dtypes.PYTHON_SCALARS) and (
      _util.dtype(values) == aval.dtype):
    return values
  return _util.to_array(values, aval.dtype, aval.weak_type)


def _update(scatter_fn, x, idx, values, *, indices_are_sorted=False, unique_indices=False,
            mode=None, out_sharding=None, wrap_negative_indices=True):
  """Scatters `values` at `x[idx]`; out-of-bounds array indices are dropped, or clamped
  with mode='clip' (or 'promise_in_bounds')."""
  _no_out_sharding(out_sharding)
  clip = _mode(mode, "update") is not lax.GatherScatterMode.FILL_OR_DROP
  x = lax.convert_to_array(x)
  apply = values is None
  if not apply:
    _util.check("at[].update", values)
  idx = _unwrapped(idx, wrap_negative_indices, out_of_bounds=not clip)
  box = None if apply else _box(x, idx)
  if box == "out of bounds":  # the general path below drops (or clips) the update
    box = None
  if box is not None:
    return _update_box(scatter_fn, x, box, values)
  shape, size = _util.shape(x), _util.size(x)
  positions, valid = _getitem(lax.reshape(lax.iota(dtypes.int32, size), shape), idx,
                              want_valid=True)
  pshape = _util.shape(positions)
  if valid is not None and not clip:
    # out-of-bounds array indices point past the end, where the scatter drops them
    positions = lax.select(valid, positions, lax.full(pshape, size, dtypes.int32))
  n = int(np.prod(pshape, dtype=np.int64))
  values = (lax.full((n,), 0, get_aval(x).dtype) if apply else
            lax.reshape(_util.broadcast_to(_cast_values(values, get_aval(x)), pshape), (n,)))
  dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
  flat = scatter_fn(lax.reshape(x, (size,)), lax.reshape(positions, (n, 1)), values, dnums,
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
  return lax.reshape(flat, shape)


# ---- value-dependent shapes (concrete inputs only)

_host = _util.concrete_or_error


def nonzero(a, *, size=None, fill_value=None):
  """The indices of the non-zero elements of `a`, one array per axis.  With `size` the
  result has that length, traced inputs included: cut, or filled out with `fill_value` (0,
  or one scalar per axis in a tuple), the indices promoted with it as `where` promotes
  (a NaN fill gives float indices, as in JAX)."""
  if _util.ndim(a) == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                     "jnp.atleast_1d(scalar).nonzero() instead.")
  index_dtype = dtypes.default_int_dtype()
  if size is None or not isinstance(a, Tracer):
    v = _host("nonzero", a)
    out = np.nonzero(v)
    count = len(out[0])
    if size is not None:
      out = tuple(np.concatenate([o[:size], np.zeros(max(size - len(o), 0), o.dtype)])
                  for o in out)
    out = tuple(lax.convert_to_array(o.astype(index_dtype)) for o in out)
  else:
    out, count = _traced_nonzero(a, int(size), index_dtype)
  if not size or fill_value is None:  # (nothing to fill: the indices stay integers)
    return out
  return _filled(out, fill_value, count, int(size))


def _traced_nonzero(a, size: int, index_dtype):
  """`nonzero(a, size=size)` of a traced `a` (padded with 0), and the number of non-zeros."""
  from minijax.numpy import creation, reductions
  from minijax.numpy.shape import ravel
  x = _util.asarray(a)
  dims = _util.shape(x)
  mask = ravel(lax.ne(x, lax.full(dims, 0, _util.dtype(x))))
  marks = lax.convert_element_type(mask, np.int32)
  rank = lax.sub(reductions.cumsum(marks), lax.full(_util.shape(marks), 1, np.int32))
  # each non-zero element's flat index, written at its rank among them (the rest dropped)
  where = lax.select(mask, rank, lax.full(_util.shape(rank), size, np.int32))
  flat = creation.zeros(size, np.int32).at[where].set(
      lax.iota(np.int32, _util.size(x)), mode="drop")
  count = reductions.sum(marks)
  valid = lax.lt(lax.iota(np.int32, size), lax.full((size,), count, np.int32))
  out = []
  for dim in reversed(dims):
    index = lax.rem(flat, lax.full((size,), max(dim, 1), np.int32))
    flat = lax.div(flat, lax.full((size,), max(dim, 1), np.int32))
    out.append(lax.select(valid, lax.convert_element_type(index, index_dtype),
                          lax.full((size,), 0, index_dtype)))
  return tuple(reversed(out)), count


def _filled(out: tuple, fill_value, count, size: int) -> tuple:
  """`out`'s entries past the first `count` replaced by `fill_value` (a scalar, or a tuple
  of one per axis), with `where`'s promotion."""
  from minijax.numpy.ufuncs import where
  fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * len(out)
  if len(fills) != len(out) or any(np.shape(f) != () for f in fills):
    raise ValueError(f"fill_value must be a scalar or a tuple of length {len(out)}; got "
                     f"{fill_value}")
  padding = lax.ge(lax.iota(np.int32, size), lax.full((size,), count, np.int32))
  return tuple(where(padding, f, o) for f, o in zip(fills, out))


def flatnonzero(a, *, size=None, fill_value=None):
  from minijax.numpy.shape import ravel
  return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """The indices of the non-zero elements of `a`, one row each (see `nonzero`)."""
  from minijax.numpy.shape import atleast_1d, stack
  nd = _util.ndim(a) if _is_array(a) or isinstance(a, Tracer) else np.ndim(a)
  columns = nonzero(atleast_1d(a), size=size, fill_value=fill_value)
  out = stack(columns, axis=1)
  return out[:, :0] if nd == 0 else out
