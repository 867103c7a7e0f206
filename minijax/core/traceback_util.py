"""Tracebacks that show the user's frames, as JAX's `jax_traceback_filtering` does.

An error raised deep inside a transformation (a shape mismatch in a primitive, say)
unwinds through a dozen frames of minijax's own machinery before it reaches the user's
call.  The public entry points (`jit`'s function, `grad`, `vmap`, `jvp`, ...) are API
boundaries: when an exception leaves the outermost one, its traceback is rewritten to keep
only frames outside the `minijax` package, so what remains is the user's call site, the
user's function and the line in it that failed.  Nothing is lost: the full traceback stays
on the exception (`unfiltered_traceback(e)`), and `config.traceback_filtering`
(`MINIJAX_TRACEBACK_FILTERING`, or JAX's `JAX_TRACEBACK_FILTERING` and
`jax_traceback_filtering`) chooses JAX's modes:

* `auto` (the default): `tracebackhide` under IPython, else `quiet_remove_frames`;
* `quiet_remove_frames`: filter, and add a one-line note saying so and how to see all;
* `remove_frames`: filter, and chain the unfiltered traceback as the `__cause__`;
* `tracebackhide`: keep every frame but mark minijax's with `__tracebackhide__`, which
  IPython and pytest honour;
* `off`: leave tracebacks alone.
"""
from __future__ import annotations

import functools
import os
import sys
import traceback
import types
from typing import Callable, TypeVar

from minijax.config import config

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_UNFILTERED = "__minijax_unfiltered_traceback__"

C = TypeVar("C", bound=Callable)

# The code objects of API-boundary frames: an exception inside an inner boundary is left to
# the outermost one, which sees the whole stack.
_boundary_codes: set = set()


# Files (or folders) whose frames are hidden like minijax's own: minijax, and the files a
# library registered (`jax._src.traceback_util.register_exclusion`), or put in or took out
# of this list itself (`jax._src.traceback_util._exclude_paths`: flax's show/hide switch).
excluded_paths: list[str] = [_PACKAGE_DIR]


def exclude_path(path: str) -> None:
  """Hides frames of files under `path` from filtered tracebacks, as minijax's own."""
  if path not in excluded_paths:
    excluded_paths.append(path)


def is_internal_frame(frame: types.FrameType) -> bool:
  return frame.f_code.co_filename.startswith(tuple(excluded_paths))


class UnfilteredStackTrace(Exception):
  """Carries the full traceback of an exception whose own traceback was filtered (the
  `__cause__` of that exception under `remove_frames`)."""


def unfiltered_traceback(e: BaseException) -> types.TracebackType | None:
  """The traceback of `e` before minijax filtered it (its own traceback if it was not)."""
  return getattr(e, _UNFILTERED, e.__traceback__)


def format_unfiltered(e: BaseException) -> str:
  """The text of `e` with its full traceback, minijax's frames included."""
  return "".join(traceback.format_exception(type(e), e, unfiltered_traceback(e)))


def _mode() -> str:
  mode = config.traceback_filtering
  if mode in (None, "auto"):
    return "tracebackhide" if "IPython" in sys.modules and _in_ipython() else "quiet_remove_frames"
  return mode


def _in_ipython() -> bool:
  try:
    get_ipython  # type: ignore[name-defined]  # noqa: B018
    return True
  except NameError:
    return False


def _under_outer_boundary(frame: types.FrameType) -> bool:
  f = frame.f_back
  while f is not None:
    if f.f_code in _boundary_codes:
      return True
    f = f.f_back
  return False


def _filtered(tb: types.TracebackType | None) -> tuple[types.TracebackType | None, int]:
  kept, removed = [], 0
  for frame, lineno in traceback.walk_tb(tb):
    if is_internal_frame(frame):
      removed += 1
    else:
      kept.append((frame, lineno))
  out = None
  for frame, lineno in reversed(kept):
    out = types.TracebackType(out, frame, frame.f_lasti, lineno)
  return out, removed


def filter_exception(e: Exception, boundary_frame: types.FrameType) -> None:
  """Rewrites the traceback of `e`, which is leaving the API boundary running in
  `boundary_frame`, as the mode in force says.  The caller re-raises `e` (bare `raise`)."""
  if _under_outer_boundary(boundary_frame) or hasattr(e, _UNFILTERED):
    return
  mode = _mode()
  tb = e.__traceback__
  if mode == "off" or tb is None:
    return
  if mode == "tracebackhide":
    for frame, _ in traceback.walk_tb(tb):
      if is_internal_frame(frame):
        frame.f_locals["__tracebackhide__"] = True
    return
  filtered, removed = _filtered(tb)
  if not removed:
    return
  try:
    setattr(e, _UNFILTERED, tb)
  except AttributeError:  # an exception type without attributes: keep it as it is
    return
  e.with_traceback(filtered)
  if mode == "remove_frames":
    full = UnfilteredStackTrace(
        "".join(traceback.format_exception_only(type(e), e)).strip()
        + "\n\nThe stack trace below includes minijax's internal frames; the exception "
        "that follows is the original one, with them removed.\n\n--------------------")
    full.with_traceback(tb)
    full.__cause__, full.__context__ = e.__cause__, e.__context__
    full.__suppress_context__ = e.__suppress_context__
    e.__cause__, e.__context__ = full, None
  else:
    e.add_note("--------------------\n"
               f"For simplicity, minijax removed {removed} of its internal frames from this "
               "traceback. Set MINIJAX_TRACEBACK_FILTERING=off (or "
               "minijax.config.update('jax_traceback_filtering', 'off')) to keep them; "
               "minijax.core.traceback_util.format_unfiltered(e) shows them.")


def register_boundary(code: types.CodeType) -> None:
  """Marks `code` as an API boundary whose frames handle exceptions with
  `filter_exception` themselves (jit's fast path does, to avoid a wrapper)."""
  _boundary_codes.add(code)


def api_boundary(fun: C) -> C:
  """Wraps `fun` so that exceptions leaving it have their tracebacks filtered."""
  @functools.wraps(fun)
  def boundary(*args, **kwargs):
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      filter_exception(e, sys._getframe())
      raise
  register_boundary(boundary.__code__)
  return boundary  # type: ignore[return-value]
