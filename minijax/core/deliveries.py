"""Delivery plans: how deferred effects' values, laid out as outputs, reach the host in order.

A computation whose taps are *deferred* (`config.tap_delivery`) does not call the host while
it runs: every tapped value becomes an extra output, and after the computation the host
hands those outputs to the tap functions, in program order.  The plan says how.  It is a
tree built beside the rewritten jaxpr (`interpreters.deferral`) and walked by the runtime
(`runtime.taps.deferred`), each node owning `width` consecutive extra outputs of the scope
it sits in:

  Emit(deliver, width)    one tap: `deliver(arrays, device)` gets its `width` values;
  Seq(items)              the items in order, each on its own slice of the outputs;
  Loop(length, reverse, body)
                          a `scan`: the body's outputs are stacked along a new leading
                          axis, one row per iteration, walked in the order the iterations
                          ran;
  Branch(branches)        a `cond`: its first output is the branch index (clamped, as
                          `cond` clamps it), then each branch's outputs in turn; only the
                          branch taken is walked (the others' outputs are zeros);
  Buffered(size, body, key)
                          a `while_loop`: its body's outputs go into buffers of `size`
                          rows; each buffer that fills is sent to the host during the
                          computation, and the outputs are the number sent, the rows used
                          in the last buffer and that buffer.  The walk takes the sent
                          buffers, in the order they were sent, from `sent(key)`.

`walk(plan, arrays, device, report, sent)` runs a plan over host arrays (numpy, or
anything indexable along the leading axis) that `device` computed; an exception of a `deliver` goes to `report(exception, emit)` and
the walk carries on, as a receiver carries on after a failing tap function.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence


class Emit:
  """One tap: its values are `width` consecutive outputs, handed to `deliver` as a list
  with the device that computed them."""
  __slots__ = ("deliver", "width", "name")

  def __init__(self, deliver: Callable[[list, Any], Any], width: int, name: str = "tap"):
    self.deliver, self.width, self.name = deliver, width, name

  def __repr__(self):
    return f"Emit({self.name}, width={self.width})"


class Seq:
  __slots__ = ("items", "width")

  def __init__(self, items: Sequence[Any]):
    self.items = tuple(items)
    self.width = sum(item.width for item in self.items)

  def __repr__(self):
    return f"Seq({list(self.items)})"


class Loop:
  __slots__ = ("length", "reverse", "body", "width")

  def __init__(self, length: int, reverse: bool, body: Seq):
    self.length, self.reverse, self.body, self.width = length, reverse, body, body.width

  def __repr__(self):
    return f"Loop({self.length}, reverse={self.reverse}, {self.body})"


class Branch:
  __slots__ = ("branches", "width")

  def __init__(self, branches: Sequence[Seq]):
    self.branches = tuple(branches)
    self.width = 1 + sum(b.width for b in self.branches)

  def __repr__(self):
    return f"Branch({list(self.branches)})"


class Buffered:
  __slots__ = ("size", "body", "key", "width")

  def __init__(self, size: int, body: Seq, key: Any):
    self.size, self.body, self.key, self.width = size, body, key, 2 + body.width

  def __repr__(self):
    return f"Buffered({self.size}, {self.body})"


def walk(plan, arrays: Sequence[Any], device: Any,
         report: Callable[[BaseException, Emit], None],
         sent: Callable[[Any], Sequence[Any]] | None = None) -> int:
  """Delivers what `plan` describes from `arrays` (its `plan.width` outputs), in program
  order; returns how many taps were delivered."""
  kind = type(plan)
  if kind is Emit:
    try:
      plan.deliver(list(arrays), device)
    except BaseException as e:  # noqa: BLE001 - even SystemExit must not end a receiver
      report(e, plan)
    return 1
  if kind is Seq:
    done, start = 0, 0
    for item in plan.items:
      end = start + item.width
      done += walk(item, arrays[start:end], device, report, sent)
      start = end
    return done
  if kind is Loop:
    order = range(plan.length - 1, -1, -1) if plan.reverse else range(plan.length)
    return _rows(plan.body, arrays, order, device, report, sent)
  if kind is Buffered:
    done = 0
    for _ in range(int(arrays[0])):
      done += _rows(plan.body, sent(plan.key), range(plan.size), device, report, sent)
    return done + _rows(plan.body, arrays[2:], range(int(arrays[1])), device, report, sent)
  index = min(max(int(arrays[0]), 0), len(plan.branches) - 1)
  start = 1 + sum(b.width for b in plan.branches[:index])
  branch = plan.branches[index]
  return walk(branch, arrays[start:start + branch.width], device, report, sent)


def _rows(body: Seq, arrays: Sequence[Any], order, device, report, sent) -> int:
  """Walks `body` once per row `i` in `order` of `arrays` (the rows of a loop)."""
  if not all(type(item) is Emit for item in body.items):
    done = 0
    for i in order:
      done += walk(body, [a[i, ...] for a in arrays], device, report, sent)
    return done
  # The common loop body, taps only: one pass per row, no recursion.
  spans, start = [], 0
  for emit in body.items:
    spans.append((emit.deliver, start, start + emit.width, emit))
    start += emit.width
  for i in order:
    row = [a[i, ...] for a in arrays]
    for deliver, begin, end, emit in spans:
      try:
        deliver(row[begin:end], device)
      except BaseException as e:  # noqa: BLE001
        report(e, emit)
  return len(order) * len(spans)
