"""The per-device tap queues that receiver threads drain.

Normally these are the native queues of the C++ extension `_native`, which the device-side
FFI handler fills without the GIL and which the receivers wait on without the GIL.  When
the extension is missing (its build failed), `PythonQueues` stands in with the same
interface and the same rules, and only the Python-callback mechanism can fill it:

* `push(ordinal, consumer, arrays)` copies the arrays; when the queue holds `capacity()`
  bytes or more it waits for room, except that a queue holding nothing admits any message,
  so a tap larger than the whole queue gets through instead of deadlocking, and a closed
  queue admits every message at once (its receiver is stopped: the taps wait there for the
  next one).  A Python thread waiting for room runs pending
  signal handlers; if one raises (Ctrl-C), the push gives up, raises that exception and
  keeps it for `take_interrupt()`;
* `deliver(ordinal, max_count, simple, slow, on_error)` waits for taps, takes up to
  `max_count` and delivers them in order: a tap whose consumer id is in `simple` (id ->
  (func, transforms, shape, dtype, nbytes)) as `func(array, transforms)`, the array a numpy
  view of the payload, calling `on_error(consumer_id, exception)` if that raises; any
  other as `slow(consumer_id, payload, offsets)`, which returns the bytes it delivered.  It
  returns `(count, nbytes)`, or None once the queue is closed and empty.  The native queues
  do this in C, which saves most of a receiver's work per tap; the Python queues hand
  every tap to `slow`;
* `flush(ordinal)` asks the receiver to take what is queued now rather than wait for more
  (the native queues let a receiver linger while taps keep coming; barriers flush);
* `wait_delivered(ordinal, target, timeout_s)` waits until the receiver has finished with
  `target` taps (a batch counts once the receiver asks for the next) and says whether it
  has;
* `counters(ordinal)` is `(enqueued, bytes_enqueued, queued_bytes, high_water, blocked_ns)`;
  `producers_waiting(ordinal)` counts the taps waiting for room now, as does
  `waiting[ordinal % len(waiting)]` (a sequence readable without a call, for the dispatch
  path); `dispatched[ordinal % len(waiting)]` counts the device's executions with effects
  since its last progress mark (`receiver.before_execution` and the native streamed
  dispatch both count there; every `PACE`-th waits for the previous mark);
* `close(ordinal)` / `open(ordinal)` detach and attach a receiver; `take_interrupt()`
  returns, once, the exception that ended a wait of the calling thread (see `push`);
  `reset_after_fork()` gives a forked child fresh, empty queues.

`watched(execute)` (native only; else `execute` itself) is what programs with effects run
through, so that Ctrl-C also ends a tap's wait on another thread while the main thread is
inside a synchronous program, and the program's call raises the KeyboardInterrupt
(csrc/interrupts.h says how).

A native payload is one buffer holding the arrays at `offsets`; a Python payload is the
list of copied arrays itself and its `offsets` is None.
"""
from __future__ import annotations

import collections
import os
import threading
import time
import warnings
from typing import Any, Sequence

import numpy as np

try:
  from minijax.runtime.taps import _native
  from minijax.runtime.array import HostArray as _HostArray
  if hasattr(_native, "set_host_array_type"):  # (an older build delivers these in Python)
    _native.set_host_array_type(_HostArray)
  native_import_error: BaseException | None = None
except ImportError as e:  # the package was installed without a compiler, or the build failed
  _native = None
  native_import_error = e

ALIGNMENT = 64
MESSAGE_OVERHEAD = 64  # bytes charged per message, so even empty taps are bounded
MAX_DEVICES = 2048  # queue slots; ordinals are taken modulo this (as the native module does)


class _PyQueue:
  __slots__ = ("items", "used", "high_water", "enqueued", "bytes_enqueued", "blocked_ns",
               "closed", "waiting", "cond", "delivered", "in_flight")

  def __init__(self):
    self.items: collections.deque = collections.deque()
    self.used = self.high_water = self.enqueued = self.bytes_enqueued = self.blocked_ns = 0
    self.closed = False
    self.waiting = 0
    self.cond = threading.Condition()
    self.delivered = self.in_flight = 0


