"""LU decomposition with partial pivoting, by LAPACK's getrf (jaxlib's `lapack_?getrf_ffi`).

`lu_p(a)` gives `(lu, pivots)` for a batch `[..., m, n]`: `L` (unit diagonal, not stored)
below the diagonal of `lu` and `U` on and above it, and the 0-based row swaps (`pivots`,
`[..., min(m, n)]`) that were applied in order.  `lu(a)` adds the permutation those swaps
make (`lu_pivots_to_permutation`, a loop of elementwise selects), so that
`a[perm] = L U`.  A singular matrix still factors (LAPACK reports a zero pivot with a
positive `info`); a negative `info` (an invalid argument) gives NaNs, as in JAX.

The jvp is that of de Hoog, Anderssen and Lukas: with `P A = L U`,
`dL = L tril(L^-1 P dA U^-1, -1)` and `dU = triu(L^-1 P dA U^-1) U`; the tangent of the
integer pivots is symbolically zero.  Batching moves the batch axis to the front, since the
kernel takes batches natively.  `lu_solve` solves with a factorization: two triangular
solves and the permutation, or their transposes (`trans=1`) or adjoints (`trans=2`).
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
from minijax.lax.linalg.triangular import triangular_solve
from minijax.lowering import mlir

__all__ = ["lu", "lu_p", "lu_pivots_to_permutation", "lu_solve"]

lu_p = Primitive("lu")
lu_p.multiple_results = True


def _lu_abstract_eval(a):
  batch = mx.check_ranks("lu", [a], [2])
  mx.check_dtypes("lu", a)
  m, n = a.shape[-2:]
  return [ShapedArray(a.shape, a.dtype, a.weak_type),
          ShapedArray((*batch, min(m, n)), dtypes.int32)]


lu_p.def_abstract_eval(_lu_abstract_eval)


def _lu_lowering(ctx, a):
  a_aval = ctx.avals_in[0]
  lu_aval, pivots_aval = ctx.avals_out
  batch = a_aval.shape[:-2]
  lu, pivots, info = lapack.lapack_call(
      lapack.target("getrf_ffi", a_aval.dtype), [a], [a_aval],
      [lu_aval, pivots_aval, lapack.info_aval(batch)], aliases={0: 0})
  one = mlir.ir_constant(np.ones(pivots_aval.shape, np.int32))
  pivots = mhlo.SubtractOp(pivots, one).result  # LAPACK's pivots count from 1
  lu = lapack.nan_where_failed(lu, lu_aval, lapack.succeeded(info, batch, "GE"), batch)
  return [lu, pivots]


mlir.register_lowering(lu_p, _lu_lowering)


def _lu_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  lu, pivots = lu_p.bind(a)
  if type(da) is ad.Zero:
    return [lu, pivots], [ad.Zero.from_primal_value(lu), ad.Zero.from_primal_value(pivots)]
  a_aval = mx.aval(a)
  *batch, m, n = a_aval.shape
  batch = tuple(batch)
  k = min(m, n)
  dtype = a_aval.dtype
  zero = lax.full((), 0, dtype)
  keep = [(0, 0, 0)] * len(batch)
  # L (m x m, unit diagonal) and U (n x n, completed by an identity block when m < n)
  l = lax.pad(mx.tril(lax.slice(lu, (0,) * a_aval.ndim, (*batch, m, k)), -1), zero,
              keep + [(0, 0, 0), (0, m - k, 0)])
  l = lax.add(l, mx.eye(dtype, m, batch=batch))
  u = lax.pad(mx.triu(lax.slice(lu, (0,) * a_aval.ndim, (*batch, k, n))), zero,
              keep + [(0, n - k, 0), (0, 0, 0)])
  u_fill = lax.pad(mx.eye(dtype, n - k, batch=batch), zero, keep + [(k, 0, 0), (k, 0, 0)])
  u = lax.add(u, u_fill)
  permutation = lu_pivots_to_permutation(pivots, m)
  la = triangular_solve(l, mx.take_rows(da, permutation), left_side=True, lower=True,
                        unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, lower=False)
  dlu = lax.add(mx.matmul(l, mx.tril(lau, -1)), mx.matmul(mx.triu(lau), u))
  return [lu, pivots], [dlu, ad.Zero.from_primal_value(pivots)]


ad.primitive_jvps[lu_p] = _lu_jvp


def _lu_batch(args, dims):
  (a,), (d,) = args, dims
  return lu_p.bind(batching.moveaxis(a, d, 0)), [0, 0]


batching.primitive_batchers[lu_p] = _lu_batch


def lu_pivots_to_permutation(pivots, permutation_size: int):
  """The permutation (`[..., permutation_size]`, int32) that the row swaps `pivots`
  (`[..., k]`: row i swapped with row pivots[i], in order) make of `range(size)`."""
  pivots = lax.convert_to_array(pivots)
  p_aval = mx.aval(pivots)
  if p_aval.ndim < 1 or not dtypes.is_integer(p_aval.dtype):
    raise TypeError(f"lu_pivots_to_permutation takes an integer array of rank at least 1, "
                    f"got {p_aval.str_short()}")
  *batch, k = p_aval.shape
  size = int(permutation_size)
  if size < k:
    raise ValueError(f"Output permutation size {size} has to exceed the trailing dimension "
                     f"of the pivots. Got pivots shape {p_aval.shape}")
  pivots = lax.convert_element_type(pivots, dtypes.int32)
  shape = (*batch, size)
  last = len(shape) - 1
  iota = lax.broadcasted_iota(dtypes.int32, shape, last)

  def swap(i, perm):
    j = lax.dynamic_index_in_dim(pivots, i, last, keepdims=True,          # [..., 1]
                                 allow_negative_indices=False)
    p_i = lax.dynamic_index_in_dim(perm, i, last, keepdims=True, allow_negative_indices=False)
    p_j = lax.take_along_axis(perm, j, last)
    perm = lax.select(lax.eq(iota, _spread(j, shape, last)), _spread(p_i, shape, last), perm)
    return lax.select(lax.eq(iota, lax.full(shape, i, dtypes.int32)),
                      _spread(p_j, shape, last), perm)

  return lax.fori_loop(0, k, swap, iota) if k else iota  # (no pivots: the body cannot trace)


def _spread(v, shape, last):
  """`[..., 1]` broadcast along the last axis to `shape`."""
  return lax.broadcast_in_dim(lax.squeeze(v, (last,)), shape, tuple(range(last)))


def lu(x):
  """`(lu, pivots, permutation)` of `x` (`[..., m, n]`) with `x[..., permutation, :] = L U`:
  see the module docstring."""
  lu_, pivots = lu_p.bind(lax.convert_to_array(x))
  return lu_, pivots, lu_pivots_to_permutation(pivots, mx.aval(x).shape[-2])


def lu_solve(lu_, permutation, b, trans: int = 0):
  """Solves `a x = b` (`trans=0`), `a^T x = b` (1) or `a^H x = b` (2) for `x`, given the
  factorization `(lu_, permutation)` of `a` (`[..., m, m]`) from `lu`; `b` is `[..., m, k]`
  with the same batch axes, or `[..., m]`."""
  lu_, b = lax.convert_to_array(lu_), lax.convert_to_array(b)
  vector = mx.aval(b).ndim == mx.aval(lu_).ndim - 1
  if vector:
    b = mx.column_vector(b)
  if trans == 0:
    x = mx.take_rows(b, permutation)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    x = triangular_solve(lu_, x, left_side=True, lower=False)
  elif trans in (1, 2):
    conjugate = trans == 2
    x = triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                         conjugate_a=conjugate)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                         transpose_a=True, conjugate_a=conjugate)
    last = mx.aval(permutation).ndim - 1
    iota = lax.broadcasted_iota(dtypes.int32, mx.aval(permutation).shape, last)
    _, inverse = lax.sort_key_val(permutation, iota, last)
    x = mx.take_rows(x, inverse)
  else:
    raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
  return lax.squeeze(x, (mx.aval(x).ndim - 1,)) if vector else x
