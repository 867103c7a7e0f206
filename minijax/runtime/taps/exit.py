"""What becomes of pending taps when the interpreter exits.

The exit handler (registered when this module is imported, so that it runs after the
exit handlers of user code imported later, which may tap) drains what it can: it waits
for the computations already dispatched and for the receivers to deliver their taps, but
for at most `config.tap_exit_timeout` seconds (`MINIJAX_TAP_EXIT_TIMEOUT`, 5 by default;
at most one second when the program is ending because of an uncaught KeyboardInterrupt),
and a Ctrl-C while it waits ends the wait at once.  If everything was delivered, it stops
the receivers and logs the exceptions of tap functions not yet reported by a barrier.
Otherwise it writes on stderr how many taps were not delivered and returns: receiver
threads are daemons, and computations still waiting for room in a queue (on XLA's
threads, or on daemon threads of the program) do not keep the process from exiting.
"""
from __future__ import annotations

import atexit
import sys
import time

from minijax.config import config
from minijax.runtime.taps import receiver
from minijax.runtime.taps.queues import queues

_INTERRUPTED_EXIT_TIMEOUT = 0.5  # after Ctrl-C the user wants out: taps get half a second


def _exiting_after_interrupt() -> bool:
  last = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
  return isinstance(last, KeyboardInterrupt)


def drain(timeout: float) -> tuple[bool, bool]:
  """Waits up to `timeout` seconds for pending computations and taps; returns
  `(finished, interrupted)`."""
  deadline = time.monotonic() + timeout
  try:
    finished = (receiver._wait_for_dispatched(deadline) and
                receiver._wait_for_receivers(deadline))
    return finished, False
  except KeyboardInterrupt:
    return False, True


def undelivered_taps() -> int:
  """Taps enqueued but not yet delivered, plus taps waiting for room in a queue."""
  waiting = sum(queues.producers_waiting(o) for o in list(receiver._receivers))
  return sum(target - rec.processed for rec, target in receiver._undelivered()) + waiting


def _at_exit() -> None:
  if not receiver._receivers:
    return  # no tap ever ran
  timeout = config.tap_exit_timeout
  if _exiting_after_interrupt():
    timeout = min(timeout, _INTERRUPTED_EXIT_TIMEOUT)
  try:
    finished, interrupted = drain(timeout)
  except Exception:
    receiver.logger.exception("At exit: waiting for pending taps failed")
    finished, interrupted = False, False
  if finished:
    try:
      receiver.raise_tap_exceptions()
    except receiver.TapFunctionException as e:
      receiver.logger.error("At exit: %s", e)
    receiver._stop_receivers(timeout=max(0.1, timeout))
    return
  lost = undelivered_taps()
  why = ("interrupted" if interrupted else
         f"the tap functions did not finish within tap_exit_timeout={timeout:g} s")
  sys.stderr.write(
      f"minijax: exiting with {lost} tap(s) not delivered ({why}). Call barrier_wait() "
      "before exiting to wait for them all, or raise MINIJAX_TAP_EXIT_TIMEOUT.\n")
  sys.stderr.flush()


atexit.register(_at_exit)
