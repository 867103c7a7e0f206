"""`minijax.numpy.linalg`: numpy's linear algebra on `minijax.lax.linalg`, as JAX builds it.

Decompositions (`cholesky`, `qr`, `eigh`, `svd`) promote to an inexact dtype and call the lax
primitives, returning JAX's named tuples (`QRResult`, `EighResult`, `SVDResult`,
`SlogdetResult`).  Solves factor once with `lu`: `solve` is a `custom_jvp` whose tangent
`A^-1 (db - dA x)` reuses that factorization (linear in the tangents, so reverse mode
transposes it), `inv` solves against the identity.  `det` is the product of LU's diagonal
(explicit formulas for 2x2 and 3x3) with JAX's jvp, `trace(adj(A) dA)` computed by a
cofactor solve that stays finite for singular matrices; `slogdet` differentiates as
`trace(A^-1 dA)`; `pinv` (an SVD with small singular values cut off) has the Golub-Pereyra
jvp.  Batch axes (`[..., m, n]`) broadcast as numpy's do.  Products (`matmul`, `tensordot`,
`outer`, `multi_dot`) and norms (vector, matrix, and the spectral and nuclear norms by SVD)
complete the module.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.custom_derivatives import custom_jvp
from minijax.lax import linalg as lax_linalg
from minijax.lax.linalg.qr import geqrf
from minijax.numpy import _util
from minijax.numpy.products import matmul, tensordot  # noqa: F401
from minijax.numpy.products import outer as _outer



def outer(x1, x2, /):
  """The outer product of two 1-d arrays (the array API's: numpy's `outer` flattens)."""
  if _util.ndim(x1) != 1 or _util.ndim(x2) != 1:
    raise ValueError(f"Input arrays must be one-dimensional, but they are "
                     f"x1.ndim={_util.ndim(x1)} and x2.ndim={_util.ndim(x2)}")
  return _outer(x1, x2)

def _jnp():
  import minijax.numpy as jnp
  return jnp


class QRResult(NamedTuple):
  Q: object
  R: object


class EigResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class EighResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class SVDResult(NamedTuple):
  U: object
  S: object
  Vh: object


class SlogdetResult(NamedTuple):
  sign: object
  logabsdet: object


def _inexact(name, *args):
  return _util.promote_inexact(name, *args)


def _H(x):
  return lax_linalg.matrices.H(x)


def _square(name, a, what="Argument"):
  shape = _util.shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"{what} to {name} must have shape [..., n, n], got {shape}.")


# ----------------------------------------------------------------------------- decompositions

@_util.compiled_when_eager(dynamic=1)
def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
  """The lower (or `upper`) Cholesky factor of Hermitian positive definite `a`."""
  (x,) = _inexact("jnp.linalg.cholesky", a)
  L = lax_linalg.cholesky(x, symmetrize_input=symmetrize_input)
  return _H(L) if upper else L


@_util.compiled_when_eager(dynamic=1)
def qr(a, mode: str = "reduced"):
  """`QRResult(Q, R)` (or R alone for mode="r"); mode "complete" gives the full Q, mode
  "raw" LAPACK's geqrf: `(h, taus)`, h the transposed matrix of reflectors and R."""
  (x,) = _inexact("jnp.linalg.qr", a)
  if mode == "raw":
    h, taus = geqrf(x)
    return QRResult(lax_linalg.matrices.T(h), taus)
  if mode in ("reduced", "r", "full"):
    full_matrices = False
  elif mode == "complete":
    full_matrices = True
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  q, r = lax_linalg.qr(x, full_matrices=full_matrices)
  return r if mode == "r" else QRResult(q, r)


def _lower(UPLO):
  if UPLO is None or UPLO == "L":
    return True
  if UPLO == "U":
    return False
  raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")


