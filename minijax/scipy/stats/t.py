"""Student's t distribution with df degrees of freedom."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy.stats._common import compiled_when_eager, promote, standardize


@compiled_when_eager()
def logpdf(x, df, loc=0, scale=1):
  x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
  z = standardize(x, loc, scale)
  half_df = jnp.divide(df, 2)
  half_df_plus = jnp.add(half_df, 0.5)
  # log Γ((ν+1)/2) - log Γ(ν/2) - log(scale √(νπ)) - (ν+1)/2 log(1 + z²/ν)
  norm = jnp.subtract(lax.lgamma(half_df_plus), lax.lgamma(half_df))
  norm = jnp.subtract(norm, jnp.multiply(0.5, jnp.log(jnp.multiply(
      jnp.multiply(jnp.square(scale), np.pi), df))))
  return jnp.subtract(norm, jnp.multiply(half_df_plus, jnp.log1p(jnp.divide(jnp.square(z),
                                                                             df))))


@compiled_when_eager()
def pdf(x, df, loc=0, scale=1):
  return jnp.exp(logpdf(x, df, loc, scale))
