"""Dtypes and JAX's promotion rules.

Values have a dtype and a `weak_type` bit.  Python scalars are weakly typed: they take
the dtype of whatever they meet (`x_f16 + 1.0` stays float16).  Promotion is the least
upper bound in JAX's type lattice, where the weak kinds `i*`, `f*`, `c*` sit just above
`bool` / below every concrete integer, float and complex type.  With x64 off (the default)
64-bit types are canonicalized to their 32-bit counterparts when values enter the system.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from minijax.config import config

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float0 = np.dtype([("float0", np.void, 0)])  # tangent dtype of integer and bool values

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = map(np.dtype, (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = map(np.dtype, (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = map(np.dtype, (np.float16, np.float32, np.float64))
complex64, complex128 = map(np.dtype, (np.complex64, np.complex128))

# The narrow types of ml_dtypes that JAX has on CPU.  Sub-byte values are packed in XLA's
# buffers (two int4 per byte), which the runtime and the host calls unpack.
int2, int4 = np.dtype(ml_dtypes.int2), np.dtype(ml_dtypes.int4)
uint2, uint4 = np.dtype(ml_dtypes.uint2), np.dtype(ml_dtypes.uint4)
float4_e2m1fn = np.dtype(ml_dtypes.float4_e2m1fn)
# ml_dtypes' 1-bit integers: dtypes JAX names (promotion, limits), not values minijax's
# arrays hold
int1, uint1 = np.dtype(ml_dtypes.int1), np.dtype(ml_dtypes.uint1)
FLOAT8 = tuple(np.dtype(getattr(ml_dtypes, name)) for name in (
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"))
SMALL_FLOATS = (float4_e2m1fn, *FLOAT8)  # below bfloat16 in the lattice, each on its own
SUBBYTE_BITS = {int1: 1, uint1: 1, int2: 2, uint2: 2, int4: 4, uint4: 4, float4_e2m1fn: 4}
# ml_dtypes' 6-bit floats: dtypes JAX names, not (yet) values minijax's arrays can hold
FLOAT6 = tuple(np.dtype(getattr(ml_dtypes, name)) for name in ("float6_e2m3fn", "float6_e3m2fn"))
_NARROW_INTS = {int1, int2, int4, uint1, uint2, uint4}
_ABSTRACT_KINDS = (np.generic, np.number, np.inexact, np.floating, np.complexfloating,
                   np.integer, np.signedinteger, np.unsignedinteger)
_ML_KINDS = {  # ml_dtypes' types -> the abstract numpy types they belong under
    **{t: (np.floating, np.inexact, np.number, np.generic)
       for t in (bfloat16, *SMALL_FLOATS, *FLOAT6)},
    **{t: (np.signedinteger, np.integer, np.number, np.generic) for t in (int1, int2, int4)},
    **{t: (np.unsignedinteger, np.integer, np.number, np.generic)
       for t in (uint1, uint2, uint4)}}

PYTHON_SCALARS = (bool, int, float, complex)  # Python scalars: values, weakly typed but for bool


class extended(np.generic):
  """The abstract scalar type of extended dtypes (dtypes that are not numpy's, such as
  the dtypes of typed PRNG keys): `issubdtype(key.dtype, extended)` is True."""


class prng_key(extended):
  """The abstract scalar type of the dtypes of typed PRNG key arrays."""


class ExtendedDType:
  """Base of extended dtypes: `type` is the abstract scalar type they belong under."""
  type: type = extended

  def spec_value(self, spec):
    """What tracing takes for `spec`, a ShapeDtypeStruct of this dtype (`eval_shape`,
    `jit(f).trace`): a value of this dtype over specs of its physical data."""
    raise TypeError(f"a ShapeDtypeStruct of dtype {self} cannot be traced")

  # A value of an extended dtype is a wrapper over an array of physical data whose shape
  # ends in `physical_shape`; placement moves that data and wraps it again.
  physical_shape: tuple[int, ...] = ()

  def physical(self, value):
    """The array of physical data under `value`, a value of this dtype."""
    raise NotImplementedError(f"values of dtype {self} have no physical data")

  def wrap(self, data):
    """A value of this dtype over `data`, an array of its physical data."""
    raise NotImplementedError(f"values of dtype {self} cannot be made from physical data")


def is_extended(dtype) -> bool:
  return isinstance(dtype, ExtendedDType)


def issubdtype(a, b) -> bool:
  """numpy's `issubdtype`, with ml_dtypes' types (bfloat16, the float8/6/4 types, int4,
  ...) under numpy's abstract types as numpy's own are (`floating`, `signedinteger`, ...),
  and the extended dtypes (of typed PRNG keys) under `extended`."""
  if isinstance(a, ExtendedDType):
    if isinstance(b, ExtendedDType):
      return a == b
    return isinstance(b, type) and issubclass(a.type, b)
  if isinstance(b, ExtendedDType) or b is extended or b is prng_key:
    return False
  narrow = _ml_dtype(a)
  if narrow is not None:
    return any(b is kind for kind in _ML_KINDS[narrow]) or _ml_dtype(b) == narrow
  if _ml_dtype(b) is not None:
    return False
  return np.issubdtype(a, b)


_ISDTYPE_KINDS = {
    "bool": lambda d: d == bool_,
    "signed integer": lambda d: issubdtype(d, np.signedinteger),
    "unsigned integer": lambda d: issubdtype(d, np.unsignedinteger),
    "integral": lambda d: issubdtype(d, np.integer),
    "real floating": lambda d: issubdtype(d, np.floating),
    "complex floating": lambda d: issubdtype(d, np.complexfloating),
    "numeric": lambda d: issubdtype(d, np.number),
}


def isdtype(dtype, kind) -> bool:
  """The array API's test: whether `dtype` is of `kind` (a dtype, one of the names of
  `_ISDTYPE_KINDS`, or a tuple of those), ml_dtypes' types among numpy's."""
  d = np.dtype(dtype)
  kinds = kind if isinstance(kind, tuple) else (kind,)
  for k in kinds:
    if isinstance(k, str) and k in _ISDTYPE_KINDS:
      if _ISDTYPE_KINDS[k](d):
        return True
      continue
    if not isinstance(k, (str, type, np.dtype)):
      raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}")
    try:
      wanted = np.dtype(k)
    except TypeError:
      raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_ISDTYPE_KINDS)}, or "
                       "a compatible input for jnp.dtype()") from None
    if d == wanted:
      return True
  return False


def _ml_dtype(x) -> np.dtype | None:
  """The ml_dtypes dtype that `x` (a dtype, scalar type or name) is, else None."""
  if any(x is kind for kind in _ABSTRACT_KINDS):
    return None
  try:
    dtype = np.dtype(x)
  except TypeError:
    return None
  return dtype if dtype in _ML_KINDS else None


_SUPPORTED = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64, complex64, complex128, int2, int4, uint2, uint4,
              *SMALL_FLOATS}
_X32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

_SHORT_NAMES = {bool_: "bool", bfloat16: "bf16", float0: "float0", int2: "i2", int4: "i4",
                uint2: "u2", uint4: "u4", float4_e2m1fn: "f4e2m1fn",
                **{d: "f8" + d.name[len("float8"):] for d in FLOAT8}}


def short_name(dtype: np.dtype) -> str:
  """`f32`, `i32`, `u8`, `bf16`, `bool`: the names jaxprs print."""
  name = _SHORT_NAMES.get(dtype)
  if name is None and is_extended(dtype):
    return dtype.name
  if name is None:
    name = f"{dtype.kind}{dtype.itemsize * 8}"
  return name


def x64_enabled() -> bool:
  return config.enable_x64


def canonicalize_dtype(dtype: Any) -> np.dtype:
  dtype = np.dtype(dtype)
  if dtype == float0:
    return dtype
  if dtype not in _SUPPORTED:
    raise TypeError(f"minijax does not support dtype {dtype}; supported: "
                    + ", ".join(sorted(str(d) for d in _SUPPORTED)))
  if not config.enable_x64:
    return _X32.get(dtype, dtype)
  return dtype


def canonicalize_explicit_dtype(dtype: Any) -> np.dtype:
  """A dtype a program names for its result (`convert_element_type`, `astype`, `full`,
  `iota`): kept as named under `jax_explicit_x64_dtypes='allow'`, which honours explicit
  64-bit dtypes while defaults and values stay 32-bit (as in JAX), else `canonicalize_dtype`."""
  if config.explicit_x64_dtypes == "allow" and not config.enable_x64:
    dtype = np.dtype(dtype)
    canonicalize_dtype(dtype)  # (a dtype minijax lacks raises here)
    return dtype
  return canonicalize_dtype(dtype)


def canonicalize_user_dtype(dtype: Any, where: str | None = None) -> np.dtype:
  """`canonicalize_dtype` for a dtype the user asked for: a 64-bit one without x64 warns
  that it becomes 32-bit, raises under `jax_explicit_x64_dtypes='error'`, and is kept
  under `'allow'`.  Python's `bool`, `int`, `float` and `complex` ask for the default
  dtypes, as in JAX (no warning)."""
  if isinstance(dtype, type) and dtype in (bool, int, float, complex):
    return canonicalize_dtype(dtype)
  dtype = np.dtype(dtype)
  canonical = canonicalize_dtype(dtype)
  if canonical != dtype:
    requested = f"{dtype} requested in {where}" if where else f"{dtype}"
    if config.explicit_x64_dtypes == "allow":
      return dtype
    if config.explicit_x64_dtypes == "error":
      raise ValueError(f"Explicitly requested dtype {requested} is not available. To enable "
                       "more dtypes, set the jax_enable_x64 configuration option.")
    import warnings
    warnings.warn(f"Explicitly requested dtype {requested} is not available, and will be "
                  f"truncated to dtype {canonical}. To enable more dtypes, set the "
                  "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell "
                  "environment variable.", UserWarning, stacklevel=3)
  return canonical


def default_int_dtype() -> np.dtype:
  return canonicalize_dtype(int64)


def default_float_dtype() -> np.dtype:
  return canonicalize_dtype(float64)


def to_inexact_dtype(dtype) -> np.dtype:
  """The floating type functions such as `sin` or `mean` compute a non-inexact `dtype` in,
  as JAX 0.10.2: float32 for booleans and integers of up to 32 bits, float64 for 64-bit
  integers (float32 without x64); inexact types are kept."""
  dtype = np.dtype(dtype)
  if is_inexact(dtype):
    return dtype
  return canonicalize_dtype(float64 if dtype.itemsize == 8 else float32)


def to_complex_dtype(dtype) -> np.dtype:
  """The complex type of the same precision as `to_inexact_dtype(dtype)`."""
  inexact = to_inexact_dtype(dtype)
  return canonicalize_dtype(complex128 if inexact in (np.dtype(float64), np.dtype(complex128))
                            else complex64)


def default_complex_dtype() -> np.dtype:
  return canonicalize_dtype(complex128)


def as_python_scalar_of(x: Any, dtype: np.dtype) -> Any:
  """The Python scalar of `dtype`'s kind equal to the Python scalar `x` (`2` as the float
  `2.0`), where `dtype` is that kind's canonical dtype, so that the value is `x` weakly
  typed in `dtype`; None where there is none (a float as an int, a non-canonical dtype)."""
  if type(x) not in (bool, int, float, complex):
    return None
  kind = (float if issubdtype(dtype, np.floating) else
          complex if issubdtype(dtype, np.complexfloating) else
          int if issubdtype(dtype, np.integer) and type(x) in (bool, int) else None)
  if kind is None or (kind is not complex and type(x) is complex):
    return None
  value = kind(x)
  return value if python_scalar_dtype(value) == dtype else None


def python_scalar_dtype(x: Any) -> np.dtype:
  """The (canonical) dtype of a Python scalar, which is weakly typed."""
  if isinstance(x, bool):
    return bool_
  if isinstance(x, int):
    return default_int_dtype()
  if isinstance(x, float):
    return default_float_dtype()
  if isinstance(x, complex):
    return default_complex_dtype()
  raise TypeError(f"{type(x).__name__} is not a Python scalar")


def _memoized(predicate):
  # (np.issubdtype costs microseconds, and tracing asks about the same few dtypes per op)
  answers: dict = {}
  def memoized(dtype) -> bool:
    answer = answers.get(dtype)
    if answer is None:
      answer = answers[dtype] = bool(predicate(dtype))
    return answer
  memoized.__name__ = predicate.__name__
  return memoized


@_memoized
def is_float(dtype) -> bool:
  return np.issubdtype(dtype, np.floating) or dtype == bfloat16 or dtype in SMALL_FLOATS


@_memoized
def is_integer(dtype) -> bool:
  return np.issubdtype(dtype, np.integer) or dtype in _NARROW_INTS


@_memoized
def is_inexact(dtype) -> bool:
  return is_float(dtype) or np.issubdtype(dtype, np.complexfloating)


def is_differentiable(dtype) -> bool:
  return is_inexact(dtype)


def tangent_dtype(dtype: np.dtype) -> np.dtype:
  return dtype if is_inexact(dtype) else float0


# JAX's promotion lattice.  Each node lists the nodes directly above it.
_I, _F, _C = "i*", "f*", "c*"
_LATTICE: dict[Any, list[Any]] = {
    bool_: [_I],
    _I: [uint8, int8, *_NARROW_INTS],
    **{t: [] for t in (*_NARROW_INTS, *SMALL_FLOATS, *FLOAT6)},
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: [_F],
    int8: [int16], int16: [int32], int32: [int64], int64: [_F],
    _F: [_C, bfloat16, float16, *SMALL_FLOATS, *FLOAT6],
    bfloat16: [float32], float16: [float32], float32: [float64, complex64], float64: [complex128],
    _C: [complex64], complex64: [complex128], complex128: [],
}


@functools.cache
def _upper_bounds(node) -> frozenset:
  result = {node}
  for parent in _LATTICE[node]:
    result |= _upper_bounds(parent)
  return frozenset(result)


@functools.cache
def _least_upper_bound(nodes: frozenset):
  bounds = functools.reduce(frozenset.__and__, (_upper_bounds(n) for n in nodes))
  for candidate in bounds:
    if _upper_bounds(candidate) == bounds:
      return candidate
  names = tuple(sorted(str(n) for n in nodes))
  floats = any(n in SMALL_FLOATS or n in FLOAT6 for n in nodes)
  what = ("6-bit floats" if any(n in FLOAT6 for n in nodes) else "8-bit floats" if floats
          else "1-bit, 2-bit and 4-bit integers")
  raise TypePromotionError(
      f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
      f"unintended promotion, {what} do not support implicit promotion. If you'd like your "
      "inputs to be promoted to another type, you can do so explicitly using e.g. "
      f"x.astype('{'float32' if floats else 'int32'}')")


class TypePromotionError(ValueError):
  """Two dtypes that the promotion rules in force do not combine."""


def _node(dtype: np.dtype, weak: bool):
  if not weak or dtype == bool_:
    return dtype
  if is_integer(dtype):
    return _I
  if is_float(dtype):
    return _F
  return _C


def check_not_float0(name: str, dtypes_: Sequence[np.dtype]) -> None:
  """float0 values (tangents of integers and booleans) are placeholders, never operands."""
  for i, dtype in enumerate(dtypes_):
    if dtype == float0:
      raise TypeError(
          f"Called {name} with a float0 at position {i}. float0s do not support any "
          "operations by design: they are the tangents of integer and boolean values, "
          "which have no non-trivial vector space, and are never converted implicitly. To "
          "get a zeros array of another dtype use np.zeros_like(x, dtype=np.float32); if you "
          "did not expect a float0, you may have taken a gradient with respect to an integer "
          "argument.")


def promote_types(a, b) -> np.dtype:
  """The dtype JAX's lattice gives two dtypes, not canonicalized (`int8, int64` is int64
  whether or not x64 is on), as `jnp.promote_types`."""
  check_not_float0("type promotion", [np.dtype(a), np.dtype(b)])
  a, b = np.dtype(a), np.dtype(b)
  lub = _least_upper_bound(frozenset({_node(a, False), _node(b, False)}))
  weak = {_I: int64, _F: float64, _C: complex128}  # (uint64 and int64 meet at float)
  if any(lub is node for node in weak):
    return weak[lub]
  # without x64, operands of 32 bits or fewer meet at 32 bits (uint32 and int8: int32)
  wide = any(d in _X32 for d in (a, b))
  return np.dtype(lub) if wide or lub not in _X32 else canonicalize_dtype(lub)


def result_type(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
  """Promotes `(dtype, weak_type)` pairs; returns the canonical dtype and its weakness.  The
  dtypes are canonicalized first, as JAX's are (without x64, `int8` and `uint64` promote as
  `int8` and `uint32`), except those that `jax_explicit_x64_dtypes='allow'` keeps."""
  check_not_float0("type promotion", [d for d, _ in typed])
  if config.explicit_x64_dtypes != "allow":
    typed = tuple((d if is_extended(d) else canonicalize_dtype(d), w) for d, w in typed)
  if len(typed) == 1:
    dtype, weak = typed[0]
    return _canonical_result(dtype, typed), weak
  lub = _least_upper_bound(frozenset(_node(d, w) for d, w in typed))
  if lub == _I:
    return default_int_dtype(), True
  if lub == _F:
    return default_float_dtype(), True
  if lub == _C:
    return default_complex_dtype(), True
  return _canonical_result(lub, typed), False


def _canonical_result(dtype, typed) -> np.dtype:
  """The canonical promoted dtype; under `jax_explicit_x64_dtypes='allow'` a 64-bit dtype
  that an operand holds explicitly stays 64-bit (`int64 array + 1` is int64), as in JAX."""
  if (config.explicit_x64_dtypes == "allow" and not config.enable_x64
      and any(not weak and np.dtype(d) == dtype for d, weak in typed)):
    return np.dtype(dtype)
  return canonicalize_dtype(dtype)


def dtype_and_weak_type(x: Any) -> tuple[np.dtype, bool]:
  """The dtype and weakness a value would have inside minijax."""
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval.dtype, aval.weak_type
  if isinstance(x, PYTHON_SCALARS):
    return python_scalar_dtype(x), not isinstance(x, bool)
  if isinstance(x, (np.ndarray, np.generic)):
    return canonicalize_dtype(x.dtype), False
  if hasattr(x, "dtype") and hasattr(x, "shape"):
    return (x.dtype if is_extended(x.dtype) else canonicalize_dtype(x.dtype)), False
  raise TypeError(f"Argument '{x!s:.80}' of type {type(x)} is not a valid JAX type; "
                  "pass arrays, numpy arrays or Python scalars")
