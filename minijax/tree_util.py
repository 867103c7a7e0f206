"""Pytrees on jaxlib's C++ registry.

Flattening and unflattening run in C++ (`jaxlib._jax.pytree`), which is what makes
dispatch of `jit` functions cheap.  `None` is an empty subtree, as in JAX.  A leaf's path
is a tuple of jaxlib's key entries (`SequenceKey`, `DictKey`, `GetAttrKey`,
`FlattenedIndexKey`), which `keystr` prints as JAX does (`['a'][1]`).

Two views of one registry.  Some types are registered nodes that users must see as
leaves: a typed PRNG key array is a leaf of key dtype in JAX, while minijax's
transformations carry it as a node over its uint32 data (`register_opaque_node`).  The
functions of this module are the users' view (such nodes are leaves); `internal` holds
the same functions seeing into them, which is what minijax's own transformations use
(`from minijax.tree_util import internal as tree_util`).  Treedefs of both views come from
the one registry, so either view's treedef unflattens and compares as usual.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import types
from typing import Any, Callable

from jaxlib._jax import pytree as _pytree

# minijax's own registry, not the one jaxlib keeps for JAX: importing JAX beside minijax (as
# the benchmarks do) registers JAX's nodes without clashing with minijax's.
registry = _pytree.PyTreeRegistry()
default_registry = registry
# A treedef pickles with its registry, by name: this module's `default_registry`.
registry.__module__, registry.__name__ = __name__, "default_registry"
PyTreeDef = _pytree.PyTreeDef
SequenceKey = _pytree.SequenceKey
DictKey = _pytree.DictKey
GetAttrKey = _pytree.GetAttrKey
FlattenedIndexKey = _pytree.FlattenedIndexKey
KeyEntry = Any
KeyPath = tuple


# Registered node types that users see as leaves (see the module docstring), and how many
# times one was flattened: a users' flatten without `is_leaf` runs in C++ alone and is
# redone with the leaf predicate only when it met such a node.
_opaque_types: set[type] = set()
_opaque_flattens = [0]


def register_opaque_node(nodetype: type, flatten_func: Callable,
                         unflatten_func: Callable) -> None:
  """Registers `nodetype` as a pytree node that users see as a leaf."""
  def counted_flatten(x):
    _opaque_flattens[0] += 1
    return flatten_func(x)
  registry.register_node(nodetype, counted_flatten, unflatten_func)
  _opaque_types.add(nodetype)


def _user_leaf(is_leaf, takes_path: bool = False):
  """`is_leaf` extended so that opaque nodes are leaves."""
  if not _opaque_types:
    return is_leaf
  opaque = _opaque_types
  if is_leaf is None:
    return (lambda _, x: type(x) in opaque) if takes_path else (lambda x: type(x) in opaque)
  if takes_path:
    return lambda p, x: type(x) in opaque or is_leaf(p, x)
  return lambda x: type(x) in opaque or is_leaf(x)


class Unspecified:
  """The default of `tree_reduce`'s initializer: none was given."""


def tree_unflatten(treedef: PyTreeDef, leaves):
  return treedef.unflatten(leaves)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  return treedef.num_nodes == 1 and treedef.num_leaves == 1


