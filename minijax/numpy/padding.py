"""`pad` with numpy's modes, one axis at a time as numpy pads.

Each axis is padded on the array the previous axes produced (so corners take the later
axis's values, and statistics see the earlier axes' padding), with static slices and
concatenations: `edge` repeats the border, `wrap` tiles the axis, `reflect`/`symmetric`
mirror it in chunks of at most one period (so `reflect_type='odd'` continues from each new
border, as numpy's), the statistics modes broadcast a reduction over `stat_length`
elements, `linear_ramp` is a ramp from `end_values` to the border.  A callable `mode` gets
each 1-d lane with the zero-padded border and returns the filled lane (numpy's fills it in
place; JAX's, like this one, uses what it returns).
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import Tracer
from minijax.numpy import _util

_KEYWORDS = {
    "constant": ("constant_values",), "empty": (), "edge": (), "wrap": (),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",)}


def pad(array, pad_width, mode="constant", **kwargs):
  """numpy.pad: every mode of numpy's (and a callable), widths static."""
  from minijax.numpy.shape import _arr
  x = _arr("pad", array)
  nd = _util.ndim(x)
  widths = _pairs("pad_width", pad_width, nd, integral=True)
  if any(lo < 0 or hi < 0 for lo, hi in widths):
    raise ValueError(f"pad: pad_width must not be negative, got {pad_width!r}")
  if callable(mode):
    return _pad_with_function(x, widths, mode, kwargs)
  if mode not in _KEYWORDS:
    raise NotImplementedError(f"Unimplemented padding mode {mode!r} for np.pad. (Modes: "
                              f"{', '.join(_KEYWORDS)}, or a function.)")
  unsupported = set(kwargs) - set(_KEYWORDS[mode])
  if unsupported:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
  reflect_type = kwargs.get("reflect_type", "even")
  if reflect_type not in ("even", "odd"):
    raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
  for axis, (lo, hi) in enumerate(widths):
    if (lo or hi) and _util.shape(x)[axis] == 0 and mode not in ("constant", "empty"):
      raise ValueError(f"Cannot apply '{mode}' padding to empty axis ({axis}; only "
                       "'constant' and 'empty' extend an empty axis)")
  stat_lengths = _pairs("stat_length", kwargs.get("stat_length"), nd, integral=True)
  if any(length is not None and length <= 0 for pair in stat_lengths for length in pair):
    raise ValueError("stat_length of 0 yields no value for padding")
  values = _util.asarray(kwargs.get("constant_values", 0))  # (a list too, as in JAX)
  return _pad(x, values, tuple(widths), mode, reflect_type == "odd",
              tuple(_pairs("end_values", kwargs.get("end_values", 0), nd)), tuple(stat_lengths))


@_util.compiled_when_eager(dynamic=2)
def _pad(x, constant_values, widths, mode, odd, end_values, stat_lengths):
  if mode == "constant":
    return _pad_constant(x, widths, constant_values)
  if mode == "empty":  # (numpy leaves the border undefined; it is zero here)
    return _pad_constant(x, widths, 0)
  for axis, (lo, hi) in enumerate(widths):
    if lo == hi == 0:
      continue
    if mode == "edge":
      x = _concat(_repeat(_take(x, axis, 0, 1), axis, lo), x,
                  _repeat(_take(x, axis, -1, None), axis, hi), axis=axis)
    elif mode == "wrap":
      x = _pad_wrap(x, axis, lo, hi)
    elif mode in ("reflect", "symmetric"):
      x = _pad_reflect(x, axis, lo, hi, mode == "symmetric", odd)
    elif mode == "linear_ramp":
      x = _pad_linear_ramp(x, axis, lo, hi, end_values[axis])
    else:
      x = _pad_statistic(x, axis, lo, hi, mode, stat_lengths[axis])
  return x


def _pairs(name, value, nd: int, integral: bool = False) -> list[tuple]:
  """`value` as one (before, after) pair per axis, from a scalar, (v,), (before, after),
  or one pair per axis (numpy's shapes)."""
  if value is None:
    return [(None, None)] * nd
  if isinstance(value, Tracer):
    raise TypeError(f"pad: {name} must be static (known while tracing), got a traced value")
  values = np.asarray(value)
  if integral:
    if values.size and not np.issubdtype(values.dtype, np.integer):
      if not np.all(values == np.round(values)) or values.dtype == np.bool_:
        raise TypeError(f"`{name}` must be of integral type.")
    values = values.astype(np.int64)
  if values.ndim == 0 or values.shape in ((1,), (1, 1)):
    v = values.reshape(-1)[0].item()
    return [(v, v)] * nd
  if values.shape in ((2,), (1, 2)):
    return [tuple(values.reshape(-1).tolist())] * nd
  if values.shape == (nd, 2):
    return [tuple(row) for row in values.tolist()]
  if values.shape == (nd, 1):
    return [(row[0], row[0]) for row in values.tolist()]
  raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {values.shape}. "
                   f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _pad_constant(x, widths, constant_values):
  from minijax.numpy.shape import squeeze
  values = lax.convert_element_type(_util.asarray(constant_values), _util.dtype(x))
  nd, shape = _util.ndim(x), _util.shape(values)
  if len(shape) > 2 or len(shape) >= 1 and shape[-1] not in (1, 2):
    raise ValueError(f"jnp.pad: constant_values has unsupported shape {shape}. If the shape "
                     "is 1D or 2D, the last dimension must be of size 1 or 2.")
  if all(s == 1 for s in shape):  # one value for every side
    values = squeeze(values)
  if not _util.shape(values):
    return lax.pad(x, values, [(lo, hi, 0) for lo, hi in widths])
  from minijax.numpy.shape import broadcast_to
  from minijax.numpy.indexing import getitem
  values = broadcast_to(values, (nd, 2))
  for axis, (lo, hi) in enumerate(widths):
    for side, width in ((0, (lo, 0, 0)), (1, (0, hi, 0))):
      config = [(0, 0, 0)] * nd
      config[axis] = width
      x = lax.pad(x, getitem(values, (axis, side)), config)
  return x


