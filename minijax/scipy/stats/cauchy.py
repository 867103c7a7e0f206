"""The Cauchy distribution."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, const, promote, standardize


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
  z = standardize(x, loc, scale)
  return jnp.negative(jnp.add(jnp.log(jnp.multiply(np.pi, scale)), jnp.log1p(jnp.square(z))))


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  x, loc, scale = promote("cauchy.cdf", x, loc, scale)
  # 1/2 + arctan(z)/π written as arctan2(1, -z)/π: no cancellation in the lower tail, so
  # it keeps its relative precision there (as sf's upper tail does) and is 0 at -inf
  z = standardize(x, loc, scale)
  return jnp.multiply(1 / np.pi, jnp.arctan2(const(z, 1), jnp.negative(z)))


@compiled_when_eager()
def logcdf(x, loc=0, scale=1):
  x, loc, scale = promote("cauchy.logcdf", x, loc, scale)
  # log of the cdf below the median, log1p of minus the sf above it: both tails precise
  lower = jnp.less(x, loc)
  upper_tail = jnp.log1p(jnp.subtract(0, sf(x, loc, scale)))
  return jnp.where(lower, jnp.log(cdf(x, loc, scale)), upper_tail)


@compiled_when_eager()
def sf(x, loc=0, scale=1):
  x, loc, scale = promote("cauchy.sf", x, loc, scale)
  return cdf(jnp.negative(x), jnp.negative(loc), scale)


@compiled_when_eager()
def logsf(x, loc=0, scale=1):
  x, loc, scale = promote("cauchy.logsf", x, loc, scale)
  return logcdf(jnp.negative(x), jnp.negative(loc), scale)


def _standard_ppf(q):
  """tan(π (q - 1/2)) in the middle half, where q - 1/2 is exact; -cot(π q) below it and
  cot(π (1 - q)) above it, so that the tails keep their precision (±inf at 0 and 1, nan
  outside [0, 1])."""
  middle = jnp.tan(jnp.multiply(np.pi, jnp.subtract(q, 0.5)))
  lower = jnp.negative(jnp.reciprocal(jnp.tan(jnp.multiply(np.pi, q))))
  upper = jnp.reciprocal(jnp.tan(jnp.multiply(np.pi, jnp.subtract(1, q))))
  out = jnp.where(jnp.less(q, 0.25), lower, jnp.where(jnp.greater(q, 0.75), upper, middle))
  return jnp.where(jnp.logical_or(jnp.less(q, 0), jnp.greater(q, 1)), const(out, np.nan), out)


@compiled_when_eager()
def ppf(q, loc=0, scale=1):
  q, loc, scale = promote("cauchy.ppf", q, loc, scale)
  return jnp.add(jnp.multiply(_standard_ppf(q), scale), loc)


@compiled_when_eager()
def isf(q, loc=0, scale=1):
  q, loc, scale = promote("cauchy.isf", q, loc, scale)
  return jnp.add(jnp.multiply(jnp.negative(_standard_ppf(q)), scale), loc)
