"""`minijax.scipy.signal`: scipy's convolutions and correlations of n-dimensional arrays,
and `detrend`.

A convolution of `in1` with `in2` in one of scipy's three modes is a window of the full
convolution (size `s1 + s2 - 1` along each axis): "full" is all of it, "same" is the centred
window of `in1`'s size, "valid" is the part where the smaller operand lies wholly inside the
larger one (size `|s1 - s2| + 1`).  Every mode is one window `(start, size)` per axis, and
both methods compute exactly that window:
- "direct" (and "auto") is one `lax.conv_general_dilated` of the larger operand with the
  flipped smaller one (a convolution is symmetric in its operands), padded so that its output
  is the window (the padding may be negative: it then crops);
- "fft" multiplies the transforms (`rfftn` for real operands, `fftn` for complex ones) of
  both operands zero-padded to the full size, transforms back and slices the window.
Correlation is convolution with the conjugated, reversed second operand.

As in JAX, the operands are promoted to an inexact dtype, must have the same rank, and one
must be at least as large as the other along every axis.
"""
from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.numpy import _util

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve"]

_MODES = ("full", "same", "valid")


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _window(mode: str, s1: int, s2: int) -> tuple[int, int]:
  """(start, size) of `mode`'s window in the full convolution of lengths s1 and s2."""
  full = s1 + s2 - 1
  if mode == "full":
    return 0, full
  if mode == "same":
    return (full - s1) // 2, s1
  return min(s1, s2) - 1, abs(s1 - s2) + 1


def _operands(name: str, in1, in2, mode: str):
  if mode not in _MODES:
    raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")
  a, b = _util.promote_inexact(name, in1, in2)
  s1, s2 = _util.shape(a), _util.shape(b)
  if len(s1) != len(s2):
    raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got "
                     f"shapes {s1} and {s2}")
  if _util.size(a) == 0 or _util.size(b) == 0:
    raise ValueError(f"{name}: zero-size arrays not supported in convolutions, got shapes "
                     f"{s1} and {s2}.")
  if not (all(x >= y for x, y in zip(s1, s2)) or all(x <= y for x, y in zip(s1, s2))):
    raise ValueError(f"{name}: one input must be smaller than the other in every "
                     f"dimension, got shapes {s1} and {s2}.")
  return a, b


def _direct(a, b, mode: str, precision):
  jnp = _jnp()
  s1, s2 = _util.shape(a), _util.shape(b)
  windows = [_window(mode, x, y) for x, y in zip(s1, s2)]
  big, small = (a, b) if all(x >= y for x, y in zip(s1, s2)) else (b, a)
  big_shape, small_shape = _util.shape(big), _util.shape(small)
  padding = [(k - 1 - start, start + size - n)
             for (start, size), n, k in zip(windows, big_shape, small_shape)]
  if not s1:  # rank 0: a product
    return a * b
  out = lax.conv_general_dilated(big[None, None], jnp.flip(small)[None, None],
                                 (1,) * len(s1), padding, precision=precision)
  return out[0, 0]


def _fft(a, b, mode: str, axes):
  jnp = _jnp()
  s1, s2 = _util.shape(a), _util.shape(b)
  nd = len(s1)
  axes = tuple(range(nd)) if axes is None else _util.canonicalize_axes(
      tuple(axes) if isinstance(axes, (tuple, list)) else (operator.index(axes),), nd, "axes")
  for ax in set(range(nd)) - set(axes):
    if s1[ax] != s2[ax]:
      raise ValueError(f"fftconvolve: mapped axes must have same shape; got in1.shape={s1} "
                       f"in2.shape={s2} axes={axes}")
  if not axes:
    return a * b
  full = tuple(s1[ax] + s2[ax] - 1 for ax in axes)
  complex_ = jnp.iscomplexobj(a)
  forward, inverse = ((jnp.fft.fftn, jnp.fft.ifftn) if complex_
                      else (jnp.fft.rfftn, jnp.fft.irfftn))
  out = inverse(forward(a, full, axes) * forward(b, full, axes), full, axes)
  index = [slice(None)] * nd
  for ax in axes:
    start, size = _window(mode, s1[ax], s2[ax])
    index[ax] = slice(start, start + size)
  return out[tuple(index)]


