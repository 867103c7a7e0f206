"""`checkify`: run-time checks as values (`jax.experimental.checkify`).

`check(pred, msg, *fmt_args, **fmt_kwargs)` checks a predicate.  Eagerly, a false one
raises this module's `JaxRuntimeError` (a `ValueError`, as in JAX) with the formatted
message and " (`check` failed)", or, inside `checkify(f)`, is recorded in the `Error` that
the checkified function returns beside its result.  A check of a traced value (under `jit`,
`vmap`, `grad`) is functionalized only inside `checkify`, as in JAX; there minijax sends the
predicate and format arguments to the host with an ordered debug callback, and `checkify`
waits for the callbacks (`effects_barrier`) before building the `Error`: the first failed
check wins.  Outside `checkify` a traced check raises JAX's `ValueError`.  Differences from
JAX: only user checks (`FailedCheckError`) are collected (no automatic NaN/OOB/division
checks), and a failure under `vmap` is not prefixed with its mapped index."""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from minijax.core.trace import Tracer
from minijax.runtime.barrier import effects_barrier


class JaxRuntimeError(ValueError):
  """A failed check, raised (JAX's checkify error class: a `ValueError`, unlike jaxlib's
  `JaxRuntimeError`)."""


class JaxException(Exception):
  """Base of the errors checkify can check for."""


class FailedCheckError(JaxException):
  """A `check` whose predicate was false."""


class NaNError(JaxException):
  pass


class OOBError(JaxException):
  pass


class DivisionByZeroError(JaxException):
  pass


ErrorCategory = type[JaxException]
user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


class Error:
  """The outcome of a checkified function: the first failed check's message, or none."""

  def __init__(self, message: str | None = None):
    self._message = message

  def get(self) -> str | None:
    return self._message

  def get_exception(self) -> JaxException | None:
    return None if self._message is None else FailedCheckError(self._message)

  def throw(self) -> None:
    if self._message is not None:
      raise JaxRuntimeError(self._message)

  def __repr__(self):
    return f"Error({self._message!r})"


class _Collecting(threading.local):
  errors: list | None = None


_collecting = _Collecting()


def check(pred: Any, msg: str, *fmt_args, **fmt_kwargs) -> None:
  """Checks that `pred` is true (see the module docstring)."""
  if isinstance(pred, Tracer) or any(isinstance(a, Tracer) for a in (*fmt_args,
                                                                     *fmt_kwargs.values())):
    if _collecting.errors is None:
      raise ValueError("Cannot abstractly evaluate a checkify.check which was not "
                       "functionalized: a `check` of a traced value (under jit, vmap, grad, "
                       "...) must run inside `checkify.checkify`")
    # Inside checkify: the predicate travels to the host, where a false one is recorded.
    from minijax.callbacks.debug import debug_callback
    debug_callback(_check_on_host, msg, pred, fmt_args, fmt_kwargs, ordered=True)
    return
  _check_on_host(msg, pred, fmt_args, fmt_kwargs, _collecting.errors)


def debug_check(pred: Any, msg: str, *fmt_args, **fmt_kwargs) -> None:
  """`check` inside `checkify`; elsewhere nothing (the check is dropped, as in JAX)."""
  if _collecting.errors is not None:
    check(pred, msg, *fmt_args, **fmt_kwargs)


# Where host callbacks (run on the runtime's thread) record traced checks' failures: the
# innermost running `checkify` call's list.
_host_errors: list[list] = []


def _check_on_host(msg, pred, fmt_args, fmt_kwargs, errors=None) -> None:
  if bool(np.all(np.asarray(pred))):
    return
  message = msg.format(*fmt_args, **fmt_kwargs) + " (`check` failed)"
  if errors is None and _host_errors:
    errors = _host_errors[-1]
  if errors is None:
    raise JaxRuntimeError(message)
  errors.append(message)


def check_error(error: Error) -> None:
  """Raises the failure `error` holds, if any (as `error.throw()`)."""
  error.throw()


def checkify(f: Callable, errors: frozenset = user_checks) -> Callable:
  """`f` returning `(Error, out)`: the first failed `check` in it, instead of raising."""
  unsupported = set(errors) - user_checks
  if unsupported:
    names = sorted(e.__name__ for e in unsupported)
    raise NotImplementedError(
        f"checkify: the automatic checks {names} are not implemented in minijax; pass "
        "errors=checkify.user_checks (the checks made with checkify.check)")

  def checked(*args, **kwargs):
    previous, _collecting.errors = _collecting.errors, []
    _host_errors.append(_collecting.errors)
    try:
      out = f(*args, **kwargs)
      effects_barrier()  # the traced checks' host callbacks have all run
      found = _collecting.errors
    finally:
      _collecting.errors = previous
      _host_errors.pop()
    return Error(found[0] if found else None), out
  return checked


__all__ = ["Error", "ErrorCategory", "FailedCheckError", "JaxException", "JaxRuntimeError",
           "all_checks", "automatic_checks", "check", "check_error", "checkify", "debug_check",
           "div_checks", "float_checks", "index_checks", "nan_checks", "user_checks"]
