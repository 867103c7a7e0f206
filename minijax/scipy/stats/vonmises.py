"""The von Mises distribution on the circle, with concentration kappa >= 0 (about 0);
NaN for a negative kappa, as scipy's."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy import special
from minijax.scipy.stats._common import compiled_when_eager, nan_unless, promote


@compiled_when_eager()
def logpdf(x, kappa):
  x, kappa = promote("vonmises.logpdf", x, kappa)
  # kappa cos x - log(2π I0(kappa)), with I0 scaled (i0e) so large kappa does not overflow
  out = jnp.subtract(jnp.multiply(kappa, jnp.subtract(jnp.cos(x), 1)),
                     jnp.add(np.log(2 * np.pi), jnp.log(special.i0e(kappa))))
  return nan_unless(jnp.greater_equal(kappa, 0), out)


@compiled_when_eager()
def pdf(x, kappa):
  return jnp.exp(logpdf(x, kappa))
