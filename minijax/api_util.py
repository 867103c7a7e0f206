"""What the transformations share about the functions they wrap: argument numbers, names.

`jit`, `vmap`, `grad` and friends take `static_argnums`-style arguments, and name the
flat arguments of a traced function (`x`, `params['w']`, `args[2]`) in jaxprs and errors.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from minijax import tree_util


def normalize_argnums(argnums) -> tuple[int, ...]:
  """`None`, an int or a sequence of ints, as a tuple."""
  if argnums is None:
    return ()
  if isinstance(argnums, int):
    argnums = (argnums,)
  return tuple(argnums)


def fun_name(fun: Callable) -> str:
  return getattr(fun, "__name__", None) or type(fun).__name__


class DebugInfo:
  """The name of a traced function and of its flat arguments (None when unknown)."""
  __slots__ = ("fun_name", "arg_names")

  def __init__(self, fun_name: str, arg_names: list[str] | None):
    self.fun_name = fun_name
    self.arg_names = arg_names


def flat_arg_names(fun: Callable, args, kwargs) -> list[str]:
  """One name per leaf of `(args, kwargs)`: the parameter's name and the leaf's path."""
  try:
    names = list(inspect.signature(fun).bind_partial(*args).arguments)
  except (TypeError, ValueError):
    names = []
  out = []
  for i, arg in enumerate(args):
    base = names[i] if i < len(names) else f"args[{i}]"
    out.extend(base + _path_str(path) for path, _ in tree_util.tree_flatten_with_path(arg)[0])
  for k, v in kwargs.items():
    out.extend(k + _path_str(path) for path, _ in tree_util.tree_flatten_with_path(v)[0])
  return out


def _path_str(path: Any) -> str:
  return "".join(str(k) for k in path)
