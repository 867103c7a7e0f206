"""`minijax.sharding`: meshes, partition specs and shardings, under JAX's names.

    mesh = Mesh(np.array(minijax.devices()).reshape(2, 2), ('x', 'y'))
    x = minijax.device_put(value, NamedSharding(mesh, PartitionSpec('x', None)))

The classes are defined in `minijax.core.sharding`, below everything that uses them (they
are params of primitives and describe where an Array's blocks live); this package is where
users find them.
"""
import math

import numpy as np

from minijax.core.sharding import (AxisType, Mesh, NamedSharding, PartitionSpec, Sharding,
                                   SingleDeviceSharding, current_mesh as get_mesh, set_mesh,
                                   use_mesh)
from minijax.runtime.backend import devices as all_devices
from minijax.runtime.sharded import Shard
from minijax.sharding.abstract import AbstractMesh, get_abstract_mesh

__all__ = ["AbstractMesh", "AxisType", "get_abstract_mesh", "make_mesh", "Mesh", "NamedSharding",
           "PartitionSpec", "Shard", "Sharding",
           "SingleDeviceSharding", "get_mesh", "make_single_device_sharding", "set_mesh", "use_mesh"]


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
  """The sharding that places a whole array on `device`."""
  return SingleDeviceSharding(device, memory_kind=memory_kind)


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
  """A mesh of shape `axis_shapes` over the first `prod(axis_shapes)` devices (all the
  devices by default, in id order), named `axis_names`."""
  devices = list(all_devices() if devices is None else devices)
  size = math.prod(axis_shapes)
  if size > len(devices):
    raise ValueError(f"make_mesh: the mesh shape {tuple(axis_shapes)} needs {size} devices, "
                     f"but {len(devices)} are available")
  return Mesh(np.array(devices[:size], dtype=object).reshape(tuple(axis_shapes)),
              axis_names, axis_types=axis_types)
