"""The negative binomial distribution: k failures before the n-th success of probability
p, shifted by loc."""
from __future__ import annotations

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, log_density, off_lattice, promote


@compiled_when_eager()
def logpmf(k, n, p, loc=0):
  k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
  y = jnp.subtract(k, loc)
  log_comb = jnp.subtract(lax.lgamma(jnp.add(n, y)),
                          jnp.add(lax.lgamma(jnp.add(y, 1)), lax.lgamma(n)))
  out = jnp.add(log_comb, jnp.add(special.xlogy(n, p), special.xlog1py(y, jnp.negative(p))))
  return log_density(out, jnp.logical_or(jnp.less(y, 0), off_lattice(y)))


@compiled_when_eager()
def pmf(k, n, p, loc=0):
  return jnp.exp(logpmf(k, n, p, loc))
