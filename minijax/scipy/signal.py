"""`minijax.scipy.signal`: scipy's convolutions and correlations of n-dimensional arrays,
`detrend`, and the spectral estimates `stft`, `csd` and `welch` (overlapping segments,
detrended and windowed, transformed; scipy's scalings) and `istft` (their overlap-add).

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

The spectra's windows are scipy.signal.get_window's (JAX asks scipy for them; minijax has
no scipy, so they are written here as numpy formulas: by name, `(name, *parameters)`, or
values), and `csd`/`welch` average by the mean or, bias-corrected, the median, as scipy.
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
    spread = jnp.sum(t * t)  # (0 for a piece of one sample, whose residual is 0 anyway)
    slope = jnp.sum(t * centered, axis=0) / jnp.where(spread == 0, 1, spread)
    pieces.append(centered - t * slope)
  return jnp.moveaxis(jnp.concatenate(pieces, axis=0), 0, axis)


# ----------------------------------------------------------------------------- spectra

def _general_cosine(m: int, a) -> np.ndarray:
  phase = np.linspace(-np.pi, np.pi, m)
  return sum(c * np.cos(k * phase) for k, c in enumerate(a))


def _triang(m: int) -> np.ndarray:
  n = np.arange(1, (m + 1) // 2 + 1)
  if m % 2 == 0:
    w = (2 * n - 1.0) / m
    return np.concatenate([w, w[::-1]])
  w = 2 * n / (m + 1.0)
  return np.concatenate([w, w[-2::-1]])


def _parzen(m: int) -> np.ndarray:
  n = np.arange(-(m - 1) / 2.0, (m - 1) / 2.0 + 0.5, 1.0)
  outer, inner = n[n < -(m - 1) / 4.0], n[np.abs(n) <= (m - 1) / 4.0]
  w_outer = 2 * (1 - np.abs(outer) / (m / 2.0)) ** 3.0
  r = np.abs(inner) / (m / 2.0)
  return np.concatenate([w_outer, 1 - 6 * r ** 2.0 + 6 * r ** 3.0, w_outer[::-1]])


def _bohman(m: int) -> np.ndarray:
  r = np.abs(np.linspace(-1, 1, m)[1:-1])
  return np.concatenate([[0.0], (1 - r) * np.cos(np.pi * r) + np.sin(np.pi * r) / np.pi, [0.0]])


def _tukey(m: int, alpha: float = 0.5) -> np.ndarray:
  if alpha <= 0:
    return np.ones(m)
  if alpha >= 1:
    return _general_cosine(m, [0.5, 0.5])
  n = np.arange(m)
  width = int(np.floor(alpha * (m - 1) / 2.0))
  rise, flat, fall = n[:width + 1], n[width + 1:m - width - 1], n[m - width - 1:]
  return np.concatenate([
      0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * rise / alpha / (m - 1)))), np.ones(flat.shape),
      0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * fall / alpha / (m - 1))))])


def _centered(m: int) -> np.ndarray:
  return np.arange(m) - (m - 1.0) / 2


# scipy.signal.get_window's windows, as symmetric windows of m points (the periodic window of
# n points is the symmetric one of n + 1 without its last point); the parameters after the
# name in a tuple `(name, *params)`
_WINDOWS = {
    "boxcar": lambda m: np.ones(m), "triang": _triang,
    "hann": lambda m: _general_cosine(m, [0.5, 0.5]),
    "hamming": lambda m: _general_cosine(m, [0.54, 0.46]),
    "blackman": lambda m: _general_cosine(m, [0.42, 0.50, 0.08]),
    "nuttall": lambda m: _general_cosine(m, [0.3635819, 0.4891775, 0.1365995, 0.0106411]),
    "blackmanharris": lambda m: _general_cosine(m, [0.35875, 0.48829, 0.14128, 0.01168]),
    "flattop": lambda m: _general_cosine(m, [0.21557895, 0.41663158, 0.277263158, 0.083578947,
                                             0.006947368]),
    "bartlett": lambda m: np.where(np.arange(m) <= (m - 1) / 2.0, 2.0 * np.arange(m) / (m - 1),
                                   2.0 - 2.0 * np.arange(m) / (m - 1)),
    "parzen": _parzen, "bohman": _bohman,
    "barthann": lambda m: (lambda r: 0.62 - 0.48 * r + 0.38 * np.cos(2 * np.pi * r))(
        np.abs(np.arange(m) / (m - 1.0) - 0.5)),
    "cosine": lambda m: np.sin(np.pi / m * (np.arange(m) + 0.5)),
    "tukey": _tukey,
    "exponential": lambda m, center=None, tau=1.0: np.exp(
        -np.abs(np.arange(m) - ((m - 1) / 2.0 if center is None else center)) / tau),
    "kaiser": lambda m, beta: np.i0(beta * np.sqrt(1 - (_centered(m) / ((m - 1) / 2.0)) ** 2.0))
                              / np.i0(beta),
    "gaussian": lambda m, std: np.exp(-_centered(m) ** 2 / (2 * std * std)),
    "general_gaussian": lambda m, p, sig: np.exp(-0.5 * np.abs(_centered(m) / sig) ** (2 * p)),
    "general_cosine": lambda m, a: _general_cosine(m, a),
    "general_hamming": lambda m, alpha: _general_cosine(m, [alpha, 1.0 - alpha]),
}
_ALIASES = {"box": "boxcar", "ones": "boxcar", "rect": "boxcar", "rectangular": "boxcar",
            "triangle": "triang", "tri": "triang", "han": "hann",
            "hamm": "hamming", "ham": "hamming", "black": "blackman", "blk": "blackman",
            "nutl": "nuttall", "nut": "nuttall", "blackharr": "blackmanharris",
            "bkh": "blackmanharris", "flat": "flattop", "flt": "flattop",
            "bart": "bartlett", "brt": "bartlett", "parz": "parzen", "par": "parzen",
            "bman": "bohman", "bmn": "bohman", "brthan": "barthann", "bth": "barthann",
            "tuk": "tukey", "poisson": "exponential", "ksr": "kaiser", "gauss": "gaussian",
            "gss": "gaussian", "general gaussian": "general_gaussian",
            "general_gauss": "general_gaussian", "general gauss": "general_gaussian",
            "ggs": "general_gaussian", "halfcosine": "cosine"}
_NEEDS_PARAMETERS = ("kaiser", "gaussian", "general_gaussian", "general_cosine",
                     "general_hamming")


def _get_window(window, n: int, dtype):
  """A periodic window of n points, as scipy.signal.get_window makes it: by name, by
  `(name, *parameters)`, or the window's values themselves."""
  jnp = _jnp()
  if not isinstance(window, (str, tuple)):
    w = jnp.asarray(window, dtype)
    if w.shape != (n,):
      raise ValueError(f"window must have length nperseg={n}, got shape {w.shape}")
    return w
  name, params = (window, ()) if isinstance(window, str) else (window[0], window[1:])
  name = _ALIASES.get(name, name)
  if name not in _WINDOWS:
    raise ValueError(f"Unknown window type: {window!r} (minijax knows {sorted(_WINDOWS)})")
  if name in _NEEDS_PARAMETERS and not params:
    raise ValueError(f"The '{name}' window needs one or more parameters -- pass a tuple.")
  values = np.ones(n) if n == 1 else _WINDOWS[name](n + 1, *params)[:n]
  return jnp.asarray(values, dtype)


