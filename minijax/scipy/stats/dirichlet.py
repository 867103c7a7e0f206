"""The Dirichlet distribution over the simplex, with concentrations alpha (K of them).

`x` holds the K coordinates along its first axis (or K - 1 of them, the last being one
less their sum), one point per remaining position; a point off the simplex (a coordinate
outside [0, 1], or coordinates not summing to 1) has density 0."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, const, promote


@compiled_when_eager()
def logpdf(x, alpha):
  x, alpha = (jnp.asarray(v) for v in (x, alpha))
  if alpha.ndim != 1:
    raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
  if x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                     f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
  x, = promote("dirichlet.logpdf", x)
  alpha = alpha.astype(x.dtype)
  if x.shape[0] != alpha.shape[0]:
    x = jnp.concatenate([x, jnp.subtract(1, jnp.sum(x, 0, keepdims=True))], axis=0)
  a = jnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
  norm = jnp.subtract(jnp.sum(lax.lgamma(alpha)), lax.lgamma(jnp.sum(alpha)))
  out = jnp.subtract(jnp.sum(special.xlogy(jnp.subtract(a, 1), x), axis=0), norm)
  on_simplex = jnp.logical_and(
      jnp.all(jnp.logical_and(jnp.greater_equal(x, 0), jnp.less_equal(x, 1)), axis=0),
      jnp.less(jnp.abs(jnp.subtract(jnp.sum(x, axis=0), 1)), 1e-6 if x.dtype == np.float32
               else 1e-12))
  return jnp.where(on_simplex, out, const(out, -np.inf))


@compiled_when_eager()
def pdf(x, alpha):
  return jnp.exp(logpdf(x, alpha))
