"""`minijax.ops`: JAX's segment reductions, `segment_sum(data, segment_ids, num_segments)`
and its `_prod`, `_max` and `_min`, as scatters into an array of `num_segments` rows.

Row i of the result reduces the rows of `data` whose id is i; a segment no id names holds
the reduction's identity (0, 1, the lowest or the highest value of the dtype).  Ids outside
[0, num_segments) are dropped (`mode='clip'` clamps them into the range instead);
`num_segments` defaults to the largest id plus one, which needs concrete ids (under `jit`,
pass it).  `indices_are_sorted` and `unique_indices` are promises handed to the scatter;
`bucket_size` is accepted for JAX's signature and ignored: it only splits the same sum into
buckets for parallel hardware.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core.errors import ConcretizationTypeError
from minijax.lax.reductions import _identity
from minijax.numpy import _util

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _segment(name: str, method: str, kind: str, data, segment_ids, num_segments,
             indices_are_sorted, unique_indices, mode, out_sharding):
  if out_sharding is not None:
    raise NotImplementedError(f"{name}: out_sharding is not supported in minijax; leave it None")
  data, segment_ids = jnp.asarray(data), jnp.asarray(segment_ids)
  if data.ndim == 0:  # (one value for every id, as JAX broadcasts it)
    data = jnp.broadcast_to(data, segment_ids.shape)
  if not jnp.issubdtype(segment_ids.dtype, jnp.integer):
    raise TypeError(f"{name}: segment_ids must be integers, got {segment_ids.dtype}")
  if segment_ids.ndim != 1 or data.ndim < 1 or segment_ids.shape[0] != data.shape[0]:
    raise ValueError(f"{name}: segment_ids must be one id per row of data (shape "
                     f"({data.shape[0] if data.ndim else 0},)), got {segment_ids.shape}")
  if num_segments is None:
    ids = _util.concrete_value(segment_ids)
    if ids is None:
      raise ConcretizationTypeError(
          segment_ids, f"{name}()", "num_segments defaults to the largest segment id plus "
          "one, a value of the ids: pass num_segments= under jit. ")
    num_segments = int(np.max(ids)) + 1 if ids.size else 0
  num_segments = int(num_segments)
  mode = "drop" if mode is None else mode
  # negative ids are out of range, not counted from the end as numpy indices are
  if str(getattr(mode, "name", mode)).lower() == "clip":
    segment_ids = jnp.clip(segment_ids, 0, max(num_segments - 1, 0))
  elif str(getattr(mode, "name", mode)).lower() != "promise_in_bounds":
    segment_ids = jnp.where(segment_ids < 0, num_segments, segment_ids)
  out = lax.full((num_segments, *data.shape[1:]), _identity(kind, data.dtype), data.dtype)
  return getattr(out.at[segment_ids], method)(
      data, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The sum of the rows of `data` in each segment (0 for an empty one)."""
  return _segment("segment_sum", "add", "sum", data, segment_ids, num_segments,
                  indices_are_sorted, unique_indices, mode, out_sharding)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The product of the rows of `data` in each segment (1 for an empty one)."""
  return _segment("segment_prod", "multiply", "prod", data, segment_ids,
                  num_segments, indices_are_sorted, unique_indices, mode, out_sharding)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The maximum of the rows of `data` in each segment (the dtype's lowest value, -inf for
  floats, for an empty one)."""
  return _segment("segment_max", "max", "max", data, segment_ids, num_segments,
                  indices_are_sorted, unique_indices, mode, out_sharding)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """The minimum of the rows of `data` in each segment (the dtype's highest value, inf for
  floats, for an empty one)."""
  return _segment("segment_min", "min", "min", data, segment_ids, num_segments,
                  indices_are_sorted, unique_indices, mode, out_sharding)
