"""`minijax.numpy.fft`: numpy's discrete Fourier transforms on `lax.fft` (XLA's FFT).

Every transform goes through `_transform`: the requested axes are moved to the end (XLA
transforms trailing axes only), cropped or zero-padded to the sizes `s` (for `irfft*` the
last input axis holds `s[-1] // 2 + 1` frequencies), transformed, scaled for `norm`, and
moved back.  XLA transforms at most three axes at once; more are done three (or, for four,
two) at a time: forward transforms first transform the innermost axes (the real-to-complex
step must come first), inverse ones last (the complex-to-real step must come last).

`norm` is numpy's: "backward" (the default: no scale forward, 1/n inverse), "ortho"
(1/sqrt(n) both ways) or "forward" (1/n forward, none inverse), n being the product of the
transformed sizes.
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.lax.fft import FftType
from minijax.numpy import _util

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_INVERSE = (FftType.IFFT, FftType.IRFFT)


def _norm_scale(norm, sizes: Sequence[int], inverse: bool) -> float | None:
  if norm is None or norm == "backward":
    return None
  n = math.prod(sizes)
  if norm == "ortho":
    return math.sqrt(n) if inverse else 1 / math.sqrt(n)
  if norm == "forward":
    return float(n) if inverse else 1 / n
  raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _transform_nd(x, fft_type: FftType, sizes: tuple):
  if len(sizes) <= 3:
    return lax.fft(x, fft_type, sizes)
  jnp = _jnp()
  k = 2 if len(sizes) == 4 else 3
  nd = _util.ndim(x)
  outer = tuple(range(nd - len(sizes), nd - k))
  moved = tuple(range(nd - len(sizes) + k, nd))
  if fft_type in _INVERSE:
    x = jnp.moveaxis(x, outer, moved)
    x = jnp.moveaxis(_transform_nd(x, FftType.IFFT, sizes[:-k]), moved, outer)
    return lax.fft(x, fft_type, sizes[-k:])
  x = jnp.moveaxis(lax.fft(x, fft_type, sizes[-k:]), outer, moved)
  return jnp.moveaxis(_transform_nd(x, FftType.FFT, sizes[:-k]), moved, outer)


def _transform(name: str, fft_type: FftType, a, s, axes, norm):
  jnp = _jnp()
  full_name = f"minijax.numpy.fft.{name}"
  _util.check(full_name, a)
  x = _util.asarray(a)
  nd = _util.ndim(x)
  if s is not None:
    s = tuple(operator.index(v) for v in s)
    if any(v <= 0 for v in s):
      raise ValueError(f"{full_name}: the sizes s={s} must be positive.")
    if axes is not None and len(s) != len(axes):
      raise ValueError(f"{full_name}: Shape and axes have different lengths "
                       f"(s={s}, axes={tuple(axes)}).")
  if axes is None:
    axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    moved_from = None
  else:
    given = axes
    axes = tuple(operator.index(ax) for ax in axes)
    if len(set(axes)) != len(axes):
      raise ValueError(f"{full_name} does not support repeated axes. Got axes {given}.")
    moved_from = _util.canonicalize_axes(axes, nd) if axes else ()
    if len(set(moved_from)) != len(moved_from):
      raise ValueError(f"{full_name} does not support repeated axes. Got axes {given}.")
    axes = tuple(range(nd - len(axes), nd))
    x = jnp.moveaxis(x, moved_from, axes)
  if len(axes) > nd or any(ax < 0 for ax in axes):
    raise ValueError(f"{full_name}: {len(axes)} axes to transform, but the input has "
                     f"rank {nd}.")

  shape = list(_util.shape(x))
  if s is not None:
    sizes = s
    wanted = list(shape)
    for ax, v in zip(axes, s):
      wanted[ax] = v
    if fft_type == FftType.IRFFT and axes:
      wanted[-1] = s[-1] // 2 + 1
    x = x[tuple(slice(v) for v in wanted)]
    x = jnp.pad(x, [(0, w - have) for w, have in zip(wanted, _util.shape(x))])
  elif fft_type == FftType.IRFFT and axes:
    sizes = tuple(shape[ax] for ax in axes[:-1]) + (max(0, 2 * (shape[axes[-1]] - 1)),)
  else:
    sizes = tuple(shape[ax] for ax in axes)
  if any(v == 0 for v in sizes):
    if fft_type in (FftType.FFT, FftType.IFFT):  # nothing to transform: an empty result
      return jnp.asarray(x, dtypes.to_complex_dtype(_util.dtype(x)))
    raise ValueError(f"{full_name}: invalid number of data points ({sizes}) to transform; "
                     "each must be at least 1.")
  out = _transform_nd(x, fft_type, tuple(sizes))
  # (hfft is an IRFFT scaled as a forward transform, ihfft an RFFT scaled as an inverse one)
  scale = _norm_scale(norm, sizes, name.startswith("i"))
  if scale is not None:
    out = out * np.asarray(scale, _util.dtype(out))
  if moved_from is not None:
    out = jnp.moveaxis(out, axes, moved_from)
  return out


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _one_axis(name: str, axis) -> list | None:
  """`[axis]`; None (every axis, as the n-dimensional transform's `axes=None`) for None."""
  if isinstance(axis, (list, tuple)):
    raise ValueError(f"minijax.numpy.fft.{name} does not support multiple axes. Please use "
                     f"minijax.numpy.fft.{name}n. Got axis = {axis!r}.")
  return None if axis is None else [axis]


def _two_axes(name: str, axes) -> Sequence[int]:
  if len(axes) != 2:
    raise ValueError(f"minijax.numpy.fft.{name} only supports 2 axes. Got axes = {axes!r}.")
  return axes


def fftn(a, s=None, axes=None, norm=None):
  """The n-dimensional discrete Fourier transform (numpy.fft.fftn)."""
  return _transform("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
  """The n-dimensional inverse discrete Fourier transform (numpy.fft.ifftn)."""
  return _transform("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
  """The n-dimensional discrete Fourier transform of a real array (numpy.fft.rfftn)."""
  return _transform("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
  """The inverse of `rfftn`: a real array of sizes `s` (numpy.fft.irfftn)."""
  return _transform("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft(a, n=None, axis=-1, norm=None):
  """The one-dimensional discrete Fourier transform (numpy.fft.fft)."""
  return _transform("fft", FftType.FFT, a, None if n is None else [n], _one_axis("fft", axis),
                    norm)


def ifft(a, n=None, axis=-1, norm=None):
  """The one-dimensional inverse discrete Fourier transform (numpy.fft.ifft)."""
  return _transform("ifft", FftType.IFFT, a, None if n is None else [n],
                    _one_axis("ifft", axis), norm)


def rfft(a, n=None, axis=-1, norm=None):
  """The one-dimensional discrete Fourier transform of a real array (numpy.fft.rfft)."""
  return _transform("rfft", FftType.RFFT, a, None if n is None else [n],
                    _one_axis("rfft", axis), norm)


def irfft(a, n=None, axis=-1, norm=None):
  """The inverse of `rfft`: a real array of length `n`, by default 2 * (m - 1) for m
  frequencies (numpy.fft.irfft)."""
  return _transform("irfft", FftType.IRFFT, a, None if n is None else [n],
                    _one_axis("irfft", axis), norm)


def hfft(a, n=None, axis=-1, norm=None):
  """The transform of a signal with a Hermitian-symmetric spectrum (numpy.fft.hfft)."""
  jnp = _jnp()
  if _one_axis("hfft", axis) is None:
    raise ValueError("minijax.numpy.fft.hfft takes one axis, got axis=None")
  x = jnp.conj(_util.asarray(a))
  size = 2 * (_util.shape(x)[axis] - 1) if n is None else n
  return _transform("hfft", FftType.IRFFT, x, None if n is None else [n], [axis], norm) * size


def ihfft(a, n=None, axis=-1, norm=None):
  """The inverse of `hfft` (numpy.fft.ihfft)."""
  jnp = _jnp()
  if _one_axis("ihfft", axis) is None:
    raise ValueError("minijax.numpy.fft.ihfft takes one axis, got axis=None")
  x = _util.asarray(a)
  size = _util.shape(x)[axis] if n is None else n
  out = _transform("ihfft", FftType.RFFT, x, None if n is None else [n], [axis], norm)
  return jnp.conj(out) * (1 / size)


def fft2(a, s=None, axes=(-2, -1), norm=None):
  """The two-dimensional discrete Fourier transform (numpy.fft.fft2)."""
  return _transform("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
  """The two-dimensional inverse discrete Fourier transform (numpy.fft.ifft2)."""
  return _transform("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
  """The two-dimensional discrete Fourier transform of a real array (numpy.fft.rfft2)."""
  return _transform("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
  """The inverse of `rfft2` (numpy.fft.irfft2)."""
  return _transform("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


def _frequency_dtype(name: str, dtype):
  dtype = dtypes.canonicalize_dtype(dtypes.float64 if dtype is None else dtype)
  if not dtypes.is_inexact(dtype):
    raise ValueError(f"minijax.numpy.fft.{name}: dtype must be a floating type (frequencies "
                     f"are fractions), got {dtype}")
  return dtype


def _check_int_n(name: str, n, d):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of minijax.numpy.fft.{name} only takes an int. "
                     f"Got n = {list(n)}.")
  if isinstance(d, (list, tuple)):
    raise ValueError(f"The d argument of minijax.numpy.fft.{name} only takes a single "
                     f"value. Got d = {list(d)}.")
  return operator.index(n)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an `n`-point `fft` with sample spacing `d`:
  [0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)."""
  jnp = _jnp()
  n = _check_int_n("fftfreq", n, d)
  dtype = _frequency_dtype("fftfreq", dtype)
  k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
  return _put(jnp.asarray(k, dtype) / jnp.asarray(d * n, dtype), device)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an `n`-point `rfft`: [0, 1, ..., n//2] / (d * n)."""
  jnp = _jnp()
  n = _check_int_n("rfftfreq", n, d)
  dtype = _frequency_dtype("rfftfreq", dtype)
  return _put(jnp.asarray(np.arange(0, n // 2 + 1), dtype) / jnp.asarray(d * n, dtype), device)


def _put(x, device):
  if device is None:
    return x
  from minijax.placement import device_put
  return device_put(x, device)


def _shift(x, axes, sign: int):
  jnp = _jnp()
  x = _util.asarray(x)
  if axes is None:
    axes = tuple(range(_util.ndim(x)))
  elif isinstance(axes, int):
    axes = (axes,)
  axes = tuple(axes)
  shifts = tuple(sign * (_util.shape(x)[ax] // 2) for ax in axes)
  return jnp.roll(x, shifts, axes)


def fftshift(x, axes=None):
  """Moves the zero frequency to the centre of the spectrum (numpy.fft.fftshift)."""
  return _shift(x, axes, 1)


def ifftshift(x, axes=None):
  """The inverse of `fftshift` (numpy.fft.ifftshift)."""
  return _shift(x, axes, -1)