def fftconvolve(in1, in2, mode="full", axes=None):
  """The convolution of two n-dimensional arrays by FFT (scipy.signal.fftconvolve); with
  `axes`, only along those axes (the others must have equal sizes)."""
  a, b = _operands("fftconvolve", in1, in2, mode)
  return _fft(a, b, mode, axes)


def convolve(in1, in2, mode="full", method="auto", precision=None):
  """The convolution of two n-dimensional arrays (scipy.signal.convolve): `method` is
  "direct" or "auto" (one `lax.conv_general_dilated`, with `precision`) or "fft"."""
  if method not in ("auto", "direct", "fft"):
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
  a, b = _operands("convolve", in1, in2, mode)
  if method == "fft":
    return _fft(a, b, mode, None)
  return _direct(a, b, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
  """The cross-correlation of two n-dimensional arrays (scipy.signal.correlate)."""
  jnp = _jnp()
  _util.check("correlate", in1, in2)
  return convolve(in1, jnp.flip(jnp.conj(_util.asarray(in2))), mode, method, precision)


def _check_2d(name: str, in1, in2, boundary, fillvalue):
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
  if _util.ndim(in1) != 2 or _util.ndim(in2) != 2:
    raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """The convolution of two 2-d arrays (scipy.signal.convolve2d; zero fill only)."""
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return convolve(in1, in2, mode, "direct", precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """The cross-correlation of two 2-d arrays (scipy.signal.correlate2d; zero fill only).
  Two of scipy's choices differ from `correlate`, and are kept: the "same" window is centred
  rounding up (not down), and in "valid" mode with the larger `in2` the result is conjugated."""
  jnp = _jnp()
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  if mode != "same":
    out = correlate(in1, in2, mode, "direct", precision)
    s1, s2 = _util.shape(in1), _util.shape(in2)
    if mode == "valid" and s1 != s2 and all(x <= y for x, y in zip(s1, s2)):
      out = jnp.conj(out)
    return out
  a, b = _operands("correlate2d", in1, in2, "full")
  full = correlate(a, b, "full", "direct", precision)
  start = [-(-(y - 1) // 2) for y in _util.shape(b)]
  return full[tuple(slice(st, st + n) for st, n in zip(start, _util.shape(a)))]


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):
  """`data` less its least-squares line along `axis` (`type='linear'`, separately on each
  piece between the breakpoints `bp`), or less its mean (`'constant'`)."""
  jnp = _jnp()
  if type not in ("linear", "l", "constant", "c"):
    raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
  data = jnp.asarray(data)
  if not jnp.issubdtype(data.dtype, jnp.inexact):
    data = data.astype(jnp.result_type(data.dtype, float))
  if type in ("constant", "c"):
    return data - jnp.mean(data, axis=axis, keepdims=True)
  moved = jnp.moveaxis(data, axis, 0)
  n = moved.shape[0]
  edges = sorted({0, n, *(int(b) for b in np.atleast_1d(bp))})
  if edges[0] < 0 or edges[-1] > n:
    raise ValueError(f"detrend: breakpoints must lie in [0, {n}], got {bp}")
  pieces = []
  for lo, hi in zip(edges[:-1], edges[1:]):
    y = moved[lo:hi]
    t = jnp.arange(hi - lo, dtype=y.dtype).reshape((-1,) + (1,) * (y.ndim - 1))
    t = t - jnp.mean(t)
    centered = y - jnp.mean(y, axis=0, keepdims=True)
    slope = jnp.sum(t * centered, axis=0) / jnp.maximum(jnp.sum(t * t), 1)
    pieces.append(centered - t * slope)
  return jnp.moveaxis(jnp.concatenate(pieces, axis=0), 0, axis)
