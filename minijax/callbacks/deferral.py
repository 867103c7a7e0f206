"""The deferral rules of control flow and calls (see `interpreters.deferral`).

`scan` runs its body's taps once per iteration, so their values leave the loop as extra
`ys`, stacked one row per iteration (a `Loop` in the plan).  A `cond` runs one branch: each
branch outputs its own taps' values and zeros in the places of the others', and the index
comes out beside them so that the host walks only the branch taken (a `Branch`).  Calls
(`jit`, `checkpoint`, `named_call`, `custom_jvp`/`custom_vjp` calls) are inlined: nothing
transforms the program after the deferral, which runs just before it is compiled.

A `while_loop` runs an unknown number of times, so its taps' values go into buffers of
`loop_buffer` rows carried by the loop, one row per iteration (a `Buffered`).  A buffer
that fills is sent to the host at once, with an `io_callback` that files it with the
execution's record (the program takes the record id as an argument), and the loop starts
the next one; nothing is lost and the order stays: the receiver delivers the buffers sent,
then the rows of the last.  The record id reaches a loop nested in a `scan` or a branch as
an operand.  The io_callback makes the program one with host calls (on the CPU it then runs
synchronously); a loop that never fills its buffer sends nothing.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.callbacks.io import io_callback
from minijax.core.avals import ShapedArray
from minijax.core.deliveries import Branch, Buffered, Loop
from minijax.core.jaxpr import eval_jaxpr
from minijax.core.effects import has_deferrable
from minijax.interpreters.deferral import (RECORD_ID_AVAL, CannotDefer, deferral_rules,
                                           inline_call_rule, trace_deferred)
from minijax.interpreters.partial_eval import trace_to_closed_jaxpr
from minijax.lax.control_flow import cond_p, scan_p, while_p
from minijax.runtime import taps


def _with_record_id(ctx) -> str | None:
  """Where a nested body takes the record id: first, when the program has one."""
  return None if ctx.record_id is None else "first"


def _scan_deferral(eqn, ins, ctx):
  params = eqn.params
  body, plan = trace_deferred(params["jaxpr"], ctx, _with_record_id(ctx))
  if ctx.record_id is not None:  # a leading const
    ins = [ctx.record_id, *ins]
    params = dict(params, num_consts=params["num_consts"] + 1)
  outs = scan_p.bind(*ins, **dict(params, jaxpr=body))
  n = len(eqn.outvars)
  return outs[:n], outs[n:], Loop(params["length"], params["reverse"], plan)


def _cond_deferral(eqn, ins, ctx):
  index, *args = ins
  n = len(eqn.outvars)
  where = _with_record_id(ctx)
  traced = [trace_deferred(branch, ctx, where) for branch in eqn.params["branches"]]
  extra_avals = [branch.out_avals[n:] for branch, _ in traced]

  def padded(i, branch):
    def fun(*xs):
      outs = eval_jaxpr(branch.jaxpr, branch.consts, *xs)
      extras = []
      for j, avals in enumerate(extra_avals):
        extras += outs[n:] if j == i else [lax.full(a.shape, 0, a.dtype) for a in avals]
      return [*outs[:n], *extras]
    return trace_to_closed_jaxpr(fun, branch.in_avals)

  branches = tuple(padded(i, branch) for i, (branch, _) in enumerate(traced))
  operands = args if ctx.record_id is None else [ctx.record_id, *args]
  outs = cond_p.bind(index, *operands, **dict(eqn.params, branches=branches))
  return outs[:n], [index, *outs[n:]], Branch([plan for _, plan in traced])


class _SendBuffer:
  """The host side of a full buffer of one `while_loop`: files its rows with the record of
  the execution that sent them (`runtime.taps.deferred.receive_sent`).  It is also the
  loop's key in the plan."""

  def __call__(self, record_id, *buffers):
    taps.deferred.receive_sent(int(record_id), self, [np.array(b) for b in buffers])

  def __repr__(self):
    return "send_deferred_buffer"


def _while_deferral(eqn, ins, ctx):
  if ctx.record_id is None:
    raise RuntimeError("a while_loop's taps are deferred in a program without a record id")
  p = eqn.params
  if has_deferrable(p["cond_jaxpr"].jaxpr.effects):  # (it runs once more than the body)
    raise CannotDefer("a tap in a while_loop's condition")
  nc, nb = p["cond_nconsts"], p["body_nconsts"]
  cond_consts, body_consts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
  n = len(init)
  body, plan = trace_deferred(p["body_jaxpr"], ctx, "first")
  extra_avals = body.out_avals[n:]
  size, send = ctx.loop_buffer, _SendBuffer()

  def new_body(rid, *args):
    consts, carry = args[:nb], args[nb:nb + n]
    count, sent, *buffers = args[nb + n:]
    outs = eval_jaxpr(body.jaxpr, body.consts, rid, *consts, *carry)
    buffers = [lax.dynamic_update_index_in_dim(b, x, count, 0, allow_negative_indices=False)
               for b, x in zip(buffers, outs[n:])]
    count = count + 1

    def flush(rid, sent, *buffers_and_count):
      io_callback(send, None, rid, *buffers_and_count[:-1])
      return [np.int32(0), sent + 1]

    def keep(rid, sent, *buffers_and_count):
      return [buffers_and_count[-1], sent]

    count, sent = lax.cond(count == size, flush, keep, rid, sent, *buffers, count)
    return [*outs[:n], count, sent, *buffers]

  def new_cond(*args):
    return eval_jaxpr(p["cond_jaxpr"].jaxpr, p["cond_jaxpr"].consts, *args[:nc + n])

  counter = RECORD_ID_AVAL
  buffer_avals = [ShapedArray((size, *a.shape), a.dtype) for a in extra_avals]
  carry_avals = [*p["body_jaxpr"].out_avals, counter, counter, *buffer_avals]
  cond_jaxpr = trace_to_closed_jaxpr(new_cond, [*p["cond_jaxpr"].in_avals[:nc], *carry_avals])
  body_jaxpr = trace_to_closed_jaxpr(
      new_body, [RECORD_ID_AVAL, *p["body_jaxpr"].in_avals[:nb], *carry_avals])
  zeros = [lax.full(a.shape, 0, a.dtype) for a in buffer_avals]
  outs = while_p.bind(*cond_consts, ctx.record_id, *body_consts, *init, np.int32(0),
                      np.int32(0), *zeros, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                      cond_nconsts=nc, body_nconsts=nb + 1)
  count, sent, *buffers = outs[n:]
  return outs[:n], [sent, count, *buffers], Buffered(size, plan, send)


def _install() -> None:
  from minijax import custom_derivatives
  from minijax.lax import call, remat
  deferral_rules[scan_p] = _scan_deferral
  deferral_rules[cond_p] = _cond_deferral
  deferral_rules[while_p] = _while_deferral
  for prim in (call.jit_p, remat.remat_p, remat.named_call_p):
    deferral_rules[prim] = inline_call_rule("jaxpr")
  for prim in (custom_derivatives.custom_jvp_call_p, custom_derivatives.custom_vjp_call_p):
    deferral_rules[prim] = inline_call_rule("call_jaxpr")


_install()
