"""`minijax.dtypes`: JAX's public dtype helpers.

`float0` is the dtype of the tangent of an integer or boolean value; `bfloat16` is
ml_dtypes' scalar type; `result_type` follows JAX's promotion lattice, in which Python
scalars are weakly typed (`result_type(1.0, return_weak_type_flag=True)` is
`(float32, True)`).
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from minijax.core import dtypes as _dtypes
from minijax.core.dtypes import TypePromotionError

bfloat16 = ml_dtypes.bfloat16
float0 = _dtypes.float0
extended = _dtypes.extended
prng_key = _dtypes.prng_key
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo", "float0",
           "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type", "scalar_type_of"]


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> np.dtype:
  """The dtype minijax uses for `dtype`: 64-bit types become 32-bit unless x64 is on."""
  return _dtypes.canonicalize_dtype(dtype)


issubdtype = _dtypes.issubdtype


def result_type(*args: Any, return_weak_type_flag: bool = False):
  """The dtype of combining `args` (values or dtypes) under JAX's promotion rules."""
  typed = []
  for a in args:
    if isinstance(a, (type, np.dtype, str)) and not isinstance(a, _dtypes.PYTHON_SCALARS):
      typed.append((np.dtype(a), False))
    else:
      typed.append(_dtypes.dtype_and_weak_type(a))
  dtype, weak = _dtypes.result_type(*typed)
  dtype = _dtypes.canonicalize_dtype(dtype)
  return (dtype, weak) if return_weak_type_flag else dtype


def scalar_type_of(x: Any) -> type:
  """The Python scalar type (bool, int, float or complex) of `x`'s dtype."""
  dtype = np.dtype(_dtypes.dtype_and_weak_type(x)[0])
  if dtype == np.bool_:
    return bool
  if np.issubdtype(dtype, np.integer):
    return int
  if np.issubdtype(dtype, np.complexfloating):
    return complex
  if issubdtype(dtype, np.floating):
    return float
  raise TypeError(f"Invalid scalar value {x!r:.60}")


def itemsize_bits(dtype: Any) -> int:
  """The size of one element of `dtype`, in bits."""
  dtype = np.dtype(dtype)
  if dtype == float0:
    return 0
  if dtype in _dtypes.FLOAT6:
    return 6
  return _dtypes.SUBBYTE_BITS.get(dtype, dtype.itemsize * 8)
