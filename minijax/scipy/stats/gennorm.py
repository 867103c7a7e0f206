"""The generalized normal distribution with shape beta: density beta / (2 Γ(1/beta))
exp(-|x|^beta) (beta = 2: a normal of variance 1/2; beta = 1: the Laplace)."""
from __future__ import annotations


from minijax import lax
from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, promote


@compiled_when_eager()
def logpdf(x, beta):
  x, beta = promote("gennorm.logpdf", x, beta)
  log_normalizer = jnp.subtract(jnp.log(jnp.multiply(0.5, beta)), lax.lgamma(jnp.divide(1, beta)))
  return jnp.subtract(log_normalizer, jnp.power(jnp.abs(x), beta))


@compiled_when_eager()
def pdf(x, beta):
  return jnp.exp(logpdf(x, beta))


@compiled_when_eager()
def cdf(x, beta):
  x, beta = promote("gennorm.cdf", x, beta)
  half_mass = jnp.multiply(0.5, lax.igamma(jnp.reciprocal(beta), jnp.power(jnp.abs(x), beta)))
  return jnp.add(0.5, jnp.multiply(jnp.sign(x), half_mass))