@_util.compiled_when_eager(dynamic=1)
def eigh(a, UPLO=None, symmetrize_input: bool = True):
  """`EighResult(eigenvalues, eigenvectors)` of Hermitian (symmetric) `a`, ascending."""
  (x,) = _inexact("jnp.linalg.eigh", a)
  v, w = lax_linalg.eigh(x, lower=_lower(UPLO), symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def eig(a):
  """`EigResult(eigenvalues, eigenvectors)` of the square matrices `a`: complex, the right
  eigenvectors in the columns (unit 2-norm), LAPACK's geev order."""
  (x,) = _inexact("jnp.linalg.eig", a)
  w, v = lax_linalg.eig(x, compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a):
  """The eigenvalues of the square matrices `a` (complex)."""
  (x,) = _inexact("jnp.linalg.eigvals", a)
  return lax_linalg.eig(x, compute_left_eigenvectors=False,
                        compute_right_eigenvectors=False)[0]


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
  """The eigenvalues of Hermitian (symmetric) `a`, ascending."""
  return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


@_util.compiled_when_eager(dynamic=1)
def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
  """`SVDResult(U, S, Vh)` with `a = U diag(S) Vh` (S descending), or S alone.  With
  `hermitian`, from the eigendecomposition of `(a + a^H) / 2`."""
  (x,) = _inexact("jnp.linalg.svd", a)
  if hermitian:
    return _hermitian_svd(x, compute_uv, subset_by_index)
  out = lax_linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv,
                       subset_by_index=subset_by_index)
  return SVDResult(*out) if compute_uv else out


def _hermitian_svd(x, compute_uv, subset_by_index):
  jnp = _jnp()
  vectors, values = lax_linalg.eigh(x, subset_by_index=subset_by_index)
  s = lax.abs(values)
  last = _util.ndim(s) - 1
  if not compute_uv:
    return lax.rev(lax.sort(s, last), (last,))
  sign = lax.sign(values)
  idxs = lax.broadcasted_iota(dtypes.int32, _util.shape(s), last)
  s, idxs, sign = lax.sort((s, idxs, sign), last, num_keys=1)
  s, idxs, sign = (lax.rev(t, (last,)) for t in (s, idxs, sign))
  u = jnp.take_along_axis(vectors, jnp.expand_dims(idxs, -2), axis=-1)
  vh = _H(u * jnp.expand_dims(sign, -2).astype(u.dtype))
  return SVDResult(u, s, vh)


def svdvals(x, /):
  return svd(x, compute_uv=False)


# ----------------------------------------------------------------------------- solves

def _solve_shapes(a, b):
  sa, sb = _util.shape(a), _util.shape(b)
  if len(sa) < 2:
    raise ValueError(f"left hand array must be at least two dimensional; got a.shape={sa}")
  if len(sb) > 1 and len(sa) == len(sb) + 1 and sa[-1] == sb[-1] and sa[-1] != sb[-2]:
    raise ValueError(f"Invalid shapes for solve: {sa}, {sb}. Prior to JAX v0.5.0, this would "
                     "have been treated as a batched 1-dimensional solve. To recover this "
                     "behavior, use solve(a, b[..., None]).squeeze(-1).")
  core_b = sb[-1:] if len(sb) == 1 else sb[-2:]
  if sa[-1] != sa[-2] or core_b[0] != sa[-1]:
    raise ValueError("The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] "
                     f"or b=[..., m]; got a={sa} and b={sb}")
  batch = _util.broadcast_shapes("solve", sa[:-2], sb[:-len(core_b)] if len(sb) > 1 else ())
  return tuple(batch), core_b


@custom_jvp
def _solve(a, b):
  lu_, _, permutation = lax_linalg.lu(a)
  return lax_linalg.lu_solve(lu_, permutation, b)


@_solve.defjvp
def _solve_jvp(primals, tangents):
  a, b = primals
  da, db = tangents
  lu_, _, permutation = lax_linalg.lu(a)
  x = lax_linalg.lu_solve(lu_, permutation, b)
  rhs = lax.sub(db, lax_linalg.matrices.matmul(da, x))
  return x, lax_linalg.lu_solve(lu_, permutation, rhs)


