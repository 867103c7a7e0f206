"""`jax._src.traceback_util` for libraries: `api_boundary` is minijax's own (it filters
minijax's frames); `register_exclusion(path)` adds `path` to the files whose frames are
hidden from filtered tracebacks, `_exclude_paths` is that list itself (flax adds and
removes its folder there), `include_frame(frame)` whether a frame is the user's (equinox
keeps those in its runtime errors), `UnfilteredStackTrace` the cause that carries the whole
stack."""
from __future__ import annotations

import types

from minijax.core.traceback_util import UnfilteredStackTrace, api_boundary, exclude_path
from minijax.core.traceback_util import is_internal_frame
from minijax.core.traceback_util import excluded_paths as _exclude_paths  # (the same list)


def register_exclusion(path: str) -> None:
  exclude_path(path)


def include_frame(frame: types.FrameType) -> bool:
  return not is_internal_frame(frame)


__all__ = ["UnfilteredStackTrace", "api_boundary", "include_frame", "register_exclusion"]
