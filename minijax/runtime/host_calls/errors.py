"""Where exceptions raised by host functions wait until they reach the user.

Two kinds of host functions raise in two places:

* a value-returning host call (`pure_callback`, `io_callback`) runs while its computation
  runs.  Its exception is logged (`log_call_failure`: "minijax.pure_callback failed", with
  its traceback, as JAX logs it) and filed here (`file_call_exception`), and the computation
  fails with a message that names the filed exception by number.  The runtime waits for
  every computation that makes host calls, so the failure reaches the call that dispatched
  it, which hands jaxlib's error to `raise_filed`: as in JAX, the call raises a
  `JaxRuntimeError` ("INTERNAL: CpuCallback error calling callback: ..."), whose `__cause__`
  is the original exception with its traceback (`call_error`); a `SystemExit` (a host
  function that ends the program, as the debugger's `quit` does) is raised as it is;
* a host function delivered on a receiver thread (`debug.callback`) raises there: its
  exception is logged on the "minijax.callbacks" logger and kept (`file_async_exception`)
  until the call that ran its computation, which waits for its deliveries, raises it as
  JAX's does (a `JaxRuntimeError` caused by it), or, for a call made outside `jit`, until
  the next `minijax.effects_barrier()`, which raises the first one kept as itself, noting
  how many more there were (`raise_async_exceptions`).
"""
from __future__ import annotations

import itertools
import logging
import re
import threading

from jaxlib._jax import JaxRuntimeError

logger = logging.getLogger("minijax.callbacks")

_lock = threading.Lock()
_numbers = itertools.count(1)
_filed: dict[int, BaseException] = {}
_async: list[BaseException] = []
_FILED = re.compile(r"minijax host call error #(\d+)")


def file_call_exception(exc: BaseException, api: str = "pure_callback") -> str:
  """Logs and files the exception of a host call of `api`; returns the message its
  computation fails with.  A `SystemExit` (the debugger's `quit`) is not logged: the
  program is told to end, and `raise_filed` raises it as it is."""
  if not isinstance(exc, SystemExit):
    logger.error("minijax.%s failed", api, exc_info=exc)
  with _lock:
    number = next(_numbers)
    _filed[number] = exc
  return f"minijax host call error #{number}: {type(exc).__name__}: {exc}"


def log_call_failure(api: str) -> None:
  """Logs the exception being handled, raised by the host function of `api`."""
  logger.exception("minijax.%s failed", api)


def call_error(exc: BaseException) -> JaxRuntimeError:
  """The error a call whose host function raised `exc` fails with (JAX's type and words);
  raise it `from exc`."""
  return JaxRuntimeError(f"INTERNAL: CpuCallback error calling callback: "
                         f"{type(exc).__name__}: {exc}")


def raise_filed(err: BaseException) -> None:
  """Raises `call_error` of the original exception that `err` (a failed computation's error)
  names, if it names one that was filed; else returns."""
  match = _FILED.search(str(err))
  if match is None:
    return
  with _lock:
    exc = _filed.pop(int(match.group(1)), None)
  if isinstance(exc, SystemExit):
    raise exc
  if exc is not None:
    raise call_error(exc) from exc


def file_async_exception(exc: BaseException, where: str) -> None:
  """Logs and keeps the exception of an asynchronously delivered host function."""
  logger.error("Exception in %s; it is re-raised by the call that ran it (or the next "
               "minijax.effects_barrier())", where, exc_info=exc)
  with _lock:
    _async.append(exc)


def raise_async_exceptions(as_call_error: bool = False) -> None:
  """Raises the first exception kept by `file_async_exception` since the last call (with a
  note saying how many more there were), and forgets them all; else returns.  With
  `as_call_error`, raises `call_error` of it instead (from it), as a call whose computation
  made the host call does in JAX."""
  if not _async:
    return
  with _lock:
    pending = list(_async)
    _async.clear()
  first = pending[0]
  if len(pending) > 1:
    first.add_note(f"({len(pending) - 1} more exception(s) were raised by host callbacks since "
                   "the last effects_barrier(); they were logged on the 'minijax.callbacks' "
                   "logger)")
  if as_call_error:
    raise call_error(first) from first
  raise first.with_traceback(first.__traceback__) from None
