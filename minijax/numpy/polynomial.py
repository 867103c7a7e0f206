"""numpy's polynomial functions on coefficient arrays, highest power first, as JAX has them.

Coefficients are promoted to an inexact type (as JAX does) except by `polyadd`, `polysub`
and `polyval`.  Results whose length depends on values (leading zeros trimmed) are computed
that way only with `trim_leading_zeros=True` / `strip_zeros=True` on concrete coefficients,
as in JAX.  `roots` are the eigenvalues of the companion matrix.
"""
from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy import _util


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _coeffs(name, *ps, inexact=False):
  out = (_util.promote_inexact if inexact else _util.promote)(name, *ps)
  for p in out:
    if _util.ndim(p) != 1:
      raise ValueError(f"{name}: coefficients must be a 1-d array, got shape {_util.shape(p)}")
  return out


def polyval(p, x, *, unroll=16):
  """p[0] * x**(n-1) + ... + p[n-1], by Horner's scheme."""
  p, x = _util.promote("polyval", p, x)
  out = _jnp().zeros_like(x)
  for i in range(_util.shape(p)[0]):
    out = out * x + p[i]
  return out


def polyadd(a1, a2):
  a1, a2 = _coeffs("polyadd", a1, a2)
  n1, n2 = _util.shape(a1)[0], _util.shape(a2)[0]
  if n1 < n2:
    a1, a2, n1, n2 = a2, a1, n2, n1
  return a1.at[n1 - n2:].add(a2) if n2 else a1


def polysub(a1, a2):
  return polyadd(a1, -_util.asarray(a2))


def _trim(p):
  value = np.asarray(_util.concrete_or_error("leading zeros", p))
  nonzero = np.flatnonzero(value)
  return p[nonzero[0]:] if nonzero.size else p[-1:]


def polymul(a1, a2, *, trim_leading_zeros=False):
  a1, a2 = _coeffs("polymul", a1, a2, inexact=True)
  if trim_leading_zeros:
    a1, a2 = _trim(a1), _trim(a2)
  if _util.shape(a1)[0] == 0:
    a1 = _jnp().zeros(1, _util.dtype(a1))
  if _util.shape(a2)[0] == 0:
    a2 = _jnp().zeros(1, _util.dtype(a2))
  return _jnp().convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
  """(quotient, remainder) of u / v."""
  u, v = _coeffs("polydiv", u, v, inexact=True)
  jnp = _jnp()
  m, n = _util.shape(u)[0] - 1, _util.shape(v)[0] - 1
  scale = 1.0 / v[0]
  q = jnp.zeros(max(m - n + 1, 1), _util.dtype(u))
  r = u
  for k in range(m - n + 1):
    d = scale * r[k]
    q = q.at[k].set(d)
    r = r.at[k:k + n + 1].add(-d * v)
  if trim_leading_zeros:
    r = _trim(r)
  return q, r


def polyder(p, m=1):
  """The m-th derivative's coefficients."""
  (p,) = _coeffs("polyder", p, inexact=True)
  m = operator.index(m)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  jnp = _jnp()
  n = _util.shape(p)[0]
  if m == 0:
    return p
  if m >= n:
    return jnp.zeros(0, _util.dtype(p))
  powers = np.arange(n - 1, -1, -1)
  factor = np.ones(n, np.int64)
  for i in range(m):
    factor = factor * np.maximum(powers - i, 0)
  return (p[:n - m] * factor[:n - m].astype(np.dtype(_util.dtype(p)))).astype(_util.dtype(p))


def polyint(p, m=1, k=None):
  """The m-th antiderivative's coefficients, integration constants `k` (zeros by default)."""
  (p,) = _coeffs("polyint", p, inexact=True)
  m = operator.index(m)
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  jnp = _jnp()
  dt = _util.dtype(p)
  ks = jnp.zeros(m, dt) if k is None else jnp.broadcast_to(jnp.asarray(k, dt), (m,))
  for i in range(m):
    n = _util.shape(p)[0]
    p = jnp.concatenate([p / jnp.arange(n, 0, -1).astype(dt), ks[i:i + 1]])
  return p


