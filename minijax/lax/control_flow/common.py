"""What every control-flow primitive shares: tracing user functions to jaxprs, type checks
with JAX-like messages, and lowering a jaxpr into an MHLO region with tokens threaded.

User functions are traced with `trace_to_jaxpr_dynamic` on flat avals.  The constants a
function closes over (tracers of an enclosing transformation, arrays) are hoisted into
leading inputs of the jaxpr, so every jaxpr stored in a control-flow param is a
`ClosedJaxpr` without constants, and the values travel as ordinary operands of the
equation, visible to every transformation.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax import api_util
from minijax.tree_util import internal as tree_util
from minijax.config import config, jit_key_state
from minijax.core.trace import Tracer, is_eval_context
from minijax.core import axes, dtypes, effects as effects_lib
from minijax.core.avals import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, JaxprTypeError, Var, hoist_consts
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet


def check_param(primitive: str, name: str, value, required: str, ok: bool) -> None:
  """A param of a control-flow equation has the wrong type (a jaxpr built or edited by
  hand): JAX's `JaxprTypeError`, naming the primitive, the param and what it needs."""
  if not ok:
    raise JaxprTypeError(f"invalid {primitive} param {name} of type {type(value).__name__}, "
                         f"{required} required: {value}")


def trace_fun(fun: Callable, in_tree, in_avals: Sequence[Any], name: str,
              traced_for: str | None = None) -> tuple[ClosedJaxpr, list[Any], Any]:
  """Traces `fun(*unflatten(in_tree, args))`; returns a const-free ClosedJaxpr whose leading
  inputs are the hoisted constants, the constants, and the output tree."""
  closed, out_tree = trace_fun_closed(fun, in_tree, in_avals, name, traced_for)
  closed, consts = hoist_consts(closed)
  return closed, consts, out_tree


def trace_fun_closed(fun: Callable, in_tree, in_avals: Sequence[Any], name: str,
                     traced_for: str | None = None):
  """Like `trace_fun`, keeping the constants in a ClosedJaxpr: `(closed, out_tree)`.  With
  `traced_for` (`"scan"`, `"cond"`, `"while_body"`...) the jaxpr's `debug_info` names the
  function, its arguments and its results.

  Outside every transformation the result is cached, as JAX caches the traces of
  control-flow bodies: keyed weakly on `fun`, on the input tree and avals, the flags that
  key jit's caches and the axis environment (a body that closes over no tracer depends on
  nothing else that JAX would not also keep)."""
  eager = is_eval_context()
  if eager:
    key = (in_tree, tuple(in_avals), jit_key_state(), axes.current_frames())
    try:
      hit = _body_traces.get(fun, {}).get(key)
    except TypeError:  # not weakly referenceable, or unhashable
      hit, eager = None, False
    if hit is not None:
      return hit
  from minijax.interpreters.partial_eval import InvalidOutputError, trace_to_jaxpr_dynamic
  flat_fun, out_tree = tree_util.flatten_fun_nokwargs(fun, in_tree)
  debug = (None if traced_for is None else
           api_util.debug_info(traced_for, fun, in_tree.unflatten(in_avals), {}))
  try:
    jaxpr, consts = trace_to_jaxpr_dynamic(flat_fun, list(in_avals), debug)
  except InvalidOutputError as e:
    raise e.named(debug, out_tree(), fun, name) from None
  except Exception as e:
    e.add_note(f"while tracing {name}")
    raise
  if debug is not None:
    jaxpr.debug_info = debug.set_result_paths(out_tree())
  result = ClosedJaxpr(jaxpr, consts), out_tree()
  if eager and not any(isinstance(c, Tracer) for c in consts):
    entries = _body_traces.setdefault(fun, {})
    if len(entries) >= config.jit_cache_size:
      entries.clear()
    entries[key] = result
  return result


# fun -> {(in_tree, avals, flags): (closed jaxpr, out tree)}: traces of eager bodies.
_body_traces: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()


def prepend_unused_invars(closed: ClosedJaxpr, avals: Sequence[Any], at: int = 0) -> ClosedJaxpr:
  """`closed` taking extra, unused inputs of types `avals` at position `at`."""
  jaxpr = closed.jaxpr
  new = [Var(a) for a in avals]
  invars = [*jaxpr.invars[:at], *new, *jaxpr.invars[at:]]
  return ClosedJaxpr(jaxpr.replace(invars=invars), closed.consts)


def jaxprs_effects(construct: str, *jaxprs, operands=None) -> frozenset:
  """The effects of a control-flow equation over `jaxprs`, checked against each effect's
  `allowed_in_control_flow` policy (`construct` names the function, for the error).
  `operands[k][i]`, when given, is the equation's operand that input i of `jaxprs[k]` is
  (by default the same position): effects on inputs (`InputEffect`) are renumbered so."""
  if operands is None:
    effects = effects_lib.union(j.effects for j in jaxprs)
  else:
    effects = effects_lib.union(
        frozenset(e.with_index(where[e.input_index]) if isinstance(e, effects_lib.InputEffect)
                  else e for e in j.effects) for j, where in zip(jaxprs, operands))
  if effects:
    effects_lib.check_allowed(effects, "control_flow", construct)
  return effects


# ----------------------------------------------------------------------------- type checks

def same_type(a, b) -> bool:
  """Equal shapes and dtypes; weak types may differ (the outputs of `cond` take branch 0's,
  those of loops the body's, as in JAX)."""
  return a.shape == b.shape and a.dtype == b.dtype


