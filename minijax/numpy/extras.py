"""Less central numpy functions built from the rest of minijax.numpy: diff, append,
searchsorted, cross, kron, isin, indices, logspace, unravel_index, select, piecewise,
interp, digitize, bincount, cov, corrcoef, ... (the NaN-aware reductions and quantiles
are in `statistics.py`).

Functions whose result shape depends on values (`triu_indices` and friends) take static
arguments only.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.lax.sharding import takes_out_sharding
from minijax.core import dtypes
from minijax.core.errors import ConcretizationTypeError
from minijax.core.trace import Tracer
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
    hi = lax.slice_in_dim(x, min(1, size), size, 1, ax)  # (empty once the axis is)
    lo = lax.slice_in_dim(x, 0, max(size - 1, 0), 1, ax)
    x = jnp.not_equal(hi, lo) if _util.dtype(x) == dtypes.bool_ else jnp.subtract(hi, lo)
  return x


def append(arr, values, axis=None):
  jnp = _jnp()
  if axis is None:
    return jnp.concatenate([jnp.ravel(arr), jnp.ravel(values)])
  return jnp.concatenate([arr, values], axis=axis)


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Insertion points of `v` into the sorted 1-d `a` (`a[sorter]` when given), a
  comparison count per element (every `method` of JAX's gives the same answer)."""
  jnp = _jnp()
  if side not in ("left", "right"):
    raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                     "['left', 'right'].")
  if method not in _SEARCH_METHODS:
    raise ValueError(f"method={method!r} not recognized; expected one of {_SEARCH_METHODS}")
  x, y = _util.promote("searchsorted", a, v)
  if _util.ndim(x) != 1:
    raise ValueError("searchsorted: a must be 1-dimensional")
  if sorter is not None:
    x = jnp.take(x, _util.asarray(sorter))
  yy = jnp.expand_dims(y, -1)
  if side == "left":
    before = _sorts_before(x, yy)
  else:
    before = jnp.logical_not(_sorts_before(yy, x))
  # int32 while the positions fit in it, as JAX gives them (under x64 too)
  index_dtype = dtypes.int32 if _util.shape(x)[0] < 2 ** 31 - 1 else dtypes.default_int_dtype()
  return jnp.sum(before, axis=-1).astype(index_dtype)


def _sorts_before(a, b):
  """`a < b` in the order `sort` gives: NaNs after every number (as numpy's and JAX's)."""
  jnp = _jnp()
  if not dtypes.is_float(_util.dtype(a)):
    return jnp.less(a, b)
  return (a < b) | (jnp.isnan(b) & ~jnp.isnan(a))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """Cross products of the 3-vectors (or 2-vectors, their z-component) of `a` and `b`
  along `axisa`/`axisb` (`axis` sets all three), the result's vectors along `axisc`."""
  jnp = _jnp()
  if axis is not None:
    axisa = axisb = axisc = axis
  x, y = _util.promote("cross", a, b)
  x, y = jnp.moveaxis(x, axisa, -1), jnp.moveaxis(y, axisb, -1)
  if _util.shape(x)[-1] not in (2, 3) or _util.shape(y)[-1] not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")
  if _util.shape(x)[-1] == 2 and _util.shape(y)[-1] == 2:
    return x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]
  zero = lambda v: jnp.zeros_like(v[..., 0])  # noqa: E731
  x0, x1 = x[..., 0], x[..., 1]
  x2 = x[..., 2] if _util.shape(x)[-1] == 3 else zero(x)
  y0, y1 = y[..., 0], y[..., 1]
  y2 = y[..., 2] if _util.shape(y)[-1] == 3 else zero(y)
  out = jnp.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)
  return jnp.moveaxis(out, -1, axisc)


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


