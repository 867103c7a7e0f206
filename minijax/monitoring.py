"""`minijax.monitoring`: events and durations that minijax reports, and listeners for them.

As in JAX, compiling a `jit` records three durations, in seconds, each with the keyword
`fun_name`: `/jax/core/compile/jaxpr_trace_duration` (tracing the function),
`/jax/core/compile/jaxpr_to_mlir_module_duration` (lowering) and
`/jax/core/compile/backend_compile_duration` (XLA).  Users record their own events with
`record_event`, `record_event_duration_secs`, `record_event_time_span` and
`record_scalar`; every listener registered for that kind is called with the event's name,
its value and its keywords.  This module imports nothing of minijax, so every floor can
report to it."""
from __future__ import annotations

from typing import Callable

_event_listeners: list[Callable] = []
_duration_listeners: list[Callable] = []
_time_span_listeners: list[Callable] = []
_scalar_listeners: list[Callable] = []


def record_event(event: str, **kwargs) -> None:
  for listener in list(_event_listeners):
    listener(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
  for listener in list(_duration_listeners):
    listener(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
  for listener in list(_time_span_listeners):
    listener(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs) -> None:
  for listener in list(_scalar_listeners):
    listener(event, value, **kwargs)


def register_event_listener(callback: Callable) -> None:
  _event_listeners.append(callback)


def register_event_duration_secs_listener(callback: Callable) -> None:
  _duration_listeners.append(callback)


def register_event_time_span_listener(callback: Callable) -> None:
  _time_span_listeners.append(callback)


def register_scalar_listener(callback: Callable) -> None:
  _scalar_listeners.append(callback)


def _unregister(listeners: list, callback: Callable, kind: str) -> None:
  if callback not in listeners:
    raise AssertionError(f"{callback} is not a registered {kind} listener")
  listeners.remove(callback)


def unregister_event_listener(callback: Callable) -> None:
  _unregister(_event_listeners, callback, "event")


def unregister_event_duration_listener(callback: Callable) -> None:
  _unregister(_duration_listeners, callback, "event duration")


def unregister_event_time_span_listener(callback: Callable) -> None:
  _unregister(_time_span_listeners, callback, "event time span")


def unregister_scalar_listener(callback: Callable) -> None:
  _unregister(_scalar_listeners, callback, "scalar")


def clear_event_listeners() -> None:
  for listeners in (_event_listeners, _duration_listeners, _time_span_listeners,
                    _scalar_listeners):
    listeners.clear()


__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_listener",
           "register_event_duration_secs_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener"]
