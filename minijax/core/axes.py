"""Named axes: the axis names that collectives may refer to, bound by a context.

`pmap`, `shard_map` and `vmap(..., axis_name=...)` bind names while they trace the
function they map (`extend_axis_env`), and every transformation that later re-traces such
a body binds them again for the duration (a jvp or transpose of a `shard_map` body, say).
A collective's abstract evaluation asks `axis_size(name)`: a name that nothing binds is
JAX's `NameError`.  Each binding records its kind: `"spmd"` for the device axes of
`pmap`/`shard_map` (collectives over them become communication between devices) and
`"batch"` for `vmap` (collectives over them are rewritten by the batching rules and never
reach the lowering).  The environment is per thread, like the current trace.
"""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Iterable, NamedTuple, Sequence


class AxisFrame(NamedTuple):
  name: object   # a hashable name, usually a string
  size: int
  kind: str      # "spmd" or "batch"


class _AxisEnv(threading.local):
  def __init__(self):
    self.frames: list[AxisFrame] = []


_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(frames: Iterable[tuple]):
  """Binds `(name, size, kind)` triples (kind defaults to "spmd") while the block runs."""
  new = [AxisFrame(*f) if len(f) == 3 else AxisFrame(f[0], f[1], "spmd") for f in frames]
  _env.frames.extend(new)
  try:
    yield
  finally:
    del _env.frames[len(_env.frames) - len(new):]


def current_frames() -> tuple:
  """Every binding in force, outermost first (a key of caches of traces: a function
  that asks an axis's size is traced per size)."""
  return tuple(_env.frames)


def _unbound(name) -> NameError:
  bound = [f.name for f in _env.frames]
  return NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by "
                   f"pmap, shard_map or vmap's axis_name) are available to collective "
                   f"operations: {bound}")


def frame(name) -> AxisFrame:
  """The innermost binding of `name`; NameError when it is unbound."""
  for f in reversed(_env.frames):
    if f.name == name:
      return f
  raise _unbound(name)


def axis_size(name) -> int:
  return frame(name).size


def axes_size(names: Sequence) -> int:
  """The product of the sizes of `names` (each must be bound)."""
  return math.prod(axis_size(n) for n in names)


def is_bound(name) -> bool:
  return any(f.name == name for f in _env.frames)


def spmd_axis_bound() -> bool:
  """Whether code is being traced for several devices (inside `pmap` or `shard_map`)."""
  return any(f.kind == "spmd" for f in _env.frames)


def as_axis_names(axis_name) -> tuple:
  """`'i'` or `('i', 'j')` as a tuple of names."""
  if isinstance(axis_name, (tuple, list)):
    return tuple(axis_name)
  return (axis_name,)
