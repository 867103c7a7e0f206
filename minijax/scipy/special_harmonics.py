"""Spherical harmonics `sph_harm_y(n, m, theta, phi)`, scipy's
`Y_n^m = N_n^m P_n^m(cos theta) e^(i m phi)` (orthonormal on the sphere, with the
Condon-Shortley phase), theta the colatitude and phi the longitude.

The normalized associated Legendre functions come from the stable three-term recurrences
of orthonormal harmonics, on every element at once: the diagonal `P_m^m` by
`P_m^m = -sqrt((2m+1)/2m) sin(theta) P_(m-1)^(m-1)` from `P_0^0 = 1/sqrt(4 pi)`, then up
the degree by `P_l^m = a (cos(theta) P_(l-1)^m - b P_(l-2)^m)`.  Each element stops at its
own `|m|` and `n`, by masks, so the loops run to `n_max` (which must be static: given, or
read from a concrete `n`).  Negative orders are `Y_n^-m = (-1)^m conj(Y_n^m)`."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp


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
    step = -np.sqrt((2 * k + 1) / (2 * k)) * y * diagonal
    diagonal = jnp.where(k <= order, step, diagonal)
  previous = jnp.zeros_like(diagonal)  # P_(l-2)^m
  current = diagonal                   # P_(l-1)^m, starting at l - 1 = |m|
  mf = order.astype(dtype)
  for s in range(1, n_max + 1):  # degree l = |m| + s
    l = mf + s
    a = jnp.sqrt((4 * l * l - 1) / (l * l - mf * mf))
    b = jnp.sqrt(((l - 1) ** 2 - mf * mf) / (4 * (l - 1) ** 2 - 1))
    following = a * (x * current - b * previous)
    go = order + s <= n
    previous, current = jnp.where(go, current, previous), jnp.where(go, following, current)
  angle = mf * phi
  harmonic = lax.complex(current * jnp.cos(angle), current * jnp.sin(angle))
  sign = jnp.where(order % 2 == 1, -1.0, 1.0).astype(dtype)
  return jnp.where(m < 0, sign * jnp.conj(harmonic), harmonic)


__all__ = ["sph_harm_y"]
