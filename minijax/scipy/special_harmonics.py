"""Spherical harmonics `sph_harm_y(n, m, theta, phi)`, scipy's
`Y_n^m = N_n^m P_n^m(cos theta) e^(i m phi)` (orthonormal on the sphere, with the
Condon-Shortley phase), theta the colatitude and phi the longitude.

The normalized associated Legendre functions come from the stable three-term recurrences
of orthonormal harmonics, on every element at once: the diagonal `P_m^m` by
`P_m^m = -sqrt((2m+1)/2m) sin(theta) P_(m-1)^(m-1)` from `P_0^0 = 1/sqrt(4 pi)`, then up
the degree by `P_l^m = a (cos(theta) P_(l-1)^m - b P_(l-2)^m)`.  Each element stops at its
own `|m|` and `n`, by masks, so the loops run to `n_max` (which must be static: given, or
read from a concrete `n`).  Negative orders are `Y_n^-m = (-1)^m conj(Y_n^m)`.

`lpmn(l, l, z)` and `lpmn_values(l, l, z, is_normalized)` (JAX's, deprecated there) give
every associated Legendre function `P_l^m(z)` of order and degree up to `l` at once, as
an `[m, l, len(z)]` array: unnormalized by the classic recurrences (Condon-Shortley phase
included), normalized by the orthonormal ones above.  `lpmn`'s derivatives follow from
`(z^2 - 1) P_l^m' = l z P_l^m - (l + m) P_(l-1)^m`, and at z = +-1, where that reads 0/0,
from the functions' closed forms there."""
from __future__ import annotations

import math
import warnings

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy import _util


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
  """The spherical harmonic of degree `n` (>= 0) and order `m` (|m| <= n) at colatitude
  `theta` and longitude `phi`, complex.  `n_max` bounds `n` (needed under a transformation;
  degrees above it are clipped to it, as in JAX)."""
  if diff_n is not None:
    raise NotImplementedError("sph_harm_y: the diff_n argument (derivatives) is not supported")
  if n_max is None:
    try:
      n_max = int(np.max(np.asarray(n)))
    except Exception:
      raise TypeError("sph_harm_y: n_max must be given (a Python int) when n is traced") from None
  n, m, theta, phi = jnp.broadcast_arrays(jnp.asarray(n), jnp.asarray(m), jnp.asarray(theta),
                                          jnp.asarray(phi))
  dtype = jnp.result_type(theta, phi, 1.0)
  theta, phi = theta.astype(dtype), phi.astype(dtype)
  n = jnp.minimum(n, n_max).astype(np.int32)
  order = jnp.abs(m).astype(np.int32)
  x, y = jnp.cos(theta), jnp.sin(theta)
  diagonal = jnp.full(theta.shape, 1 / np.sqrt(4 * np.pi), dtype)
  for k in range(1, n_max + 1):  # P_k^k, kept once k passes the element's order
    step = _diagonal_factor(k, normalized=True) * y * diagonal
    diagonal = jnp.where(k <= order, step, diagonal)
  previous = jnp.zeros_like(diagonal)  # P_(l-2)^m
  current = diagonal                   # P_(l-1)^m, starting at l - 1 = |m|
  mf = order.astype(dtype)
  for s in range(1, n_max + 1):  # degree l = |m| + s
    a, b = _orthonormal_coefficients(mf + s, mf, jnp.sqrt)
    following = a * (x * current - b * previous)
    go = order + s <= n
    previous, current = jnp.where(go, current, previous), jnp.where(go, following, current)
  angle = mf * phi
  harmonic = lax.complex(current * jnp.cos(angle), current * jnp.sin(angle))
  sign = jnp.where(order % 2 == 1, -1.0, 1.0).astype(dtype)
  return jnp.where(m < 0, sign * jnp.conj(harmonic), harmonic)


def _diagonal_factor(m: int, normalized: bool) -> float:
  """P_m^m / (sqrt(1 - z^2) P_(m-1)^(m-1)), Condon-Shortley phase included."""
  return -np.sqrt((2 * m + 1) / (2 * m)) if normalized else -(2 * m - 1)


def _orthonormal_coefficients(l, m, sqrt):
  """a, b of the orthonormal recurrence P_l^m = a (z P_(l-1)^m - b P_(l-2)^m)."""
  return (sqrt((4 * l * l - 1) / (l * l - m * m)),
          sqrt(((l - 1) ** 2 - m * m) / (4 * (l - 1) ** 2 - 1)))


