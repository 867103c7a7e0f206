"""The samplers built on uniform bits: uniform, normal and the continuous distributions
that transform them (truncated_normal, bernoulli, gumbel, exponential, laplace, logistic,
cauchy, lognormal, pareto, weibull_min, rayleigh, maxwell, multivariate_normal,
orthogonal; the discrete ones are in `_discrete.py`).

Each public function checks its arguments (JAX's errors) and calls a compiled function
with the shape and dtype static, as JAX does: `compiled(impl, shape=..., dtype=...)` is
`jit` of `impl` for those values, made once, so an eager `normal(key, (3,))` is one
compiled call, and under a trace the sampler shows as one `jit` equation.  Every impl
takes the key's data first and repeats JAX's arithmetic operation for operation (a float
computed another way would round differently), which is what makes the samples bit-exact.
"""
from __future__ import annotations

import functools

import numpy as np

from minijax import api, lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.lax.sharding import takes_out_sharding
from minijax.random import _keys
from minijax.random._keys import random_bits, unwrap

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@functools.lru_cache(maxsize=1024)
def compiled(impl, **static):
  """`jit(impl)` with the keyword arguments `static` fixed."""
  def run(*args):
    return impl(*args, **static)
  run.__name__ = run.__qualname__ = impl.__name__
  return api.jit(run)


def _finfo(dtype):
  import ml_dtypes
  return ml_dtypes.finfo(np.dtype(dtype))


def float_dtype(name: str, dtype, what: str = "a float") -> np.dtype:
  dtype = (dtypes.default_float_dtype() if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, name))
  if not dtypes.is_float(dtype):
    raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dtype}")
  return dtype


def int_dtype(name: str, dtype) -> np.dtype:
  dtype = (dtypes.default_int_dtype() if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, name))
  if not dtypes.is_integer(dtype):
    raise TypeError(f"{name} only accepts integer dtypes, got {dtype}")
  return dtype


def check_shape(name: str, shape: tuple, *param_shapes) -> None:
  """`shape` must be what it and the parameters' shapes broadcast to."""
  if param_shapes:
    try:
      joint = np.broadcast_shapes(shape, *param_shapes)
    except ValueError:
      joint = None
    if joint != tuple(shape):
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       "argument, and the result of broadcasting the shapes must equal the "
                       f"shape argument, but got result {joint} for shape argument {shape}.")


def sample_with_params(name: str, impl, key, shape, dtype, *params):
  """A float sampler's checks and run: the key, the dtype, the shape (the parameters'
  broadcast shape when None, as in JAX), then `impl` as one compiled program."""
  data, _ = unwrap(name, key)
  dtype = float_dtype(name, dtype)
  if shape is not None:
    shape = _keys.shape_tuple(shape, name)
  shape = shape_of_params(name, shape, *params)
  return compiled(impl, shape=shape, dtype=dtype)(data, *params)


def shape_of_params(name: str, shape, *params) -> tuple:
  shapes = [np.shape(p) for p in params]
  if shape is None:
    return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
  shape = _keys.shape_tuple(shape, name)
  check_shape(name, shape, *shapes)
  return shape


# ----------------------------------------------------------------------------- bits, uniform

@takes_out_sharding
def bits(key, shape=(), dtype=None):
  """Uniformly random unsigned integers (uint32 by default, uint64 with x64)."""
  data, _ = unwrap("bits", key)
  dtype = (dtypes.canonicalize_dtype(np.uint64) if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, "bits"))
  if not np.issubdtype(dtype, np.unsignedinteger):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  shape = _keys.shape_tuple(shape, "bits")
  return compiled(_bits, shape=shape, bit_width=dtype.itemsize * 8)(data)


def _bits(key, *, shape, bit_width):
  return random_bits(key, bit_width, shape)


@takes_out_sharding
def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
  """Uniform floats in [minval, maxval)."""
  data, _ = unwrap("uniform", key)
  shape = _keys.shape_tuple(shape, "uniform")
  dtype = float_dtype("uniform", dtype)
  return compiled(_uniform, shape=shape, dtype=dtype)(data, minval, maxval)