def poly(seq_of_zeros):
  """The coefficients of the monic polynomial with these roots (or a square matrix's
  characteristic polynomial)."""
  jnp = _jnp()
  a = _util.asarray(seq_of_zeros)
  if _util.ndim(a) == 0:
    a = a.reshape(1)  # (one root)
  if _util.ndim(a) == 2 and _util.shape(a)[0] == _util.shape(a)[1] and _util.shape(a)[0]:
    a = jnp.linalg.eigvals(a)  # the characteristic polynomial
  elif _util.ndim(a) != 1:
    raise ValueError("input must be 1d or non-empty square 2d array.")
  (a,) = _util.promote_inexact("poly", a)
  out = jnp.ones(1, _util.dtype(a))
  for i in range(_util.shape(a)[0]):
    out = jnp.convolve(out, jnp.stack([jnp.ones((), _util.dtype(a)), -a[i]]), mode="full")
  return out


def roots(p, *, strip_zeros=True):
  """The roots of p (complex): the eigenvalues of its companion matrix; leading zeros are
  dropped and trailing ones give roots at 0 (`strip_zeros`, concrete p), as numpy does."""
  jnp = _jnp()
  (p,) = _coeffs("roots", p, inexact=True)
  complex_dtype = _util.dtype(jnp.zeros((), _util.dtype(p)) * 1j)
  trailing = 0
  if strip_zeros:
    value = _util.concrete_or_error("roots(strip_zeros=True)", p)
    nonzero = np.flatnonzero(value)
    if nonzero.size == 0:
      return jnp.zeros(0, complex_dtype)
    trailing = _util.shape(p)[0] - 1 - int(nonzero[-1])
    p = p[int(nonzero[0]):int(nonzero[-1]) + 1]
  n = _util.shape(p)[0] - 1
  if n < 1:
    found = jnp.zeros(0, complex_dtype)
  else:
    companion = jnp.eye(n, k=-1, dtype=_util.dtype(p)).at[0, :].set(-p[1:] / p[0])
    found = jnp.linalg.eigvals(companion)
  return jnp.concatenate([found, jnp.zeros(trailing, complex_dtype)]) if trailing else found


def vander(x, N=None, increasing=False):
  """Columns of powers of `x`: x**(N-1), ..., x**0 (or increasing)."""
  jnp = _jnp()
  x = _util.asarray(x)
  if _util.ndim(x) != 1:
    raise ValueError("x must be a one-dimensional array")
  n = _util.shape(x)[0] if N is None else operator.index(N)
  if n < 0:
    raise ValueError("N must be nonnegative")
  powers = jnp.arange(n) if increasing else jnp.arange(n - 1, -1, -1)
  return jnp.power(x[:, None], powers.astype(_util.dtype(x)))  # (in x's dtype, as JAX)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
  """Least-squares fit of a degree-`deg` polynomial (numpy's, as JAX computes it)."""
  jnp = _jnp()
  deg = operator.index(deg)
  if deg < 0:
    raise ValueError("expected deg >= 0")
  x, y = _util.promote_inexact("polyfit", x, y)
  lhs = vander(x, deg + 1)
  rhs = y
  if w is not None:
    w = jnp.asarray(w, _util.dtype(x))
    lhs = lhs * w[:, None]
    rhs = rhs * (w if _util.ndim(rhs) == 1 else w[:, None])
  if rcond is None:
    rcond = _util.shape(x)[0] * float(np.finfo(np.dtype(_util.dtype(x))).eps)
  scale = jnp.sqrt((jnp.abs(lhs) ** 2).sum(axis=0))
  lhs = lhs / scale
  c, resids, rank, s = jnp.linalg.lstsq(lhs, rhs, rcond=rcond)
  c = (c.T / scale).T
  if full:
    return c, resids, rank, s, jnp.asarray(rcond)
  if cov:
    inv = jnp.linalg.inv(lhs.T @ lhs)
    inv = inv / jnp.outer(scale, scale)
    n = _util.shape(x)[0]
    if cov == "unscaled":
      factor = 1.0
    else:
      factor = resids / (n - (deg + 1))
    if _util.ndim(y) == 1:
      return c, inv * factor
    return c, inv[:, :, None] * factor
  return c
