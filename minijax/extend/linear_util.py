"""`wrap_init`: a function wrapped for the transformation entry points of `jax.api_util`.

JAX threads `WrappedFun`s through its internals; here one only carries the function and
its debug information, and `call_wrapped` calls it."""
from __future__ import annotations

from typing import Any, Callable


class WrappedFun:
  """A function with the parameters it is called with (`params`) and `debug_info`."""

  def __init__(self, f: Callable, params: dict | None = None, debug_info: Any = None):
    self.f = f
    self.params = dict(params or {})
    self.debug_info = debug_info

  def call_wrapped(self, *args, **kwargs):
    return self.f(*args, **self.params, **kwargs)

  __call__ = call_wrapped

  def __repr__(self):
    return f"WrappedFun({getattr(self.f, '__name__', self.f)!r})"


def wrap_init(f: Callable, params: dict | None = None, *, debug_info: Any = None) -> WrappedFun:
  return WrappedFun(f, params, debug_info)


__all__ = ["WrappedFun", "wrap_init"]
