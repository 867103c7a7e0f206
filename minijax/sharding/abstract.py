"""`AbstractMesh`, `AxisType` and `get_abstract_mesh`: a mesh's axis names and sizes
without its devices, as JAX names them (flax asks for the abstract mesh in force).

`get_abstract_mesh()` describes the mesh of the innermost `with mesh:`, or is an empty
`AbstractMesh` (`.empty` is True) when there is none."""
from __future__ import annotations

import math

from minijax.core.sharding import AxisType, current_mesh


class AbstractMesh:
  """Axis sizes and names of a mesh, without devices."""

  def __init__(self, axis_sizes: tuple[int, ...], axis_names: tuple[str, ...],
               axis_types: tuple[AxisType, ...] | None = None):
    if len(axis_sizes) != len(axis_names):
      raise ValueError(f"AbstractMesh: {len(axis_sizes)} axis sizes for {len(axis_names)} "
                       "axis names; give one size per name")
    self.axis_sizes = tuple(axis_sizes)
    self.axis_names = tuple(axis_names)
    self.axis_types = tuple(axis_types) if axis_types else (AxisType.Auto,) * len(axis_names)

  shape = property(lambda self: dict(zip(self.axis_names, self.axis_sizes)))
  size = property(lambda self: math.prod(self.axis_sizes))
  empty = property(lambda self: not self.axis_names)

  def __eq__(self, other):
    return (isinstance(other, AbstractMesh) and (self.axis_sizes, self.axis_names)
            == (other.axis_sizes, other.axis_names))

  def __hash__(self):
    return hash((self.axis_sizes, self.axis_names))

  def __repr__(self):
    return f"AbstractMesh({self.shape})"


def get_abstract_mesh() -> AbstractMesh:
  mesh = current_mesh()
  if mesh is None:
    return AbstractMesh((), ())
  return AbstractMesh(tuple(mesh.devices.shape), mesh.axis_names)
