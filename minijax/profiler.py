"""`minijax.profiler`: profiles of what runs, recorded by jaxlib's profiler, as JAX's are.

`start_trace(log_dir)` / `stop_trace()` (or `with trace(log_dir):`) run a jaxlib
`ProfilerSession`, which records XLA's execution on every device and the host activity
marked by `TraceAnnotation`s, and writes them under `log_dir/plugins/profile/<run>/`
(`*.xplane.pb`, and `*.trace.json.gz` for Perfetto or TensorBoard).  `TraceAnnotation` is
jaxlib's `TraceMe`; `StepTraceAnnotation` marks a training step; `annotate_function`
wraps a function in one.  `device_memory_profile` is the client's heap profile (pprof).
Perfetto links and traces made on the spot (`create_perfetto_link`, `create_perfetto_trace`)
are not implemented: open the written trace instead."""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Callable

from jaxlib import _profiler

from minijax.runtime import backend as runtime_backend

TraceAnnotation = _profiler.TraceMe
ProfileOptions = _profiler.ProfileOptions


class StepTraceAnnotation(TraceAnnotation):
  """A `TraceAnnotation` of one training step (`step_num=` among the keywords)."""

  def __init__(self, name: str, **kwargs):
    super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs):
  """`func`, each call of it inside a `TraceAnnotation` named `name` (its qualified name)."""
  label = name or getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(label, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


_lock = threading.Lock()
_active: dict = {}  # "session", "log_dir" while a trace runs


def start_trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
  """Starts recording a profile, to be written under `log_dir` by `stop_trace`."""
  if create_perfetto_link or create_perfetto_trace:
    raise NotImplementedError("minijax.profiler: create_perfetto_link and create_perfetto_trace "
                              "are not implemented; open the trace.json.gz written under "
                              "log_dir/plugins/profile in Perfetto instead")
  with _lock:
    if _active:
      raise RuntimeError("Profile has already been started. Only one profile may be run at a "
                         "time.")
    runtime_backend.get_client()  # (the devices the session records)
    options = profiler_options if profiler_options is not None else ProfileOptions()
    _active.update(session=_profiler.ProfilerSession(options), log_dir=str(log_dir))


def stop_trace() -> None:
  """Stops the profile `start_trace` started and writes it."""
  with _lock:
    if not _active:
      raise RuntimeError("No profile started")
    session, log_dir = _active.pop("session"), _active.pop("log_dir")
  session.stop_and_export(log_dir)


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None):
  """A profile of the block, written under `log_dir`."""
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


_server: list = []


def start_server(port: int):
  """Starts jaxlib's profiler server on `port` (for TensorBoard's on-demand capture)."""
  if _server:
    raise ValueError("Only one profiler server can be active at a time.")
  _server.append(_profiler.start_server(port))
  return _server[0]


def stop_server() -> None:
  if not _server:
    raise ValueError("No active profiler server.")
  _server.clear()  # (the server stops when its object goes)


def device_memory_profile(backend: str | None = None) -> bytes:
  """The devices' memory in use, as a gzipped pprof profile."""
  runtime_backend._check_backend(backend)
  return runtime_backend.get_client().heap_profile()


def save_device_memory_profile(filename, backend: str | None = None) -> None:
  """Writes `device_memory_profile()` to `filename`."""
  with open(filename, "wb") as f:
    f.write(device_memory_profile(backend))


__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "save_device_memory_profile", "start_server", "start_trace",
           "stop_server", "stop_trace", "trace"]
