"""The generalized exponential integral `expn(n, x)`, Dawson's integral `dawsn(x)`, the sine
and cosine integrals `sici(x)` and the Fresnel integrals `fresnel(x)`, in the input's
floating dtype (after Numerical Recipes, §6.3, §6.8 and §6.10):

- `expn(n, x) = int_1^inf e^(-x t) / t^n dt`: for x > 1 the continued fraction
  `e^-x / (x + n - 1 (n) / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)))` (Lentz), for
  x <= 1 the series `(-x)^(n-1) / (n-1)! (psi(n) - ln x) - sum_{k != n-1} (-x)^k /
  ((k - n + 1) k!)`; `e^-x / x` for n = 0.
- `dawsn(x) = e^(-x^2) int_0^x e^(t^2) dt`: its Taylor series for |x| < 1, Rybicki's sum of
  Gaussians `1/sqrt(pi) sum_{odd k} e^(-(x' - k h)^2) / k` (with step h = 0.2, enough terms
  for double precision) beyond.
- `sici(x) = (Si(x), Ci(x))` and `fresnel(x) = (S(x), C(x))`: their power series up to
  |x| = 2 (1.5 for Fresnel's), beyond them a complex continued fraction (Lentz) for
  `E1(i x)` (for Fresnel's, for the complementary error function of `(1 - i) sqrt(pi) x / 2`).
  Si and S are odd, Ci and C even (Ci's real part, as scipy gives it for x < 0).
- `hyp1f1(a, b, x)`: Kummer's series `sum_k (a)_k / (b)_k x^k / k!`, summed until its terms
  fall below the dtype's epsilon times the sum, after Kummer's transformation
  `M(a, b, x) = e^x M(b - a, b, -x)` for x < 0 (so that, for positive a and b, every term
  is positive); `hyp1f1(0, 0, x) = 1`, as JAX has it.
- `owens_t(h, a) = (1/2pi) int_0^a e^(-h^2 (1 + x^2) / 2) / (1 + x^2) dx`: Gauss-Legendre
  quadrature for |a| <= 1, exact at h = 0 and |a| = 1, and for |a| > 1 the reflection
  `T(h, a) = (Phi(h) + Phi(ah)) / 2 - Phi(h) Phi(ah) - T(ah, 1/a)` (Patefield and Tandy).
- `wofz(z) = e^(-z^2) erfc(-i z)`, the Faddeeva function: Weideman's rational series in
  `(L + i z) / (L - i z)` (40 coefficients from one FFT, about 1e-14 relative) for Im z >= 0,
  and `2 e^(-z^2) - w(-z)` below the real axis.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.custom_derivatives import custom_jvp
from minijax.lax.utils import in_float32_for_halves
from minijax.numpy.bessel import as_inexact

__all__ = ["dawsn", "expn", "fresnel", "hyp1f1", "owens_t", "sici", "wofz"]

_EULER = 0.5772156649015329
_TERMS = 80


def _expn_fraction(n, x):
  return _lentz(x + n, lambda i: -i * (n - 1 + i), 2, terms=_TERMS) * jnp.exp(-x)


def _expn_series(n, x):
  m = n - 1  # the term k = n - 1 holds the logarithm
  psi = lax.digamma(jnp.maximum(n, 1).astype(x.dtype))
  first = jnp.where(m != 0, 1 / jnp.where(m != 0, m, 1), -jnp.log(x) - _EULER)

  def body(i, carry):
    fact, total = carry
    fact = fact * (-x / i)
    at_log = i == m
    term = jnp.where(at_log, fact * (psi - jnp.log(x)), -fact / jnp.where(at_log, 1, i - m))
    return fact, total + term
  return lax.fori_loop(1, _TERMS, body, (jnp.ones_like(x), first))[1]


@custom_jvp
def _expn(n, x):
  positive = jnp.where(x > 0, x, 1.0)
  general = jnp.where(positive > 1, _expn_fraction(n, positive),
                      _expn_series(n, jnp.minimum(positive, 1.0)))
  out = jnp.where(n == 0, jnp.exp(-positive) / positive, general)
  at_zero = jnp.where(n > 1, 1 / jnp.maximum(n - 1, 1), jnp.inf)
  out = jnp.where(x == 0, at_zero, out)
  return jnp.where((x < 0) | (n < 0), jnp.nan, out)


@_expn.defjvp
def _expn_jvp(primals, tangents):
  (n, x), (_, t) = primals, tangents
  return _expn(n, x), -_expn(n - 1, x) * t  # d/dx E_n = -E_(n-1)


def expn(n, x):
  """The generalized exponential integral `E_n(x)` (integer n >= 0, x >= 0; nan
  elsewhere, a non-integral n included; `E_n(0) = 1 / (n - 1)` for n > 1, as scipy, where
  JAX 0.10.2 gives 1 / n)."""
  n, x = jnp.asarray(n), jnp.asarray(x)
  x = x.astype(dtypes.to_inexact_dtype(jnp.result_type(n, x)))  # (a float16 n keeps float16)
  integral = jnp.ones(n.shape, bool) if jnp.issubdtype(n.dtype, jnp.integer) \
      else jnp.floor(n) == n
  n, x, integral = jnp.broadcast_arrays(n.astype(x.dtype), x, integral)
  return jnp.where(integral, _expn(jnp.where(integral, n, 0), x), jnp.nan)


_DAWSON_STEP = 0.2
_DAWSON_GAUSSIANS = 17  # e^-((2k+1) h)^2 below double precision's epsilon beyond these


def _dawsn_series(x):
  x2 = -2 * x * x

  def body(k, carry):
    term, total = carry
    term = term * x2 / (2 * k + 1)
    return term, total + term
  return lax.fori_loop(1, 40, body, (x, x))[1]


def _dawsn_gaussians(x):
  h = _DAWSON_STEP
  ax = jnp.abs(x)
  n0 = 2 * jnp.round(0.5 * ax / h)
  xp = ax - n0 * h
  e1 = jnp.exp(2 * xp * h)
  e2 = e1 * e1
  d1, d2 = n0 + 1, n0 - 1
  total = jnp.zeros_like(x)
  for i in range(_DAWSON_GAUSSIANS):
    weight = np.exp(-((2 * i + 1) * h) ** 2)
    total = total + weight * (e1 / d1 + 1 / (d2 * e1))
    d1, d2, e1 = d1 + 2, d2 - 2, e1 * e2
  return jnp.sign(x) * jnp.exp(-xp * xp) * total / np.sqrt(np.pi)


@custom_jvp
def dawsn(x):
  """Dawson's integral `e^(-x^2) int_0^x e^(t^2) dt`."""
  x = as_inexact(x)
  small, large = jnp.abs(x) < 1, jnp.abs(x) >= _DAWSON_ASYMPTOTIC
  middle = jnp.where(small | large, 1.0, x)
  return jnp.where(small, _dawsn_series(jnp.where(small, x, 0.0)),
                   jnp.where(large, _dawsn_asymptotic(jnp.where(large, x, 1e3)),
                             _dawsn_gaussians(middle)))


