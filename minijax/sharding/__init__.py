"""`minijax.sharding`: meshes, partition specs and shardings, under JAX's names.

    mesh = Mesh(np.array(minijax.devices()).reshape(2, 2), ('x', 'y'))
    x = minijax.device_put(value, NamedSharding(mesh, PartitionSpec('x', None)))

The classes are defined in `minijax.core.sharding`, below everything that uses them (they
are params of primitives and describe where an Array's blocks live); this package is where
users find them.
"""
from minijax.core.sharding import (Mesh, NamedSharding, PartitionSpec, Sharding,
                                   SingleDeviceSharding, current_mesh as get_mesh)
from minijax.runtime.sharded import Shard
from minijax.sharding.abstract import AbstractMesh, AxisType, get_abstract_mesh

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "PartitionSpec", "Shard", "Sharding",
           "SingleDeviceSharding", "get_abstract_mesh", "get_mesh"]
