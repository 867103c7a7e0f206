"""Samplers built on the gamma distribution (gamma, loggamma, beta, dirichlet, t, chisquare,
f) and the Poisson sampler.

`gamma(key, a)` draws each element with its own key (the key split once per element) by
Marsaglia and Tsang's squeeze method ("A simple method for generating gamma variables",
ACM TOMS 2000): for a >= 1, with d = a - 1/3 and c = 1/(3 sqrt d), draw normal x until
v = (1 + c x)^3 > 0 and a uniform U, and accept d v when U < 1 - 0.0331 x^4 or
log U < x^2/2 + d (1 - v + log v); for a < 1 the sample for a + 1 is scaled by U^(1/a)
(in log space, `loggamma`, shifted by log(U)/a, which keeps tiny samples representable).
The elements run as one vmapped `while_loop`; the operation order is JAX's, so the samples
are bit-exact.

It is differentiable in `a` by implicit reparameterization: a sample x is the quantile
P^-1(a, u) of its uniform u, so dx/da = -(dP/da)/(dP/dx) at fixed u, which
`lax.random_gamma_grad` computes.  That is `gamma`'s `custom_jvp` rule (the key has no
derivative), and everything built on gamma inherits it.

`poisson` follows JAX's split: Knuth's multiplication method for lam < 10 and Hörmann's
transformed rejection (PTRS) above, both computed over the whole array and selected.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from minijax import api, lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.custom_derivatives import custom_jvp
from minijax.lax.sharding import takes_out_sharding
from minijax.random import _keys
from minijax.random.threefry2x32 import threefry_prng_impl
from minijax.random._keys import unwrap
from minijax.random._samplers import (_exponential, _normal_real, _rademacher, _split2,
                                      _uniform, check_shape, compiled, float_dtype,
                                      sample_with_params)


def _gamma_one(key, alpha, log_space):
  """One Gamma(alpha) sample (its log when `log_space`) from one key."""
  dtype = get_aval(alpha).dtype

  def c(v):
    return lax.full((), v, dtype)

  zero, one, minus_one = c(0), c(1), c(-1)
  boost_mask = lax.ge(alpha, one)
  alpha_orig = alpha
  alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(alpha, c(1. / 3.))
  cc = lax.div(c(1. / 3.), lax.sqrt(d))

  def accepting(state):
    _, x, v, u = state
    squeeze = lax.ge(u, lax.sub(one, lax.mul(c(0.0331), lax.mul(x, x))))
    full = lax.ge(lax.log(u), lax.add(lax.mul(x, c(0.5)),
                                      lax.mul(d, lax.add(lax.sub(one, v), lax.log(v)))))
    return lax.bitwise_and(squeeze, full)

  def propose(state):
    def next_normal(kxv):
      k, sub = _split2(kxv[0])
      x = _normal_real(sub, shape=(), dtype=dtype)
      return k, x, lax.add(one, lax.mul(x, cc))

    k = state[0]
    keys = _keys.split_keys(k, (3,))
    k, x_key, u_key = keys[0], keys[1], keys[2]
    _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_normal,
                             (x_key, zero, minus_one))
    u = _uniform(u_key, 0., 1., shape=(), dtype=dtype)
    return k, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

  key, sub = _split2(key)
  _, _, v, _ = lax.while_loop(accepting, propose, (key, zero, one, c(2)))
  if log_space:
    log_u = lax.neg(_exponential(sub, shape=(), dtype=dtype))
    log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_u, zero)), zero,
                           lax.mul(log_u, lax.div(one, alpha_orig)))
    return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
  u = jnp.subtract(1, _uniform(sub, 0., 1., shape=(), dtype=dtype))
  boost = lax.select(boost_mask, one, lax.pow(u, lax.div(one, alpha_orig)))
  return lax.mul(lax.mul(d, v), boost)


def _gamma_samples(key, a, log_space):
  shape = np.shape(a)
  keys = _keys.split_keys(key, (math.prod(shape),))
  one = functools.partial(_gamma_one, log_space=log_space)
  if key._impl is threefry_prng_impl:
    samples = api.vmap(one)(keys, jnp.reshape(a, (-1,)))
  else:  # one at a time, as JAX draws them (a batched draw of XLA's bits differs)
    samples = lax.map(lambda args: one(*args), (keys, jnp.reshape(a, (-1,))))
  return jnp.reshape(samples, shape)


def _gamma_grad(sample, a, log_space):
  """d sample / d a, element by element (a `lax.map`, as the loops inside run per element)."""
  samples, alphas = jnp.reshape(sample, (-1,)), jnp.reshape(a, (-1,))
  if log_space:
    samples = lax.exp(samples)
    tiny = lax.full_like(samples, float(np.finfo(samples.dtype).tiny))
    samples = lax.select(lax.eq(samples, lax.full_like(samples, 0)), tiny, samples)
    fn = lambda args: lax.div(lax.random_gamma_grad(*args), args[1])  # d log x = dx / x
  else:
    fn = lambda args: lax.random_gamma_grad(*args)
  return jnp.reshape(lax.map(fn, (alphas, samples)), np.shape(a))


def _make_gamma(log_space):
  @custom_jvp
  def sample(key, a):
    return _gamma_samples(key, a, log_space)

  @sample.defjvp
  def _jvp(primals, tangents):
    key, a = primals
    out = sample(key, a)
    return out, jnp.multiply(tangents[1], _gamma_grad(out, a, log_space))

  return sample


_gamma_sample, _loggamma_sample = _make_gamma(False), _make_gamma(True)


def _gamma_impl(key, a, *, shape, dtype, log_space):
  check_shape("gamma", shape, np.shape(a))
  a = lax.convert_element_type(a, dtype)
  if np.shape(a) != shape:
    a = jnp.broadcast_to(a, shape)
  return (_loggamma_sample if log_space else _gamma_sample)(key, a)


def _gamma_args(name, key, a, shape, dtype):
  data, _ = unwrap(name, key)
  dtype = float_dtype(name if name != "loggamma" else "gamma", dtype)
  shape = np.shape(a) if shape is None else _keys.shape_tuple(shape, name)
  return data, tuple(shape), dtype


@takes_out_sharding
def gamma(key, a, shape=None, dtype=None):
  """Samples of Gamma(a, 1), differentiable in `a`."""
  data, shape, dtype = _gamma_args("gamma", key, a, shape, dtype)
  return compiled(_gamma_impl, shape=shape, dtype=dtype, log_space=False)(data, a)


@takes_out_sharding
def loggamma(key, a, shape=None, dtype=None):
  """log of samples of Gamma(a, 1), accurate where the samples themselves underflow."""
  data, shape, dtype = _gamma_args("loggamma", key, a, shape, dtype)
  return compiled(_gamma_impl, shape=shape, dtype=dtype, log_space=True)(data, a)


@takes_out_sharding
def beta(key, a, b, shape=None, dtype=None):
  """Samples of Beta(a, b), as a ratio of gamma samples."""
  return sample_with_params("beta", _beta, key, shape, dtype, a, b)


def _beta(key, a, b, *, shape, dtype):
  a = jnp.broadcast_to(lax.convert_element_type(a, dtype), shape)
  b = jnp.broadcast_to(lax.convert_element_type(b, dtype), shape)
  key_a, key_b = _split2(key)
  log_ga = _gamma_impl(key_a, a, shape=shape, dtype=dtype, log_space=True)
  log_gb = _gamma_impl(key_b, b, shape=shape, dtype=dtype, log_space=True)
  # ga / (ga + gb) computed from the logs without overflow
  log_max = lax.max(log_ga, log_gb)
  ga, gb = jnp.exp(jnp.subtract(log_ga, log_max)), jnp.exp(jnp.subtract(log_gb, log_max))
  return jnp.divide(ga, jnp.add(ga, gb))


@takes_out_sharding
def dirichlet(key, alpha, shape=None, dtype=None):
  """Samples of Dirichlet(alpha) along alpha's last axis."""
  data, _ = unwrap("dirichlet", key)
  dtype = float_dtype("dirichlet", dtype)
  if np.ndim(alpha) < 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
  if shape is None:
    shape = tuple(np.shape(alpha)[:-1])
  else:
    shape = _keys.shape_tuple(shape, "dirichlet")
    check_shape("dirichlet", shape, np.shape(alpha)[:-1])
  return compiled(_dirichlet, shape=shape, dtype=dtype)(data, alpha)


