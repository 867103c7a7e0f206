"""`minijax.scipy.sparse.linalg`: Krylov solvers of `A x = b`: `cg` (A Hermitian positive
definite), `bicgstab` and restarted `gmres` (any A).

`A` and the preconditioner `M` (an approximate inverse of A) are matrices, objects with
`@`, or functions; `b` and `x0` are pytrees of arrays.  The solvers run on one flat vector
(`ravel_pytree` of `b`), with `A` and `M` wrapped to map flat vectors to flat vectors, inside
`lax.while_loop`s, so they jit and batch.  Each solve goes through `lax.custom_linear_solve`:
derivatives are another solve with the same method (the adjoint system), not derivatives of
the iterations.  Convergence is `norm(b - A x) <= max(tol * norm(b), atol)` (no scipy
"legacy" tolerance); `maxiter` defaults to ten times the size of `b` (for `gmres`, it counts
restarts).  As in JAX, `cg` and `bicgstab` return `info=None`; `gmres` returns 0, or -1 when
the solution has a NaN."""
from __future__ import annotations

import functools
import operator

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax import tree_util
from minijax.flatten_util import ravel_pytree


def _dot(x, y):
  """<x, y>, conjugating x, at full precision."""
  return jnp.vdot(x, y, precision=lax.Precision.HIGHEST)


def _norm2(x):
  return jnp.real(_dot(x, x))


def _as_operator(A, name: str, what: str):
  if callable(A):
    return A
  if not hasattr(A, "__matmul__"):
    raise TypeError(f"{name}: the linear operator {what} must be a function, an array or an "
                    f"object with @, got {type(A).__name__}")
  shape = np.shape(A)
  if len(shape) != 2 or shape[0] != shape[1]:
    raise ValueError(f"{name}: the linear operator {what} must be a square matrix, got shape "
                     f"{shape}")
  if isinstance(A, (np.ndarray, jnp.ndarray)):
    return functools.partial(jnp.dot, A, precision=lax.Precision.HIGHEST)
  return functools.partial(operator.matmul, A)


def _flat_system(name: str, A, b, x0, M):
  """b, x0 as flat vectors, A and M as maps of flat vectors, and the unravel of x."""
  if x0 is None:
    x0 = tree_util.tree_map(jnp.zeros_like, b)
  tree, x0_tree = tree_util.tree_structure(b), tree_util.tree_structure(x0)
  if tree != x0_tree:
    raise ValueError(f"{name}: x0 and b must have the same tree structure, got {x0_tree} "
                     f"and {tree}")
  shapes = [np.shape(leaf) for leaf in tree_util.tree_leaves(b)]
  if [np.shape(leaf) for leaf in tree_util.tree_leaves(x0)] != shapes:
    raise ValueError(f"{name}: the arrays of x0 and b must have the same shapes, got "
                     f"{[np.shape(leaf) for leaf in tree_util.tree_leaves(x0)]} and {shapes}")
  b_flat, unravel = ravel_pytree(b)
  x0_flat, _ = ravel_pytree(x0)
  x0_flat = x0_flat.astype(b_flat.dtype)

  def flat(op, what):
    op = _as_operator(op, name, what)

    def apply(v):
      out = op(unravel(v))
      if tree_util.tree_structure(out) != tree:
        raise ValueError(f"{name}: {what}(x) must have b's tree structure {tree}, got "
                         f"{tree_util.tree_structure(out)}")
      return ravel_pytree(out)[0].astype(b_flat.dtype)
    return apply

  identity = M is None
  M = (lambda v: v) if identity else flat(M, "M")
  return flat(A, "A"), b_flat, x0_flat, M, identity, unravel


