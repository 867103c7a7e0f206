"""JAX's other names for numpy functions minijax has (the array API's `acos`, `bitwise_*`,
`unstack`, ...), and a few small functions built from them (`bitwise_count`, `fabs`,
`isposinf`, `logaddexp2`, `vecdot`, `trapezoid`)."""
from __future__ import annotations


from minijax import lax
from minijax.core import dtypes
from minijax.numpy import linalg as _linalg
from minijax.numpy import _util
from minijax.numpy.complex_numbers import reject_complex
from minijax.numpy import ufuncs as _ufuncs


def _np():
  from minijax import numpy as jnp
  return jnp


acos, asin, atan = _ufuncs.arccos, _ufuncs.arcsin, _ufuncs.arctan
acosh, asinh, atanh = _ufuncs.arccosh, _ufuncs.arcsinh, _ufuncs.arctanh
atan2 = _ufuncs.arctan2
bitwise_invert = _ufuncs.invert
bitwise_left_shift = _ufuncs.left_shift
bitwise_right_shift = _ufuncs.right_shift
matrix_transpose = _linalg.matrix_transpose


def bitwise_count(x, /):
  """The number of bits set in the absolute value of each element of the integer `x`
  (as numpy's, its result is uint8)."""
  jnp = _np()
  x = jnp.asarray(x)
  reject_complex("bitwise_count", x)
  if x.dtype == jnp.bool_:
    return x.astype(jnp.uint8)
  if jnp.issubdtype(x.dtype, jnp.signedinteger):
    x = jnp.abs(x)
  return lax.population_count(x).astype(jnp.uint8)


def fabs(x, /):
  """The absolute value of the floating point `x` (integers become floats)."""
  jnp = _np()
  x = jnp.asarray(x)
  reject_complex("fabs", x)
  x = x.astype(dtypes.to_inexact_dtype(x.dtype))
  return jnp.abs(x)


def isposinf(x, /, out=None):
  _util.reject_out("isposinf", out)
  jnp = _np()
  reject_complex("isposinf", x, error=ValueError)  # JAX: "not well defined for complex types"
  return jnp.logical_and(jnp.isinf(x), jnp.asarray(x) > 0)


def isneginf(x, /, out=None):
  _util.reject_out("isneginf", out)
  jnp = _np()
  reject_complex("isneginf", x, error=ValueError)
  return jnp.logical_and(jnp.isinf(x), jnp.asarray(x) < 0)


logaddexp2 = _ufuncs.logaddexp2  # `log2(2**x1 + 2**x2)`, computed without overflow


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
  """`sum(conj(x1) * x2)` along `axis`, the other axes broadcast."""
  jnp = _np()
  x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
  if x1.shape[axis] != x2.shape[axis]:
    raise ValueError(f"vecdot: axes of length {x1.shape[axis]} and {x2.shape[axis]} differ")
  x1, x2 = jnp.moveaxis(x1, axis, -1), jnp.moveaxis(x2, axis, -1)
  return jnp.matmul(jnp.conj(x1)[..., None, :], x2[..., :, None], precision=precision,
                    preferred_element_type=preferred_element_type)[..., 0, 0]


def unstack(x, /, *, axis: int = 0) -> tuple:
  """The slices of `x` along `axis`, as a tuple."""
  jnp = _np()
  x = jnp.asarray(x)
  if x.ndim == 0:
    raise ValueError("unstack requires an array of at least one dimension")
  return tuple(jnp.moveaxis(x, axis, 0))


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
  """The integral of `y` along `axis` by the trapezoid rule (points `x`, or spacing `dx`)."""
  jnp = _np()
  if x is None:  # (bools and integers integrate as floats, in the points' dtype too)
    (y,) = _util.promote_inexact("trapezoid", y)
  else:
    y, x = _util.promote_inexact("trapezoid", y, x)
  y = jnp.moveaxis(y, axis, -1)
  if x is None:
    d = dx
  else:
    d = jnp.diff(x) if x.ndim == 1 else jnp.diff(jnp.moveaxis(x, axis, -1), axis=-1)
  return jnp.sum(d * (y[..., 1:] + y[..., :-1]), axis=-1) / 2


__all__ = ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_count",
           "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "fabs", "isneginf",
           "iterable", "isposinf", "logaddexp2", "matrix_transpose", "trapezoid", "unstack",
           "vecdot"]


def iterable(y) -> bool:
  """Whether `y` can be iterated over (numpy's test: `iter(y)` works)."""
  try:
    iter(y)
  except TypeError:
    return False
  return True