def _check_lpmn(name: str, m, n, z) -> int:
  warnings.warn(f"jax.scipy.special.{name} is deprecated; no replacement is planned.",
                DeprecationWarning, stacklevel=3)
  dtype = _util.dtype(z)
  if dtype not in (np.float32, np.float64):
    raise TypeError(f"z.dtype={dtype} is not supported, see docstring for supported types.")
  if _util.ndim(z) != 1:
    raise ValueError("z must be a 1D array.")
  m = int(_util.concrete_or_error("Argument m of lpmn.", m))
  n = int(_util.concrete_or_error("Argument n of lpmn.", n))
  if m != n:
    raise NotImplementedError("Computations for m!=n are not yet supported.")
  return n


def _legendre_table(l_max: int, z, normalized: bool) -> list[list]:
  """`table[m][l]` = P_l^m(z) for 0 <= m <= l <= l_max (None below the diagonal)."""
  table = [[None] * (l_max + 1) for _ in range(l_max + 1)]
  root = jnp.sqrt(jnp.maximum(1 - z * z, 0))
  diagonal = jnp.full_like(z, 1 / np.sqrt(4 * np.pi) if normalized else 1.0)
  for m in range(l_max + 1):
    if m:
      diagonal = _diagonal_factor(m, normalized) * root * diagonal
    table[m][m] = last = diagonal  # P_(l-1)^m, and P_(l-2)^m (0 below the diagonal):
    before_last = 0
    for l in range(m + 1, l_max + 1):
      if normalized:
        a, b = _orthonormal_coefficients(l, m, np.sqrt)
        table[m][l] = a * (z * last - b * before_last)
      else:
        table[m][l] = ((2 * l - 1) * z * last - (l + m - 1) * before_last) / (l - m)
      before_last, last = last, table[m][l]
  return table


def _stacked(table: list[list], z):
  zeros = jnp.zeros_like(z)
  return jnp.stack([jnp.stack([zeros if v is None else v for v in row]) for row in table])


def _derivative_at_pole(l: int, m: int, sign: float) -> float:
  """P_l^m'(z) at z = sign (+-1)."""
  if m == 0:
    return sign ** (l + 1) * l * (l + 1) / 2
  if m == 1:
    return sign ** l * np.inf
  if m == 2:
    return -2 * sign ** (l + 1) * math.prod(range(l - 1, l + 3)) / 8
  return 0.0


def lpmn(m, n, z):
  """The associated Legendre functions of the first kind P_l^m(z) of every order and
  degree up to `n` (`m` must equal `n`) and their derivatives in z, each an array of
  shape `(n + 1, n + 1, len(z))` indexed `[m, l]`, for a 1-D float32 or float64 `z`."""
  l_max = _check_lpmn("lpmn", m, n, z)
  z = jnp.asarray(z)
  table = _legendre_table(l_max, z, normalized=False)
  at_plus, at_minus = z == 1, z == -1
  off_pole = jnp.where(at_plus | at_minus, 0.5, z)
  slopes = [[None] * (l_max + 1) for _ in range(l_max + 1)]
  for mm in range(l_max + 1):
    for l in range(max(mm, 1), l_max + 1):
      below = table[mm][l - 1] if l - 1 >= mm else 0
      generic = (l * off_pole * table[mm][l] - (l + mm) * below) / (off_pole * off_pole - 1)
      slopes[mm][l] = jnp.where(
          at_plus, _derivative_at_pole(l, mm, 1.0),
          jnp.where(at_minus, _derivative_at_pole(l, mm, -1.0), generic)).astype(z.dtype)
  return _stacked(table, z), _stacked(slopes, z)


def lpmn_values(m, n, z, is_normalized: bool):
  """The associated Legendre functions P_l^m(z) as `lpmn` gives them, without derivatives;
  with `is_normalized` each times sqrt((2l + 1) / 4π (l - m)! / (l + m)!), the factor that
  makes spherical harmonics orthonormal."""
  l_max = _check_lpmn("lpmn_values", m, n, z)
  z = jnp.asarray(z)
  return _stacked(_legendre_table(l_max, z, bool(is_normalized)), z)


__all__ = ["lpmn", "lpmn_values", "sph_harm_y"]
