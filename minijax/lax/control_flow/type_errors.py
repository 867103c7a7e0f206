"""JAX's error texts for control flow whose functions disagree with their types: a loop body
whose carry changes structure or type (`scan`, `while_loop`, `fori_loop`), branches of
`cond`/`switch` with different outputs, and the checks of predicates and indices.

A structural difference is found by walking both pytrees together, one level at a time:
the first place where the node types, the numbers of children (or lengths of lists and
tuples) or the node metadata differ is reported with its key path, as "the input carry
component c[1] is a tuple of length 2 but the corresponding component of the carry output
is a tuple of length 3, so the lengths do not match".  Type differences name each leaf
whose dtype or shape differs.  Types print as JAX prints them (`float32[2,3]`).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Iterator, Sequence

from minijax.tree_util import internal as tree_util
from minijax.lax.control_flow.common import same_type


def type_str(aval) -> str:
  return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def _mismatch(a, b) -> str:
  parts = (["the dtypes do not match"] if a.dtype != b.dtype else []) + (
      ["the shapes do not match"] if a.shape != b.shape else [])
  if not parts:
    return ""
  return ", so " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", and " + parts[-1])


class _Leaf:
  pass


def _describe(x) -> str:
  return "pytree leaf" if isinstance(x, _Leaf) else str(type(x))


def _placeholders(tree):
  return tree_util.tree_unflatten(tree, [_Leaf() for _ in range(tree.num_leaves)])


def structure_differences(t1, t2, path: tuple = ()) -> Iterator[tuple[tuple, str, str, str]]:
  """`(key path, what t1 is there, what t2 is there, why they differ)` for each place
  where two pytrees first differ."""
  node1 = tree_util.registry.flatten_one_level_with_keys(t1)
  node2 = tree_util.registry.flatten_one_level_with_keys(t2)
  if node1 is None and node2 is None:
    return
  if type(t1) is not type(t2) or (node1 is None) != (node2 is None):
    yield path, _describe(t1), _describe(t2), "their Python types differ"
    return
  if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
    yield (path, f"{type(t1).__name__} of length {len(t1)}",
           f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")
    return
  (keyed1, meta1), (keyed2, meta2) = node1, node2
  if len(keyed1) != len(keyed2):
    plural = lambda n: "child" if n == 1 else "children"
    keys = {repr(getattr(k, "key", k)) for k, _ in keyed1} ^ {
        repr(getattr(k, "key", k)) for k, _ in keyed2}
    why = "the numbers of children do not match"
    if keys:
      why += f", with the symmetric difference of key sets: {{{' '.join(sorted(keys))}}}"
    yield (path, f"{type(t1)} with {len(keyed1)} {plural(len(keyed1))}",
           f"{type(t2)} with {len(keyed2)} {plural(len(keyed2))}", why)
    return
  if meta1 != meta2:
    yield (path, f"{type(t1)} with pytree metadata {meta1}",
           f"{type(t2)} with pytree metadata {meta2}", "the pytree node metadata does not match")
    return
  for (k, c1), (_, c2) in zip(keyed1, keyed2):
    yield from structure_differences(c1, c2, (*path, k))


def _listed(diffs: Sequence[str], capitalize: bool = True) -> str:
  if len(diffs) == 1:
    d = diffs[0]
    return (d[:1].upper() + d[1:] if capitalize else d) + ".\n"
  return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _first_param(fun: Callable) -> str | None:
  try:
    params = list(inspect.signature(fun).parameters)
  except (TypeError, ValueError):
    return None
  return params[0] if params else None


def check_carry(name: str, body_fun: Callable, in_tree, in_avals, out_tree, out_avals,
                carry_name: str | None = None) -> bool:
  """Raises JAX's TypeError when a loop body's carry output differs from its input in
  structure or type (`name` is "scan body" or "while_loop body").  Returns True when they
  differ in weak types only (the caller then traces again with the weak types dropped)."""
  carry_name = carry_name or _first_param(body_fun)
  if carry_name:
    component = lambda p: (f"the input carry component {carry_name}{tree_util.keystr(p)}"
                           if p else f"the input carry {carry_name}")
  else:
    component = lambda p: (f"the input carry at path {tree_util.keystr(p)}"
                           if p else "the input carry")
  if in_tree != out_tree:
    diffs = [f"{component(path)} is a {a} but the corresponding component of the carry "
             f"output is a {b}, so {why}"
             for path, a, b, why in structure_differences(_placeholders(in_tree),
                                                          _placeholders(out_tree))]
    if diffs:
      raise TypeError(
          f"{name} function carry input and carry output must have the same pytree "
          f"structure, but they differ:\n\n{_listed(diffs)}\nRevise the function so that "
          "the carry output has the same pytree structure as the carry input.")
  paths = [p for p, _ in tree_util.tree_flatten_with_path(_placeholders(in_tree))[0]]
  diffs = [f"{component(path)} has type {type_str(a)} but the corresponding output carry "
           f"component has type {type_str(b)}{_mismatch(a, b)}"
           for path, a, b in zip(paths, in_avals, out_avals) if not same_type(a, b)]
  if diffs:
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they "
        f"differ:\n\n{_listed(diffs)}\nRevise the function so that all output types match "
        "the corresponding input types.")
  return any(a.weak_type != b.weak_type for a, b in zip(in_avals, out_avals))


def fun_sourceinfo(fun: Callable) -> str:
  fun = inspect.unwrap(getattr(fun, "func", fun))
  code = getattr(fun, "__code__", None)
  if code is None:
    return "<unknown>"
  return f"{fun.__name__} at {code.co_filename}:{code.co_firstlineno}"


def check_branch_outputs(api_name: str, name1: str, name2: str, f1: Callable, f2: Callable,
                         tree1, avals1, tree2, avals2) -> None:
  """Raises JAX's TypeError when two branches of `cond`/`switch` differ in the structure
  or the types of their outputs."""
  paths = [p for p, _ in tree_util.tree_flatten_with_path(_placeholders(tree1))[0]]
  at = lambda p: f" at path {tree_util.keystr(p)}" if p else ""
  if tree1 != tree2:
    diffs = [f"{name1} output{at(p)} is a {a} but {name2} output{at(p)} is a {b}, so {why}"
             for p, a, b, why in structure_differences(_placeholders(tree1),
                                                       _placeholders(tree2))]
    if diffs:
      raise TypeError(
          f"{api_name} branch outputs must have the same pytree structure, but they "
          f"differ:\n\n{name1} is {fun_sourceinfo(f1)}\n{name2} is {fun_sourceinfo(f2)}\n\n"
          f"{_listed(diffs, capitalize=False)}\nRevise {name1} and/or {name2} so that they "
          "have the same pytree structure.")
  diffs = [f"the output of {name1}{at(p)} has type {type_str(a)} but the corresponding "
           f"output of {name2} has type {type_str(b)}{_mismatch(a, b)}"
           for p, a, b in zip(paths, avals1, avals2) if not same_type(a, b)]
  if diffs:
    raise TypeError(
        f"{api_name} branches must have equal output types but they differ.\n\n"
        f"{name1} is {fun_sourceinfo(f1)}\n{name2} is {fun_sourceinfo(f2)}\n\n"
        f"{_listed(diffs)}\nRevise {name1} and/or {name2} so that all output types match.")


def check_predicate_type(tree, avals: Sequence[Any]) -> None:
  """`while_loop`'s check that `cond_fun` returns a boolean scalar."""
  if not tree_util.treedef_is_leaf(tree):
    raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {tree}.")
  (aval,) = avals
  if aval.shape != () or aval.dtype.name != "bool":
    raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                    f"[{aval!r}].")
