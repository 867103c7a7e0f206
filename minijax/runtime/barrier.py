"""`effects_barrier()`: wait for every effect of the computations dispatched so far.

It waits as the taps' barrier does (`taps.effects_barrier`: the runtime tokens of every
effect, then every tap queue, whose receivers also deliver `debug.callback`s), then raises
what the host functions raised meanwhile: the first exception of an asynchronously
delivered callback (`debug.callback`, `debug.print`), as the original exception, before a
`TapFunctionException` of `id_tap`'s tap functions.  Value-returning callbacks raise from
their own calls, never here.

`wait_for_effects()` is the waiting half alone, for code that must run after everything
already dispatched (a debug callback called outside `jit` keeps its place after the ones
inside computations dispatched before it).
"""
from __future__ import annotations

from minijax.runtime import host_calls, taps
from minijax.runtime.taps import receiver


def effects_barrier() -> None:
  """Waits until every computation with effects already dispatched, on every device, has
  finished and every host callback it made has run; then raises the first exception a
  `debug.callback` raised since the last barrier, or `TapFunctionException` if a tap
  function raised."""
  tap_error = None
  try:
    taps.effects_barrier()
  except taps.TapFunctionException as e:
    tap_error = e
  host_calls.raise_async_exceptions()
  if tap_error is not None:
    raise tap_error


def wait_for_effects() -> None:
  """Waits for the effects of every computation dispatched so far, raising nothing; returns
  at once on a receiver thread (which would otherwise wait for itself)."""
  if receiver.in_receiver_thread() or not receiver._receivers:
    return
  receiver._wait_for_dispatched()
  receiver._wait_for_receivers()
