"""Control flow over refs: discharged as the construct is traced.

A loop body or a branch that uses refs of the enclosing function (it closes over them, or
they are operands) is traced to a jaxpr with ref inputs.  Rather than giving every
control-flow primitive, and each of its transformation rules, a way to carry refs, the
construct is built pure at once: its jaxprs are discharged (`discharge_state`), each ref's
value is read before the construct (`r[...]`), threaded through it (a loop carry, an extra
branch output) and written back after it.  So `scan`, `while`, `cond` and `jit`
equations only ever hold values, and autodiff, vmap and lowering treat them as they treat
any other; refs created *inside* a body are discharged with it.

Two uses of one ref are one value: a `while_loop` whose condition reads a ref that its
body writes carries it once, so the condition sees every write (JAX 0.10.2 gives the
condition a stale copy).  The reads and writes around the construct become plain dataflow
when the enclosing program is discharged, so the ref's buffer is still updated in place.
"""
from __future__ import annotations

from typing import Callable, Sequence

from minijax.core.effects import AccumEffect, WriteEffect
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr
from minijax.core.state import AbstractRef
from minijax.interpreters.discharge import discharge_state
from minijax.interpreters.partial_eval import trace_to_closed_jaxpr
from minijax.lax import state


def _read(ref):
  return state.get_p.bind(ref, indexer=state._full_indexer(ref.aval.shape))


def _write(ref, value) -> None:
  state.swap_p.bind(ref, value, indexer=state._full_indexer(ref.aval.shape))


def ref_positions(avals) -> list[int]:
  return [k for k, a in enumerate(avals) if type(a) is AbstractRef]


def _merge_shared_refs(jaxprs, operands, positions):
  """When one ref is several operands (both branches of a cond close over it), the jaxprs
  re-traced to take it once, and the operands without repeats."""
  first: dict[int, int] = {}
  for k in positions:
    first.setdefault(id(operands[k]), k)
  keep = [k for k in range(len(operands)) if k not in positions or first[id(operands[k])] == k]
  if len(keep) == len(operands):
    return jaxprs, operands
  where = {k: i for i, k in enumerate(keep)}
  source = [where[first[id(operands[k])]] if k in positions else where[k]
            for k in range(len(operands))]
  merged = []
  for j in jaxprs:
    fun = lambda *xs, j=j: eval_jaxpr(j.jaxpr, j.consts, *[xs[s] for s in source])  # noqa: E731
    merged.append(trace_to_closed_jaxpr(fun, [j.in_avals[k] for k in keep]))
  return merged, [operands[k] for k in keep]


def call_with_refs(jaxprs: Sequence[ClosedJaxpr], operands: Sequence, what: str,
                   bind: Callable[[list, list], list]) -> list:
  """Applies a call-like construct over `jaxprs` (one input signature, the types of
  `operands`) whose inputs may be refs: `bind(pure_jaxprs, value_operands)` runs it on
  the discharged jaxprs, and the refs' final values are written back."""
  positions = ref_positions(jaxprs[0].in_avals)
  jaxprs, operands = _merge_shared_refs(jaxprs, list(operands), positions)
  positions = ref_positions(jaxprs[0].in_avals)
  pure = [discharge_state(j) for j in jaxprs]
  values = list(operands)
  for k in positions:
    values[k] = _read(operands[k])
  outs = bind(pure, values)
  n = len(outs) - len(positions)
  for k, v in zip(positions, outs[n:]):
    _write(operands[k], v)
  return list(outs[:n])


