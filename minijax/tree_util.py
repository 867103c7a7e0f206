"""Pytrees on jaxlib's C++ registry.

Flattening and unflattening run in C++ (`jaxlib._jax.pytree`), which is what makes
dispatch of `jit` functions cheap.  `None` is an empty subtree, as in JAX.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

from jaxlib._jax import pytree as _pytree

registry = _pytree.default_registry()
PyTreeDef = _pytree.PyTreeDef


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
  return registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves):
  return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf=None) -> list:
  return registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf=None) -> PyTreeDef:
  return registry.flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  return treedef.num_nodes == 1 and treedef.num_leaves == 1


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf=None):
  leaves, treedef = registry.flatten(tree, is_leaf)
  all_leaves = [leaves] + [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


def tree_flatten_with_path(tree: Any, is_leaf=None):
  return registry.flatten_with_path(tree, is_leaf)


def flatten_fun(fun: Callable, in_tree: PyTreeDef) -> tuple[Callable, Callable[[], PyTreeDef]]:
  """`(flat_fun, out_tree)` for tracing `fun` on flat leaves.

  `in_tree` is the tree of `(args, kwargs)`; `flat_fun(*leaves)` unflattens the leaves into
  them, calls `fun(*args, **kwargs)` and returns the leaves of the result, whose tree
  structure `out_tree()` then gives (that of the latest call)."""
  store: list[PyTreeDef] = []

  def flat_fun(*leaves):
    args, kwargs = in_tree.unflatten(leaves)
    out_leaves, tree = registry.flatten(fun(*args, **kwargs))
    store[:] = [tree]
    return out_leaves

  return flat_fun, lambda: store[0]


def treedef_tuple(treedefs) -> PyTreeDef:
  return _pytree.treedef_tuple(registry, list(treedefs))


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
  """`flatten_func(x) -> (children, aux)`, `unflatten_func(aux, children) -> x`."""
  registry.register_node(nodetype, flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
  register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
  return cls


def register_dataclass(cls: type, data_fields=None, meta_fields=None) -> type:
  """Registers a dataclass; fields are data (children) unless listed in `meta_fields`
  or marked `field(metadata={"static": True})`."""
  if data_fields is None or meta_fields is None:
    fields = dataclasses.fields(cls)
    meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
  registry.register_dataclass_node(cls, list(data_fields), list(meta_fields))
  return cls


class Partial(functools.partial):
  """A `functools.partial` whose bound arguments are pytree children."""


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]))