def astype(x, dtype, copy=False, device=None):
  from minijax.numpy.host_io import _device_put
  out = lax.convert_element_type(_util.asarray(x),
                                 dtypes.canonicalize_user_dtype(dtype, "astype"))
  return out if device is None else _device_put(out, device)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Whether each element of `element` is among `test_elements` (compared all against all,
  whatever the `method`: the answer is the same)."""
  if method not in ("auto", "compare_all", "binary_search", "sort"):
    raise ValueError(f"isin: method={method!r} not recognized")
  jnp = _jnp()
  e = _util.asarray(element)
  t = jnp.ravel(_util.asarray(test_elements))
  out = jnp.any(jnp.expand_dims(e, -1) == t, axis=-1)
  return jnp.logical_not(out) if invert else out


def indices(dimensions, dtype=None, sparse=False):
  dt = dtypes.canonicalize_dtype(dtype or dtypes.default_int_dtype())
  dims = tuple(int(d) for d in dimensions)
  if sparse:
    return tuple(lax.broadcasted_iota(dt, tuple(d if k == i else 1 for k, d in enumerate(dims)),
                                      i) for i in range(len(dims)))
  parts = [lax.broadcasted_iota(dt, dims, i) for i in range(len(dims))]
  return _jnp().stack(parts) if parts else lax.full((0,), 0, dt)


def triu_indices(n, k=0, m=None):
  return tuple(lax.convert_to_array(i.astype(dtypes.default_int_dtype()))
               for i in np.triu_indices(n, k, m))


def tril_indices(n, k=0, m=None):
  return tuple(lax.convert_to_array(i.astype(dtypes.default_int_dtype()))
               for i in np.tril_indices(n, k, m))


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  jnp = _jnp()
  exponents = jnp.linspace(start, stop, num, endpoint=endpoint, axis=axis)
  out = jnp.power(jnp.asarray(base, _util.dtype(exponents)), exponents)
  return out if dtype is None else out.astype(dtype)


def unravel_index(indices, shape):
  """The coordinates of flat `indices` in an array of `shape`; indices out of range are
  clipped to it and negative ones count from the end, as JAX does."""
  jnp = _jnp()
  shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
  size = int(np.prod(shape))
  idx = _util.asarray(indices)
  if np.issubdtype(_util.dtype(idx), np.unsignedinteger) and size:
    idx = jnp.minimum(idx, size - 1)
  elif dtypes.is_integer(_util.dtype(idx)) and size:
    idx = jnp.clip(idx, -size, size - 1)
    idx = jnp.where(idx < 0, idx + size, idx)
  out = []
  for s in reversed(shape):
    out.append(jnp.remainder(idx, s))
    idx = jnp.floor_divide(idx, s)
  return tuple(reversed(out))


def select(condlist, choicelist, default=0):
  jnp = _jnp()
  if len(condlist) != len(choicelist):
    raise ValueError("select: condlist and choicelist must have the same length")
  out = default
  for cond, choice in reversed(list(zip(condlist, choicelist))):
    out = jnp.where(cond, choice, out)
  return _util.asarray(out)


def piecewise(x, condlist, funclist, *args, **kw):
  """numpy's piecewise, as JAX computes it: each element of `x` takes the function (or
  constant) of the last condition true there, the extra last entry of `funclist` (or 0)
  where none is; functions see one element at a time (through `lax.switch`), and every
  result is cast to `x`'s dtype."""
  jnp = _jnp()
  x = _util.asarray(x)
  conds = _util.asarray(condlist, dtype=np.bool_)
  if _util.ndim(conds) == _util.ndim(x):
    conds = conds[None]
  n_conds, n_funcs = len(conds), len(funclist)
  if n_funcs == n_conds + 1:
    funclist = [funclist[-1], *funclist[:-1]]
  elif n_funcs == n_conds:
    funclist = [0, *funclist]
  else:
    raise ValueError(f"piecewise: with {n_conds} condition(s), either {n_conds} or "
                     f"{n_conds + 1} functions are expected; got {n_funcs}")
  dtype = _util.dtype(x)
  branches = [(lambda v, f=f: jnp.asarray(f(v, *args, **kw)).astype(dtype)) if callable(f)
              else (lambda v, c=f: jnp.asarray(c, dtype=dtype))
              for f in funclist]
  index = jnp.zeros(_util.shape(x), np.int32)
  for k in range(n_conds):
    index = jnp.where(conds[k], k + 1, index)
  return jnp.vectorize(lambda i, v: lax.switch(i, branches, v))(index, x)


