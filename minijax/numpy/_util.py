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

import os
import sys
import warnings
from typing import Sequence

import numpy as np

from minijax import lax
from minijax.config import config
from minijax.core import dtypes
from minijax.core.avals import canonicalize_shape, get_aval
from minijax.core.state import AbstractRef
from minijax.core import trace as trace_lib
from minijax.core.trace import Tracer, is_eval_context
from minijax.core.dtypes import TypePromotionError
from minijax.runtime.array import Array

_ARRAYLIKE = (Array, Tracer, np.ndarray, np.generic) + dtypes.PYTHON_SCALARS
# The operands most calls get, accepted by their type alone (`check` passes them all): what
# an eager `x + 1` costs is mostly such checks.
PLAIN_OPERANDS = frozenset((Array, *dtypes.PYTHON_SCALARS))


def is_arraylike(x) -> bool:
  """An array itself (a wrapper that defines `__jax_array__` is not one, even when it
  forwards `aval` and `shape` to the array it wraps, as flax's Variables do)."""
  return isinstance(x, _ARRAYLIKE) or (hasattr(x, "aval") and hasattr(x, "shape")
                                       and not hasattr(type(x), "__jax_array__"))


def compiled_when_eager(dynamic: int | None = None, *, name: str | None = None):
  """Decorator: the function runs as one compiled call when called eagerly, instead of one
  dispatch per lax op; under a trace it runs inline, so jaxprs show its primitives.

  The first `dynamic` positional arguments (all of them when None) are arrays, checked with
  `check` (None is let through) and passed to the compiled call; the others, positional or
  keyword, are static: one jitted function per value of them.  Numpy's sequences among the
  arrays, and unhashable static values other than lists (an array `where=`), make the
  function run op by op instead (which can round differently: XLA rewrites within one
  program, as in JAX's compiled functions).  `name` (by default the function's) names it
  in errors and logs."""
  context, EvalTrace = trace_lib._context, trace_lib.EvalTrace

  def wrap(impl):
    fn_name = name or impl.__name__
    jitted: dict = {}

    def run(*args, **kwargs):
      if type(context.trace) is not EvalTrace:
        return impl(*args, **kwargs)
      arrays = args if dynamic is None else args[:dynamic]
      for a in arrays:
        if type(a) not in PLAIN_OPERANDS:
          if any(type(a) in (list, tuple) for a in arrays):
            return impl(*args, **kwargs)
          arrays = arrays_of(fn_name, arrays, allow_none=True)
          break
      static = () if dynamic is None else args[dynamic:]
      key = (static, *kwargs.items()) if kwargs else static
      try:
        fn = jitted.get(key)
      except TypeError:  # a list among them (`axis=[1, 2]`): keyed as a tuple
        try:
          key = _hashable(key)
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


def _hashable(value):
  """`value` with its lists (nested in tuples, lists and keyword pairs) as tuples tagged as
  lists, for a cache key: TypeError for anything else unhashable."""
  if isinstance(value, list):
    return (list, *map(_hashable, value))
  if isinstance(value, tuple):
    return tuple(map(_hashable, value))
  hash(value)
  return value


def reject_out(name: str, out) -> None:
  """jnp functions take numpy's `out=` only as None: arrays are immutable."""
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


def check(name: str, *args) -> None:
  """Raises a TypeError naming the first of `args` that is no array (an object defining
  `__jax_array__` is checked as its array, which `arrays_of` hands on)."""
  for i, x in enumerate(args):
    if not isinstance(x, _ARRAYLIKE) and hasattr(type(x), "__jax_array__"):
      x = x.__jax_array__()
    if type(getattr(x, "aval", None)) is AbstractRef:
      raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x)} at position "
                      f"{i}: it is a mutable array reference; read its value with `r[...]`")
    if not is_arraylike(x) or dtypes.is_extended(getattr(x, "dtype", None)):
      raise TypeError(f"{name}: argument of type {type(x).__name__} is not a valid array "
                      f"({x!r:.60}); pass minijax arrays, numpy arrays or Python scalars")


