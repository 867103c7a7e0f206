"""`minijax.scipy.cluster.vq`: assign each observation the nearest code of a code book."""
from __future__ import annotations

from minijax import numpy as jnp
from minijax.numpy import _util


def vq(obs, code_book, check_finite: bool = True):
  """`(code, dist)`: for each row of `obs` (M, N), the index of the nearest row of
  `code_book` (K, N) in Euclidean distance, and that distance.  One-dimensional inputs hold
  observations and codes of length 1.  `check_finite` is accepted and ignored, as in JAX."""
  del check_finite
  obs, code_book = _util.promote_inexact("minijax.scipy.cluster.vq.vq", obs, code_book)
  if obs.ndim != code_book.ndim:
    raise ValueError("vq: obs and code_book must have the same rank, got shapes "
                     f"{obs.shape} and {code_book.shape}")
  if obs.ndim == 1:
    obs, code_book = obs[:, None], code_book[:, None]
  if obs.ndim != 2:
    raise ValueError(f"vq: obs and code_book must have rank 1 or 2, got rank {obs.ndim}")
  dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
  code = jnp.argmin(dist, axis=-1)
  return code, jnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]


__all__ = ["vq"]
