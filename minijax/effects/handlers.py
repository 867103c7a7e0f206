"""User-defined effects and their handlers, run at trace time.

An effect is declared with `define_effect(name, **policy flags)`; its operations with
`effect.operation(name, results)`, where `results(*operand avals)` gives the avals (or
`ShapeDtypeStruct`s) of the results: a single one, or a tuple.  Calling an operation binds
`perform_p`, whose equation carries the effect (an instance of the effect's own `Effect`
subclass, with the flags given), so effect propagation, control-flow policies and pictures
see it like any other.  An operation nobody handles cannot run: lowering it (and so
evaluating it, or jitting a function that performs it) raises `UnhandledEffectError`
naming the effect and the operation.

`handle(f, handler)` runs `f` with a `Handler` of one effect: each operation of the effect
is replaced, in program order, by the handler's Python function for it, called at trace
time with the operation's operands (and, for a handler with `state`, the current state
first, returning `(results, new state)`; `handle(...)` then returns `(output, final
state)`).  Handlers are tail-resumptive (each operation resumes once, with the results),
which is what the interpreter of `interpreter.py` discharges into pure code: the state
travels as carries of loops and operands and results of calls and branches.  Handler code
is ordinary minijax code, so `jit`, `vmap` and `grad` of a handled function work;
operations of other effects pass through to enclosing handlers.

`handle(f, tag=, handler=)` handles the `sow`s of a tag instead: `handler(name, value)`
replaces each sown value (see `harvest.py`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from minijax import lax
from minijax.tree_util import internal as tree_util
from minijax.core import effects as effects_lib
from minijax.core import pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.effects import interpreter
from minijax.effects.harvest import HarvestContext
from minijax.effects.interpreter import Context
from minijax.interpreters import ad, batching
from minijax.lowering import mlir

__all__ = ["Handler", "Operation", "UnhandledEffectError", "UserEffect", "define_effect",
           "handle", "perform_p"]


class UnhandledEffectError(Exception):
  """An operation of a user-defined effect reached lowering (or evaluation) unhandled."""


@dataclasses.dataclass(frozen=True)
class UserEffect(effects_lib.Effect):
  """The effect of the operations of one declared effect (`define_effect` makes a subclass
  per effect, with the policy flags it is given)."""
  name: str

  def __repr__(self):
    return self.name


_FLAGS = ("ordered", "allowed_in_control_flow", "allowed_in_remat",
          "allowed_in_custom_derivatives", "kept_when_unused", "runs_with_zero_cotangents")


def define_effect(name: str, **flags) -> "DeclaredEffect":
  """Declares an effect named `name`; `flags` are `Effect` policy flags (`ordered`,
  `allowed_in_control_flow`, ...: see `minijax.core.effects`)."""
  unknown = sorted(set(flags) - set(_FLAGS))
  if unknown:
    raise TypeError(f"define_effect({name!r}) got unknown policy flags {unknown}; the flags "
                    f"are {', '.join(_FLAGS)}")
  cls = type(f"{name}Effect", (UserEffect,), dict(flags, __module__=__name__))
  return DeclaredEffect(name, cls(name))


@dataclasses.dataclass(eq=False)
class DeclaredEffect:
  """A declared effect: its name, the `Effect` its operations carry, its operations."""
  name: str
  effect: UserEffect

  def operation(self, name: str, results: Callable) -> "Operation":
    """An operation of this effect; `results(*operand avals)` gives its result avals."""
    return Operation(self, name, results)

  def __repr__(self):
    return f"effect {self.name}"


@dataclasses.dataclass(eq=False)
class Operation:
  """One operation of a declared effect; calling it performs it."""
  effect: DeclaredEffect
  name: str
  results: Callable

  def result_avals(self, *avals) -> tuple[list[ShapedArray], bool]:
    """(the result avals, whether the operation returns a single value)."""
    out = self.results(*avals)
    single = not isinstance(out, (tuple, list))
    outs = [out] if single else list(out)
    return [ShapedArray(tuple(o.shape), o.dtype) for o in outs], single

  def __call__(self, *operands):
    single = self.result_avals(*map(get_aval, operands))[1]
    outs = perform_p.bind(*operands, operation=self)
    return outs[0] if single else tuple(outs)

  def __repr__(self):
    return f"{self.effect.name}.{self.name}"


perform_p = Primitive("perform")
perform_p.multiple_results = True


def _perform_abstract_eval(*avals, operation):
  return operation.result_avals(*avals)[0], frozenset({operation.effect.effect})


def _unhandled(operation, where: str):
  return UnhandledEffectError(
      f"the operation '{operation.name}' of effect '{operation.effect.name}' is not handled "
      f"({where}). Wrap the function that performs it in "
      f"minijax.effects.handle(f, handler) with a Handler for effect "
      f"'{operation.effect.name}'.")


def _perform_lowering(ctx, *args, operation):
  raise _unhandled(operation, "met while lowering")


def _perform_impl(*args, operation):
  raise _unhandled(operation, "met while evaluating")


def _perform_jvp(primals, tangents, *, operation):
  raise NotImplementedError(
      f"cannot differentiate the operation '{operation.name}' of effect "
      f"'{operation.effect.name}' before it is handled: differentiate the handled function "
      "instead (grad(handle(f, handler)))")


def _perform_batch(args, dims, *, operation):
  raise NotImplementedError(
      f"cannot vmap the operation '{operation.name}' of effect '{operation.effect.name}' "
      "over a mapped operand before it is handled: map the handled function instead "
      "(vmap(handle(f, handler)))")


perform_p.def_effectful_abstract_eval(_perform_abstract_eval)
perform_p.def_impl(_perform_impl)
mlir.register_lowering(perform_p, _perform_lowering)
ad.primitive_jvps[perform_p] = _perform_jvp
batching.primitive_batchers[perform_p] = _perform_batch
pretty.pp_rules[perform_p] = lambda params, names, indent: [f"op={params['operation']}"]


# ----------------------------------------------------------------------------- handlers

_NO_STATE = object()


class Handler:
  """Handles the operations of `effect`: `operations` maps each operation (or its name) to
  a function of its operands returning its results; with `state` (a pytree), to a function
  `(state, *operands) -> (results, new state)`."""

  def __init__(self, effect: DeclaredEffect, operations: dict, *, state: Any = _NO_STATE):
    self.effect = effect
    self.operations = {(k.name if isinstance(k, Operation) else k): v
                       for k, v in operations.items()}
    self.stateful = state is not _NO_STATE
    self.state = state


@dataclasses.dataclass(frozen=True)
class OperationSelector:
  """Selects the operations of one effect."""
  effect: UserEffect

  def __call__(self, primitive, params) -> bool:
    return primitive is perform_p and params["operation"].effect.effect == self.effect


class EffectContext(Context):
  """A `Handler` at work: its state is the handler's state's leaves."""

  def __init__(self, handler: Handler, state_tree):
    super().__init__()
    self.handler = handler
    self.state_tree = state_tree
    self.selector = OperationSelector(handler.effect.effect)

  def describe(self) -> str:
    return f"the handler of effect '{self.handler.effect.name}'"

  def child(self, construct, new_slice):
    return EffectContext(self.handler, self.state_tree)

  def process(self, primitive, args, params):
    operation = params["operation"]
    fn = self.handler.operations.get(operation.name)
    if fn is None:
      raise _unhandled(operation, f"the handler of effect '{operation.effect.name}' has no "
                                  f"function for it; it handles "
                                  f"{sorted(self.handler.operations)}")
    avals, single = operation.result_avals(*map(get_aval, args))
    if self.handler.stateful:
      state = tree_util.tree_unflatten(self.state_tree, self.state)
      out = fn(state, *args)
      if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"the handler of '{operation}' has state, so it must return "
                        f"(results, new state), got {out!r:.80}")
      results, new_state = out
      leaves, tree = tree_util.tree_flatten(new_state)
      if tree != self.state_tree:
        raise TypeError(f"the handler of '{operation}' changed the state's structure from "
                        f"{self.state_tree} to {tree}")
      self.state = [_as_aval(x, get_aval(old), operation, "state")
                    for x, old in zip(leaves, self.state)]
    else:
      results = fn(*args)
    results = [results] if single else list(results)
    if len(results) != len(avals):
      raise TypeError(f"the handler of '{operation}' returned {len(results)} results; the "
                      f"operation has {len(avals)}")
    return [_as_aval(x, a, operation, "result") for x, a in zip(results, avals)]


def _as_aval(x, aval, operation, what: str):
  """`x` as a value of `aval`'s dtype; a different shape is an error."""
  got = get_aval(x)
  if got.shape != aval.shape:
    raise TypeError(f"the handler of '{operation}' returned a {what} of shape {got.shape}; "
                    f"it must have shape {aval.shape}")
  if got.dtype != aval.dtype or got.weak_type:
    x = lax.convert_element_type(x, aval.dtype)
  return x


