"""Argument checking, dtype promotion and broadcasting shared by minijax.numpy.

Every numpy function turns its array arguments into minijax values through `check` (which
rejects strings and other objects with a TypeError naming the type), promotes them with
JAX's lattice (`dtypes.result_type` on (dtype, weak_type) pairs, so Python scalars are
weak) and broadcasts them with numpy's rules before binding lax primitives; functions that
bind one elementwise lax op leave rank-0 operands rank 0 (`keep_scalars`), as JAX does.
Called eagerly, a function made of several lax ops runs as one compiled call
(`compiled_when_eager`), as JAX's jitted numpy functions do.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.core.trace import Tracer, is_eval_context
from minijax.runtime.array import Array

_ARRAYLIKE = (Array, Tracer, np.ndarray, np.generic) + dtypes.PYTHON_SCALARS


def is_arraylike(x) -> bool:
  return isinstance(x, _ARRAYLIKE) or (hasattr(x, "aval") and hasattr(x, "shape"))


def compiled_when_eager(dynamic: int | None = None, *, name: str | None = None):
  """Decorator: the function runs as one compiled call when called eagerly, instead of one
  dispatch per lax op; under a trace it runs inline, so jaxprs show its primitives.

  The first `dynamic` positional arguments (all of them when None) are arrays, checked with
  `check` (None is let through) and passed to the compiled call; the others, positional or
  keyword, are static: one jitted function per value of them.  Numpy's sequences among the
  arrays, and unhashable static values (a list `axis`, an array `where=`), make the function
  run op by op instead.  `name` (by default the function's) names it in errors and logs."""
  def wrap(impl):
    fn_name = name or impl.__name__
    jitted: dict = {}

    def run(*args, **kwargs):
      if not is_eval_context():
        return impl(*args, **kwargs)
      arrays = args if dynamic is None else args[:dynamic]
      if any(type(a) in (list, tuple) for a in arrays):
        return impl(*args, **kwargs)
      check(fn_name, *(a for a in arrays if a is not None))
      static = () if dynamic is None else args[dynamic:]
      key = (static, *kwargs.items()) if kwargs else static
      try:
        fn = jitted.get(key)
      except TypeError:
        return impl(*args, **kwargs)
      if fn is None:
        from minijax.api import jit

        def compiled(*xs):
          return impl(*xs, *static, **kwargs)
        compiled.__name__ = compiled.__qualname__ = fn_name
        fn = jitted[key] = jit(compiled)
      return fn(*arrays)

    run.__name__ = run.__qualname__ = impl.__name__
    run.__doc__ = impl.__doc__
    run.__wrapped__ = impl
    return run
  return wrap


def check(name: str, *args) -> None:
  for x in args:
    if not is_arraylike(x):
      raise TypeError(f"{name}: argument of type {type(x).__name__} is not a valid array "
                      f"({x!r:.60}); pass minijax arrays, numpy arrays or Python scalars")


def shape(x) -> tuple:
  return get_aval(x).shape


def ndim(x) -> int:
  return len(get_aval(x).shape)


def dtype(x) -> np.dtype:
  return get_aval(x).dtype


def weak_type(x) -> bool:
  return get_aval(x).weak_type


def asarray(x, dtype=None):
  """`x` as a minijax value (an Array, a tracer, or a literal under a trace)."""
  if isinstance(x, (list, tuple)) or (dtype is not None and type(x) in dtypes.PYTHON_SCALARS):
    from minijax.numpy.creation import array
    return array(x, dtype)
  check("asarray", x)
  out = lax.convert_to_array(x)
  if dtype is not None:
    out = lax.convert_element_type(out, dtype)
  elif isinstance(x, dtypes.PYTHON_SCALARS):
    pass
  return out


def to_array(x, dtype_: np.dtype, weak: bool):
  """`x` converted to `dtype_` with the given weakness (Python scalars become constants)."""
  if isinstance(x, dtypes.PYTHON_SCALARS):
    return lax.full((), x, dtype_, weak_type=weak)
  x = lax.convert_to_array(x)
  a = get_aval(x)
  if a.dtype == dtype_ and a.weak_type == weak:
    return x
  return lax.convert_element_type(x, dtype_, weak)


def result_type_of(*args) -> tuple[np.dtype, bool]:
  return dtypes.result_type(*(dtypes.dtype_and_weak_type(a) for a in args))


def promote(name: str, *args):
  """Converts `args` to their common (JAX-promoted) dtype."""
  check(name, *args)
  dt, weak = result_type_of(*args)
  return [to_array(a, dt, weak) for a in args]


def promote_inexact(name: str, *args):
  """Like `promote`, but integers and bools become the default float type."""
  check(name, *args)
  dt, weak = result_type_of(*args)
  if not dtypes.is_inexact(dt):
    dt = dtypes.default_float_dtype()
  return [to_array(a, dt, weak) for a in args]


def broadcast_shapes(name: str, *shapes) -> tuple:
  try:
    return tuple(np.broadcast_shapes(*shapes))
  except ValueError:
    shown = " and ".join(str(tuple(s)) for s in shapes)
    raise ValueError(f"{name}: incompatible shapes for broadcasting: {shown}") from None


def broadcast_to(x, shape_: Sequence[int]):
  shape_ = tuple(int(s) for s in shape_)
  xs = tuple(np.shape(x)) if isinstance(x, dtypes.PYTHON_SCALARS) else get_aval(x).shape
  if xs == shape_:
    return lax.convert_to_array(x)
  if len(xs) > len(shape_) or any(a not in (1, b) for a, b in zip(xs[::-1], shape_[::-1])):
    raise ValueError(f"broadcast_to: cannot broadcast an array of shape {xs} to {shape_}")
  nd = len(shape_)
  return lax.broadcast_in_dim(x, shape_, tuple(range(nd - len(xs), nd)))


def promote_and_broadcast(name: str, *args, inexact: bool = False, keep_scalars: bool = False):
  """Promoted and broadcast operands; Python scalars become constants of the full shape
  directly (one device value, or one broadcast of a literal under a trace).

  With `keep_scalars` (for callers that only bind elementwise lax ops, which accept rank-0
  operands among operands of one shape), rank-0 operands (Python scalars, rank-0 arrays)
  are only promoted: they stay rank 0 and lax broadcasts them, as in JAX's jaxprs."""
  check(name, *args)
  dt, weak = result_type_of(*args)
  if inexact and not dtypes.is_inexact(dt):
    dt = dtypes.default_float_dtype()
  shapes = [np.shape(a) if isinstance(a, dtypes.PYTHON_SCALARS) else get_aval(a).shape for a in args]
  out_shape = broadcast_shapes(name, *shapes)
  if keep_scalars:
    return [to_array(a, dt, weak) if not s else broadcast_to(to_array(a, dt, weak), out_shape)
            for a, s in zip(args, shapes)]
  return [lax.full(out_shape, a, dt, weak_type=weak) if isinstance(a, dtypes.PYTHON_SCALARS)
          else broadcast_to(to_array(a, dt, weak), out_shape) for a in args]


def canonicalize_axes(axis, nd: int, name: str = "axis") -> tuple[int, ...]:
  if axis is None:
    return tuple(range(nd))
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  out = []
  for a in axes:
    a = int(a)
    if not -nd <= a < nd:
      raise ValueError(f"{name} {a} is out of bounds for an array of dimension {nd}")
    out.append(a % nd)
  if len(set(out)) != len(out):
    raise ValueError(f"repeated axis in {name}: {axis}")
  return tuple(out)


def size(x) -> int:
  return get_aval(x).size
