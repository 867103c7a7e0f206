"""Set operations on 1-d arrays and the array API's `unique_*`, as JAX has them.

Their results' sizes depend on values, so they take concrete arrays, or `size=` (with
`fill_value`) for a result of fixed length, cut or filled out (by default with the
smallest element, as `unique` fills); all go through `unique`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy import _util
from minijax.numpy.indexing import unique


def _fixed(values: np.ndarray, size, fill_value):
  """`values` cut or filled out to `size` (the first value by default, else 0)."""
  if size is None:
    return lax.convert_to_array(values)
  size = int(size)
  if fill_value is None:
    fill_value = values[0] if values.size else 0
  out = np.full(size, fill_value, values.dtype)
  out[:min(size, values.size)] = values[:size]
  return lax.convert_to_array(out)


def _operands(name, ar1, ar2):
  a, b = _util.promote(name, ar1, ar2)
  return (np.ravel(_util.concrete_or_error(name, a)), np.ravel(_util.concrete_or_error(name, b)))


def union1d(ar1, ar2, *, size=None, fill_value=None):
  a, b = _operands("union1d", ar1, ar2)
  return _fixed(np.union1d(a, b), size, fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  a, b = _operands("setdiff1d", ar1, ar2)
  return _fixed(np.setdiff1d(a, b, assume_unique), size, fill_value)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  a, b = _operands("setxor1d", ar1, ar2)
  return _fixed(np.setxor1d(a, b, assume_unique), size, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  a, b = _operands("intersect1d", ar1, ar2)
  out = np.intersect1d(a, b, assume_unique, return_indices)
  if not return_indices:
    return _fixed(out, size, fill_value)
  values, i1, i2 = out
  int_dtype = dtypes.default_int_dtype()
  return (_fixed(values, size, fill_value), _fixed(i1.astype(int_dtype), size, 0),
          _fixed(i2.astype(int_dtype), size, 0))


class _UniqueAllResult(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


class _UniqueCountsResult(NamedTuple):
  values: object
  counts: object


class _UniqueInverseResult(NamedTuple):
  values: object
  inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
  return _UniqueAllResult(*unique(x, return_index=True, return_inverse=True, return_counts=True,
                                  equal_nan=False, size=size, fill_value=fill_value))


def unique_counts(x, /, *, size=None, fill_value=None):
  return _UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size,
                                     fill_value=fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
  return _UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size,
                                      fill_value=fill_value))


def unique_values(x, /, *, size=None, fill_value=None):
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)
