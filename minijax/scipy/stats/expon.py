"""The exponential distribution with rate 1/scale, shifted to start at loc."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, const, promote, standardize


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote("expon.logpdf", x, loc, scale)
  out = jnp.negative(jnp.add(standardize(x, loc, scale), jnp.log(scale)))
  return jnp.where(jnp.less(x, loc), const(out, -np.inf), out)


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


def _neg_z(name, x, loc, scale):
  x, loc, scale = promote(name, x, loc, scale)
  return x, loc, jnp.divide(jnp.subtract(loc, x), scale)


@compiled_when_eager()
def logsf(x, loc=0, scale=1):
  x, loc, neg_z = _neg_z("expon.logsf", x, loc, scale)
  return jnp.where(jnp.less(x, loc), jnp.zeros_like(neg_z), neg_z)


@compiled_when_eager()
def sf(x, loc=0, scale=1):
  return jnp.exp(logsf(x, loc, scale))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  x, loc, neg_z = _neg_z("expon.cdf", x, loc, scale)
  return jnp.where(jnp.less(x, loc), jnp.zeros_like(neg_z), jnp.negative(jnp.expm1(neg_z)))


@compiled_when_eager()
def logcdf(x, loc=0, scale=1):
  return jnp.log1p(jnp.negative(sf(x, loc, scale)))


@compiled_when_eager()
def ppf(q, loc=0, scale=1):
  q, loc, scale = promote("expon.ppf", q, loc, scale)
  out = jnp.subtract(loc, jnp.multiply(scale, jnp.log1p(jnp.negative(q))))
  outside = jnp.logical_or(jnp.isnan(q), jnp.logical_or(jnp.less(q, 0), jnp.greater(q, 1)))
  return jnp.where(outside, const(out, np.nan), out)
