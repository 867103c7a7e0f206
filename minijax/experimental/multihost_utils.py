"""`minijax.experimental.multihost_utils`: JAX's helpers for programs that run in several
processes (`minijax.distributed`): gathering host values from every process, broadcasting
one process's, barriers, and converting between the part of an array a process holds and
the global Array.

Host values cross processes through the devices, as in JAX: each process puts its value on
its local devices and a `pmap` over every device of every process `all_gather`s it (the
devices are listed process by process, so every `local_device_count`-th row is one
process's).  With one process every helper is local and compiles nothing.
"""
from __future__ import annotations

import functools
import zlib

import numpy as np

from minijax import lax
from minijax.api import pmap
from minijax.staging.jit import jit
from minijax.core.sharding import NamedSharding, PartitionSpec
from minijax.placement import (make_array_from_process_local_data,
                               make_array_from_single_device_arrays, process_region)
from minijax.runtime import backend
from minijax.runtime.array import Array
from minijax.tree_util import internal as tree_util

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather",
           "reached_preemption_sync_point", "sync_global_devices"]


_gather_step = pmap(lambda x: lax.all_gather(x, "processes"), axis_name="processes")


def _rows_of_processes(value: np.ndarray) -> np.ndarray:
  """`value` of every process, stacked in process order (shape `(processes, *shape)`)."""
  local = backend.local_device_count()
  gathered = _gather_step(np.stack([value] * local))
  return np.asarray(gathered[0])[::local]


@functools.lru_cache
def _replicator(replicated):
  """A jit that gathers a global Array onto every device of its mesh."""
  return jit(lambda v: lax.with_sharding_constraint(v, replicated), out_shardings=replicated)


def _is_global(x) -> bool:
  return isinstance(x, Array) and not x.is_fully_addressable


def _allgather_one(x, tiled: bool) -> np.ndarray:
  if _is_global(x):
    if not tiled:
      raise ValueError("Gathering global non-fully-addressable arrays only supports "
                       "tiled=True")
    replicated = NamedSharding(x.sharding.mesh, PartitionSpec())
    return np.asarray(_replicator(replicated)(x).addressable_data(0))
  value = np.asarray(x)
  if backend.process_count() == 1:
    return value if tiled else value[None]
  rows = _rows_of_processes(value)
  return np.concatenate(list(rows)) if tiled and value.ndim else rows


def process_allgather(in_tree, tiled: bool = False):
  """The leaves of `in_tree` from every process, as numpy arrays: stacked along a new
  first axis (`tiled=False`) or concatenated along the first (`tiled=True`; scalars are
  stacked).  A global Array (not fully addressable) is gathered whole, with `tiled=True`."""
  return tree_util.tree_map(lambda x: _allgather_one(x, tiled), in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
  """The leaves of `in_tree` on the source process (process 0 unless `is_source` says),
  on every process, as numpy arrays; every process passes leaves of the same shapes."""
  if backend.process_count() == 1:
    return tree_util.tree_map(np.asarray, in_tree)
  if is_source is None:
    is_source = backend.process_index() == 0
  sources = _rows_of_processes(np.asarray(bool(is_source)))

  def from_sources(x):
    rows = _rows_of_processes(np.asarray(x))
    picked = rows[sources]
    if len(picked) == 1:
      return picked[0]
    return np.sum(picked, axis=0).astype(rows.dtype)  # (as JAX's psum of the sources)
  return tree_util.tree_map(from_sources, in_tree)


def assert_equal(in_tree, fail_message: str = "") -> None:
  """Raises AssertionError unless every process passed the same leaves."""
  gathered = process_allgather(in_tree, tiled=True)

  def same_everywhere(x, everyone):
    if _is_global(x):
      return True  # (one value by construction)
    x = np.asarray(x)
    mine = np.concatenate([x[None] if x.ndim == 0 else x] * backend.process_count())
    return bool(np.all(np.equal(mine, everyone)))
  if not all(tree_util.tree_leaves(tree_util.tree_map(same_everywhere, in_tree, gathered))):
    raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


def sync_global_devices(name: str) -> None:
  """A barrier: returns once every process has called it with the same `name`."""
  digest = np.uint32(zlib.crc32(name.encode()))
  assert_equal(digest, f"sync_global_devices name mismatch ('{name}')")


def reached_preemption_sync_point(step_id: int) -> bool:
  """False: minijax runs no preemption service (JAX's answer without one)."""
  del step_id
  return False


def _specs_for(tree, pspecs):
  from minijax.api_util import prefix_pairs
  pairs = prefix_pairs(pspecs, tree, is_leaf=lambda s: s is None or isinstance(s, PartitionSpec),
                       name="pspecs", mismatch=ValueError)
  out = []
  for spec, subtree in pairs:
    out += [(leaf, PartitionSpec() if spec is None else spec)
            for leaf in tree_util.tree_leaves(subtree)]
  return out


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
  """The global Arrays laid out by `NamedSharding(global_mesh, spec)` whose part on this
  process's devices is each leaf of `local_inputs` (`pspecs`: a tree prefix of specs)."""
  leaves, treedef = tree_util.tree_flatten(local_inputs)
  out = [x if _is_global(x) else
         make_array_from_process_local_data(NamedSharding(global_mesh, spec), x)
         for x, spec in _specs_for(local_inputs, pspecs)]
  assert len(out) == len(leaves)
  return tree_util.tree_unflatten(treedef, out)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
  """The part of each global Array of `global_inputs` that this process's devices hold, as
  an Array laid out by `NamedSharding(global_mesh.local_mesh, spec)` over the same
  buffers."""
  leaves, treedef = tree_util.tree_flatten(global_inputs)
  local_mesh = global_mesh.local_mesh
  out = []
  for x, spec in _specs_for(global_inputs, pspecs):
    if not isinstance(x, Array):
      out.append(x)
      continue
    sharding = NamedSharding(local_mesh, spec)
    local_shape = tuple(b - a for a, b in process_region(x.sharding, x.shape))
    out.append(make_array_from_single_device_arrays(
        local_shape, sharding, [s.data for s in x.addressable_shards]))
  assert len(out) == len(leaves)
  return tree_util.tree_unflatten(treedef, out)

