"""`lobpcg_standard`: the top `k` eigenpairs of a real symmetric operator by LOBPCG,
as JAX's `jax.experimental.sparse.linalg` offers it.

Each step runs Rayleigh-Ritz on the span of the current eigenvector estimates `X`, their
residuals `R = A X - X diag(theta)` and the last step's direction `P`: the columns
[X, R, P] are orthonormalized (a QR factorization, so the first `k` columns still span
`X`), `A` is projected onto them, and the projection's top `k` eigenvectors give the new
`X`; their part outside the old `X` is the next `P`.  An eigenpair has converged when its
residual's norm is below `tol * 10 n (theta + |A v|)`, JAX's criterion; the loop stops
when all `k` have, or after `m` steps.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from minijax import lax
from minijax import numpy as jnp

__all__ = ["lobpcg_standard"]


def lobpcg_standard(A, X, m: int = 100, tol=None):
  """The `k` largest eigenvalues of the symmetric `(n, n)` matrix `A` (or of the linear
  map `A`, a callable on `(n, j)` arrays) and their eigenvectors, starting from the `k`
  linearly independent columns of `X` (`0 < 5 k < n`).  Returns `(theta, U, i)`: the
  eigenvalues, largest first, the `(n, k)` eigenvectors and the steps taken."""
  X = jnp.asarray(X)
  if X.ndim != 2:
    raise ValueError(f"lobpcg_standard: X must be an (n, k) array, got shape {X.shape}")
  n, k = X.shape
  if not np.issubdtype(X.dtype, np.floating):  # (the projections below are real ones)
    raise ValueError(f"lobpcg_standard: X must be real floating, got {X.dtype}")
  if k == 0:
    raise ValueError(f"must have search dim > 0, got {k}")
  if k * 5 >= n:
    raise ValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})")
  matvec: Callable = A if callable(A) else (lambda V, A=jnp.asarray(A): _mm(A, V))
  probe = matvec(jnp.zeros((n, 1), X.dtype))
  if probe.dtype != X.dtype:
    raise ValueError(f"A, X must have same dtypes (were {probe.dtype}, {X.dtype})")
  if probe.shape != (n, 1):
    raise ValueError(f"A must be ({n}, {n}) matrix A, got output {probe.shape}")
  if tol is None:
    tol = float(np.finfo(X.dtype).eps)

  X, _ = jnp.linalg.qr(X)
  AX = matvec(X)
  theta = jnp.sum(X * AX, axis=0)
  state = (0, X, AX, theta, jnp.zeros_like(X), jnp.zeros((), np.int32))

  def unfinished(state):
    i, *_, converged = state
    return (i < m) & (converged < k)

  def step(state):
    i, X, AX, theta, P, _ = state
    R = AX - X * theta
    basis, _ = jnp.linalg.qr(jnp.concatenate([X, R, P], axis=1))
    projected = _mm(basis.T, matvec(basis))
    values, vectors = jnp.linalg.eigh((projected + projected.T) / 2)
    top = vectors[:, ::-1][:, :k]
    new_X = _mm(basis, top)
    P = _mm(basis[:, k:], top[k:])
    P = P / jnp.where((norm := jnp.linalg.norm(P, axis=0)) == 0, 1, norm)
    new_AX = matvec(new_X)
    theta = values[::-1][:k]
    residual = jnp.linalg.norm(new_AX - new_X * theta, axis=0)
    scale = 10 * n * (jnp.linalg.norm(new_AX, axis=0) + theta)
    converged = jnp.sum(residual < tol * scale).astype(np.int32)
    return i + 1, new_X, new_AX, theta, P, converged

  i, X, _, theta, _, _ = lax.while_loop(unfinished, step, state)
  return theta, X, i


def _mm(a, b):
  return lax.dot(a, b, precision=lax.Precision.HIGHEST)