def _cg(A, b, x0, *, tol, atol, maxiter, M, identity_M):
  atol2 = jnp.maximum(tol ** 2 * _norm2(b), atol ** 2)
  r = b - A(x0)
  z = M(r)
  gamma = _dot(r, z)

  def unconverged(state):
    _, r, gamma, _, k = state
    residual2 = jnp.real(gamma) if identity_M else _norm2(r)
    return (residual2 > atol2) & (k < maxiter)

  def step(state):
    x, r, gamma, p, k = state
    Ap = A(p)
    alpha = gamma / jnp.real(_dot(p, Ap)).astype(gamma.dtype)
    x = x + alpha * p
    r = r - alpha * Ap
    z = M(r)
    gamma_next = jnp.real(_dot(r, z)).astype(gamma.dtype)
    return x, r, gamma_next, z + (gamma_next / gamma) * p, k + 1

  return lax.while_loop(unconverged, step, (x0, r, jnp.real(gamma).astype(gamma.dtype), z, 0))[0]


def _bicgstab(A, b, x0, *, tol, atol, maxiter, M, identity_M):
  del identity_M
  atol2 = jnp.maximum(tol ** 2 * _norm2(b), atol ** 2)
  r = b - A(x0)
  r_hat = r  # the shadow residual; a breakdown (rho, alpha or omega zero) ends the loop
  one = jnp.ones((), b.dtype)
  zero = jnp.zeros_like(b)

  def unconverged(state):
    _, r, *_, k, broken = state
    return (_norm2(r) > atol2) & (k < maxiter) & ~broken

  def step(state):
    x, r, rho, alpha, omega, p, v, k, _ = state
    rho_next = _dot(r_hat, r)
    p = r + (rho_next / rho) * (alpha / omega) * (p - omega * v)
    p_hat = M(p)
    v = A(p_hat)
    alpha = rho_next / _dot(r_hat, v)
    s = r - alpha * v
    small = _norm2(s) < atol2
    s_hat = M(s)
    t = A(s_hat)
    omega = _dot(t, s) / _dot(t, t)
    x = jnp.where(small, x + alpha * p_hat, x + alpha * p_hat + omega * s_hat)
    r = jnp.where(small, s, s - omega * t)
    broken = (rho_next == 0) | (omega == 0) | (alpha == 0)
    return x, r, rho_next, alpha, omega, p, v, k + 1, broken

  state = (x0, r, one, one, one, zero, zero, 0, False)
  return lax.while_loop(unconverged, step, state)[0]


def _givens(a, b):
  """(c, s) with [[c*, s*], [-s, c]] @ [a, b] = [r, 0] (c real unless a is complex)."""
  norm = jnp.sqrt(jnp.abs(a) ** 2 + jnp.abs(b) ** 2)
  safe = jnp.where(norm == 0, 1, norm)
  c = jnp.where(norm == 0, 1, a / safe)
  s = jnp.where(norm == 0, 0, b / safe)
  return c, s


def _rotate(c, s, u, w):
  return jnp.conj(c) * u + jnp.conj(s) * w, -s * u + c * w


