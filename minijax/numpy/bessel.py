"""The modified Bessel functions of orders 0 and 1, `i0`, `i0e`, `i1`, `i1e`: what
`numpy.i0` and `numpy.kaiser` need, and `minijax.scipy.special` exports; the scaled ones are
lax's `bessel_i0e` and `bessel_i1e`, the others scale them back by `e^|x|`."""
from __future__ import annotations

import minijax.numpy as jnp
from minijax import lax


def as_inexact(x):
  dtype = jnp.result_type(x)
  return jnp.asarray(x, dtype if jnp.issubdtype(dtype, jnp.inexact) else jnp.result_type(x, 1.0))


def i0e(x):
  """The exponentially scaled modified Bessel function of order 0, `e^-|x| I0(x)`."""
  return lax.bessel_i0e(as_inexact(x))


def i1e(x):
  """The exponentially scaled modified Bessel function of order 1, `e^-|x| I1(x)`."""
  return lax.bessel_i1e(as_inexact(x))


def i0(x):
  """The modified Bessel function of order 0."""
  x = as_inexact(x)
  return i0e(x) * jnp.exp(jnp.abs(x))


def i1(x):
  """The modified Bessel function of order 1."""
  x = as_inexact(x)
  return i1e(x) * jnp.exp(jnp.abs(x))
