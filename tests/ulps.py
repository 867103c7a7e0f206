"""Comparing float results recorded on one machine with those computed on another.

Bits are pinned only for what every CPU computes exactly (threefry's bits, integers).  A
float that XLA's CPU code generation (vectorized polynomials, FMA contraction chosen per CPU)
or LAPACK (blocking and rounding chosen per CPU) computes may differ in its last bits from
one x86-64 machine to another, so such values are compared within a few units in the last
place (ulps): of each element for elementwise computations, whose errors are relative, or
of the array's largest magnitude for matrix factorizations, whose errors scale with the
matrix."""
from __future__ import annotations

import ml_dtypes
import numpy as np


def _ulp(magnitude: np.ndarray, dtype) -> np.ndarray:
  """The spacing of `dtype`'s floats at each magnitude (that of the smallest normal number
  at zero)."""
  info = ml_dtypes.finfo(dtype)
  m = np.maximum(np.abs(magnitude.astype(np.float64)), float(info.tiny))
  return float(info.eps) * np.exp2(np.floor(np.log2(m)))


def assert_within_ulps(got, want, ulps: int = 4, *, scale: str = "element", what: str = ""):
  """`got` equals `want` (same dtype and shape) within `ulps` units in the last place of each
  element (`scale="element"`) or of the array's largest magnitude (`scale="array"`).
  Integers, bools and non-finite values must be equal."""
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
  assert got.shape == want.shape, (what, got.shape, want.shape)
  if not np.issubdtype(want.dtype, np.inexact) and want.dtype not in (
      np.dtype(ml_dtypes.bfloat16),):
    np.testing.assert_array_equal(got, want, err_msg=what)
    return
  g, w = got.astype(np.float64), want.astype(np.float64)
  finite = np.isfinite(w)
  np.testing.assert_array_equal(g[~finite], w[~finite], err_msg=what)
  magnitude = np.abs(w) if scale == "element" else np.full(w.shape, np.abs(w[finite]).max(
      initial=0.0))
  unit = _ulp(magnitude, want.dtype)
  off = np.abs(g - w)[finite] / unit[finite]
  assert off.size == 0 or off.max() <= ulps, (
      f"{what}: {off.max():.1f} ulps apart (at most {ulps}):\n got {got.ravel()}\n"
      f"want {want.ravel()}")
