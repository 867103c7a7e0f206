"""The Pareto distribution with shape b on [1, inf), shifted by loc and scaled by scale."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._common import (compiled_when_eager, const, log_density, promote,
                                         standardize)


def _z(name, x, b, loc, scale):
  x, b, loc, scale = promote(name, x, b, loc, scale)
  return standardize(x, loc, scale), b, scale


@compiled_when_eager()
def logpdf(x, b, loc=0, scale=1):
  z, b, scale = _z("pareto.logpdf", x, b, loc, scale)
  out = jnp.subtract(jnp.log(b), jnp.add(jnp.log(scale),
                                         jnp.multiply(jnp.add(b, 1), jnp.log(z))))
  return log_density(out, jnp.less(z, 1))


@compiled_when_eager()
def pdf(x, b, loc=0, scale=1):
  return jnp.exp(logpdf(x, b, loc, scale))


@compiled_when_eager()
def logsf(x, b, loc=0, scale=1):
  z, b, _ = _z("pareto.logsf", x, b, loc, scale)
  return jnp.where(jnp.less(z, 1), const(z, 0),
                   jnp.multiply(jnp.negative(b), jnp.log(jnp.maximum(z, const(z, 1)))))


@compiled_when_eager()
def sf(x, b, loc=0, scale=1):
  return jnp.exp(logsf(x, b, loc, scale))


@compiled_when_eager()
def cdf(x, b, loc=0, scale=1):
  return jnp.subtract(0, jnp.expm1(logsf(x, b, loc, scale)))  # +0 below the scale


@compiled_when_eager()
def logcdf(x, b, loc=0, scale=1):
  return jnp.log1p(jnp.negative(sf(x, b, loc, scale)))


@compiled_when_eager()
def ppf(q, b, loc=0, scale=1):
  q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
  out = jnp.add(jnp.multiply(scale, jnp.power(jnp.subtract(1, q), jnp.negative(
      jnp.reciprocal(b)))), loc)
  return jnp.where(jnp.logical_or(jnp.less(q, 0), jnp.greater(q, 1)), const(out, np.nan), out)
