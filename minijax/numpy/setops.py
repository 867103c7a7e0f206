"""Set operations on 1-d arrays, `unique` and the array API's `unique_*`, as JAX has them.

Their results' sizes depend on values.  Without `size=` they read their concrete operands
on the host (numpy's functions; nothing is differentiated through them, as in JAX).  With
`size=` the result has that length, cut or filled out with `fill_value`, and is computed
with traced operations, so it works under `jit`, `vmap` and `grad` (derivatives reach the
first occurrence of each value): a stable sort groups equal elements, the first of each
group is kept, and `_compact` gathers the kept ones to the front.  By default `unique`,
`union1d`, `intersect1d` and `setxor1d` fill with their smallest result, `setdiff1d`
with 0 (0 too for an empty result), as JAX does.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy import _util


def _jnp():
  import minijax.numpy as jnp
  return jnp


_host = _util.concrete_or_error


# ----------------------------------------------------------------------------- traced

def _compact(values, mask, size: int, fill):
  """The entries of `values` (along axis 0) where `mask` holds, in order, cut or filled out
  to `size` with `fill` (None: the first kept entry, or 0 when none is)."""
  jnp = _jnp()
  count = jnp.sum(mask)
  (where,) = jnp.nonzero(mask, size=size, fill_value=0)
  kept = values[where]
  if fill is None:
    fill = jnp.where(count > 0, kept[0], jnp.zeros_like(kept[0])) if size else 0
  valid = jnp.arange(size) < count
  return jnp.where(valid.reshape((size,) + (1,) * (kept.ndim - 1)), kept,
                   jnp.asarray(fill, kept.dtype))


def _groups(rows, equal_nan: bool):
  """The permutation that sorts `rows` (n, m) stably and lexicographically, and the mask
  (in sorted order) of the first row of each group of equal rows."""
  jnp = _jnp()
  n = rows.shape[0]
  columns = [rows[:, k] for k in range(rows.shape[1])]
  *_, perm = lax.sort([*columns, lax.iota(np.int32, n)], num_keys=len(columns), is_stable=True)
  ordered = rows[perm]
  differ = ordered[1:] != ordered[:-1]
  if equal_nan and dtypes.is_inexact(ordered.dtype):
    differ = differ & ~(jnp.isnan(ordered[1:]) & jnp.isnan(ordered[:-1]))
  mask = jnp.concatenate([jnp.ones(min(n, 1), bool), jnp.any(differ, axis=1)])
  return perm, mask


def _unique_sized(ar, size, fill_value, return_index, return_inverse, return_counts, axis,
                  equal_nan):
  jnp = _jnp()
  x = _util.asarray(ar)
  size = operator.index(size)
  shape, flattened = _util.shape(x), axis is None
  if flattened:
    x, axis = jnp.ravel(x), 0
  (axis,) = _util.canonicalize_axes(axis, _util.ndim(x))
  x = jnp.moveaxis(x, axis, 0)
  n = x.shape[0]
  if n == 0 and size and fill_value is None:
    raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                     "fill_value must be specified")
  int_dtype = dtypes.default_int_dtype()
  perm, mask = _groups(x.reshape(n, -1), equal_nan)
  values = _compact(x[perm], mask, size, fill_value)
  outs = [jnp.moveaxis(values, 0, axis)]
  if return_index:  # (padded with the first unique's index)
    outs.append(_compact(perm, mask, size, perm[0] if n else 0).astype(int_dtype))
  if return_inverse:
    group = (jnp.cumsum(mask) - 1).astype(int_dtype)
    inverse = jnp.zeros(n, int_dtype).at[perm].set(group)
    outs.append(inverse.reshape(shape) if flattened else inverse)
  if return_counts:
    (starts,) = jnp.nonzero(mask, size=size + 1, fill_value=n)
    outs.append((starts[1:] - starts[:-1]).astype(int_dtype))
  return outs[0] if len(outs) == 1 else tuple(outs)


def _unique_1d(x):
  """(sorted uniques of 1-d `x` padded to its length, which are valid, first indices)."""
  jnp = _jnp()
  n = x.shape[0]
  perm, mask = _groups(x.reshape(n, 1), True)
  values = _compact(x[perm], mask, n, None) if n else x
  index = _compact(perm, mask, n, 0) if n else perm
  return values, jnp.arange(n) < jnp.sum(mask), index


def _among(values, valid, others, others_valid):
  """Whether each of `values` equals one of the valid `others` (and its position there)."""
  jnp = _jnp()
  equal = (values[:, None] == others[None, :]) & others_valid[None, :] & valid[:, None]
  return jnp.any(equal, axis=1), jnp.argmax(equal, axis=1)


# ----------------------------------------------------------------------------- the API

def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, size=None, fill_value=None, sorted=True):
  """The sorted unique elements of `ar` (rows, with `axis`), as numpy's `unique`: of a
  concrete array, or traced with `size` (see the module docstring); indices and counts are
  the default integer type, padded with the first unique's index and with 0."""
  if not sorted:
    raise NotImplementedError("unique(sorted=False): minijax returns sorted uniques only "
                              "(as JAX 0.10.2 does); drop the argument")
  if size is not None:
    return _unique_sized(ar, size, fill_value, return_index, return_inverse, return_counts,
                         axis, equal_nan)
  value = _host("unique", ar)
  outs = np.unique(value, return_index=return_index, return_inverse=return_inverse,
                   return_counts=return_counts, axis=axis, equal_nan=equal_nan)
  outs = list(outs) if isinstance(outs, tuple) else [outs]
  int_dtype = dtypes.default_int_dtype()
  result = [lax.convert_to_array(outs[0])]
  result += [lax.convert_to_array(o.astype(int_dtype)) for o in outs[1:]]
  return result[0] if len(result) == 1 else tuple(result)


