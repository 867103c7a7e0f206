"""`jax.scipy.linalg`'s functions built on the Schur and Hessenberg decompositions and on
factorizations of their own: `schur`, `hessenberg`, `sqrtm`, `solve_sylvester`, `funm`,
`polar`, `qr_multiply`, `expm_frechet`, `eigh_tridiagonal`, `rsf2csf`.

`sqrtm` and `solve_sylvester` work in the complex Schur basis, where the problem is
triangular: the square root R of an upper triangular T is found column by column, each
column a triangular solve `(R[:j, :j] + R[j, j] I) r = T[:j, j]`; the Sylvester equation
`A X + X B = C` becomes `T Y + Y S = U^H C V` (Bartels and Stewart), solved column by column
too; `funm` applies Parlett's recurrence to the triangular factor.  `polar` is computed from
the SVD, `expm_frechet` is the JVP of `expm`, `eigh_tridiagonal` the dense eigensolver's.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.lax import linalg as lax_linalg


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _H(x):
  jnp = _jnp()
  return jnp.conj(jnp.swapaxes(x, -1, -2))


def _square_2d(name, a):
  jnp = _jnp()
  a = jnp.asarray(a)
  if a.ndim != 2 or a.shape[0] != a.shape[1]:
    raise ValueError(f"{name} expects a square matrix, got shape {a.shape}")
  if not jnp.issubdtype(a.dtype, jnp.inexact):
    a = a.astype(jnp.result_type(a.dtype, float))
  return a


def schur(a, output: str = "real"):
  """`(T, Z)`, the Schur decomposition `a = Z T Z^H` (`output='complex'`: over the complex
  numbers, T then triangular)."""
  jnp = _jnp()
  if output not in ("real", "complex"):
    raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
  a = jnp.asarray(a)
  if output == "complex":
    a = a.astype(jnp.result_type(a.dtype, np.complex64))
  return lax_linalg.schur(a)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
  """The upper Hessenberg form H of `a` (`a = Q H Q^H`), and Q when `calc_q`."""
  jnp = _jnp()
  packed, taus = lax_linalg.hessenberg(jnp.asarray(a))
  h = jnp.triu(packed, -1)
  if not calc_q:
    return h
  n = packed.shape[-1]
  q = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
  eye = jnp.broadcast_to(jnp.eye(n, dtype=packed.dtype), packed.shape)
  return h, eye.at[..., 1:, 1:].set(q)


def _triangular_sqrt(t):
  """The upper triangular square root R of the upper triangular `t` (R @ R = t)."""
  jnp = _jnp()
  n = t.shape[-1]
  diagonal = jnp.sqrt(jnp.diagonal(t))
  r = jnp.zeros_like(t).at[0, 0].set(diagonal[0])
  for j in range(1, n):
    shifted = r[:j, :j] + diagonal[j] * jnp.eye(j, dtype=t.dtype)
    column = lax_linalg.triangular_solve(shifted, t[:j, j:j + 1], left_side=True, lower=False)
    r = r.at[:j, j].set(column[:, 0]).at[j, j].set(diagonal[j])
  return r


def sqrtm(A, blocksize: int = 1):
  """The principal square root of the square matrix `A` (complex in general)."""
  if blocksize != 1:
    raise NotImplementedError("sqrtm: only blocksize=1 is implemented (as in JAX)")
  a = _square_2d("sqrtm", A)
  t, z = schur(a, output="complex")
  return z @ _triangular_sqrt(t) @ _H(z)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
  """X with `A X + X B = C` (Bartels and Stewart's method, in complex Schur bases); the
  result is real when A, B and C are."""
  jnp = _jnp()
  if method != "schur":
    raise ValueError(f"solve_sylvester: method must be 'schur', got {method!r}")
  a, b = _square_2d("solve_sylvester", A), _square_2d("solve_sylvester", B)
  c = jnp.asarray(C)
  if c.shape != (a.shape[0], b.shape[0]):
    raise ValueError(f"solve_sylvester: C must have shape {(a.shape[0], b.shape[0])}, got "
                     f"{c.shape}")
  real = not any(jnp.iscomplexobj(x) for x in (a, b, c))
  t, u = schur(a, output="complex")
  s, v = schur(b, output="complex")
  f = _H(u) @ c.astype(t.dtype) @ v
  m, n = f.shape
  columns = []
  for j in range(n):
    rhs = f[:, j]
    for k, y in enumerate(columns):
      rhs = rhs - s[k, j] * y
    shifted = t + s[j, j] * jnp.eye(m, dtype=t.dtype)
    columns.append(lax_linalg.triangular_solve(shifted, rhs[:, None], left_side=True,
                                               lower=False)[:, 0])
  x = u @ jnp.stack(columns, axis=1) @ _H(v)
  return jnp.real(x).astype(jnp.result_type(a.dtype, b.dtype, c.dtype)) if real else x


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
  """`(u, p)`: `a = u p` (`side='right'`) or `a = p u` (`'left'`), u with orthonormal
  columns and p Hermitian positive semi-definite.  Computed from the SVD whichever
  `method` is named (JAX's QDWH iteration converges to the same factors)."""
  jnp = _jnp()
  if side not in ("right", "left"):
    raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
  if method not in ("qdwh", "svd"):
    raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}")
  a = jnp.asarray(a)
  u, s, vh = jnp.linalg.svd(a, full_matrices=False)
  unitary = u @ vh
  columns = s.astype(a.dtype)[..., None, :]  # (scaling each column, of a batch too)
  if side == "right":
    p = (_H(vh) * columns) @ vh
  else:
    p = (u * columns) @ _H(u)
  return unitary, p


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
  """`(c @ Q, R)` (`mode='right'`) or `(Q @ c, R)` (`'left'`) for the economic QR
  decomposition `a = Q R`; `conjugate` uses Q's conjugate."""
  jnp = _jnp()
  if pivoting:
    raise NotImplementedError("qr_multiply with pivoting=True is not implemented (as in JAX)")
  if mode not in ("right", "left"):
    raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
  q, r = jnp.linalg.qr(jnp.asarray(a), mode="reduced")
  if conjugate:
    q = jnp.conj(q)
  c = jnp.asarray(c)
  if mode == "left":
    return (q @ c if c.ndim > 1 else q @ c), r
  return c @ q, r


def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
  """The Frechet derivative of the matrix exponential at `A` in the direction `E`, and
  `expm(A)` first when `compute_expm` (computed as the JVP of `expm`)."""
  from minijax.interpreters import ad
  from minijax.scipy.linalg import expm
  jnp = _jnp()
  if method not in (None, "SPS", "blockEnlarge"):
    raise ValueError(f"expm_frechet: unknown method {method!r}")
  A, E = jnp.asarray(A), jnp.asarray(E)
  if A.shape != E.shape or A.ndim < 2 or A.shape[-1] != A.shape[-2]:
    raise ValueError(f"expm_frechet: A and E must be square matrices of one shape, got "
                     f"{A.shape} and {E.shape}")
  (value,), (derivative,) = ad.jvp_flat(lambda a: [expm(a)], [A], [E.astype(A.dtype)])
  return (value, derivative) if compute_expm else derivative


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
  """The eigenvalues (ascending) of the symmetric tridiagonal matrix with diagonal `d` and
  off-diagonal `e`, from the dense symmetric eigensolver; `select='i'` keeps those of
  indices `select_range[0]..select_range[1]`.  Eigenvectors are not implemented (as in
  JAX): `eigvals_only=True` is required."""
  jnp = _jnp()
  if not eigvals_only:
    raise NotImplementedError("eigh_tridiagonal: computing eigenvectors is not implemented "
                              "(as in JAX); pass eigvals_only=True")
  if select not in ("a", "i"):
    raise NotImplementedError(f"eigh_tridiagonal: select={select!r} is not implemented; "
                              "use 'a' or 'i'")
  d, e = jnp.asarray(d), jnp.asarray(e)
  if jnp.iscomplexobj(d) or jnp.iscomplexobj(e):
    raise ValueError("eigh_tridiagonal: d and e must be real")
  if d.ndim != 1 or e.shape != (max(d.shape[0] - 1, 0),):
    raise ValueError(f"eigh_tridiagonal expects d of shape (N,) and e of shape (N - 1,), "
                     f"got {d.shape} and {e.shape}")
  dtype = jnp.result_type(d.dtype, e.dtype, float)
  t = jnp.diag(d.astype(dtype)) + jnp.diag(e.astype(dtype), 1) + jnp.diag(e.astype(dtype), -1)
  values = jnp.linalg.eigvalsh(t)
  if select == "i":
    lo, hi = (int(i) for i in select_range)
    values = values[lo:hi + 1]
  return values


def funm(A, func, disp: bool = True):
  """`func` of the square matrix `A` (applied to the eigenvalues, through Parlett's
  recurrence on the complex Schur form).  With `disp=False`, also an estimate of the
  relative error, as scipy returns (here the recurrence's, taken as 0 when it has no
  coinciding eigenvalues to divide by)."""
  jnp = _jnp()
  a = _square_2d("funm", A)
  t, z = schur(a, output="complex")
  n = t.shape[0]
  f = jnp.diag(func(jnp.diagonal(t)).astype(t.dtype))
  for p in range(1, n):
    for i in range(n - p):
      j = i + p
      s = t[i, j] * (f[j, j] - f[i, i])
      if p > 1:
        s = s + t[i, i + 1:j] @ f[i + 1:j, j] - f[i, i + 1:j] @ t[i + 1:j, j]
      f = f.at[i, j].set(s / (t[j, j] - t[i, i]))
  out = z @ f @ _H(z)
  if disp:
    return out
  return out, jnp.zeros((), jnp.real(out).dtype)


def rsf2csf(T, Z, check_finite: bool = True):
  """The complex Schur form `(T', Z')` of a real Schur form `(T, Z)` (`a = Z T Z^T`): each
  2x2 diagonal block (a complex conjugate pair) is made triangular by a complex Givens
  rotation, applied to T's rows and columns and to Z's columns, from the bottom up (of
  each pair of a batch, along leading axes)."""
  from minijax import api
  jnp = _jnp()
  t, z = jnp.asarray(T), jnp.asarray(Z)
  if t.ndim < 2 or t.shape[-1] != t.shape[-2] or z.shape != t.shape:
    raise ValueError(f"rsf2csf expects square T and Z of one shape, got {t.shape} and "
                     f"{z.shape}")
  if t.ndim > 2:
    return api.vmap(rsf2csf)(t, z)
  dtype = jnp.result_type(t.dtype, z.dtype, np.complex64)
  t, z = t.astype(dtype), z.astype(dtype)
  n = t.shape[0]
  eps = jnp.finfo(dtype).eps
  for m in range(n - 1, 0, -1):
    block = t[m - 1:m + 1, m - 1:m + 1]
    coupled = jnp.abs(t[m, m - 1]) > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m]))
    # an eigenvalue of the block: mean +- sqrt(mean^2 - det)
    mean = (block[0, 0] + block[1, 1]) / 2
    det = block[0, 0] * block[1, 1] - block[0, 1] * block[1, 0]
    mu = mean + jnp.sqrt(mean * mean - det)
    r = jnp.sqrt(jnp.abs(mu - t[m, m]) ** 2 + jnp.abs(t[m, m - 1]) ** 2)
    safe_r = jnp.where(coupled, r, 1)
    c, s = (mu - t[m, m]) / safe_r, t[m, m - 1] / safe_r
    g = jnp.array([[jnp.conj(c), s], [-s, c]])
    rotated = t.at[m - 1:m + 1, m - 1:].set(g @ t[m - 1:m + 1, m - 1:])
    rotated = rotated.at[:m + 1, m - 1:m + 1].set(rotated[:m + 1, m - 1:m + 1] @ _H(g))
    rotated = rotated.at[m, m - 1].set(0)
    t = jnp.where(coupled, rotated, t)
    z = jnp.where(coupled, z.at[:, m - 1:m + 1].set(z[:, m - 1:m + 1] @ _H(g)), z)
  return t, z
