"""General (nonsymmetric) eigendecomposition, LAPACK's geev, as jaxlib's CPU kernel computes
it.

`eig_p(a, compute_left_eigenvectors, compute_right_eigenvectors)` gives `[w]` and then
`vl`, `vr` as asked, for a batch `[..., n, n]`: the eigenvalues (complex, in LAPACK's
order) and the left and right eigenvectors in the columns (complex, each of unit 2-norm).
A real matrix's kernel returns the real and imaginary parts of w apart, joined here.  Where
LAPACK reports a failure the results are NaNs, as in JAX.

Only the eigenvalues are differentiated, as in JAX: `dw = diag(V^-1 dA V)` with V the right
eigenvectors (distinct eigenvalues); the derivative of eigenvectors raises.
"""
from __future__ import annotations

import enum

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
from minijax.lowering import mlir

__all__ = ["eig", "eig_p"]

eig_p = Primitive("eig")
eig_p.multiple_results = True


def _complex_dtype(dtype) -> np.dtype:
  return np.dtype(np.complex128 if np.dtype(dtype) in (np.float64, np.complex128)
                  else np.complex64)


def _eig_abstract_eval(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
  mx.check_ranks("eig", [a], [2])
  if a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to nonsymmetric eigendecomposition must have shape "
                     f"[..., n, n], got shape {a.shape}")
  mx.check_dtypes("eig", a)
  dtype = _complex_dtype(a.dtype)
  outs = [ShapedArray(a.shape[:-1], dtype)]
  outs += [ShapedArray(a.shape, dtype)] * (int(compute_left_eigenvectors)
                                           + int(compute_right_eigenvectors))
  return outs


eig_p.def_abstract_eval(_eig_abstract_eval)


def _eig_lowering(ctx, a, *, compute_left_eigenvectors, compute_right_eigenvectors):
  a_aval = ctx.avals_in[0]
  batch = a_aval.shape[:-2]
  real = not mx.is_complex(a_aval.dtype)
  dtype = _complex_dtype(a_aval.dtype)
  w_aval = ShapedArray(a_aval.shape[:-1], a_aval.dtype)
  v_aval = ShapedArray(a_aval.shape, dtype)
  avals_out = [w_aval, w_aval] if real else [ShapedArray(a_aval.shape[:-1], dtype)]
  avals_out += [v_aval, v_aval, lapack.info_aval(batch)]
  mode = lambda compute: lapack.u8("V" if compute else "N")  # noqa: E731
  *w, vl, vr, info = lapack.lapack_call(
      lapack.target("geev_ffi", a_aval.dtype), [a], [a_aval], avals_out,
      {"compute_left": mode(compute_left_eigenvectors),
       "compute_right": mode(compute_right_eigenvectors)})
  if real:
    w = mhlo.ComplexOp(w[0], w[1]).result
  else:
    w = w[0]
  ok = lapack.succeeded(info, batch)
  outs = [lapack.nan_where_failed(w, ShapedArray(a_aval.shape[:-1], dtype), ok, batch)]
  if compute_left_eigenvectors:
    outs.append(lapack.nan_where_failed(vl, v_aval, ok, batch))
  if compute_right_eigenvectors:
    outs.append(lapack.nan_where_failed(vr, v_aval, ok, batch))
  return outs


mlir.register_lowering(eig_p, _eig_lowering)


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
  if compute_left_eigenvectors or compute_right_eigenvectors:
    raise NotImplementedError(
        "The derivatives of eigenvectors are not implemented, only of eigenvalues: use "
        "eig(..., compute_left_eigenvectors=False, compute_right_eigenvectors=False) "
        "(or linalg.eigvals) under differentiation.")
  (a,), (da,) = primals, tangents
  w, v = eig_p.bind(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
  if type(da) is ad.Zero:
    return [w], [ad.Zero.from_primal_value(w)]
  da = lax.convert_element_type(da, mx.aval(w).dtype)
  lu_, _, permutation = lu(v)
  dw = mx.diagonal(lu_solve(lu_, permutation, mx.matmul(da, v)))
  return [w], [dw]


ad.primitive_jvps[eig_p] = _eig_jvp


def _eig_batch(args, dims, **params):
  (a,), (d,) = args, dims
  outs = eig_p.bind(batching.moveaxis(a, d, 0), **params)
  return outs, [0] * len(outs)


batching.primitive_batchers[eig_p] = _eig_batch


class EigImplementation(enum.Enum):
  """Which eigensolver `eig` uses (JAX's names); the CPU has LAPACK's geev."""
  CUSOLVER = "cusolver"
  MAGMA = "magma"
  LAPACK = "lapack"


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        use_magma=None, implementation=None):
  """`[w, vl, vr]` (as many as asked): eigenvalues and left and right eigenvectors of the
  square matrices `x` (`[..., n, n]`), complex, by LAPACK's geev."""
  if implementation not in (None, "lapack", EigImplementation.LAPACK):
    raise ValueError("Only the lapack implementation is supported on CPU.")
  x = lax.convert_to_array(x)
  if not dtypes.is_inexact(mx.aval(x).dtype):
    x = lax.convert_element_type(x, dtypes.default_float_dtype())
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors))
