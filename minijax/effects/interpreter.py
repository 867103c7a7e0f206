"""The trace-time interpreter behind every handler: `HandlerTrace` and its rules for bodies.

A handler replaces some equations of a program (the `sow`s of one tag; the operations of
one effect) by ordinary code, while the program is traced.  `HandlerTrace` is a trace with
no tracers of its own: every primitive bound while it is current is bound again on its
parent, except those its `Context` selects, which the context processes itself (on the
parent trace, so what it computes is ordinary staged or eager code).  What a context adds
to a computation travels in three ways, the same three in which a state discharge turns
effects into pure code:

  state     values threaded through the computation (a handler's state): each handled
            operation reads and replaces them, in program order;
  emitted   values the computation hands out (the reaps of a harvest), each with a key
            and a mode: `append` (one per iteration, stacked by `scan`), `clobber` (the
            last one wins) or `strict` (exactly one);
  slices    values handed in, one slice per iteration of a `scan` (planted `append` sows).

Primitives with bodies (`jit`, `named_call`, `checkpoint`, `scan`, `while`, `cond`) that
contain selected equations are rebuilt: the body is traced again under a *child* context
(`trace_body`) whose state comes in as extra inputs and goes out as extra outputs, whose
emitted values become extra outputs, and whose slices become extra inputs; the rule then
binds the primitive with the new body on the parent, threading the state as loop carries
(or operands and results), stacking appended values as `scan` outputs and carrying
clobbered ones (initialized to zeros), and hands the emitted values to the parent context
(`Context.absorb`).  Bodies without selected equations are bound unchanged, so the
compiled programs of ordinary functions are reused.  A checkpoint's recomputation in the
backward pass replays the forward pass (handled again, its state and emitted values
dropped); a `custom_jvp`/`custom_vjp` function is rebound with its body handled, keeping
its rule.  Any other primitive whose params hold a jaxpr with selected equations is an
error that names the primitive.

State discharge (Refs into pure code) fits the same mould: a context whose state is the
Refs' values and whose `get`/`swap` read and replace it, the rules above threading it
through loops and calls.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Sequence

from minijax import lax
from minijax.core import caches
from minijax.core.avals import get_aval
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Var, eval_jaxpr, hoist_consts
from minijax.core.trace import Trace, new_trace, set_current_trace
from minijax.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from minijax.interpreters.partial_eval import DynamicJaxprTrace
from minijax.lax.call import jit_p
from minijax.lax.control_flow import common
from minijax.lax.remat import named_call_p, remat_p
from minijax.staging import cache_keys

Selector = Callable[[Any, dict], bool]


@dataclasses.dataclass
class Emitted:
  """A value a body hands out: its key (a name), mode, tree and leaves."""
  key: Any
  mode: str
  tree: Any
  leaves: list

  @property
  def avals(self):
    return [get_aval(x).strip_weak_type() for x in self.leaves]


class Context:
  """What a `HandlerTrace` asks of a handler (subclasses override what they use).

  `selector(primitive, params)` says which equations the context processes (hashable, so
  that whether a jaxpr holds any is cached); `process(primitive, args, params)` returns
  their results.  `state` is the list of values threaded through the computation;
  `emitted` the values handed out so far, by key.  `child(construct, new_slice)` makes the
  context for a body of `construct` ("jit", "scan", "while_loop", "cond", or "recompute":
  a checkpoint's recomputation, replaying the forward pass); `new_slice(aval)`
  (in a `scan` body only, else None) makes an extra per-iteration input.  `absorb`
  receives a body's emitted values, as its parent's results."""
  selector: Selector

  def __init__(self):
    self.state: list = []
    self.emitted: dict[Any, Emitted] = {}

  def process(self, primitive, args, params):
    raise NotImplementedError

  def child(self, construct: str, new_slice) -> "Context":
    raise NotImplementedError

  def absorb(self, emitted: Emitted) -> None:
    raise NotImplementedError(f"{type(self).__name__} emits no values")

  def describe(self) -> str:
    return type(self).__name__


class HandlerTrace(Trace):
  """Binds every primitive on its parent, except those the context selects (see the module
  docstring).  It has no tracers: the values inside are its parent's."""

  def __init__(self, context: Context):
    super().__init__()
    self.context = context

  def process_primitive(self, primitive, args, params):
    context = self.context
    with set_current_trace(self.parent):
      if context.selector(primitive, params):
        return context.process(primitive, args, params)
      bodies = [j for j in _jaxprs_of(params) if contains(j, context.selector)]
      if not bodies:
        return primitive.bind(*args, **params)
      rule = body_rules.get(primitive)
      if rule is None:
        raise NotImplementedError(
            f"{context.describe()} cannot handle what happens inside '{primitive}': its body "
            f"holds {_first_selected(bodies, context.selector)}. Apply the handler inside "
            f"the function given to '{primitive}' instead.")
      return rule(context, list(args), **params)


def run(context: Context, fun: Callable, *args):
  """`fun(*args)` with `context` handling what it selects."""
  with new_trace(HandlerTrace(context)):
    return fun(*args)


# ----------------------------------------------------------------------------- finding equations

def _jaxprs_of(params: dict) -> list:
  out = []
  for value in params.values():
    if isinstance(value, (ClosedJaxpr, Jaxpr)):
      out.append(value)
    elif isinstance(value, tuple) and value and isinstance(value[0], (ClosedJaxpr, Jaxpr)):
      out.extend(value)
  return out


def _contains(jaxpr, selector) -> bool:
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
  return any(selector(e.primitive, e.params) or any(contains(j, selector)
                                                     for j in _jaxprs_of(e.params))
             for e in jaxpr.eqns)


_contains_cache = caches.WeakLRU(_contains, "transform_cache_size")


def contains(jaxpr, selector: Selector) -> bool:
  """Whether `jaxpr` (or a body inside it) has an equation `selector` selects."""
  if isinstance(jaxpr, ClosedJaxpr):
    return _contains_cache(jaxpr, selector)
  return _contains(jaxpr, selector)


def selected_eqns(jaxpr, selector: Selector):
  """The selected equations of `jaxpr` and of the bodies inside it, in program order."""
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
  for eqn in jaxpr.eqns:
    if selector(eqn.primitive, eqn.params):
      yield eqn
    for inner in _jaxprs_of(eqn.params):
      yield from selected_eqns(inner, selector)


def _first_selected(jaxprs, selector) -> str:
  eqn = next(e for j in jaxprs for e in selected_eqns(j, selector))
  shown = ", ".join(f"{k}={v!r}" for k, v in eqn.params.items()
                    if isinstance(v, (str, int, tuple)) and k != "tree")
  return f"'{eqn.primitive}' [{shown}]"


# ----------------------------------------------------------------------------- bodies

@dataclasses.dataclass
class Body:
  """A body traced under a child context.  `closed` is const-free; its inputs are
  `[*consts, *ins, *state, *slices]` and its outputs `[*outs, *state, *emitted leaves]`."""
  raw: ClosedJaxpr        # with its constants
  num_outs: int
  num_state: int
  slices: list            # the outer values the slices are cut from (scan)
  emitted: list           # Emitted, with the leaves' avals
  child: Context

  def __post_init__(self):
    self.closed, self.consts = hoist_consts(self.raw)


def trace_body(context: Context, closed: ClosedJaxpr, construct: str,
               state_avals: Sequence[Any], slicing: bool = False) -> Body:
  """Traces `closed` again under `context.child(construct, ...)` (see `Body`)."""
  trace = DynamicJaxprTrace()
  slices: list = []

  def new_slice(value, aval):
    slices.append(value)
    return trace.new_arg(aval)

  child = context.child(construct, new_slice if slicing else None)
  with new_trace(trace):
    ins = [trace.new_arg(a) for a in closed.in_avals]
    child.state = [trace.new_arg(a) for a in state_avals]
    with new_trace(HandlerTrace(child)):
      outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
    state_out = list(child.state)
    _check_state(context, construct, state_avals, state_out)
    emitted = list(child.emitted.values())
    leaves = [x for e in emitted for x in e.leaves]
    jaxpr, consts = trace.to_jaxpr([*outs, *state_out, *leaves])
  emitted = [Emitted(e.key, e.mode, e.tree, e.avals) for e in emitted]
  return Body(ClosedJaxpr(jaxpr, consts), len(outs), len(state_out), slices, emitted, child)


def _check_state(context, construct, avals, values) -> None:
  got = [get_aval(v) for v in values]
  if len(got) != len(avals) or not all(map(common.same_type, got, avals)):
    raise TypeError(
        f"the state of {context.describe()} must keep its types through {construct}: it "
        f"enters as {[a.str_short() for a in avals]} and leaves as "
        f"{[a.str_short() for a in got]}")


def _state_avals(context) -> list:
  return [get_aval(x).strip_weak_type() for x in context.state]


def _zeros(avals) -> list:
  return [lax.full(a.shape, 0, a.dtype) for a in avals]


def _finish(context, body: Body, state, emitted_values) -> None:
  """Hands a bound body's state and emitted values to the parent context."""
  context.state = list(state)
  it = iter(emitted_values)
  for e in body.emitted:
    context.absorb(Emitted(e.key, e.mode, e.tree, [next(it) for _ in e.leaves]))


def _split(values, *sizes):
  return common.split_sizes(values, [*sizes, len(values) - sum(sizes)])


# ----------------------------------------------------------------------------- rules

BodyRule = Callable[..., list]
body_rules: dict[Any, BodyRule] = {}


def _call_rule(primitive):
  """jit, named_call, checkpoint: the body's state and emitted values become extra
  operands and results of the call.  The recomputation of a checkpoint in the backward
  pass (`differentiated`) replays what the forward pass did: its context handles the body
  again (with the same plants, say), but its state and emitted values are dropped."""
  def rule(context, args, *, jaxpr, **params):
    state = list(context.state)
    replay = params.get("differentiated", False)  # a checkpoint's recomputation
    body = trace_body(context, jaxpr, "recompute" if replay else "jit", _state_avals(context))
    operands = [*body.consts, *args, *state]
    if "donated_invars" in params:
      params = dict(params, donated_invars=(False,) * len(operands))
    if isinstance(params.get("prevent_cse"), tuple):  # a checkpoint's flags per operand
      params = dict(params, prevent_cse=(*(False,) * len(body.consts), *params["prevent_cse"],
                                         *(False,) * len(state)))
    outs = primitive.bind(*operands, jaxpr=canonical(body.closed), **params)
    outs, state, emitted = _split(outs, body.num_outs, body.num_state)
    if not replay:  # what the recomputation does again was handled in the forward pass
      _finish(context, body, state, emitted)
    return outs
  return rule


_canonical: collections.OrderedDict = collections.OrderedDict()
_MAX_CANONICAL = 256


def canonical(closed: ClosedJaxpr) -> ClosedJaxpr:
  """The body bound before that has the same structure as `closed` (else `closed`): a call
  body is rebuilt at every eager call of a handled function, and its compiled program is
  cached per jaxpr object, so equal bodies must be one object to compile once."""
  key = cache_keys.fingerprint(closed)
  found = _canonical.get(key)
  if found is not None:
    _canonical.move_to_end(key)
    return found
  _canonical[key] = closed
  while len(_canonical) > _MAX_CANONICAL:
    _canonical.popitem(last=False)
  return closed


for _p in (jit_p, named_call_p, remat_p):
  body_rules[_p] = _call_rule(_p)


def _custom_rule(primitive):
  """custom_jvp, custom_vjp: the function is rebound with its body handled (so its custom
  rule still applies, to the handled function); what the body emits is computed beside
  it, by the handled body as ordinary code (XLA merges the two)."""
  def rule(context, args, *, call_jaxpr, num_consts, **params):
    if context.state:
      raise NotImplementedError(
          f"{context.describe()} has state, which cannot be threaded through the "
          f"'{primitive}' of {params.get('name')}: handle the effect inside the function")
    body = trace_body(context, call_jaxpr, "jit", [])
    j = body.closed.jaxpr
    pure = ClosedJaxpr(Jaxpr([], j.invars, j.outvars[:body.num_outs], j.eqns), [])
    outs = primitive.bind(*body.consts, *args, call_jaxpr=pure,
                          num_consts=len(body.consts) + num_consts, **params)
    if body.emitted:
      emitted = eval_jaxpr(j, [], *body.consts, *args)[body.num_outs:]
      _finish(context, body, [], emitted)
    return outs
  return rule


body_rules[custom_jvp_call_p] = _custom_rule(custom_jvp_call_p)
body_rules[custom_vjp_call_p] = _custom_rule(custom_vjp_call_p)


def _scan_rule(context, args, *, jaxpr, num_consts, num_carry, length, reverse,
               unroll=1):
  """State and `clobber` values become carries (the latter starting at zeros), `append`
  values stacked outputs, and slices extra `xs`."""
  state = list(context.state)
  body = trace_body(context, jaxpr, "scan", _state_avals(context), slicing=True)
  clobber = [e.mode == "clobber" for e in body.emitted for _ in e.leaves]
  clobber_avals = [a for e in body.emitted for a in e.leaves if e.mode == "clobber"]
  j = body.closed.jaxpr
  nh, nin, ns = len(body.consts), len(jaxpr.in_avals), body.num_state
  consts_v, carry_v, xs_v, state_v, slices_v = common.split_sizes(
      j.invars, [nh + num_consts, num_carry, nin - num_consts - num_carry, ns,
                 len(body.slices)])
  outs = j.outvars
  carry_o, ys_o, state_o, emitted_o = _split(outs, num_carry, body.num_outs - num_carry, ns)
  clobber_o = [v for v, c in zip(emitted_o, clobber) if c]
  append_o = [v for v, c in zip(emitted_o, clobber) if not c]
  clobber_v = [Var(a) for a in clobber_avals]
  new = Jaxpr([], [*consts_v, *carry_v, *state_v, *clobber_v, *xs_v, *slices_v],
              [*carry_o, *state_o, *clobber_o, *ys_o, *append_o], j.eqns, j.effects)
  consts, carry, xs = _split(args, num_consts, num_carry)
  operands = [*body.consts, *consts, *carry, *state, *_zeros([v.aval for v in clobber_v]),
              *xs, *body.slices]
  outs = lax.scan_p.bind(*operands, jaxpr=ClosedJaxpr(new, []),
                         num_consts=nh + num_consts,
                         num_carry=num_carry + ns + len(clobber_v), length=length,
                         reverse=reverse, unroll=unroll)
  carry, state, clobbered, ys, appended = _split(outs, num_carry, ns, len(clobber_v),
                                                 len(ys_o))
  clobbered, appended = iter(clobbered), iter(appended)
  _finish(context, body, state,
          [next(clobbered) if c else next(appended) for c in clobber])
  return [*carry, *ys]


body_rules[lax.scan_p] = _scan_rule


def _while_rule(context, args, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """State and (`clobber`) emitted values become extra carries, which the condition
  ignores."""
  if contains(cond_jaxpr, context.selector):
    raise NotImplementedError(
        f"{context.describe()} cannot handle "
        f"{_first_selected([cond_jaxpr], context.selector)} in the cond_fun of a "
        "while_loop; move it into body_fun")
  state = list(context.state)
  body = trace_body(context, body_jaxpr, "while_loop", _state_avals(context))
  extra = [*_state_avals(context), *(a for e in body.emitted for a in e.leaves)]
  new_cond = common.prepend_unused_invars(cond_jaxpr, extra, len(cond_jaxpr.in_avals))
  nh = len(body.consts)
  body_closed = body.closed
  j = body_closed.jaxpr
  new_body = ClosedJaxpr(Jaxpr([], [*j.invars, *(Var(a) for a in extra[len(state):])],
                               j.outvars, j.eqns, j.effects), [])
  cconsts, bconsts, init = _split(args, cond_nconsts, body_nconsts)
  outs = lax.while_p.bind(*cconsts, *body.consts, *bconsts, *init, *state,
                          *_zeros(extra[len(state):]), cond_jaxpr=new_cond,
                          body_jaxpr=new_body, cond_nconsts=cond_nconsts,
                          body_nconsts=nh + body_nconsts)
  carry, state, emitted = _split(outs, len(init), len(state))
  _finish(context, body, state, emitted)
  return carry


body_rules[lax.while_p] = _while_rule


def _cond_rule(context, args, *, branches):
  """Each branch takes and returns the state and returns the same emitted values (the
  same keys, modes and types in every branch)."""
  index, ops = args[0], args[1:]
  state = list(context.state)
  avals = _state_avals(context)
  bodies = [trace_body(context, b, "cond", avals) for b in branches]
  raws = [bodies[0].raw]
  for body in bodies[1:]:
    check_branches(context, bodies[0], body)
    raws.append(common.reorder(body.raw, out_order=_emitted_order(bodies[0], body)))
  joined, consts = common.join_consts(raws)
  outs = lax.cond_p.bind(index, *consts, *ops, *state, branches=tuple(joined))
  outs, state, emitted = _split(outs, bodies[0].num_outs, len(state))
  _finish(context, bodies[0], state, emitted)
  return outs


def _emitted_order(first: Body, other: Body) -> list[int]:
  """The output order of `other` that lists its emitted values in `first`'s order."""
  start = other.num_outs + other.num_state
  where, i = {}, start
  for e in other.emitted:
    where[e.key] = list(range(i, i + len(e.leaves)))
    i += len(e.leaves)
  return [*range(start), *(k for e in first.emitted for k in where[e.key])]


def check_branches(context, first: Body, other: Body) -> None:
  """Raises Oryx's errors when two branches of a `cond` do not emit the same values."""
  hook = getattr(context, "check_branches", None)
  if hook is not None:
    hook(first.child, other.child)
  a = {e.key: e for e in first.emitted}
  b = {e.key: e for e in other.emitted}
  if len(a) != len(b):
    raise ValueError("Mismatching number of `sow`s between branches.")
  for key, e in b.items():
    if key not in a:
      raise ValueError(f"Missing sow in branch: '{key}'.")
    if [x.shape for x in e.leaves] != [x.shape for x in a[key].leaves]:
      raise ValueError(f"Mismatched shape between branches: '{key}'.")
    if [x.dtype for x in e.leaves] != [x.dtype for x in a[key].leaves]:
      raise ValueError(f"Mismatched dtype between branches: '{key}'.")
    if e.mode != a[key].mode:
      raise ValueError(f"Mismatched mode between branches: '{key}'.")


body_rules[lax.cond_p] = _cond_rule
