"""Receiver threads: one per local device, each running its device's taps in tap order.

A receiver waits on its device's queue without the GIL (inside `queues.deliver`), takes taps
in batches, rebuilds each tapped value from the consumer registry and calls the tap
function (the native queues do that themselves for the common tap of one array).
An exception in a tap function is logged on the "minijax.taps" logger with its traceback and
counted; the receiver carries on, and the next `barrier_wait` raises `TapFunctionException`.

Progress is counted, not probed: the queue numbers the taps each device enqueues, and
counts those its receiver has finished with (a batch once the receiver asks for the next).
`effects_barrier` (alias `barrier_wait`) first waits for the computations that were already dispatched
(`tokens.runtime_tokens.wait_all()`, which covers every execution with an effect: the
last token of each ordered effect and the status of each unordered run), at which point
every tap they make is in a queue; it then flushes each queue and waits, without the GIL,
until the finished count reaches the enqueued count read after that.  An idle barrier
therefore compiles and runs nothing.

Receivers start lazily (`ensure_started`, called before a computation with effects runs), stop with `stop_outfeed_receiver`, and restart on the next use.  Both a
barrier and a tapped computation launched from a tap function could wait on the very thread
that runs them, so both raise RuntimeError there instead (`in_receiver_thread`).  An exit
handler waits for pending taps so that no output is lost when the interpreter exits.
"""
from __future__ import annotations

import atexit
import dataclasses
import logging
import threading
import traceback
from typing import Any

from minijax.config import config
from minijax.runtime.taps import registry
from minijax.runtime.taps.queues import queues
from minijax.runtime.tokens import runtime_tokens

logger = logging.getLogger("minijax.taps")

_BATCH = 256
_get_ident = threading.get_ident


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
_atexit_registered = False


def in_receiver_thread() -> bool:
  """Whether the calling thread is a tap receiver (that is, runs inside a tap function)."""
  return threading.get_ident() in _receiver_idents


def device_ordinal(device: Any) -> int:
  """The index that the FFI handler's `DeviceOrdinal` reports for `device`."""
  hw = device.local_hardware_id
  return device.id if hw is None else hw


def ensure_started() -> None:
  """Starts the receiver threads if they are not running (creating the XLA client if needed)."""
  global _running, _atexit_registered
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
    if not _atexit_registered:
      atexit.register(_at_exit)
      _atexit_registered = True


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

  deliver, simple = queues.deliver, registry.simple_consumers
  while True:
    done = deliver(rec.ordinal, _BATCH, simple, slow, on_error)
    if done is None:
      return
    with _counters:
      rec.processed += done[0]
      rec.bytes_delivered += done[1]


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


def before_execution() -> None:
  """Call before executing a computation that contains taps.

  Raises RuntimeError inside a tap function (the computation could block on a queue that
  only the calling thread drains) and restarts receivers stopped by `stop_outfeed_receiver`.
  """
  if _running and _get_ident() not in _receiver_idents:
    return
  if in_receiver_thread():
    raise RuntimeError(
        "A tap function tried to run a computation that contains taps. Tap functions run on "
        "the tap receiver thread, which would then have to drain its own queue, and could "
        "deadlock. Run the computation from another thread, or without taps.")
  if not _running:
    ensure_started()


def _wait_for_dispatched() -> None:
  try:
    runtime_tokens.wait_all()
  except Exception:  # a failed computation; its error surfaces where its results are used
    pass


def _wait_for_receivers() -> None:
  targets = [(rec, queues.enqueued(rec.ordinal)) for rec in list(_receivers.values())]
  pending = [(rec, target) for rec, target in targets if rec.processed < target]
  if not pending:
    return
  if not _running:
    ensure_started()  # taps arrived while stopped: deliver them rather than wait forever
  for rec, _ in pending:
    queues.flush(rec.ordinal)
  for rec, target in pending:
    while not queues.wait_delivered(rec.ordinal, target, 1.0):
      if not (rec.thread and rec.thread.is_alive()):
        raise RuntimeError(f"the tap receiver of device {rec.device} is not running, so "
                           f"{target - rec.processed} tap(s) cannot be delivered")


def effects_barrier() -> None:
  """Waits until every computation with effects already dispatched, on every device, has
  finished and every tap it made has been delivered (the runtime tokens of every effect,
  then every tap queue); then raises `TapFunctionException` if a tap function raised since
  the last barrier."""
  _barrier("effects_barrier")


def barrier_wait(logging_name: str | None = None) -> None:
  """`effects_barrier`, under host_callback's name; `logging_name` names the barrier in the
  "minijax.taps" debug log."""
  if logging_name is not None:
    logger.debug("barrier_wait(%s)", logging_name)
  _barrier("barrier_wait")


def _barrier(name: str) -> None:
  global _exceptions_since_barrier, _last_exception
  if in_receiver_thread():
    raise RuntimeError(
        f"{name}() was called from a tap function. It would wait for the receiver "
        "thread that is running the tap function itself, forever. Call it from the thread "
        "that launched the computation instead.")
  if _receivers:
    _wait_for_dispatched()
    _wait_for_receivers()
  if _exceptions_since_barrier:
    with _counters:
      n, _exceptions_since_barrier = _exceptions_since_barrier, 0
      last, _last_exception = _last_exception, None
    detail = ""
    if last is not None:
      text = "".join(traceback.format_exception(last)).rstrip()
      detail = f"\nThe last one, {type(last).__name__}: {last}\n{text}"
    raise TapFunctionException(
        f"{n} exception(s) were raised in tap functions since the last barrier_wait(); their "
        f"tracebacks were logged on the 'minijax.taps' logger.{detail}") from last


def stop_outfeed_receiver() -> None:
  """Waits for pending taps, then stops the receiver threads.

  They restart on the next tap use.  The consumer registry is kept, and exceptions of tap
  functions stay counted for the next `barrier_wait`.
  """
  global _running
  if in_receiver_thread():
    raise RuntimeError("stop_outfeed_receiver() cannot be called from a tap function")
  with _lock:
    if not _running:
      return
    _wait_for_dispatched()
    _wait_for_receivers()
    for rec in _receivers.values():
      queues.close(rec.ordinal)
    for rec in _receivers.values():
      if rec.thread is not None:
        rec.thread.join()
        rec.thread = None
    for rec in _receivers.values():
      queues.open(rec.ordinal)
    _running = False


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


def _at_exit() -> None:
  try:
    barrier_wait()
  except TapFunctionException as e:
    logger.error("At exit: %s", e)
  except Exception:
    logger.exception("At exit: waiting for pending taps failed")
  try:
    stop_outfeed_receiver()
  except Exception:
    logger.exception("At exit: stopping the tap receivers failed")


def _on_config_change(name: str, value: Any) -> None:
  if name == "tap_queue_bytes":
    queues.set_capacity(int(value))


config.on_change(_on_config_change)
