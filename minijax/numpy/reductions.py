"""Reductions with numpy's `axis` (int, tuple, negative, None) and `keepdims`: sum, prod,
max, min, mean, var, std, all, any, argmax, argmin, cumsum, cumprod, count_nonzero.

Sums and products of bools and small integers accumulate in the default integer type, as
numpy does; means of integers are floats.  max / min of an empty axis raise ValueError, as
in numpy (there is no identity to return).
"""
from __future__ import annotations

import builtins

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy import _util


def _prep(name, a, axis, out=None, where=None, fill=None):
  """The operand as an array and the axes; `where=False` positions become `fill`."""
  _util.reject_out(name, out)
  _util.check(name, a)
  (x,) = _util.promote(name, a)
  x = _strong(x)
  axes = _util.canonicalize_axes(axis, _util.ndim(x))
  if where is not None:
    if fill is None:
      raise ValueError(f"{name}: where= needs initial= (the reduction has no identity)")
    from minijax.numpy.ufuncs import where as _where
    fill = lax.convert_element_type(_util.asarray(fill), _util.dtype(x))  # (x's dtype wins)
    x = _where(_util.broadcast_to(where, _util.shape(x)), x, fill)
  return x, axes


def _strong(x):
  """Reductions return strongly typed values, as JAX's do: `sum(1.0)` is a float32."""
  return lax.convert_element_type(x, _util.dtype(x)) if _util.weak_type(x) else x


def _keep(out, x, axes, keepdims):
  if not keepdims:
    return out
  shape = tuple(1 if i in axes else s for i, s in enumerate(_util.shape(x)))
  return lax.reshape(out, shape)


def _sum_dtype(dt, promote_integers: bool = True):
  """What a sum of `dt` accumulates in: booleans as the default integer; narrow integers
  widened to it (unsigned ones to the default unsigned integer) unless `promote_integers` is False, as in JAX."""
  if dt == dtypes.bool_:
    return dtypes.default_int_dtype()
  if not promote_integers:
    return dt
  if np.issubdtype(dt, np.signedinteger) and dt.itemsize < dtypes.default_int_dtype().itemsize:
    return dtypes.default_int_dtype()
  if np.issubdtype(dt, np.unsignedinteger) and dt.itemsize < dtypes.default_int_dtype().itemsize:
    return dtypes.canonicalize_dtype(np.uint64)
  return dt


def _cast(x, dtype):
  return lax.convert_element_type(x, dtypes.canonicalize_dtype(dtype)) if (
      dtype is not None and _util.dtype(x) != np.dtype(dtype)) else x


_HALF = (dtypes.bfloat16, dtypes.float16)


def _accumulate(reduce_fn, x, axes):
  """Half-precision floats accumulate in float32 and round once at the end, as JAX does."""
  dt = _util.dtype(x)
  if dt in _HALF:
    return lax.convert_element_type(reduce_fn(lax.convert_element_type(x, dtypes.float32),
                                              axes), dt)
  return reduce_fn(x, axes)


@_util.compiled_when_eager(dynamic=1)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
  x, axes = _prep("sum", a, axis, out, where, 0)
  x = _cast(x, dtype if dtype is not None else _sum_dtype(_util.dtype(x), promote_integers))
  out = _accumulate(lax.reduce_sum, x, axes)
  if initial is not None:
    out = lax.add(out, initial)
  return _keep(out, x, axes, keepdims)


@_util.compiled_when_eager(dynamic=1)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  x, axes = _prep("prod", a, axis, out, where, 1)
  x = _cast(x, dtype if dtype is not None else _sum_dtype(_util.dtype(x), promote_integers))
  out = _accumulate(lax.reduce_prod, x, axes)
  if initial is not None:
    out = lax.mul(out, initial)
  return _keep(out, x, axes, keepdims)


def _check_nonempty(name, x, axes):
  if builtins.any(_util.shape(x)[a] == 0 for a in axes):
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")


def _extremum(name, a, axis, out, keepdims, initial, where):
  from minijax.numpy import ufuncs
  x, axes = _prep(name, a, axis, out, where, initial)
  if initial is None:
    _check_nonempty(name, x, axes)
  out = (lax.reduce_max if name == "max" else lax.reduce_min)(x, axes)
  if initial is not None:  # (in the array's dtype, as JAX: max(ints, initial=1.0) is int)
    initial = lax.convert_element_type(np.asarray(initial), _util.dtype(x))
    out = (ufuncs.maximum if name == "max" else ufuncs.minimum)(out, initial)
  return _keep(out, x, axes, keepdims)


