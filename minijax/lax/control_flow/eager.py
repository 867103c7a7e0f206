"""Control flow as plain Python loops and branches, under `disable_jit` (JAX's semantics).

With jit disabled, JAX runs `scan` and `while_loop` as Python loops over the functions and
`cond`/`switch` as a Python `if` whenever the predicate's value is known, so that prints
and debuggers inside them see concrete values.  The loops call the user's functions once
per iteration on arrays (each operation dispatched eagerly), and nothing is traced.

A `scan` of length zero cannot run this way (the output's type would come from a trace),
so it raises, as JAX does.  A `while_loop` whose predicate is not concrete (under `vmap`,
say) falls back to the staged primitive.
"""
from __future__ import annotations

from typing import Callable

from minijax import tree_util
from minijax.core.errors import ConcretizationTypeError
from minijax.core.trace import Tracer


def is_concrete(x) -> bool:
  """Whether `x`'s value is known now (not a tracer, or a tracer that knows its value)."""
  return not isinstance(x, Tracer) or x.to_concrete_value() is not None


def scan(f: Callable, init, x_flat, x_tree, length: int, reverse: bool):
  """`lax.scan` as a Python loop: slice `i` of every `x`, then the `y`s stacked."""
  from minijax.lax.slicing import index_in_dim
  from minijax.lax.structural import concatenate, expand_dims
  if length == 0:
    raise ValueError("zero-length scan is not supported in disable_jit() mode because "
                     "the output type is unknown.")
  carry, ys = init, []
  steps = range(length - 1, -1, -1) if reverse else range(length)
  for i in steps:
    x = tree_util.tree_unflatten(x_tree, [index_in_dim(x, i, keepdims=False)
                                          for x in x_flat])
    carry, y = f(carry, x)
    ys.append(y)
  if reverse:
    ys.reverse()
  stack = lambda *leaves: concatenate([expand_dims(y, (0,)) for y in leaves], 0)
  return carry, tree_util.tree_map(stack, *ys)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
  """`lax.while_loop` as a Python loop; `None` when the predicate is not concrete (the
  caller then stages the loop)."""
  from minijax.lax.structural import convert_to_array
  try:
    val = tree_util.tree_map(convert_to_array, init_val)
    while cond_fun(val):
      val = tree_util.tree_map(convert_to_array, body_fun(val))
    return (val,)
  except ConcretizationTypeError:
    return None
