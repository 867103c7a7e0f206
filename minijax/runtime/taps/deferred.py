"""Deferred taps at run time: a computation's tapped values, delivered after it ends.

`tap_delivery` (flag `MINIJAX_TAP_DELIVERY`, or `with minijax.tap_delivery(...)`) chooses
how taps leave a computation on a device:

* `immediate`: during the computation, through the tap custom call (the device's native
  FFI handler on the CPU, or jaxlib's Python callback); a tap function runs while the
  computation is still going;
* `deferred`: the tapped values become outputs of the computation (`interpreters.deferral`
  rewrites it), and when it ends the device's receiver hands them to the tap functions in
  program order (`core.deliveries.walk`).  The computation itself has no effect left, so
  it dispatches as a pure one; a computation that never ends delivers nothing, and one
  whose taps cannot all be deferred (a tap in a `while_loop`) keeps them all immediate;
* `auto` (the default): what the platform does best, from `AUTO_DELIVERY`: on the CPU the
  native handler costs under a microsecond a tap and delivers during the computation, so
  immediate; elsewhere deferred, since a host transfer during a computation costs an
  accelerator a round trip.

A deferred execution's `Record` (plan, device, and then its outputs) travels through the
device's tap queue as a small message to one permanent consumer (`_deliver_record`),
pushed just before the execution starts, so that it takes its place among the device's
taps in dispatch order, and barriers, stops and the exit drain count it as they count any
tap.  The receiver, on reaching it, waits for the outputs and reads them (waiting for the
computation), then walks the plan.  Immediate taps of executions still running
could reach the queue after the record, out of order: so before the first deferred
execution after immediate ones on a device, dispatch waits for those to finish
(`receiver.before_deferred`).  The outputs that records hold are bounded like the queue:
past `tap_queue_bytes` of them on a device, dispatch waits for the receiver.
"""
from __future__ import annotations

import collections
import itertools
import os
import threading
from _thread import allocate_lock as _allocate_lock
from typing import Any, Sequence

import numpy as np

from minijax.config import config
from minijax.core.avals import ShapedArray
from minijax.core.deliveries import walk
from minijax.runtime.array import host_view
from minijax.runtime.taps import receiver, registry
from minijax.runtime.taps.queues import queues
from minijax.runtime.tokens import wait_until
from minijax.tree_util import internal as tree_util

DELIVERIES = ("auto", "immediate", "deferred")
AUTO_DELIVERY = {"cpu": "immediate"}  # by platform; any other platform: "deferred"

_records: dict[int, "Record"] = {}  # by record id, until its receiver takes it
_ids = itertools.count(1)
_held_bytes: dict[int, int] = {}  # by device ordinal: bytes of outputs records hold
_lock = threading.Lock()
_record_consumer: list[int] = []  # the id of `_deliver_record`'s consumer, once registered


def delivery(device: Any) -> str:
  """How taps leave a computation on `device`: "immediate" or "deferred" (see the module
  docstring)."""
  asked = config.tap_delivery
  if asked == "auto":
    return AUTO_DELIVERY.get(device.platform, "deferred")
  return asked


def _consumer_id() -> int:
  if not _record_consumer:
    with _lock:
      if not _record_consumer:
        _record_consumer.append(registry.register_consumer(
            _deliver_record, (), tree_util.tree_structure(0),
            [ShapedArray((1,), np.dtype(np.int64))]))
  return _record_consumer[0]


class Record:
  """One deferred execution's place in its device's tap queue: taken before the execution
  starts (`start`), so that it keeps the order in which executions were dispatched even
  when one runs synchronously (a program with host calls returns only once it is done);
  filled with the outputs when the execution returns (`fill`), or with None when it
  failed to start.  The buffers that its `while_loop`s send during the execution are
  filed with it by key (`receive_sent`), in the order they come."""
  __slots__ = ("id", "plan", "device", "ordinal", "nbytes", "outputs", "sent", "_filled")

  def __init__(self, record_id: int, plan, device, ordinal: int, nbytes: int):
    self.id, self.plan, self.device = record_id, plan, device
    self.ordinal, self.nbytes = ordinal, nbytes
    self.outputs = None
    self.sent: dict[Any, collections.deque] = {}
    self._filled = _allocate_lock()
    self._filled.acquire()

  def fill(self, outputs: Sequence[Any] | None) -> None:
    self.outputs = outputs
    self._filled.release()

  def wait(self) -> Sequence[Any] | None:
    self._filled.acquire()
    return self.outputs

  def take_sent(self, key) -> list:
    """The next buffer that the loop `key` sent (`core.deliveries.walk`'s `sent`)."""
    return self.sent[key].popleft()


def receive_sent(record_id: int, key, buffers: list) -> None:
  """Files a full buffer of a `while_loop`'s deferred values (`key` names the loop) with
  the execution's record; called by the host call the loop makes when it fills one."""
  record = _records.get(record_id)
  if record is None:
    raise RuntimeError(f"a while_loop sent its deferred taps for record {record_id}, which "
                       "does not exist (the program was called without minijax's runtime)")
  record.sent.setdefault(key, collections.deque()).append(buffers)


def start(device: Any, plan, nbytes: int) -> Record:
  """Takes the place in `device`'s tap queue of an execution about to run, whose deferred
  outputs (`nbytes` of them) its receiver delivers per `plan` once `Record.fill` hands
  them over and the execution has ended."""
  ordinal = receiver.device_ordinal(device)
  receiver.before_deferred(ordinal)
  limit = config.tap_queue_bytes
  if _held_bytes.get(ordinal, 0) and _held_bytes.get(ordinal, 0) + nbytes > limit:
    wait_until(lambda: not _held_bytes.get(ordinal, 0)
               or _held_bytes.get(ordinal, 0) + nbytes <= limit, None)
  record_id = next(_ids) & 0x7FFFFFFF  # (it crosses into the program as an int32)
  record = Record(record_id, plan, device, ordinal, nbytes)
  with _lock:
    _records[record_id] = record
    _held_bytes[ordinal] = _held_bytes.get(ordinal, 0) + nbytes
  queues.push(ordinal, _consumer_id(), [np.array([record_id], np.int64)])
  return record


def _deliver_record(message, transforms) -> None:
  """The receiver's side: waits for the outputs, reads them (waiting for the execution)
  and walks the plan.  A failed execution's error is reported as a failed tap would be."""
  record = _records[int(message[0])]
  device, ordinal = record.device, record.ordinal
  try:
    outputs = record.wait()
    if outputs is None:  # the execution did not start
      return
    try:
      host = [host_view(o) for o in outputs]
    except Exception as e:  # the computation failed: its error surfaces at its results too
      receiver.report_deferred(ordinal, f"the deferred taps of a failed computation ({e})", e)
      return
    del outputs
    record.outputs = None
    walk(record.plan, host, device,
         lambda e, emit: receiver.report_deferred(ordinal, emit.name, e), record.take_sent)
  finally:
    with _lock:
      del _records[record.id]
      _held_bytes[record.ordinal] -= record.nbytes


def pending_records() -> int:
  """How many deferred executions wait for their receiver."""
  return len(_records)


def _after_fork_in_child() -> None:
  global _lock
  _lock = threading.Lock()
  _records.clear()  # the parent's computations do not exist here
  _held_bytes.clear()


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = ["AUTO_DELIVERY", "DELIVERIES", "Record", "delivery", "pending_records",
           "receive_sent", "start"]
