"""`minijax.scipy.fft`: the discrete cosine transform (type 2) and its inverse, in one or
several dimensions, computed as JAX computes them, so that the values are JAX's bit for bit.

`dct(x, type=2, n=None, axis=-1, norm=None)` is `2 * sum_j x[j] cos(pi k (2j+1) / 2N)`
along `axis`, by Makhoul's method: the even-indexed values followed by the odd-indexed ones
reversed, one FFT, a twiddle `exp(-i pi k / 2N)`, the real part doubled (O(N log N)).
`idct` undoes each step with an inverse FFT; `norm="ortho"` scales both to orthonormal
transforms.  `n` zero-pads or truncates along `axis` first, as scipy does.  `dctn` over two
axes twiddles one two-dimensional FFT; over more, it composes pairs; `idctn` composes
one-dimensional inverses.  Complex inputs are transformed part by part; other DCT types
and `norm="forward"` raise, as in JAX."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.lax.utils import canonicalize_axis
from minijax.numpy import _util


def _check(type: int, norm, name: str) -> None:
  if type != 2:
    raise NotImplementedError(f"minijax.scipy.fft.{name}: only DCT type 2 is implemented, "
                              f"got type={type}")
  if norm not in (None, "backward", "ortho"):
    raise ValueError(f"minijax.scipy.fft.{name}: norm={norm!r} is not implemented; use None, "
                     "'backward' or 'ortho'")


def _resized(x, sizes: dict[int, int]):
  """`x` zero-padded or truncated to `sizes[axis]` along each axis given (scipy's `n=`)."""
  if any(n < 1 for n in sizes.values()):
    raise ValueError(f"minijax.scipy.fft: lengths must be positive, got {list(sizes.values())}")
  return lax.pad(x, np.zeros((), x.dtype), [(0, sizes[a] - x.shape[a] if a in sizes else 0, 0)
                                            for a in range(x.ndim)])


def _along(k, axis: int, ndim: int):
  return lax.expand_dims(k, [a for a in range(ndim) if a != axis])


def _twiddle(n: int, k):
  """`exp(-i pi k / 2n)`, in complex arithmetic as JAX's (k promoted to complex)."""
  k = k.astype(np.result_type(k.dtype, np.complex64))
  return jnp.exp(-.5j * np.pi * k / jnp.asarray(n, k.dtype))


def _interleave(x, axis: int):
  """The even-indexed values, then the odd-indexed ones reversed."""
  evens = lax.slice_in_dim(x, None, None, 2, axis)
  odds = lax.rev(lax.slice_in_dim(x, 1, None, 2, axis), (axis,))
  return lax.concatenate([evens, odds], axis)


def _deinterleave(x, axis: int):
  half = math.ceil(x.shape[axis] / 2)
  evens = lax.slice_in_dim(x, 0, half, 1, axis)
  odds = lax.rev(lax.slice_in_dim(x, half, None, 1, axis), (axis,))
  where = lambda start: tuple(slice(start, None, 2) if a == axis else slice(None)  # noqa: E731
                              for a in range(x.ndim))
  return jnp.zeros(x.shape, x.dtype).at[where(0)].set(evens).at[where(1)].set(odds)


def _ortho(out, axis: int):
  n = out.shape[axis]
  factor = lax.concatenate([lax.full((1,), 4, out.dtype), lax.full((n - 1,), 2, out.dtype)], 0)
  return out / lax.sqrt(_along(factor, axis, out.ndim) * n)


def _by_parts(fun, x, *args):
  """`fun` of a complex `x`: of its real and imaginary parts, as JAX transforms it."""
  return lax.complex(fun(jnp.real(x), *args), fun(jnp.imag(x), *args))


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The type-2 discrete cosine transform of `x` along `axis`."""
  _check(type, norm, "dct")
  x = _util.arrays_of("minijax.scipy.fft.dct", [x])[0]
  if jnp.iscomplexobj(x):
    return _by_parts(dct, x, type, n, axis, norm)
  axis = canonicalize_axis(axis, x.ndim)
  if n is not None:
    x = _resized(x, {axis: n})
  size = x.shape[axis]
  spectrum = jnp.fft.fft(_interleave(x, axis), axis=axis)
  k = _along(jnp.arange(size, dtype=spectrum.real.dtype), axis, x.ndim)
  out = 2 * (spectrum * _twiddle(size, k)).real
  return _ortho(out, axis) if norm == "ortho" else out


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The inverse of `dct(x, type=2, axis=axis, norm=norm)`."""
  _check(type, norm, "idct")
  x = _util.arrays_of("minijax.scipy.fft.idct", [x])[0]
  if jnp.iscomplexobj(x):
    return _by_parts(idct, x, type, n, axis, norm)
  axis = canonicalize_axis(axis, x.ndim)
  if n is not None:
    x = _resized(x, {axis: n})
  size = x.shape[axis]
  (x,) = _util.promote_inexact("minijax.scipy.fft.idct", x)
  x = _ortho(x, axis) if norm == "ortho" else _ortho(_ortho(x, axis), axis)
  k = _along(jnp.arange(size, dtype=x.dtype), axis, x.ndim)
  twiddle = _twiddle(size, k)
  x = x.astype(twiddle.dtype) / twiddle * 2 * size
  return _deinterleave(jnp.fft.ifft(x, axis=axis).real, axis)


def _axes_and_sizes(x, s, axes, name: str):
  """The axes of a multidimensional transform and `x` resized along them to `s`."""
  if s is not None:
    s = [int(s)] if np.ndim(s) == 0 else list(s)
    if len(s) > x.ndim:
      raise ValueError(f"minijax.scipy.fft.{name}: s must have at most x.ndim ({x.ndim}) "
                       f"elements, got {len(s)}")
  if axes is None:
    axes = range(x.ndim - len(s), x.ndim) if s is not None else range(x.ndim)
  axes = tuple(canonicalize_axis(int(a), x.ndim) for a in axes)
  if s is not None:
    if len(s) != len(axes):
      raise ValueError(f"minijax.scipy.fft.{name}: s and axes must have the same length, got "
                       f"s={tuple(s)} and axes={axes}")
    x = _resized(x, dict(zip(axes, s)))
  return x, axes


def _dct2(x, axes, norm):
  """The DCT along two axes, twiddling one two-dimensional FFT."""
  a1, a2 = axes
  n1, n2 = x.shape[a1], x.shape[a2]
  spectrum = jnp.fft.fftn(_interleave(_interleave(x, a1), a2), axes=axes)
  k1 = _along(jnp.arange(n1, dtype=spectrum.dtype), a1, x.ndim)
  k2 = _along(jnp.arange(n2, dtype=spectrum.dtype), a2, x.ndim)
  mirrored = jnp.roll(jnp.flip(spectrum, axis=a2), shift=1, axis=a2)
  out = _twiddle(n1, k1) * (_twiddle(n2, k2) * spectrum + _twiddle(n2, -k2) * mirrored)
  out = 2 * out.real
  return _ortho(_ortho(out, a1), a2) if norm == "ortho" else out


def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
  """The type-2 discrete cosine transform of `x` along each of `axes` (all, by default)."""
  _check(type, norm, "dctn")
  x = _util.arrays_of("minijax.scipy.fft.dctn", [x])[0]
  if jnp.iscomplexobj(x):
    return _by_parts(dctn, x, type, s, axes, norm)
  x, axes = _axes_and_sizes(x, s, axes, "dctn")
  if len(axes) == 1:
    return dct(x, axis=axes[0], norm=norm)
  if len(axes) == 2:
    return _dct2(x, axes, norm)
  for pair in (axes[i:i + 2] for i in range(0, len(axes), 2)):
    x = dctn(x, axes=pair, norm=norm)
  return x


def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
  """The inverse of `dctn(x, type=2, axes=axes, norm=norm)`."""
  _check(type, norm, "idctn")
  x = _util.arrays_of("minijax.scipy.fft.idctn", [x])[0]
  if jnp.iscomplexobj(x):
    return _by_parts(idctn, x, type, s, axes, norm)
  x, axes = _axes_and_sizes(x, s, axes, "idctn")
  for axis in axes:
    x = idct(x, axis=axis, norm=norm)
  return x


__all__ = ["dct", "dctn", "idct", "idctn"]
