"""Special functions that are short formulas over the gamma family and logarithms:
`loggamma`, `poch`, `comb`, `boxcox`, `boxcox1p`, and the Bernoulli numbers (computed
exactly, with fractions, for a static count)."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy import _util
from minijax.scipy.special import _c, _promote, gammasgn
from minijax.scipy.special_series import bernoulli_numbers

_BERNOULLI = bernoulli_numbers(16)


@_util.compiled_when_eager()
def loggamma(x):
  """log Γ(x): of real x > 0 (inf at 0, nan below, as scipy's for real arguments), and the
  principal branch of complex x (analytic but for the cut along the negative real axis)."""
  x, = _promote("loggamma", x, complex_ok=True)
  if jnp.iscomplexobj(x):
    return _complex_loggamma(x)
  out = jnp.where(jnp.greater(x, 0), lax.lgamma(x), _c(x, np.nan))
  return jnp.where(jnp.equal(x, 0), _c(x, np.inf), out)


_SHIFT = 8  # Stirling's series beyond |z| = 8: its 8 terms are within float64's epsilon


def _loggamma_right(z):
  """log Γ(z) for Re z > 0: z shifted by 8, log Γ(z) = log Γ(z + 8) - sum_k log(z + k)
  (principal logs: no z + k crosses the cut), and Stirling's series at z + 8."""
  w = z + _SHIFT
  logs = sum(jnp.log(z + k) for k in range(_SHIFT))
  inverse = 1 / w
  square = inverse * inverse
  series = _c(z, 0)
  for k in range(8, 0, -1):  # sum_k B_2k / (2k (2k - 1) w^(2k - 1)), by Horner's rule
    series = (series + float(_BERNOULLI[2 * k]) / (2 * k * (2 * k - 1))) * (
        square if k > 1 else 1)
  series = series * inverse
  return (w - 0.5) * jnp.log(w) - w + 0.5 * np.log(2 * np.pi) + series - logs


def _complex_loggamma(z):
  """NaN at the poles (0, -1, ...); in the upper half plane (the lower one by conjugate
  symmetry) left of Re z = 1/2, by the
  reflection log Γ(z) = log π - log sin(πz) - log Γ(1 - z), with the branch of log sin
  continuous there: -iπz + log(1 - e^(2πiz)) + iπ/2 - log 2."""
  pole = (jnp.imag(z) == 0) & (jnp.real(z) <= 0) & (jnp.real(z) == jnp.round(jnp.real(z)))
  lower = jnp.imag(z) < 0
  z = jnp.where(lower, jnp.conj(z), z)
  left = jnp.real(z) < 0.5
  right = _loggamma_right(jnp.where(left, 1 - z, z))
  log_sin = (-1j * np.pi) * z + jnp.log1p(-jnp.exp((2j * np.pi) * z)) + (0.5j * np.pi - np.log(2))
  out = jnp.where(left, np.log(np.pi) - log_sin - right, right)
  out = jnp.where(pole, _c(out, np.nan + 1j * np.nan), out)
  return jnp.where(lower, jnp.conj(out), out).astype(z.dtype)


@_util.compiled_when_eager()
def poch(z, m):
  """The rising factorial Γ(z + m) / Γ(z): 1 for m = 0, 0 where Γ(z) has a pole and
  Γ(z + m) not."""
  z, m = _promote("poch", z, m)
  zm = jnp.add(z, m)
  magnitude = lax.exp(jnp.subtract(lax.lgamma(zm), lax.lgamma(z)))
  sign = jnp.multiply(gammasgn(zm), gammasgn(z))
  pole = jnp.logical_and(jnp.less_equal(z, 0), jnp.equal(jnp.floor(z), z))
  out = jnp.where(pole, jnp.where(jnp.isnan(gammasgn(zm)), _c(z, np.nan), _c(z, 0)),
                  jnp.multiply(sign, magnitude))
  return jnp.where(jnp.equal(m, 0), _c(z, 1), out)  # (an empty product, as scipy and JAX)


@_util.compiled_when_eager(dynamic=2)
def comb(N, k, *, repetition=False):
  """The number of ways to choose k of N (with repetition: of N kinds), through log-gamma
  (scipy's exact=False); 0 for k < 0 or k > N."""
  N, k = _promote("comb", N, k)
  if repetition:
    N = jnp.subtract(jnp.add(N, k), 1)
  out = lax.exp(jnp.subtract(lax.lgamma(jnp.add(N, 1)), jnp.add(
      lax.lgamma(jnp.add(k, 1)), lax.lgamma(jnp.add(jnp.subtract(N, k), 1)))))
  outside = jnp.logical_or(jnp.logical_or(jnp.less(k, 0), jnp.greater(k, N)), jnp.less(N, 0))
  return jnp.where(outside, _c(out, 0), out)


@_util.compiled_when_eager()
def boxcox(x, lmbda):
  """The Box-Cox transform: (x^λ - 1) / λ, log x at λ = 0."""
  x, lmbda = _promote("boxcox", x, lmbda, complex_ok=True)
  return _boxcox_of_log(jnp.log(x), lmbda)


@_util.compiled_when_eager()
def boxcox1p(x, lmbda):
  """The Box-Cox transform of 1 + x, accurate for small x."""
  x, lmbda = _promote("boxcox1p", x, lmbda, complex_ok=True)
  return _boxcox_of_log(jnp.log1p(x), lmbda)


def _boxcox_of_log(log_x, lmbda):
  zero = jnp.equal(lmbda, 0)
  safe = jnp.where(zero, _c(lmbda, 1), lmbda)
  return jnp.where(zero, log_x, jnp.divide(jnp.expm1(jnp.multiply(safe, log_x)), safe))


def bernoulli(n: int):
  """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2), exactly rounded to the default float."""
  n = int(n)
  if n < 0:
    raise ValueError(f"n must be a non-negative integer, got {n}")
  return jnp.asarray(np.array([float(b) for b in bernoulli_numbers(n)]), dtype=float)