class _View:
  """The flattening functions of one view (see the module docstring): `leaf(is_leaf,
  takes_path)` is the leaf predicate the registry gets."""

  def __init__(self, leaf: Callable):
    self._leaf = leaf

  def _flatten(self, tree: Any, is_leaf):
    if is_leaf is None and self._leaf is _user_leaf:
      seen = _opaque_flattens[0]
      out = registry.flatten(tree)
      if _opaque_flattens[0] == seen:
        return out
    return registry.flatten(tree, self._leaf(is_leaf))

  def tree_flatten(self, tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    return self._flatten(tree, is_leaf)

  def tree_leaves(self, tree: Any, is_leaf=None) -> list:
    return self._flatten(tree, is_leaf)[0]

  def tree_structure(self, tree: Any, is_leaf=None) -> PyTreeDef:
    return self._flatten(tree, is_leaf)[1]

  def tree_map(self, f: Callable, tree: Any, *rest: Any, is_leaf=None):
    leaves, treedef = self._flatten(tree, is_leaf)
    try:
      all_leaves = [leaves] + [treedef.flatten_up_to(r) for r in rest]
    except (ValueError, TypeError) as e:
      raise self._structure_error(tree, rest, is_leaf, e) from None
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))

  def _structure_error(self, tree, rest, is_leaf, error: Exception) -> Exception:
    """The first way in which one of `rest` does not have `tree`'s structure (else
    `error`)."""
    for r in rest:
      for message in self.prefix_errors(tree, r, "tree", is_leaf):
        return ValueError(message)
    return error

  def tree_flatten_with_path(self, tree: Any, is_leaf=None, is_leaf_takes_path: bool = False):
    """`([(path, leaf), ...], treedef)`; `is_leaf(x)`, or `is_leaf(path, x)` when
    `is_leaf_takes_path`."""
    if is_leaf is not None and not is_leaf_takes_path:
      leaf_predicate = is_leaf
      is_leaf = lambda _, x: leaf_predicate(x)  # noqa: E731
    return registry.flatten_with_path(tree, self._leaf(is_leaf, True))

  def tree_leaves_with_path(self, tree: Any, is_leaf=None,
                            is_leaf_takes_path: bool = False) -> list:
    return self.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]

  def tree_map_with_path(self, f: Callable, tree: Any, *rest: Any, is_leaf=None,
                         is_leaf_takes_path: bool = False):
    """Like `tree_map`, with `f(path, x, *rest_leaves)`."""
    path_leaves, treedef = self.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    try:
      all_leaves = ([[leaf for _, leaf in path_leaves]]
                    + [treedef.flatten_up_to(r) for r in rest])
    except (ValueError, TypeError) as e:
      leaf = is_leaf if not is_leaf_takes_path or is_leaf is None else None
      raise self._structure_error(tree, rest, leaf, e) from None
    paths = [path for path, _ in path_leaves]
    return treedef.unflatten(f(path, *xs) for path, *xs in zip(paths, *all_leaves))

  def prefix_errors(self, prefix: Any, full: Any, name: str, is_leaf=None) -> list[str]:
    """Why `prefix` is not a tree prefix of `full`: one message per subtree where they part
    (a leaf of `prefix`, as `is_leaf` decides, covers any subtree), each naming the key
    path there as `name` followed by the path (`in_axes[0]['w']`).  Empty when it is a
    prefix."""
    out: list[str] = []
    _prefix_errors((), prefix, full, name, self._leaf(is_leaf), out)
    return out

  def tree_reduce(self, function: Callable, tree: Any, initializer: Any = Unspecified(),
                  is_leaf=None):
    """`functools.reduce(function, leaves[, initializer])`."""
    leaves = self.tree_leaves(tree, is_leaf)
    if isinstance(initializer, Unspecified):
      return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)

  def tree_all(self, tree: Any, *, is_leaf=None) -> bool:
    return all(self.tree_leaves(tree, is_leaf))

  def tree_transpose(self, outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                     pytree_to_transpose: Any):
    """Turns an outer tree of inner trees into an inner tree of outer trees."""
    flat, treedef = self.tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
      inner_treedef = self.tree_structure(
          outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner, outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner * outer:
      raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
    rows = [flat[i * inner:(i + 1) * inner] for i in range(outer)]
    return inner_treedef.unflatten(outer_treedef.unflatten(col) for col in zip(*rows))

  def tree_broadcast(self, prefix_tree: Any, full_tree: Any, is_leaf=None):
    """`full_tree`'s structure, each leaf the leaf of `prefix_tree` above it."""
    prefix_leaves, prefix_def = self.tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    out = [x for x, sub in zip(prefix_leaves, subtrees)
           for _ in range(self.tree_structure(sub).num_leaves)]
    return self.tree_structure(full_tree).unflatten(out)

  def all_leaves(self, iterable, is_leaf=None) -> bool:
    """Whether every element of `iterable` is a leaf."""
    leaf = self._leaf(is_leaf)
    if leaf is None:
      return _pytree.all_leaves(registry, iterable)
    items = list(iterable)
    return items == registry.flatten(items, leaf)[0]


_users = _View(_user_leaf)
tree_flatten = _users.tree_flatten
tree_leaves = _users.tree_leaves
tree_structure = _users.tree_structure
tree_map = _users.tree_map
tree_flatten_with_path = _users.tree_flatten_with_path
tree_leaves_with_path = _users.tree_leaves_with_path
tree_map_with_path = _users.tree_map_with_path
prefix_errors = _users.prefix_errors
tree_reduce = _users.tree_reduce
tree_all = _users.tree_all
tree_transpose = _users.tree_transpose
tree_broadcast = _users.tree_broadcast
all_leaves = _users.all_leaves


def tree_reduce_associative(operation: Callable, tree: Any, *, identity: Any = Unspecified(),
                            is_leaf=None):
  """The leaves combined by the associative `operation` as a balanced tree of calls
  (halves first), so that a parallel reduction could do it; `identity` for no leaves."""
  leaves = tree_leaves(tree, is_leaf)
  if not leaves:
    if isinstance(identity, Unspecified):
      raise TypeError("Must specify identity for parallel reduction of empty sequence.")
    return identity

  def reduce(items):
    if len(items) == 1:
      return items[0]
    middle = len(items) // 2
    return operation(reduce(items[:middle]), reduce(items[middle:]))

  return reduce(leaves)


def flatten_one_level(tree: Any):
  """`(children, node_data)` of the pytree node `tree`; a leaf raises ValueError."""
  out = registry.flatten_one_level(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def flatten_one_level_with_keys(tree: Any):
  """`(((key, child), ...), node_data)` of the pytree node `tree`."""
  out = registry.flatten_one_level_with_keys(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def is_tree_node(typ: type) -> bool:
  """Whether `typ` is a registered pytree node type."""
  return registry.is_node(typ)


def _prefix_errors(path, prefix, full, name, is_leaf, out: list[str]) -> None:
  if treedef_is_leaf(registry.flatten(prefix, is_leaf)[1]):
    return
  where = f"pytree structure error: {{}} at key path\n    {name}{keystr(path)}\n"
  if type(prefix) is not type(full):
    out.append(where.format("different types") +
               f"where the prefix tree {name} has a subtree of type {type(prefix)} and the "
               f"full tree a subtree of another type, {type(full)}.")
    return
  if isinstance(prefix, (list, tuple)) and len(prefix) != len(full):
    kind = type(prefix).__name__
    out.append(where.format(f"different lengths of {kind}") +
               f"where the prefix tree {name} has a {kind} of length {len(prefix)} and the "
               f"full tree a {kind} of length {len(full)}.")
    return
  (p_pairs, p_meta), (f_pairs, f_meta) = (registry.flatten_one_level_with_keys(t)
                                          for t in (prefix, full))
  p_keys, f_keys = [k for k, _ in p_pairs], [k for k, _ in f_pairs]
  if len(p_keys) != len(f_keys):
    shown = lambda keys: " ".join(map(_simple_entrystr, keys)) or "(none)"  # noqa: E731
    out.append(where.format("different numbers of pytree children") +
               f"where the prefix tree {name} has a {type(prefix)} with "
               f"{_children(len(p_keys))} (keys {shown(p_keys)}) and the full tree one with "
               f"{_children(len(f_keys))} (keys {shown(f_keys)}).")
    return
  if p_meta != f_meta:
    out.append(where.format("different pytree metadata") +
               f"where the prefix tree {name} has a {type(prefix)} with metadata {p_meta!r} "
               f"and the full tree one with metadata {f_meta!r}.")
    return
  for (key, p_child), (_, f_child) in zip(p_pairs, f_pairs):
    _prefix_errors((*path, key), p_child, f_child, name, is_leaf, out)


def _children(n: int) -> str:
  return f"{n} child" if n == 1 else f"{n} children"


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
  """A key path as text: `['a'][0].b`, or with `simple=True` `a0b` (`separator` between)."""
  return separator.join(map(_simple_entrystr if simple else str, keys))


def _simple_entrystr(key) -> str:
  if isinstance(key, SequenceKey):
    return str(key.idx)
  if isinstance(key, (DictKey, FlattenedIndexKey)):
    return str(key.key)
  if isinstance(key, GetAttrKey):
    return str(key.name)
  return str(key)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  return treedef.children()


def flatten_fun(fun: Callable, in_tree: PyTreeDef) -> tuple[Callable, Callable[[], PyTreeDef]]:
  """`(flat_fun, out_tree)` for tracing `fun` on flat leaves.

  `in_tree` is the tree of `(args, kwargs)`; `flat_fun(*leaves)` unflattens the leaves into
  them, calls `fun(*args, **kwargs)` and returns the leaves of the result, whose tree
  structure `out_tree()` then gives (that of the latest call)."""
  store: list[PyTreeDef] = []

  def flat_fun(*leaves):  # (calls `fun` itself: no frame between the trace and the user's)
    args, kwargs = in_tree.unflatten(leaves)
    out_leaves, tree = registry.flatten(fun(*args, **kwargs))
    store[:] = [tree]
    return out_leaves

  return flat_fun, lambda: store[0]


def flatten_fun_nokwargs(fun: Callable, in_tree: PyTreeDef):
  """Like `flatten_fun`, with `in_tree` the tree of the positional arguments' tuple."""
  store: list[PyTreeDef] = []

  def flat_fun(*leaves):
    out_leaves, tree = registry.flatten(fun(*in_tree.unflatten(leaves)))
    store[:] = [tree]
    return out_leaves

  return flat_fun, lambda: store[0]


def treedef_tuple(treedefs) -> PyTreeDef:
  return _pytree.treedef_tuple(registry, list(treedefs))


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
  """`flatten_func(x) -> (children, aux)`, `unflatten_func(aux, children) -> x`; the
  optional `flatten_with_keys_func(x) -> (((key, child), ...), aux)` names the children
  in key paths (else they are `FlattenedIndexKey(i)`)."""
  registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
  """Like `register_pytree_node`, flattening with keys:
  `flatten_with_keys(x) -> (((key, child), ...), aux)`.  `flatten_func`, when given, must
  return the same children without keys (it is only faster)."""
  if flatten_func is None:
    def flatten_func(x):
      pairs, aux = flatten_with_keys(x)
      return [child for _, child in pairs], aux
  registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: type) -> type:
  """Class decorator: `cls.tree_flatten_with_keys()` and `cls.tree_unflatten(aux, children)`
  (and, if defined, `tree_flatten()`)."""
  flatten = getattr(cls, "tree_flatten", None)
  register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                            None if flatten is None else (lambda x: x.tree_flatten()))
  return cls


def register_static(cls: type) -> type:
  """Registers `cls` as a pytree without leaves: its instances are part of the tree's
  structure (hashable, compared with `==`), so transformations treat them as static."""
  register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
  return cls


def register_pytree_node_class(cls: type) -> type:
  register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
  return cls


def register_dataclass(nodetype: type, data_fields=None, meta_fields=None,
                       drop_fields=()) -> type:
  """Registers a class whose instances are rebuilt as `nodetype(**fields)`: `data_fields`
  are children, `meta_fields` part of the structure.  For a dataclass both may be left
  out: fields marked `field(metadata={"static": True})` are meta, the others data.  A
  dataclass's fields with `init=True` must be exactly data, meta and `drop_fields`."""
  if (data_fields is None) != (meta_fields is None):
    raise TypeError("register_dataclass: give both data_fields and meta_fields, or neither; "
                    f"got data_fields={data_fields} meta_fields={meta_fields}")
  if data_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError("register_dataclass: data_fields and meta_fields are required for "
                      f"{nodetype}, which is not a dataclass")
    fields = dataclasses.fields(nodetype)
    meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
  data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
  if dataclasses.is_dataclass(nodetype):
    expected = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
    given = {*data_fields, *meta_fields}
    if given != expected:
      msg = ("data_fields and meta_fields must include all dataclass fields with "
             "``init=True`` and only them.")
      if expected - given:
        msg += (f" Missing fields: {expected - given}. Add them to drop_fields to suppress "
                "this error.")
      if given - expected:
        msg += f" Unexpected fields: {given - expected}."
      raise ValueError(msg)
  if set(data_fields) & set(meta_fields):
    raise ValueError("data_fields and meta_fields must not overlap. Overlapping fields: "
                     f"{set(data_fields) & set(meta_fields)}.")
  registry.register_dataclass_node(nodetype, list(data_fields), list(meta_fields))
  return nodetype


class Partial(functools.partial):
  """A `functools.partial` whose bound arguments are pytree children (the function is
  part of the tree structure)."""

  def __new__(cls, func, *args, **kwargs):
    if isinstance(func, functools.partial):
      # functools.partial would merge a partial's own bound arguments into these, making
      # them children; boxed, it keeps them with the function
      inner = func
      func = functools.wraps(inner)(lambda *a, **k: inner(*a, **k))
      func.__wrapped_partial__ = inner
      # and still reads as that partial (`p.func.args`), as JAX's box does
      func.func, func.args, func.keywords = inner.func, inner.args, inner.keywords
    return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]))


# As in JAX: OrderedDict children keep their insertion order; a defaultdict's are sorted by
# key and it keeps its default_factory.
def _flatten_defaultdict_with_keys(d):
  keys = tuple(sorted(d))
  return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


for _node_type, _flatten_with_keys, _unflatten in (
    (collections.OrderedDict,
     lambda x: (tuple((DictKey(k), x[k]) for k in x.keys()), tuple(x.keys())),
     lambda keys, values: collections.OrderedDict(zip(keys, values))),
    (collections.defaultdict, _flatten_defaultdict_with_keys,
     lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)))):
  register_pytree_with_keys(_node_type, _flatten_with_keys, _unflatten)


class _Internal(_View):
  """`tree_util` as minijax's transformations see it: opaque nodes (key arrays) are nodes,
  so their data are leaves; every other name is the module's own."""

  def __init__(self):
    super().__init__(lambda is_leaf, takes_path=False: is_leaf)

  def __getattr__(self, name: str):
    return globals()[name] if name in globals() else super().__getattribute__(name)


internal = _Internal()
