"""Hermitian eigendecomposition (LAPACK's syevd/heevd) and singular value decomposition
(gesdd), as jaxlib's CPU kernels compute them.

`eigh_p(a, lower, sort_eigenvalues)` gives `(v, w)` for a batch `[..., n, n]`: the
eigenvectors in v's columns and the eigenvalues (real, ascending) in w, reading the `lower`
(or upper) triangle of `a`.  `svd_p(a, full_matrices, compute_uv, algorithm)` gives `(s,)` or
`(s, u, vh)` with `a = u diag(s) vh`, s real and descending.  Where LAPACK reports a failure
(`info != 0`) the results are NaNs, as in JAX.  Both take batches natively; batching moves
the batch axis to the front.

The jvps are JAX's, for distinct eigenvalues and distinct nonzero singular values:
`dw = diag(V^H dA V)` and `dV = V (F * (V^H dA V))` with `F_ij = 1 / (w_j - w_i)` off the
diagonal; for the SVD, `ds = Re diag(U^H dA V)`, and dU, dV from the same matrix with
`F_ij = 1 / (s_j^2 - s_i^2)`, plus the terms for the complement of U (tall) or V (wide).
The SVD jvp exists for reduced (or square) factors only, as in JAX.
"""
from __future__ import annotations

import enum

import numpy as np

from minijax import lax
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax.linalg import lapack
from minijax.lax.linalg import matrices as mx
from minijax.lowering import mlir

__all__ = ["eigh", "eigh_p", "svd", "svd_p"]


# ---- eigh
eigh_p = Primitive("eigh")
eigh_p.multiple_results = True


def _eigh_abstract_eval(a, *, lower, sort_eigenvalues):
  batch = mx.check_ranks("eigh", [a], [2])
  if a.shape[-1] != a.shape[-2]:
    raise ValueError("Argument to symmetric eigendecomposition must have shape [..., n, n], "
                     f"got shape {a.shape}")
  mx.check_dtypes("eigh", a)
  n = a.shape[-1]
  return [ShapedArray(a.shape, a.dtype, a.weak_type),
          ShapedArray((*batch, n), mx.real_dtype(a.dtype), a.weak_type)]


eigh_p.def_abstract_eval(_eigh_abstract_eval)


def _eigh_lowering(ctx, a, *, lower, sort_eigenvalues):
  a_aval = ctx.avals_in[0]
  v_aval, w_aval = ctx.avals_out
  batch = a_aval.shape[:-2]
  name = "heevd_ffi" if mx.is_complex(a_aval.dtype) else "syevd_ffi"
  v, w, info = lapack.lapack_call(
      lapack.target(name, a_aval.dtype), [a], [a_aval],
      [v_aval, w_aval, lapack.info_aval(batch)],
      {"mode": lapack.u8("V"), "uplo": lapack.u8("L" if lower else "U")}, aliases={0: 0})
  ok = lapack.succeeded(info, batch)
  return [lapack.nan_where_failed(v, v_aval, ok, batch),
          lapack.nan_where_failed(w, w_aval, ok, batch)]


mlir.register_lowering(eigh_p, _eigh_lowering)


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues):
  (a,), (da,) = primals, tangents
  v, w_real = eigh_p.bind(mx.symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues)
  if type(da) is ad.Zero:
    return [v, w_real], [ad.Zero.from_primal_value(v), ad.Zero.from_primal_value(w_real)]
  a_aval = mx.aval(a)
  n, dtype, batch = a_aval.shape[-1], a_aval.dtype, a_aval.shape[:-2]
  w = lax.convert_element_type(w_real, dtype)
  eye = mx.eye(dtype, n, batch=batch)
  # F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it
  diffs = mx.bsub(mx.badd(eye, mx.row_vector(w)), mx.column_vector(w))
  f = lax.sub(lax.integer_pow(diffs, -1), eye)
  vh_da_v = mx.matmul(mx.matmul(mx.H(v), da), v)
  dv = mx.matmul(v, lax.mul(f, vh_da_v))
  dw = mx.diagonal(mx.real(vh_da_v))
  return [v, w_real], [dv, dw]


ad.primitive_jvps[eigh_p] = _eigh_jvp


def _eigh_batch(args, dims, **params):
  (a,), (d,) = args, dims
  return eigh_p.bind(batching.moveaxis(a, d, 0), **params), [0, 0]


batching.primitive_batchers[eigh_p] = _eigh_batch


