"""`AbstractMesh`, `AxisType` and `get_abstract_mesh`: a mesh's axis names and sizes
without its devices, as JAX names them (flax asks for the abstract mesh in force).

`get_abstract_mesh()` describes the mesh of the innermost `with mesh:`, or is an empty
`AbstractMesh` (`.empty` is True) when there is none.  `AbstractMesh` itself lives in
`minijax.core.sharding`, as array types (`ShapedArray.sharding`) name the empty one."""
from __future__ import annotations

from minijax.core.sharding import AbstractMesh, AxisType, current_mesh  # noqa: F401


def get_abstract_mesh() -> AbstractMesh:
  mesh = current_mesh()
  if mesh is None:
    return AbstractMesh((), ())
  return AbstractMesh(tuple(mesh.devices.shape), mesh.axis_names)