def _dirichlet(key, alpha, *, shape, dtype):
  alpha = lax.convert_element_type(alpha, dtype)
  full_shape = shape + np.shape(alpha)[-1:]
  log_g = _gamma_impl(key, jnp.broadcast_to(alpha, full_shape), shape=full_shape, dtype=dtype,
                      log_space=True)
  return _softmax_last(log_g)


def _softmax_last(x):
  unnormalized = jnp.exp(jnp.subtract(x, lax.stop_gradient(jnp.max(x, axis=-1,
                                                                   keepdims=True))))
  return jnp.divide(unnormalized, jnp.sum(unnormalized, axis=-1, keepdims=True))


@takes_out_sharding
def t(key, df, shape=None, dtype=None):
  """Samples of Student's t distribution with `df` degrees of freedom."""
  return sample_with_params("t", _t, key, shape, dtype, df)


def _t(key, df, *, shape, dtype):
  df = lax.convert_element_type(df, dtype)
  key_n, key_g = _split2(key)
  n = _normal_real(key_n, shape=shape, dtype=dtype)
  half_df = jnp.divide(df, lax.full((), 2, dtype))
  g = _gamma_impl(key_g, half_df, shape=shape, dtype=dtype, log_space=False)
  return jnp.multiply(n, jnp.sqrt(jnp.divide(half_df, g)))