class PythonQueues:
  """Pure-Python queues with the native module's interface (see the module docstring)."""

  PACE = 8

  def __init__(self):
    self._capacity = 256 * 1024 * 1024
    self._queues: dict[int, _PyQueue] = {}
    self._lock = threading.Lock()
    self._interrupts = threading.local()
    self.waiting = [0] * MAX_DEVICES
    self.dispatched = [0] * MAX_DEVICES

  def _queue(self, ordinal: int) -> _PyQueue:
    q = self._queues.get(ordinal)
    if q is None:
      with self._lock:
        q = self._queues.setdefault(ordinal, _PyQueue())
    return q

  def set_capacity(self, nbytes: int) -> None:
    if nbytes <= 0:
      raise ValueError("tap queue capacity must be positive")
    self._capacity = int(nbytes)
    for q in list(self._queues.values()):
      with q.cond:
        q.cond.notify_all()

  def capacity(self) -> int:
    return self._capacity

  def push(self, ordinal: int, consumer: int, arrays: Sequence[Any]) -> None:
    copies = [np.array(a, copy=True, order="C") for a in arrays]
    size = MESSAGE_OVERHEAD + sum(-(-c.nbytes // ALIGNMENT) * ALIGNMENT for c in copies)
    q = self._queue(ordinal)
    with q.cond:
      if q.used > 0 and q.used + size > self._capacity and not q.closed:
        start = time.perf_counter_ns()
        q.waiting += 1
        self.waiting[ordinal % MAX_DEVICES] += 1
        try:  # a Condition wait runs signal handlers on the main thread
          q.cond.wait_for(lambda: q.used == 0 or q.used + size <= self._capacity or
                          q.closed)
        except BaseException as e:
          self._interrupts.exception = e
          raise
        finally:
          q.waiting -= 1
          self.waiting[ordinal % MAX_DEVICES] -= 1
          q.blocked_ns += time.perf_counter_ns() - start
      seq = q.enqueued
      q.enqueued += 1
      q.bytes_enqueued += size
      q.used += size
      q.high_water = max(q.high_water, q.used)
      q.items.append((consumer, seq, copies, None, size))
      q.cond.notify_all()

  def _pop(self, ordinal: int, max_count: int):
    q = self._queue(ordinal)
    with q.cond:
      q.delivered, q.in_flight = q.delivered + q.in_flight, 0
      q.cond.notify_all()
      q.cond.wait_for(lambda: q.items or q.closed)
      batch = []
      while q.items and len(batch) < max_count:
        consumer, seq, copies, offsets, size = q.items.popleft()
        q.used -= size
        batch.append((consumer, seq, copies, offsets))
      q.in_flight = len(batch)
      q.cond.notify_all()
    return batch or None

  def deliver(self, ordinal: int, max_count: int, simple, slow, on_error):
    batch = self._pop(ordinal, max_count)
    if batch is None:
      return None
    return len(batch), sum(slow(c, payload, offsets) for c, _, payload, offsets in batch)

  def wait_delivered(self, ordinal: int, target: int, timeout_s: float) -> bool:
    q = self._queue(ordinal)
    with q.cond:
      return q.cond.wait_for(lambda: q.delivered >= target, timeout_s)

  def _set_closed(self, ordinal: int, closed: bool) -> None:
    q = self._queue(ordinal)
    with q.cond:
      q.closed = closed
      q.cond.notify_all()

  def producers_waiting(self, ordinal: int) -> int:
    return self._queue(ordinal).waiting

  def take_interrupt(self):
    exception = getattr(self._interrupts, "exception", None)
    self._interrupts.exception = None
    return exception

  def reset_after_fork(self) -> None:
    self._queues = {}
    self._lock = threading.Lock()
    self._interrupts = threading.local()
    self.waiting[:] = [0] * MAX_DEVICES  # in place: the dispatch path holds this list
    self.dispatched[:] = [0] * MAX_DEVICES

  def flush(self, ordinal: int) -> None:
    """Nothing to do: these queues hand over every message as soon as it arrives."""

  def close(self, ordinal: int) -> None:
    self._set_closed(ordinal, True)

  def open(self, ordinal: int) -> None:
    self._set_closed(ordinal, False)

  def enqueued(self, ordinal: int) -> int:
    return self._queue(ordinal).enqueued

  def counters(self, ordinal: int) -> tuple[int, int, int, int, int]:
    q = self._queue(ordinal)
    with q.cond:
      return q.enqueued, q.bytes_enqueued, q.used, q.high_water, q.blocked_ns

  def reset_high_water(self, ordinal: int) -> None:
    q = self._queue(ordinal)
    with q.cond:
      q.high_water = q.used
      q.blocked_ns = 0


_warned = False


def native_available() -> bool:
  return _native is not None


BUILD_ERROR_FILE = "_native_build_error.txt"  # written by setup.py when the build fails


def native_unavailable_reason(here: str | None = None) -> str:
  """Why the native queues are missing: the build's recorded error, a missing module, or
  the import error of one that is there (looked for in `here`, this package's folder by
  default)."""
  here = here or os.path.dirname(os.path.abspath(__file__))
  recorded = os.path.join(here, BUILD_ERROR_FILE)
  if os.path.exists(recorded):
    with open(recorded) as f:
      lines = f.read().strip().splitlines()
    return f"its build failed ({lines[0][:300] if lines else 'no reason was recorded'})"
  if not any(name.startswith("_native.") and name.endswith((".so", ".pyd"))
             for name in os.listdir(here)):
    return f"it was not built (there is no compiled _native module in {here})"
  return f"it failed to load ({native_import_error})"


def warn_native_unavailable() -> None:
  """Warns, once per process and in one line, that taps fall back to the Python-callback
  mechanism: why, and how to rebuild the native handler."""
  global _warned
  if not _warned:
    _warned = True
    warnings.warn(
        "minijax: host taps use jaxlib's Python callback mechanism (slower) instead of the "
        f"native tap extension, because {native_unavailable_reason()}. To rebuild it, install a "
        "C++17 compiler and reinstall minijax (pip install -e ., or with "
        "MINIJAX_REQUIRE_NATIVE=1 to see the compiler's error); "
        "MINIJAX_TAP_MECHANISM=callback silences this warning.", RuntimeWarning, stacklevel=3)


queues: Any = _native if _native is not None else PythonQueues()

if _native is not None:
  # Ctrl-C for taps that wait on other threads while the main thread is inside a program
  # (csrc/interrupts.h); without the native module only the main thread's waits end on it.
  _native.set_main_thread(threading.main_thread().ident)
  watched = _native.watched
  from jaxlib import _jax
  from minijax.runtime import backend
  backend.set_gc_callback(_native.ignoring_arguments(_jax.collect_garbage))
else:
  def watched(execute):
    return execute
