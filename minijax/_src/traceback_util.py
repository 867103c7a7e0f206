"""`jax._src.traceback_util` for libraries: `api_boundary` is minijax's own (it filters
minijax's frames); `register_exclusion(path)` adds `path` to the files whose frames are
hidden from filtered tracebacks."""
from __future__ import annotations

from minijax.core.traceback_util import api_boundary, exclude_path

_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
  _exclude_paths.append(path)
  exclude_path(path)


__all__ = ["api_boundary", "register_exclusion"]