def _take(x, axis: int, start, stop, step=None):
  index = [slice(None)] * _util.ndim(x)
  index[axis] = slice(start, stop, step)
  from minijax.numpy.indexing import getitem
  return getitem(x, tuple(index))


def _repeat(edge, axis: int, times: int):
  shape = list(_util.shape(edge))
  shape[axis] = times
  return lax.broadcast_in_dim(edge, tuple(shape), tuple(range(len(shape))))


def _concat(*parts, axis: int):
  from minijax.numpy.shape import concatenate
  parts = [p for p in parts if _util.shape(p)[axis]]
  return parts[0] if len(parts) == 1 else concatenate(parts, axis=axis)


def _pad_wrap(x, axis: int, lo: int, hi: int):
  n = _util.shape(x)[axis]
  tiles = -(-(lo + hi) // n) + 1
  from minijax.numpy.shape import concatenate
  tiled = concatenate([x] * (tiles + 1), axis=axis) if tiles else x
  start = (n - lo % n) % n
  return _take(tiled, axis, start, start + n + lo + hi)


def _pad_reflect(x, axis: int, lo: int, hi: int, symmetric: bool, odd: bool):
  n = _util.shape(x)[axis]
  if n == 1 and not symmetric:  # (nothing to mirror but the border itself)
    return _concat(_repeat(x, axis, lo), x, _repeat(x, axis, hi), axis=axis)
  period = n if symmetric else n - 1
  skip = 0 if symmetric else 1
  while lo:
    k = min(lo, period)
    chunk = _take(x, axis, skip + k - 1, skip - 1 if skip else None, -1)
    if odd:
      chunk = _odd(chunk, _take(x, axis, 0, 1))
    x, lo = _concat(chunk, x, axis=axis), lo - k
  while hi:
    k = min(hi, period)
    m = _util.shape(x)[axis]
    stop = m - 1 - skip - k
    chunk = _take(x, axis, m - 1 - skip, stop if stop >= 0 else None, -1)
    if odd:
      chunk = _odd(chunk, _take(x, axis, m - 1, m))
    x, hi = _concat(x, chunk, axis=axis), hi - k
  return x


def _odd(chunk, edge):
  two = lax.full((), 2, _util.dtype(chunk))
  return lax.sub(lax.mul(two, edge), chunk)


def _pad_linear_ramp(x, axis: int, lo: int, hi: int, ends):
  from minijax.numpy.creation import linspace
  n, dtype = _util.shape(x)[axis], _util.dtype(x)
  parts = []
  for width, end, edge in ((lo, ends[0], _take(x, axis, 0, 1)),
                           (hi, ends[1], _take(x, axis, n - 1, n))):
    parts.append(linspace(end, lax.squeeze(edge, (axis,)), width, endpoint=False,
                          dtype=dtype, axis=axis))
  return _concat(parts[0], x, _take(parts[1], axis, None, None, -1), axis=axis)


def _pad_statistic(x, axis: int, lo: int, hi: int, mode: str, lengths):
  from minijax.numpy import reductions, statistics
  from minijax.numpy.ufuncs import round as _round
  n, dtype = _util.shape(x)[axis], _util.dtype(x)
  parts = []
  for width, length, first in ((lo, lengths[0], True), (hi, lengths[1], False)):
    length = n if length is None else min(length, n)
    region = _take(x, axis, 0, length) if first else _take(x, axis, n - length, n)
    if mode in ("maximum", "minimum"):
      stat = (reductions.max if mode == "maximum" else reductions.min)(
          region, axis=axis, keepdims=True)
    else:
      stat = (reductions.mean if mode == "mean" else statistics.median)(
          region, axis=axis, keepdims=True)
      if not dtypes.is_inexact(dtype):
        stat = _round(stat)
      stat = lax.convert_element_type(stat, dtype)
    parts.append(_repeat(stat, axis, width))
  return _concat(parts[0], x, parts[1], axis=axis)


def _pad_with_function(x, widths, func, kwargs):
  from minijax.numpy.extras import apply_along_axis
  x = _pad_constant(x, widths, 0)
  for axis, width in enumerate(widths):
    x = apply_along_axis(func, axis, x, width, axis, kwargs)
  return x