@_util.compiled_when_eager(dynamic=1)
def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  return _extremum("max", a, axis, out, keepdims, initial, where)


@_util.compiled_when_eager(dynamic=1)
def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  return _extremum("min", a, axis, out, keepdims, initial, where)


amax, amin = max, min


def _to_bool(x):
  if _util.dtype(x) == dtypes.bool_:
    return x
  return lax.ne(x, lax.full(_util.shape(x), 0, _util.dtype(x)))


@_util.compiled_when_eager(dynamic=1)
def all(a, axis=None, out=None, keepdims=False, where=None):
  x, axes = _prep("all", a, axis, out, where, True)
  x = _to_bool(x)
  return _keep(lax.reduce_and(x, axes), x, axes, keepdims)


@_util.compiled_when_eager(dynamic=1)
def any(a, axis=None, out=None, keepdims=False, where=None):
  x, axes = _prep("any", a, axis, out, where, False)
  x = _to_bool(x)
  return _keep(lax.reduce_or(x, axes), x, axes, keepdims)


@_util.compiled_when_eager(dynamic=1)
def count_nonzero(a, axis=None, keepdims=False):
  x, axes = _prep("count_nonzero", a, axis)
  x = lax.convert_element_type(_to_bool(x), dtypes.default_int_dtype())
  return _keep(lax.reduce_sum(x, axes), x, axes, keepdims)


def _count(x, axes) -> int:
  shape = _util.shape(x)
  return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def _mean_dtype(dt, dtype):
  if dtype is not None:
    return dtypes.canonicalize_dtype(dtype)
  return dtypes.to_inexact_dtype(dt)


@_util.compiled_when_eager(dynamic=1)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
  x, axes = _prep("mean", a, axis, out, where, 0)
  dt = _mean_dtype(_util.dtype(x), dtype)
  computed = dtypes.float32 if dt in _HALF else dt  # (half floats: in float32, as JAX)
  x = _cast(_cast(x, dt), computed)
  total = lax.reduce_sum(x, axes)
  if where is not None:
    count = sum(_util.broadcast_to(where, _util.shape(x)), axes, computed)
    return _keep(_cast(lax.div(total, count), dt), x, axes, keepdims)
  n = _count(x, axes)
  result = lax.div(total, lax.full(_util.shape(total), n if n else np.nan, computed))
  return _keep(_cast(result, dt), x, axes, keepdims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
  """The mean squared deviation over `axis` (from `mean` when given, else the mean), divided
  by the count less `correction` (numpy's `ddof`, under the array API's name)."""
  ddof = _correction("var", ddof, correction)
  _inexact_dtype("var", dtype, a)
  if mean is None:
    out = _var(a, ddof, axis, dtype, out, keepdims, where)
  else:
    out = _var_about(a, mean, axis, dtype, out, ddof, keepdims, where)
  if dtype is not None and np.issubdtype(np.dtype(dtype), np.complexfloating):
    out = lax.convert_element_type(out, _mean_dtype(_util.dtype(out), dtype))  # (JAX's)
  return out


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
  _inexact_dtype("std", dtype, a)
  return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                      correction=correction))


def _inexact_dtype(name, dtype, a=None) -> None:
  """JAX's checks of a variance's `dtype=`: inexact, and complex for complex `a`."""
  if dtype is None:
    return
  if not dtypes.is_inexact(np.dtype(dtype)):
    raise ValueError(f"dtype argument to jnp.{name} must be inexact; got {np.dtype(dtype)}")
  if a is not None:
    complex_needs_complex_dtype(name, dtype, a)


def complex_needs_complex_dtype(name, dtype, a) -> None:
  """A variance of complex `a` in a real `dtype` would drop the imaginary parts: refused."""
  if (dtype is not None and np.issubdtype(_util.dtype(a), np.complexfloating)
      and not np.issubdtype(np.dtype(dtype), np.complexfloating)):
    raise ValueError(f"jax.numpy.{name} does not yet support real dtype parameters when "
                     "computing the variance of an array of complex values; pass a complex "
                     "dtype, or none")


def _correction(name, ddof, correction):
  if correction is None:
    return ddof
  if ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  return correction


