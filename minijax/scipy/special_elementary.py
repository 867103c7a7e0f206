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


@_util.compiled_when_eager()
def loggamma(x):
  """log Γ(x) of real x > 0 (inf at 0, nan below, as scipy's for real arguments)."""
  x, = _promote("loggamma", x)
  out = jnp.where(jnp.greater(x, 0), lax.lgamma(x), _c(x, np.nan))
  return jnp.where(jnp.equal(x, 0), _c(x, np.inf), out)


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
