"""`minijax.experimental.mesh_utils`: arrays of devices shaped for a `Mesh`.

The CPU and the lent TPU's devices carry no physical topology that minijax reads, so a
device mesh is the devices in id order, reshaped; a hybrid mesh (`dcn_mesh_shape` across
slices, processes with `process_is_granule`) multiplies each axis of the per-granule mesh
by the number of granules along it."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from minijax.runtime import backend


def _devices(devices):
  return list(backend.devices() if devices is None else devices)


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
  """`devices` (all of them by default) as an array of shape `mesh_shape`."""
  devices = _devices(devices)
  if math.prod(mesh_shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape "
                     f"{tuple(mesh_shape)}")
  return np.array(devices, dtype=object).reshape(tuple(mesh_shape))


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
  """A mesh of granules (slices, or processes with `process_is_granule`) laid out by
  `dcn_mesh_shape`, each granule's devices by `mesh_shape`: axis i has
  `mesh_shape[i] * dcn_mesh_shape[i]` devices."""
  if len(mesh_shape) != len(dcn_mesh_shape):
    raise ValueError(f"mesh_shape {tuple(mesh_shape)} and dcn_mesh_shape "
                     f"{tuple(dcn_mesh_shape)} must have the same length")
  devices = _devices(devices)
  if not process_is_granule:
    raise ValueError(f"Device {devices[0]} does not have attribute slice_index. See "
                     "`process_is_granule` option.")
  granules: dict[int, list] = {}
  for d in devices:
    granules.setdefault(d.process_index, []).append(d)
  keys = sorted(granules) if should_sort_granules_by_key else list(granules)
  if len(keys) != math.prod(dcn_mesh_shape):
    raise ValueError(f"Number of granules {len(keys)} must equal the product of "
                     f"dcn_mesh_shape {tuple(dcn_mesh_shape)}")
  blocks = np.empty(len(keys), dtype=object)
  for i, k in enumerate(keys):
    blocks[i] = create_device_mesh(mesh_shape, granules[k])
  return np.block(blocks.reshape(tuple(dcn_mesh_shape)).tolist())


__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]
