"""The left-skewed Gumbel distribution (of minima), with location loc and scale."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, const, promote, standardize


def _z(name, x, loc, scale):
  x, loc, scale = promote(name, x, loc, scale)
  return standardize(x, loc, scale), scale


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  z, scale = _z("gumbel_l.logpdf", x, loc, scale)
  return jnp.subtract(jnp.subtract(z, jnp.exp(z)), jnp.log(scale))


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


@compiled_when_eager()
def logsf(x, loc=0, scale=1):
  z, _ = _z("gumbel_l.logsf", x, loc, scale)
  return jnp.negative(jnp.exp(z))


@compiled_when_eager()
def sf(x, loc=0, scale=1):
  return jnp.exp(logsf(x, loc, scale))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  return jnp.negative(jnp.expm1(logsf(x, loc, scale)))


@compiled_when_eager()
def logcdf(x, loc=0, scale=1):
  return jnp.log(cdf(x, loc, scale))


@compiled_when_eager()
def ppf(p, loc=0, scale=1):
  p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
  out = jnp.add(loc, jnp.multiply(scale, jnp.log(jnp.negative(jnp.log1p(jnp.negative(p))))))
  return jnp.where(jnp.logical_or(jnp.less(p, 0), jnp.greater(p, 1)), const(out, np.nan), out)
