"""`wrap_init`: a function wrapped for the transformation entry points of `jax.api_util`,
and `transformation`, JAX's way of wrapping one in a generator.

JAX threads `WrappedFun`s through its internals; here one only carries the function and
its debug information, and `call_wrapped` calls it."""
from __future__ import annotations

import functools
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


def transformation(gen: Callable) -> Callable:
  """`gen(*params, *args)` is a generator that yields the `(args, kwargs)` to call the
  wrapped function with, receives its result, and yields the result of the whole; the
  decorated `gen(fun, *params)` returns `fun` so wrapped."""
  @functools.wraps(gen)
  def transform(fun: WrappedFun, *params) -> WrappedFun:
    @functools.wraps(fun.f)
    def call(*args, **kwargs):
      steps = gen(*params, *args, **kwargs)
      inner_args, inner_kwargs = next(steps)
      return steps.send(fun.call_wrapped(*inner_args, **inner_kwargs))
    return WrappedFun(call, debug_info=fun.debug_info)
  return transform


__all__ = ["WrappedFun", "transformation", "wrap_init"]
