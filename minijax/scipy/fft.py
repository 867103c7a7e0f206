"""`minijax.scipy.fft`: the discrete cosine transform (type 2) and its inverse, in one or
several dimensions.

`dct(x, type=2, n=None, axis=-1, norm=None)` computes `2 * sum_j x[j] cos(pi k (2j+1) / 2N)`
along `axis` as one matrix product with the (constant) cosine matrix; `norm="ortho"`
scales it to an orthonormal matrix, whose transpose `idct` applies.  `n` zero-pads or
truncates the input along `axis` first, as scipy does; `dctn`/`idctn` apply the transform
along each of `axes` in turn.  Other DCT types and `norm="forward"` raise, as in JAX."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijax import numpy as jnp
from minijax.numpy import _util


def _dct_matrix(n: int, norm: str | None, name: str) -> np.ndarray:
  k = np.arange(n)[:, None]
  j = np.arange(n)[None, :]
  m = 2.0 * np.cos(np.pi * k * (2 * j + 1) / (2 * n))
  if norm == "ortho":
    m[0] *= np.sqrt(1.0 / (4 * n))
    m[1:] *= np.sqrt(1.0 / (2 * n))
  elif norm not in (None, "backward"):
    raise ValueError(f"minijax.scipy.fft.{name}: norm={norm!r} is not implemented; use None, "
                     "'backward' or 'ortho'")
  return m


def _resized(x, n: int | None, axis: int):
  """`x` zero-padded or truncated to length `n` along `axis` (scipy's `n=`)."""
  if n is None:
    return x
  if n < 1:
    raise ValueError(f"minijax.scipy.fft: n must be positive, got {n}")
  size = x.shape[axis]
  if n <= size:
    return jnp.take(x, jnp.arange(n), axis=axis)
  widths = [(0, 0)] * x.ndim
  widths[axis] = (0, n - size)
  return jnp.pad(x, widths)


def _transform(x, type: int, n: int | None, axis: int, norm, name: str, inverse: bool):
  if type != 2:
    raise NotImplementedError(f"minijax.scipy.fft.{name}: only DCT type 2 is implemented, "
                              f"got type={type}")
  x = _util.promote_inexact(f"minijax.scipy.fft.{name}", x)[0]
  if jnp.finfo(x.dtype).bits < 32:  # (JAX's goes through an FFT, of float32 at least)
    x = x.astype(np.float32)
  x = _resized(x, n, axis)
  matrix = _dct_matrix(x.shape[axis], norm, name)
  if inverse:
    matrix = matrix.T if norm == "ortho" else np.linalg.inv(matrix)
  moved = jnp.moveaxis(x, axis, -1)
  out = jnp.matmul(moved, jnp.asarray(matrix.T, x.dtype), precision="highest")
  return jnp.moveaxis(out, -1, axis)


def _axes_and_sizes(ndim: int, s, axes, name: str):
  if axes is None:
    axes = range(ndim - len(s), ndim) if s is not None else range(ndim)
  axes = [int(a) for a in axes]
  if s is None:
    s = [None] * len(axes)
  elif len(s) != len(axes):
    raise ValueError(f"minijax.scipy.fft.{name}: s and axes must have the same length, got "
                     f"s={tuple(s)} and axes={tuple(axes)}")
  return list(zip(axes, s))


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The type-2 discrete cosine transform of `x` along `axis`."""
  return _transform(x, type, n, axis, norm, "dct", inverse=False)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The inverse of `dct(x, type=2, axis=axis, norm=norm)`."""
  return _transform(x, type, n, axis, norm, "idct", inverse=True)


def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
  """The type-2 discrete cosine transform of `x` along each of `axes` (all, by default)."""
  x = jnp.asarray(x)
  for axis, n in _axes_and_sizes(x.ndim, s, axes, "dctn"):
    x = _transform(x, type, n, axis, norm, "dctn", inverse=False)
  return x


def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
  """The inverse of `dctn(x, type=2, axes=axes, norm=norm)`."""
  x = jnp.asarray(x)
  for axis, n in _axes_and_sizes(x.ndim, s, axes, "idctn"):
    x = _transform(x, type, n, axis, norm, "idctn", inverse=True)
  return x


__all__ = ["dct", "dctn", "idct", "idctn"]
