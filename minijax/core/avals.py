"""Abstract values: what tracing knows about a value without its contents.

`ShapedArray` (shape, dtype, weak_type) is the one array aval (its dtype a numpy dtype, or
an extended one such as a PRNG key's, which `typeof(key)` reports); `AbstractToken` types the
tokens that order effects.  Avals are immutable and hashable because compile caches key on
them.  Operators and methods of arrays and tracers (`+`, `x[i]`, `x.sum()`, ...) are
installed on `Array` and `Tracer` by the numpy layer, so the core knows nothing of numpy
semantics.  `ShapeDtypeStruct` is the users' spelling of a type: what `eval_shape` and the
stages of `jit` return, and what `jit(f).trace` takes in place of an array.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from minijax.config import LOCAL_BLOCKS, config
from minijax.core import dtypes, layout
from minijax.core.dtypes import PYTHON_SCALARS
from minijax.core.sharding import aval_sharding, require_unsplit


class AbstractValue:
  __slots__ = ()


class ShapedArray(AbstractValue):
  """An array type.  Instances are interned: equal avals are the same object, so they
  compare and hash by identity, which keeps cache lookups on the dispatch path in C."""
  __slots__ = ("shape", "dtype", "weak_type", "__weakref__")
  _interned: dict[tuple, "ShapedArray"] = {}

  def __new__(cls, shape, dtype, weak_type: bool = False, *, sharding=None):
    if sharding is not None:
      require_unsplit(getattr(sharding, "spec", None), f"sharding={sharding!r}")
    key = (shape if type(shape) is tuple else tuple(shape), dtype, weak_type)
    self = cls._interned.get(key)
    if self is None:
      shape = tuple(map(int, key[0]))
      dtype = dtype if isinstance(dtype, (np.dtype, dtypes.ExtendedDType)) else np.dtype(dtype)
      canonical = (shape, dtype, bool(weak_type))
      self = cls._interned.get(canonical)
      if self is None:
        self = object.__new__(cls)
        self.shape, self.dtype, self.weak_type = canonical
        cls._interned[canonical] = self
      cls._interned[key] = self
    return self

  def __reduce__(self):
    return ShapedArray, (self.shape, self.dtype, self.weak_type)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: math.prod(self.shape))

  def update(self, shape=None, dtype=None, weak_type=None, sharding=None) -> "ShapedArray":
    if sharding is not None:
      require_unsplit(getattr(sharding, "spec", None), f"sharding={sharding!r}")
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
    """`float32[2,3]`, as JAX's errors spell an aval; `f32[2,3]` (as jaxprs print it) with
    `short_dtypes`."""
    name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
    return f"{name}[{','.join(map(str, self.shape))}]"

  def __str__(self):  # as JAX prints `typeof(x)`: `float32[2,3]`, `~float32[]` when weak
    return ("~" if self.weak_type else "") + self.str_short()

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short()}{weak})"

  def tangent_aval(self) -> "ShapedArray":
    return ShapedArray(self.shape, dtypes.tangent_dtype(self.dtype), self.weak_type)

  at_least_vspace = tangent_aval  # JAX's name

  @property
  def sharding(self):
    """Always unsharded (see `minijax.core.sharding.AvalSharding`)."""
    return aval_sharding(self.ndim)


class AbstractToken(AbstractValue):
  __slots__ = ()

  def __eq__(self, other):
    return type(other) is AbstractToken

  def __hash__(self):
    return hash(AbstractToken)

  def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
    return "Token"

  def tangent_aval(self) -> "AbstractToken":
    return self  # as in JAX: a token's tangent is a token (never computed with)

  at_least_vspace = tangent_aval

  __repr__ = str_short


abstract_token = AbstractToken()


class Token:
  """A token as a value (`lax.create_token()`, or a jitted function's token result): no
  data, only an order.  `_buf` is the device buffer of XLA's token type it wraps, which
  has no host value (reading one raises jaxlib's RuntimeError)."""
  __slots__ = ("_buf",)

  def __init__(self, buf):
    self._buf = buf

  def block_until_ready(self):
    self._buf.block_until_ready()
    return self

  def __repr__(self):
    return "Token()"


_python_scalar_avals: dict[type, ShapedArray] = {}  # under the global enable_x64


def python_scalar_aval(x: Any) -> ShapedArray:
  """The aval of a Python scalar (exactly bool, int, float or complex): rank 0, the default
  dtype of its kind, weakly typed except for bools.  TypeError for anything else."""
  aval = None if LOCAL_BLOCKS[0] else _python_scalar_avals.get(type(x))
  if aval is None:  # (while a flag's block is open, this thread's enable_x64 decides)
    if type(x) not in PYTHON_SCALARS:
      raise TypeError(f"{type(x).__name__} is not a Python scalar")
    aval = ShapedArray((), dtypes.python_scalar_dtype(x), type(x) is not bool)
    if not LOCAL_BLOCKS[0]:
      _python_scalar_avals[type(x)] = aval
  return aval


def _on_config_change(name: str, value) -> None:
  if name == "enable_x64":  # the default dtypes change
    _python_scalar_avals.clear()


config.on_change(_on_config_change)


def get_aval(x: Any) -> ShapedArray:
  """The aval of any value: a tracer's or an Array's own, or that of a numpy value or a
  Python scalar, or what `pytype_aval_mappings` gives for its type (TypeError for anything
  else)."""
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval
  if isinstance(x, np.ma.MaskedArray):  # its mask would be silently dropped
    raise ValueError("numpy masked arrays are not supported as direct inputs to minijax "
                     "functions; use arr.filled() to convert it to a standard numpy array")
  try:
    dtype, weak = dtypes.dtype_and_weak_type(x)
  except TypeError:
    handler = pytype_aval_mappings.get(type(x))
    if handler is None:
      if hasattr(x, "__jax_array__"):
        raise ValueError(
            f"Triggering __jax_array__() during abstractification is no longer supported: "
            f"{type(x).__name__} is passed where an array is abstracted (a jit argument, "
            "say). Convert it first (`jnp.asarray(x)`), or register its type as a pytree "
            "whose leaves are arrays.") from None
      raise
    return handler(x)
  return ShapedArray(np.shape(x), dtype, weak)


def valid_jaxtype(x) -> bool:
  """Whether `x` is a value minijax computes with (an array, scalar or tracer)."""
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


def _numpy_aval(x) -> ShapedArray:
  try:
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
  except TypeError:
    if x.dtype.kind not in "OUSV":  # a numeric dtype minijax lacks: canonicalize_dtype says so
      raise
  raise TypeError(f"Argument '{x!s:.80}' of type {type(x)} is not a valid JAX type: its dtype "
                  f"{x.dtype} is not numeric (arrays hold booleans, integers, floating-point or "
                  "complex numbers)") from None


def operand_avals(primitive, args) -> tuple:
  """The avals of a primitive's operands; a TypeError naming the one that has none."""
  try:
    return tuple(map(get_aval, args))
  except TypeError:
    pass
  for i, x in enumerate(args):
    try:
      get_aval(x)
    except TypeError as e:
      raise TypeError(f"Error interpreting argument to {primitive} as a JAX value. The "
                      f"problematic value is of type {type(x)} and was passed to {primitive} "
                      f"at position {i}. {e}") from None
  raise AssertionError("unreachable")


# The avals of further Python types (JAX's table, which libraries extend:
# `pytype_aval_mappings[MyType] = lambda x: ShapedArray(...)`).
pytype_aval_mappings: dict[type, Callable[[Any], ShapedArray]] = {
    np.ndarray: _numpy_aval, np.generic: _numpy_aval, Token: lambda _: abstract_token}


def check_conversion(kind: str, shape: tuple, dtype) -> None:
  """Whether an array of `shape` and `dtype` may become a Python value by `kind` ("bool",
  "index", or "scalar" for int/float/complex), checked before its value is read (so a
  traced array fails the same way as a concrete one), as JAX checks it."""
  size = math.prod(shape)
  if kind == "bool":
    if size == 0:
      raise ValueError("The truth value of an empty array is ambiguous. Use "
                       "`array.size > 0` to check that an array is not empty.")
    if size > 1:
      raise ValueError("The truth value of an array with more than one element is "
                       "ambiguous. Use a.any() or a.all()")
  elif kind == "index":
    if shape != () or not dtypes.is_integer(dtype):
      raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
  elif shape != ():
    raise TypeError("Only scalar arrays can be converted to Python scalars; got "
                    f"an array of shape {shape}")


def canonicalize_shape(shape: Any, context: str = "") -> tuple[int, ...]:
  """A shape a user gave, as a tuple of ints: an int, or a sequence of integers (numpy's, and
  concrete 0-d integer arrays, too).  Anything else, a float or a traced value among them
  included, is JAX's TypeError (a float is not truncated)."""
  if isinstance(shape, int):
    shape = (shape,)
  try:
    return tuple(operator.index(d) for d in shape)
  except TypeError:
    pass
  message = f"Shapes must be 1D sequences of concrete values of integer type, got {shape}."
  if context:
    message += f" {context}."
  from minijax.core.trace import Tracer  # (on this error path only: trace builds on avals)
  dims = shape if isinstance(shape, (tuple, list)) else list(shape) if (
      isinstance(shape, Tracer) and shape.ndim) else []
  traced = [d for d in dims if isinstance(d, Tracer)]
  if traced:
    message += ("\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller "
                "subfunctions.")
    message += "".join(d._origin_msg() for d in traced)
  raise TypeError(message)


def canonicalize_dim(d: Any, context: str = "") -> int:
  return canonicalize_shape((d,), context)[0]


class ShapeDtypeStruct:
  """The shape and dtype of a value, as `eval_shape` returns them; its sharding, and (given a
  `Format` for `sharding`, as a compiled function's `out_info` gives it) its layout."""
  __slots__ = ("shape", "dtype", "weak_type", "sharding", "_layout")

  def __init__(self, shape, dtype, weak_type: bool = False, sharding=None):
    if dtype is None:
      raise ValueError("ShapeDtypeStruct: dtype must be specified")
    dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)  # (key dtypes too)
    self.shape, self.dtype, self.weak_type = tuple(shape), dtype, weak_type
    self._layout = sharding.layout if isinstance(sharding, layout.Format) else None
    self.sharding = sharding.sharding if isinstance(sharding, layout.Format) else sharding

  @property
  def format(self):
    """The layout and sharding, as a `Format` (JAX's name)."""
    return layout.Format(self._layout, self.sharding)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: math.prod(self.shape))

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def update(self, **changes) -> "ShapeDtypeStruct":
    """A copy with some of `shape`, `dtype`, `weak_type` and `sharding` replaced."""
    fields = {"shape": self.shape, "dtype": self.dtype, "weak_type": self.weak_type,
              "sharding": self.format if self._layout is not None else self.sharding}
    unknown = sorted(set(changes) - set(fields))
    if unknown:
      raise TypeError(f"ShapeDtypeStruct.update got unexpected keyword argument(s) {unknown}; "
                      f"it replaces {sorted(fields)}")
    return ShapeDtypeStruct(**{**fields, **changes})

  @classmethod
  def like(cls, x) -> "ShapeDtypeStruct":
    """The shape, dtype and weak type of `x` (an array, a tracer or a ShapeDtypeStruct)."""
    return cls(x.shape, x.dtype, getattr(x, "weak_type", False))

  @property
  def aval(self) -> ShapedArray:
    """What tracing sees: a `ShapeDtypeStruct` stands for an array of its type."""
    if dtypes.is_extended(self.dtype):  # (AttributeError: hasattr(x, "aval") is False)
      raise AttributeError(f"a ShapeDtypeStruct of dtype {self.dtype} has no aval of its own: "
                      f"pass it to eval_shape or jit(f).trace, which trace its data")
    return ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)

  def __repr__(self):
    sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
    fmt = f", format={self._layout}" if self._layout is not None else ""
    weak = f", weak_type={self.weak_type}" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{fmt}{weak})"

  def _key(self):  # (JAX's: weak types, shardings and layouts count)
    return (self.shape, self.dtype, self.sharding, self._layout, self.weak_type)

  def __eq__(self, other):
    return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())
