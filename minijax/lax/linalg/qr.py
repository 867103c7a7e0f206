"""QR decomposition by LAPACK: geqrf (Householder reflectors; geqp3 with column pivoting),
then orgqr/ungqr (the reflectors multiplied out into Q).

`qr_p(a, pivoting, full_matrices)` gives `(q, r)` for a batch `[..., m, n]`, and the column
permutation `p` (int32, `a[..., p] = q r`) after them with `pivoting`: with
`full_matrices`, q is `[..., m, m]` and r `[..., m, n]`; without, q is `[..., m, k]` and r
`[..., k, n]` (`k = min(m, n)`).  Its lowering is the two custom calls and the glue between
them (a slice or a zero padding of geqrf's matrix to q's shape, and r's upper triangle), all
in one rule, so that `qr_p` is one primitive with one jvp.  `geqrf_p` is geqrf alone (the
reflectors below the diagonal of `a` and their scales `taus`), for `jnp.linalg.qr`'s "raw"
mode.

The jvp is JAX's: for `m >= n`, with `C = Q^H dA R^-1`, `dQ = Q (Ω - C) + dA R^-1` and
`dR = (C - Ω) R` (of `A[..., p]` when pivoting), where Ω is the skew-Hermitian part of C's strict lower triangle (plus the
imaginary part of C's diagonal, for complex matrices); for wide matrices (`m < n`) the square
block is differentiated that way and the rest of R follows from `R2 = Q^H A2`; the extra
columns of a full Q of a tall matrix follow arXiv:2409.13374.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax.linalg import lapack
from minijax.lax.linalg import matrices as mx
from minijax.lax.linalg.lu import lu, lu_solve
from minijax.lax.linalg.triangular import triangular_solve
from minijax.lowering import mlir

__all__ = ["geqrf", "geqrf_p", "qr", "qr_p"]

qr_p = Primitive("qr")
qr_p.multiple_results = True


def _qr_shapes(shape, full_matrices):
  *batch, m, n = shape
  k = m if full_matrices else min(m, n)
  return (*batch, m, k), (*batch, k, n)


def _qr_abstract_eval(a, *, pivoting, full_matrices):
  mx.check_ranks("qr", [a], [2])
  mx.check_dtypes("qr", a)
  q_shape, r_shape = _qr_shapes(a.shape, full_matrices)
  outs = [ShapedArray(q_shape, a.dtype, a.weak_type), ShapedArray(r_shape, a.dtype, a.weak_type)]
  return outs + [ShapedArray((*a.shape[:-2], a.shape[-1]), dtypes.int32)] if pivoting else outs


qr_p.def_abstract_eval(_qr_abstract_eval)


def _upper_triangle(x, aval):
  """`x` with everything below the main diagonal zeroed (in IR)."""
  nd = len(aval.shape)
  int_type = mlir.aval_to_ir_type(ShapedArray(aval.shape, dtypes.int32))
  rows = mhlo.IotaOp(int_type, nd - 2).result
  cols = mhlo.IotaOp(int_type, nd - 1).result
  keep = mhlo.CompareOp(rows, cols, mhlo.ComparisonDirectionAttr.get("LE"),
                        compare_type=mhlo.ComparisonTypeAttr.get("SIGNED")).result
  return mhlo.SelectOp(keep, x, mlir.splat_constant(0, aval.shape, aval.dtype)).result


def _factor(a, a_aval, pivoting: bool):
  """geqrf's (or geqp3's) matrix and taus, and geqp3's 0-based permutation, in IR."""
  *batch, m, n = a_aval.shape
  dtype = a_aval.dtype
  taus_aval = ShapedArray((*batch, min(m, n)), dtype)
  if not pivoting:
    r, taus = lapack.lapack_call(lapack.target("geqrf_ffi", dtype), [a], [a_aval],
                                 [a_aval, taus_aval], aliases={0: 0})
    return r, taus, None
  jpvt_aval = ShapedArray((*batch, n), dtypes.int32)
  jpvt = mlir.ir_constant(np.zeros(jpvt_aval.shape, np.int32))  # every column free
  r, jpvt, taus = lapack.lapack_call(lapack.target("geqp3_ffi", dtype), [a, jpvt],
                                     [a_aval, jpvt_aval], [a_aval, jpvt_aval, taus_aval],
                                     aliases={0: 0, 1: 1})
  one = mlir.ir_constant(np.ones(jpvt_aval.shape, np.int32))
  return r, taus, mhlo.SubtractOp(jpvt, one).result  # LAPACK counts columns from 1


