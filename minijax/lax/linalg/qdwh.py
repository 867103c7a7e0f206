"""`qdwh(x)`: the polar decomposition `x = u h` (u with orthonormal columns, h Hermitian
positive semi-definite) by the QR-based dynamically weighted Halley iteration of
Nakatsukasa, Bai and Gygi (2010), with JAX 0.10.2's schedule, so that its `num_iters` and
`is_converged` are JAX's.

x is first scaled by an upper bound of its 2-norm (sqrt(|x|_1 |x|_inf)), so that its
singular values lie in (0, 1]; l = eps bounds the smallest from below.  Each step maps every
singular value s through s (a + b s^2) / (1 + c s^2), with weights a, b, c chosen from l so
that [l, 1] lands in [l', 1], l' far closer to 1.  The sequence of l (and so of the
weights) does not depend on x: it is computed here, on the host, until l is within
5 eps of 1.  While c is large a step is formed from a QR factorization of
[sqrt(c) u; I] (stable), afterwards from a Cholesky factorization of I + c u^H u
(cheaper); when the schedule ends before u stops moving (|u - u_prev|_F above
(5 eps)^(1/3)), Halley's steps (a, b, c = 3, 1, 3) follow, up to `max_iterations` in all.
One Newton-Schulz step refines u, and h = u^H x, symmetrized.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.lax.linalg import matrices as mx
from minijax.lax.linalg.qr import qr
from minijax.lax.linalg.triangular import cholesky, triangular_solve

__all__ = ["qdwh"]

_QR_WHILE_C_ABOVE = 100


def _schedule(eps: float, max_iterations: int) -> list[tuple[float, float, float]]:
  """The weights (a, b, c) of each step, from l = eps until l is within 5 eps of 1."""
  l, tol_l, steps = eps, 5 * eps, []
  while l + tol_l < 1 and len(steps) < max_iterations:
    l2 = l * l
    d = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    root = np.sqrt(1 + d)
    a = root + np.sqrt(2 - d + 2 * (2 - l2) / (l2 * root))
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    steps.append((a, b, c))
    l = l * (a + b * l2) / (1 + c * l2)
  return steps


def _scalar(value, dtype):
  return lax.full((), value, dtype)


def _qr_step(u, a, b, c):
  """(b/c) u + (a - b/c)/sqrt(c) q1 q2^H, with [q1; q2] r = [sqrt(c) u; I]."""
  m, n = mx.aval(u).shape
  dtype = mx.aval(u).dtype
  stacked = lax.concatenate([lax.mul(_scalar(np.sqrt(c), dtype), u), mx.eye(dtype, n)], 0)
  q, _ = qr(stacked, full_matrices=False)
  q1, q2 = lax.slice(q, (0, 0), (m, n)), lax.slice(q, (m, 0), (m + n, n))
  return lax.add(lax.mul(_scalar(b / c, dtype), u),
                 lax.mul(_scalar((a - b / c) / np.sqrt(c), dtype), mx.matmul(q1, mx.H(q2))))


def _cholesky_step(u, a, b, c):
  """(b/c) u + (a - b/c) u (I + c u^H u)^-1, through the Cholesky factor of I + c u^H u."""
  n, dtype = mx.aval(u).shape[1], mx.aval(u).dtype
  gram = lax.add(mx.eye(dtype, n), lax.mul(_scalar(c, dtype), mx.matmul(mx.H(u), u)))
  factor = cholesky(gram, symmetrize_input=False)
  # u gram^-1 = (gram^-1 u^H)^H, gram^-1 = L^-H L^-1
  w = triangular_solve(factor, mx.H(u), left_side=True, lower=True)
  w = triangular_solve(factor, w, left_side=True, lower=True, transpose_a=True,
                       conjugate_a=True)
  return lax.add(lax.mul(_scalar(b / c, dtype), u), lax.mul(_scalar(a - b / c, dtype), mx.H(w)))


def _moved(u, previous, tol_norm):
  """|u - previous|_F > tol_norm."""
  delta = lax.sub(u, previous)
  size = lax.sqrt(lax.reduce_sum(mx.real(lax.mul(delta, mx.conj(delta))), (0, 1)))
  return lax.gt(size, lax.full((), tol_norm, mx.real_dtype(mx.aval(u).dtype)))


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape=None):
  """`(u, h, num_iters, is_converged)`: the polar decomposition `x = u h` of an `m x n`
  matrix with m >= n, the number of steps taken, and whether u stopped moving within
  `max_iterations` (default 10).  `is_hermitian` is accepted and unused, as in JAX."""
  del is_hermitian
  x = lax.convert_to_array(x)
  shape, dtype = mx.aval(x).shape, mx.aval(x).dtype
  if len(shape) != 2:
    raise ValueError(f"qdwh takes one matrix (vmap it for a batch), got shape {shape}")
  m, n = shape
  if m < n:
    raise ValueError(f"qdwh takes an M x N matrix with M >= N, got shape {shape}")
  if dynamic_shape is not None and tuple(dynamic_shape) != (m, n):
    raise NotImplementedError("qdwh with a dynamic_shape smaller than the matrix (a padded "
                              "input) is not implemented in minijax")
  if not dtypes.is_inexact(dtype):
    raise TypeError(f"qdwh takes a floating point or complex matrix, got {dtype}")
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  eps = float(np.finfo(mx.real_dtype(dtype)).eps) if eps is None else float(eps)
  tol_norm = np.cbrt(5 * eps)

  absolute = mx.real(lax.abs(x)) if mx.is_complex(dtype) else lax.abs(x)
  one_norm = lax.reduce_max(lax.reduce_sum(absolute, (0,)), (0,))
  inf_norm = lax.reduce_max(lax.reduce_sum(absolute, (1,)), (0,))
  scale = lax.mul(lax.rsqrt(one_norm), lax.rsqrt(inf_norm))
  real = mx.real_dtype(dtype)
  scale = lax.select(lax.eq(one_norm, lax.full((), 0, real)), lax.full((), 1, real), scale)
  u = lax.mul(x, lax.convert_element_type(scale, dtype))

  moving = lax.full((), True, dtypes.bool_)
  steps = _schedule(eps, max_iterations)
  for a, b, c in steps:
    if c > _QR_WHILE_C_ABOVE:
      u = _qr_step(u, a, b, c)
    else:
      u, previous = _cholesky_step(u, a, b, c), u
      moving = _moved(u, previous, tol_norm)

  count = dtypes.default_int_dtype()  # (int64 with x64 enabled, as JAX's counter)

  def halley(state):
    k, u, _ = state
    u_next = _cholesky_step(u, 3.0, 1.0, 3.0)
    return lax.add(k, lax.full((), 1, count)), u_next, _moved(u_next, u, tol_norm)

  def unfinished(state):
    k, _, moving = state
    return lax.bitwise_and(moving, lax.lt(k, lax.full((), max_iterations, count)))

  num_iters, u, moving = lax.while_loop(
      unfinished, halley, (lax.full((), len(steps), count), u, moving))

  # one Newton-Schulz step: u (3 I - u^H u) / 2
  u = lax.sub(lax.mul(_scalar(1.5, dtype), u),
              lax.mul(_scalar(0.5, dtype), mx.matmul(u, mx.matmul(mx.H(u), u))))
  h = mx.matmul(mx.H(u), x)
  h = lax.mul(_scalar(0.5, dtype), lax.add(h, mx.H(h)))
  return u, h, num_iters, lax.bitwise_not(moving)
