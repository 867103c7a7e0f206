"""The modified Bessel functions of orders 0 and 1, `i0`, `i0e`, `i1`, `i1e`: what
`numpy.i0` and `numpy.kaiser` need, and `minijax.scipy.special` exports.

Each is evaluated in the input's floating dtype with two regimes joined by `where`: the
power series `I_n(x) = (x/2)^n sum_k (x^2/4)^k / (k! (k+n)!)` up to |x| = 15, the
large-argument expansion `e^|x| / sqrt(2 pi |x|) sum_k a_k / |x|^k` above.  Derivatives
are the closed forms (`custom_jvp`)."""
from __future__ import annotations

import math

import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.custom_derivatives import custom_jvp

_BESSEL_SWITCH = 15.0
_SERIES_TERMS = 60


def as_inexact(x):
  dtype = jnp.result_type(x)
  return jnp.asarray(x, dtype if jnp.issubdtype(dtype, jnp.inexact) else jnp.result_type(x, 1.0))


def _bessel_series(x, n: int):
  """`I_n(x)` by its power series."""
  q = x * x / 4

  def body(k, carry):
    term, total = carry
    term = term * q / (k * (k + n))
    return term, total + term

  first = jnp.ones_like(x) / math.factorial(n)
  _, total = lax.fori_loop(1, _SERIES_TERMS, body, (first, first))
  return total * (x / 2) ** n


def _bessel_asymptotic_scaled(ax, n: int):
  """`e^-|x| I_n(|x|)` for large |x| by the asymptotic expansion."""
  mu = 4.0 * n * n
  total, term = jnp.ones_like(ax), jnp.ones_like(ax)
  for k in range(1, 12):
    term = term * -(mu - (2 * k - 1) ** 2) / (k * 8 * ax)
    total = total + term
  return total / jnp.sqrt(2 * np.pi * ax)


def _bessel_scaled(x, n: int):
  ax = jnp.abs(x)
  small = ax <= _BESSEL_SWITCH
  series = _bessel_series(jnp.where(small, x, 0), n) * jnp.exp(-jnp.where(small, ax, 0))
  large = _bessel_asymptotic_scaled(jnp.where(small, _BESSEL_SWITCH * 2, ax), n)
  if n % 2:
    large = jnp.sign(x) * large
  return jnp.where(small, series, large)


@custom_jvp
def i0e(x):
  """The exponentially scaled modified Bessel function of order 0, `e^-|x| I0(x)`."""
  return _bessel_scaled(as_inexact(x), 0)


@custom_jvp
def i1e(x):
  """The exponentially scaled modified Bessel function of order 1, `e^-|x| I1(x)`."""
  return _bessel_scaled(as_inexact(x), 1)


@i0e.defjvp
def _i0e_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return i0e(x), (i1e(x) - jnp.sign(x) * i0e(x)) * t


@i1e.defjvp
def _i1e_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  x = as_inexact(x)
  safe = jnp.where(x == 0, 1, x)
  slope = jnp.where(x == 0, 0.5, i0e(x) - i1e(x) * (jnp.sign(x) + 1 / safe))
  return i1e(x), slope * t


def i0(x):
  """The modified Bessel function of order 0."""
  x = as_inexact(x)
  return i0e(x) * jnp.exp(jnp.abs(x))


def i1(x):
  """The modified Bessel function of order 1."""
  x = as_inexact(x)
  return i1e(x) * jnp.exp(jnp.abs(x))
