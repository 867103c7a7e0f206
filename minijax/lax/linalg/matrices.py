"""Batched matrix helpers for the linear algebra primitives' rules: transposes and adjoints
of the last two axes, triangles, identities, diagonals, products and the shape and dtype
checks every decomposition shares.

Everything here works on arrays of shape `[..., m, n]` (any number of leading batch axes)
with lax operations only, so the rules built from them run under every transformation.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import get_aval

LAPACK_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def aval(x):
  return get_aval(x)


def is_complex(dtype) -> bool:
  return np.issubdtype(dtype, np.complexfloating)


def real_dtype(dtype) -> np.dtype:
  return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(
      np.dtype(dtype), np.dtype(dtype))


def T(x):
  """The transpose of the last two axes."""
  nd = aval(x).ndim
  return lax.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def conj(x):
  """The complex conjugate, or `x` itself when it is real."""
  return lax.conj(x) if is_complex(aval(x).dtype) else x


def H(x):
  """The conjugate transpose (adjoint) of the last two axes."""
  return conj(T(x))


def real(x):
  return lax.real(x) if is_complex(aval(x).dtype) else x


def symmetrize(x):
  """`(x + x^H) / 2`: the Hermitian (symmetric) part, of integers and booleans in floating
  point (JAX's true division)."""
  x = lax.convert_to_array(x)
  dtype = dtypes.to_inexact_dtype(aval(x).dtype)
  x = lax.convert_element_type(x, dtype)
  return lax.div(lax.add(x, H(x)), lax.full((), 2, dtype))


def _triangle_mask(shape, k: int, lower: bool):
  """True on and below diagonal `k` (`lower`), or on and above it, broadcast to `shape`."""
  n, m = shape[-2:]
  rows = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
  cols = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
  shifted = lax.add(rows, lax.full((n, m), k, dtypes.int32))
  mask = lax.ge(shifted, cols) if lower else lax.le(shifted, cols)
  return lax.broadcast_in_dim(mask, tuple(shape), (len(shape) - 2, len(shape) - 1))


def tril(x, k: int = 0):
  a = aval(x)
  return lax.select(_triangle_mask(a.shape, k, True), x, lax.full(a.shape, 0, a.dtype))


def triu(x, k: int = 0):
  a = aval(x)
  return lax.select(_triangle_mask(a.shape, k, False), x, lax.full(a.shape, 0, a.dtype))


def eye(dtype, n: int, m: int | None = None, batch=()):
  m = n if m is None else m
  on = lax.eq(lax.broadcasted_iota(dtypes.int32, (n, m), 0),
              lax.broadcasted_iota(dtypes.int32, (n, m), 1))
  out = lax.convert_element_type(on, dtype)
  return lax.broadcast(out, tuple(batch)) if batch else out


def matmul(a, b):
  """`a @ b` for `[..., m, k]` and `[..., k, n]` with the same batch axes."""
  nd = aval(a).ndim
  batch = tuple(range(nd - 2))
  return lax.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def diagonal(x):
  """The main diagonal of the last two axes, `[..., min(m, n)]`."""
  a = aval(x)
  n, m = a.shape[-2:]
  k = min(n, m)
  x = lax.slice(x, (0,) * a.ndim, (*a.shape[:-2], k, k))
  mask = eye(dtypes.bool_, k, batch=a.shape[:-2])
  return lax.reduce_sum(lax.select(mask, x, lax.full(mask.shape, 0, a.dtype)), (a.ndim - 1,))


def diag_matrix(d):
  """The `[..., n, n]` matrices with diagonals `d` (`[..., n]`)."""
  a = aval(d)
  n = a.shape[-1]
  shape = (*a.shape, n)
  full = lax.broadcast_in_dim(d, shape, tuple(range(a.ndim)))
  mask = eye(dtypes.bool_, n, batch=a.shape[:-1])
  return lax.select(mask, full, lax.full(shape, 0, a.dtype))


def _broadcast(x, y):
  shape = tuple(np.broadcast_shapes(aval(x).shape, aval(y).shape))
  def to(v):
    s = aval(v).shape
    if s == shape:
      return v
    v = lax.reshape(v, (1,) * (len(shape) - len(s)) + s)
    keep = tuple(d for d, n in enumerate(aval(v).shape) if n == shape[d])
    return lax.broadcast_in_dim(lax.squeeze(v, tuple(d for d in range(len(shape))
                                                     if d not in keep)), shape, keep)
  return to(x), to(y)


def badd(x, y):
  """`x + y` with numpy broadcasting (lax's ops broadcast rank-0 operands only)."""
  return lax.add(*_broadcast(x, y))


def bsub(x, y):
  return lax.sub(*_broadcast(x, y))


def bmul(x, y):
  return lax.mul(*_broadcast(x, y))


def bdiv(x, y):
  return lax.div(*_broadcast(x, y))


def row_vector(v):
  """`[..., n]` as `[..., 1, n]`."""
  a = aval(v)
  return lax.broadcast_in_dim(v, (*a.shape[:-1], 1, a.shape[-1]),
                              (*range(a.ndim - 1), a.ndim))


def column_vector(v):
  """`[..., n]` as `[..., n, 1]`."""
  a = aval(v)
  return lax.reshape(v, (*a.shape, 1))


def take_rows(x, permutation):
  """`x[..., permutation[..., i], :]`: rows of `[..., m, n]` picked by `[..., m]` indices."""
  a = aval(x)
  idx = lax.broadcast_in_dim(permutation, a.shape, tuple(range(a.ndim - 1)))
  return lax.take_along_axis(x, idx, a.ndim - 2)


def take_columns(x, permutation):
  """`x[..., :, permutation[..., j]]`: columns of `[..., m, n]` picked by `[..., n]`
  indices."""
  a = aval(x)
  idx = lax.broadcast_in_dim(permutation, a.shape, (*range(a.ndim - 2), a.ndim - 1))
  return lax.take_along_axis(x, idx, a.ndim - 1)


# ----------------------------------------------------------------------------- checks

def check_ranks(name: str, avals, ranks) -> tuple:
  """JAX's checks: every operand has at least its core rank and all have the same number of
  batch axes.  Returns the batch shape."""
  batches = []
  for i, (a, rank) in enumerate(zip(avals, ranks)):
    if a.ndim < rank:
      raise TypeError(f"Input {i} to {name} must have rank at least {rank}, but got "
                      f"shape={a.shape}")
    batches.append(a.shape[:a.ndim - rank])
  if len({len(b) for b in batches}) != 1:
    raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, "
                    f"but got {[len(b) for b in batches]} batch dimensions for the inputs.")
  if len(set(batches)) != 1:
    raise TypeError(f"All inputs to {name} must have the same batch dimensions, got "
                    f"{' and '.join(str(b) for b in batches)}")
  return batches[0]


def check_dtypes(name: str, *avals) -> np.dtype:
  """The operands' one dtype, which must be one LAPACK takes (float32, float64, complex64,
  complex128)."""
  for a in avals:
    if a.dtype not in LAPACK_DTYPES:
      raise TypeError(f"{name} does not accept dtype {a.dtype}. Accepted dtypes are float32, "
                      "float64, complex64 and complex128 (convert with astype)")
  if len({a.dtype for a in avals}) != 1:
    raise TypeError(f"{name} requires operands of one dtype, got "
                    f"{', '.join(a.str_short() for a in avals)}")
  return avals[0].dtype


def check_square(name: str, shape, what: str = "The input") -> None:
  if shape[-1] != shape[-2]:
    raise ValueError(f"{what} to {name} must be a square matrix. Got shape {shape[-2:]}.")
