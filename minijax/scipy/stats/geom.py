"""The geometric distribution: the trial (from 1) of the first success of probability p,
shifted by loc."""
from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, log_density, off_lattice, promote


@compiled_when_eager()
def logpmf(k, p, loc=0):
  k, p, loc = promote("geom.logpmf", k, p, loc)
  y = jnp.subtract(k, loc)
  out = jnp.add(special.xlog1py(jnp.subtract(y, 1), jnp.negative(p)), jnp.log(p))
  return log_density(out, jnp.logical_or(jnp.less(y, 1), off_lattice(y)))


@compiled_when_eager()
def pmf(k, p, loc=0):
  return jnp.exp(logpmf(k, p, loc))
