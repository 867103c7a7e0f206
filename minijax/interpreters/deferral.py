"""Deferring taps: the computation hands its tapped values back as outputs.

Under `tap_delivery="deferred"` a computation does not call the host while it runs.
`defer_taps` rewrites its jaxpr so that every equation with a `deferrable` effect (a tap,
a debug callback) is gone and the values it would have sent are extra outputs, after the
original ones; beside it comes the delivery plan (`core.deliveries`) that says which tap
gets which outputs, in program order.  The runtime hands the outputs to the tap functions
once the computation is done.

The rewrite interprets the jaxpr under a staging trace, as the state discharge does: an
equation without deferrable effects is bound as it is; one with them goes to its
primitive's rule, which lives with the primitive (control flow's in `callbacks.deferral`):

  deferral_rules[p](eqn, ins, ctx) -> (outs, extras, node)

`outs` are the equation's outputs, `extras` the values handed to the host (outputs of the
enclosing scope) and `node` the plan of those values, `node.width == len(extras)`; `ctx`
(a `Context`) holds the execution's record id, for loops that send full buffers to the host
during the computation, and their buffer size.  A tap returns its operands as extras and
an `Emit`; a call inlines its body; `scan` stacks its body's extras as extra `ys` (a
`Loop`); `cond` outputs every branch's extras, zeros for the branches not taken, and its
index (a `Branch`); `while_loop` fills buffers (a `Buffered`).  A primitive with no rule
(a computation over several devices) or a rule that cannot defer (a tap in a loop's
condition, a `debug.log`) raises `CannotDefer`, and the computation keeps its taps as they
are, all of them: taps of one ordered effect are either all deferred or all immediate, so
they stay in order.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from minijax.core import caches
from minijax.core.avals import ShapedArray
from minijax.core.deliveries import Branch, Buffered, Loop, Seq
from minijax.core.effects import has_deferrable
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, _add_eqn_note
from minijax.interpreters.partial_eval import trace_to_closed_jaxpr

RECORD_ID_AVAL = ShapedArray((), np.dtype(np.int32))

class Context:
  """What the rules are handed besides an equation: `record_id`, the execution's record id
  as an int32 scalar of the current trace (None when the program takes none), for loops
  that send what overflows their buffer to the host during the computation; and
  `loop_buffer`, how many iterations such a buffer holds."""
  __slots__ = ("record_id", "loop_buffer")

  def __init__(self, record_id: Any, loop_buffer: int):
    self.record_id, self.loop_buffer = record_id, loop_buffer

  def with_record_id(self, record_id: Any) -> "Context":
    return Context(record_id, self.loop_buffer)


DeferralRule = Callable[[JaxprEqn, list, Context], tuple[list, list, Any]]
deferral_rules: dict[Any, DeferralRule] = {}


class CannotDefer(Exception):
  """A deferrable effect sits where its values cannot become outputs (no rule)."""


def eval_deferred(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], ctx: Context
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
        outs, more, node = rule(eqn, ins, ctx)
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


def trace_deferred(closed: ClosedJaxpr, ctx: Context, record_id: str | None = None
                   ) -> tuple[ClosedJaxpr, Seq]:
  """`closed` with its deferrable equations turned into extra outputs, and their plan.
  With `record_id="first"` (or `"last"`) the result takes the record id as an extra int32
  input in that place, which the rules get in their context; without, they get none."""
  plans: list = []
  n = len(closed.in_avals)

  def fun(*args):
    rid = None if record_id is None else (args[0] if record_id == "first" else args[n])
    xs = args if record_id is None else (args[1:] if record_id == "first" else args[:n])
    outs, extras, plan = eval_deferred(closed.jaxpr, closed.consts, xs,
                                       ctx.with_record_id(rid))
    plans.append(plan)
    return [*outs, *extras]

  in_avals = list(closed.in_avals)
  if record_id == "first":
    in_avals.insert(0, RECORD_ID_AVAL)
  elif record_id == "last":
    in_avals.append(RECORD_ID_AVAL)
  return trace_to_closed_jaxpr(fun, in_avals), plans[0]


def defer_taps(closed: ClosedJaxpr, loop_buffer: int = 1024
               ) -> tuple[ClosedJaxpr, Seq, bool] | None:
  """`(jaxpr, plan, takes_record_id)`: `closed` whose deferrable effects leave as outputs
  after its own, the plan to deliver them, and whether the jaxpr takes the record id as a
  last extra input; None when it has none, or when one of them cannot be deferred (then
  none is).  `loop_buffer` is how many iterations of a `while_loop` one buffer holds
  before it is sent to the host.  Cached while `closed` lives, so that a lowering and the
  compile after it see one rewrite."""
  if not isinstance(closed, ClosedJaxpr):
    raise TypeError(f"defer_taps takes a ClosedJaxpr, got {type(closed).__name__}")
  if not has_deferrable(closed.jaxpr.effects):
    return None
  return _deferred(closed, int(loop_buffer))


def _defer(closed: ClosedJaxpr, loop_buffer: int):
  ctx = Context(None, loop_buffer)
  try:
    jaxpr, plan = trace_deferred(closed, ctx, record_id="last")
    if not needs_record_id(plan):
      jaxpr, plan = trace_deferred(closed, ctx)
      return jaxpr, plan, False
    return jaxpr, plan, True
  except CannotDefer:
    return None


_deferred = caches.WeakLRU(_defer, "jit_cache_size")


def needs_record_id(plan) -> bool:
  """Whether `plan` holds a loop that sends its overflow to the host (`Buffered`)."""
  kind = type(plan)
  if kind is Buffered:
    return True
  if kind is Seq:
    return any(map(needs_record_id, plan.items))
  if kind is Loop:
    return needs_record_id(plan.body)
  if kind is Branch:
    return any(map(needs_record_id, plan.branches))
  return False


def inline_call_rule(param: str) -> DeferralRule:
  """The rule of a call-like primitive whose operands are the inputs of the ClosedJaxpr in
  `params[param]`: its body is inlined, its taps deferred with it (nothing transforms the
  program any more, so a call boundary means nothing here)."""
  def rule(eqn, ins, ctx):
    closed = eqn.params[param]
    return eval_deferred(closed.jaxpr, closed.consts, ins, ctx)
  return rule
