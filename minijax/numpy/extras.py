"""Less central numpy functions built from the rest of minijax.numpy: diff, nan-aware
reductions, median / quantile (by sorting), append, searchsorted, cross, kron, isin,
indices, logspace, unravel_index.

Functions whose result shape depends on values (`triu_indices` and friends) take static
arguments only.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy import _util


def _jnp():
  import minijax.numpy as jnp
  return jnp


def diff(a, n=1, axis=-1, prepend=None, append=None):
  jnp = _jnp()
  x = _util.asarray(a)
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  parts = []
  for extra in (prepend, x, append):
    if extra is None:
      continue
    e = _util.asarray(extra)
    if _util.ndim(e) == 0:
      shape = list(_util.shape(x))
      shape[ax] = 1
      e = _util.broadcast_to(e, tuple(shape))
    parts.append(e)
  x = jnp.concatenate(parts, axis=ax) if len(parts) > 1 else x
  for _ in range(n):
    size = _util.shape(x)[ax]
    hi = lax.slice_in_dim(x, 1, size, 1, ax)
    lo = lax.slice_in_dim(x, 0, max(size - 1, 0), 1, ax)
    x = jnp.not_equal(hi, lo) if _util.dtype(x) == dtypes.bool_ else jnp.subtract(hi, lo)
  return x


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  jnp = _jnp()
  (a,) = _util.promote("nan_to_num", x)
  dt = _util.dtype(a)
  if not dtypes.is_inexact(dt):
    return a
  big = float(np.finfo(dt).max) if dt != dtypes.bfloat16 else float(
      np.finfo(dtypes.bfloat16).max)
  out = jnp.where(jnp.isnan(a), nan, a)
  out = jnp.where(out == np.inf, big if posinf is None else posinf, out)
  out = jnp.where(out == -np.inf, -big if neginf is None else neginf, out)
  return out.astype(dt)


def _nan_fill(name, a, fill):
  jnp = _jnp()
  (x,) = _util.promote(name, a)
  if not dtypes.is_inexact(_util.dtype(x)):
    return x
  return jnp.where(jnp.isnan(x), fill, x)


def nansum(a, axis=None, dtype=None, keepdims=False):
  return _jnp().sum(_nan_fill("nansum", a, 0), axis=axis, dtype=dtype, keepdims=keepdims)


def nanmax(a, axis=None, keepdims=False):
  return _jnp().max(_nan_fill("nanmax", a, -np.inf), axis=axis, keepdims=keepdims)


def nanmin(a, axis=None, keepdims=False):
  return _jnp().min(_nan_fill("nanmin", a, np.inf), axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, keepdims=False):
  jnp = _jnp()
  (x,) = _util.promote_inexact("nanmean", a)
  valid = jnp.logical_not(jnp.isnan(x))
  total = jnp.sum(jnp.where(valid, x, 0), axis=axis, keepdims=keepdims)
  return total / jnp.sum(valid, axis=axis, keepdims=keepdims).astype(_util.dtype(x))


def quantile(a, q, axis=None, keepdims=False, method="linear"):
  """Linear-interpolation quantiles (numpy's default method), by sorting."""
  jnp = _jnp()
  if method != "linear":
    raise NotImplementedError(f"quantile: only method='linear' is supported, got {method!r}")
  (x,) = _util.promote_inexact("quantile", a)
  if axis is None:
    x, ax = jnp.ravel(x), 0
  else:
    (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  n = _util.shape(x)[ax]
  s = jnp.moveaxis(jnp.sort(x, axis=ax), ax, -1)
  q = lax.convert_element_type(_util.asarray(q), _util.dtype(x))
  pos = q * (n - 1)
  lo = lax.floor(pos)
  frac = pos - lo
  lo_i = lo.astype(jnp.int32)
  hi_i = jnp.minimum(lo_i + 1, n - 1)
  lo_v = jnp.take(s, lo_i, axis=-1)
  hi_v = jnp.take(s, hi_i, axis=-1)
  out = lo_v + (hi_v - lo_v) * frac
  if _util.ndim(q):
    out = jnp.moveaxis(out, -1, 0)
  if keepdims and axis is not None:
    out = jnp.expand_dims(out, ax + (1 if _util.ndim(q) else 0))
  return out


def percentile(a, q, axis=None, keepdims=False, method="linear"):
  return quantile(a, _jnp().true_divide(q, 100), axis, keepdims, method)


def median(a, axis=None, keepdims=False):
  return quantile(a, 0.5, axis, keepdims)


def append(arr, values, axis=None):
  jnp = _jnp()
  if axis is None:
    return jnp.concatenate([jnp.ravel(arr), jnp.ravel(values)])
  return jnp.concatenate([arr, values], axis=axis)


def searchsorted(a, v, side="left"):
  """Insertion points of `v` into the sorted 1-d `a` (a comparison count per element)."""
  jnp = _jnp()
  x, y = _util.promote("searchsorted", a, v)
  if _util.ndim(x) != 1:
    raise ValueError("searchsorted: a must be 1-dimensional")
  cmp = jnp.less if side == "left" else jnp.less_equal
  yy = jnp.expand_dims(y, -1)
  return jnp.sum(cmp(x, yy), axis=-1).astype(dtypes.default_int_dtype())


def cross(a, b, axis=-1):
  jnp = _jnp()
  x, y = _util.promote_and_broadcast("cross", a, b)
  x, y = jnp.moveaxis(x, axis, -1), jnp.moveaxis(y, axis, -1)
  if _util.shape(x)[-1] != 3:
    raise ValueError("cross: only 3-vectors are supported")
  x0, x1, x2 = (x[..., i] for i in range(3))
  y0, y1, y2 = (y[..., i] for i in range(3))
  return jnp.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)


def kron(a, b):
  jnp = _jnp()
  x, y = _util.promote("kron", a, b)
  nd = max(_util.ndim(x), _util.ndim(y))
  x = lax.reshape(x, (1,) * (nd - _util.ndim(x)) + _util.shape(x))
  y = lax.reshape(y, (1,) * (nd - _util.ndim(y)) + _util.shape(y))
  sx, sy = _util.shape(x), _util.shape(y)
  xe = lax.reshape(x, tuple(d for s in sx for d in (s, 1)))
  ye = lax.reshape(y, tuple(d for s in sy for d in (1, s)))
  return jnp.reshape(jnp.multiply(xe, ye), tuple(p * q for p, q in zip(sx, sy)))


def astype(x, dtype, copy=False):
  return lax.convert_element_type(_util.asarray(x), dtypes.canonicalize_dtype(dtype))


def isin(element, test_elements, invert=False):
  jnp = _jnp()
  e = _util.asarray(element)
  t = jnp.ravel(_util.asarray(test_elements))
  out = jnp.any(jnp.expand_dims(e, -1) == t, axis=-1)
  return jnp.logical_not(out) if invert else out


def indices(dimensions, dtype=None):
  dt = dtypes.canonicalize_dtype(dtype or dtypes.default_int_dtype())
  dims = tuple(int(d) for d in dimensions)
  parts = [lax.broadcasted_iota(dt, dims, i) for i in range(len(dims))]
  return _jnp().stack(parts) if parts else lax.full((0,), 0, dt)


def triu_indices(n, k=0, m=None):
  return tuple(lax.convert_to_array(i.astype(dtypes.default_int_dtype()))
               for i in np.triu_indices(n, k, m))


def tril_indices(n, k=0, m=None):
  return tuple(lax.convert_to_array(i.astype(dtypes.default_int_dtype()))
               for i in np.tril_indices(n, k, m))


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None):
  jnp = _jnp()
  return jnp.power(base, jnp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def unravel_index(indices_, shape):
  jnp = _jnp()
  idx = _util.asarray(indices_)
  out = []
  for s in reversed(tuple(shape)):
    out.append(jnp.remainder(idx, s))
    idx = jnp.floor_divide(idx, s)
  return tuple(reversed(out))