def _operands(name, ar1, ar2):
  jnp = _jnp()
  a, b = _util.promote(name, ar1, ar2)
  return jnp.ravel(a), jnp.ravel(b)


def union1d(ar1, ar2, *, size=None, fill_value=None):
  jnp = _jnp()
  a, b = _operands("union1d", ar1, ar2)
  if size is not None:
    return unique(jnp.concatenate([a, b]), size=size, fill_value=fill_value)
  return lax.convert_to_array(np.union1d(_host("union1d", a), _host("union1d", b)))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  a, b = _operands("setdiff1d", ar1, ar2)
  if size is None:
    return lax.convert_to_array(np.setdiff1d(_host("setdiff1d", a), _host("setdiff1d", b),
                                             assume_unique))
  jnp = _jnp()
  if assume_unique:  # (kept in their order, as numpy's)
    values, valid = a, jnp.ones(a.shape[0], bool)
  else:
    values, valid, _ = _unique_1d(a)
  found, _ = _among(values, valid, b, jnp.ones(b.shape[0], bool))
  return _compact(values, valid & ~found, operator.index(size),
                  0 if fill_value is None else fill_value)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  a, b = _operands("setxor1d", ar1, ar2)
  if size is None:
    return lax.convert_to_array(np.setxor1d(_host("setxor1d", a), _host("setxor1d", b),
                                            assume_unique))
  jnp = _jnp()
  if assume_unique:
    (u1, v1), (u2, v2) = (a, jnp.ones(a.shape[0], bool)), (b, jnp.ones(b.shape[0], bool))
  else:
    (u1, v1, _), (u2, v2, _) = _unique_1d(a), _unique_1d(b)
  only1 = v1 & ~_among(u1, v1, u2, v2)[0]
  only2 = v2 & ~_among(u2, v2, u1, v1)[0]
  dropped, values = lax.sort([(~jnp.concatenate([only1, only2])).astype(np.int32),
                              jnp.concatenate([u1, u2])], num_keys=2)  # (the kept first)
  return _compact(values, dropped == 0, operator.index(size), fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  a, b = _operands("intersect1d", ar1, ar2)
  int_dtype = dtypes.default_int_dtype()
  if size is None:
    out = np.intersect1d(_host("intersect1d", a), _host("intersect1d", b), assume_unique,
                         return_indices)
    if not return_indices:
      return lax.convert_to_array(out)
    values, i1, i2 = out
    return (lax.convert_to_array(values), lax.convert_to_array(i1.astype(int_dtype)),
            lax.convert_to_array(i2.astype(int_dtype)))
  size = operator.index(size)
  u1, v1, i1 = _unique_1d(a)
  u2, v2, i2 = _unique_1d(b)
  found, at = _among(u1, v1, u2, v2)
  values = _compact(u1, found, size, fill_value)
  if not return_indices:
    return values
  return (values, _compact(i1, found, size, a.shape[0]).astype(int_dtype),
          _compact(i2[at], found, size, b.shape[0]).astype(int_dtype))


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