def arrays_of(name: str, args: Sequence, allow_none: bool = False) -> Sequence:
  """`args` checked as `check` does, where an object that defines `__jax_array__` (JAX's
  protocol for array-like wrappers) stands for the array that method returns; `args`
  itself when there is none of those (None is let through with `allow_none`)."""
  out = args
  for i, x in enumerate(args):
    if x is None and allow_none:
      continue
    if (type(getattr(x, "aval", None)) is AbstractRef or not is_arraylike(x)
        or dtypes.is_extended(getattr(x, "dtype", None))):
      if hasattr(x, "__jax_array__") and not is_arraylike(x):
        if out is args:
          out = list(args)
        out[i] = x = x.__jax_array__()
      check(name, x)  # raises for anything else
  return out


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
  x, = arrays_of("asarray", (x,))
  out = lax.convert_to_array(x)
  if dtype is not None:
    out = lax.convert_element_type(out, dtype)
  elif isinstance(x, dtypes.PYTHON_SCALARS):
    pass
  return out


def to_array(x, dtype_: np.dtype, weak: bool):
  """`x` converted to `dtype_` with the given weakness (Python scalars become constants; a
  Python int that the default integer type holds but `dtype_` does not wraps around, as in
  JAX: `uint8_array * -1` multiplies by 255)."""
  if isinstance(x, dtypes.PYTHON_SCALARS):
    if type(x) is int and dtypes.is_integer(dtype_):
      info = np.iinfo(dtype_)
      if not info.min <= x <= info.max:
        x = np.asarray(x, dtypes.default_int_dtype()).astype(dtype_)  # (raises beyond it)
    return lax.full((), x, dtype_, weak_type=weak)
  x = lax.convert_to_array(x)
  a = get_aval(x)
  if a.dtype == dtype_ and a.weak_type == weak:
    return x
  return lax.convert_element_type(x, dtype_, weak)


def result_type_of(*args) -> tuple[np.dtype, bool]:
  typed = [dtypes.dtype_and_weak_type(a) for a in args]
  dtypes.check_not_float0("type promotion", [d for d, _ in typed])
  if config.numpy_dtype_promotion == "strict" and len(typed) > 1 and _called_by_user():
    _check_strict(typed)
  return dtypes.result_type(*typed)


# Where a minijax.numpy call is carried out (skipped when looking for who made it);
# minijax's other libraries (scipy, nn, random, ...) count as callers.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MACHINERY = (*(os.path.join(_PACKAGE, d) + os.sep for d in
                ("numpy", "staging", "core", "interpreters", "lax", "runtime")),
              *(os.path.join(_PACKAGE, f) for f in ("api.py", "api_util.py", "tree_util.py")))


def _called_by_user() -> bool:
  """Whether the nearest caller outside that machinery is the user's code: strict promotion
  constrains what users write, while minijax's own libraries promote as they need."""
  frame = sys._getframe(2)
  while frame is not None:
    filename = frame.f_code.co_filename
    if not filename.startswith(_PACKAGE + os.sep):
      return True
    if not filename.startswith(_MACHINERY):
      return False
    frame = frame.f_back
  return False


def _kind(dtype) -> str:
  """"f" (real floating, ml_dtypes' bfloat16 and float8s included: numpy calls their kind
  "V"), "i" (signed or unsigned integer, int4 included), else numpy's kind ("c", "b")."""
  if dtypes.is_float(dtype):
    return "f"
  return "i" if dtypes.is_integer(dtype) else np.dtype(dtype).kind


def _check_strict(typed) -> None:
  """`numpy_dtype_promotion="strict"`: operands of different dtypes are an error, except
  weakly typed Python scalars of a kind the other dtype holds (an int with an integer or
  inexact array, a float with an inexact one, a complex with a complex one)."""
  strong = {d for d, weak in typed if not weak}
  ok = len(strong) <= 1
  if ok and strong:
    (dtype,) = strong
    for d, weak in typed:
      kind, weak_kind = _kind(dtype), _kind(d)
      if weak and not (kind == "c" or kind == "f" and weak_kind != "c"
                       or kind == "i" and weak_kind == "i"):
        ok = False
  if not ok:
    names = tuple(str(d) for d, _ in typed)
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
        "output type, or set jax_numpy_dtype_promotion=standard.")


def check_rank_promotion(name: str, shapes) -> None:
  """`numpy_rank_promotion`: broadcasting operands of different ranks (rank 0 aside) in the
  user's calls warns or raises instead of being allowed."""
  mode = config.numpy_rank_promotion
  if mode == "allow" or len({len(s) for s in shapes if len(s)}) < 2 or not _called_by_user():
    return
  shown = " ".join(str(tuple(s)) for s in shapes)
  if mode == "raise":
    raise ValueError(f"Operands could not be broadcast together with shapes {shown} and with "
                     "the config option jax_numpy_rank_promotion='raise'. Add the missing "
                     "leading axes explicitly (jnp.expand_dims, x[None]).")
  warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes {shown}. Set "
                "the jax_numpy_rank_promotion config option to 'allow' to disable this "
                "warning.", stacklevel=4)


