"""The Poisson distribution with mean mu, shifted by loc."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, const, off_lattice, promote


@compiled_when_eager()
def logpmf(k, mu, loc=0):
  k, mu, loc = promote("poisson.logpmf", k, mu, loc)
  x = jnp.subtract(k, loc)
  out = jnp.subtract(jnp.subtract(special.xlogy(x, mu), lax.lgamma(jnp.add(x, 1))), mu)
  off_support = jnp.logical_or(jnp.less(x, 0), off_lattice(x))
  return jnp.where(off_support, const(out, -np.inf), out)


@compiled_when_eager()
def pmf(k, mu, loc=0):
  return jnp.exp(logpmf(k, mu, loc))


@compiled_when_eager()
def cdf(k, mu, loc=0):
  k, mu, loc = promote("poisson.cdf", k, mu, loc)
  x = jnp.subtract(k, loc)
  # P(X <= x) = Q(floor(x) + 1, mu)
  below = jnp.less(x, 0)
  upper = jnp.add(jnp.floor(jnp.where(below, const(x, 0), x)), 1)
  return jnp.where(below, const(x, 0), lax.igammac(upper, mu))


# Below 500 the entropy is summed: the series' first neglected term (about 0.1/mu^4) is
# then larger than the sum's rounding (which grows with lgamma(mu)); above, the series.
_SUMMED_BELOW = 500
_WINDOW = 300  # 12 standard deviations (and 30 more terms) at the largest summed mu


def _entropy_by_sum(mu):
  """-Σ_k p_k log p_k over the 2·_WINDOW values of k around the mode (the rest of the sum
  is below rounding for mu < _SUMMED_BELOW)."""
  start = jnp.maximum(jnp.floor(jnp.subtract(mu, _WINDOW)), const(mu, 0))
  k = jnp.add(jnp.expand_dims(jnp.arange(2 * _WINDOW, dtype=mu.dtype), -1), start)
  log_p = jnp.subtract(jnp.subtract(special.xlogy(k, mu), lax.lgamma(jnp.add(k, 1))), mu)
  return jnp.negative(jnp.sum(jnp.multiply(jnp.exp(log_p), log_p), axis=0))


@compiled_when_eager()
def entropy(mu, loc=0):
  """The entropy in nats: a direct sum around the mode for mu < 500, and the asymptotic
  series ½ log(2πe mu) - 1/(12 mu) - 1/(24 mu²) - 19/(360 mu³) beyond."""
  mu, loc = promote("poisson.entropy", mu, loc)
  shape = mu.shape
  flat = jnp.ravel(mu)
  summed = jnp.less(flat, _SUMMED_BELOW)
  by_sum = _entropy_by_sum(jnp.where(summed, flat, const(flat, 1)))
  big = jnp.maximum(flat, const(flat, _SUMMED_BELOW))
  inv = jnp.reciprocal(big)
  series = jnp.subtract(jnp.multiply(0.5, jnp.log(jnp.multiply(2 * np.pi * np.e, big))),
                        jnp.multiply(inv, jnp.add(1 / 12, jnp.multiply(inv, jnp.add(
                            1 / 24, jnp.multiply(inv, 19 / 360))))))
  out = jnp.where(summed, by_sum, series)
  out = jnp.where(jnp.equal(flat, 0), const(out, 0), out)
  return jnp.reshape(out, shape)