def _var_about(a, center, axis, dtype, out, ddof, keepdims, where):
  """`var` about a given `center` (kept dimensions, or broadcastable to them)."""
  x, axes = _prep("var", a, axis, out)
  dt = _mean_dtype(_util.dtype(x), dtype)
  x = _cast(x, dt)
  kept = tuple(1 if d in axes else n for d, n in enumerate(_util.shape(x)))
  center = _util.asarray(center)
  if _util.shape(center) != kept:
    center = lax.reshape(_util.broadcast_to(center, tuple(
        n for d, n in enumerate(_util.shape(x)) if d not in axes)), kept)
  centered = lax.sub(x, _util.broadcast_to(_cast(center, dt), _util.shape(x)))
  return _mean_square(centered, x, axes, dt, ddof, keepdims, where)


@_util.compiled_when_eager(dynamic=2)
def _var(a, ddof, axis=None, dtype=None, out=None, keepdims=False, where=None):
  """The mean squared deviation from the mean over `axis` (only where `where` holds),
  divided by the count less `ddof`; NaN where that is not positive.  Called eagerly,
  `ddof` is an argument of the compiled call, as in JAX's (so the division stays one:
  XLA would multiply by the reciprocal of a constant count)."""
  x, axes = _prep("var", a, axis, out)
  dt = _mean_dtype(_util.dtype(x), dtype)
  x = _cast(x, dt)
  centered = lax.sub(x, _util.broadcast_to(mean(x, axes, keepdims=True, where=where),
                                           _util.shape(x)))
  return _mean_square(centered, x, axes, dt, ddof, keepdims, where)


def _mean_square(centered, x, axes, dt, ddof, keepdims, where):
  if np.issubdtype(dt, np.complexfloating):  # the mean squared modulus, a real number
    sq = lax.real(lax.mul(centered, lax.conj(centered)))  # (re^2 + im^2, no square root)
    dt = _util.dtype(sq)
  else:
    sq = lax.square(centered)
  if where is None:
    total = _accumulate(lax.reduce_sum, sq, axes)
    n = lax.sub(lax.full((), _count(x, axes), dt), lax.convert_element_type(ddof, dt))
    positive = lax.broadcast_in_dim(lax.gt(n, lax.full((), 0, dt)), _util.shape(total), ())
    out = lax.select(positive, lax.div(total, n), lax.full_like(total, np.nan))
    return _keep(out, x, axes, keepdims)
  from minijax.numpy.ufuncs import where as _where
  mask = _util.broadcast_to(where, _util.shape(x))
  total = _accumulate(lax.reduce_sum, _where(mask, sq, lax.full_like(sq, 0)), axes)
  n = lax.sub(sum(mask, axes, dt), lax.full(_util.shape(total), ddof, dt))
  positive = lax.gt(n, lax.full_like(n, 0))
  out = lax.select(positive, lax.div(total, lax.select(positive, n, lax.full_like(n, 1))),
                   lax.full_like(total, np.nan))
  return _keep(out, x, axes, keepdims)


def _arg(name, lax_fn, a, axis, keepdims):
  _util.check(name, a)
  x = _strong(_util.asarray(a))
  if axis is None:
    if _util.shape(x) and 0 in _util.shape(x) or _util.size(x) == 0:
      raise ValueError(f"attempt to get {name} of an empty sequence")
    flat = lax.reshape(x, (_util.size(x),))
    out = lax_fn(flat, 0, dtypes.default_int_dtype())
    return lax.reshape(out, (1,) * _util.ndim(x)) if keepdims else out
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  if _util.shape(x)[ax] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence")
  out = lax_fn(x, ax, dtypes.default_int_dtype())
  return _keep(out, x, (ax,), keepdims)


@_util.compiled_when_eager(dynamic=1)
def argmax(a, axis=None, out=None, keepdims=False):
  return _arg("argmax", lax.argmax, a, axis, keepdims)


@_util.compiled_when_eager(dynamic=1)
def argmin(a, axis=None, out=None, keepdims=False):
  return _arg("argmin", lax.argmin, a, axis, keepdims)


def _cumulative(name, lax_fn, a, axis, dtype):
  _util.check(name, a)
  x = _strong(_util.asarray(a))
  if axis is None:
    x = lax.reshape(x, (_util.size(x),))
    axis = 0
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  # JAX's: a cumulative sum or product keeps narrow integer types (only bools count as ints)
  default = dtypes.default_int_dtype() if _util.dtype(x) == dtypes.bool_ else _util.dtype(x)
  x = _cast(x, dtype if dtype is not None else default)
  return lax_fn(x, ax)


