"""The gamma distribution with shape a > 0 (NaN for any other a, as scipy's), shifted by loc
and scaled by scale."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import (compiled_when_eager, const, nan_unless, promote,
                                         standardize)


@compiled_when_eager()
def logpdf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
  below = jnp.less(x, loc)  # not at NaN, which stays NaN, as scipy's
  y = jnp.where(below, const(x, 1), standardize(x, loc, scale))
  # (a-1) log y - y - log Γ(a) - log scale, with 0 log 0 = 0 at y = 0
  out = jnp.subtract(jnp.subtract(special.xlogy(jnp.subtract(a, 1), y), y),
                     jnp.add(lax.lgamma(a), jnp.log(scale)))
  return nan_unless(jnp.greater(a, 0), jnp.where(below, const(out, -np.inf), out))


@compiled_when_eager()
def pdf(x, a, loc=0, scale=1):
  return jnp.exp(logpdf(x, a, loc, scale))


@compiled_when_eager()
def cdf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
  y = standardize(x, loc, scale)
  below = jnp.less(y, 0)
  # below 0: igamma(a, 0) (0, or NaN for a <= 0), with no path to x for the gradient, whose
  # igamma(a, x) derivative is infinite at x = 0 for a < 1
  at_zero = lax.igamma(a, const(y, 0))
  out = jnp.where(below, at_zero, lax.igamma(a, jnp.where(below, const(y, 1), y)))
  return nan_unless(jnp.greater(a, 0), out)


@compiled_when_eager()
def logcdf(x, a, loc=0, scale=1):
  return jnp.log(cdf(x, a, loc, scale))


@compiled_when_eager()
def sf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
  y = standardize(x, loc, scale)
  below = jnp.less(y, 0)
  out = jnp.where(below, const(y, 1), lax.igammac(a, jnp.where(below, const(y, 0), y)))
  return nan_unless(jnp.greater(a, 0), out)


@compiled_when_eager()
def logsf(x, a, loc=0, scale=1):
  return jnp.log(sf(x, a, loc, scale))
