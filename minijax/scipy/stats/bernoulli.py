"""The Bernoulli distribution: 1 with probability p, else 0 (shifted by loc)."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, const, promote


def _bad_p(p):
  return jnp.logical_or(jnp.isnan(p), jnp.logical_or(jnp.less(p, 0), jnp.greater(p, 1)))


@compiled_when_eager()
def logpmf(k, p, loc=0):
  k, p, loc = promote("bernoulli.logpmf", k, p, loc)
  x = jnp.subtract(k, loc)
  # x log p + (1 - x) log(1 - p), with 0 log 0 = 0
  out = jnp.add(special.xlogy(x, p), special.xlog1py(jnp.subtract(1, x), jnp.negative(p)))
  return jnp.where(jnp.logical_or(jnp.less(x, 0), jnp.greater(x, 1)), const(out, -np.inf), out)


@compiled_when_eager()
def pmf(k, p, loc=0):
  return jnp.exp(logpmf(k, p, loc))


@compiled_when_eager()
def cdf(k, p):
  k, p = promote("bernoulli.cdf", k, p)
  out = jnp.where(jnp.less(k, 0), const(k, 0),
                  jnp.where(jnp.less(k, 1), jnp.subtract(1, p), const(k, 1)))
  return jnp.where(jnp.logical_or(jnp.isnan(k), _bad_p(p)), const(out, np.nan), out)


@compiled_when_eager()
def ppf(q, p):
  q, p = promote("bernoulli.ppf", q, p)
  out = jnp.where(jnp.less_equal(q, jnp.subtract(1, p)), const(q, 0), const(q, 1))
  bad = jnp.logical_or(jnp.logical_or(jnp.isnan(q), _bad_p(p)),
                       jnp.logical_or(jnp.less(q, 0), jnp.greater(q, 1)))
  return jnp.where(bad, const(out, np.nan), out)
