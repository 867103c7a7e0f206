"""The wrapped Cauchy distribution on [0, 2π], with shape c in (0, 1) (NaN for any other c,
as scipy's)."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, log_density, nan_unless, promote


@compiled_when_eager()
def logpdf(x, c):
  x, c = promote("wrapcauchy.logpdf", x, c)
  out = jnp.subtract(jnp.log1p(jnp.negative(jnp.square(c))), jnp.add(np.log(2 * np.pi), jnp.log(
      jnp.subtract(jnp.add(1, jnp.square(c)), jnp.multiply(jnp.multiply(2, c), jnp.cos(x))))))
  out = log_density(out, jnp.logical_or(jnp.less(x, 0), jnp.greater(x, 2 * np.pi)))
  return nan_unless(jnp.logical_and(jnp.greater(c, 0), jnp.less(c, 1)), out)


@compiled_when_eager()
def pdf(x, c):
  return jnp.exp(logpdf(x, c))
