"""Operators and methods of arrays, installed once on both `Array` and `Tracer`.

The same functions serve concrete arrays and traced values: they call minijax.numpy, whose
lax calls bind onto whatever trace is current, so `x + y` runs eagerly under the eval trace
and becomes an equation under `jit`.  Reflected operators swap their operands; an operand of
an unsupported type makes the operator return NotImplemented, so Python raises its usual
TypeError naming both types.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.state import AbstractRef
from minijax.lax import state as lax_state
from minijax.numpy import _util


def _binop(fn, reflected=False):
  """An operator: an operand that defines `__jax_array__` stands for its array; one that is
  no array (a list, or an object that merely forwards `aval`, as flax's Cursor) gets
  NotImplemented, so its own reflected operator runs, as with JAX's arrays."""
  plain, arraylike = _util.PLAIN_OPERANDS, _util._ARRAYLIKE
  def op(self, other):
    if type(other) not in plain and not isinstance(other, arraylike):
      if not hasattr(type(other), "__jax_array__"):
        return NotImplemented
      other = other.__jax_array__()
    return fn(other, self) if reflected else fn(self, other)
  return op


def _numpy_module():
  import minijax.numpy as jnp
  return jnp


def _defer(name):
  """A method that calls `minijax.numpy.<name>(self, ...)`."""
  def method(self, *args, **kwargs):
    import minijax.numpy as jnp
    return getattr(jnp, name)(self, *args, **kwargs)
  method.__name__ = name
  return method


def _reshape(self, *shape, order="C", out_sharding=None):
  import minijax.numpy as jnp
  if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
    shape = shape[0]
  return jnp.reshape(self, shape, order, out_sharding=out_sharding)


def _transpose(self, *axes):
  import minijax.numpy as jnp
  if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
    axes = axes[0]
  return jnp.transpose(self, axes if axes else None)


def _astype(self, dtype, copy=False):
  return lax.convert_element_type(self, dtypes.canonicalize_user_dtype(dtype, "astype"))


def _getitem(self, idx):
  if type(self.aval) is AbstractRef:  # a traced ref: a read
    return lax_state.get(self, idx)
  from minijax.numpy.indexing import getitem
  return getitem(self, idx)


def _at(self):
  from minijax.numpy.indexing import _IndexUpdateHelper
  return _IndexUpdateHelper(self)


def _T(self):
  return lax.transpose(self, tuple(reversed(range(self.ndim))))


def _mT(self):
  nd = self.ndim
  return lax.transpose(self, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _flatten(self, order="C"):
  import minijax.numpy as jnp
  return jnp.ravel(self, order)


def _squeeze(self, axis=None):
  import minijax.numpy as jnp
  return jnp.squeeze(self, axis)


def _round(self, ndigits=None):
  """`round(x)` is an integer array, as Python's `round` of a float is an int (and JAX's);
  `round(x, n)` keeps the dtype."""
  import minijax.numpy as jnp
  out = jnp.round(self, ndigits or 0)
  return out.astype(int) if ndigits is None else out


def _compress(self, condition, axis=None, *, size=None, fill_value=0):
  import minijax.numpy as jnp
  return jnp.compress(condition, self, axis, size=size, fill_value=fill_value)


def _view(self, dtype=None, type=None):
  """The same bytes read as `dtype` (numpy's `view`): the last axis is rescaled when the
  item sizes differ."""
  if type is not None:
    raise NotImplementedError("`type` argument of array.view() is not supported.")
  if dtype is None:
    return self
  new = np.dtype(dtype)
  old = np.dtype(self.dtype)
  if new == old:
    return self
  if dtypes.bool_ in (new, old):
    raise NotImplementedError("array.view() to or from bool is not supported by minijax; "
                              "compare or cast with astype instead")
  if old.kind == "c":  # (XLA bitcasts no complex values: a complex is its two parts)
    if not self.ndim:
      raise ValueError("Changing the dtype to one of a different size is not supported for "
                       "scalar arrays")
    parts = lax.concatenate([lax.expand_dims(lax.real(self), (-1,)),
                             lax.expand_dims(lax.imag(self), (-1,))], self.ndim)
    return _view(lax.reshape(parts, self.shape[:-1] + (2 * self.shape[-1],)), new)
  if new.kind == "c":
    part = np.dtype(f"f{new.itemsize // 2}")
    parts = _view(self, part)
    pairs = lax.reshape(parts, parts.shape[:-1] + (parts.shape[-1] // 2, 2))
    return lax.complex(pairs[..., 0], pairs[..., 1])
  if new.itemsize == old.itemsize:
    return lax.bitcast_convert_type(self, new)
  if not self.ndim:
    raise ValueError("Changing the dtype to one of a different size is not supported for "
                     "scalar arrays")
  if new.itemsize < old.itemsize:  # each element becomes several
    parts = lax.bitcast_convert_type(self, new)
    return lax.reshape(parts, self.shape[:-1] + (self.shape[-1] * parts.shape[-1],))
  ratio = new.itemsize // old.itemsize
  if self.shape[-1] % ratio:
    raise ValueError(f"When changing to a larger dtype, its size ({new.itemsize}) must divide "
                     f"the total size in bytes of the last axis of the array "
                     f"({self.shape[-1] * old.itemsize})")
  grouped = lax.reshape(self, self.shape[:-1] + (self.shape[-1] // ratio, ratio))
  return lax.bitcast_convert_type(grouped, new)


def _contains(self, value):
  if self.ndim != 1:
    raise ValueError("Array.__contains__: search array must be one-dimensional, got "
                     f"arr.shape={self.shape}.")
  import minijax.numpy as jnp
  return bool(jnp.any(self == value))


def _to_device(self, device, *, stream=None):
  from minijax.runtime.array import device_put
  return device_put(self, device)


def _flat(self):
  raise NotImplementedError("minijax Arrays do not implement the arr.flat property: consider "
                            "arr.flatten() instead.")


def _copy(self):
  """A new Array holding the same values (its own buffer: deleting or donating one leaves
  the other alive); a traced value is its own copy."""
  from minijax.runtime.array import copy_array, is_concrete_array
  return copy_array(self) if is_concrete_array(self) else self


def _index_text(idx) -> str:
  """`idx` as it is written between brackets: `0`, `1:3`, `..., None`."""
  def one(e):
    if isinstance(e, slice):
      parts = ["" if p is None else str(p) for p in (e.start, e.stop, e.step)]
      return ":".join(parts[:2] if e.step is None else parts)
    if e is Ellipsis:
      return "..."
    if isinstance(e, (int, np.integer, type(None))):
      return str(e)
    return "idx"
  if isinstance(idx, tuple):
    return ", ".join(one(e) for e in idx) if idx else "()"
  return one(idx)


def _setitem(self, idx, value):
  if type(self.aval) is AbstractRef:  # a traced ref: a write
    return lax_state.set(self, idx, value)
  where = _index_text(idx)
  what = repr(value) if isinstance(value, (bool, int, float, complex)) else "y"
  raise TypeError(
      f"'{type(self).__name__}' object does not support item assignment. minijax arrays are "
      f"immutable (as JAX's are): instead of x[{where}] = {what}, use "
      f"x = x.at[{where}].set({what}), or another .at[] method (add, multiply, min, max, ...).")


def _tracer_item(self):
  """A traced value's Python scalar, when its transformation knows it (else the
  concretization error)."""
  return np.asarray(self._concrete("item()")).item()


def _tracer_tolist(self):
  return np.asarray(self._concrete("tolist()")).tolist()


def _tracer_tobytes(self, order="C"):
  return np.asarray(self._concrete("tobytes()")).tobytes(order)


def install(cls) -> None:
  import minijax.numpy as jnp
  ops = {
      "__add__": _binop(jnp.add), "__radd__": _binop(jnp.add, True),
      "__sub__": _binop(jnp.subtract), "__rsub__": _binop(jnp.subtract, True),
      "__mul__": _binop(jnp.multiply), "__rmul__": _binop(jnp.multiply, True),
      "__truediv__": _binop(jnp.true_divide), "__rtruediv__": _binop(jnp.true_divide, True),
      "__floordiv__": _binop(jnp.floor_divide),
      "__rfloordiv__": _binop(jnp.floor_divide, True),
      "__mod__": _binop(jnp.remainder), "__rmod__": _binop(jnp.remainder, True),
      "__divmod__": _binop(jnp.divmod), "__rdivmod__": _binop(jnp.divmod, True),
      "__pow__": _binop(jnp.power), "__rpow__": _binop(jnp.power, True),
      "__matmul__": _binop(jnp.matmul), "__rmatmul__": _binop(jnp.matmul, True),
      "__and__": _binop(jnp.bitwise_and), "__rand__": _binop(jnp.bitwise_and, True),
      "__or__": _binop(jnp.bitwise_or), "__ror__": _binop(jnp.bitwise_or, True),
      "__xor__": _binop(jnp.bitwise_xor), "__rxor__": _binop(jnp.bitwise_xor, True),
      "__lshift__": _binop(jnp.left_shift), "__rlshift__": _binop(jnp.left_shift, True),
      "__rshift__": _binop(jnp.right_shift), "__rrshift__": _binop(jnp.right_shift, True),
      "__eq__": _binop(jnp.equal), "__ne__": _binop(jnp.not_equal),
      "__lt__": _binop(jnp.less), "__le__": _binop(jnp.less_equal),
      "__gt__": _binop(jnp.greater), "__ge__": _binop(jnp.greater_equal),
      "__neg__": lambda self: jnp.negative(self),
      "__pos__": lambda self: jnp.positive(self),
      "__abs__": lambda self: jnp.absolute(self),
      "__invert__": lambda self: jnp.invert(self),
      "__round__": _round,
      "__getitem__": _getitem, "__setitem__": _setitem, "copy": _copy,
      "__copy__": _copy, "__deepcopy__": lambda self, memo: _copy(self),
      "reshape": _reshape, "transpose": _transpose, "astype": _astype,
      "flatten": _flatten, "squeeze": _squeeze,
      "T": property(_T), "mT": property(_mT), "at": property(_at),
      "compress": _compress, "view": _view, "__contains__": _contains,
      "to_device": _to_device, "flat": property(_flat), "clone": _copy,
      "__array_namespace__": lambda self, *, api_version=None: _numpy_module(),
  }
  for name in ("sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax",
               "argmin", "cumsum", "cumprod", "ravel", "dot", "clip", "round", "swapaxes",
               "sort", "argsort", "take", "repeat", "nonzero", "ptp", "conj", "conjugate",
               "trace", "diagonal", "argpartition", "choose", "searchsorted"):
    ops[name] = _defer(name)
  ops["real"] = property(lambda self: jnp.real(self))
  ops["imag"] = property(lambda self: jnp.imag(self))
  ops["itemsize"] = property(lambda self: np.dtype(self.dtype).itemsize)
  ops["nbytes"] = property(lambda self: self.size * np.dtype(self.dtype).itemsize)
  for name, value in ops.items():
    setattr(cls, name, value)
  for name, method in (("item", _tracer_item), ("tolist", _tracer_tolist),
                       ("tobytes", _tracer_tobytes)):  # (an Array has its own)
    if not hasattr(cls, name):
      setattr(cls, name, method)
  cls.__array_priority__ = max(getattr(cls, "__array_priority__", 0), 100)


def _install_ref_indexing() -> None:
  """Refs indexed by integer arrays read and write through numpy's indexing."""
  from minijax.numpy.indexing import getitem
  lax_state.array_getitem = getitem
  lax_state.array_setitem = lambda x, idx, v: _at(x)[idx].set(v)


def install_all() -> None:
  from minijax.core.trace import Tracer
  from minijax.runtime.array import Array
  install(Array)
  install(Tracer)
  _install_ref_indexing()