def promote_weak_carry(vals: Sequence[Any], avals: Sequence[ShapedArray],
                       out_avals: Sequence[ShapedArray]) -> tuple[list[Any], bool]:
  """JAX's rule for a weakly typed initial carry (a Python scalar, say) that the body returns
  with another dtype: the carry becomes the two's result type, and the caller traces the body
  again (only then, since the body may have Python side effects)."""
  from minijax.lax.misc import convert_element_type
  out, changed = list(vals), False
  for k, (a, o) in enumerate(zip(avals, out_avals)):
    if (getattr(a, "weak_type", False) and isinstance(o, ShapedArray)
        and a.shape == o.shape and a.dtype != o.dtype):
      dtype, weak = dtypes.result_type((a.dtype, True), (o.dtype, o.weak_type))
      out[k], changed = convert_element_type(vals[k], dtype, weak_type=weak), True
  return out, changed


def strong(avals) -> list[ShapedArray]:
  return [a.strip_weak_type() for a in avals]


# ----------------------------------------------------------------------------- lowering helpers

def add_block(region: ir.Region, types: Sequence[ir.Type]) -> ir.Block:
  return region.blocks.append(*types)


def ir_types(avals) -> list[ir.Type]:
  return [mlir.aval_to_ir_type(a) for a in avals]


def scalar_i32(value: int) -> ir.Value:
  return mlir.ir_constant(np.int32(value))


def compare(lhs: ir.Value, rhs: ir.Value, direction: str, kind: str = "SIGNED") -> ir.Value:
  return mhlo.CompareOp(lhs, rhs, mhlo.ComparisonDirectionAttr.get(direction),
                        compare_type=mhlo.ComparisonTypeAttr.get(kind)).result


def tokens_like(tokens: TokenSet, values: Sequence[ir.Value]) -> TokenSet:
  return TokenSet.from_lists(tokens.effects(), list(values))


# ----------------------------------------------------------------------------- jaxpr surgery

def reorder(closed: ClosedJaxpr, in_order: Sequence[int] | None = None,
            out_order: Sequence[int] | None = None) -> ClosedJaxpr:
  """`closed` with its inputs/outputs permuted: new input k is old input `in_order[k]`."""
  j = closed.jaxpr
  invars = j.invars if in_order is None else [j.invars[i] for i in in_order]
  outvars = j.outvars if out_order is None else [j.outvars[i] for i in out_order]
  return ClosedJaxpr(j.replace(invars=invars, outvars=outvars), closed.consts)


def groups_order(sizes: Sequence[int], order: Sequence[int]) -> list[int]:
  """Index permutation that lists consecutive groups of `sizes` in the group order `order`."""
  starts = np.cumsum([0, *sizes]).tolist()
  return [i for g in order for i in range(starts[g], starts[g] + sizes[g])]


def join_consts(jaxprs: Sequence[ClosedJaxpr]) -> tuple[list[ClosedJaxpr], list[Any]]:
  """Hoists each jaxpr's constants and joins them: every result takes all the constants as
  leading inputs, ignoring those it does not use.  A constant several jaxprs close over (the
  same object) is passed once.  Returns the jaxprs and the constants."""
  hoisted = [hoist_consts(j) for j in jaxprs]
  slot_of: dict = {}  # (id of the constant, its occurrence within one jaxpr) -> slot
  consts, avals, slots = [], [], []
  for j, cs in hoisted:
    seen: dict = {}
    mine = []
    for c, v in zip(cs, j.jaxpr.invars):
      key = (id(c), seen.setdefault(id(c), 0))
      seen[id(c)] += 1
      if key not in slot_of:
        slot_of[key] = len(consts)
        consts.append(c)
        avals.append(v.aval)
      mine.append(slot_of[key])
    slots.append(mine)
  out = []
  for (j, cs), mine in zip(hoisted, slots):
    jaxpr = j.jaxpr
    own = dict(zip(mine, jaxpr.invars[:len(cs)]))
    invars = [own[k] if k in own else Var(a) for k, a in enumerate(avals)]
    out.append(ClosedJaxpr(jaxpr.replace(invars=[*invars, *jaxpr.invars[len(cs):]]),
                           j.consts))
  return out, consts


def nonzero_tangent(t) -> bool:
  from minijax.interpreters import ad
  return type(t) is not ad.Zero and ad.get_aval(t).dtype != np.dtype(
      [("float0", np.void, 0)])


def merge(flags: Sequence[bool], when_true: Sequence[Any], when_false: Sequence[Any]) -> list:
  t, f = iter(when_true), iter(when_false)
  out = [next(t) if flag else next(f) for flag in flags]
  return out


def split_sizes(values: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
  values, out, start = list(values), [], 0
  for n in sizes:
    out.append(values[start:start + n])
    start += n
  assert start == len(values), (sizes, len(values))
  return out


def batch_jaxpr_const_free(closed: ClosedJaxpr, size: int, batched, instantiate):
  """`batching.batch_jaxpr` with the result's constants hoisted: `(jaxpr, consts, out_b)`."""
  from minijax.interpreters import batching
  jaxpr, out_batched = batching.batch_jaxpr(closed, size, list(batched), instantiate)
  jaxpr, consts = hoist_consts(jaxpr)
  return jaxpr, consts, out_batched


def moved(vals, dims, batched, size: int, to: int = 0) -> list:
  """Each value with its batch dim at `to` if `batched` says so (broadcast when needed)."""
  from minijax.interpreters import batching
  return [batching.matchaxis(v, d, to, size) if b else v
          for v, d, b in zip(vals, dims, batched)]


def bcast_lanes(pred, shape):
  """A per-lane predicate `bool[B]` broadcast against a value of `shape` (batch first)."""
  from minijax import lax
  return pred if tuple(shape) == tuple(pred.shape) else lax.broadcast_in_dim(
      pred, tuple(shape), (0,))