def _uniform(key, minval, maxval, *, shape, dtype):
  check_shape("uniform", shape)
  minval = lax.broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
  maxval = lax.broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(shape))
  info = _finfo(dtype)
  nbits, nmant = info.bits, info.nmant
  rng_bits = 8 if nmant < 8 else nbits
  uint = np.dtype(_UINT[nbits])
  raw = random_bits(key, rng_bits, shape)
  if rng_bits != nbits:
    raw = lax.convert_element_type(raw, uint)
  # a random mantissa under the exponent of 1.0 is uniform in [1, 2)
  mantissa = lax.shift_right_logical(raw, lax.full(shape, rng_bits - nmant, uint))
  one_bits = np.array(1.0, dtype).view(uint)
  floats = lax.bitcast_convert_type(lax.bitwise_or(mantissa, lax.full(shape, one_bits, uint)),
                                    dtype)
  floats = lax.sub(floats, lax.full(shape, 1.0, dtype))
  scaled = jnp.add(jnp.multiply(floats, jnp.subtract(maxval, minval)), minval)
  return jnp.maximum(minval, lax.reshape(scaled, shape))


# ----------------------------------------------------------------------------- normal family

@takes_out_sharding
def normal(key, shape=(), dtype=None):
  """Standard normal samples (complex dtypes: real and imaginary parts of variance 1/2)."""
  data, _ = unwrap("normal", key)
  shape = _keys.shape_tuple(shape, "normal")
  dtype = (dtypes.default_float_dtype() if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, "normal"))
  if not dtypes.is_inexact(dtype):
    raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, "
                     f"got {dtype}")
  return compiled(_normal, shape=shape, dtype=dtype)(data)


def _normal(key, *, shape, dtype):
  if np.issubdtype(dtype, np.complexfloating):
    real = np.dtype(np.float64 if dtype == np.complex128 else np.float32)
    k_re, k_im = _split2(key)
    re = lax.convert_element_type(_normal_real(k_re, shape=shape, dtype=real), dtype)
    im = lax.convert_element_type(_normal_real(k_im, shape=shape, dtype=real), dtype)
    out = jnp.add(re, jnp.multiply(1j, im))
    return jnp.divide(out, np.array(np.sqrt(2), dtype))
  return _normal_real(key, shape=shape, dtype=dtype)


def _normal_real(key, *, shape, dtype):
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  u = _uniform(key, lo, np.array(1., dtype), shape=shape, dtype=dtype)
  return lax.mul(lax.full(shape, np.sqrt(2), dtype), lax.erf_inv(u))


def _split2(key):
  keys = _keys.split_keys(key, (2,))
  return keys[0], keys[1]


@takes_out_sharding
def truncated_normal(key, lower, upper, shape=None, dtype=None):
  """Standard normal samples conditioned on [lower, upper] (the ends excluded)."""
  return sample_with_params("truncated_normal", _truncated_normal, key, shape, dtype, lower, upper)


def _truncated_normal(key, lower, upper, *, shape, dtype):
  sqrt2 = np.array(np.sqrt(2), dtype)
  lower = lax.convert_element_type(lower, dtype)
  upper = lax.convert_element_type(upper, dtype)
  a = lax.erf(jnp.divide(lower, sqrt2))
  b = lax.erf(jnp.divide(upper, sqrt2))
  u = _uniform(key, a, b, shape=shape, dtype=dtype)
  out = jnp.multiply(sqrt2, lax.erf_inv(u))
  # rounding may land on an end (or u may be a): keep to the open interval
  lo = lax.nextafter(lax.stop_gradient(lower), lax.full_like(lower, np.inf))
  hi = lax.nextafter(lax.stop_gradient(upper), lax.full_like(upper, -np.inf))
  return jnp.clip(out, lo, hi)


@takes_out_sharding
def bernoulli(key, p=np.float32(0.5), shape=None, mode="low"):
  """Booleans that are True with probability p."""
  if mode not in ("high", "low"):
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  data, _ = unwrap("bernoulli", key)
  dtype = get_aval(p).dtype
  if not dtypes.is_float(dtype):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  if shape is not None:
    shape = _keys.shape_tuple(shape, "bernoulli")
  shape = shape_of_params("bernoulli", shape, p)
  return compiled(_bernoulli, shape=shape, mode=mode)(data, p)


