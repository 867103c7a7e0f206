"""The Schur, Hessenberg and tridiagonal decompositions and the product of Householder
reflectors, by LAPACK's gees, gehrd, sytrd/hetrd and orgqr/ungqr, as JAX lowers them on CPU.

- `schur(a)` gives `(t, vs)` with `a = vs t vs^H`: t upper (quasi-)triangular (2x2 blocks on
  the diagonal for the complex eigenvalue pairs of a real `a`), vs unitary.
- `hessenberg(a)` gives `(h, taus)`, LAPACK's packed form: h's upper Hessenberg part is the
  Hessenberg matrix, the reflectors that reduce `a` to it sit below its first subdiagonal,
  scaled by `taus`.
- `tridiagonal(a, lower=True)` gives `(arr, d, e, taus)`: a Hermitian `a` (its `lower` or
  upper triangle read) reduced to a real symmetric tridiagonal matrix with diagonal d and
  off-diagonal e; arr is LAPACK's packed form (the reflectors beyond the off-diagonal).
- `householder_product(a, taus)` forms the unitary Q of reflectors stored like that (in the
  columns below the diagonal, as geqrf leaves them).

None has a derivative (as in JAX); each takes a batch `[..., n, n]` (`[..., m, n]` for
`householder_product`).
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from minijax import lax
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import batching
from minijax.lax.linalg import lapack
from minijax.lax.linalg import matrices as mx
from minijax.lowering import mlir

__all__ = ["schur", "schur_p", "hessenberg", "hessenberg_p", "tridiagonal", "tridiagonal_p",
           "householder_product", "householder_product_p"]


def _batch_front(prim, n_out):
  def rule(args, dims, **params):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    outs = prim.bind(*(batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)),
                     **params)
    return outs, ([0] * n_out if prim.multiple_results else 0)
  return rule


def _square(name, a):
  mx.check_ranks(name, [a], [2])
  mx.check_square(name, a.shape)
  mx.check_dtypes(name, a)


# ---- schur
schur_p = Primitive("schur")
schur_p.multiple_results = True


def _schur_abstract_eval(a, *, compute_schur_vectors):
  _square("schur", a)
  vs = a.update(weak_type=False) if compute_schur_vectors else ShapedArray((0,), a.dtype)
  return [a.update(weak_type=False), vs]


def _schur_lowering(ctx, a, *, compute_schur_vectors):
  aval = ctx.avals_in[0]
  batch, n = aval.shape[:-2], aval.shape[-1]
  values = ShapedArray((*batch, n), aval.dtype)
  scalar = lapack.info_aval(batch)
  eigenvalues = [values] if mx.is_complex(aval.dtype) else [values, values]  # (w or wr, wi)
  t, vs, *_, info = lapack.lapack_call(
      lapack.target("gees_ffi", aval.dtype), [a], [aval],
      [aval, aval, *eigenvalues, scalar, scalar],
      {"mode": lapack.u8("V"), "sort": lapack.u8("N")},
      aliases={0: 0})
  ok = lapack.succeeded(info, batch)
  t = lapack.nan_where_failed(t, aval, ok, batch)
  if not compute_schur_vectors:
    return [t, mlir.ir_constant(np.zeros((0,), aval.dtype))]
  return [t, lapack.nan_where_failed(vs, aval, ok, batch)]


schur_p.def_abstract_eval(_schur_abstract_eval)
mlir.register_lowering(schur_p, _schur_lowering)
batching.primitive_batchers[schur_p] = _batch_front(schur_p, 2)


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
  """`(t, vs)`: the Schur form t of `x` and its Schur vectors vs (`x = vs t vs^H`)."""
  if sort_eig_vals or select_callable is not None:
    raise NotImplementedError("schur with sorted eigenvalues (LAPACK's select callback) is "
                              "not implemented in minijax; use sort_eig_vals=False")
  t, vs = schur_p.bind(lax.convert_to_array(x),
                       compute_schur_vectors=bool(compute_schur_vectors))
  return (t, vs) if compute_schur_vectors else (t,)


# ---- hessenberg
def _i32(value: int) -> ir.IntegerAttr:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(value))


hessenberg_p = Primitive("hessenberg")
hessenberg_p.multiple_results = True


def _hessenberg_abstract_eval(a):
  _square("hessenberg", a)
  return [a.update(weak_type=False),
          ShapedArray((*a.shape[:-2], max(a.shape[-1] - 1, 0)), a.dtype)]


def _hessenberg_lowering(ctx, a):
  aval = ctx.avals_in[0]
  h_aval, taus_aval = ctx.avals_out
  batch, n = aval.shape[:-2], aval.shape[-1]
  h, taus, info = lapack.lapack_call(
      lapack.target("gehrd_ffi", aval.dtype), [a], [aval],
      [aval, taus_aval, lapack.info_aval(batch)],
      {"low": _i32(1), "high": _i32(n)}, aliases={0: 0})
  ok = lapack.succeeded(info, batch)
  return [lapack.nan_where_failed(h, aval, ok, batch),
          lapack.nan_where_failed(taus, taus_aval, ok, batch)]


hessenberg_p.def_abstract_eval(_hessenberg_abstract_eval)
mlir.register_lowering(hessenberg_p, _hessenberg_lowering)
batching.primitive_batchers[hessenberg_p] = _batch_front(hessenberg_p, 2)


def hessenberg(a):
  """`(h, taus)`: the reduction of `a` to upper Hessenberg form, in LAPACK's packed form."""
  return tuple(hessenberg_p.bind(lax.convert_to_array(a)))


