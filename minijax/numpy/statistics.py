"""NaN-aware reductions and order statistics: `nan_to_num`, `nansum`, `nanprod`,
`nanmax`, `nanmin`, `nanmean`, `nanvar`, `nanstd`, `nanargmax`, `nanargmin`,
`nancumsum`, `nancumprod`, and `quantile`/`percentile`/`median` with their NaN-ignoring
forms (by sorting).  A NaN-aware reduction is the plain one over the values with NaNs
replaced by the reduction's identity (or masked out of counts and means)."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.lax.sharding import takes_out_sharding
from minijax.core import dtypes
from minijax.numpy import _util
from minijax.numpy.reductions import complex_needs_complex_dtype


def _jnp():
  import minijax.numpy as jnp
  return jnp


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  jnp = _jnp()
  (a,) = _util.promote("nan_to_num", x)
  dt = _util.dtype(a)
  if not dtypes.is_inexact(dt):
    return a
  if np.issubdtype(dt, np.complexfloating):  # each part on its own, as numpy
    return lax.complex(*(nan_to_num(part, copy, nan, posinf, neginf)
                         for part in (lax.real(a), lax.imag(a))))
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


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """sum, NaNs counted as zeros."""
  return _jnp().sum(_nan_fill("nansum", a, 0), axis=axis, dtype=dtype, out=out,
                    keepdims=keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """prod, NaNs counted as ones."""
  return _jnp().prod(_nan_fill("nanprod", a, 1), axis=axis, dtype=dtype, out=out,
                     keepdims=keepdims, initial=initial, where=where)


def _nan_extremum(name, reduce, fill, a, axis, out, keepdims, initial, where):
  """max or min ignoring NaNs; NaN where a slice held nothing but NaNs (and no
  `initial`), as in JAX."""
  jnp = _jnp()
  (x,) = _util.promote(name, a)
  if not dtypes.is_inexact(_util.dtype(x)):
    return reduce(x, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
  nan = jnp.isnan(x)
  result = reduce(jnp.where(nan, fill, x), axis=axis, out=out, keepdims=keepdims,
                  initial=initial, where=where)
  if initial is not None:
    return result
  valid = jnp.logical_not(nan) if where is None else jnp.logical_and(jnp.logical_not(nan), where)
  return jnp.where(jnp.any(valid, axis=axis, keepdims=keepdims), result, np.nan)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  return _nan_extremum("nanmax", _jnp().max, -np.inf, a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  return _nan_extremum("nanmin", _jnp().min, np.inf, a, axis, out, keepdims, initial, where)


def _nan_valid(name, a, where):
  """The operand (inexact) and where it counts: not NaN, and `where`."""
  jnp = _jnp()
  (x,) = _util.promote_inexact(name, a)
  valid = jnp.logical_not(jnp.isnan(x))
  if where is not None:
    valid = jnp.logical_and(valid, where)
  return x, valid


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
  jnp = _jnp()
  _util.reject_out("nanmean", out)
  x, valid = _nan_valid("nanmean", a, where)
  if dtype is not None:
    x = x.astype(dtype)
  total = jnp.sum(jnp.where(valid, x, 0), axis=axis, keepdims=keepdims)
  out = total / jnp.sum(valid, axis=axis, keepdims=keepdims).astype(_util.dtype(x))
  return out if dtype is None else out.astype(dtype)  # (JAX's: in the dtype asked for)


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile_weights(weights, a, axis, method):
  """`weights` as an array of `a`'s shape: given in that shape, or (with `axis`) in the shape
  of the reduced axes."""
  w = _util.asarray(weights)
  if np.issubdtype(_util.dtype(w), np.complexfloating):
    raise ValueError("Weights cannot be complex types.")
  if method != "inverted_cdf":
    raise NotImplementedError(f"{method} doesn't support weights. Only method 'inverted_cdf' "
                              "supports weights.")
  shape = _util.shape(a)
  if _util.shape(w) == shape:
    return w
  if axis is None:
    raise ValueError("Weights shape must match 'a' shape when axis is None.")
  axes = _util.canonicalize_axes(axis, len(shape))
  if _util.shape(w) != tuple(shape[d] for d in axes):
    raise ValueError(f"Weights shape {_util.shape(w)} must match reduction axes "
                     f"{tuple(shape[d] for d in axes)}")
  return lax.broadcast_in_dim(w, shape, axes)


def _quantile(name, a, q, axis, out, overwrite_input, method, keepdims, weights,
              ignore_nan):
  """Quantiles by sorting, numpy's methods; with `ignore_nan`, of each slice's non-NaN
  values (NaN for a slice of NaNs only), else NaN for a slice with a NaN.  `inverted_cdf`
  takes the first value whose cumulative weight reaches q of the total (weights of 1 without
  `weights`; a negative or NaN weight makes the quantile NaN)."""
  jnp = _jnp()
  _util.reject_out(name, out)
  if method not in _QUANTILE_METHODS:
    raise ValueError(f"{name}: method must be one of {_QUANTILE_METHODS}, got {method!r}")
  if weights is not None:
    w = _quantile_weights(weights, a, axis, method)
    x, w = _util.promote_inexact(name, a, w)
  else:
    (x,) = _util.promote_inexact(name, a)
    w = jnp.ones_like(x) if method == "inverted_cdf" else None
  if np.issubdtype(_util.dtype(x), np.complexfloating):
    raise ValueError(f"{name} does not support complex input, as the operation is poorly "
                     "defined (complex values have no order)")
  if _util.ndim(q) > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {_util.shape(q)}")
  shape, nd = _util.shape(x), _util.ndim(x)
  axes = tuple(range(nd)) if axis is None else _util.canonicalize_axes(axis, nd)
  rest = [d for d in range(nd) if d not in axes]
  n = int(np.prod([shape[d] for d in axes]))
  merged = lambda v: jnp.reshape(jnp.transpose(v, (*rest, *axes)),  # noqa: E731
                                 (*(shape[d] for d in rest), n))
  x = merged(x)
  x = jnp.where(jnp.isnan(x), np.nan, x)  # (NaNs made positive: they sort last)
  if w is None:
    s = lax.sort(x, dimension=len(rest))
  else:  # the reduced axes, merged into the last
    s, w = lax.sort((x, merged(w)), dimension=len(rest), num_keys=1)
  dt = _util.dtype(x)
  q = lax.convert_element_type(_util.asarray(q), dt)
  q_shape = _util.shape(q)
  qs = jnp.reshape(q, (-1,) + (1,) * (len(rest) + 1))
  nans = jnp.isnan(s)
  if ignore_nan:
    count = jnp.sum(jnp.logical_not(nans), axis=-1, keepdims=True)
  else:
    count = jnp.full((1,) * (len(rest) + 1), n)
  sb = jnp.broadcast_to(s, (_util.shape(qs)[0],) + _util.shape(s))
  if method == "inverted_cdf":
    bad = (w < 0) | jnp.isnan(w)
    cumulative = jnp.cumsum(jnp.where(bad | nans, 0, w), axis=-1)
    reached = jnp.sum(cumulative < qs * cumulative[..., -1:], axis=-1, keepdims=True)
    index = jnp.clip(reached, 0, jnp.maximum(count - 1, 0))
    result = jnp.take_along_axis(sb, index.astype(jnp.int32), axis=-1)
    result = jnp.where(jnp.any(bad, axis=-1, keepdims=True), np.nan, result)
  else:
    result = _interpolated(sb, qs, count, n, method, dt)
  if ignore_nan:
    result = jnp.where(count == 0, np.nan, result)
  else:
    result = jnp.where(jnp.any(nans, axis=-1, keepdims=True), np.nan, result)
  result = jnp.reshape(result, q_shape + tuple(shape[d] for d in rest))
  if keepdims:
    kept = tuple(1 if d in axes else shape[d] for d in range(nd))
    result = jnp.reshape(result, q_shape + kept)
  return result


def _interpolated(sb, qs, count, n, method, dt):
  """The quantiles `qs` of the sorted values `sb` at fractional positions q (count - 1)."""
  jnp = _jnp()
  last = (count - 1).astype(dt)
  pos = jnp.clip(qs * last, 0, last)  # (a q outside [0, 1] gives an end value, as JAX's)
  lo = lax.floor(pos)
  frac = pos - lo
  lo_i = jnp.clip(lo.astype(jnp.int32), 0, n - 1)
  hi_i = jnp.clip(jnp.minimum(lo_i + 1, count - 1), 0, n - 1)
  lo_v = jnp.take_along_axis(sb, jnp.broadcast_to(lo_i, _util.shape(sb)[:-1] + (1,)), axis=-1)
  hi_v = jnp.take_along_axis(sb, jnp.broadcast_to(hi_i, _util.shape(sb)[:-1] + (1,)), axis=-1)
  if method == "linear":
    return lo_v + (hi_v - lo_v) * frac
  if method == "lower":
    return lo_v
  if method == "higher":
    return jnp.where(frac > 0, hi_v, lo_v)
  if method == "midpoint":
    return jnp.where(frac > 0, (lo_v + hi_v) / 2, lo_v)
  round_up = (frac > 0.5) | ((frac == 0.5) & (lo_i % 2 == 1))  # nearest: ties to even, as numpy
  return jnp.where(round_up, hi_v, lo_v)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
  return _quantile("quantile", a, q, axis, out, overwrite_input, method, keepdims, weights,
                   False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
  return _quantile("nanquantile", a, q, axis, out, overwrite_input, method, keepdims,
                   weights, True)


@takes_out_sharding
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
  return quantile(a, _jnp().true_divide(q, 100), axis, out, overwrite_input, method,
                  keepdims, weights=weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
  return nanquantile(a, _jnp().true_divide(q, 100), axis, out, overwrite_input, method,
                     keepdims, weights=weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The midpoint of the middle two when they are two (JAX's rounding: (a + b) / 2)."""
  return quantile(a, 0.5, axis, out, overwrite_input, method="midpoint", keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  return nanquantile(a, 0.5, axis, out, overwrite_input, method="midpoint",
                     keepdims=keepdims)


def _nan_arg(name, fn, a, axis, fill, out, keepdims):
  """argmax or argmin ignoring NaNs; -1 for a slice of nothing but NaNs, as in JAX."""
  jnp = _jnp()
  _util.reject_out(name, out)
  (x,) = _util.promote(name, a)
  if not dtypes.is_inexact(_util.dtype(x)):
    return fn(x, axis=axis, keepdims=keepdims)
  nan = jnp.isnan(x)
  result = fn(jnp.where(nan, fill, x), axis=axis, keepdims=keepdims)
  return jnp.where(jnp.all(nan, axis=axis, keepdims=bool(keepdims)), -1, result)


def nanargmax(a, axis=None, out=None, keepdims=None):
  return _nan_arg("nanargmax", _jnp().argmax, a, axis, -np.inf, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
  return _nan_arg("nanargmin", _jnp().argmin, a, axis, np.inf, out, keepdims)


def nancumsum(a, axis=None, dtype=None, out=None):
  return _jnp().cumsum(_nan_fill("nancumsum", a, 0), axis=axis, dtype=dtype, out=out)


def nancumprod(a, axis=None, dtype=None, out=None):
  return _jnp().cumprod(_nan_fill("nancumprod", a, 1), axis=axis, dtype=dtype, out=out)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  """The variance ignoring NaNs; `mean`, when given, is used instead of the NaN-ignoring
  mean (with the reduced axes kept, as `nanmean(..., keepdims=True)` gives it)."""
  jnp = _jnp()
  _util.reject_out("nanvar", out)
  x, valid = _nan_valid("nanvar", a, where)
  if dtype is not None:
    complex_needs_complex_dtype("nanvar", dtype, x)
    x = x.astype(dtype)
  count = jnp.sum(valid, axis=axis, keepdims=True).astype(_util.dtype(x))
  mean_ = (jnp.sum(jnp.where(valid, x, 0), axis=axis, keepdims=True) / count if mean is None
           else jnp.asarray(mean))
  sq = jnp.where(valid, jnp.abs(x - mean_) ** 2, 0)  # (real, for complex x too)
  out = jnp.sum(sq, axis=axis, keepdims=True) / (count - ddof).real
  out = out if keepdims else jnp.squeeze(out, axis=axis)
  return out if dtype is None else out.astype(dtype)  # (JAX's: in the dtype asked for)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  _util.reject_out("nanstd", out)
  if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
    raise ValueError(f"dtype argument to jnp.nanstd must be inexact; got {np.dtype(dtype)}")
  return _jnp().sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


