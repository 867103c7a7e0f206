"""Special functions computed from their series and continued fractions: the modified
Bessel functions `i0`, `i0e`, `i1`, `i1e` and the exponential integrals `expi`, `exp1`.

Each is evaluated in the input's floating dtype with two regimes joined by `where`:
- Bessel: the power series `I_n(x) = (x/2)^n sum_k (x^2/4)^k / (k! (k+n)!)` up to
  |x| = 15, the large-argument expansion `e^|x| / sqrt(2 pi |x|) sum_k a_k / |x|^k` above;
- `expi(x)`, x > 0: the series `gamma + ln x + sum_k x^k / (k k!)` up to x = 40, the
  asymptotic series `e^x / x sum_k k! / x^k` above; x < 0: `-exp1(-x)`;
- `exp1(z)`: the series `-gamma - ln z - sum_k (-z)^k / (k k!)` up to z = 1, the continued
  fraction of `e^-z / (z + 1 / (1 + 1 / (z + 2 / (1 + ...))))` (Lentz) above.
Derivatives are the closed forms (`custom_jvp`)."""
from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.custom_derivatives import custom_jvp

_EULER = 0.5772156649015329
_BESSEL_SWITCH = 15.0
_SERIES_TERMS = 60


def _float(x):
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
  return _bessel_scaled(_float(x), 0)


@custom_jvp
def i1e(x):
  """The exponentially scaled modified Bessel function of order 1, `e^-|x| I1(x)`."""
  return _bessel_scaled(_float(x), 1)


@i0e.defjvp
def _i0e_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return i0e(x), (i1e(x) - jnp.sign(x) * i0e(x)) * t


@i1e.defjvp
def _i1e_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  x = _float(x)
  safe = jnp.where(x == 0, 1, x)
  slope = jnp.where(x == 0, 0.5, i0e(x) - i1e(x) * (jnp.sign(x) + 1 / safe))
  return i1e(x), slope * t


def i0(x):
  """The modified Bessel function of order 0."""
  x = _float(x)
  return i0e(x) * jnp.exp(jnp.abs(x))


def i1(x):
  """The modified Bessel function of order 1."""
  x = _float(x)
  return i1e(x) * jnp.exp(jnp.abs(x))


def _expi_positive(x):
  small = x <= 40.0
  xs = jnp.where(small, x, 1.0)

  def body(k, carry):
    term, total = carry
    term = term * xs / k
    return term, total + term / k

  _, series = lax.fori_loop(1, 120, body, (jnp.ones_like(xs), jnp.zeros_like(xs)))
  series = series + _EULER + jnp.log(xs)
  xl = jnp.where(small, 80.0, x)
  total, term = jnp.ones_like(xl), jnp.ones_like(xl)
  for k in range(1, 16):
    term = term * k / xl
    total = total + term
  return jnp.where(small, series, jnp.exp(xl) / xl * total)


def _exp1_positive(z):
  small = z <= 1.0
  zs = jnp.where(small, z, 0.5)

  def body(k, carry):
    term, total = carry
    term = -term * zs / k
    return term, total + term / k

  _, sum_ = lax.fori_loop(1, 30, body, (jnp.ones_like(zs), jnp.zeros_like(zs)))
  series = -_EULER - jnp.log(zs) - sum_
  zl = jnp.where(small, 2.0, z)
  tiny = jnp.finfo(zl.dtype).tiny
  b = zl + 1
  c = 1 / tiny * jnp.ones_like(zl)
  d = 1 / b
  h = d
  for i in range(1, 40):
    an = -float(i * i)
    b = b + 2
    d = 1 / (an * d + b)
    c = b + an / c
    h = h * c * d
  return jnp.where(small, series, h * jnp.exp(-zl))


@custom_jvp
def exp1(x):
  """The exponential integral `E1(x) = int_x^inf e^-t / t dt` (x > 0; nan for x < 0)."""
  x = _float(x)
  out = _exp1_positive(jnp.where(x > 0, x, 1.0))
  return jnp.where(x > 0, out, jnp.where(x == 0, jnp.inf, jnp.nan))


@exp1.defjvp
def _exp1_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  x = _float(x)
  return exp1(x), -jnp.exp(-x) / x * t


@custom_jvp
def expi(x):
  """The exponential integral `Ei(x)`: the principal value of `int_-inf^x e^t / t dt`."""
  x = _float(x)
  positive = _expi_positive(jnp.where(x > 0, x, 1.0))
  negative = -_exp1_positive(jnp.where(x < 0, -x, 1.0))
  return jnp.where(x > 0, positive, jnp.where(x < 0, negative, -jnp.inf))


@expi.defjvp
def _expi_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  x = _float(x)
  return expi(x), jnp.exp(x) / x * t


__all__ = ["exp1", "expi", "i0", "i0e", "i1", "i1e"]
