"""The discrete samplers: randint, permutation, choice, categorical, geometric, binomial,
multinomial.

As in `_samplers.py`, each public function checks its arguments and calls a compiled impl
with its static arguments fixed, and the impls repeat JAX's operations one for one.
Sampling without replacement is the Gumbel top-k trick: the k largest of log p + Gumbel
noise, found by a stable sort (which breaks ties toward the lower index, as XLA's top-k).
"""
from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.lax.utils import canonicalize_axis
from minijax.numpy import _util
from minijax.lax.sharding import takes_out_sharding
from minijax.random import _keys
from minijax.random._keys import random_bits, unwrap
from minijax.random._samplers import (_UINT, _finfo, _gumbel, _split2, _uniform, check_shape,
                                      compiled, float_dtype, int_dtype, shape_of_params)


# ----------------------------------------------------------------------------- integers

def _clip_to(val, dtype):
  """Integer `val` converted to integer `dtype`, clipped to its range instead of wrapping."""
  src = np.iinfo(get_aval(val).dtype)
  dst = np.iinfo(dtype)
  lo = lax.full((), max(int(dst.min), int(src.min)), src.dtype)
  hi = lax.full((), min(int(dst.max), int(src.max)), src.dtype)
  return lax.convert_element_type(jnp.clip(val, lo, hi), dtype)


@takes_out_sharding
def randint(key, shape, minval, maxval, dtype=None):
  """Uniform integers in [minval, maxval)."""
  data, _ = unwrap("randint", key)
  dtype = int_dtype("randint", dtype)
  shape = _keys.shape_tuple(shape, "randint")
  info = np.iinfo(dtype)
  sampling_dtype = dtype
  if info.bits < 32:  # sampled in 32 bits, as JAX does, to keep the modulo bias small
    sampling_dtype = np.dtype(np.int32)
    minval = jnp.clip(lax.convert_element_type(minval, np.int32), int(info.min), int(info.max))
    maxval = jnp.clip(lax.convert_element_type(maxval, np.int32), int(info.min),
                      int(info.max) + 1)
  out = compiled(_randint, shape=shape, dtype=sampling_dtype)(data, minval, maxval)
  return lax.convert_element_type(out, dtype)