@takes_out_sharding
def chisquare(key, df, shape=None, dtype=None):
  """Samples of the chi-squared distribution with `df` degrees of freedom."""
  return sample_with_params("chisquare", _chisquare, key, shape, dtype, df)


def _chisquare(key, df, *, shape, dtype):
  df = lax.convert_element_type(df, dtype)
  two = lax.full((), 2, dtype)
  half_df = jnp.divide(df, two)
  log_g = _gamma_impl(key, jnp.broadcast_to(half_df, shape), shape=shape, dtype=dtype,
                      log_space=True)
  return jnp.multiply(two, jnp.exp(log_g))


@takes_out_sharding
def f(key, dfnum, dfden, shape=None, dtype=None):
  """Samples of the F distribution: a ratio of chi-squared samples over their degrees of
  freedom."""
  return sample_with_params("f", _f, key, shape, dtype, dfnum, dfden)


def _f(key, dfnum, dfden, *, shape, dtype):
  dfden = lax.convert_element_type(dfden, dtype)
  dfnum = lax.convert_element_type(dfnum, dtype)
  key_den, key_num = _split2(key)
  chi2_num = _chisquare(key_num, dfnum, shape=shape, dtype=dtype)
  chi2_den = _chisquare(key_den, dfden, shape=shape, dtype=dtype)
  return lax.div(lax.div(chi2_num, dfnum), lax.div(chi2_den, dfden))


@takes_out_sharding
def generalized_normal(key, p, shape=(), dtype=None):
  """Samples of the generalized normal distribution, density proportional to exp(-|x|^p)."""
  data, _ = unwrap("generalized_normal", key)
  dtype = float_dtype("generalized_normal", dtype)
  shape = _keys.shape_tuple(shape, "generalized_normal")
  return compiled(_generalized_normal, shape=shape, dtype=dtype)(data, p)


def _generalized_normal(key, p, *, shape, dtype):
  k_gamma, k_sign = _split2(key)
  inv_p = jnp.divide(1, p)
  g = _gamma_impl(k_gamma, inv_p, shape=shape, dtype=dtype, log_space=False)
  return jnp.multiply(_rademacher(k_sign, shape=shape, dtype=dtype), jnp.power(g, inv_p))


@takes_out_sharding
def ball(key, d, p=2, shape=(), dtype=None):
  """Points drawn uniformly from the unit Lp ball in `d` dimensions (shape (*shape, d))."""
  data, _ = unwrap("ball", key)
  dtype = float_dtype("ball", dtype)
  shape = _keys.shape_tuple(shape, "ball")
  d = operator.index(d)
  return compiled(_ball, shape=shape, dtype=dtype, d=d)(data, p)


def _ball(key, p, *, shape, dtype, d):
  k1, k2 = _split2(key)
  g = _generalized_normal(k1, p, shape=(*shape, d), dtype=dtype)
  e = _exponential(k2, shape=shape, dtype=dtype)
  norm = jnp.power(jnp.add(jnp.sum(jnp.power(jnp.abs(g), p), axis=-1), e), jnp.divide(1, p))
  return jnp.divide(g, norm[..., None])


# ----------------------------------------------------------------------------- poisson

