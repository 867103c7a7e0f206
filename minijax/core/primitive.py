"""Primitives: named operations whose meaning is given by rule tables.

A primitive owns its evaluation rule (`impl`: its own, or else the eager impl that the
staging layer installs with `set_eager_impl`, which compiles and runs the primitive on
concrete values; as in JAX, `p.impl` is the rule itself, so a rule saved from it and wrapped
by a new `def_impl` keeps working) and its abstract evaluation, which returns output avals and the
effects the operation has.  Every other rule (jvp, transpose, batching, lowering) lives in
the table of the layer that uses it, keyed by the primitive.  `bind` is the only way to
apply a primitive: it asks the current trace to process it.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from minijax.core import effects as effects_lib
from minijax.core import trace as trace_lib

AbstractEvalRule = Callable[..., Any]

def _no_eager_impl(primitive, *args, **params):
  raise RuntimeError(f"cannot evaluate '{primitive}' on concrete values: no eager impl is "
                     "installed (importing minijax installs minijax.staging's)")


_eager_impl: Callable = _no_eager_impl


def _apply_eagerly(primitive, *args, **params):
  return _eager_impl(primitive, *args, **params)


def set_eager_impl(impl: Callable) -> None:
  """Installs `impl(primitive, *args, **params)`, which runs primitives that have no impl of
  their own on concrete values."""
  global _eager_impl
  _eager_impl = impl


class Primitive:
  multiple_results = False
  # JAX's flags for primitives that call a jaxpr in their `call_jaxpr` (or map one over
  # devices); libraries that walk jaxprs read them (distrax's inverses).  minijax has none:
  # `jit` keeps its jaxpr in `jaxpr`, as JAX's does.
  call_primitive = False
  map_primitive = False

  def __init__(self, name: str):
    self.name = name
    self._effectful_abstract_eval: Callable | None = None
    self.impl: Callable = functools.partial(_apply_eagerly, self)

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    return trace_lib._context.trace.process_primitive(self, args, params)

  def bind_with_trace(self, trace, args, *avals_and_params):
    """`bind` on `trace` (made current meanwhile), as JAX's: `bind_with_trace(trace, args,
    params)` or, as JAX 0.10.2 also takes it, `(trace, args, avals, params)`."""
    params = avals_and_params[-1]
    with trace_lib.set_current_trace(trace):
      return trace.process_primitive(self, list(args), params)

  def def_impl(self, impl: Callable) -> Callable:
    self.impl = impl
    return impl

  def def_abstract_eval(self, rule: AbstractEvalRule) -> AbstractEvalRule:
    """`rule(*avals, **params)` returns the output aval(s); the primitive has no effects."""
    self._effectful_abstract_eval = lambda *a, **p: (rule(*a, **p), effects_lib.no_effects)
    return rule

  def def_effectful_abstract_eval(self, rule: AbstractEvalRule) -> AbstractEvalRule:
    """`rule(*avals, **params)` returns `(output aval(s), frozenset of effects)`."""
    self._effectful_abstract_eval = rule
    return rule

  def abstract_eval(self, *avals, **params):
    if self._effectful_abstract_eval is None:
      raise NotImplementedError(
          f"Abstract evaluation for '{self.name}' not implemented: primitive '{self.name}' has "
          f"no abstract evaluation rule; define one with `{self.name}_p.def_abstract_eval(rule)` "
          "in its block in minijax/lax/")
    return self._effectful_abstract_eval(*avals, **params)