def _gmres_cycle(A, M, x, residual, restart: int, ptol, early_stop: bool):
  """One cycle of GMRES from `x` (preconditioned residual `residual`): Arnoldi with
  classical Gram-Schmidt done twice builds an orthonormal Krylov basis V, Givens rotations
  keep the Hessenberg matrix triangular and the residual norm at hand; it ends after
  `restart` vectors, at a breakdown (an invariant subspace), or, with `early_stop`, once
  the residual is within `ptol`."""
  n, dtype = residual.shape[0], residual.dtype
  beta = jnp.sqrt(_norm2(residual))
  V = jnp.zeros((restart + 1, n), dtype).at[0].set(residual / jnp.where(beta == 0, 1, beta))
  R = jnp.eye(restart, dtype=dtype)  # columns not reached keep a 1 on the diagonal
  g = jnp.zeros(restart + 1, dtype).at[0].set(beta.astype(dtype))
  cs = jnp.ones(restart, dtype)
  sn = jnp.zeros(restart, dtype)
  eps = jnp.finfo(dtype).eps

  def going(state):
    k, _, _, g, _, _, done = state
    more = (k < restart) & ~done
    return more & (jnp.abs(g[k]) > ptol) if early_stop else more

  def step(state):
    k, V, R, g, cs, sn, _ = state
    w = M(A(V[k]))
    w_norm = jnp.sqrt(_norm2(w))
    h = jnp.conj(V) @ w
    w = w - V.T @ h
    h2 = jnp.conj(V) @ w
    w, h = w - V.T @ h2, h + h2
    next_norm = jnp.sqrt(_norm2(w))
    breakdown = next_norm <= eps * w_norm
    V = V.at[k + 1].set(jnp.where(breakdown, 0, w / jnp.where(breakdown, 1, next_norm)))
    h = h.at[k + 1].set(jnp.where(breakdown, 0, next_norm).astype(dtype))

    def apply_previous(i, h):
      u, v = _rotate(cs[i], sn[i], h[i], h[i + 1])
      return h.at[i].set(u).at[i + 1].set(v)

    h = lax.fori_loop(0, k, apply_previous, h)
    c, s = _givens(h[k], h[k + 1])
    diagonal, _ = _rotate(c, s, h[k], h[k + 1])
    column = jnp.where(jnp.arange(restart + 1) < k, h, 0).at[k].set(diagonal)[:restart]
    R = R.at[:, k].set(column)
    gk, gk1 = _rotate(c, s, g[k], g[k + 1])
    g = g.at[k].set(gk).at[k + 1].set(gk1)
    return k + 1, V, R, g, cs.at[k].set(c), sn.at[k].set(s), breakdown

  state = (0, V, R, g, cs, sn, beta == 0)
  k, V, R, g, *_ = lax.while_loop(going, step, state)
  y = lax.linalg.triangular_solve(R, jnp.where(jnp.arange(restart) < k, g[:restart], 0)[:, None],
                                  left_side=True, lower=False)[:, 0]
  return x + V[:restart].T @ y


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
  """Solves `A x = b` by restarted GMRES (left preconditioned by `M`); returns `(x, info)`.

  `restart` is the size of the Krylov basis built per cycle and `maxiter` the number of
  cycles.  `solve_method="incremental"` ends a cycle as soon as the preconditioned residual
  is small enough; `"batched"` always builds the whole basis (fewer, larger steps)."""
  if solve_method not in ("incremental", "batched"):
    raise ValueError(f"gmres: invalid solve_method {solve_method!r}, must be either "
                     "'incremental' or 'batched'")
  A, b, x0, M, _, unravel = _flat_system("gmres", A, b, x0, M)
  size = b.shape[0]
  restart = min(int(restart), size)
  maxiter = 10 * size if maxiter is None else maxiter
  b_norm = jnp.sqrt(_norm2(b))
  atol = jnp.maximum(tol * b_norm, atol)
  ptol = jnp.sqrt(_norm2(M(b))) * jnp.minimum(1.0, atol / b_norm)

  def solve(A, b):
    def unconverged(state):
      _, residual, k = state
      return (k < maxiter) & (jnp.sqrt(_norm2(residual)) > atol)

    def cycle(state):
      x, residual, k = state
      x = _gmres_cycle(A, M, x, residual, restart, ptol, solve_method == "incremental")
      return x, M(b - A(x)), k + 1

    return lax.while_loop(unconverged, cycle, (x0, M(b - A(x0)), 0))[0]

  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
  info = jnp.where(jnp.isnan(jnp.sqrt(_norm2(x))), -1, 0)
  return unravel(x), info


def _krylov(name, method, A, b, x0, tol, atol, maxiter, M, symmetric: bool):
  A, b, x0, M, identity_M, unravel = _flat_system(name, A, b, x0, M)
  maxiter = 10 * b.shape[0] if maxiter is None else maxiter

  def solve(A, b):
    return method(A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M, identity_M=identity_M)

  symmetric = symmetric and not jnp.issubdtype(b.dtype, jnp.complexfloating)
  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
  return unravel(x), None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solves `A x = b` for a Hermitian positive definite `A` by (preconditioned) conjugate
  gradients; returns `(x, None)`."""
  return _krylov("cg", _cg, A, b, x0, tol, atol, maxiter, M, symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solves `A x = b` by the (preconditioned) stabilized biconjugate gradient method;
  returns `(x, None)`."""
  return _krylov("bicgstab", _bicgstab, A, b, x0, tol, atol, maxiter, M, symmetric=False)


__all__ = ["bicgstab", "cg", "gmres"]