def heaviside(x1, x2):
  jnp = _jnp()
  x, h0 = _util.promote_and_broadcast("heaviside", x1, x2, inexact=True)
  from minijax.numpy.complex_numbers import reject_complex
  reject_complex("heaviside", x)
  out = jnp.where(x < 0, 0, jnp.where(x > 0, 1, jnp.where(x == 0, h0, x)))  # (NaN stays)
  return out.astype(_util.dtype(x))


def float_power(x1, x2):
  """`x1 ** x2` in an inexact dtype: their promoted one (JAX's; numpy's is float64)."""
  jnp = _jnp()
  a, b = _util.promote_inexact("float_power", x1, x2)
  return jnp.power(a, b)


def sinc(x):
  """sin(pi x) / (pi x), 1 at 0; derivatives of every order are exact at 0 too (there they
  are those of the Taylor series of sin(z) / z, see `_sinc_taylor`).  float16 and bfloat16
  are computed in float32: the derivative's cos z / z - sin z / z^2 cancels near 0 (a third
  of its value at x = 0.07 in bfloat16)."""
  from minijax.lax.utils import in_float32_for_halves
  (a,) = _util.promote_inexact("sinc", x)
  return in_float32_for_halves(_sinc, a)


def _sinc(a):
  jnp = _jnp()
  px = a * np.pi
  safe = jnp.where(a == 0, 1, px)
  return jnp.where(a == 0, _sinc_taylor(0, px), jnp.sin(safe) / safe).astype(_util.dtype(a))