def scan_with_refs(scan: Callable, jaxpr: ClosedJaxpr, consts, init_flat, x_flat, *, length,
                   reverse: bool, num_carry: int):
  """`scan` of a body (`jaxpr`, taking `[*consts, *carry, *xs]`) that uses refs: the refs
  among `consts` become leading carries.  Returns `(carry_out, ys)` (flat)."""
  positions = ref_positions(jaxpr.in_avals[:len(consts)])
  if ref_positions(jaxpr.in_avals[len(consts):]):
    raise ValueError("a ref cannot be a carry of a scan: close over it instead")
  pure = discharge_state(jaxpr)
  n_refs = len(positions)

  def body(carry, xs):
    ref_vals, carry = carry
    cs = list(consts)
    for k, v in zip(positions, ref_vals):
      cs[k] = v
    outs = eval_jaxpr(pure.jaxpr, pure.consts, *cs, *carry, *(xs or ()))
    n = len(outs) - n_refs
    return (outs[n:], outs[:num_carry]), outs[num_carry:n]

  ref_vals = [_read(consts[k]) for k in positions]
  (ref_vals, carry_out), ys = scan(body, (ref_vals, list(init_flat)),
                                   list(x_flat) if x_flat else None, length=length,
                                   reverse=reverse)
  for k, v in zip(positions, ref_vals):
    _write(consts[k], v)
  return list(carry_out), list(ys)


def while_with_refs(while_loop: Callable, cond_jaxpr: ClosedJaxpr, cond_consts,
                    body_jaxpr: ClosedJaxpr, body_consts, init_flat) -> list:
  """`while_loop` whose condition or body uses refs: each distinct ref (the condition and
  the body may share one) is one leading carry."""
  if any(isinstance(e, (WriteEffect, AccumEffect)) for e in cond_jaxpr.effects):
    raise ValueError("a while_loop condition may read refs but not write them: move the "
                     "write into the body")
  refs, index = [], {}
  for c in (*cond_consts, *body_consts):
    if type(getattr(c, "aval", None)) is AbstractRef and id(c) not in index:
      index[id(c)] = len(refs)
      refs.append(c)
  pure_cond, pure_body = discharge_state(cond_jaxpr), discharge_state(body_jaxpr)
  n_carry = len(init_flat)

  def fill(consts, ref_vals):
    return [ref_vals[index[id(c)]] if id(c) in index else c for c in consts]

  def cond(carry):
    ref_vals, carry = carry
    return eval_jaxpr(pure_cond.jaxpr, pure_cond.consts, *fill(cond_consts, ref_vals),
                      *carry)[0]

  def body(carry):
    ref_vals, carry = carry
    outs = eval_jaxpr(pure_body.jaxpr, pure_body.consts, *fill(body_consts, ref_vals), *carry)
    new = list(ref_vals)
    body_refs = [c for c in body_consts if id(c) in index]
    for c, v in zip(body_refs, outs[n_carry:]):
      new[index[id(c)]] = v
    return new, outs[:n_carry]

  ref_vals = [_read(r) for r in refs]
  ref_vals, carry_out = while_loop(cond, body, (ref_vals, list(init_flat)))
  for r, v in zip(refs, ref_vals):
    _write(r, v)
  return list(carry_out)


def scan_over_refs(scan: Callable, f: Callable, init, x_flat, x_tree, *, length: int,
                   reverse: bool):
  """`scan(f, init, xs)` where some leaves of `xs` are refs: the body gets, for each, a
  view of the current row (`x[...]` reads it, `x[...] = v` writes it in place) instead of
  a sliced value.  The refs are closed over; a counter picks the row."""
  import numpy as np
  from minijax.lax import elementwise
  is_ref = [type(getattr(x, "aval", None)) is AbstractRef for x in x_flat]
  values = [x for x, r in zip(x_flat, is_ref) if not r]

  def body(carry, xs):
    i, carry = carry
    row = elementwise.sub(np.int32(length - 1), i) if reverse else i
    it = iter(xs or ())
    leaves = [state.RefView(x, row) if r else next(it) for x, r in zip(x_flat, is_ref)]
    carry, y = f(carry, x_tree.unflatten(leaves))
    return (elementwise.add(i, np.int32(1)), carry), y

  (_, carry), ys = scan(body, (np.int32(0), init), values or None, length=length,
                        reverse=reverse)
  return carry, ys
