"""The beta distribution on [loc, loc + scale]."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, const, promote, standardize


@compiled_when_eager()
def logpdf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
  y = standardize(x, loc, scale)
  # (a-1) log y + (b-1) log(1-y) - log B(a, b) - log scale, with 0 log 0 = 0 at the ends
  out = jnp.add(special.xlogy(jnp.subtract(a, 1), y),
                special.xlog1py(jnp.subtract(b, 1), jnp.negative(y)))
  out = jnp.subtract(jnp.subtract(out, special.betaln(a, b)), jnp.log(scale))
  outside = jnp.logical_or(jnp.less(x, loc), jnp.greater(x, jnp.add(loc, scale)))
  out = jnp.where(outside, const(out, -np.inf), out)
  bad = jnp.logical_or(jnp.logical_or(jnp.less_equal(a, 0), jnp.less_equal(b, 0)),
                       jnp.less_equal(scale, 0))
  return jnp.where(bad, const(out, np.nan), out)


@compiled_when_eager()
def pdf(x, a, b, loc=0, scale=1):
  return jnp.exp(logpdf(x, a, b, loc, scale))


def _clipped(name, x, a, b, loc, scale):
  x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
  return a, b, lax.clamp(const(x, 0), standardize(x, loc, scale), const(x, 1))


@compiled_when_eager()
def cdf(x, a, b, loc=0, scale=1):
  a, b, y = _clipped("beta.cdf", x, a, b, loc, scale)
  return lax.betainc(a, b, y)


@compiled_when_eager()
def logcdf(x, a, b, loc=0, scale=1):
  return jnp.log(cdf(x, a, b, loc, scale))


@compiled_when_eager()
def sf(x, a, b, loc=0, scale=1):
  a, b, y = _clipped("beta.sf", x, a, b, loc, scale)
  return lax.betainc(b, a, jnp.subtract(1, y))


@compiled_when_eager()
def logsf(x, a, b, loc=0, scale=1):
  return jnp.log(sf(x, a, b, loc, scale))
