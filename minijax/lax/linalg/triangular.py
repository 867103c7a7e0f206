"""`cholesky` and `triangular_solve`, lowered to jaxlib's LAPACK kernels potrf and trsm, as
JAX lowers them on CPU.

XLA has both as HLO operations too (`mhlo.cholesky`, `mhlo.triangular_solve`), but XLA:CPU
expands them into loops of small operations: measured here, its cholesky takes 2x (16x16) to
50x (128x128) the time of potrf, and its triangular solve about 2x that of trsm, so minijax
calls LAPACK, like JAX on CPU.

Both take batches of matrices (`[..., n, n]`, every leading axis a batch axis), so their
batching rules move the batch axis to the front (broadcasting an unbatched operand, or, for
an unbatched triangular matrix, folding the batch into the right-hand side's columns).

`cholesky_p` computes the lower factor (its strict upper triangle is unspecified, and
`cholesky` zeroes it); its jvp is the forward rule of Murray (arXiv:1602.07527),
`dL = L phi(L^-1 dA L^-H)` with `phi` taking the lower triangle and halving the diagonal.
`triangular_solve_p(a, b)` solves `op(a) x = b` (`left_side`) or `x op(a) = b` with `op`
one of identity, transpose, adjoint; it is linear in `b`, so it has a transpose rule (the
solve with `op` transposed, not conjugated: JAX's convention for complex cotangents), and its
jvp in `a` is `-op(a)^-1 op(da) x` (or `-x op(da) op(a)^-1`), with `da` restricted to the
triangle that is read.
"""
from __future__ import annotations

from jaxlib.mlir.dialects import mhlo

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.linalg import lapack
from minijax.lax.linalg import matrices as mx
from minijax.lowering import mlir

__all__ = ["cholesky", "cholesky_p", "triangular_solve", "triangular_solve_p"]


# ---- cholesky
cholesky_p = Primitive("cholesky")


def _cholesky_abstract_eval(x):
  mx.check_ranks("cholesky", [x], [2])
  mx.check_square("cholesky", x.shape)
  mx.check_dtypes("cholesky", x)
  return ShapedArray(x.shape, x.dtype, x.weak_type)


cholesky_p.def_abstract_eval(_cholesky_abstract_eval)


def _cholesky_lowering(ctx, x):
  aval = ctx.avals_in[0]
  batch = aval.shape[:-2]
  out, info = lapack.lapack_call(lapack.target("potrf_ffi", aval.dtype), [x], [aval],
                                 [aval, lapack.info_aval(batch)], {"uplo": lapack.u8("L")},
                                 aliases={0: 0})
  return lapack.nan_where_failed(out, aval, lapack.succeeded(info, batch), batch)


mlir.register_lowering(cholesky_p, _cholesky_lowering)


def _cholesky_jvp(primals, tangents):
  (x,), (dx,) = primals, tangents
  L = mx.tril(cholesky_p.bind(x))
  if type(dx) is ad.Zero:
    return L, ad.Zero.from_primal_value(L)
  n = mx.aval(x).shape[-1]
  # L^-1 dA L^-H, then the lower triangle with its diagonal halved
  tmp = triangular_solve(L, dx, left_side=False, transpose_a=True, conjugate_a=True,
                         lower=True)
  inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
  halves = lax.add(lax.full((n, n), 1, mx.aval(x).dtype), mx.eye(mx.aval(x).dtype, n))
  phi = lax.div(mx.tril(inner), lax.broadcast_in_dim(halves, mx.aval(inner).shape,
                                                    (mx.aval(x).ndim - 2, mx.aval(x).ndim - 1)))
  return L, mx.matmul(L, phi)


ad.primitive_jvps[cholesky_p] = _cholesky_jvp


def _cholesky_batch(args, dims):
  (x,), (d,) = args, dims
  return cholesky_p.bind(batching.moveaxis(x, d, 0)), 0


batching.primitive_batchers[cholesky_p] = _cholesky_batch


def cholesky(x, *, symmetrize_input: bool = True):
  """The lower Cholesky factor `L` of Hermitian positive definite `x` (`x = L L^H`), for a
  batch `[..., n, n]`; NaNs where `x` is not positive definite.  With `symmetrize_input`,
  `(x + x^H) / 2` is factored; without, only the lower triangle of `x` is read."""
  x = lax.convert_to_array(x)
  mx.check_ranks("cholesky", [mx.aval(x)], [2])  # (the shape errors before symmetrizing,
  mx.check_square("cholesky", mx.aval(x).shape)  # which makes integers floats, as JAX's)
  if symmetrize_input:
    x = mx.symmetrize(x)
  return mx.tril(cholesky_p.bind(x))


# ---- triangular_solve
triangular_solve_p = Primitive("triangular_solve")


def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
  mx.check_ranks("triangular_solve", [a, b], [2, 2])
  mx.check_square("triangular_solve", a.shape, "The first input")
  common = -2 if left_side else -1
  if a.shape[-1] != b.shape[common]:
    raise ValueError(f"Incompatible shapes for arguments to triangular_solve: "
                     f"{a.shape[-2:]} and {b.shape[-2:]}.")
  mx.check_dtypes("triangular_solve", a, b)
  return ShapedArray(b.shape, b.dtype, a.weak_type and b.weak_type)


