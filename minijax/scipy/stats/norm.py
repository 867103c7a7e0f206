"""The normal distribution N(loc, scale²)."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, promote, standardize

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote("norm.logpdf", x, loc, scale)
  z = standardize(x, loc, scale)
  return jnp.subtract(jnp.multiply(-0.5, jnp.square(z)),
                      jnp.add(jnp.log(jnp.abs(scale)), _LOG_SQRT_2PI))


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  x, loc, scale = promote("norm.cdf", x, loc, scale)
  return special.ndtr(standardize(x, loc, scale))


@compiled_when_eager()
def logcdf(x, loc=0, scale=1):
  x, loc, scale = promote("norm.logcdf", x, loc, scale)
  return special.log_ndtr(standardize(x, loc, scale))


@compiled_when_eager()
def sf(x, loc=0, scale=1):
  x, loc, scale = promote("norm.sf", x, loc, scale)
  return special.ndtr(jnp.negative(standardize(x, loc, scale)))


@compiled_when_eager()
def logsf(x, loc=0, scale=1):
  x, loc, scale = promote("norm.logsf", x, loc, scale)
  return special.log_ndtr(jnp.negative(standardize(x, loc, scale)))


@compiled_when_eager()
def ppf(q, loc=0, scale=1):
  q, loc, scale = promote("norm.ppf", q, loc, scale)
  return jnp.add(jnp.multiply(special.ndtri(q), scale), loc)


@compiled_when_eager()
def isf(q, loc=0, scale=1):
  q, loc, scale = promote("norm.isf", q, loc, scale)
  # the normal is symmetric: isf(q) = -ppf(q), which keeps small q's precision
  return jnp.subtract(loc, jnp.multiply(special.ndtri(q), scale))
