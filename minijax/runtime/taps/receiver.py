"""Receiver threads: one per local device, each running its device's taps in tap order.

A receiver waits on its device's queue without the GIL (inside `queues.deliver`), takes taps
in batches, rebuilds each tapped value from the consumer registry and calls the tap
function (the native queues do that themselves for the common tap of one array).
An exception in a tap function is logged on the "minijax.taps" logger with its traceback and
counted; the receiver carries on, and the next `barrier_wait` raises `TapFunctionException`.

Progress is counted, not probed: the queue numbers the taps each device enqueues, and
counts those its receiver has finished with (a batch once the receiver asks for the next).
`effects_barrier` (alias `barrier_wait`) first waits for the computations that were already
dispatched (every execution with an effect: the last token of each ordered effect and the
status of each unordered run, from `tokens.runtime_tokens.snapshot()`), at which point
every tap they make is in a queue; it then flushes each queue and waits, without the GIL,
until the finished count reaches the enqueued count read after that.  An idle barrier
therefore compiles and runs nothing.

Every wait is made of short steps with Python in between, so that Ctrl-C raises
KeyboardInterrupt within a fraction of a second: tokens are polled (`is_ready`, spinning
briefly, then sleeping a growing interval of at most 5 ms), an unordered run's status,
which can only be blocked on, is blocked on by a helper thread that the barrier polls
(`tokens.wait_for_statuses`), and receivers are waited for a quarter of a second at a
time.  A thread that dispatches tapped computations waits for them the same way, every few
dispatches (`before_execution`), rather than inside jaxlib.  The same steps take a
deadline, which the exit handler (`exit.py`) uses.

Receivers start lazily (`ensure_started`, called before a computation with effects runs),
stop with `stop_outfeed_receiver`, and restart on the next use.  Stopping waits for every
computation dispatched before it and their taps, then closes the queues: a tap pushed into
a closed queue (by a computation that raced the stop) is admitted at once, never waited
for, and delivered when the receivers restart (the next tapped call or barrier, or the
exit handler).  No lock is held while a computation waits for room in a queue.  Both a
barrier and a tapped computation launched from a tap function could wait on the very
thread that runs them, so both raise RuntimeError there instead (`in_receiver_thread`).

The consumers of executables that were freed (`registry.take_released`) are forgotten once
every tap that could carry their ids has been delivered (`sweep_retired`): once the token
chains read when they were released are done (any ordered run of the freed executable came
before those tokens; an unordered run keeps its executable's consumers alive until it is
waited for), and the receivers have delivered what had been enqueued by then.  Sweeps run
after barriers, after receiver batches, and before compiles.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
import traceback
from typing import Any

from minijax.config import config
from minijax.runtime.taps import registry
from minijax.runtime.taps.queues import queues
from minijax.runtime.tokens import (is_ready as _is_ready, runtime_tokens, token_array,
                                    wait_for_arrays, wait_for_statuses, wait_until as _wait_until)

logger = logging.getLogger("minijax.taps")

_BATCH = 256
_RECEIVER_STEP_S = 0.25  # the longest a barrier waits on a receiver without checking signals
_get_ident = threading.get_ident
_waiting = queues.waiting  # per queue slot: taps waiting for room (no call to read it)
_slots = len(_waiting)  # a device's slot is its ordinal modulo this, as in the queues
# Executions with effects a device may start between two progress marks (see
# `before_execution`): at most twice this many are then in flight, well below jaxlib's
# limit of 32 per device, where a dispatching thread would wait out of Ctrl-C's reach.
_PACE = queues.PACE
_dispatched = queues.dispatched  # per queue slot: executions since the device's last mark
_marks: dict[int, list] = {}  # by device ordinal: arrays ready once its last mark is passed
_PROMPTLY_S = 0.05  # how long a paced dispatch polls its mark at least every 0.5 ms
take_interrupt = queues.take_interrupt


class TapFunctionException(Exception):
  """Raised by `barrier_wait` when tap functions raised since the previous barrier.  Its
  text holds the last such exception's type, text and traceback; it is also the
  `__cause__`."""


@dataclasses.dataclass(frozen=True)
class TapStats:
  """Per-device tap counters since the process started (the high-water mark and blocked
  time since the last `reset_tap_stats`)."""
  taps_delivered: int
  bytes_delivered: int
  taps_enqueued: int
  queued_bytes: int
  queue_high_water_bytes: int
  blocked_seconds: float
  exceptions: int


class _DeviceReceiver:
  """The receiver state of one device; counters outlive stops and restarts."""

  def __init__(self, ordinal: int, device: Any):
    self.ordinal = ordinal
    self.device = device
    self.thread: threading.Thread | None = None
    self.processed = 0
    self.bytes_delivered = 0
    self.exceptions = 0


_receiver_idents: set[int] = set()  # the threads running tap functions
_lock = threading.RLock()     # serializes start and stop
_counters = threading.Lock()
_receivers: dict[int, _DeviceReceiver] = {}  # by device ordinal
_by_device: dict[Any, _DeviceReceiver] = {}
_running = False
_exceptions_since_barrier = 0
_last_exception: BaseException | None = None  # the latest since the last barrier
_retiring: list[list] = []  # [released consumers, tokens to wait for, delivery targets]
_retire_lock = threading.Lock()


def in_receiver_thread() -> bool:
  """Whether the calling thread is a tap receiver (that is, runs inside a tap function)."""
  return threading.get_ident() in _receiver_idents


def device_ordinal(device: Any) -> int:
  """The index that the FFI handler's `DeviceOrdinal` reports for `device`: jaxlib's CPU
  client reports the device id (p * 2048 + k for device k of process p; the native queues
  keep a slot per id modulo 2048)."""
  return device.id


def ensure_started() -> None:
  """Starts the receiver threads if they are not running (creating the XLA client if needed)."""
  global _running
  if _running:
    return
  from minijax.runtime import backend
  with _lock:
    if _running:
      return
    queues.set_capacity(config.tap_queue_bytes)
    for device in backend.local_devices():
      ordinal = device_ordinal(device)
      rec = _receivers.get(ordinal)
      if rec is None:
        rec = _receivers[ordinal] = _DeviceReceiver(ordinal, device)
        _by_device[device] = rec
      queues.open(ordinal)
      rec.thread = threading.Thread(target=_receive, args=(rec,), daemon=True,
                                    name=f"minijax-tap-receiver-{ordinal}")
      rec.thread.start()
    _running = True


def _receive(rec: _DeviceReceiver) -> None:
  ident = threading.get_ident()
  _receiver_idents.add(ident)
  try:
    _drain(rec)
  finally:
    _receiver_idents.discard(ident)


def _drain(rec: _DeviceReceiver) -> None:
  consumers, device = registry.consumers_by_id, rec.device

  def slow(consumer_id: int, payload, offsets) -> int:
    consumer = consumers.get(consumer_id)
    try:
      consumer.deliver(payload, offsets, device)
      return consumer.nbytes
    except BaseException as e:  # even SystemExit must not end a receiver
      _report(rec, consumer_id, consumer, e)
      return 0

  def on_error(consumer_id: int, e: BaseException) -> None:
    _report(rec, consumer_id, consumers.get(consumer_id), e)

  deliver, simple, released = queues.deliver, registry.simple_consumers, registry._released
  while True:
    done = deliver(rec.ordinal, _BATCH, simple, slow, on_error)
    if done is None:
      return
    with _counters:
      rec.processed += done[0]
      rec.bytes_delivered += done[1]
    if _retiring or released:
      sweep_retired()


def _report(rec: _DeviceReceiver, consumer_id: int, consumer, e: BaseException) -> None:
  global _exceptions_since_barrier, _last_exception
  with _counters:
    rec.exceptions += 1
    _exceptions_since_barrier += 1
    _last_exception = e
  hint = ""
  if isinstance(e, TypeError):
    hint = (" (tap functions are called as tap_func(arg, transforms), or with device=... "
            "when they take a `device` keyword)")
  logger.error("Exception in tap function %s on device %s%s; it is re-raised as "
               "TapFunctionException by the next barrier_wait()",
               consumer if consumer is not None else f"<unknown consumer {consumer_id}>",
               rec.device, hint, exc_info=e)


def before_execution(ordinal: int | None = None) -> bool:
  """Call before executing a computation that contains taps (on the device `ordinal`).

  Raises RuntimeError inside a tap function (the computation could block on a queue that
  only the calling thread drains) and restarts receivers stopped by `stop_outfeed_receiver`.

  jaxlib runs computations asynchronously: a tap of one running on an XLA thread waits
  for room there, and the computations dispatched after it wait behind it.  A dispatching
  thread that finds jaxlib's limit of computations in flight on the device (32) reached
  waits inside jaxlib, where Ctrl-C cannot reach it: behind a tap function that never
  returns, forever.  So it waits here instead, in steps that let signal handlers run:
  while a tap waits for room in the device's queue, until it got in; and every `_PACE`
  executions, until the device has passed its previous progress mark, which bounds the
  executions in flight before their taps reach the queue.  Returns True when the caller
  is to make this execution the next mark (`mark_progress`); an ordered execution under
  `effects_ordering="runtime_token"` is marked by its token chains instead.
  """
  if _running and _get_ident() not in _receiver_idents:
    if ordinal is not None:
      slot = ordinal % _slots
      if _waiting[slot]:
        _wait_until(lambda: not _waiting[slot], None)
      n = _dispatched[slot] = _dispatched[slot] + 1
      if n >= _PACE:
        return _pace(ordinal, slot)
    return False
  _refuse_in_receiver()
  if not _running:
    ensure_started()
  return False


def _refuse_in_receiver() -> None:
  """A computation with taps launched from a tap function could wait on the very thread
  that runs it (the receiver, draining its own queue): RuntimeError there."""
  if in_receiver_thread():
    raise RuntimeError(
        "A tap function tried to run a computation that contains taps. Tap functions run on "
        "the tap receiver thread, which would then have to drain its own queue, and could "
        "deadlock. Run the computation from another thread, or without taps.")


def before_deferred(ordinal: int) -> None:
  """Call before handing a deferred execution's record to the device's queue
  (`taps.deferred.start`): as `before_execution`, refuses inside a tap function and
  starts the receivers; and when executions with immediate taps were dispatched on the
  device since its last progress mark, waits until they have finished, so that all their
  taps are queued before the record."""
  _refuse_in_receiver()
  if not _running:
    ensure_started()
  slot = ordinal % _slots
  if _dispatched[slot]:
    rec = _receivers.get(ordinal)
    mark = runtime_tokens.progress_mark(rec.device) if rec is not None else []
    _wait_until(lambda: all(map(_is_ready, mark)), None, spin=0)
    _marks.pop(ordinal, None)
    _dispatched[slot] = 0


def report_deferred(ordinal: int, what: str, e: BaseException) -> None:
  """Reports the exception of a deferred tap's function (`what` names it) on the device
  `ordinal`, whose receiver delivered it, as a failing tap function is reported."""
  _report(_receivers[ordinal], 0, what, e)


def _pace(ordinal: int, slot: int) -> bool:
  """Waits until the device has passed its last progress mark; then returns True for the
  caller to mark the next execution (`mark_progress`), or marks those started so far
  itself (`runtime_tokens.progress_mark`): by their token chains under
  `effects_ordering="runtime_token"`, and by a fence after the last mark was an output
  that a later call took (donated), which can no longer be waited for."""
  mark = _marks.get(ordinal)
  by_output = config.effects_ordering != "runtime_token"
  if mark:
    try:
      ready = all([array.is_ready() for array in mark])
    except Exception:  # deleted (donated to a later call), or the output of a failed run
      ready, by_output = True, False
    if not ready:  # (the mark is kept if Ctrl-C ends the wait)
      passed = lambda: all(map(_is_ready, mark))  # noqa: E731
      # Without spinning, which would take a core from the computations waited for, but
      # promptly at first: the device runs out of work soon after it passes the mark.
      if not _wait_until(passed, time.monotonic() + _PROMPTLY_S, max_pause=5e-4, spin=0):
        _wait_until(passed, None, spin=0)
  _marks.pop(ordinal, None)
  _dispatched[slot] = 0
  if by_output:
    return True
  _mark_dispatched(ordinal)
  return False


def _mark_dispatched(ordinal: int) -> None:
  """Makes what the device has dispatched so far its progress mark: its token chains and a
  fence after its streamed executions (`runtime_tokens.progress_mark`)."""
  rec = _receivers.get(ordinal)
  if rec is not None:
    _marks[ordinal] = runtime_tokens.progress_mark(rec.device)


def streamed_dispatch(ordinal: int, execute, get_stream, set_stream, stream_id, depth,
                      busy: list, mark: list, slow):
  """The native dispatch of a program with effects on the shared execution stream, on the
  device `ordinal`, paced by this module's progress marks (see
  `Executable._make_execute_streamed`, whose Python version is `slow`), or None without
  the native queues, whose state it reads."""
  make = getattr(queues, "streamed_dispatch", None)
  if make is None:  # the Python queues, or a build from before it
    return None
  return make(ordinal, execute, get_stream, set_stream, stream_id, depth, busy, mark, slow,
              _marks, mark_progress)


class mark_progress:
  """`mark_progress(ordinal, results)`: an execution's results (`execute_sharded`'s) that,
  once consumed, make the execution the device's progress mark (see `before_execution`):
  its first output, which is ready once the execution and, on the shared execution stream,
  every one before it has finished; without outputs, a fence dispatched after it."""
  __slots__ = ("ordinal", "results")

  def __init__(self, ordinal: int, results):
    self.ordinal = ordinal
    self.results = results

  def consume_with_handlers(self, handlers) -> list:
    outs = self.results.consume_with_handlers(handlers)
    if outs:
      _marks[self.ordinal] = outs[:1]
    else:
      _mark_dispatched(self.ordinal)
    return outs


# ----------------------------------------------------------------------------- waiting

def _wait_for_dispatched(deadline: float | None = None) -> bool:
  """Waits for every computation with effects dispatched so far (see the module docstring);
  False if `deadline` (a `time.monotonic()` value) passed first."""
  started, entries = runtime_tokens.snapshot()
  if not started and not entries:
    return True
  if not wait_for_arrays([token_array(token) for _, token in started], deadline):
    return False
  # (a failed computation's error surfaces where its results are used)
  if not wait_for_statuses([status for status, _ in entries], deadline, errors=False):
    return False
  runtime_tokens.release(started, entries)
  return True


def _undelivered() -> list[tuple[_DeviceReceiver, int]]:
  """(receiver, enqueued count) for every device whose receiver is behind its queue."""
  targets = [(rec, queues.enqueued(rec.ordinal)) for rec in list(_receivers.values())]
  return [(rec, target) for rec, target in targets if rec.processed < target]


def _wait_for_receivers(deadline: float | None = None) -> bool:
  """Waits until each receiver has delivered every tap enqueued so far (restarting stopped
  receivers when taps are waiting for them); False if `deadline` passed first."""
  pending = _undelivered()
  if not pending:
    return True
  if not _running:
    ensure_started()  # taps arrived while stopped: deliver them rather than wait forever
  for rec, _ in pending:
    queues.flush(rec.ordinal)
  for rec, target in pending:
    while True:
      step = _RECEIVER_STEP_S
      if deadline is not None:
        step = min(step, deadline - time.monotonic())
        if step <= 0:
          return False
      if queues.wait_delivered(rec.ordinal, target, step):
        break
      thread = rec.thread
      if not (thread and thread.is_alive()):
        # Stopped by another thread meanwhile: restart, as above, once that stop is over
        # (until it is, `_running` still holds while its receivers are gone).
        with _lock:
          ensure_started()
        thread = rec.thread
        if not (thread and thread.is_alive()):
          raise RuntimeError(f"the tap receiver of device {rec.device} is not running, so "
                             f"{target - rec.processed} tap(s) cannot be delivered")
  return True


def effects_barrier() -> None:
  """Waits until every computation with effects already dispatched, on every device, has
  finished and every tap it made has been delivered (the runtime tokens of every effect,
  then every tap queue); then raises `TapFunctionException` if a tap function raised since
  the last barrier.  Ctrl-C interrupts the wait (KeyboardInterrupt)."""
  _barrier("effects_barrier")


def barrier_wait(logging_name: str | None = None) -> None:
  """`effects_barrier`, under host_callback's name; `logging_name` names the barrier in the
  "minijax.taps" debug log."""
  if logging_name is not None:
    logger.debug("barrier_wait(%s)", logging_name)
  _barrier("barrier_wait")


def _barrier(name: str) -> None:
  if in_receiver_thread():
    raise RuntimeError(
        f"{name}() was called from a tap function. It would wait for the receiver "
        "thread that is running the tap function itself, forever. Call it from the thread "
        "that launched the computation instead.")
  if _receivers:
    _wait_for_dispatched()
    _wait_for_receivers()
    sweep_retired()
  raise_tap_exceptions()


def raise_tap_exceptions() -> None:
  """Raises `TapFunctionException` if tap functions raised since the last time (and resets
  the count)."""
  global _exceptions_since_barrier, _last_exception
  if _exceptions_since_barrier:
    with _counters:
      n, _exceptions_since_barrier = _exceptions_since_barrier, 0
      last, _last_exception = _last_exception, None
    if not n:
      return
    text = "".join(traceback.format_exception(last)).rstrip() if last is not None else ""
    if config.host_callback_semantics == "jax":  # JAX 0.4.34's words
      raise TapFunctionException(
          f"There were exceptions during callback processing. Last one was: {text}") from last
    detail = f"\nThe last one, {type(last).__name__}: {last}\n{text}" if last is not None else ""
    raise TapFunctionException(
        f"{n} exception(s) were raised in tap functions since the last barrier_wait(); their "
        f"tracebacks were logged on the 'minijax.taps' logger.{detail}") from last


def stop_outfeed_receiver() -> None:
  """Waits for pending taps, then stops the receiver threads.

  They restart on the next tap use.  The consumer registry is kept, and exceptions of tap
  functions stay counted for the next `barrier_wait`.  Computations dispatched before the
  stop are waited for and their taps delivered; a computation racing the stop on another
  thread leaves its taps in the (closed) queues, never waiting for room, and they are
  delivered when the receivers restart.
  """
  if in_receiver_thread():
    raise RuntimeError("stop_outfeed_receiver() cannot be called from a tap function")
  with _lock:
    if not _running:
      return
    _wait_for_dispatched()
    _wait_for_receivers()
    _stop_receivers()
  sweep_retired()


def _stop_receivers(timeout: float | None = None) -> bool:
  """Closes the queues (pushes stop waiting for room) and joins the receivers, which finish
  what is queued first; False if one is still running after `timeout`."""
  global _running
  with _lock:
    for rec in _receivers.values():
      queues.close(rec.ordinal)
    deadline = None if timeout is None else time.monotonic() + timeout
    for rec in _receivers.values():
      if rec.thread is not None:
        rec.thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if rec.thread.is_alive():
          return False
        rec.thread = None
    _running = False
    return True


def tap_stats() -> dict[Any, TapStats]:
  """Per device (keyed by device object): taps and bytes delivered, queue use, the time the
  device spent blocked on a full queue, and tap-function exceptions."""
  stats = {}
  for rec in list(_receivers.values()):
    enqueued, _, used, high_water, blocked_ns = queues.counters(rec.ordinal)
    stats[rec.device] = TapStats(rec.processed, rec.bytes_delivered, enqueued, used, high_water,
                                 blocked_ns / 1e9, rec.exceptions)
  return stats


def reset_tap_stats() -> None:
  """Resets each queue's high-water mark (to the bytes now queued) and blocked time."""
  for rec in list(_receivers.values()):
    queues.reset_high_water(rec.ordinal)