def _bernoulli(key, p, *, shape, mode):
  dtype = get_aval(p).dtype
  p = lax.convert_element_type(p, dtype)
  if mode == "high":
    u = _uniform(key, 0., 1., shape=(2, *shape), dtype=dtype)
    u1, u2 = u[0], u[1]
    u2 = jnp.multiply(u2, 2. ** -_finfo(dtype).nmant)
    return jnp.less(u2, jnp.subtract(p, u1))
  return jnp.less(_uniform(key, 0., 1., shape=shape, dtype=dtype), p)


@takes_out_sharding
def exponential(key, shape=(), dtype=None):
  """Samples of the unit-rate exponential distribution."""
  data, _ = unwrap("exponential", key)
  dtype = float_dtype("exponential", dtype)
  shape = _keys.shape_tuple(shape, "exponential")
  return compiled(_exponential, shape=shape, dtype=dtype)(data)


def _exponential(key, *, shape, dtype):
  u = _uniform(key, 0., 1., shape=shape, dtype=dtype)
  return lax.neg(lax.log1p(lax.neg(u)))  # log(1 - u): u < 1, so never log(0)


@takes_out_sharding
def gumbel(key, shape=(), dtype=None, mode=None):
  """Samples of the standard Gumbel distribution."""
  data, _ = unwrap("gumbel", key)
  dtype = float_dtype("gumbel", dtype)
  shape = _keys.shape_tuple(shape, "gumbel")
  mode = "low" if mode is None else mode
  if mode not in ("high", "low"):
    if mode == "highest":
      raise NotImplementedError("gumbel mode='highest' is not implemented in minijax; use "
                                "'high' or 'low'")
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return compiled(_gumbel, shape=shape, dtype=dtype, mode=mode)(data)


def _gumbel(key, *, shape, dtype, mode):
  info = _finfo(dtype)
  if mode == "high":
    u = _uniform(key, 0., 1., shape=(2, *shape), dtype=dtype)
    high, low = u[0], u[1]
    x = jnp.where(jnp.greater_equal(high, 0.5), high,
                  jnp.add(jnp.add(high, jnp.multiply(2. ** -info.nmant, low)),
                          float(info.tiny)))
    return jnp.negative(jnp.log(jnp.negative(jnp.log1p(jnp.negative(x)))))
  u = _uniform(key, float(info.tiny), 1., shape=shape, dtype=dtype)
  return jnp.negative(jnp.log(jnp.negative(jnp.log(u))))


@takes_out_sharding
def laplace(key, shape=(), dtype=None):
  """Samples of the standard Laplace distribution."""
  data, _ = unwrap("laplace", key)
  dtype = float_dtype("laplace", dtype)
  shape = _keys.shape_tuple(shape, "laplace")
  return compiled(_laplace, shape=shape, dtype=dtype)(data)


def _laplace(key, *, shape, dtype):
  u = _uniform(key, -1. + float(_finfo(dtype).epsneg), 1., shape=shape, dtype=dtype)
  return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


@takes_out_sharding
def logistic(key, shape=(), dtype=None):
  """Samples of the standard logistic distribution."""
  data, _ = unwrap("logistic", key)
  dtype = float_dtype("logistic", dtype)
  shape = _keys.shape_tuple(shape, "logistic")
  return compiled(_logistic, shape=shape, dtype=dtype)(data)


def _logistic(key, *, shape, dtype):
  x = _uniform(key, float(_finfo(dtype).tiny), 1., shape=shape, dtype=dtype)
  return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


@takes_out_sharding
def cauchy(key, shape=(), dtype=None):
  """Samples of the standard Cauchy distribution."""
  data, _ = unwrap("cauchy", key)
  dtype = float_dtype("cauchy", dtype)
  shape = _keys.shape_tuple(shape, "cauchy")
  return compiled(_cauchy, shape=shape, dtype=dtype)(data)


def _cauchy(key, *, shape, dtype):
  u = _uniform(key, float(_finfo(dtype).eps), 1., shape=shape, dtype=dtype)
  return lax.tan(lax.mul(lax.full(shape, np.pi, dtype), lax.sub(u, lax.full(shape, 0.5, dtype))))


@takes_out_sharding
def rademacher(key, shape=(), dtype=None):
  """Random signs: -1 or 1 with equal probability."""
  data, _ = unwrap("rademacher", key)
  dtype = (dtypes.default_int_dtype() if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, "rademacher"))
  shape = _keys.shape_tuple(shape, "rademacher")
  return compiled(_rademacher, shape=shape, dtype=dtype)(data)


