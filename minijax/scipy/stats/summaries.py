"""Summaries of samples (`mode`, `rankdata`, `sem`): functions of `minijax.scipy.stats`
itself rather than of one distribution, with scipy's and JAX's signatures.  Only
`nan_policy='propagate'` is supported, as in JAX: a slice holding a NaN summarizes to NaN
(`rankdata`, `sem`)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minijax import numpy as jnp
from minijax.api import vmap
from minijax.numpy import _util


class ModeResult(NamedTuple):
  mode: object
  count: object


def _check_nan_policy(name: str, nan_policy: str) -> None:
  if nan_policy not in ("propagate", "omit", "raise"):
    raise ValueError(f"{name}: nan_policy must be 'propagate', 'omit' or 'raise', got "
                     f"{nan_policy!r}")
  if nan_policy != "propagate":
    raise NotImplementedError(f"{name}: only nan_policy='propagate' is supported (JAX's)")


def _rows(x, axis):
  """`x` with `axis` last and the other axes flattened into rows, and how to undo it."""
  x = jnp.moveaxis(x, axis, -1)
  lead = x.shape[:-1]
  return jnp.reshape(x, (int(np.prod(lead)), x.shape[-1])), lead


def _counts(row):
  """How often each element of a sorted row occurs in it."""
  return jnp.searchsorted(row, row, side="right") - jnp.searchsorted(row, row, side="left")


def mode(a, axis=0, nan_policy="propagate", keepdims=False) -> ModeResult:
  """The most frequent value along `axis` (the smallest of those tied) and its count."""
  _check_nan_policy("mode", nan_policy)
  x = jnp.asarray(a)
  if axis is None:
    x, axis = jnp.ravel(x), 0
  (axis,) = _util.canonicalize_axes(axis, x.ndim)
  if x.shape[axis] == 0:
    raise ValueError("mode of an empty axis is not defined")
  rows, lead = _rows(x, axis)
  rows = jnp.sort(rows, axis=-1)
  counts = vmap(_counts)(rows)
  first = jnp.argmax(counts, axis=-1)[:, None]  # (sorted: the smallest of the most frequent)
  values = jnp.reshape(jnp.take_along_axis(rows, first, axis=-1), lead)
  count = jnp.reshape(jnp.take_along_axis(counts, first, axis=-1), lead).astype(int)
  if keepdims:
    values, count = jnp.expand_dims(values, axis), jnp.expand_dims(count, axis)
  return ModeResult(values, count)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def _rank_row(row, method):
  order = jnp.sort(row)
  left = jnp.searchsorted(order, row, side="left")
  right = jnp.searchsorted(order, row, side="right")
  if method == "min":
    ranks = left + 1
  elif method == "max":
    ranks = right
  elif method == "average":
    ranks = (left + 1 + right) / 2
  elif method == "dense":
    new = jnp.concatenate([jnp.ones(1, bool), order[1:] != order[:-1]])
    ranks = jnp.cumsum(new)[left]
  else:  # ordinal: ties ranked in the order they come
    ranks = jnp.argsort(jnp.argsort(row, stable=True), stable=True) + 1
  ranks = jnp.asarray(ranks, dtype=_util.dtype(jnp.zeros(0) + 0.0))
  if jnp.issubdtype(row.dtype, jnp.inexact):
    ranks = jnp.where(jnp.any(jnp.isnan(row)), np.nan, ranks)
  return ranks


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
  """The ranks (from 1) of the values of `a`, flattened or along `axis`, ties ranked by
  `method`: 'average', 'min', 'max', 'dense' or 'ordinal' (as floats, as JAX's)."""
  _check_nan_policy("rankdata", nan_policy)
  if method not in _RANK_METHODS:
    raise ValueError(f"unknown method '{method}'; rankdata's methods are {_RANK_METHODS}")
  x = jnp.asarray(a)
  if axis is None:
    return _rank_row(jnp.ravel(x), method)
  (axis,) = _util.canonicalize_axes(axis, x.ndim)
  rows, lead = _rows(x, axis)
  ranks = vmap(lambda r: _rank_row(r, method))(rows)
  return jnp.moveaxis(jnp.reshape(ranks, (*lead, x.shape[axis])), -1, axis)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
  """The standard error of the mean along `axis`: std(ddof) / sqrt(n)."""
  _check_nan_policy("sem", nan_policy)
  x = jnp.asarray(a)
  if axis is None:
    x, axis = jnp.ravel(x), 0
  n = x.shape[axis]
  return jnp.std(x, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(n)
