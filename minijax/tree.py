"""`minijax.tree`: JAX's short names for the pytree utilities of `minijax.tree_util`.

    minijax.tree.map(f, tree)        # tree_util.tree_map
    minijax.tree.leaves(tree)        # tree_util.tree_leaves
    minijax.tree.reduce(fn, tree)    # tree_util.tree_reduce
"""
from __future__ import annotations

import dataclasses

from minijax.tree_util import (  # noqa: F401
    tree_all as all,
    tree_broadcast as broadcast,
    tree_flatten as flatten,
    tree_flatten_with_path as flatten_with_path,
    tree_leaves as leaves,
    tree_leaves_with_path as leaves_with_path,
    tree_map as map,
    tree_map_with_path as map_with_path,
    tree_reduce as reduce,
    tree_reduce_associative as reduce_associative,
    tree_structure as structure,
    tree_transpose as transpose,
    tree_unflatten as unflatten,
)



def static(**kwargs):
  """A dataclass field that `register_dataclass` keeps in the tree structure (metadata
  `static=True`), not among the children; the arguments are `dataclasses.field`'s."""
  metadata = {**(kwargs.pop("metadata", None) or {}), "static": True}
  return dataclasses.field(metadata=metadata, **kwargs)


__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]