def _sinc_taylor_impl(order, z):
  """The `order`-th derivative of sin(z) / z at z = 0, shaped like `z`: (-1)^(k/2) / (k+1)
  for even orders, 0 for odd ones.  Its jvp is the next order's, so that differentiating
  `sinc` any number of times at 0 reads the series."""
  value = 0.0 if order % 2 else (-1.0) ** (order // 2) / (order + 1)
  return z * 0 + value


def _make_sinc_taylor():
  from minijax.custom_derivatives import custom_jvp
  fn = custom_jvp(_sinc_taylor_impl, nondiff_argnums=(0,))

  @fn.defjvp
  def _jvp(order, primals, tangents):
    (z,), (t,) = primals, tangents
    return fn(order, z), fn(order + 1, z) * t
  return fn


_sinc_taylor = _make_sinc_taylor()


def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation on increasing sample points `xp` (with `period`: of a
  periodic function, `xp` and `x` taken modulo it)."""
  jnp = _jnp()
  xs, xps, fps = _util.promote_inexact("interp", x, xp, fp)
  if _util.ndim(xps) != 1 or _util.shape(xps) != _util.shape(fps):
    raise ValueError(f"xp and fp must be one-dimensional arrays of equal size, got shapes "
                     f"{_util.shape(xps)} and {_util.shape(fps)}")
  if period is not None:
    if left is not None or right is not None:
      raise ValueError("left and right are ignored when period is given; pass neither")
    period = jnp.abs(jnp.asarray(period, _util.dtype(xs)))
    xs, xps = xs % period, xps % period
    order = jnp.argsort(xps)
    xps, fps = xps[order], fps[order]
    xps = jnp.concatenate([xps[-1:] - period, xps, xps[:1] + period])
    fps = jnp.concatenate([fps[-1:], fps, fps[:1]])
  n = _util.shape(xps)[0]
  i = jnp.clip(searchsorted(xps, xs, side="right"), 1, n - 1)
  x0, x1 = jnp.take(xps, i - 1, mode="clip"), jnp.take(xps, i, mode="clip")
  f0, f1 = jnp.take(fps, i - 1, mode="clip"), jnp.take(fps, i, mode="clip")
  dx = x1 - x0
  t = jnp.where(dx == 0, 0, (xs - x0) / jnp.where(dx == 0, 1, dx))
  out = f0 + t * (f1 - f0)
  out = jnp.where(xs < xps[0], fps[0] if left is None else left, out)
  out = jnp.where(xs > xps[-1], fps[-1] if right is None else right, out)
  return out


def digitize(x, bins, right=False, *, method=None):
  jnp = _jnp()
  if method is not None and method not in _SEARCH_METHODS:
    raise ValueError(f"method={method!r} not recognized; expected one of {_SEARCH_METHODS}")
  b = _util.asarray(bins)
  increasing = True
  if _util.shape(b)[0] > 1 and not isinstance(b, Tracer):
    values = np.asarray(b)
    increasing = bool(values[-1] >= values[0])
  if increasing:
    return searchsorted(b, x, side="left" if right else "right")
  rb = jnp.flip(b)
  n = _util.shape(b)[0]
  # decreasing bins: the index is how many bins lie above x (at or above it, with `right`)
  return n - searchsorted(rb, x, side="left" if right else "right")


@takes_out_sharding
def bincount(x, weights=None, minlength=0, *, length=None):
  """Counts (or summed `weights`) of each value of the non-negative integers `x`, negative
  ones counted as 0: `length` bins when given (larger values are dropped; it is needed under
  a trace), else `max(x) + 1`, at least `minlength`."""
  jnp = _jnp()
  xs = _util.asarray(x)
  if _util.dtype(xs) == np.bool_:
    xs = xs.astype(dtypes.default_int_dtype())
  if not dtypes.is_integer(_util.dtype(xs)):
    raise TypeError(f"x argument to bincount must have an integer type; got {_util.dtype(xs)}")
  if _util.ndim(xs) != 1:
    raise ValueError("only 1-dimensional input supported.")
  if length is None:
    from minijax.numpy.indexing import _host
    values = _host("bincount", xs)
    length = max(int(values.max()) + 1 if values.size else 0, int(minlength))
  length = int(length)
  w = jnp.ones(_util.shape(xs), dtypes.default_int_dtype()) if weights is None else \
      _util.asarray(weights)
  if _util.dtype(w) == np.bool_:  # (summed as booleans they would be ORed: JAX refuses too)
    raise TypeError("bincount: weights must be numbers, got booleans; pass "
                    "weights.astype(int) to count the true ones")
  return jnp.zeros(length, _util.dtype(w)).at[jnp.maximum(xs, 0)].add(w, mode="drop")


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
  """Covariance of the rows (or columns) of `m` (and `y`), numpy's, with frequency and
  observation weights."""
  jnp = _jnp()
  x, yy = _util.promote_inexact("cov", m, y) if y is not None else (
      *_util.promote_inexact("cov", m), None)
  if dtype is not None:
    if not dtypes.is_inexact(np.dtype(dtype)):
      raise ValueError("cov: dtype must be a subclass of float or complex; got "
                       f"dtype={str(np.dtype(dtype))!r}")
    x = x.astype(dtype)
    yy = None if yy is None else yy.astype(dtype)
  x = jnp.atleast_2d(x)
  if not rowvar and _util.shape(x)[0] != 1:
    x = x.T
  if y is not None:
    yy = jnp.atleast_2d(yy)
    if not rowvar and _util.shape(yy)[0] != 1:
      yy = yy.T
    x = jnp.concatenate([x, yy.astype(_util.dtype(x))], axis=0)
  n = _util.shape(x)[1]
  ddof = (0 if bias else 1) if ddof is None else ddof
  if fweights is None and aweights is None:
    xc = x - jnp.mean(x, axis=1, keepdims=True)
    out = jnp.matmul(xc, jnp.conjugate(xc).T) / (n - ddof)
    return jnp.squeeze(out) if _util.shape(out) == (1, 1) else out
  w = None
  for weights, name in ((fweights, "fweights"), (aweights, "aweights")):
    if weights is None:
      continue
    weights = jnp.asarray(weights)
    if _util.ndim(weights) != 1 or _util.shape(weights)[0] != n:
      raise RuntimeError(f"cov: {name} must be 1-d with one weight per observation ({n})")
    w = weights if w is None else w * weights
  w = w.astype(_util.dtype(x)) if not jnp.iscomplexobj(x) else w.astype(
      jnp.real(x).dtype)
  w_sum = jnp.sum(w)
  avg = jnp.sum(x * w, axis=1, keepdims=True) / w_sum
  if ddof == 0:
    factor = w_sum
  elif aweights is None:
    factor = w_sum - ddof
  else:
    factor = w_sum - ddof * jnp.sum(w * jnp.asarray(aweights, _util.dtype(w))) / w_sum
  xc = x - avg
  out = jnp.matmul(xc * w, jnp.conjugate(xc).T) / factor
  return jnp.squeeze(out) if _util.shape(out) == (1, 1) else out


def corrcoef(x, y=None, rowvar=True, dtype=None):
  jnp = _jnp()
  c = cov(x, y, rowvar, dtype=dtype)
  if _util.ndim(c) == 0:
    return c / c
  d = jnp.sqrt(jnp.real(jnp.diagonal(c))).astype(_util.dtype(c))
  c = c / d[:, None] / d[None, :]
  if jnp.iscomplexobj(c):  # each part clipped, as JAX does
    return lax.complex(jnp.clip(jnp.real(c), -1, 1), jnp.clip(jnp.imag(c), -1, 1))
  return jnp.clip(c, -1, 1)


def ldexp(x1, x2):
  jnp = _jnp()
  (x,) = _util.promote_inexact("ldexp", x1)
  if jnp.iscomplexobj(x) or jnp.iscomplexobj(x2):
    raise ValueError(f"ldexp not supported for complex input (got {_util.dtype(x)})")
  if not dtypes.is_integer(_util.dtype(x2)) and _util.dtype(x2) != dtypes.bool_:
    raise ValueError(f"ldexp not supported for input types ({_util.dtype(x1)!r}, "
                     f"{_util.dtype(x2)!r}): the exponent must be an integer")
  return x * jnp.power(2.0, _util.asarray(x2)).astype(_util.dtype(x))


def frexp(x, /):
  """`(mantissa, exponent)` with `x == mantissa * 2**exponent`, `0.5 <= |mantissa| < 1`
  (zeros, infinities and NaNs: `(x, 0)`); the exponent is int32."""
  (x,) = _util.promote_inexact("frexp", x)
  if np.issubdtype(_util.dtype(x), np.complexfloating):
    raise TypeError("frexp does not support complex-valued inputs")
  return _frexp(x)


def _frexp_impl(x):
  """Reads the exponent field of `x`'s bits and replaces it by the one of [0.5, 1).  A
  subnormal `x` (read from its bits: the CPU flushes subnormal operands of float
  arithmetic to zero) is `f * 2**(1 - bias - nmant)` for its integer fraction `f`, whose
  own conversion to float is normal and exact."""
  jnp = _jnp()
  import ml_dtypes
  dtype = np.dtype(_util.dtype(x))
  info = ml_dtypes.finfo(dtype)
  nmant, bias, width = int(info.nmant), 1 - int(info.minexp), 8 * dtype.itemsize
  uint = np.dtype(f"uint{width}")
  field = (1 << int(info.nexp)) - 1

  def u(value):
    return np.asarray(value, uint)

  bits = lax.bitcast_convert_type(x, uint)
  fraction = bits & u((1 << nmant) - 1)
  subnormal = ((bits >> u(nmant)) & u(field) == 0) & (fraction != 0)
  negative = (bits >> u(width - 1)) == 1
  scaled = lax.convert_element_type(fraction, dtype)  # normal: the same digits
  bits = jnp.where(subnormal, lax.bitcast_convert_type(jnp.where(negative, -scaled, scaled),
                                                       uint), bits)
  exponent = (((bits >> u(nmant)) & u(field)).astype(np.int32) - (bias - 1)
              + jnp.where(subnormal, 1 - bias - nmant, 0))
  mantissa = lax.bitcast_convert_type(
      (bits & u(~(field << nmant) & ((1 << width) - 1))) | u((bias - 1) << nmant), dtype)
  special = ((bits & u((1 << (width - 1)) - 1)) == 0) | ~jnp.isfinite(x)
  return jnp.where(special, x, mantissa), jnp.where(special, 0, exponent).astype(np.int32)


def _frexp_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  mantissa, exponent = _frexp(x)
  scale = lax.convert_element_type(_jnp().exp2(-exponent.astype(np.float32)), mantissa.dtype)
  return (mantissa, exponent), (t * scale, np.zeros(np.shape(exponent), dtypes.float0))


def _make_frexp():
  from minijax.custom_derivatives import custom_jvp
  fn = custom_jvp(_frexp_impl)
  fn.defjvp(_frexp_jvp)
  return fn


_frexp = _make_frexp()


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """`arr` without the entries at `obj` along `axis` (flattened when None): a slice, an
  integer or integer array (negative ones count from the end), or a boolean mask of the
  axis.  Traced indices need `assume_unique_indices=True` (the result's size is static)."""
  jnp = _jnp()
  x = _util.asarray(arr)
  if axis is None:
    x, axis = jnp.ravel(x), 0
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  n = _util.shape(x)[ax]
  if isinstance(obj, slice):
    keep = np.setdiff1d(np.arange(n), np.arange(n)[obj])
    return jnp.take(x, keep.astype(np.int32), axis=ax, mode="clip")
  if isinstance(obj, (list, tuple)):
    raise TypeError("delete requires ndarray or scalar arguments, got "
                    f"{type(obj)} at position 1.")
  if isinstance(obj, Tracer) and obj.to_concrete_value() is None:
    if not assume_unique_indices:
      raise ConcretizationTypeError(
          obj, "jnp.delete", "Traced indices need assume_unique_indices=True (the size of "
          "the result must be static). ")
    if not dtypes.is_integer(_util.dtype(obj)):
      raise TypeError(f"delete: traced indices must be integers, got {_util.dtype(obj)}")
    dropped = jnp.ravel(obj)
    mask = jnp.ones(n, bool).at[dropped].set(False, mode="drop")
    keep = jnp.nonzero(mask, size=n - _util.size(dropped))[0]
    return jnp.take(x, keep, axis=ax, mode="clip")
  obj = np.asarray(obj.to_concrete_value() if isinstance(obj, Tracer) else obj)
  if obj.dtype == np.bool_:
    if obj.shape != (n,):
      raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                       "one-dimensional with length matching specified axis.")
    drop = np.flatnonzero(obj)
  elif obj.size == 0:
    drop = np.zeros(0, np.int64)
  elif not np.issubdtype(obj.dtype, np.integer):
    raise IndexError(f"delete: arrays used as indices must be of integer (or boolean) type, "
                     f"got {obj.dtype}")
  else:
    bad = obj[(obj < -n) | (obj >= n)]
    if bad.size:
      raise IndexError(f"index {bad.flat[0]} is out of bounds for axis {ax} with size {n}")
    drop = obj % n
  keep = np.setdiff1d(np.arange(n), np.atleast_1d(drop)).astype(np.int32)
  return jnp.take(x, keep, axis=ax, mode="clip")


def insert(arr, obj, values, axis=None):
  """`arr` with `values` inserted before the indices `obj` (an index, a 1-d array of them,
  traced or not, or a slice) along `axis` (the flattened array when None), as numpy does:
  one scalar index takes `values` whole, its first axis along `axis`."""
  jnp = _jnp()
  _util.check("insert", arr, 0 if isinstance(obj, slice) else obj, values)
  x = _util.asarray(arr)
  if axis is None:
    x, axis = jnp.ravel(x), 0
  axis = int(_util.concrete_or_error("axis argument of jnp.insert", axis))
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  n = _util.shape(x)[ax]
  indices = jnp.arange(*obj.indices(n)) if isinstance(obj, slice) else _util.asarray(obj)
  if _util.ndim(indices) > 1:
    raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                     f"scalar; got {obj}")
  if not dtypes.is_integer(_util.dtype(indices)):
    if _util.size(indices) == 0 and not isinstance(obj, _util.Array):
      indices = indices.astype(int)
    else:
      raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
  v = jnp.array(values, ndmin=_util.ndim(x), dtype=_util.dtype(x), copy=False)
  if _util.size(indices) == 1:
    index = jnp.ravel(indices)[0]
    if _util.ndim(indices) == 0:
      v = jnp.moveaxis(v, 0, ax)
    indices = jnp.full(_util.shape(v)[ax], index)
  n_insert = np.broadcast_shapes(_util.shape(indices), (_util.shape(v)[ax],))[0]
  out_shape = list(_util.shape(x))
  out_shape[ax] += n_insert
  out = jnp.zeros(tuple(out_shape), _util.dtype(x))
  indices = jnp.clip(jnp.where(indices < 0, indices + n, indices), 0, n)
  value_at = indices.at[jnp.argsort(indices)].add(jnp.arange(n_insert, dtype=indices.dtype))
  keep = jnp.ones(n + n_insert, dtype=bool).at[value_at].set(False)
  arr_at = jnp.where(keep, size=n)[0]
  lead = (slice(None),) * ax
  return out.at[lead + (value_at,)].set(v).at[lead + (arr_at,)].set(x)


