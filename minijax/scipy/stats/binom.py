"""The binomial distribution: k successes in n trials of probability p, shifted by loc."""
from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import (compiled_when_eager, log_binom, log_density,
                                         off_lattice, promote)


@compiled_when_eager()
def logpmf(k, n, p, loc=0):
  k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
  y = jnp.subtract(k, loc)
  out = jnp.add(log_binom(n, y), jnp.add(special.xlogy(y, p),
                                         special.xlog1py(jnp.subtract(n, y), jnp.negative(p))))
  outside = jnp.logical_or(jnp.logical_or(jnp.less(y, 0), jnp.greater(y, n)), off_lattice(y))
  return log_density(out, outside)


@compiled_when_eager()
def pmf(k, n, p, loc=0):
  return jnp.exp(logpmf(k, n, p, loc))
