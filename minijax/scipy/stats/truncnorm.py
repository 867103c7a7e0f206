"""The normal distribution truncated to [a, b] (in standard units), shifted by loc and
scaled by scale.  The mass Φ(b) - Φ(a) is taken in logs, from the tail it is smaller in,
so that intervals far out in either tail keep their precision.  NaN unless a < b, as
scipy's."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats import norm
from minijax.scipy.stats._common import (compiled_when_eager, const, log_density,
                                         nan_unless, promote, standardize)


def _log_mass(a, b):
  """log(Φ(b) - Φ(a)) for a <= b: from the lower tail, or for an interval above 0 the same
  mass from the upper one (Φ(-a) - Φ(-b))."""
  upper = jnp.greater(a, 0)
  lo = jnp.where(upper, jnp.negative(b), a)
  hi = jnp.where(upper, jnp.negative(a), b)
  log_hi = special.log_ndtr(hi)
  return jnp.add(log_hi, jnp.log1p(jnp.negative(jnp.exp(jnp.subtract(special.log_ndtr(lo),
                                                                       log_hi)))))


def _args(name, x, a, b, loc, scale):
  x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
  return standardize(x, loc, scale), a, b, scale


@compiled_when_eager()
def logpdf(x, a, b, loc=0, scale=1):
  z, a, b, scale = _args("truncnorm.logpdf", x, a, b, loc, scale)
  out = jnp.subtract(norm.logpdf(z), jnp.add(_log_mass(a, b), jnp.log(scale)))
  out = log_density(out, jnp.logical_or(jnp.less(z, a), jnp.greater(z, b)))
  return nan_unless(jnp.less(a, b), out)


@compiled_when_eager()
def pdf(x, a, b, loc=0, scale=1):
  return jnp.exp(logpdf(x, a, b, loc, scale))


def _log_parts(name, x, a, b, loc, scale):
  """log P(X <= x) and log P(X > x), each from the smaller of the two masses (the larger
  one as log1p of minus the smaller), with their values outside [a, b]."""
  z, a, b, _ = _args(name, x, a, b, loc, scale)
  inside = jnp.clip(z, a, b)
  total = _log_mass(a, b)
  below = jnp.subtract(_log_mass(a, inside), total)
  above = jnp.subtract(_log_mass(inside, b), total)
  half = np.log(0.5)
  below, above = (jnp.where(jnp.greater(mine, half),
                            jnp.log1p(jnp.negative(jnp.exp(other))), mine)
                  for mine, other in ((below, above), (above, below)))
  low, high = jnp.less_equal(z, a), jnp.greater_equal(z, b)
  below = jnp.where(low, const(below, -np.inf), jnp.where(high, const(below, 0), below))
  above = jnp.where(high, const(above, -np.inf), jnp.where(low, const(above, 0), above))
  valid = jnp.less(a, b)
  return nan_unless(valid, below), nan_unless(valid, above)


@compiled_when_eager()
def logcdf(x, a, b, loc=0, scale=1):
  return _log_parts("truncnorm.logcdf", x, a, b, loc, scale)[0]


@compiled_when_eager()
def cdf(x, a, b, loc=0, scale=1):
  return jnp.exp(logcdf(x, a, b, loc, scale))


@compiled_when_eager()
def logsf(x, a, b, loc=0, scale=1):
  return _log_parts("truncnorm.logsf", x, a, b, loc, scale)[1]


@compiled_when_eager()
def sf(x, a, b, loc=0, scale=1):
  return jnp.exp(logsf(x, a, b, loc, scale))