def choose(a, choices, out=None, mode="raise"):
  _util.reject_out("choose", out)
  jnp = _jnp()
  idx = _util.asarray(a)
  if not dtypes.is_integer(_util.dtype(idx)):
    raise ValueError("`a` array must be integer typed")
  arrays = jnp.broadcast_arrays(idx, *choices)
  idx, arrays = arrays[0], _util.promote("choose", *arrays[1:])
  if mode == "clip":
    idx = jnp.clip(idx, 0, len(arrays) - 1)
  elif mode == "wrap":
    idx = jnp.remainder(idx, len(arrays))
  elif mode == "raise":
    value = _util.concrete_value(idx)
    if value is None:
      raise ConcretizationTypeError(
          idx, "jnp.choose with mode='raise' (which checks the indices)",
          "Use mode='wrap' or mode='clip' under jit. ")
    if np.any((value < 0) | (value >= len(arrays))):
      raise ValueError("invalid entry in choice array")
  else:
    raise ValueError(f"mode should be one of 'raise', 'wrap' or 'clip', got {mode!r}")
  return lax.select_n(lax.convert_element_type(idx, dtypes.int32), *arrays)


def diag_indices(n, ndim=2):
  i = lax.iota(dtypes.default_int_dtype(), int(n))
  return (i,) * ndim


