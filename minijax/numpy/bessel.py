"""The modified Bessel functions of orders 0 and 1, `i0`, `i0e`, `i1`, `i1e`: what
`numpy.i0` and `numpy.kaiser` need, and `minijax.scipy.special` exports; the scaled ones are
lax's `bessel_i0e` and `bessel_i1e`, the others scale them back by `e^|x|` (`numpy.i0` as
`e^|x| i0e(|x|)` with a zero derivative at 0, scipy's `i0`, `i1` as `e^|x| i0e(x)`,
`e^|x| i1e(x)`: JAX's forms, whose roundings these are)."""
from __future__ import annotations

import minijax.numpy as jnp
from minijax import lax
from minijax.custom_derivatives import custom_jvp


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
  """The modified Bessel function of order 0 (scipy's)."""
  x = as_inexact(x)
  return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1(x):
  """The modified Bessel function of order 1."""
  x = as_inexact(x)
  return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


@custom_jvp
def numpy_i0(x):
  """`numpy.i0` of a real floating `x`."""
  ax = lax.abs(x)
  return lax.mul(lax.exp(ax), lax.bessel_i0e(ax))


@numpy_i0.defjvp
def _numpy_i0_jvp(primals, tangents):
  from minijax.api import jvp
  out, tangent = jvp(numpy_i0.fun, primals, tangents)
  return out, jnp.where(primals[0] == 0, 0.0, tangent)
