"""The normal distribution N(loc, scale²)."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, promote, standardize

@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote("norm.logpdf", x, loc, scale)
  # JAX's order of operations, so the values and derivatives are its bits:
  # -(log(2π scale²) + (x - loc)² / scale²) / 2
  variance = jnp.square(scale)
  log_normalizer = jnp.log(jnp.multiply(2 * np.pi, variance))
  return jnp.divide(jnp.add(log_normalizer, jnp.divide(jnp.square(jnp.subtract(x, loc)), variance)),
                    -2)


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
  # in the default float dtype whatever q's (float64 under x64), as JAX's
  return jnp.asarray(jnp.add(jnp.multiply(special.ndtri(q), scale), loc), float)


@compiled_when_eager()
def isf(q, loc=0, scale=1):
  q, loc, scale = promote("norm.isf", q, loc, scale)
  # the normal is symmetric: isf(q) = -ppf(q), which keeps small q's precision
  return jnp.asarray(jnp.subtract(loc, jnp.multiply(special.ndtri(q), scale)), float)