class EighImplementation(enum.Enum):
  """Which eigensolver `eigh` uses (JAX's names); the CPU has LAPACK's QR-based one."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
  """Which LAPACK routine `svd` uses: divide and conquer (gesdd, the default) or QR
  iterations (gesvd); Jacobi and polar (QDWH) SVDs exist only on accelerators, as in JAX."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"
  DIVIDE_AND_CONQUER = "divide_and_conquer"


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
  """`(v, w)`: eigenvectors (columns of v) and ascending eigenvalues w of Hermitian
  (symmetric) `x`, a batch `[..., n, n]`.  With `symmetrize_input`, `(x + x^H) / 2` is
  decomposed; without, only the `lower` (or upper) triangle is read."""
  x = lax.convert_to_array(x)
  n = mx.aval(x).shape[-1] if mx.aval(x).ndim else 0
  if subset_by_index is not None and tuple(subset_by_index) != (0, n):
    raise NotImplementedError("eigh: subset_by_index is not supported on CPU, as in JAX")
  if implementation == EighImplementation.JACOBI:
    raise NotImplementedError("Jacobi implementation is not supported on CPU")
  if implementation == EighImplementation.QDWH:
    raise NotImplementedError("QDWH implementation is only supported on TPU")
  if implementation not in (None, EighImplementation.QR):
    raise ValueError(f"eigh: implementation must be an EighImplementation, got {implementation!r}")
  if symmetrize_input:  # (which makes integers floats, as JAX's)
    mx.check_ranks("eigh", [mx.aval(x)], [2])
    x = mx.symmetrize(x) if mx.aval(x).shape[-1] == mx.aval(x).shape[-2] else x
  _eigh_abstract_eval(mx.aval(x), lower=lower, sort_eigenvalues=sort_eigenvalues)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
  return v, w


# ---- svd
svd_p = Primitive("svd")
svd_p.multiple_results = True


def _svd_shapes(shape, full_matrices):
  *batch, m, n = shape
  k = min(m, n)
  return (*batch, k), (*batch, m, m if full_matrices else k), \
      (*batch, n if full_matrices else k, n)


def _svd_abstract_eval(a, *, full_matrices, compute_uv, algorithm=None):
  mx.check_ranks("svd", [a], [2])
  mx.check_dtypes("svd", a)
  s, u, vt = _svd_shapes(a.shape, full_matrices)
  out = [ShapedArray(s, mx.real_dtype(a.dtype), a.weak_type)]
  if compute_uv:
    out += [ShapedArray(u, a.dtype, a.weak_type), ShapedArray(vt, a.dtype, a.weak_type)]
  return out


svd_p.def_abstract_eval(_svd_abstract_eval)


def _svd_lowering(ctx, a, *, full_matrices, compute_uv, algorithm=None):
  a_aval = ctx.avals_in[0]
  batch = a_aval.shape[:-2]
  s_shape, u_shape, vt_shape = _svd_shapes(a_aval.shape, full_matrices)
  s_aval = ShapedArray(s_shape, mx.real_dtype(a_aval.dtype))
  u_aval, vt_aval = ShapedArray(u_shape, a_aval.dtype), ShapedArray(vt_shape, a_aval.dtype)
  m, n = a_aval.shape[-2:]
  if m == 0 or n == 0:
    size = max(m, n)
    eye = np.broadcast_to(np.eye(size, dtype=a_aval.dtype), (*batch, size, size))
    u = eye if full_matrices and m else np.zeros(u_shape, a_aval.dtype)
    vt = eye if full_matrices and n else np.zeros(vt_shape, a_aval.dtype)
    outs = [np.zeros(s_shape, s_aval.dtype)] + ([u, vt] if compute_uv else [])
    return [mlir.ir_constant(o) for o in outs]
  mode = "N" if not compute_uv else ("A" if full_matrices else "S")
  _, s, u, vt, info = lapack.lapack_call(
      lapack.target("gesvd_ffi" if algorithm == SvdAlgorithm.QR else "gesdd_ffi", a_aval.dtype),
      [a], [a_aval],
      [a_aval, s_aval, u_aval, vt_aval, lapack.info_aval(batch)], {"mode": lapack.u8(mode)},
      aliases={0: 0})
  ok = lapack.succeeded(info, batch)
  outs = [lapack.nan_where_failed(s, s_aval, ok, batch)]
  if compute_uv:
    outs += [lapack.nan_where_failed(u, u_aval, ok, batch),
             lapack.nan_where_failed(vt, vt_aval, ok, batch)]
  return outs