def _rademacher(key, *, shape, dtype):
  b = _bernoulli(key, np.float32(0.5), shape=shape, mode="low")
  return jnp.subtract(jnp.multiply(2, lax.convert_element_type(b, dtype)), 1)


@takes_out_sharding
def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
  """exp(sigma * standard normal)."""
  return sample_with_params("lognormal", _lognormal, key, shape, dtype, sigma)


def _lognormal(key, sigma, *, shape, dtype):
  sigma = lax.convert_element_type(sigma, dtype)
  return jnp.exp(jnp.multiply(_normal_real(key, shape=shape, dtype=dtype), sigma))


@takes_out_sharding
def pareto(key, b, shape=None, dtype=None):
  """Samples of the Pareto distribution with shape parameter b (support [1, inf))."""
  return sample_with_params("pareto", _pareto, key, shape, dtype, b)


def _pareto(key, b, *, shape, dtype):
  b = lax.convert_element_type(b, dtype)
  return lax.exp(jnp.divide(_exponential(key, shape=shape, dtype=dtype), b))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Samples of the Weibull distribution, by its inverse CDF."""
  data, _ = unwrap("weibull_min", key)
  dtype = float_dtype("weibull_min", dtype)
  shape = _keys.shape_tuple(shape, "weibull_min")
  return compiled(_weibull_min, shape=shape, dtype=dtype)(data, scale, concentration)


def _weibull_min(key, scale, concentration, *, shape, dtype):
  u = _uniform(key, 0, 1, shape=shape, dtype=dtype)
  return jnp.multiply(jnp.power(jnp.negative(jnp.log1p(jnp.negative(u))),
                                jnp.divide(1.0, concentration)), scale)


@takes_out_sharding
def rayleigh(key, scale, shape=None, dtype=None):
  """Samples of the Rayleigh distribution, scale · sqrt(-2 log u)."""
  return sample_with_params("rayleigh", _rayleigh, key, shape, dtype, scale)


def _rayleigh(key, scale, *, shape, dtype):
  u = _uniform(key, 0., 1., shape=shape, dtype=dtype)
  scale = jnp.broadcast_to(lax.convert_element_type(scale, dtype), shape)
  return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), lax.full_like(scale, -2))))


@takes_out_sharding
def maxwell(key, shape=(), dtype=None):
  """Samples of the Maxwell distribution: the length of a standard normal 3-vector."""
  data, _ = unwrap("maxwell", key)
  dtype = float_dtype("maxwell", dtype)
  shape = _keys.shape_tuple(shape, "maxwell")
  return compiled(_maxwell, shape=shape, dtype=dtype)(data)


def _maxwell(key, *, shape, dtype):
  z = _normal_real(key, shape=(*shape, 3), dtype=dtype)
  return jnp.sqrt(jnp.sum(jnp.multiply(z, z), axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """Samples of the double-sided Maxwell distribution: a Maxwell sample with a random sign,
  scaled and shifted."""
  data, _ = unwrap("double_sided_maxwell", key)
  dtype = float_dtype("double_sided_maxwell", dtype)
  shape = _keys.shape_tuple(shape, "double_sided_maxwell")
  return compiled(_double_sided_maxwell, shape=shape, dtype=dtype)(data, loc, scale)


def _double_sided_maxwell(key, loc, scale, *, shape, dtype):
  params_shape = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
  shape = (shape or params_shape) + params_shape  # as JAX: the parameters' shape is added
  maxwell_key, sign_key = _split2(key)
  rvs = _maxwell(maxwell_key, shape=shape, dtype=dtype)
  sign = _rademacher(sign_key, shape=shape, dtype=dtype)
  return jnp.add(jnp.multiply(jnp.multiply(sign, rvs), scale), loc)


@takes_out_sharding
def wald(key, mean, shape=None, dtype=None):
  """Samples of the Wald (inverse Gaussian) distribution of the given mean."""
  return sample_with_params("wald", _wald, key, shape, dtype, mean)


def _wald(key, mean, *, shape, dtype):
  k1, k2 = _split2(key)
  mean = jnp.broadcast_to(lax.convert_element_type(mean, dtype), shape)
  v = _normal_real(k1, shape=shape, dtype=dtype)
  z = _uniform(k2, 0., 1., shape=shape, dtype=dtype)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(jnp.add(jnp.multiply(jnp.multiply(4, mean), y),
                               jnp.multiply(mean_sq, y_sq)))
  x = jnp.subtract(jnp.add(mean, jnp.divide(jnp.multiply(mean_sq, y), 2)),
                   jnp.multiply(jnp.divide(mean, 2), sqrt_term))
  return lax.select(lax.le(z, jnp.divide(mean, jnp.add(mean, x))), x, jnp.divide(mean_sq, x))


@takes_out_sharding
def triangular(key, left, mode, right, shape=None, dtype=None):
  """Samples of the triangular distribution on [left, right] peaking at mode."""
  return sample_with_params("triangular", _triangular, key, shape, dtype, left, mode, right)


def _triangular(key, left, mode, right, *, shape, dtype):
  left, mode, right = (jnp.broadcast_to(lax.convert_element_type(v, dtype), shape)
                       for v in (left, mode, right))
  width = jnp.subtract(right, left)
  fc = jnp.divide(jnp.subtract(mode, left), width)
  u = _uniform(key, 0., 1., shape=shape, dtype=dtype)
  out1 = jnp.add(left, lax.sqrt(jnp.multiply(jnp.multiply(u, width), jnp.subtract(mode, left))))
  out2 = jnp.subtract(right, lax.sqrt(jnp.multiply(jnp.multiply(jnp.subtract(1, u), width),
                                                   jnp.subtract(right, mode))))
  return lax.select(lax.lt(u, fc), out1, out2)


# ----------------------------------------------------------------------------- matrices

@takes_out_sharding
def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
  """Samples of N(mean, cov); `cov` is factored by `method` ('cholesky', 'eigh', 'svd')."""
  if method not in ("svd", "eigh", "cholesky"):
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  data, _ = unwrap("multivariate_normal", key)
  dtype = float_dtype("multivariate_normal", dtype)
  mean, cov = jnp.asarray(mean, dtype), jnp.asarray(cov, dtype)
  if mean.ndim < 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{mean.ndim}")
  if cov.ndim < 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                     f"{cov.ndim}")
  n = mean.shape[-1]
  if cov.shape[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                     f"but got cov.shape == {cov.shape}.")
  if shape is None:
    shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
  else:
    shape = _keys.shape_tuple(shape, "multivariate_normal")
    check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
  return compiled(_multivariate_normal, shape=shape, dtype=dtype, method=method)(
      data, mean, cov)


def _multivariate_normal(key, mean, cov, *, shape, dtype, method):
  linalg = jnp.linalg
  if method == "svd":
    u, s, _ = linalg.svd(cov)
    factor = jnp.multiply(u, jnp.sqrt(s[..., None, :]))
  elif method == "eigh":
    w, v = linalg.eigh(cov)
    factor = jnp.multiply(v, jnp.sqrt(w[..., None, :]))
  else:
    factor = linalg.cholesky(cov)
  samples = _normal(key, shape=shape + mean.shape[-1:], dtype=dtype)
  return jnp.add(mean, jnp.matmul(factor, jnp.expand_dims(samples, -1))[..., 0])


@takes_out_sharding
def orthogonal(key, n, shape=(), dtype=None, m=None):
  """Samples of the Haar measure on O(n) (or semi-orthogonal n x m matrices)."""
  import operator
  data, _ = unwrap("orthogonal", key)
  shape = _keys.shape_tuple(shape, "orthogonal")
  dtype = (dtypes.default_float_dtype() if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, "orthogonal"))
  n = operator.index(n)
  m = n if m is None else operator.index(m)
  return compiled(_orthogonal, n=n, m=m, shape=shape, dtype=dtype)(data)


def _orthogonal(key, *, n, m, shape, dtype):
  z = _normal(key, shape=(*shape, max(n, m), min(n, m)), dtype=dtype)
  q, r = jnp.linalg.qr(z)
  d = jnp.diagonal(r, axis1=-2, axis2=-1)
  x = jnp.multiply(q, jnp.expand_dims(jnp.sign(d), -2))
  return jnp.swapaxes(x, -1, -2) if n < m else x
