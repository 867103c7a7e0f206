"""Deferring taps: the computation hands its tapped values back as outputs.

Under `tap_delivery="deferred"` a computation does not call the host while it runs.
`defer_taps` rewrites its jaxpr so that every equation with a `deferrable` effect (a tap,
a debug callback) is gone and the values it would have sent are extra outputs, after the
original ones; beside it comes the delivery plan (`core.deliveries`) that says which tap
gets which outputs, in program order.  The runtime hands the outputs to the tap functions
once the computation is done.

The rewrite interprets the jaxpr under a staging trace, as the state discharge does: an
equation without deferrable effects is bound as it is; one with them goes to its
primitive's rule, which lives with the primitive:

  deferral_rules[p](eqn, ins) -> (outs, extras, node)

`outs` are the equation's outputs, `extras` the values handed to the host (outputs of the
enclosing scope) and `node` the plan of those values, `node.width == len(extras)`.  A tap
returns its operands as extras and an `Emit`; a call inlines its body; `scan` stacks its
body's extras as extra `ys` (a `Loop`); `cond` outputs every branch's extras, zeros for
the branches not taken, and its index (a `Branch`).  A primitive with no rule (a
`while_loop`, whose trip count is unknown, or a computation over several devices) raises
`CannotDefer`, and the computation keeps its taps as they are, all of them: taps of one
ordered effect are either all deferred or all immediate, so they stay in order.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from minijax.core import caches
from minijax.core.deliveries import Seq
from minijax.core.effects import has_deferrable
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, _add_eqn_note
from minijax.interpreters.partial_eval import trace_to_closed_jaxpr

DeferralRule = Callable[[JaxprEqn, list], tuple[list, list, Any]]
deferral_rules: dict[Any, DeferralRule] = {}


class CannotDefer(Exception):
  """A deferrable effect sits where its values cannot become outputs (no rule)."""


def eval_deferred(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]
                  ) -> tuple[list, list, Seq]:
  """Interprets `jaxpr` with its deferrable equations turned into outputs: returns the
  outputs, the extra outputs and their plan (see the module docstring)."""
  env: dict[Any, Any] = {}

  def read(atom):
    return atom.val if type(atom) is Literal else env[atom]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  extras: list = []
  items: list = []
  for eqn in jaxpr.eqns:
    ins = [read(a) for a in eqn.invars]
    if has_deferrable(eqn.effects):
      rule = deferral_rules.get(eqn.primitive)
      if rule is None:
        raise CannotDefer(f"{eqn.primitive} holds a tap whose values cannot become outputs")
      try:
        outs, more, node = rule(eqn, ins)
      except CannotDefer:
        raise
      except Exception as e:
        _add_eqn_note(e, eqn)
        raise
      extras.extend(more)
      items.append(node)
    else:
      try:
        outs = eqn.primitive.bind(*ins, **eqn.params)
      except Exception as e:
        _add_eqn_note(e, eqn)
        raise
      if not eqn.primitive.multiple_results:
        outs = [outs]
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars], extras, Seq(items)


def trace_deferred(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Seq]:
  """`closed` with its deferrable equations turned into extra outputs, and their plan."""
  plans: list = []

  def fun(*args):
    outs, extras, plan = eval_deferred(closed.jaxpr, closed.consts, args)
    plans.append(plan)
    return [*outs, *extras]

  return trace_to_closed_jaxpr(fun, closed.in_avals), plans[0]


def defer_taps(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Seq] | None:
  """`(jaxpr, plan)`: `closed` whose deferrable effects leave as outputs after its own, and
  the plan to deliver them; None when it has none, or when one of them cannot be deferred
  (then none is).  Cached while `closed` lives, so that a lowering and the compile after it
  see one rewrite."""
  if not isinstance(closed, ClosedJaxpr):
    raise TypeError(f"defer_taps takes a ClosedJaxpr, got {type(closed).__name__}")
  if not has_deferrable(closed.jaxpr.effects):
    return None
  return _deferred(closed)


def _defer(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Seq] | None:
  try:
    return trace_deferred(closed)
  except CannotDefer:
    return None


_deferred = caches.WeakLRU(_defer, "jit_cache_size")


def inline_call_rule(param: str) -> DeferralRule:
  """The rule of a call-like primitive whose operands are the inputs of the ClosedJaxpr in
  `params[param]`: its body is inlined, its taps deferred with it (nothing transforms the
  program any more, so a call boundary means nothing here)."""
  def rule(eqn, ins):
    closed = eqn.params[param]
    return eval_deferred(closed.jaxpr, closed.consts, ins)
  return rule