def promote(name: str, *args):
  """Converts `args` to their common (JAX-promoted) dtype."""
  args = arrays_of(name, args)
  dt, weak = result_type_of(*args)
  return [to_array(a, dt, weak) for a in args]


def promote_inexact(name: str, *args):
  """Like `promote`, but integers and bools become floats (`dtypes.to_inexact_dtype`)."""
  args = arrays_of(name, args)
  dt, weak = result_type_of(*args)
  dt = dtypes.to_inexact_dtype(dt)
  return [to_array(a, dt, weak) for a in args]


def broadcast_shapes(name: str, *shapes) -> tuple:
  try:
    return tuple(np.broadcast_shapes(*shapes))
  except ValueError:
    shown = " and ".join(str(tuple(s)) for s in shapes)
    raise ValueError(f"{name}: incompatible shapes for broadcasting: {shown}") from None


def shape_argument(shape) -> tuple[int, ...]:
  """A shape numpy's functions take: an int (or 0-d integer), or a sequence of them."""
  if not isinstance(shape, (tuple, list)) and np.ndim(shape) == 0:
    shape = (shape,)
  return canonicalize_shape(shape)


def broadcast_to(x, shape_: Sequence[int]):
  shape_ = canonicalize_shape(shape_)
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

  With `keep_scalars` (for callers that only bind elementwise lax ops, which broadcast
  rank-0 operands and size-1 axes themselves) operands are only promoted to the result's
  rank, as numpy's functions in JAX do: rank-0 operands stay rank 0 and the others get
  leading size-1 axes, so the jaxprs and the programs XLA compiles are JAX's."""
  args = arrays_of(name, args)
  dt, weak = result_type_of(*args)
  if inexact:
    dt = dtypes.to_inexact_dtype(dt)
  shapes = [np.shape(a) if isinstance(a, dtypes.PYTHON_SCALARS) else get_aval(a).shape for a in args]
  try:
    out_shape = broadcast_shapes(name, *shapes)
  except ValueError:
    if len({len(s) for s in shapes}) > 1:
      raise
    # operands of one rank go straight to lax's elementwise rule in JAX: its TypeError
    shown = ", ".join(map(str, shapes))
    raise TypeError(f"{name} got incompatible shapes for broadcasting: {shown}.") from None
  check_rank_promotion(name, shapes)
  if keep_scalars:
    return [to_array(a, dt, weak) if not s else
            broadcast_to(to_array(a, dt, weak), (1,) * (len(out_shape) - len(s)) + tuple(s))
            for a, s in zip(args, shapes)]
  return [lax.full(out_shape, a, dt, weak_type=weak) if isinstance(a, dtypes.PYTHON_SCALARS)
          else broadcast_to(to_array(a, dt, weak), out_shape) for a in args]


def canonicalize_axes(axis, nd: int, name: str = "axis") -> tuple[int, ...]:
  """`axis` (None, an int or a sequence) as distinct axes in [0, nd); out of range, numpy's
  AxisError (a ValueError and an IndexError, in numpy's words)."""
  if axis is None:
    return tuple(range(nd))
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  out = []
  for a in axes:
    a = int(a)
    if not -nd <= a < nd:
      raise np.exceptions.AxisError(a, nd, None if name == "axis" else name)
    out.append(a % nd)
  if len(set(out)) != len(out):
    raise ValueError(f"duplicate value in '{name}': {axis}")
  return tuple(out)


def size(x) -> int:
  return get_aval(x).size


def concrete_value(x) -> np.ndarray | None:
  """The value of `x` on the host, or None when it is traced (abstract)."""
  from minijax.core.trace import Tracer
  if isinstance(x, Tracer):
    v = x.to_concrete_value()
    return None if v is None else np.asarray(v)
  return np.asarray(x)


def concrete_or_error(what: str, x) -> np.ndarray:
  """The host value of `x` (numpy); a ConcretizationTypeError naming `what` when it is
  traced."""
  v = concrete_value(x)
  if v is None and not isinstance(x, Tracer):
    raise TypeError(f"{what}: needs a concrete array, got {type(x).__name__}")
  if v is None:
    from minijax.core.errors import ConcretizationTypeError
    raise ConcretizationTypeError(
        x, f"{what}()", "The result's shape depends on this value: call it outside jit, or "
        "pass size= (and fill_value=) where the function takes them. ")
  return v