def ediff1d(ary, to_end=None, to_begin=None):
  """The differences of consecutive elements of `ary` flattened, with `to_begin` before them
  and `to_end` after them (in the differences' dtype)."""
  jnp = _jnp()
  if _util.dtype(ary) == dtypes.bool_:
    raise TypeError("ediff1d: numpy boolean subtract is not supported; convert the values "
                    "to integers first")
  d = diff(jnp.ravel(ary))
  parts = [jnp.ravel(jnp.asarray(t)).astype(d.dtype) for t in (to_begin,) if t is not None]
  parts += [d] + [jnp.ravel(jnp.asarray(t)).astype(d.dtype) for t in (to_end,) if t is not None]
  return jnp.concatenate(parts) if len(parts) > 1 else d


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
  """1-d discrete convolution (numpy's `full`, `same` and `valid` modes), computed in
  `preferred_element_type` when given, else in an inexact type (JAX's, as numpy's)."""
  jnp = _jnp()
  x, y = _conv_operands("convolve", a, v, preferred_element_type)
  if preferred_element_type is not None:
    x, y = (t.astype(preferred_element_type) for t in (x, y))
  if _util.ndim(x) != 1 or _util.ndim(y) != 1:
    raise ValueError("convolve: both inputs must be 1-dimensional")
  n, m = _util.shape(x)[0], _util.shape(y)[0]
  if n == 0 or m == 0:
    raise ValueError("convolve: inputs cannot be empty")
  positions = (np.arange(n)[:, None] + np.arange(m)[None, :]).astype(np.int32).ravel()
  full_ = jnp.zeros(n + m - 1, _util.dtype(x)).at[positions].add(jnp.ravel(jnp.outer(x, y)))
  if mode == "full":
    return full_
  if mode == "same":
    size = max(n, m)
    start = (n + m - 1 - size) // 2
    return full_[start:start + size]
  if mode == "valid":
    size = max(n, m) - min(n, m) + 1
    start = min(n, m) - 1
    return full_[start:start + size]
  raise ValueError(f"convolve: unknown mode {mode!r}")


