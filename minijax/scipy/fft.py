"""`minijax.scipy.fft`: the discrete cosine transform (type 2) and its inverse.

`dct(x, type=2, n=None, axis=-1, norm=None)` computes `2 * sum_j x[j] cos(pi k (2j+1) / 2N)`
along `axis` as one matrix product with the (constant) cosine matrix; `norm="ortho"`
scales it to an orthonormal matrix, whose transpose `idct` applies.  Other DCT types raise
NotImplementedError."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp


def _dct_matrix(n: int, norm: str | None) -> np.ndarray:
  k = np.arange(n)[:, None]
  j = np.arange(n)[None, :]
  m = 2.0 * np.cos(np.pi * k * (2 * j + 1) / (2 * n))
  if norm == "ortho":
    m[0] *= np.sqrt(1.0 / (4 * n))
    m[1:] *= np.sqrt(1.0 / (2 * n))
  elif norm not in (None, "backward"):
    raise ValueError(f"dct: norm must be None, 'backward' or 'ortho', got {norm!r}")
  return m


def _apply(matrix: np.ndarray, x, axis: int):
  x = jnp.asarray(x)
  dtype = jnp.result_type(x, jnp.float32)
  moved = jnp.moveaxis(x.astype(dtype), axis, -1)
  out = jnp.matmul(moved, jnp.asarray(matrix.T, dtype), precision="highest")
  return jnp.moveaxis(out, -1, axis)


def _check(name: str, type: int, n):
  if type != 2:
    raise NotImplementedError(f"{name}: only type=2 is implemented in minijax, got type={type}")
  if n is not None:
    raise NotImplementedError(f"{name}: n= (padding or truncating) is not implemented in "
                              "minijax; pad or slice the input first")


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The type-2 discrete cosine transform of `x` along `axis`."""
  _check("dct", type, n)
  return _apply(_dct_matrix(np.shape(x)[axis], norm), x, axis)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The inverse of `dct(x, type=2, axis=axis, norm=norm)`."""
  _check("idct", type, n)
  size = np.shape(x)[axis]
  matrix = _dct_matrix(size, norm)
  inverse = matrix.T if norm == "ortho" else np.linalg.inv(matrix)
  return _apply(inverse, x, axis)


__all__ = ["dct", "idct"]
