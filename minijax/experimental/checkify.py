"""`checkify`: run-time checks as values (`jax.experimental.checkify`), for eager code.

`check(pred, msg, *fmt_args, **fmt_kwargs)` checks a predicate.  Eagerly, a false one
raises this module's `JaxRuntimeError` (a `ValueError`, as in JAX) with the formatted
message and " (`check` failed)", or, inside `checkify(f)`, is recorded
in the `Error` that the checkified function returns beside its result.  minijax does not
functionalize checks inside `jit`, `vmap` or `grad`: a `check` on a traced predicate raises
a `ValueError` saying so (JAX, too, refuses a check it cannot functionalize)."""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from minijax.core.trace import Tracer


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
    raise ValueError("checkify.check of a traced value: minijax runs checks eagerly only "
                     "(outside jit, vmap and grad); check a concrete value, or use "
                     "minijax.debug.callback to test the value on the host")
  if bool(np.all(np.asarray(pred))):
    return
  message = msg.format(*fmt_args, **fmt_kwargs) + " (`check` failed)"
  if _collecting.errors is not None:
    _collecting.errors.append(message)
  else:
    raise JaxRuntimeError(message)


def check_error(error: Error) -> None:
  """Raises the failure `error` holds, if any (as `error.throw()`)."""
  error.throw()


def checkify(f: Callable, errors: frozenset = user_checks) -> Callable:
  """`f` returning `(Error, out)`: the first failed `check` in it, instead of raising."""
  def checked(*args, **kwargs):
    previous, _collecting.errors = _collecting.errors, []
    try:
      out = f(*args, **kwargs)
      found = _collecting.errors
    finally:
      _collecting.errors = previous
    return Error(found[0] if found else None), out
  return checked


__all__ = ["Error", "ErrorCategory", "FailedCheckError", "JaxException", "JaxRuntimeError", "all_checks", "automatic_checks",
           "check", "check_error", "checkify", "div_checks", "float_checks", "index_checks", "nan_checks",
           "user_checks"]