def _qr_lowering(ctx, a, *, pivoting, full_matrices):
  a_aval = ctx.avals_in[0]
  q_aval, r_aval = ctx.avals_out[:2]
  *batch, m, n = a_aval.shape
  dtype = a_aval.dtype
  if m == 0 or n == 0:
    k = q_aval.shape[-1]
    eye = np.broadcast_to(np.eye(m, k, dtype=dtype), q_aval.shape)
    outs = [mlir.ir_constant(eye), mlir.ir_constant(np.zeros(r_aval.shape, dtype))]
    return outs + [mlir.ir_constant(np.zeros((*batch, n), np.int32))] if pivoting else outs
  k = min(m, n)
  taus_aval = ShapedArray((*batch, k), dtype)
  r, taus, permutation = _factor(a, a_aval, pivoting)
  zeros = [0] * len(a_aval.shape)
  if m < n:  # Q from the first m columns
    q_in_aval = ShapedArray((*batch, m, m), dtype)
    q_in = mhlo.SliceOp(r, zeros, list(q_in_aval.shape), [1] * len(zeros)).result
  elif full_matrices and m > n:  # Q from the reflectors padded with zero columns
    q_in_aval = ShapedArray((*batch, m, m), dtype)
    zero = mlir.ir_constant(np.zeros((), dtype))
    q_in = mhlo.PadOp(r, zero, zeros, [0] * (len(zeros) - 1) + [m - n], zeros).result
  else:
    q_in_aval, q_in = a_aval, r
  householder = "ungqr_ffi" if mx.is_complex(dtype) else "orgqr_ffi"
  (q,) = lapack.lapack_call(lapack.target(householder, dtype), [q_in, taus],
                            [q_in_aval, taus_aval], [q_in_aval], aliases={0: 0})
  if r_aval.shape != a_aval.shape:  # reduced R of a tall matrix
    r = mhlo.SliceOp(r, zeros, list(r_aval.shape), [1] * len(zeros)).result
  outs = [q, _upper_triangle(r, r_aval)]
  return outs + [permutation] if pivoting else outs


mlir.register_lowering(qr_p, _qr_lowering)


def _thin_qr_jvp(q, r, dx):
  """dQ and dR of a square or tall `x = q r` (q `[..., m, n]`, r `[..., n, n]`)."""
  dx_rinv = triangular_solve(r, dx)  # dx r^-1 (a right-side solve)
  qt_dx_rinv = mx.matmul(mx.H(q), dx_rinv)
  lower = mx.tril(qt_dx_rinv, -1)
  omega = lax.sub(lower, mx.H(lower))
  if mx.is_complex(mx.aval(q).dtype):
    n = mx.aval(r).shape[-1]
    batch = mx.aval(r).shape[:-2]
    imag_part = lax.sub(qt_dx_rinv, lax.convert_element_type(lax.real(qt_dx_rinv),
                                                             mx.aval(q).dtype))
    omega = lax.add(omega, lax.mul(mx.eye(mx.aval(q).dtype, n, batch=batch), imag_part))
  dq = lax.add(mx.matmul(q, lax.sub(omega, qt_dx_rinv)), dx_rinv)
  dr = mx.matmul(lax.sub(qt_dx_rinv, omega), r)
  return dq, dr


def _slice_last2(x, rows, cols):
  shape = mx.aval(x).shape
  (r0, r1), (c0, c1) = rows, cols
  return lax.slice(x, (0,) * (len(shape) - 2) + (r0, c0), (*shape[:-2], r1, c1))