mlir.register_lowering(svd_p, _svd_lowering)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, algorithm=None):
  (a,), (da,) = primals, tangents
  s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, algorithm=algorithm)
  a_aval = mx.aval(a)
  m, n = a_aval.shape[-2:]
  if compute_uv and full_matrices and m != n:
    raise NotImplementedError("Singular value decomposition JVP not implemented for full "
                              "matrices (pass full_matrices=False, or a square matrix)")
  outs = [s, u, vt] if compute_uv else [s]
  if type(da) is ad.Zero:
    return outs, [ad.Zero.from_primal_value(o) for o in outs]
  dtype, batch = a_aval.dtype, a_aval.shape[:-2]
  k = min(m, n)
  ut, v = mx.H(u), mx.H(vt)
  ds_mat = mx.matmul(mx.matmul(ut, da), v)
  ds = mx.diagonal(mx.real(ds_mat))
  if not compute_uv:
    return outs, [ds]
  s_row, s_col = mx.row_vector(s), mx.column_vector(s)
  real_eye = mx.eye(mx.aval(s).dtype, k, batch=batch)
  s_diffs = lax.mul(mx.badd(s_row, s_col), mx.bsub(s_row, s_col))
  f = lax.sub(lax.div(lax.full((), 1, mx.aval(s).dtype), lax.add(s_diffs, real_eye)), real_eye)
  f = lax.convert_element_type(f, dtype)
  s_c = lax.convert_element_type(s, dtype)
  dss = mx.bmul(mx.row_vector(s_c), ds_mat)   # dS diag(s)
  sds = mx.bmul(mx.column_vector(s_c), ds_mat)  # diag(s) dS
  s_zero = lax.convert_element_type(lax.eq(s, lax.full((), 0, mx.aval(s).dtype)),
                                    mx.aval(s).dtype)
  s_inv = lax.sub(lax.div(lax.full((), 1, mx.aval(s).dtype), lax.add(s, s_zero)), s_zero)
  half = lax.full((), 0.5, dtype)
  du_dv_diag = lax.mul(lax.mul(half, lax.sub(ds_mat, mx.H(ds_mat))),
                       lax.convert_element_type(mx.diag_matrix(s_inv), dtype))
  du = mx.matmul(u, lax.add(lax.mul(f, lax.add(dss, mx.H(dss))), du_dv_diag))
  dv = mx.matmul(v, lax.mul(f, lax.add(sds, mx.H(sds))))
  if m > n:
    dav = mx.matmul(da, v)
    du = lax.add(du, mx.bdiv(lax.sub(dav, mx.matmul(u, mx.matmul(ut, dav))),
                             mx.row_vector(s_c)))
  if n > m:
    dahu = mx.matmul(mx.H(da), u)
    dv = lax.add(dv, mx.bdiv(lax.sub(dahu, mx.matmul(v, mx.matmul(vt, dahu))),
                             mx.row_vector(s_c)))
  return outs, [ds, du, mx.H(dv)]


ad.primitive_jvps[svd_p] = _svd_jvp


def _svd_batch(args, dims, **params):
  (a,), (d,) = args, dims
  outs = svd_p.bind(batching.moveaxis(a, d, 0), **params)
  return outs, [0] * len(outs)


batching.primitive_batchers[svd_p] = _svd_batch


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
  """`(u, s, vh)` with `x = u diag(s) vh` (s descending), or `s` alone when not
  `compute_uv`, for a batch `[..., m, n]`."""
  x = lax.convert_to_array(x)
  if subset_by_index is not None:
    k = min(mx.aval(x).shape[-2:])
    if tuple(subset_by_index) != (0, k):
      raise NotImplementedError("svd: subset_by_index is not supported on CPU, as in JAX")
  if algorithm in (SvdAlgorithm.JACOBI, SvdAlgorithm.POLAR):
    raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on CPU.")
  if algorithm not in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.QR,
                       SvdAlgorithm.DIVIDE_AND_CONQUER):
    raise ValueError(f"svd: algorithm must be an SvdAlgorithm, got {algorithm!r}")
  algorithm = SvdAlgorithm.QR if algorithm == SvdAlgorithm.QR else None
  outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                    algorithm=algorithm)
  if compute_uv:
    s, u, vt = outs
    return u, s, vt
  return outs[0]
