"""`minijax.dlpack`: arrays from other libraries through the DLPack protocol.

`from_dlpack` takes any object with `__dlpack__` (a numpy array, a torch tensor, a minijax
Array) and copies what it holds to a minijax device; minijax Arrays export themselves with
`__dlpack__` (on the host copy) so other libraries take them the same way."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from minijax.numpy.host_io import from_dlpack

SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.complex64, np.complex128,
    np.bool_))


def is_supported_dtype(dtype) -> bool:
  """Whether arrays of `dtype` travel through DLPack."""
  return np.dtype(dtype) in SUPPORTED_DTYPES


__all__ = ["from_dlpack", "is_supported_dtype", "SUPPORTED_DTYPES"]
