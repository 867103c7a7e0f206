"""Special functions computed from their series and continued fractions: the exponential
integrals `expi`, `exp1`, the scaled complementary error function `erfcx`, the dilogarithm
`spence`, the Bessel functions `bessel_jn` (and, from `minijax.numpy.bessel`, where `numpy.i0` needs them, the modified
Bessel functions `i0`, `i0e`, `i1`, `i1e`).

Each is evaluated in the input's floating dtype with two regimes joined by `where`:
- `expi(x)`, x > 0: the series `gamma + ln x + sum_k x^k / (k k!)` up to x = 40, the
  asymptotic series `e^x / x sum_k k! / x^k` above; x < 0: `-exp1(-x)`;
- `exp1(z)`: the series `-gamma - ln z - sum_k (-z)^k / (k k!)` up to z = 1, the continued
  fraction of `e^-z / (z + 1 / (1 + 1 / (z + 2 / (1 + ...))))` (Lentz) above.
Derivatives are the closed forms (`custom_jvp`)."""
from __future__ import annotations

import fractions
import functools
import math

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
  slope = jnp.where(x < 0, jnp.nan, -jnp.exp(-x) / x)  # (NaN where E1 is, as JAX's)
  return exp1(x), slope * t


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


__all__ = ["bessel_jn", "erfcx", "exp1", "expi", "i0", "i0e", "i1", "i1e", "spence"]


# ---- erfcx: e^{x^2} erfc(x)

def _erfc_fraction(x, terms=60):
  """1 / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))) (erfc's continued fraction, times
  sqrt(pi) e^{x^2}), evaluated from the bottom; it converges quickly for x >= 2."""
  tail = jnp.zeros_like(x)
  for k in range(terms, 0, -1):
    tail = (k / 2) / (x + tail)
  return 1.0 / (x + tail)


@custom_jvp
def erfcx(x):
  """The scaled complementary error function e^{x^2} erfc(x): directly below x = 2, from
  erfc's continued fraction above (where erfc itself underflows); of complex `x`, the
  Faddeeva function at i x."""
  x = as_inexact(x)
  if jnp.iscomplexobj(x):
    from minijax.scipy.special_integrals import wofz
    return wofz(1j * x).astype(x.dtype)
  large = x >= 2.0
  direct = jnp.exp(jnp.square(jnp.where(large, 0.0, x))) * lax.erfc(jnp.where(large, 0.0, x))
  fraction = _erfc_fraction(jnp.where(large, x, 2.0)) / jnp.sqrt(jnp.pi).astype(x.dtype)
  return jnp.where(large, fraction, direct)


@erfcx.defjvp
def _erfcx_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  y = erfcx(x)
  return y, (2 * x * y - 2 / jnp.sqrt(jnp.pi).astype(y.dtype)) * t


# ---- spence: the dilogarithm Li2(1 - x)

_PI2_6 = 1.6449340668482264  # pi^2 / 6


@functools.cache
def bernoulli_numbers(n: int) -> tuple:
  """The Bernoulli numbers B_0 ... B_n as exact fractions (B_1 = -1/2), by the
  Akiyama-Tanigawa algorithm (which gives +1/2 for B_1)."""
  numbers, row = [], []
  for m in range(n + 1):
    row.append(fractions.Fraction(1, m + 1))
    for j in range(m, 0, -1):
      row[j - 1] = j * (row[j - 1] - row[j])
    numbers.append(row[0])
  if n >= 1:
    numbers[1] = -numbers[1]
  return tuple(numbers)


def _li2_small(u):
  """Li2(u) for u in [-1, 1/2], from the series in t = -log(1 - u) (|t| <= log 2):
  sum_n B_n t^(n+1) / (n+1)!, whose terms shrink like (t / 2 pi)^n."""
  t = -jnp.log1p(-u)
  total, power = jnp.zeros_like(t), t
  for n, b in enumerate(bernoulli_numbers(29)):
    if b:
      total = total + float(b / math.factorial(n + 1)) * power
    power = power * t
  return total


def spence(x):
  """scipy's Spence function, the dilogarithm Li2(1 - x) for finite x >= 0 (nan else): through
  Li2(u) = pi^2/6 - log(u) log(1 - u) - Li2(1 - u) for u in (1/2, 1], and
  Li2(u) = -pi^2/6 - log^2(-u) / 2 - Li2(1/u) for u < -1, into the series' range."""
  x = as_inexact(x)
  u = 1.0 - x
  reflect = u > 0.5           # x < 1/2
  invert = u < -1.0           # x > 2
  inner = jnp.where(reflect, 1.0 - jnp.where(reflect, u, 0.0),
                    jnp.where(invert, 1.0 / jnp.where(invert, u, -2.0), u))
  base = _li2_small(inner)
  safe_u = jnp.where(reflect, u, 0.5)
  reflected = _PI2_6 - jnp.log(safe_u) * jnp.log1p(-safe_u) - base
  reflected = jnp.where(u == 1.0, _PI2_6, reflected)  # (x = 0: log(1 - u) log u -> 0)
  neg = jnp.where(invert, -u, 2.0)
  inverted = -_PI2_6 - 0.5 * jnp.square(jnp.log(neg)) - base
  out = jnp.where(reflect, reflected, jnp.where(invert, inverted, base))
  return jnp.where((x < 0) | jnp.isinf(x), jnp.nan, out)  # (scipy's NaN at inf too)


# ---- bessel_jn: J_0 ... J_v by Miller's backward recurrence

def bessel_jn(z, *, v: int, n_iter: int = 50):
  """The Bessel functions of the first kind J_0(z) ... J_v(z), stacked on a new leading
  axis, by Miller's backward recurrence J_{k-1} = (2k / z) J_k - J_{k+1} from order
  v + n_iter, normalized by J_0 + 2 (J_2 + J_4 + ...) = 1.  Accurate while |z| stays below
  the starting order (raise `n_iter` for larger z)."""
  v, n_iter = int(v), int(n_iter)
  if v < 0 or n_iter < 1:
    raise ValueError(f"bessel_jn needs v >= 0 and n_iter >= 1, got v={v}, n_iter={n_iter}")
  z = as_inexact(z)
  x = jnp.abs(z)
  safe = jnp.where(x == 0, 1.0, x)
  start = v + n_iter + (v + n_iter) % 2  # an even order, above v
  big, tiny = 1e10, 1e-10
  above, current = jnp.zeros_like(safe), jnp.full_like(safe, tiny)
  found = [None] * (v + 1)
  norm = jnp.zeros_like(safe)
  for k in range(start, 0, -1):  # current holds the (unnormalized) J_k
    if k <= v:
      found[k] = current
    if k % 2 == 0:
      norm = norm + 2 * current
    below = (2 * k / safe) * current - above
    above, current = current, below
    scale = jnp.where(jnp.abs(current) > big, tiny, 1.0)  # keep the values in range
    above, current, norm = above * scale, current * scale, norm * scale
    found = [f if f is None else f * scale for f in found]
  found[0] = current
  norm = norm + current
  out = jnp.stack([f / norm for f in found])
  signs = jnp.asarray([(-1.0) ** k for k in range(v + 1)], out.dtype).reshape(
      (v + 1,) + (1,) * jnp.ndim(z))
  out = jnp.where(z < 0, out * signs, out)  # J_k(-z) = (-1)^k J_k(z)
  at_zero = jnp.asarray([1.0] + [0.0] * v, out.dtype).reshape((v + 1,) + (1,) * jnp.ndim(z))
  return jnp.where(x == 0, at_zero, out)