def _conv_operands(name, a, v, preferred_element_type):
  if preferred_element_type is None:
    return _util.promote_inexact(name, a, v)
  return _util.promote(name, a, v)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """1-d cross-correlation `sum_n a[n + k] * conj(v[n])` (numpy's modes; "valid" by
  default).  As numpy does, the "same" window of a shorter `a` is centred rounding up."""
  jnp = _jnp()
  if mode not in ("full", "same", "valid"):
    raise ValueError(f"correlate: unknown mode {mode!r}")
  x, y = _conv_operands("correlate", a, v, preferred_element_type)
  if _util.ndim(x) != 1 or _util.ndim(y) != 1:
    raise ValueError("correlate: both inputs must be 1-dimensional")
  out = convolve(x, jnp.flip(jnp.conj(y)), "full" if mode == "same" else mode)
  if preferred_element_type is not None:
    out = out.astype(preferred_element_type)
  if mode != "same":
    return out
  n, m = _util.shape(x)[0], _util.shape(y)[0]
  extra = n + m - 1 - max(n, m)
  start = -(-extra // 2) if n < m else extra // 2
  return out[start:start + max(n, m)]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """`func1d` applied to every 1-d slice along `axis` (by vmap over the other axes)."""
  from minijax.api import vmap
  jnp = _jnp()
  x = _util.asarray(arr)
  (ax,) = _util.canonicalize_axes(axis, _util.ndim(x))
  x = jnp.moveaxis(x, ax, -1)
  fn = lambda v: func1d(v, *args, **kwargs)
  for _ in range(_util.ndim(x) - 1):
    fn = vmap(fn)
  out = fn(x)
  nd_out = _util.ndim(out) - (_util.ndim(x) - 1)
  if nd_out == 0:
    return out
  return jnp.moveaxis(out, tuple(range(_util.ndim(x) - 1, _util.ndim(out))),
                      tuple(range(ax, ax + nd_out)))


def apply_over_axes(func, a, axes):
  """`func(a, axis)` applied for each of `axes` in turn, keeping the reduced axes."""
  jnp = _jnp()
  a = jnp.asarray(a)
  for axis in axes:
    b = func(a, axis)
    if _util.ndim(b) == _util.ndim(a) - 1:
      b = jnp.expand_dims(b, axis)
    elif _util.ndim(b) != _util.ndim(a):
      raise ValueError("function is not returning an array of the correct shape")
    a = b
  return a