@_util.compiled_when_eager(dynamic=1)
def cumsum(a, axis=None, dtype=None, out=None):
  return _cumulative("cumsum", lax.cumsum, a, axis, dtype)


@_util.compiled_when_eager(dynamic=1)
def cumprod(a, axis=None, dtype=None, out=None):
  return _cumulative("cumprod", lax.cumprod, a, axis, dtype)


def _cumulative_api(name, fn, x, axis, dtype, include_initial):
  """The array API's cumulative_sum/cumulative_prod of non-scalar input: `axis` may be
  omitted only for 1-d input; with `include_initial`, the identity comes first.  As JAX's,
  cumulative_sum of integers narrower than the default integer sums in the default
  integer of their signedness."""
  from minijax.numpy.shape import concatenate
  x = _util.asarray(x)
  if _util.ndim(x) == 0:
    raise ValueError(f"The input must be non-scalar to take a cumulative "
                     f"{name.partition('_')[2]}, however a scalar value or scalar array was "
                     f"given.")
  if axis is None:
    if _util.ndim(x) > 1:
      raise ValueError(f"The input array has rank {_util.ndim(x)}, however axis was not set "
                       f"to an explicit value. The axis argument is only optional for "
                       f"one-dimensional arrays.")
    axis = 0
  if dtype is None and name == "cumulative_sum":
    kind = _util.dtype(x)
    if kind.kind in "iu" and kind.itemsize < dtypes.default_int_dtype().itemsize:
      dtype = dtypes.canonicalize_dtype(np.uint64 if kind.kind == "u" else np.int64)
  out = fn(x, axis=axis, dtype=dtype)
  if include_initial:
    (ax,) = _util.canonicalize_axes(axis, _util.ndim(out))
    shape = list(_util.shape(out))
    shape[ax] = 1
    identity = lax.full(tuple(shape), 0 if name == "cumulative_sum" else 1, _util.dtype(out))
    out = concatenate([identity, out], axis=ax)
  return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  return _cumulative_api("cumulative_sum", cumsum, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  return _cumulative_api("cumulative_prod", cumprod, x, axis, dtype, include_initial)


def array_equiv(a1, a2):
  """Whether `a1` and `a2`, broadcast to one shape, are equal everywhere (shapes that do
  not broadcast raise, as in JAX)."""
  return all(lax.eq(*_util.promote_and_broadcast("array_equiv", a1, a2)))


def ptp(a, axis=None, out=None, keepdims=False):
  _prep("ptp", a, axis, out)  # (checks `out`)
  return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """The (weighted) mean over `axis`; with `returned`, also the sum of the weights."""
  from minijax.numpy.creation import asarray
  from minijax.numpy.ufuncs import multiply
  if weights is None:
    avg = mean(a, axis, keepdims=keepdims)
    if not returned:
      return avg
    x = _util.asarray(a)
    axes = _util.canonicalize_axes(axis, _util.ndim(x)) if axis is not None else tuple(
        range(_util.ndim(x)))
    count = int(np.prod([_util.shape(x)[d] for d in axes]))
    return avg, lax.full(_util.shape(avg), count, _util.dtype(avg))
  weights = asarray(weights)
  a_shape, w_shape = _util.shape(a), _util.shape(weights)
  if a_shape != w_shape:  # numpy: 1-D weights apply along `axis`
    if axis is None or len(w_shape) != 1:
      raise TypeError("average: when the shapes of a and weights differ, weights must be 1-D "
                      "and axis must be given")
    axis = axis % len(a_shape)
    if w_shape[0] != a_shape[axis]:
      raise ValueError(f"average: {w_shape[0]} weights do not match axis {axis} of an array "
                       f"of shape {a_shape}")
    weights = lax.broadcast_in_dim(weights, a_shape, (axis,))
  a, weights = _util.promote_inexact("average", a, weights)  # (a true division, as JAX's)
  total = sum(multiply(a, weights), axis, keepdims=keepdims)
  weight_sum = sum(_util.broadcast_to(weights, _util.shape(a)), axis, keepdims=keepdims)
  avg = lax.div(total, weight_sum)
  return (avg, weight_sum) if returned else avg