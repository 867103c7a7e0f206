"""The beta-binomial distribution: a binomial of n trials whose probability is
Beta(a, b), shifted by loc."""
from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import (compiled_when_eager, log_binom, log_density,
                                         off_lattice, promote)


@compiled_when_eager()
def logpmf(k, n, a, b, loc=0):
  k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
  y = jnp.subtract(k, loc)
  out = jnp.add(log_binom(n, y), jnp.subtract(
      special.betaln(jnp.add(y, a), jnp.add(jnp.subtract(n, y), b)), special.betaln(a, b)))
  outside = jnp.logical_or(jnp.logical_or(jnp.less(y, 0), jnp.greater(y, n)), off_lattice(y))
  return log_density(out, outside)


@compiled_when_eager()
def pmf(k, n, a, b, loc=0):
  return jnp.exp(logpmf(k, n, a, b, loc))
