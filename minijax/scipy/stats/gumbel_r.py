"""The right-skewed Gumbel distribution (of maxima), with location loc and scale."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, const, promote, standardize


def _z(name, x, loc, scale):
  x, loc, scale = promote(name, x, loc, scale)
  return standardize(x, loc, scale), scale


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  z, scale = _z("gumbel_r.logpdf", x, loc, scale)
  return jnp.negative(jnp.add(jnp.add(z, jnp.exp(jnp.negative(z))), jnp.log(scale)))


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


@compiled_when_eager()
def logcdf(x, loc=0, scale=1):
  z, _ = _z("gumbel_r.logcdf", x, loc, scale)
  return jnp.negative(jnp.exp(jnp.negative(z)))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  return jnp.exp(logcdf(x, loc, scale))


@compiled_when_eager()
def sf(x, loc=0, scale=1):
  return jnp.negative(jnp.expm1(logcdf(x, loc, scale)))


@compiled_when_eager()
def logsf(x, loc=0, scale=1):
  return jnp.log(sf(x, loc, scale))


@compiled_when_eager()
def ppf(p, loc=0, scale=1):
  p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
  out = jnp.subtract(loc, jnp.multiply(scale, jnp.log(jnp.negative(jnp.log(p)))))
  return jnp.where(jnp.logical_or(jnp.less(p, 0), jnp.greater(p, 1)), const(out, np.nan), out)