def _poisson_knuth(key, lam, shape, dtype, max_iters):
  def body(carry):
    i, k, rng, log_prod = carry
    rng, sub = _split2(rng)
    k = lax.select(jnp.greater(log_prod, jnp.negative(lam)), jnp.add(k, 1), k)
    u = _uniform(sub, 0., 1., shape=shape, dtype=np.dtype(np.float32))
    return jnp.add(i, 1), k, rng, jnp.add(log_prod, jnp.log(u))

  def cond(carry):
    i, log_prod = carry[0], carry[3]
    return jnp.logical_and(jnp.any(jnp.greater(log_prod, jnp.negative(lam))),
                           jnp.less(i, max_iters))

  k0 = lax.full(shape, 0, dtype)
  log0 = lax.full(shape, 0, np.float32)
  k = lax.while_loop(cond, body, (lax.full((), 0, dtype), k0, key, log0))[1]
  return jnp.subtract(k, 1).astype(dtype)


def _poisson_rejection(key, lam, shape, dtype, max_iters):
  log_lam = lax.log(lam)
  b = jnp.add(0.931, jnp.multiply(2.53, lax.sqrt(lam)))
  a = jnp.add(-0.059, jnp.multiply(0.02483, b))
  inv_alpha = jnp.add(1.1239, jnp.divide(1.1328, jnp.subtract(b, 3.4)))
  v_r = jnp.subtract(0.9277, jnp.divide(3.6224, jnp.subtract(b, 2)))

  def body(carry):
    i, k_out, accepted, rng = carry
    keys = _keys.split_keys(rng, (3,))
    rng, k0, k1 = keys[0], keys[1], keys[2]
    u = jnp.subtract(_uniform(k0, 0., 1., shape=shape, dtype=lam.dtype), 0.5)
    v = _uniform(k1, 0., 1., shape=shape, dtype=lam.dtype)
    u_shifted = jnp.subtract(0.5, jnp.abs(u))
    k = lax.floor(jnp.add(jnp.add(jnp.multiply(
        jnp.add(jnp.divide(jnp.multiply(2, a), u_shifted), b), u), lam), 0.43))
    s = lax.log(jnp.divide(jnp.multiply(v, inv_alpha),
                           jnp.add(jnp.divide(a, jnp.multiply(u_shifted, u_shifted)), b)))
    tt = jnp.subtract(jnp.add(jnp.negative(lam), jnp.multiply(k, log_lam)),
                      lax.lgamma(jnp.add(k, 1)))
    accept1 = jnp.logical_and(jnp.greater_equal(u_shifted, 0.07), jnp.less_equal(v, v_r))
    reject = jnp.logical_or(jnp.less(k, 0), jnp.logical_and(jnp.less(u_shifted, 0.013),
                                                            jnp.greater(v, u_shifted)))
    accept2 = jnp.less_equal(s, tt)
    accept = jnp.logical_or(accept1, jnp.logical_and(jnp.logical_not(reject), accept2))
    k_out = lax.select(accept, k, k_out)
    return jnp.add(i, 1), k_out, jnp.logical_or(accepted, accept), rng

  def cond(carry):
    i, _, accepted, _ = carry
    return jnp.logical_and(jnp.any(jnp.logical_not(accepted)), jnp.less(i, max_iters))

  k0 = lax.full(shape, -1, lam.dtype)
  accepted = lax.full(shape, False, np.bool_)
  k = lax.while_loop(cond, body, (lax.full((), 0, dtype), k0, accepted, key))[1]
  return k.astype(dtype)


def _poisson(key, lam, *, shape, dtype):
  use_knuth = jnp.logical_or(jnp.not_equal(lam, lam), jnp.less(lam, 10))
  lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
  lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
  max_iters = np.array(np.iinfo(dtype).max, dtype)
  result = lax.select(use_knuth, _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                      _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
  return lax.select(jnp.equal(lam, 0), jnp.zeros_like(result), result)


@takes_out_sharding
def poisson(key, lam, shape=None, dtype=None):
  """Samples of the Poisson distribution with rate `lam` (integers)."""
  data, _ = unwrap("poisson", key)
  dtype = (dtypes.default_int_dtype() if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, "poisson"))
  if not dtypes.is_integer(dtype):
    raise TypeError(f"poisson only accepts integer dtypes, got {dtype}")
  shape = np.shape(lam) if shape is None else _keys.shape_tuple(shape, "poisson")
  shape = tuple(shape)
  lam = jnp.broadcast_to(lam, shape).astype(np.float32)
  return compiled(_poisson, shape=shape, dtype=dtype)(data, lam)