# ----------------------------------------------------------------------------- lifetimes

def sweep_retired() -> None:
  """Forgets released consumers (see the module docstring) whose taps have all been
  delivered; never waits."""
  released = registry.take_released()
  if not released and not _retiring:
    return
  # Read before taking the lock: reading them may dispatch (and the first time compile) a
  # fence, and compiling sweeps too, on this very thread (a deadlock on the lock, once).
  tokens = runtime_tokens.started_tokens() if released else None
  with _retire_lock:
    if released:
      _retiring.append([released, tokens, None])
    keep = []
    for item in _retiring:
      consumers, tokens, targets = item
      if tokens is not None:
        if not all(map(_is_ready, tokens)):
          keep.append(item)
          continue
        item[1] = None
        item[2] = targets = {o: queues.enqueued(o) for o in list(_receivers)}
      if all(_receivers[o].processed >= t for o, t in targets.items()):
        registry.forget(consumers)
      else:
        keep.append(item)
    _retiring[:] = keep


def retiring_consumers() -> int:
  """How many released consumers wait for their taps to be delivered."""
  return sum(len(item[0]) for item in list(_retiring))


# ----------------------------------------------------------------------------- fork

def _after_fork_in_child() -> None:
  """The child of a fork has none of the parent's threads: receivers are marked stopped
  (they restart on the next tap), every lock is made anew (a parent thread may have held
  one), and the queues start empty."""
  global _running, _exceptions_since_barrier, _last_exception
  _lock._at_fork_reinit()
  _counters._at_fork_reinit()
  _retire_lock._at_fork_reinit()
  _receiver_idents.clear()
  _running = False
  _exceptions_since_barrier = 0
  _last_exception = None
  _retiring.clear()
  _marks.clear()  # the parent's computations never finish here
  for rec in _receivers.values():
    rec.thread = None
    rec.processed = rec.bytes_delivered = rec.exceptions = 0
  queues.reset_after_fork()


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_after_fork_in_child)


def _on_config_change(name: str, value: Any) -> None:
  if name == "tap_queue_bytes":
    queues.set_capacity(value)


config.on_change(_on_config_change)