_DAWSON_ASYMPTOTIC = 50.0


def _dawsn_asymptotic(x):
  """`1/(2x) sum_k (2k-1)!! / (2x^2)^k`, to float64 precision from |x| = 50 on (where the
  sum of Gaussians loses its argument's reduction: under jit it gave NaN at 1e10)."""
  u = 1 / (2 * x * x)
  total, term = jnp.ones_like(x), jnp.ones_like(x)
  for k in range(1, 7):
    term = term * (2 * k - 1) * u
    total = total + term
  return total / (2 * x)


@dawsn.defjvp
def _dawsn_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  out = dawsn(x)
  return out, (1 - 2 * as_inexact(x) * out) * t


def _alternating_series(t, terms, kept):
  """`sum_m sign(m) t^m / m! / (2m+1 or m)` split by the parity of m: returns the sums of the
  odd and the even terms (m from `kept`: 1 for sici, 0 for fresnel), signs alternating within
  each parity."""
  odd, even = jnp.zeros_like(t), jnp.zeros_like(t)
  term = jnp.ones_like(t)
  for m in range(terms):
    if m:
      term = term * t / m
    if m < kept:
      continue
    sign = (-1) ** (m // 2)
    divisor = m if kept else 2 * m + 1
    if m % 2:
      odd = odd + sign * term / divisor
    else:
      even = even + sign * term / divisor
  return odd, even


def _lentz(b0, a_of, b_step, terms=100):
  """h = 1 / (b0 + a_1 / (b0 + b_step + a_2 / ...)) by the modified Lentz method
  (`a_of(k)` the k-th numerator)."""
  tiny = np.finfo(np.float32).tiny
  c = jnp.full_like(b0, 1 / tiny)
  d = 1 / b0

  def body(k, carry):
    b, c, d, h = carry
    a = a_of(k).astype(b.dtype)
    b = b + b_step
    d = 1 / (a * d + b)
    c = b + a / c
    return b, c, d, h * (c * d)
  return lax.fori_loop(1, terms, body, (b0, c, d, d))[3]


def sici(x):
  """`(Si(x), Ci(x))`: the sine and cosine integrals (float16 and bfloat16 computed in
  float32: their complex continued fraction needs complex64)."""
  return in_float32_for_halves(_sici, as_inexact(x))


def _sici(x):
  ax = jnp.abs(x)
  small = ax <= 2
  xs = jnp.where(small, ax, 1.0)
  si_small, ci_series = _alternating_series(xs, 40, 1)
  ci_small = _EULER + jnp.log(xs) + ci_series
  xl = jnp.where(small, 4.0, ax)
  cdtype = jnp.result_type(xl.dtype, np.complex64)
  z = lax.complex(jnp.ones_like(xl), xl).astype(cdtype)  # E1(i x) e^(i x) by its fraction
  h = _lentz(z, lambda k: -(k * k), 2) * lax.complex(jnp.cos(xl), -jnp.sin(xl)).astype(cdtype)
  si_large, ci_large = np.pi / 2 + jnp.imag(h), -jnp.real(h)
  si = jnp.where(small, si_small, si_large) * jnp.sign(x)
  ci = jnp.where(ax == 0, -jnp.inf, jnp.where(small, ci_small, ci_large))
  return si, ci


def fresnel(x):
  """`(S(x), C(x))`: the Fresnel integrals `int_0^x sin(pi t^2 / 2) dt` and the cosine's."""
  return in_float32_for_halves(_fresnel, as_inexact(x))


def _fresnel(x):
  ax = jnp.abs(x)
  small = ax <= 1.5
  xs = jnp.where(small, ax, 1.0)
  s_series, c_series = _alternating_series(np.pi / 2 * xs * xs, 40, 0)
  s_small, c_small = xs * s_series, xs * c_series
  xl = jnp.where(small, 4.0, ax)
  cdtype = jnp.result_type(xl.dtype, np.complex64)
  pix2 = np.pi * xl * xl
  b0 = lax.complex(jnp.ones_like(xl), -pix2).astype(cdtype)
  h = _lentz(b0, lambda k: -(2 * k - 1) * (2 * k), 4) * lax.complex(xl, -xl).astype(cdtype)
  phase = lax.complex(jnp.cos(pix2 / 2), jnp.sin(pix2 / 2)).astype(cdtype)
  cs = (0.5 + 0.5j) * (1 - phase * h)
  s = jnp.where(small, s_small, jnp.imag(cs)) * jnp.sign(x)
  c = jnp.where(small, c_small, jnp.real(cs)) * jnp.sign(x)
  return s, c



def _kummer_series(a, b, x):
  """`(M, dM/da, dM/db)` by the series, summed until its terms fall below epsilon times
  the sum (the derivatives ride along: term k's are term k times sum_{j<k} 1/(a+j) and
  minus sum_{j<k} 1/(b+j)).  For a non-positive integer a the series stops at k = -a,
  also where b is a smaller negative integer (scipy's polynomial: 1F1(-3; -3; 3) = 13)."""
  dtype = x.dtype
  eps = jnp.finfo(dtype).eps

  def unfinished(state):
    k, term, total, *_ = state
    return (k < 20000) & jnp.any(jnp.abs(term) > eps * jnp.abs(total))

  def step(state):
    k, term, total, sa, sb, da, db = state
    ended = (term == 0) | (a + k == 0)
    sa, sb = sa + 1 / (a + k), sb + 1 / (b + k)
    term = jnp.where(ended, 0.0, term * (a + k) * x / ((b + k) * (k + 1)))
    da = jnp.where(ended, da, da + term * sa)
    db = jnp.where(ended, db, db - term * sb)
    return k + 1, term, total + term, sa, sb, da, db

  one, zero = jnp.ones_like(x), jnp.zeros_like(x)
  _, _, total, _, _, da, db = lax.while_loop(
      unfinished, step, (jnp.zeros((), dtype), one, one, zero, zero, zero, zero))
  return total, da, db


def _hyp1f1_parts(a, b, x):
  """`(M, dM/da, dM/db)`, through Kummer's transformation for x < 0 (but for a
  polynomial: a non-positive integer a, whose sum the transformation does not keep)."""
  polynomial = (a <= 0) & (a == jnp.round(a))
  negative = (x < 0) & ~polynomial
  value, da, db = _kummer_series(jnp.where(negative, b - a, a), b,
                                 jnp.where(negative, -x, x))
  scale = jnp.where(negative, jnp.exp(x), 1.0)
  # M(a, b, x) = e^x M(b - a, b, -x): d/da = -e^x M_a', d/db = e^x (M_a' + M_b')
  da, db = jnp.where(negative, -da, da), jnp.where(negative, da + db, db)
  return scale * value, scale * da, scale * db


@custom_jvp
def _hyp1f1(a, b, x):
  return _hyp1f1_edges(a, b, x, _hyp1f1_parts(a, b, x)[0])


def _hyp1f1_edges(a, b, x, value):
  """1 at a = b = 0; infinite at b = 0 for any other a; else 1 at x = 0 (as scipy and
  JAX)."""
  return jnp.where(b == 0, jnp.where(a == 0, 1.0, jnp.inf), jnp.where(x == 0, 1.0, value))


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
  (a, b, x), (ta, tb, tx) = primals, tangents
  value, da, db = _hyp1f1_parts(a, b, x)
  dx = a / b * _hyp1f1(a + 1, b + 1, x)  # d/dx 1F1(a; b; x) = a/b 1F1(a+1; b+1; x)
  return _hyp1f1_edges(a, b, x, value), da * ta + db * tb + dx * tx


def hyp1f1(a, b, x):
  """Kummer's confluent hypergeometric function 1F1(a; b; x) for real arguments."""
  a, b, x = jnp.broadcast_arrays(*(as_inexact(v) for v in (a, b, x)))
  dtype = jnp.result_type(a, b, x)
  return _hyp1f1(*(v.astype(dtype) for v in (a, b, x)))


def _weideman_coefficients(n: int = 40):
  """The coefficients (highest power first) and the scale L of Weideman's series."""
  m = 2 * n
  scale = np.sqrt(n / np.sqrt(2))
  t = scale * np.tan(np.arange(-m + 1, m) * np.pi / m / 2)
  f = np.concatenate([[0.0], np.exp(-t * t) * (scale * scale + t * t)])
  a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
  return a[1:n + 1][::-1], scale


_WEIDEMAN = _weideman_coefficients()


def _wofz_upper(z):
  coefficients, scale = _WEIDEMAN
  denominator = scale - 1j * z
  ratio = (scale + 1j * z) / denominator
  p = jnp.zeros_like(z)
  for c in coefficients:
    p = p * ratio + c
  return 2 * p / (denominator * denominator) + (1 / np.sqrt(np.pi)) / denominator


def wofz(z):
  """The Faddeeva function `w(z) = e^(-z^2) erfc(-i z)` (complex result)."""
  z = jnp.asarray(z)
  z = z.astype(jnp.result_type(z.dtype, np.complex64))
  lower = jnp.imag(z) < 0
  reflected = _wofz_upper(jnp.where(lower, -z, z))
  return jnp.where(lower, 2 * jnp.exp(-z * z) - reflected, reflected)


_OWENS_NODES, _OWENS_WEIGHTS = np.polynomial.legendre.leggauss(24)


def _owens_t_integral(h, a):
  """`(1/2pi) int_0^a e^(-h^2 (1 + u^2) / 2) / (1 + u^2) du` for 0 <= a <= 1, by
  24-point Gauss-Legendre quadrature in s = u / a over [0, 1]."""
  s = jnp.asarray((_OWENS_NODES + 1) / 2, h.dtype)
  w = jnp.asarray(_OWENS_WEIGHTS / 2, h.dtype)
  r = 1 + (a[..., None] * s) ** 2
  integrand = jnp.exp(-0.5 * (h * h)[..., None] * r) / r
  return a * jnp.sum(integrand * w, axis=-1) / (2 * np.pi)


@custom_jvp
def _owens_t(h, a):
  h, abs_a = jnp.abs(h), jnp.abs(a)
  outer = abs_a > 1
  # T(h, a) = (Phi(h) + Phi(ah)) / 2 - Phi(h) Phi(ah) - T(ah, 1/a) for a > 1 (h >= 0),
  # written with erf near 0 and erfc beyond, where erf is close to 1
  inner_h = jnp.where(outer, abs_a * h, h)
  inner_a = jnp.where(outer, 1 / jnp.where(outer, abs_a, 1), abs_a)
  inner = _owens_t_integral(inner_h, inner_a)
  inner = jnp.where(inner_h == 0, jnp.arctan(inner_a) / (2 * np.pi), inner)
  root2 = np.sqrt(2.0)
  erfc_h, erfc_ah = lax.erfc(h / root2), lax.erfc(abs_a * h / root2)
  near = 0.25 - 0.25 * lax.erf(h / root2) * lax.erf(abs_a * h / root2)
  far = 0.25 * (erfc_h + erfc_ah - erfc_h * erfc_ah)
  value = jnp.where(outer, jnp.where(abs_a * h <= 0.67, near, far) - inner, inner)
  value = jnp.where(abs_a == 1, 0.125 * lax.erfc(-h / root2) * erfc_h, value)
  return jnp.sign(a) * value


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
  (h, a), (th, ta) = primals, tangents
  dh = -jnp.exp(-0.5 * h * h) * lax.erf(a * h / np.sqrt(2.0)) / (2 * np.sqrt(2 * np.pi))
  da = jnp.exp(-0.5 * (1 + a * a) * h * h) / (2 * np.pi * (1 + a * a))
  return _owens_t(h, a), dh * th + da * ta


def owens_t(h, a):
  """Owen's T function, `(1/2pi) int_0^a e^(-h^2 (1 + x^2) / 2) / (1 + x^2) dx` (in
  float32 at least: of float16 or bfloat16 too, as JAX's)."""
  h, a = jnp.broadcast_arrays(as_inexact(h), as_inexact(a))
  dtype = jnp.promote_types(jnp.result_type(h, a), np.float32)
  h, a = h.astype(dtype), a.astype(dtype)
  out = _owens_t(h, a)
  return jnp.where(jnp.isnan(h) | jnp.isnan(a), jnp.nan, out)