# ---- tridiagonal
tridiagonal_p = Primitive("tridiagonal")
tridiagonal_p.multiple_results = True


def _tridiagonal_abstract_eval(a, *, lower):
  _square("tridiagonal", a)
  batch, n = a.shape[:-2], a.shape[-1]
  if n == 0:
    raise ValueError(f"tridiagonal takes a non-empty square matrix, got {a.str_short()}")
  real = mx.real_dtype(a.dtype)
  return [a.update(weak_type=False), ShapedArray((*batch, n), real),
          ShapedArray((*batch, n - 1), real), ShapedArray((*batch, n - 1), a.dtype)]


def _tridiagonal_lowering(ctx, a, *, lower):
  aval = ctx.avals_in[0]
  batch = aval.shape[:-2]
  name = "hetrd_ffi" if mx.is_complex(aval.dtype) else "sytrd_ffi"
  *outs, info = lapack.lapack_call(
      lapack.target(name, aval.dtype), [a], [aval], [*ctx.avals_out, lapack.info_aval(batch)],
      {"uplo": lapack.u8("L" if lower else "U")}, aliases={0: 0})
  ok = lapack.succeeded(info, batch)
  return [lapack.nan_where_failed(x, x_aval, ok, batch)
          for x, x_aval in zip(outs, ctx.avals_out)]


tridiagonal_p.def_abstract_eval(_tridiagonal_abstract_eval)
mlir.register_lowering(tridiagonal_p, _tridiagonal_lowering)
batching.primitive_batchers[tridiagonal_p] = _batch_front(tridiagonal_p, 4)


def tridiagonal(a, *, lower: bool = True):
  """`(arr, d, e, taus)`: the reduction of the Hermitian `a` (its lower triangle read, or
  its upper one) to tridiagonal form, in LAPACK's packed form."""
  return tuple(tridiagonal_p.bind(lax.convert_to_array(a), lower=bool(lower)))


# ---- householder_product
householder_product_p = Primitive("householder_product")


def _householder_abstract_eval(a, taus):
  mx.check_ranks("householder_product", [a, taus], [2, 1])
  mx.check_dtypes("householder_product", a, taus)
  m, n = a.shape[-2:]
  if m < n or taus.shape[:-1] != a.shape[:-2] or taus.shape[-1] > n:
    raise ValueError("householder_product takes a [..., m, n] with m >= n and taus "
                     f"[..., k] with k <= n, got {a.str_short()} and {taus.str_short()}")
  return a.update(weak_type=False)


def _householder_lowering(ctx, a, taus):
  a_aval, taus_aval = ctx.avals_in
  name = "ungqr_ffi" if mx.is_complex(a_aval.dtype) else "orgqr_ffi"
  (q,) = lapack.lapack_call(lapack.target(name, a_aval.dtype), [a, taus],
                            [a_aval, taus_aval], [a_aval], aliases={0: 0})
  return q


householder_product_p.def_abstract_eval(_householder_abstract_eval)
mlir.register_lowering(householder_product_p, _householder_lowering)
batching.primitive_batchers[householder_product_p] = _batch_front(householder_product_p, 1)


def householder_product(a, taus):
  """The unitary product of the Householder reflectors stored below the diagonal of `a`
  with scales `taus` (its first `a.shape[-1]` columns)."""
  return householder_product_p.bind(lax.convert_to_array(a), lax.convert_to_array(taus))
