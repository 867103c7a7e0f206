"""`effects_barrier()`: wait for every effect of the computations dispatched so far.

It waits as the taps' barrier does (`taps.effects_barrier`: the runtime tokens of every
effect, then every tap queue, whose receivers also deliver `debug.callback`s), then raises
what the host functions raised meanwhile and no call has raised yet: the first exception
of a debug callback (`debug.callback`, `debug.print`), as the original exception, before a
`TapFunctionException` of `id_tap`'s tap functions.  Value-returning callbacks raise from
their own calls, never here, and so do debug callbacks once their call has waited for
them (`finish_debug_calls`).

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
  if host_calls.host_call_depth():
    raise RuntimeError(
        "effects_barrier() was called from inside a pure_callback or io_callback function. It "
        "would wait for the computation that is calling that function, forever. Call it "
        "from the thread that launched the computation, after the call returns.")
  tap_error = None
  try:
    taps.effects_barrier()
  except taps.TapFunctionException as e:
    tap_error = e
  try:
    host_calls.raise_async_exceptions()
  except BaseException as e:
    if tap_error is not None:
      e.add_note(f"(and a tap function raised: {tap_error})")
    raise
  if tap_error is not None:
    raise tap_error


def finish_debug_calls() -> None:
  """What a call whose computation made debug callbacks does before it returns, as JAX's
  does: waits until they have run, then raises the first exception one of them raised (a
  `JaxRuntimeError` caused by it; `Effect.delivered_by_return`).  On a receiver thread or
  inside a value-returning host call it returns at once (it would wait for itself)."""
  if receiver.in_receiver_thread() or host_calls.host_call_depth():
    return
  wait_for_effects()
  host_calls.raise_async_exceptions(as_call_error=True)


def wait_for_effects() -> None:
  """Waits for the effects of every computation dispatched so far, raising nothing; returns
  at once on a receiver thread or inside a value-returning host call (either would wait for
  itself)."""
  if receiver.in_receiver_thread() or host_calls.host_call_depth() or not receiver._receivers:
    return
  receiver._wait_for_dispatched()
  receiver._wait_for_receivers()
