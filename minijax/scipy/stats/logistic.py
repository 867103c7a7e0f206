"""The logistic distribution."""
from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, promote, standardize


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote("logistic.logpdf", x, loc, scale)
  half = jnp.multiply(0.5, standardize(x, loc, scale))
  # log(e^-z / (1 + e^-z)^2) = -2 log(e^(z/2) + e^(-z/2)), symmetric and overflow-free
  return jnp.subtract(jnp.multiply(-2, jnp.logaddexp(half, jnp.negative(half))),
                      jnp.log(scale))


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  x, loc, scale = promote("logistic.cdf", x, loc, scale)
  return special.expit(standardize(x, loc, scale))


@compiled_when_eager()
def sf(x, loc=0, scale=1):
  x, loc, scale = promote("logistic.sf", x, loc, scale)
  return special.expit(jnp.negative(standardize(x, loc, scale)))


@compiled_when_eager()
def ppf(x, loc=0, scale=1):
  x, loc, scale = promote("logistic.ppf", x, loc, scale)
  return jnp.add(jnp.multiply(special.logit(x), scale), loc)


@compiled_when_eager()
def isf(x, loc=0, scale=1):
  x, loc, scale = promote("logistic.isf", x, loc, scale)
  return jnp.subtract(loc, jnp.multiply(special.logit(x), scale))
