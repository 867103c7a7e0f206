"""The uniform distribution on [loc, loc + scale]."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, const, promote


def _outside(x, loc, scale):
  return jnp.logical_or(jnp.less(x, loc), jnp.greater(x, jnp.add(loc, scale)))


@compiled_when_eager()
def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote("uniform.logpdf", x, loc, scale)
  out = jnp.negative(jnp.log(scale))
  return jnp.where(_outside(x, loc, scale), const(out, -np.inf), out)


@compiled_when_eager()
def pdf(x, loc=0, scale=1):
  return jnp.exp(logpdf(x, loc, scale))


@compiled_when_eager()
def cdf(x, loc=0, scale=1):
  x, loc, scale = promote("uniform.cdf", x, loc, scale)
  inside = jnp.divide(jnp.subtract(x, loc), scale)
  return jnp.where(jnp.less(x, loc), const(x, 0),
                   jnp.where(jnp.greater(x, jnp.add(loc, scale)), const(x, 1), inside))


@compiled_when_eager()
def ppf(q, loc=0, scale=1):
  q, loc, scale = promote("uniform.ppf", q, loc, scale)
  out = jnp.add(loc, jnp.multiply(scale, q))
  outside = jnp.logical_or(jnp.isnan(q), jnp.logical_or(jnp.less(q, 0), jnp.greater(q, 1)))
  return jnp.where(outside, const(out, np.nan), out)