def _segments(x, nperseg: int, step: int):
  """x's last axis cut into overlapping segments: shape (..., count, nperseg)."""
  jnp = _jnp()
  count = (x.shape[-1] - nperseg) // step + 1
  index = np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]
  return jnp.take(x, index, axis=-1)


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode):
  """The windowed FFTs of x's segments (mode 'stft'), or the averaged cross spectral
  density of x and y ('psd'), with scipy's scalings and one-sided folding."""
  jnp = _jnp()
  x = jnp.moveaxis(jnp.asarray(x), axis, -1)
  dtype = jnp.result_type(x.dtype, float)
  x = x.astype(dtype)
  if y is not None:
    y = jnp.moveaxis(jnp.asarray(y), axis, -1).astype(dtype)
  n = x.shape[-1]
  nperseg = min(int(nperseg if nperseg is not None else 256), n)
  noverlap = nperseg // 2 if noverlap is None else int(noverlap)
  nfft = nperseg if nfft is None else int(nfft)
  if noverlap >= nperseg or nfft < nperseg:
    raise ValueError(f"need noverlap < nperseg <= nfft, got noverlap={noverlap}, "
                     f"nperseg={nperseg}, nfft={nfft}")
  real_dtype = jnp.finfo(dtype).dtype
  win = _get_window(window, nperseg, real_dtype)
  onesided = return_onesided and not jnp.iscomplexobj(x) and (
      y is None or not jnp.iscomplexobj(y))

  def transform(v):
    pieces = _segments(v, nperseg, nperseg - noverlap)
    if detrend_type:
      pieces = detrend(pieces, axis=-1, type=detrend_type)
    pieces = pieces * win
    return jnp.fft.rfft(pieces, nfft) if onesided else jnp.fft.fft(pieces, nfft)

  freqs = (jnp.fft.rfftfreq(nfft, 1 / fs) if onesided else jnp.fft.fftfreq(nfft, 1 / fs))
  if mode == "stft":
    return freqs, transform(x) / jnp.sum(win)
  scale = 1 / (fs * jnp.sum(win * win)) if scaling == "density" else 1 / jnp.sum(win) ** 2
  fx = transform(x)
  spectrum = jnp.conj(fx) * (fx if y is None else transform(y)) * scale
  if onesided:
    last = -1 if nfft % 2 == 0 else None  # (the Nyquist bin stands alone)
    spectrum = spectrum.at[..., 1:last].multiply(2)
  return freqs, spectrum


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1,
        average="mean"):
  """`(f, Pxy)`: Welch's estimate of the cross power spectral density of x and y."""
  jnp = _jnp()
  if scaling not in ("density", "spectrum"):
    raise ValueError(f"Unknown scaling: {scaling}")
  if average not in ("mean", "median"):
    raise ValueError(f"average must be 'mean' or 'median', got {average!r}")
  freqs, spectrum = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
  if average == "mean" or spectrum.shape[-2] == 1:
    averaged = jnp.mean(spectrum, axis=-2)
  else:  # the median of the real and imaginary parts, corrected for its bias (as scipy)
    count = spectrum.shape[-2]
    evens = 2 * np.arange(1, (count - 1) // 2 + 1)
    bias = 1 + np.sum(1.0 / (evens + 1) - 1.0 / evens)
    averaged = jnp.median(jnp.real(spectrum), axis=-2)
    if jnp.iscomplexobj(spectrum):
      averaged = averaged + 1j * jnp.median(jnp.imag(spectrum), axis=-2)
    averaged = averaged / bias
  return freqs, jnp.moveaxis(averaged, -1, axis)


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
  """`(f, Pxx)`: Welch's estimate of the power spectral density of x."""
  jnp = _jnp()
  freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                   scaling, axis, average)
  return freqs, jnp.real(pxx)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
  """`(f, t, Zxx)`: the short-time Fourier transform of x (segments' windowed FFTs,
  divided by the window's sum, as scipy scales them)."""
  jnp = _jnp()
  if boundary not in (None, "zeros"):
    raise NotImplementedError(f"stft: boundary={boundary!r} is not implemented; use "
                              "'zeros' or None")
  x = jnp.asarray(x)
  axis = axis % x.ndim
  x = jnp.moveaxis(x, axis, -1)
  nperseg = min(int(nperseg), x.shape[-1])  # (scipy's, for an input shorter than nperseg)
  noverlap = nperseg // 2 if noverlap is None else int(noverlap)
  step = nperseg - noverlap
  if boundary == "zeros":
    x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(nperseg // 2, nperseg // 2)])
  if padded:
    extra = (-(x.shape[-1] - nperseg) % step) % nperseg
    x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)])
  freqs, z = _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend or False,
                       return_onesided, "spectrum", -1, "stft")
  times = jnp.arange(z.shape[-2]) * step / fs
  if not boundary:
    times = times + nperseg / 2 / fs
  # scipy's layout: the frequencies where the transformed axis was, the segments last
  return freqs, times, jnp.moveaxis(jnp.swapaxes(z, -1, -2), -2, axis)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
  """`(t, x)`: the signal whose `stft` is `Zxx`, by overlap-adding the inverse transforms
  of its segments, windowed, and dividing by the overlapped squared window."""
  jnp = _jnp()
  z = jnp.moveaxis(jnp.asarray(Zxx), (freq_axis, time_axis), (-2, -1))
  freqs, count = z.shape[-2], z.shape[-1]
  if nperseg is None:
    nperseg = 2 * (freqs - 1) if input_onesided else freqs
  nperseg = int(nperseg)
  nfft = nperseg if nfft is None else int(nfft)
  noverlap = nperseg // 2 if noverlap is None else int(noverlap)
  step = nperseg - noverlap
  real_dtype = jnp.finfo(jnp.result_type(z.dtype, float)).dtype
  win = _get_window(window, nperseg, real_dtype)
  segments = jnp.swapaxes(z, -1, -2)  # (..., count, freqs)
  if input_onesided:
    pieces = jnp.fft.irfft(segments, nfft)[..., :nperseg]
  else:
    pieces = jnp.fft.ifft(segments, nfft)[..., :nperseg]
  pieces = pieces * jnp.sum(win) * win
  length = nperseg + (count - 1) * step
  index = (np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]).ravel()
  x = jnp.zeros(pieces.shape[:-2] + (length,), pieces.dtype).at[..., index].add(
      pieces.reshape(pieces.shape[:-2] + (-1,)))
  norm = jnp.zeros((length,), real_dtype).at[index].add(jnp.tile(win * win, count))
  x = x / jnp.where(norm > 1e-10, norm, 1.0)
  if boundary:
    x = x[..., nperseg // 2:length - nperseg // 2]
  # (the times count x's first axis, as scipy and JAX count them: the signal's for 1-d x)
  return jnp.arange(x.shape[0]) / fs, x
