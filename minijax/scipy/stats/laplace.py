"""The Laplace (double exponential) distribution."""
from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, promote, standardize


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote("laplace.logpdf", x, loc, scale)
  return jnp.negative(jnp.add(jnp.abs(standardize(x, loc, scale)),
                              jnp.log(jnp.multiply(2, scale))))


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  x, loc, scale = promote("laplace.cdf", x, loc, scale)
  z = standardize(x, loc, scale)
  below = jnp.multiply(0.5, jnp.exp(jnp.minimum(z, 0)))
  above = jnp.subtract(1, jnp.multiply(0.5, jnp.exp(jnp.negative(jnp.maximum(z, 0)))))
  return jnp.where(jnp.less_equal(z, 0), below, above)
