"""`minijax.sharding`: meshes, partition specs and shardings, under JAX's names.

    mesh = Mesh(np.array(minijax.devices()).reshape(2, 2), ('x', 'y'))
    x = minijax.device_put(value, NamedSharding(mesh, PartitionSpec('x', None)))

The classes are defined in `minijax.core.sharding`, below everything that uses them (they
are params of primitives and describe where an Array's blocks live); this package is where
users find them.
"""
from minijax.core.sharding import (Mesh, NamedSharding, PartitionSpec, Sharding,
                                   SingleDeviceSharding, current_mesh as get_mesh, set_mesh,
                                   use_mesh)
from minijax.runtime.sharded import Shard

__all__ = ["Mesh", "NamedSharding", "PartitionSpec", "Shard", "Sharding",
           "SingleDeviceSharding", "get_mesh", "set_mesh", "use_mesh"]