def _qr_jvp(primals, tangents, *, pivoting, full_matrices):
  (x,), (dx,) = primals, tangents
  q, r, *p = outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices)
  zero_p = [ad.Zero.from_primal_value(p[0])] if pivoting else []
  if type(dx) is ad.Zero:
    return outs, [ad.Zero.from_primal_value(q), ad.Zero.from_primal_value(r)] + zero_p
  *batch, m, n = mx.aval(x).shape
  if pivoting:  # the factorisation is of x's columns in the order p
    x, dx = mx.take_columns(x, p[0]), mx.take_columns(dx, p[0])
  if m < n:  # x = [x1 x2] with square x1 = q r1, and r2 = q^H x2
    dq, dr1 = _thin_qr_jvp(q, _slice_last2(r, (0, m), (0, m)), _slice_last2(dx, (0, m), (0, m)))
    x2, dx2 = _slice_last2(x, (0, m), (m, n)), _slice_last2(dx, (0, m), (m, n))
    dr2 = lax.add(mx.matmul(mx.H(dq), x2), mx.matmul(mx.H(q), dx2))
    return outs, [dq, lax.concatenate([dr1, dr2], len(batch) + 1)] + zero_p
  q_mn = _slice_last2(q, (0, m), (0, n)) if full_matrices else q
  r_nn = _slice_last2(r, (0, n), (0, n)) if full_matrices else r
  dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
  if not full_matrices or m == n:
    return outs, [dq_mn, dr_nn] + zero_p
  # the m - n extra columns of a full Q (arXiv:2409.13374, eqs. 32-33)
  dtype = mx.aval(x).dtype
  q_nn, q_pn = _slice_last2(q_mn, (0, n), (0, n)), _slice_last2(q_mn, (n, m), (0, n))
  q_mp = _slice_last2(q, (0, m), (n, m))
  dq_nn, dq_pn = _slice_last2(dq_mn, (0, n), (0, n)), _slice_last2(dq_mn, (n, m), (0, n))
  lu_, _, permutation = lu(lax.sub(q_nn, mx.eye(dtype, n, batch=tuple(batch))))
  z_pn_h = lu_solve(lu_, permutation, mx.H(q_pn), trans=2)
  z_pn = mx.H(z_pn_h)
  dq_mp = lax.sub(mx.matmul(dq_mn, z_pn_h),
                  mx.matmul(lax.add(q_mn, mx.matmul(q_mp, z_pn)),
                            mx.H(lax.sub(dq_pn, mx.matmul(z_pn, dq_nn)))))
  dq = lax.concatenate([dq_mn, dq_mp], len(batch) + 1)
  dr = lax.concatenate([dr_nn, lax.full((*batch, m - n, n), 0, dtype)], len(batch))
  return outs, [dq, dr] + zero_p


ad.primitive_jvps[qr_p] = _qr_jvp


def _qr_batch(args, dims, **params):
  (x,), (d,) = args, dims
  outs = qr_p.bind(batching.moveaxis(x, d, 0), **params)
  return outs, [0] * len(outs)


batching.primitive_batchers[qr_p] = _qr_batch


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
  """`(q, r)` with `x = q r`, q unitary (orthogonal) and r upper triangular, for a batch
  `[..., m, n]`, or `(q, r, p)` with `x[..., p] = q r` when `pivoting` (LAPACK's geqp3
  chooses the columns so that r's diagonal shrinks); see the module docstring for the
  shapes."""
  return tuple(qr_p.bind(lax.convert_to_array(x), pivoting=bool(pivoting),
                         full_matrices=bool(full_matrices)))


# ----------------------------------------------------------------------------- geqrf

geqrf_p = Primitive("geqrf")
geqrf_p.multiple_results = True


def _geqrf_abstract_eval(a):
  mx.check_ranks("geqrf", [a], [2])
  mx.check_dtypes("geqrf", a)
  *batch, m, n = a.shape
  return [ShapedArray(a.shape, a.dtype), ShapedArray((*batch, min(m, n)), a.dtype)]


geqrf_p.def_abstract_eval(_geqrf_abstract_eval)


def _geqrf_lowering(ctx, a):
  a_aval, taus_aval = ctx.avals_out
  if 0 in a_aval.shape:
    return [a, mlir.ir_constant(np.zeros(taus_aval.shape, taus_aval.dtype))]
  r, taus, _ = _factor(a, ctx.avals_in[0], pivoting=False)
  return [r, taus]


mlir.register_lowering(geqrf_p, _geqrf_lowering)


def _geqrf_batch(args, dims):
  (x,), (d,) = args, dims
  return geqrf_p.bind(batching.moveaxis(x, d, 0)), [0, 0]


batching.primitive_batchers[geqrf_p] = _geqrf_batch


def geqrf(a):
  """LAPACK's geqrf of a batch `[..., m, n]`: `(a', taus)`, r in the upper triangle of `a'`,
  and Q as the Householder reflectors below it scaled by `taus` (`[..., min(m, n)]`)."""
  return tuple(geqrf_p.bind(lax.convert_to_array(a)))
