"""The chi-squared distribution with df degrees of freedom: a gamma of shape df/2 and
scale 2, shifted by loc and scaled by scale.  Every function is NaN where df <= 0, as
scipy's (the gamma's own formulas answer there, at x below loc)."""
from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.stats import gamma
from minijax.scipy.stats._common import compiled_when_eager, nan_unless, promote


def _as_gamma(name, x, df, loc, scale):
  x, df, loc, scale = promote(name, x, df, loc, scale)
  return x, jnp.divide(df, 2), loc, jnp.multiply(scale, 2)


@compiled_when_eager()
def logpdf(x, df, loc=0, scale=1):
  return nan_unless(jnp.greater(df, 0), gamma.logpdf(*_as_gamma("chi2.logpdf", x, df, loc, scale)))


@compiled_when_eager()
def pdf(x, df, loc=0, scale=1):
  return jnp.exp(logpdf(x, df, loc, scale))


@compiled_when_eager()
def cdf(x, df, loc=0, scale=1):
  return nan_unless(jnp.greater(df, 0), gamma.cdf(*_as_gamma("chi2.cdf", x, df, loc, scale)))


@compiled_when_eager()
def logcdf(x, df, loc=0, scale=1):
  return jnp.log(cdf(x, df, loc, scale))


@compiled_when_eager()
def sf(x, df, loc=0, scale=1):
  return nan_unless(jnp.greater(df, 0), gamma.sf(*_as_gamma("chi2.sf", x, df, loc, scale)))


@compiled_when_eager()
def logsf(x, df, loc=0, scale=1):
  return jnp.log(sf(x, df, loc, scale))

