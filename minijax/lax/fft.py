"""The fast Fourier transform: `fft_p`, lowered to XLA's FFT (`mhlo.fft`).

`fft(x, fft_type, fft_lengths)` transforms the trailing `len(fft_lengths)` (1 to 3) axes of
`x`.  The four types are those of XLA: `FFT` and `IFFT` map complex to complex (`IFFT`
divides by the product of the lengths), `RFFT` maps real to the non-negative frequencies
(the last axis shrinks to `n // 2 + 1`) and `IRFFT` maps those back to a real array whose
trailing axes are `fft_lengths`.

Every type is linear over the reals, so the jvp applies the transform to the tangent.  The
transposes follow JAX's convention for complex cotangents (no conjugation: the pairing is
`Re(sum(c * t))`):
- the DFT matrix is symmetric, so `FFT` and `IFFT` transpose to themselves;
- `RFFT` is "FFT of a real input, truncated": its transpose pads the cotangent back to the
  full last length with zeros, applies `FFT` and keeps the real part;
- `IRFFT` reads each non-negative frequency `k` once for the mean and the Nyquist frequency
  and twice (with its mirror image) for the others, so its transpose is the conjugate of the
  `RFFT` of the cotangent, weighted by those counts and divided by the product of the lengths.
Batching moves the batch axis to the front, out of the transformed trailing axes.
"""
from __future__ import annotations

import enum
import math
from typing import Sequence

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lowering import mlir

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
  """Which transform `lax.fft` computes."""
  FFT = 0
  IFFT = 1
  RFFT = 2
  IRFFT = 3


def _fft_type(value) -> FftType:
  if isinstance(value, FftType):
    return value
  if isinstance(value, str):
    try:
      return FftType[value.upper()]
    except KeyError:
      pass
    raise ValueError(f"Unknown FFT type '{value}'")
  raise TypeError(f"Unknown FFT type value '{value}'")


def _real_dtype(dtype) -> np.dtype:
  return dtypes.float64 if np.dtype(dtype) == dtypes.complex128 else dtypes.float32


fft_p = Primitive("fft")


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
  k = len(fft_lengths)
  if not 1 <= k <= 3:
    raise ValueError(f"fft transforms 1 to 3 trailing axes, got fft_lengths={fft_lengths}")
  if k > x.ndim:
    raise ValueError(f"FFT input shape {x.shape} must have at least as many input dimensions "
                     f"as fft_lengths {fft_lengths}.")
  is_complex = np.issubdtype(x.dtype, np.complexfloating)
  if fft_type == FftType.RFFT:
    if x.dtype not in (dtypes.float32, dtypes.float64):
      raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
    if x.shape[-k:] != fft_lengths:
      raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                       f"fft_lengths {fft_lengths}")
    return ShapedArray(x.shape[:-k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,),
                       dtypes.to_complex_dtype(x.dtype), False)
  name = fft_type.name
  if not is_complex:
    raise ValueError(f"{name} input must be complex64 or complex128, got {x.dtype}")
  if fft_type == FftType.IRFFT:
    if x.shape[-k:-1] != fft_lengths[:-1]:
      raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to all "
                       f"except the last fft_length, got fft_lengths={fft_lengths}")
    if x.shape[-1] != fft_lengths[-1] // 2 + 1:
      raise ValueError(f"IRFFT input shape {x.shape} must have fft_lengths[-1] // 2 + 1 = "
                       f"{fft_lengths[-1] // 2 + 1} as its last dimension, got "
                       f"fft_lengths={fft_lengths}")
    return ShapedArray(x.shape[:-k] + fft_lengths, _real_dtype(x.dtype), False)
  if x.shape[-k:] != fft_lengths:
    raise ValueError(f"{name} input shape {x.shape} minor dimensions must be equal to "
                     f"fft_lengths {fft_lengths}")
  return ShapedArray(x.shape, x.dtype, False)


fft_p.def_abstract_eval(_fft_abstract_eval)


def _fft_lowering(ctx, x, *, fft_type, fft_lengths):
  return mhlo.FftOp(x, mhlo.FftTypeAttr.get(fft_type.name), list(fft_lengths),
                    results=[mlir.aval_to_ir_type(ctx.avals_out[0])]).result


mlir.register_lowering(fft_p, _fft_lowering)


def _fft_jvp(primals, tangents, *, fft_type, fft_lengths):
  (x,), (t,) = primals, tangents
  out = fft_p.bind(x, fft_lengths=fft_lengths, fft_type=fft_type)
  if type(t) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, fft_p.bind(t, fft_lengths=fft_lengths, fft_type=fft_type)


def _rfft_transpose(ct, fft_lengths):
  from minijax.lax.complex_ops import real
  from minijax.lax.structural import pad
  from minijax.lax.misc import convert_element_type
  aval = get_aval(ct)
  missing = fft_lengths[-1] - aval.shape[-1]
  config = [(0, 0, 0)] * (aval.ndim - 1) + [(0, missing, 0)]
  full = pad(ct, convert_element_type(0, aval.dtype), config)
  return real(fft_p.bind(full, fft_lengths=fft_lengths, fft_type=FftType.FFT))


def _irfft_transpose(ct, fft_lengths):
  from minijax.lax.complex_ops import conj
  from minijax.lax.elementwise import mul
  spectrum = fft_p.bind(ct, fft_lengths=fft_lengths, fft_type=FftType.RFFT)
  aval = get_aval(spectrum)
  n, m = fft_lengths[-1], aval.shape[-1]
  counts = np.full(m, 2.0)
  counts[0] = 1.0
  if n % 2 == 0:
    counts[-1] = 1.0
  weights = np.broadcast_to(counts / math.prod(fft_lengths), aval.shape)
  return mul(conj(spectrum), np.asarray(weights, aval.dtype))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  return [fft_p.bind(ct, fft_lengths=fft_lengths, fft_type=fft_type)]


ad.primitive_jvps[fft_p] = _fft_jvp
ad.primitive_transposes[fft_p] = _fft_transpose


def _fft_batch(args, dims, *, fft_type, fft_lengths):
  (x,), (d,) = args, dims
  x = batching.moveaxis(x, d, 0)
  return fft_p.bind(x, fft_lengths=fft_lengths, fft_type=fft_type), 0


batching.primitive_batchers[fft_p] = _fft_batch


def fft(x, fft_type: FftType | str, fft_lengths: Sequence[int]):
  """XLA's FFT of the trailing `len(fft_lengths)` axes of `x` (see the module docstring).
  Real input to `FFT`/`IFFT`/`IRFFT` is converted to complex, integer input to `RFFT` to
  float; complex input to `RFFT` raises."""
  from minijax.lax.misc import convert_element_type
  from minijax.lax.structural import convert_to_array
  typ = _fft_type(fft_type)
  x = convert_to_array(x)
  dtype = get_aval(x).dtype
  if typ == FftType.RFFT:
    if np.issubdtype(dtype, np.complexfloating):
      raise ValueError("only real valued inputs supported for rfft")
    if not dtypes.is_inexact(dtype):
      x = convert_element_type(x, dtypes.canonicalize_dtype(dtypes.float64))
  elif not np.issubdtype(dtype, np.complexfloating):
    x = convert_element_type(x, dtypes.to_complex_dtype(dtype))  # (JAX's: int64 in complex128)
  fft_lengths = tuple(int(n) for n in fft_lengths)
  if not fft_lengths:
    return x
  return fft_p.bind(x, fft_lengths=fft_lengths, fft_type=typ)