@_util.compiled_when_eager()
def solve(a, b):
  """The solution `x` of `a @ x = b` (`b` is `[..., m]` for one vector per matrix, or
  `[..., m, k]`); batch axes broadcast."""
  x, y = _inexact("jnp.linalg.solve", a, b)
  batch, core_b = _solve_shapes(x, y)
  jnp = _jnp()
  x = jnp.broadcast_to(x, batch + _util.shape(x)[-2:])
  vector = len(core_b) == 1
  y = jnp.broadcast_to(y, batch + core_b)
  if vector:
    y = jnp.expand_dims(y, -1)
  out = _solve(x, y)
  return out[..., 0] if vector else out


@_util.compiled_when_eager()
def inv(a):
  """The inverse of `a` (`[..., n, n]`)."""
  (x,) = _inexact("jnp.linalg.inv", a)
  _square("inv", x)
  shape = _util.shape(x)
  eye = lax_linalg.matrices.eye(_util.dtype(x), shape[-1], batch=shape[:-2])
  return solve(x, eye)


# ----------------------------------------------------------------------------- determinants

def _det_2x2(a):
  return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
  return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2] + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
          + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1] - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
          - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1] - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


def _lu_sign_and_diag(a):
  """The LU factorization's diagonal and the permutation's sign (+1 or -1)."""
  jnp = _jnp()
  lu_, pivots, permutation = lax_linalg.lu(a)
  diag = jnp.diagonal(lu_, axis1=-2, axis2=-1)
  n = _util.shape(a)[-1]
  parity = jnp.count_nonzero(pivots != jnp.arange(n, dtype=pivots.dtype), axis=-1)
  return lu_, permutation, diag, parity


def _slogdet_lu_impl(a):
  jnp = _jnp()
  dtype = _util.dtype(a)
  _, _, diag, parity = _lu_sign_and_diag(a)
  is_zero = jnp.any(diag == 0, axis=-1)
  if jnp.iscomplexobj(a):
    sign = jnp.prod(diag / jnp.abs(diag).astype(dtype), axis=-1)
  else:
    sign = jnp.array(1, dtype=dtype)
    parity = parity + jnp.count_nonzero(diag < 0, axis=-1)
  sign = jnp.where(is_zero, jnp.array(0, dtype), sign * (-2 * (parity % 2) + 1).astype(dtype))
  logdet = jnp.where(is_zero, jnp.array(-np.inf, dtype),
                     jnp.sum(jnp.log(jnp.abs(diag)).astype(dtype), axis=-1))
  return sign, jnp.real(logdet)


_slogdet_lu = custom_jvp(_slogdet_lu_impl)


@_slogdet_lu.defjvp
def _slogdet_jvp(primals, tangents):
  jnp = _jnp()
  (x,), (g,) = primals, tangents
  sign, ans = _slogdet_lu(x)
  # trace(x^-1 g), by the triangular solves (linear in g, so reverse mode transposes them)
  lu_, _, permutation = lax_linalg.lu(x)
  ans_dot = jnp.trace(lax_linalg.lu_solve(lu_, permutation, g), axis1=-1, axis2=-2)
  if jnp.iscomplexobj(x):
    sign_dot = (ans_dot - jnp.real(ans_dot).astype(ans_dot.dtype)) * sign
    ans_dot = jnp.real(ans_dot)
  else:
    sign_dot = jnp.zeros_like(sign)
  return (sign, ans), (sign_dot, ans_dot)