triangular_solve_p.def_abstract_eval(_triangular_solve_abstract_eval)


def _conjugate_ir(a):
  re, im = mhlo.RealOp(a).result, mhlo.ImagOp(a).result
  return mhlo.ComplexOp(re, mhlo.NegOp(im).result).result


def _triangular_solve_lowering(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                               unit_diagonal):
  a_aval, b_aval = ctx.avals_in
  if conjugate_a and not transpose_a:
    a, conjugate_a = _conjugate_ir(a), False
  trans = ("C" if conjugate_a else "T") if transpose_a else "N"
  (x,) = lapack.lapack_call(
      lapack.target("trsm_ffi", a_aval.dtype), [a, b], [a_aval, b_aval], [b_aval],
      {"side": lapack.u8("L" if left_side else "R"), "uplo": lapack.u8("L" if lower else "U"),
       "trans_x": lapack.u8(trans), "diag": lapack.u8("U" if unit_diagonal else "N")},
      aliases={1: 0})
  return x


mlir.register_lowering(triangular_solve_p, _triangular_solve_lowering)


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  k = 1 if unit_diagonal else 0
  g_a = mx.tril(g_a, -k) if lower else mx.triu(g_a, k)
  g_a = lax.neg(g_a)
  g_a = mx.T(g_a) if transpose_a else g_a
  g_a = mx.conj(g_a) if conjugate_a else g_a
  kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
            conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  m, n = mx.aval(b).shape[-2:]
  if left_side:  # -A^-1 dA X, in the cheaper order
    if m > n:
      return triangular_solve_p.bind(a, mx.matmul(g_a, ans), **kw)
    return mx.matmul(triangular_solve_p.bind(a, g_a, **kw), ans)
  if m < n:
    return triangular_solve_p.bind(a, mx.matmul(ans, g_a), **kw)
  return mx.matmul(ans, triangular_solve_p.bind(a, g_a, **kw))


ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a,
           lambda g_b, ans, a, b, **kw: triangular_solve_p.bind(a, g_b, **kw))


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  if ad.is_undefined_primal(a):
    raise ValueError("triangular_solve is not linear in its triangular matrix `a`; only "
                     "`b` may be a linear input of a transposed computation")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                        transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                        unit_diagonal=unit_diagonal)]


ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose


def _triangular_solve_batch(args, dims, **params):
  (a, b), (da, db) = args, dims
  if da is None:  # one triangular matrix for the whole batch
    return _fold_batch(a, b, db, params)
  size = mx.aval(a).shape[da]
  a = batching.bdim_at_front(a, da, size)
  b = batching.bdim_at_front(b, db, size)
  return triangular_solve_p.bind(a, b, **params), 0


def _fold_batch(a, b, db, params):
  """Solves with an unbatched `a` against a batched `b` by making the batch extra columns
  (left_side) or extra rows (right side) of one right-hand side."""
  nd = mx.aval(b).ndim  # batch axis db plus the core [..., m, n]
  if params["left_side"]:
    b = batching.moveaxis(b, db, nd - 1)          # [..., m, n, batch]
    moved = mx.aval(b).shape
    flat = lax.reshape(b, (*moved[:-2], moved[-2] * moved[-1]))
    out = triangular_solve_p.bind(a, flat, **params)
    return lax.reshape(out, moved), nd - 1
  b = batching.moveaxis(b, db, nd - 3)            # [..., batch, m, n]
  moved = mx.aval(b).shape
  flat = lax.reshape(b, (*moved[:-3], moved[-3] * moved[-2], moved[-1]))
  out = triangular_solve_p.bind(a, flat, **params)
  return lax.reshape(out, moved), nd - 3


batching.primitive_batchers[triangular_solve_p] = _triangular_solve_batch


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
  """Solves `op(a) x = b` (`left_side=True`) or `x op(a) = b` for triangular `a`
  (`[..., m, m]`), reading only its `lower` (or upper) triangle; `op` transposes `a` when
  `transpose_a` and conjugates it when `conjugate_a` (complex `a` only).  A `b` of one rank
  less than `a` is a single vector."""
  a, b = lax.convert_to_array(a), lax.convert_to_array(b)
  half = mx.aval(a).dtype
  if half.itemsize == 2 and dtypes.is_float(half) and mx.aval(b).dtype == half:
    # (LAPACK has no half floats; XLA solves them in float32 too)
    return utils.in_float32_for_halves(
        lambda a, b: triangular_solve(a, b, left_side=left_side, lower=lower,
                                      transpose_a=transpose_a, conjugate_a=conjugate_a,
                                      unit_diagonal=unit_diagonal), a, b)
  conjugate_a = bool(conjugate_a) and mx.is_complex(mx.aval(a).dtype)
  singleton = mx.aval(b).ndim == mx.aval(a).ndim - 1
  if singleton:
    b = mx.column_vector(b) if left_side else mx.row_vector(b)
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    nd = mx.aval(out).ndim
    out = lax.squeeze(out, (nd - 1,) if left_side else (nd - 2,))
  return out