def _randint(key, minval, maxval, *, shape, dtype):
  check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
  if not dtypes.is_integer(minval.dtype):
    minval = minval.astype(dtypes.default_int_dtype())
  if not dtypes.is_integer(maxval.dtype):
    maxval = maxval.astype(dtypes.default_int_dtype())
  top = _clip_to(jnp.array(np.iinfo(dtype).max, dtype), maxval.dtype)
  maxval_out_of_range = jnp.greater(maxval, top)
  minval = lax.broadcast_to_rank(_clip_to(minval, dtype), len(shape))
  maxval = lax.broadcast_to_rank(_clip_to(maxval, dtype), len(shape))
  nbits = np.iinfo(dtype).bits
  k1, k2 = _split2(key)
  higher, lower = random_bits(k1, nbits, shape), random_bits(k2, nbits, shape)
  unsigned = np.dtype(_UINT[nbits])
  span = lax.convert_element_type(jnp.subtract(maxval, minval), unsigned)
  # an empty range gives minval; a maxval beyond the dtype widens the span by one
  span = jnp.where(jnp.less_equal(maxval, minval), jnp.ones_like(span), span)
  span = jnp.where(jnp.logical_and(maxval_out_of_range, jnp.greater(maxval, minval)),
                   jnp.add(span, np.array(1, unsigned)), span)
  # (higher * 2**nbits + lower) % span, by (a*b) % n = ((a % n) * (b % n)) % n
  multiplier = jnp.remainder(np.array(2 ** (nbits // 2), unsigned), span)
  multiplier = jnp.remainder(jnp.multiply(multiplier, multiplier), span)
  offset = jnp.add(jnp.multiply(jnp.remainder(higher, span), multiplier),
                   jnp.remainder(lower, span))
  offset = jnp.remainder(offset, span)
  return jnp.add(minval, lax.convert_element_type(offset, dtype))


# ----------------------------------------------------------------------------- discrete choices

@takes_out_sharding
def permutation(key, x, axis=0, independent=False):
  """A random permutation of range(x) (an int), or of `x` along `axis`."""
  data, _ = unwrap("permutation", key)
  if not hasattr(x, "aval"):
    x = np.asarray(x) if not isinstance(x, (int, np.integer)) else x
  ndim = np.ndim(x)
  if not ndim:
    if not np.issubdtype(get_aval(x).dtype, np.integer):
      raise TypeError("x must be an integer or at least 1-dimensional")
    from minijax.core.trace import Tracer
    if isinstance(x, Tracer):
      raise TypeError("permutation: x must be a concrete integer (a static length), "
                      "not a traced value")
    n = int(x)
    return compiled(_shuffle_range, n=n)(data)
  axis = canonicalize_axis(axis, ndim)
  return compiled(_permutation, axis=axis, independent=bool(independent))(data, x)


def _shuffle_range(key, *, n):
  return _shuffle(key, jnp.arange(n), 0)


def _permutation(key, x, *, axis, independent):
  if independent or np.ndim(x) == 1:
    return _shuffle(key, x, axis)
  order = _shuffle(key, jnp.arange(np.shape(x)[axis]), 0)
  return jnp.take(x, order, axis)


def _shuffle(key, x, axis):
  """Sorts by fresh random 32-bit keys, enough rounds that ties become negligible (for n
  elements, ceil(3 ln n / ln(2^32 - 1)) rounds)."""
  size = int(np.prod(np.shape(x)))
  rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
  for _ in range(rounds):
    key, sub = _split2(key)
    sort_keys = random_bits(sub, 32, np.shape(x))
    _, x = lax.sort((sort_keys, x), axis, is_stable=True, num_keys=1)
  return x


def _top_k_indices(x, k):
  """Indices of the k largest entries along the last axis, largest first (ties: lowest
  index first)."""
  shape = np.shape(x)
  iota = lax.broadcasted_iota(np.int32, shape, len(shape) - 1)
  _, order = lax.sort((jnp.negative(x), iota), len(shape) - 1, is_stable=True, num_keys=1)
  return lax.slice_in_dim(order, 0, k, axis=len(shape) - 1)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """Random samples of `a` (an array, or range(a) for an int), optionally weighted by p."""
  data, _ = unwrap("choice", key)
  if not isinstance(shape, (tuple, list)):
    raise TypeError(f"shape argument of random.choice must be a sequence, got {shape}")
  shape = _keys.shape_tuple(shape, "choice")
  arr = jnp.asarray(a)
  if jnp.ndim(arr) == 0:
    from minijax.core.trace import Tracer
    if isinstance(a, Tracer):
      raise TypeError("choice: an integer `a` must be concrete (a static population size)")
    n_inputs, scalar = int(a), True
  else:
    axis, scalar = canonicalize_axis(axis, arr.ndim), False
    n_inputs = arr.shape[axis]
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp.zeros(shape, dtype=get_aval(arr).dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                     f"(size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(key, shape, 0, n_inputs)
      result = ind if scalar else jnp.take(arr, ind, axis)
    else:
      perm = permutation(key, n_inputs if scalar else arr, axis)
      result = lax.slice_in_dim(perm, 0, n_draws, axis=0 if scalar else axis)
  else:
    p_arr = jnp.asarray(p)
    p_arr = p_arr.astype(dtypes.to_inexact_dtype(p_arr.dtype))
    if p_arr.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    ind = compiled(_choice_p, shape=shape, replace=bool(replace), n_draws=n_draws,
                   mode=mode or "low")(data, p_arr)
    result = ind if scalar else jnp.take(arr, ind, axis)
  out_shape = shape if scalar else arr.shape[:axis] + shape + arr.shape[axis + 1:]
  return jnp.reshape(result, out_shape)


def _choice_p(key, p, *, shape, replace, n_draws, mode):
  dtype = get_aval(p).dtype
  if replace:
    cumulative = jnp.cumsum(p)
    r = jnp.multiply(cumulative[-1],
                     jnp.subtract(1, _uniform(key, 0., 1., shape=shape, dtype=dtype)))
    return jnp.searchsorted(cumulative, r).astype(dtypes.default_int_dtype())
  # Gumbel top-k: the k largest of log p + Gumbel noise are a sample without replacement
  g = jnp.add(_gumbel(key, shape=(p.shape[0],), dtype=dtype, mode=mode), jnp.log(p))
  return _top_k_indices(g, n_draws).astype(dtypes.default_int_dtype())


@takes_out_sharding
def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
  """Samples of the categorical distributions whose log-probabilities are `logits` along
  `axis` (Gumbel max; without replacement, Gumbel top-k)."""
  data, _ = unwrap("categorical", key)
  logits = jnp.asarray(logits)
  axis = canonicalize_axis(axis, logits.ndim)
  batch_shape = tuple(np.delete(logits.shape, axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = _keys.shape_tuple(shape, "categorical")
    check_shape("categorical", shape, batch_shape)
  mode = mode or "low"
  if not replace:
    k = math.prod(shape[:len(shape) - len(batch_shape)])
    if k > logits.shape[axis]:
      raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                       f"of categories ({logits.shape[axis]}).")
  return compiled(_categorical, shape=shape, batch_shape=batch_shape, axis=axis,
                  replace=bool(replace), mode=mode)(data, logits)


def _categorical(key, logits, *, shape, batch_shape, axis, replace, mode):
  ndim = logits.ndim
  prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis, logits.shape[axis])
    noise = _gumbel(key, shape=(*prefix, *logits_shape), dtype=logits.dtype, mode=mode)
    expanded = lax.expand_dims(logits, tuple(range(len(prefix))))
    return jnp.argmax(jnp.add(noise, expanded), axis=axis - ndim)
  noisy = jnp.add(logits, _gumbel(key, shape=logits.shape, dtype=logits.dtype, mode=mode))
  k = math.prod(prefix)
  indices = _top_k_indices(jnp.moveaxis(noisy, axis, -1), k)
  indices = indices.astype(dtypes.default_int_dtype())
  return lax.reshape(indices, shape, (indices.ndim - 1, *range(indices.ndim - 1)))


@takes_out_sharding
def geometric(key, p, shape=None, dtype=None):
  """Samples of the geometric distribution: the number of trials to the first success."""
  data, _ = unwrap("geometric", key)
  dtype = int_dtype("geometric", dtype)
  if shape is not None:
    shape = _keys.shape_tuple(shape, "geometric")
  shape = shape_of_params("geometric", shape, p)
  return compiled(_geometric, shape=shape, dtype=dtype)(data, p)


def _geometric(key, p, *, shape, dtype):
  p = jnp.asarray(p)
  p = p.astype(dtypes.to_inexact_dtype(get_aval(p).dtype))
  u = _uniform(key, 0., 1., shape=shape, dtype=get_aval(p).dtype)
  u = jnp.where(jnp.equal(u, 0), jnp.ones_like(u), u)  # (as JAX: u = 0 counts as 1)
  trials = lax.floor(lax.div(lax.log(u), jnp.broadcast_to(lax.log1p(jnp.negative(p)), shape)))
  return jnp.add(trials, 1).astype(dtype)


# ----------------------------------------------------------------------------- binomial

def binomial(key, n, p, shape=None, dtype=None):
  """Samples of the binomial distribution: successes in `n` trials of probability `p`,
  as floats (`n` may be a float; it is floored, as numpy does)."""
  data, _ = unwrap("binomial", key)
  _util.check("binomial", n, p)
  dtype = float_dtype("binomial", dtype)
  shape = shape_of_params("binomial", shape, n, p)
  return compiled(_binomial, shape=shape, dtype=dtype)(data, n, p)


def _binomial(key, count, prob, *, shape, dtype):
  """Samples for q = min(p, 1 - p) (the count minus them when p >= 1/2): by inversion where
  n q <= 10, by BTRS rejection elsewhere; both run over the whole array and are selected.
  A NaN or negative n, or a NaN or negative q, gives NaN; an infinite n gives inf."""
  prob, = _util.promote_inexact("binomial", prob)
  count = jnp.broadcast_to(lax.convert_element_type(count, get_aval(prob).dtype), shape)
  prob = jnp.broadcast_to(prob, shape)
  p_below_half = prob < 0.5
  q = lax.select(p_below_half, prob, 1.0 - prob)
  bad_count = jnp.isnan(count) | (count < 0.0)
  inf_count = jnp.isinf(count)
  nan_q, negative_q = jnp.isnan(q), q < 0.0
  q = lax.select(nan_q | negative_q, lax.full_like(q, 0.01), q)
  use_inversion = bad_count | (count * q <= 10.0)
  count = jnp.floor(count)
  # each method gets harmless parameters where the other one's result is taken
  inverted = _binomial_inversion(key, lax.select(use_inversion, count, lax.full_like(count, 0.)),
                                 q, shape, dtype)
  rejected = _binomial_btrs(key, lax.select(use_inversion, lax.full_like(count, 1e4), count),
                            lax.select(use_inversion, lax.full_like(q, 0.5), q), shape, dtype)
  samples = lax.select(use_inversion, inverted, rejected)
  invalid = negative_q | nan_q | bad_count
  samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
  samples = lax.select(inf_count & ~invalid, jnp.full_like(samples, np.inf, dtype), samples)
  flipped = count.astype(dtype) - samples
  return lax.select(p_below_half | bad_count | nan_q | inf_count, samples, flipped)


def _max_iters(dtype):
  return np.array(_finfo(dtype).max, dtype)


def _binomial_inversion(key, count, prob, shape, dtype):
  """Counts geometric waiting times (ceil(log u / log(1 - p))) until their sum passes n."""
  log_1m_prob = jnp.log1p(-prob)
  max_iters = _max_iters(dtype)

  def body(carry):
    i, num_geom, geom_sum, rng = carry
    sub, rng = _split2(rng)
    num_geom = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = _uniform(sub, 0., 1., shape=shape, dtype=get_aval(prob).dtype)
    geom_sum = geom_sum + jnp.ceil(jnp.log(u) / log_1m_prob)
    return i + 1, num_geom, geom_sum, rng

  def cond(carry):
    i, _, geom_sum, _ = carry
    return jnp.any(geom_sum <= count) & (i < max_iters)

  zeros = lax.full_like(prob, 0, get_aval(prob).dtype, shape)
  k = lax.while_loop(cond, body, (jnp.asarray(0), zeros, zeros, key))[1]
  return (k - 1).astype(dtype)


def _binomial_btrs(key, count, prob, shape, dtype):
  """Hörmann's transformed rejection with squeeze (BTRS, "The generation of binomial random
  variates", 1993), every element drawing proposals until one is accepted."""
  stddev = jnp.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = jnp.floor((count + 1) * prob)
  float_dtype_ = get_aval(prob).dtype
  max_iters = _max_iters(dtype)

  def body(carry):
    i, k_out, accepted, rng = carry
    keys = _keys.split_keys(rng, (3,))
    rng = keys[0]
    u = _uniform(keys[1], 0., 1., shape=shape, dtype=float_dtype_) - 0.5
    v = _uniform(keys[2], 0., 1., shape=shape, dtype=float_dtype_)
    us = 0.5 - jnp.abs(u)
    accept_at_once = (us >= 0.07) & (v <= v_r)
    k = jnp.floor((2 * a / us + b) * u + c)
    out_of_range = (k < 0) | (k > count)
    log_v = jnp.log(v * alpha / (a / (us * us) + b))
    bound = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
             + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
             + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
             + _stirling_tail(m) + _stirling_tail(count - m)
             - _stirling_tail(k) - _stirling_tail(count - k))
    accept = accept_at_once | (~out_of_range & (log_v <= bound))
    return i + 1, lax.select(accept, k, k_out), accepted | accept, rng

  def cond(carry):
    i, _, accepted, _ = carry
    return jnp.any(~accepted) & (i < max_iters)

  k0 = lax.full_like(prob, -1, float_dtype_, shape)
  done0 = jnp.full(shape, False, bool)
  return lax.while_loop(cond, body, (jnp.asarray(0), k0, done0, key))[1].astype(dtype)


# log k! - (Stirling's approximation of it), for k = 0..9
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
  """The error of Stirling's formula for log k!: tabulated for k <= 9, else its series
  (evaluated, as JAX does, at k clamped to 9)."""
  dtype = get_aval(k).dtype
  table = jnp.array(_STIRLING_TAIL, dtype=dtype)
  small = k <= 9
  k = lax.clamp(lax.full((), 0.0, dtype), k, lax.full((), 9.0, dtype))
  kp1sq = (k + 1) * (k + 1)
  series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  return lax.select(small, table[jnp.asarray(jnp.floor(k), dtype=np.int32)], series)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Counts of each outcome (the last axis of `p`) in `n` trials: one binomial per
  outcome, of the trials left, with the probability renormalized over the outcomes left."""
  data, _ = unwrap("multinomial", key)
  n, p = _util.promote_inexact("multinomial", n, p)
  shape = p.shape if shape is None else _keys.shape_tuple(shape, "multinomial")
  dtype = (dtypes.default_float_dtype() if dtype is None
           else dtypes.canonicalize_user_dtype(dtype, "multinomial"))
  return compiled(_multinomial, shape=shape, dtype=dtype, unroll=unroll)(data, n, p)


def _multinomial(key, n, p, *, shape, dtype, unroll):
  n = jnp.broadcast_to(n, shape[:-1])
  p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
  left = lax.cumsum(p, 0, reverse=True)
  ratios = p / jnp.where(left == 0, 1, left)

  def step(remainder, ratio_key):
    ratio, k = ratio_key
    count = binomial(k, remainder, jnp.clip(ratio, 0, 1), dtype=get_aval(remainder).dtype)
    return remainder - count, count

  keys = _keys.split_keys(key, (ratios.shape[0],))
  _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
  return jnp.moveaxis(counts, 0, -1).astype(dtype)