@_util.compiled_when_eager(dynamic=1)
def slogdet(a, *, method=None):
  """`SlogdetResult(sign, logabsdet)`: the determinant as `sign * exp(logabsdet)`."""
  (x,) = _inexact("jnp.linalg.slogdet", a)
  shape = _util.shape(x)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {shape}")
  if method not in (None, "lu"):
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`)"
                     + (" ('qr' is not implemented in minijax)" if method == "qr" else ""))
  return SlogdetResult(*_slogdet_lu(x))


def _cofactor_solve(a, b):
  """`(det(a), adj(a) @ b)`, finite even where `a` is singular (JAX's construction: the LU
  factorization with its last pivot replaced, so that the solve yields the adjugate)."""
  jnp = _jnp()
  n = _util.shape(a)[-1]
  if n == 1:
    return a[..., 0, 0], b
  lu_, permutation, diag, parity = _lu_sign_and_diag(a)
  dtype = _util.dtype(a)
  sign = (-2 * (parity % 2) + 1).astype(dtype)
  partial_det = jnp.cumprod(diag, axis=-1) * sign[..., None]
  lu_ = lu_.at[..., -1, -1].set(1.0 / partial_det[..., -2])
  x = b
  d = jnp.ones(_util.shape(x)[:-1], dtype)
  d = lax_linalg.triangular_solve(lu_, d, left_side=True, lower=False)
  d = jnp.any(jnp.isnan(d) | jnp.isinf(d), axis=-1)
  d = jnp.broadcast_to(d[..., None, None], _util.shape(x))
  x = jnp.where(d, jnp.zeros_like(x), x)
  x = lax_linalg.matrices.take_rows(x, permutation)
  x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
  x = jnp.concatenate([x[..., :-1, :] * partial_det[..., -1, None, None], x[..., -1:, :]],
                      axis=-2)
  x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
  x = jnp.where(d, jnp.zeros_like(x), x)
  return partial_det[..., -1], x


@custom_jvp
def _det(a):
  sign, logdet = _slogdet_lu(a)
  return sign * _jnp().exp(logdet).astype(_util.dtype(sign))


@_det.defjvp
def _det_jvp(primals, tangents):
  (x,), (g,) = primals, tangents
  y, z = _cofactor_solve(x, g)
  return y, _jnp().trace(z, axis1=-1, axis2=-2)


@_util.compiled_when_eager()
def det(a):
  """The determinant of `a` (`[..., n, n]`)."""
  (x,) = _inexact("jnp.linalg.det", a)
  shape = _util.shape(x)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {shape}")
  if shape[-1] == 2:
    return _det_2x2(x)
  if shape[-1] == 3:
    return _det_3x3(x)
  return _det(x)


# ----------------------------------------------------------------------------- least squares

@_util.compiled_when_eager(dynamic=2)
def _lstsq(a, b, rcond, numpy_resid=False):
  jnp = _jnp()
  a, b = _inexact("jnp.linalg.lstsq", a, b)
  if _util.shape(a)[0] != _util.shape(b)[0]:
    raise ValueError("Leading dimensions of input arrays must match")
  vector = _util.ndim(b) == 1
  if vector:
    b = b[:, None]
  if _util.ndim(a) != 2:
    raise TypeError(f"{_util.ndim(a)}-dimensional array given. Array must be two-dimensional")
  if _util.ndim(b) != 2:
    raise TypeError(f"{_util.ndim(b)}-dimensional array given. Array must be one or "
                    "two-dimensional")
  m, n = _util.shape(a)
  dtype = _util.dtype(a)
  real = _util.dtype(lax.abs(a))
  if rcond is None:
    rcond = float(np.finfo(real).eps) * max(n, m)
  elif rcond < 0:
    rcond = float(np.finfo(real).eps)
  u, s, vt = svd(a, full_matrices=False)
  mask = (s > 0) & (s >= jnp.asarray(rcond, real) * jnp.max(s, initial=0))
  rank = jnp.sum(mask)
  safe_s = jnp.where(mask, s, 1).astype(dtype)
  s_inv = jnp.where(mask, 1 / safe_s, 0)[:, None]
  x = _H(vt) @ (s_inv * (_H(u) @ b))
  if numpy_resid and (int(rank) < n or m <= n):
    resid = jnp.asarray([], real)
  else:
    resid = norm(b - a @ x, axis=0) ** 2
  if vector:
    x = x.ravel()
  return x, resid, rank, s


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
  """`(x, residuals, rank, s)`: the least-squares solution of `a @ x = b` by SVD, the squared
  residual norms, the effective rank and the singular values of `a`."""
  if rcond is not None:
    rcond = float(rcond)
  if numpy_resid:
    return _lstsq.__wrapped__(a, b, rcond, True)
  return _lstsq(a, b, rcond)


# ----------------------------------------------------------------------------- pseudo-inverse

def _pinv_impl(a, rtol, hermitian):
  jnp = _jnp()
  (arr,) = _inexact("jnp.linalg.pinv", a)
  m, n = _util.shape(arr)[-2:]
  if m == 0 or n == 0:
    return jnp.zeros(_util.shape(arr)[:-2] + (n, m), _util.dtype(arr))
  arr = jnp.conj(arr)
  u, s, vh = svd(arr, full_matrices=False, hermitian=hermitian)
  cutoff = jnp.expand_dims(rtol, -1) * s[..., 0:1]
  s = jnp.where(s > cutoff, s, np.inf).astype(_util.dtype(u))
  res = jnp.matmul(jnp.swapaxes(vh, -1, -2), jnp.swapaxes(u, -1, -2) / s[..., None])
  return res.astype(_util.dtype(arr))


_pinv = custom_jvp(_pinv_impl, nondiff_argnums=(2,))


@_pinv.defjvp
def _pinv_jvp(hermitian, primals, tangents):
  # Golub and Pereyra (1973), via the derivative of the Moore-Penrose inverse (rtol, an
  # array of cut-offs per matrix, gets no derivative)
  (a, rtol), (a_dot, _) = primals, tangents
  p = _pinv(a, rtol, hermitian)
  if hermitian:
    a, a_dot = lax_linalg.symmetrize(a), lax_linalg.symmetrize(a_dot)
  m, n = _util.shape(a)[-2:]
  if m >= n:
    s = (p @ _H(p)) @ _H(a_dot)
    t = (_H(a_dot) @ _H(p)) @ p
    p_dot = -(p @ a_dot) @ p + s - (s @ a) @ p + t - (p @ a) @ t
  else:
    s = p @ (_H(p) @ _H(a_dot))
    t = _H(a_dot) @ (_H(p) @ p)
    p_dot = -p @ (a_dot @ p) + s - s @ (a @ p) + t - p @ (a @ t)
  return p, p_dot


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
  """The Moore-Penrose pseudo-inverse: singular values up to `rtol` times the largest are
  treated as zero."""
  if rcond is not None:
    if rtol is not None:
      raise ValueError("pinv: only one of rtol and rcond may be specified.")
    rtol = rcond
  (x,) = _inexact("jnp.linalg.pinv", a)
  real = _util.dtype(lax.abs(x))
  if rtol is None:
    rtol = 10.0 * max(_util.shape(x)[-2:], default=1) * np.finfo(real).eps
  return _pinv(x, _jnp().asarray(rtol, real), bool(hermitian))


@_util.compiled_when_eager(dynamic=1)
def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
  """The number of singular values above `rtol` times the largest (by default
  `max(m, n) * eps` times it)."""
  jnp = _jnp()
  if tol is not None:
    if rtol is not None:
      raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
    rtol = tol
  (x,) = _inexact("jnp.linalg.matrix_rank", M)
  if _util.ndim(x) < 2:
    return jnp.any(x != 0).astype(np.int32)
  S = svd(x, full_matrices=False, compute_uv=False, hermitian=hermitian)
  if rtol is None:
    rtol = S.max(-1) * np.asarray(max(_util.shape(x)[-2:]), S.dtype) * np.finfo(S.dtype).eps
  rtol = jnp.expand_dims(jnp.asarray(rtol, S.dtype), -1)
  return jnp.sum(S > rtol, axis=-1)


# ----------------------------------------------------------------------------- products

@_util.compiled_when_eager(dynamic=1)
def matrix_power(a, n: int):
  """`a` multiplied by itself `n` times (by squaring; `inv(a)` for negative `n`)."""
  jnp = _jnp()
  arr = _util.asarray(a)
  if _util.ndim(arr) < 2:
    raise TypeError(f"{_util.ndim(arr)}-dimensional array given. Array must be at least "
                    "two-dimensional")
  if _util.shape(arr)[-2] != _util.shape(arr)[-1]:
    raise TypeError("Last 2 dimensions of the array must be square")
  try:
    n = operator.index(n)
  except TypeError:
    raise TypeError(f"exponent must be an integer, got {n}") from None
  if n == 0:
    return jnp.broadcast_to(jnp.eye(_util.shape(arr)[-1], dtype=_util.dtype(arr)),
                            _util.shape(arr))
  if n < 0:
    arr, n = inv(arr), -n
  result, z = None, None
  while n > 0:
    z = arr if z is None else z @ z
    n, bit = divmod(n, 2)
    if bit:
      result = z if result is None else result @ z
  return result


def multi_dot(arrays, *, precision=None):
  """The product of a chain of matrices (the first and last may be vectors), multiplied in
  the order that needs the fewest scalar multiplications."""
  arrs = [_util.asarray(a) for a in arrays]
  if len(arrs) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
  shapes = [_util.shape(a) for a in arrs]
  if not (len(shapes[0]) in (1, 2) and len(shapes[-1]) in (1, 2)
          and all(len(s) == 2 for s in shapes[1:-1])):
    raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                     "first and last array which may be 1 or 2 dimensional. Got array shapes "
                     f"{shapes}")
  if any(a[-1] != b[0] for a, b in zip(shapes[:-1], shapes[1:])):
    raise ValueError("multi_dot: last dimension of each array must match first dimension of "
                     f"following array. Got array shapes {shapes}")
  first_vector, last_vector = len(shapes[0]) == 1, len(shapes[-1]) == 1
  if first_vector:
    arrs[0] = arrs[0][None, :]
  if last_vector:
    arrs[-1] = arrs[-1][:, None]
  dims = [_util.shape(arrs[0])[0]] + [_util.shape(a)[1] for a in arrs]
  order = _chain_order(dims)
  out = _multiply_chain(arrs, order, 0, len(arrs) - 1)
  if first_vector:
    out = out[0]
  if last_vector:
    out = out[..., 0]
  return out


def _chain_order(dims):
  """The matrix-chain dynamic program: `split[i][j]` is where the product of matrices
  i..j is best split."""
  n = len(dims) - 1
  cost = [[0] * n for _ in range(n)]
  split = [[0] * n for _ in range(n)]
  for length in range(1, n):
    for i in range(n - length):
      j = i + length
      cost[i][j] = float("inf")
      for k in range(i, j):
        c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
        if c < cost[i][j]:
          cost[i][j], split[i][j] = c, k
  return split


def _multiply_chain(arrs, split, i, j):
  if i == j:
    return arrs[i]
  k = split[i][j]
  return matmul(_multiply_chain(arrs, split, i, k), _multiply_chain(arrs, split, k + 1, j))


def matrix_transpose(x, /):
  x = _util.asarray(x)
  if _util.ndim(x) < 2:
    raise ValueError(f"matrix_transpose requires at least 2 dimensions; got "
                     f"ndim={_util.ndim(x)}")
  return lax_linalg.matrices.T(x)


# ----------------------------------------------------------------------------- norms

@_util.compiled_when_eager(dynamic=1)
def norm(x, ord=None, axis=None, keepdims=False):
  """Vector norms (any `ord`) and matrix norms ('fro', 'nuc', 1, -1, 2, -2, inf, -inf)."""
  jnp = _jnp()
  (a,) = _inexact("jnp.linalg.norm", x)
  nd = _util.ndim(a)
  if axis is None:
    if ord is None:
      return jnp.sqrt(jnp.sum(jnp.real(a * jnp.conj(a)), keepdims=keepdims))
    axis = tuple(range(nd))
  axes = _util.canonicalize_axes(axis, nd)
  if len(axes) == 1:
    return vector_norm(a, ord=2 if ord is None else ord, axis=axes, keepdims=keepdims)
  if len(axes) != 2:
    raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                     "compute a vector-norm, or two axes to compute a matrix-norm.")
  row, col = axes
  if ord is None or ord in ("f", "fro"):
    return jnp.sqrt(jnp.sum(jnp.real(a * jnp.conj(a)), axis=axes, keepdims=keepdims))
  if ord in (1, -1, np.inf, -np.inf):
    summed, reduced = (row, col) if ord in (1, -1) else (col, row)
    if not keepdims and reduced > summed:
      reduced -= 1
    sums = jnp.sum(jnp.abs(a), axis=summed, keepdims=keepdims)
    return (jnp.max if ord > 0 else jnp.min)(sums, axis=reduced, keepdims=keepdims)
  if ord in ("nuc", 2, -2):
    s = svd(jnp.moveaxis(a, axes, (-2, -1)), compute_uv=False)
    y = jnp.max(s, axis=-1) if ord == 2 else jnp.min(s, axis=-1) if ord == -2 else \
        jnp.sum(s, axis=-1)
    return jnp.expand_dims(y, axes) if keepdims else y
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  jnp = _jnp()
  (a,) = _inexact("jnp.linalg.vector_norm", x)
  if ord is None or ord == 2:
    return jnp.sqrt(jnp.sum(jnp.real(a * jnp.conj(a)), axis=axis, keepdims=keepdims))
  if isinstance(ord, str):
    raise ValueError(f"Invalid order '{ord}' for vector norm.")
  if ord == np.inf:  # (0 for no values, as JAX's)
    return jnp.max(jnp.abs(a), axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return jnp.min(jnp.abs(a), axis=axis, keepdims=keepdims)
  if ord == 0:
    real = _util.dtype(lax.abs(a))
    return jnp.sum(a != 0, axis=axis, keepdims=keepdims).astype(real)
  if ord == 1:
    return jnp.sum(jnp.abs(a), axis=axis, keepdims=keepdims)
  abs_a = jnp.abs(a)
  return jnp.sum(abs_a ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


# ---- the array API's linalg names, and numpy's tensor solvers

def _jnp():
  import minijax.numpy as jnp
  return jnp


def cross(x1, x2, /, *, axis=-1):
  """Cross products of 3-vectors along `axis` (the array API's: both must have 3)."""
  for x in (x1, x2):
    if _util.shape(x)[axis] != 3:
      raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                       f"have shapes {_util.shape(x1)} and {_util.shape(x2)}")
  return _jnp().cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
  return _jnp().diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
  return _jnp().trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  return _jnp().vecdot(x1, x2, axis=axis)


def cond(x, p=None):
  """The condition number of `x` in the `p`-norm (2 by default: the ratio of the largest
  to the smallest singular value); inf where `x` is singular."""
  jnp = _jnp()
  (x,) = _inexact("jnp.linalg.cond", x)
  if p is None or p == 2:
    s = svd(x, compute_uv=False)
    return s[..., 0] / s[..., -1]
  if p == -2:
    s = svd(x, compute_uv=False)
    return s[..., -1] / s[..., 0]
  r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
  return jnp.where(jnp.isnan(r), np.inf, r)


def tensorinv(a, ind=2):
  """The inverse of `a` under `tensordot(..., ind)`: `a` reshaped to a square matrix of its
  first `ind` axes against the rest, inverted, reshaped back."""
  jnp = _jnp()
  a = jnp.asarray(a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer, got {ind}")
  head, tail = _util.shape(a)[:ind], _util.shape(a)[ind:]
  rows, cols = int(np.prod(head)), int(np.prod(tail))
  if rows != cols:
    raise ValueError(f"tensorinv: a.shape[:ind] must have as many elements as a.shape[ind:]; "
                     f"got {head} and {tail}")
  return jnp.reshape(inv(jnp.reshape(a, (rows, cols))), tail + head)


def tensorsolve(a, b, axes=None):
  """x with `tensordot(a, x, x.ndim) == b`."""
  jnp = _jnp()
  a, b = jnp.asarray(a), jnp.asarray(b)
  if axes is not None:
    a = jnp.moveaxis(a, axes, tuple(range(_util.ndim(a) - len(axes), _util.ndim(a))))
  out_shape = _util.shape(a)[_util.ndim(b):]
  rows, cols = int(np.prod(_util.shape(b))), int(np.prod(out_shape))
  if rows != cols:
    raise ValueError(f"tensorsolve: b has {rows} elements but the solution would have {cols}")
  return jnp.reshape(solve(jnp.reshape(a, (rows, cols)), jnp.ravel(b)), out_shape)
