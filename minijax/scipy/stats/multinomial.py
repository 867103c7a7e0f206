"""The multinomial distribution: counts x (summing to n, along the last axis) of n draws
among categories of probabilities p."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager


@compiled_when_eager()
def logpmf(x, n, p):
  x, n, p = jnp.asarray(x), jnp.asarray(n), jnp.asarray(p)
  counts = jnp.result_type(x, n)
  if not jnp.issubdtype(counts, jnp.integer):
    raise ValueError(f"x and n must be of integer type; got x.dtype={counts}, "
                     f"n.dtype={counts}")
  p = p.astype(jnp.result_type(p.dtype, float))
  x, n = x.astype(p.dtype), n.astype(p.dtype)
  total = special.gammaln(n + 1) + jnp.sum(special.xlogy(x, p) - special.gammaln(x + 1), -1)
  return jnp.where(jnp.sum(x, -1) == n, total, -np.inf)


@compiled_when_eager()
def pmf(x, n, p):
  return jnp.exp(logpmf(x, n, p))
