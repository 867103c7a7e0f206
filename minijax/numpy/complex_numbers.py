"""Complex numbers in minijax.numpy: `real`, `imag`, `conjugate`/`conj`, `angle`,
`iscomplex`, `isreal`, `iscomplexobj`, `isrealobj`, and numpy's order of complex values.

`real`, `imag` and `conjugate` take any numeric array, as numpy's do: for a real array
`real` and `conjugate` return it, `imag` returns zeros of its dtype; for a complex one they
bind the lax primitives (`lax.real`, `lax.imag`, `lax.conj`), whose transposes follow JAX's
convention for complex cotangents (see `minijax/lax/complex_ops.py`).  `angle` is
`atan2(imag, real)` in the inexact dtype (float32 for integers, as JAX).

numpy orders complex values lexicographically, real parts first; `lexicographic` builds a
comparison with that order from real-valued lax comparisons, for `less` and friends.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core.avals import get_aval
from minijax.core import dtypes
from minijax.numpy import _util


def is_complex_dtype(dtype) -> bool:
  return np.issubdtype(dtype, np.complexfloating)


def _is_complex(x) -> bool:
  return is_complex_dtype(_util.dtype(x))


def real(val, /):
  """The real part (the array itself when it is real)."""
  (a,) = _util.promote("real", val)
  return lax.real(a) if _is_complex(a) else a


def imag(val, /):
  """The imaginary part (zeros of the array's dtype when it is real)."""
  (a,) = _util.promote("imag", val)
  if _is_complex(a):
    return lax.imag(a)
  return lax.full(_util.shape(a), 0, _util.dtype(a), weak_type=get_aval(a).weak_type)


def conjugate(x, /):
  """The complex conjugate (the array itself when it is real)."""
  (a,) = _util.promote("conjugate", x)
  return lax.conj(a) if _is_complex(a) else a


conj = conjugate


@_util.compiled_when_eager(dynamic=1)
def angle(z, deg=False):
  """The counterclockwise angle from the positive real axis, in radians (or degrees)."""
  (a,) = _util.promote("angle", z)
  re, im = real(a), imag(a)
  dt = _util.dtype(re)
  if not dtypes.is_inexact(dt) or (dtypes.is_float(_util.dtype(a)) and _util.ndim(a) == 0):
    dt = dtypes.default_float_dtype()
  re, im = lax.convert_element_type(re, dt), lax.convert_element_type(im, dt)
  out = lax.atan2(im, re)
  if deg:
    out = lax.mul(out, lax.full((), 180 / np.pi, dt))
  return out


def iscomplex(x, /):
  """Elementwise: whether the imaginary part is nonzero."""
  i = imag(x)
  return lax.ne(i, lax.full((), 0, _util.dtype(i)))


def isreal(x, /):
  """Elementwise: whether the imaginary part is zero."""
  i = imag(x)
  return lax.eq(i, lax.full((), 0, _util.dtype(i)))


def iscomplexobj(x) -> bool:
  """Whether `x` has a complex dtype (whatever its values).  As in JAX, anything with a
  `dtype` is asked for it, scalar types such as `jnp.complex64` included."""
  if x is None:
    return False
  dtype = getattr(x, "dtype", None)
  if isinstance(dtype, np.dtype):
    return is_complex_dtype(dtype)
  if dtypes.is_extended(dtype):  # PRNG keys
    return False
  try:
    return is_complex_dtype(_util.dtype(x))
  except TypeError:
    return is_complex_dtype(np.asarray(x).dtype)


def isrealobj(x) -> bool:
  return not iscomplexobj(x)


def lexicographic(lax_compare):
  """`lax_compare` (lt, le, gt or ge) extended to complex operands of one dtype: real
  parts decide, imaginary parts break ties."""
  def compare(x, y):
    if not _is_complex(x):
      return lax_compare(x, y)
    rx, ry = lax.real(x), lax.real(y)
    return lax.select(lax.eq(rx, ry), lax_compare(lax.imag(x), lax.imag(y)),
                      lax_compare(rx, ry))
  return compare


def reject_complex(name: str, *args, error=TypeError) -> None:
  """Raises `error` naming `name` when any of `args` is complex."""
  for a in args:
    dt = _util.dtype(a)
    if is_complex_dtype(dt):
      raise error(f"{name} does not support complex-valued inputs (got dtype {dt}); "
                  "convert to real values first, e.g. with real(x) or abs(x)")
