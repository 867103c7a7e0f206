"""Linear-algebra functions that JAX gives primitives of their own and minijax composes
from the others: `symmetric_product` (a matrix product), `cholesky_update` (a Cholesky
factorization of the updated matrix) and `ormqr` (the full Q of geqrf's reflectors by
`householder_product`, then a product).  Their results are JAX's; their cost is that of
the composition."""
from __future__ import annotations

from minijax import lax
from minijax.core import dtypes
from minijax.lax.linalg import matrices as mx
from minijax.lax.linalg.schur import householder_product
from minijax.lax.linalg.triangular import cholesky


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
  """`alpha a a^T + beta c` for a `[..., m, n]` and c `[..., m, m]` of one floating type;
  with `symmetrize_output`, its lower triangle mirrored above."""
  a, c = lax.convert_to_array(a_matrix), lax.convert_to_array(c_matrix)
  a_shape, c_shape = mx.aval(a).shape, mx.aval(c).shape
  if (len(a_shape) < 2 or len(c_shape) < 2 or c_shape[-1] != c_shape[-2]
      or c_shape[-1] != a_shape[-2]):
    raise ValueError("symmetric_product takes a of shape [..., m, n] and c of shape "
                     f"[..., m, m], got {a_shape} and {c_shape}")
  for i, x in enumerate((a, c)):
    if not dtypes.is_float(mx.aval(x).dtype):
      raise TypeError(f"symmetric_product takes floating point matrices, got "
                      f"{mx.aval(x).dtype} at position {i}")
  dtype = mx.aval(c).dtype
  product = mx.matmul(a, mx.T(a))
  out = lax.add(lax.mul(lax.full((), alpha, dtype), product), lax.mul(lax.full((), beta, dtype), c))
  if not symmetrize_output:
    return out
  lower = mx.tril(out)
  return lax.add(lower, mx.T(mx.tril(out, -1)))


def cholesky_update(r_matrix, w_vector):
  """The upper Cholesky factor of `r^H r + w w^H`, given the upper factor `r` of a matrix."""
  r, w = lax.convert_to_array(r_matrix), lax.convert_to_array(w_vector)
  updated = lax.add(mx.matmul(mx.H(r), r), mx.matmul(mx.column_vector(w), mx.H(mx.column_vector(w))))
  return mx.H(cholesky(updated))


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
  """`Q c` (or `c Q` when not `left`; `Q^H` for Q with `transpose`), Q the m-by-m product
  of the reflectors that geqrf left in `a` (m-by-n) and `taus`."""
  a, taus, c = map(lax.convert_to_array, (a, taus, c))
  m, n = mx.aval(a).shape[-2:]
  batch = mx.aval(a).shape[:-2]
  if n < m:  # the full Q: the missing reflectors are identities (tau = 0)
    a = lax.pad(a, lax.full((), 0, mx.aval(a).dtype), [(0, 0, 0)] * len(batch) + [(0, 0, 0), (0, m - n, 0)])
  k = mx.aval(taus).shape[-1]
  if k < m:
    taus = lax.pad(taus, lax.full((), 0, mx.aval(taus).dtype), [(0, 0, 0)] * len(batch) + [(0, m - k, 0)])
  q = householder_product(a[..., :m, :m] if n > m else a, taus)
  if transpose:
    q = mx.H(q)
  return mx.matmul(q, c) if left else mx.matmul(c, q)