def handle(f: Callable, handler=None, *, tag=None) -> Callable:
  """`f` with `handler` handling its operations (see the module docstring); with `tag`,
  `handler(name, value)` replaces each value `f` sows with that tag."""
  if tag is not None:
    if not callable(handler):
      raise TypeError(f"handle(f, tag={tag!r}, handler=...) needs a function "
                      f"handler(name, value), got {handler!r:.60}")

    def handled_sows(*args, **kwargs):
      context = HarvestContext(tag, handler=handler)
      return interpreter.run(context, lambda: f(*args, **kwargs))
    return handled_sows
  if not isinstance(handler, Handler):
    raise TypeError(f"handle(f, handler) needs a minijax.effects.Handler, got "
                    f"{handler!r:.60} (for sows, pass tag= and a function)")

  def handled(*args, **kwargs):
    leaves, tree = tree_util.tree_flatten(handler.state if handler.stateful else ())
    context = EffectContext(handler, tree)
    context.state = [lax.convert_element_type(x, get_aval(x).dtype) if _is_scalar(x) else x
                     for x in leaves]
    out = interpreter.run(context, lambda: f(*args, **kwargs))
    if handler.stateful:
      return out, tree_util.tree_unflatten(tree, context.state)
    return out
  return handled


def _is_scalar(x) -> bool:
  return isinstance(x, (bool, int, float, complex))
