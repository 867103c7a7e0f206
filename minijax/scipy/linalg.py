"""`minijax.scipy.linalg`: scipy's linear algebra on `minijax.lax.linalg`, as JAX provides it.

The factorizations follow scipy's conventions where they differ from numpy's: `cholesky`
returns the upper factor by default (`lower=False`) and reads only that triangle,
`cho_factor`/`lu_factor` return the factors with their flags or pivots for `cho_solve` and
`lu_solve`, `lu` returns `(p, l, u)` with `a = p @ l @ u`, and `qr` has the modes "full",
"economic" and "r" (whose result is a 1-tuple).  scipy's `overwrite_*`, `check_finite`,
`lwork` and `debug` arguments are accepted and ignored, as in JAX.

`solve` with `assume_a="pos"` factors once with Cholesky and, like `numpy.linalg.solve`, is
a `custom_jvp` whose tangent `A^-1 (db - dA x)` reuses that factor.  `expm` is the
Padé approximation with scaling and squaring (Higham 2005): the degree (3 to 13, or 3 to 7
in single precision) is picked from the matrix's 1-norm, the matrix scaled by a power of two
so that the approximation is accurate, and the result squared back; more than
`max_squarings` squarings give NaNs, as in JAX.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.custom_derivatives import custom_jvp
from minijax.lax import linalg as lax_linalg
from minijax.numpy import _util
from minijax.numpy import linalg as np_linalg


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _inexact(name, *args):
  return _util.promote_inexact(name, *args)


def _H(x):
  return lax_linalg.matrices.H(x)


# ----------------------------------------------------------------------------- Cholesky

@_util.compiled_when_eager(dynamic=1)
def _cholesky(a, lower):
  (x,) = _inexact("jax.scipy.linalg.cholesky", a)
  L = lax_linalg.cholesky(x if lower else _H(x), symmetrize_input=False)
  return L if lower else _H(L)


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """The Cholesky factor of Hermitian positive definite `a`: upper (`a = U^H U`) unless
  `lower`; only that triangle of `a` is read."""
  return _cholesky(a, bool(lower))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """`(c, lower)` for `cho_solve`: the Cholesky factor and which triangle it is."""
  return cholesky(a, lower=lower), lower


def _vector_rhs(name, a, b):
  """Whether `b` is one vector per matrix (`[..., n]`) rather than `[..., n, k]`."""
  if _util.ndim(b) == 1:
    return True
  if _util.ndim(a) == _util.ndim(b) + 1 and _util.shape(a)[-1] == _util.shape(b)[-1]:
    import warnings
    warnings.warn(f"jax.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are deprecated, "
                  "and in the future will be treated as a batched 2D solve. Use "
                  f"{name}(..., b[..., None]).squeeze(-1) to avoid this warning.",
                  FutureWarning, stacklevel=3)
    return True
  return False


def _triangular_solves(a, b, vector, steps):
  """`b` through the triangular solves `steps` (keyword dicts) with `a`, batch axes
  broadcast."""
  jnp = _jnp()
  if vector:
    b = jnp.expand_dims(b, -1)
  batch = _util.broadcast_shapes("solve", _util.shape(a)[:-2], _util.shape(b)[:-2])
  a = jnp.broadcast_to(a, batch + _util.shape(a)[-2:])
  b = jnp.broadcast_to(b, batch + _util.shape(b)[-2:])
  for kw in steps:
    b = lax_linalg.triangular_solve(a, b, left_side=True, **kw)
  return b[..., 0] if vector else b


@_util.compiled_when_eager(dynamic=2)
def _cho_solve(c, b, lower):
  c, b = _inexact("jax.scipy.linalg.cho_solve", c, b)
  vector = _vector_rhs("cho_solve", c, b)
  return _triangular_solves(c, b, vector, [
      dict(lower=lower, transpose_a=not lower, conjugate_a=not lower),
      dict(lower=lower, transpose_a=lower, conjugate_a=lower)])


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
  """The solution of `a x = b` from `cho_factor(a)`."""
  c, lower = c_and_lower
  return _cho_solve(c, b, bool(lower))


# ----------------------------------------------------------------------------- triangular

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


@_util.compiled_when_eager(dynamic=2)
def _solve_triangular(a, b, trans, lower, unit_diagonal):
  if trans not in _TRANS:
    raise ValueError(f"Invalid 'trans' value {trans}")
  transpose_a, conjugate_a = _TRANS[trans]
  a, b = _inexact("jax.scipy.linalg.solve_triangular", a, b)
  vector = _vector_rhs("solve_triangular", a, b)
  return _triangular_solves(a, b, vector, [
      dict(lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
           unit_diagonal=unit_diagonal)])


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
  """The solution of `op(a) x = b` for triangular `a` (`trans`: 0/"N", 1/"T" or 2/"C")."""
  return _solve_triangular(a, b, trans, bool(lower), bool(unit_diagonal))


# ----------------------------------------------------------------------------- solves

def _cho_solve_general_impl(a, b, lower):
  return _cho_solve(cholesky(a, lower=lower), b, lower)


_cho_solve_general = custom_jvp(_cho_solve_general_impl, nondiff_argnums=(2,))


@_cho_solve_general.defjvp
def _cho_solve_jvp(lower, primals, tangents):
  (a, b), (da, db) = primals, tangents
  c = cholesky(a, lower=lower)
  x = _cho_solve(c, b, lower)
  return x, _cho_solve(c, db - lax_linalg.matrices.matmul(da, x), lower)


@_util.compiled_when_eager(dynamic=2)
def _solve(a, b, assume_a, lower):
  if assume_a != "pos":
    return np_linalg.solve(a, b)
  jnp = _jnp()
  x, y = _inexact("jax.scipy.linalg.solve", a, b)
  np_linalg._solve_shapes(x, y)
  vector = _util.ndim(x) == _util.ndim(y) + 1
  if vector:
    y = jnp.expand_dims(y, -1)
  batch = _util.broadcast_shapes("solve", _util.shape(x)[:-2], _util.shape(y)[:-2])
  x = jnp.broadcast_to(x, batch + _util.shape(x)[-2:])
  y = jnp.broadcast_to(y, batch + _util.shape(y)[-2:])
  out = _cho_solve_general(x, y, lower)
  return out[..., 0] if vector else out


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
  """The solution of `a x = b`; `assume_a="pos"` (positive definite) solves by Cholesky,
  reading the `lower` (or upper) triangle; "gen", "sym" and "her" by LU."""
  valid = ["gen", "sym", "her", "pos"]
  if assume_a not in valid:
    raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
  return _solve(a, b, assume_a, bool(lower))


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
  return np_linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
  return np_linalg.det(a)


# ----------------------------------------------------------------------------- LU

@_util.compiled_when_eager(dynamic=1)
def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
  """`(lu, piv)`: the packed LU factors and the 0-based row swaps, for `lu_solve`."""
  (x,) = _inexact("jax.scipy.linalg.lu_factor", a)
  lu_, pivots, _ = lax_linalg.lu(x)
  return lu_, pivots


@_util.compiled_when_eager(dynamic=2)
def _lu_solve(lu_, pivots, b, trans):
  lu_, b = _inexact("jax.scipy.linalg.lu_solve", lu_, b)
  jnp = _jnp()
  m = _util.shape(lu_)[-2]
  permutation = lax_linalg.lu_pivots_to_permutation(pivots, m)
  vector = _vector_rhs("lu_solve", lu_, b)
  if vector:
    b = jnp.expand_dims(b, -1)
  batch = _util.broadcast_shapes("lu_solve", _util.shape(lu_)[:-2],
                                 _util.shape(permutation)[:-1], _util.shape(b)[:-2])
  lu_ = jnp.broadcast_to(lu_, batch + _util.shape(lu_)[-2:])
  permutation = jnp.broadcast_to(permutation, batch + (m,))
  b = jnp.broadcast_to(b, batch + _util.shape(b)[-2:])
  out = lax_linalg.lu_solve(lu_, permutation, b, trans)
  return out[..., 0] if vector else out


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
  """The solution of `a x = b` (trans 0), `a^T x = b` (1) or `a^H x = b` (2) from
  `lu_factor(a)`."""
  lu_, pivots = lu_and_piv
  return _lu_solve(lu_, pivots, b, trans)


@_util.compiled_when_eager(dynamic=1)
def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """`(p, l, u)` with `a = p @ l @ u` (`l` unit lower, `u` upper triangular), or
  `(p @ l, u)` with `permute_l`; for one matrix `[m, n]`."""
  jnp = _jnp()
  (x,) = _inexact("jax.scipy.linalg.lu", a)
  lu_, _, permutation = lax_linalg.lu(x)
  dtype = _util.dtype(x)
  m, n = _util.shape(x)
  p = jnp.real(jnp.array(permutation[None, :] == jnp.arange(m, dtype=permutation.dtype)[:, None],
                         dtype=dtype))
  k = min(m, n)
  l = jnp.tril(lu_, -1)[:, :k] + jnp.eye(m, k, dtype=dtype)
  u = jnp.triu(lu_)[:k, :]
  if permute_l:
    return jnp.matmul(p, l), u
  return p, l, u


# ----------------------------------------------------------------------------- QR, SVD, eigh

@_util.compiled_when_eager(dynamic=1)
def _qr(a, mode, pivoting):
  if mode in ("full", "r"):
    full_matrices = True
  elif mode == "economic":
    full_matrices = False
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  (x,) = _inexact("jax.scipy.linalg.qr", a)
  q, r, *p = lax_linalg.qr(x, pivoting=pivoting, full_matrices=full_matrices)
  return (r, *p) if mode == "r" else (q, r, *p)


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
  """`(q, r)` (mode "full" or "economic"), or `(r,)` (mode "r"); with `pivoting` the column
  permutation `p` follows (`a[:, p] = q @ r`)."""
  return _qr(a, mode, bool(pivoting))


@_util.compiled_when_eager(dynamic=1)
def _svd(a, full_matrices, compute_uv):
  (x,) = _inexact("jax.scipy.linalg.svd", a)
  return lax_linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
  """`(u, s, vh)` with `a = u diag(s) vh`, or `s` alone."""
  return _svd(a, bool(full_matrices), bool(compute_uv))


@_util.compiled_when_eager(dynamic=1)
def _eigh(a, lower, eigvals_only):
  (x,) = _inexact("jax.scipy.linalg.eigh", a)
  v, w = lax_linalg.eigh(x, lower=lower)
  return w if eigvals_only else (w, v)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
  """`(w, v)`: ascending eigenvalues and eigenvectors of Hermitian `a` (or `w` alone)."""
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if type != 1:
    raise NotImplementedError("Only the type=1 case of eigh is implemented.")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  return _eigh(a, bool(lower), bool(eigvals_only))


# ----------------------------------------------------------------------------- expm

# (degree of the Padé approximant, its coefficients b_0 .. b_m)
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
# Higham's bounds on the 1-norm up to which each degree is accurate, and the norm that the
# scaling brings the matrix under (double precision, then single precision)
_DEGREES = {True: ((3, 5, 7, 9, 13), (1.495585217958292e-002, 2.539398330063230e-001,
                                      9.504178996162932e-001, 2.097847961257068e+000),
                   5.371920351148152),
            False: ((3, 5, 7), (4.258730016922831e-001, 1.880152677804762e+000),
                    3.925724783138660)}


def _pade(degree):
  b = _PADE[degree]

  def uv(A):
    """The odd (U) and even (V) parts of the approximant's numerator, `p = U + V`."""
    jnp = _jnp()
    ident = jnp.eye(A.shape[0], dtype=A.dtype)
    A2 = A @ A
    if degree == 13:
      A4 = A2 @ A2
      A6 = A4 @ A2
      U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2
               + b[1] * ident)
      V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + \
          b[0] * ident
      return U, V
    powers = [ident, A2]
    while len(powers) <= degree // 2:
      powers.append(powers[-1] @ A2)
    U = A @ sum(b[2 * k + 1] * powers[k] for k in range(degree // 2 + 1))
    V = sum(b[2 * k] * powers[k] for k in range(degree // 2 + 1))
    return U, V
  return uv


def _expm_one(A, upper_triangular, max_squarings):
  jnp = _jnp()
  double = A.dtype in (np.float64, np.complex128)
  degrees, bounds, maxnorm = _DEGREES[double]
  norm1 = np_linalg.norm(A, 1)
  n_squarings = jnp.maximum(0, jnp.floor(jnp.log2(norm1 / maxnorm)))
  A = A / (2 ** n_squarings).astype(A.dtype)
  idx = jnp.digitize(norm1, jnp.array(bounds, dtype=norm1.dtype))
  U, V = lax.switch(idx, [_pade(d) for d in degrees], A)
  P, Q = U + V, -U + V
  R = solve_triangular(Q, P) if upper_triangular else np_linalg.solve(Q, P)

  def square(i, R):
    return lax.cond(i < n_squarings, lambda r: r @ r, lambda r: r, R)

  R = lax.fori_loop(0, max_squarings, square, R)
  return jnp.where(n_squarings > max_squarings, jnp.full_like(R, np.nan), R)


@_util.compiled_when_eager(dynamic=1)
def _expm(A, upper_triangular, max_squarings):
  from minijax import api
  (x,) = _inexact("jax.scipy.linalg.expm", A)
  shape = _util.shape(x)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={shape}.")
  fn = lambda a: _expm_one(a, upper_triangular, max_squarings)  # noqa: E731
  for _ in shape[:-2]:
    fn = api.vmap(fn)
  return fn(x)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
  """The matrix exponential of `A` (`[..., n, n]`)."""
  return _expm(A, bool(upper_triangular), int(max_squarings))


def toeplitz(c, r=None):
  """The Toeplitz matrix with first column `c` and first row `r` (default `conj(c)`);
  leading dimensions of `c` and `r` broadcast.  Entry `(i, j)` is `c[i - j]` when
  `i >= j`, else `r[j - i]`."""
  jnp = _jnp()
  c = jnp.atleast_1d(c)
  r = jnp.conj(c) if r is None else jnp.atleast_1d(r)
  dtype = jnp.result_type(c, r)
  c, r = c.astype(dtype), r.astype(dtype)
  n, m = c.shape[-1], r.shape[-1]
  batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
  c = jnp.broadcast_to(c, (*batch, n))
  r = jnp.broadcast_to(r, (*batch, m))
  # One vector holding r reversed (without r[0]) then c: entry (i, j) is at m - 1 + i - j.
  values = jnp.concatenate([jnp.flip(r[..., 1:], -1), c], axis=-1)
  index = (m - 1) + np.arange(n)[:, None] - np.arange(m)[None, :]
  return values[..., index]


from minijax.scipy.special_matrices import (  # noqa: E402,F401
    block_diag, circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion,
    hadamard, hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal)
from minijax.scipy.linalg_schur import (  # noqa: E402,F401
    eigh_tridiagonal, expm_frechet, funm, hessenberg, polar, qr_multiply, rsf2csf, schur,
    solve_sylvester, sqrtm)
