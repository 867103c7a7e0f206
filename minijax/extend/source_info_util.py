"""`jax.extend.source_info_util` for libraries: where operations come from.

`register_exclusion(path)` hides a library's frames from filtered tracebacks (as
minijax's own); `current()` is the user's frame now;
`user_context` is accepted and changes nothing (minijax records the frame it finds)."""
from __future__ import annotations

import contextlib

from minijax.core.jaxpr import SourceInfo, user_source_info
from minijax.core.traceback_util import exclude_path


def register_exclusion(path: str) -> None:
  exclude_path(path)


def current() -> SourceInfo | None:
  return user_source_info()


@contextlib.contextmanager
def user_context(traceback=None, *, name_stack=None):
  del traceback, name_stack
  yield


__all__ = ["SourceInfo", "current", "register_exclusion", "user_context"]
