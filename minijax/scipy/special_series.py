"""Special functions computed from their series and continued fractions: the exponential
integrals `expi`, `exp1` (and, from `minijax.numpy.bessel`, where `numpy.i0` needs them,
the modified Bessel functions `i0`, `i0e`, `i1`, `i1e`).

Each is evaluated in the input's floating dtype with two regimes joined by `where`:
- `expi(x)`, x > 0: the series `gamma + ln x + sum_k x^k / (k k!)` up to x = 40, the
  asymptotic series `e^x / x sum_k k! / x^k` above; x < 0: `-exp1(-x)`;
- `exp1(z)`: the series `-gamma - ln z - sum_k (-z)^k / (k k!)` up to z = 1, the continued
  fraction of `e^-z / (z + 1 / (1 + 1 / (z + 2 / (1 + ...))))` (Lentz) above.
Derivatives are the closed forms (`custom_jvp`)."""
from __future__ import annotations

from minijax import lax
from minijax import numpy as jnp
from minijax.custom_derivatives import custom_jvp
from minijax.numpy.bessel import as_inexact, i0, i0e, i1, i1e

_EULER = 0.5772156649015329


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
  x = as_inexact(x)
  out = _exp1_positive(jnp.where(x > 0, x, 1.0))
  return jnp.where(x > 0, out, jnp.where(x == 0, jnp.inf, jnp.nan))


@exp1.defjvp
def _exp1_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  x = as_inexact(x)
  return exp1(x), -jnp.exp(-x) / x * t


@custom_jvp
def expi(x):
  """The exponential integral `Ei(x)`: the principal value of `int_-inf^x e^t / t dt`."""
  x = as_inexact(x)
  positive = _expi_positive(jnp.where(x > 0, x, 1.0))
  negative = -_exp1_positive(jnp.where(x < 0, -x, 1.0))
  return jnp.where(x > 0, positive, jnp.where(x < 0, negative, -jnp.inf))


@expi.defjvp
def _expi_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  x = as_inexact(x)
  return expi(x), jnp.exp(x) / x * t


__all__ = ["exp1", "expi", "i0", "i0e", "i1", "i1e"]
