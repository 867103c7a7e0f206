"""`Array`: a value that lives on one device, and `device_put`, which makes one.

An `Array` pairs one single-device jaxlib array (`_buffer`) with its minijax aval (`aval`, a
`ShapedArray` carrying the weak-type bit that jaxlib does not know about) and the device it
lives on.  An Array laid out over several devices (`runtime/sharded.py`) has a multi-device
`_buffer`, its `core.sharding` sharding in `_sharding` and no `_device`; code that takes the
fast paths of single-device Arrays checks `_device`, which a sharded Array never matches.  Its contents reach the host only when asked for (`_value`, `__array__`, printing,
conversion to Python scalars), and then once: the host copy is cached, read-only.

As in JAX, an Array is *committed* to its device(s) (`_committed`) when it was put there on
purpose: by `device_put` to a device or sharding, or as the result of a computation that
had a committed argument or placement; `jnp.array`, `device_put(x)` without a target and
computations on uncommitted values only make uncommitted Arrays, which a computation moves
where it runs.  Staging reads the bit to place computations (`staging/compiler.py`); an
Array laid out over several devices is always committed.  One placed by a one-device
sharding other than a `SingleDeviceSharding` (a `NamedSharding` of a one-device mesh) keeps
that sharding in `_committed` (truthy), and reports it as its `sharding`, as JAX does.

Host-to-device goes through `xla_client.batched_device_put`; device-to-host goes through
DLPack, copying out of the exported view so that no external reference outlives the read
(an outstanding reference would silently stop jaxlib from donating the buffer later).  numpy
refuses DLPack for the ml_dtypes types (bfloat16, float8): those are copied from the address
that the DLPack tensor itself carries (jaxlib's `unsafe_buffer_pointer` imports `jax`).  Neither
direction goes near the jaxlib paths that import `jax`.

Arithmetic, indexing, `.T`, `.at` and the reductions are installed on `Array` later by the numpy
layer; this module only gives it what every array needs to exist, print and be converted.
"""
from __future__ import annotations

import ctypes
import math
import operator
from typing import Any

import numpy as np

from jaxlib import _jax, xla_client

from minijax.config import config
from minijax.core import dtypes
from minijax.core import sharding as sharding_lib
from minijax.core.avals import AbstractToken, ShapedArray, check_conversion
from minijax.core.trace import Tracer
from minijax.runtime import backend

_DELETED_MESSAGE = ("Array has been deleted: it was deleted explicitly with .delete() or donated "
                    "to a computation (donate_argnums), and its buffer is gone")
_DLPACK_KINDS = frozenset("biufc")
_IMMUTABLE_DURING_CALL = xla_client.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL


class _DLPackExport:
  """Lets `np.from_dlpack` read a jaxlib buffer (only the unversioned protocol is offered)."""
  __slots__ = ("buffer",)

  def __init__(self, buffer):
    self.buffer = buffer

  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    return _jax.buffer_to_dlpack_managed_tensor(self.buffer)

  def __dlpack_device__(self):
    return (1, 0)  # kDLCPU, device 0: CPU memory is shared by every CPU device


class _DLTensor(ctypes.Structure):
  """The head of DLPack's `DLManagedTensor`: where the data is (the rest is not read)."""
  _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
              ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
              ("dtype", ctypes.c_uint32), ("shape", ctypes.c_void_p),
              ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _copy_raw(buffer, out: np.ndarray) -> None:
  """Copies `buffer`'s bytes into `out` through a DLPack export (which waits for the buffer
  to be ready); the capsule, still unconsumed, releases the export when it is dropped."""
  capsule = _jax.buffer_to_dlpack_managed_tensor(buffer)
  tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
  ctypes.memmove(out.ctypes.data, tensor.data + tensor.byte_offset, out.nbytes)
  del tensor, capsule


def _buffer_address(buffer) -> int:
  """The address of `buffer`'s data, read from a DLPack export (released at once)."""
  capsule = _jax.buffer_to_dlpack_managed_tensor(buffer)
  tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
  address = tensor.data + tensor.byte_offset
  del tensor, capsule
  return address


# Sub-byte types (int4, ...) are packed in XLA's buffers and have no DLPack form.  Staging
# installs the reader (`widen_subbyte(array) -> numpy`), which widens them on the device
# (int4 -> int8, float4_e2m1fn -> float32, exactly) and narrows the result with numpy.
widen_subbyte = None


def host_view(x: "Array") -> np.ndarray:
  """A read-only numpy array over `x`'s contents, without a copy where the device's memory
  is the host's and DLPack can describe the dtype (it keeps the buffer alive); else the
  host copy of `x._value`.  For arrays nothing else holds (a deferred tap's outputs): the
  view would see a later donation's writes."""
  dtype = x.aval.dtype
  if (x._sharding is None and x._device.platform == "cpu" and dtype.kind in _DLPACK_KINDS
      and dtype.type.__module__ == "numpy"):
    out = np.from_dlpack(_DLPackExport(x._buffer))
    out.flags.writeable = False
    return out
  return x._value


def _buffer_to_numpy(buffer, aval: ShapedArray) -> np.ndarray:
  dtype = aval.dtype
  if dtype in dtypes.SUBBYTE_BITS:
    out = np.array(widen_subbyte(Array(buffer, aval, buffer._sharding._device)))
  elif dtype.kind in _DLPACK_KINDS and dtype.type.__module__ == "numpy":
    out = np.from_dlpack(_DLPackExport(buffer)).copy()
  else:
    out = np.empty(aval.shape, dtype)
    if out.nbytes:
      _copy_raw(buffer, out)
  out.flags.writeable = False
  return out


_single_device_shardings: dict = {}


def _single_device_sharding(device) -> sharding_lib.SingleDeviceSharding:
  sharding = _single_device_shardings.get(device)
  if sharding is None:
    sharding = _single_device_shardings[device] = sharding_lib.SingleDeviceSharding(device)
  return sharding


_ARRAY_LIKE: tuple[type, ...] = (Tracer,)


class _ArrayMeta(type):
  """`isinstance(x, Array)` is also True for a tracer and for the other array types
  registered with `register_array_type` (typed PRNG key arrays), as `isinstance(x,
  jax.Array)` is in JAX: code written for JAX checks it inside transformations.  minijax's
  own code asks `is_concrete_array(x)` when it means an Array that holds its data."""

  def __instancecheck__(cls, x):
    return type.__instancecheck__(cls, x) or isinstance(x, _ARRAY_LIKE)


def register_array_type(cls: type) -> None:
  """Makes `isinstance(x, Array)` True for instances of `cls` (an array type of a library
  above the runtime)."""
  global _ARRAY_LIKE
  _ARRAY_LIKE = (*_ARRAY_LIKE, cls)


def is_concrete_array(x) -> bool:
  """Whether `x` is an `Array` holding its data (not a tracer)."""
  return type.__instancecheck__(Array, x)


class Array(metaclass=_ArrayMeta):
  """An immutable array stored on one device, or laid out over several (`sharding`)."""
  __slots__ = ("_buffer", "aval", "_device", "_npy", "_sharding", "_committed", "__weakref__")
  __array_priority__ = 100

  def __init__(self, buffer, aval: ShapedArray, device, sharding=None, committed=False):
    self._buffer = buffer
    self.aval = aval
    self._device = device
    self._npy = None
    self._sharding = sharding
    self._committed = committed

  # ---- metadata: always available, even once deleted
  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  @property
  def device(self):
    if self._device is None:
      raise ValueError("Length of devices is greater than 1. Please use `.devices()`.")
    return self._device

  @property
  def sharding(self) -> sharding_lib.Sharding:
    """How the array is laid out: a `NamedSharding` (or another multi-device sharding), or
    the `SingleDeviceSharding` of its device."""
    if self._sharding is not None:
      return self._sharding
    if isinstance(self._committed, sharding_lib.Sharding):
      return self._committed
    return _single_device_sharding(self._device)

  def devices(self) -> set:
    if self._sharding is not None:
      return set(self._sharding._device_assignment)
    return {self._device}

  @property
  def addressable_shards(self) -> list:
    """The blocks this process's devices hold (`Shard`: device, index, replica_id, data)."""
    from minijax.runtime import sharded
    return sharded.addressable_shards(self)

  @property
  def global_shards(self) -> list:
    if self._sharding is not None and not self._sharding.is_fully_addressable:
      raise NotImplementedError("global_shards of an Array that spans other processes")
    return self.addressable_shards

  @property
  def is_fully_addressable(self) -> bool:
    return self._sharding is None or self._sharding.is_fully_addressable

  @property
  def is_fully_replicated(self) -> bool:
    return self._sharding is None or self._sharding.is_fully_replicated

  @property
  def committed(self) -> bool:
    """Whether the array was placed on its device(s) on purpose (see the module docstring)."""
    return bool(self._committed)

  # ---- lifetime
  def is_deleted(self) -> bool:
    return self._buffer.is_deleted()

  def delete(self) -> None:
    self._buffer.delete()
    self._npy = None

  def _check_alive(self) -> None:
    if self._buffer.is_deleted():
      self._npy = None
      raise RuntimeError(_DELETED_MESSAGE)

  def block_until_ready(self) -> Array:
    self._check_alive()
    self._buffer.block_until_ready()
    return self

  def is_ready(self) -> bool:
    self._check_alive()
    return self._buffer.is_ready()

  def copy_to_host_async(self) -> None:
    """Device memory is host memory on CPU: nothing to start, the read itself is cheap."""
    self._check_alive()

  def unsafe_buffer_pointer(self) -> int:
    self._check_alive()
    self._single_device("unsafe_buffer_pointer")
    return _buffer_address(self._buffer)  # (jaxlib's own method imports `jax`)

  def on_device_size_in_bytes(self) -> int:
    """The bytes the buffer takes on its device (every device's, for a sharded Array)."""
    self._check_alive()
    return self._buffer.on_device_size_in_bytes()

  def addressable_data(self, index: int) -> Array:
    """The data of this process's shard `index`."""
    return self.addressable_shards[index].data

  def _single_device(self, what: str) -> None:
    if self._device is None:
      raise ValueError(f"{what} of an Array laid out over several devices ({self._sharding!r}); "
                       "use its addressable_shards")

  # ---- host values
  @property
  def _value(self) -> np.ndarray:
    """The contents as a read-only numpy array, copied to the host once and cached."""
    self._check_alive()
    npy = self._npy
    if npy is None:
      if self._sharding is not None:
        from minijax.runtime import sharded
        npy = self._npy = sharded.value(self)
      elif type(self.aval) is AbstractToken:  # a Token's buffer (see `core.avals.Token`)
        raise RuntimeError("Cannot convert a token-shape buffer to a numpy array.")
      else:
        npy = self._npy = _buffer_to_numpy(self._buffer, self.aval)
    return npy

  def __array__(self, dtype=None, copy=None):
    value = self._value
    if copy:
      return np.array(value, dtype=dtype, copy=True)
    if copy is False and dtype is not None and np.dtype(dtype) != value.dtype:
      raise ValueError(f"converting an Array of dtype {value.dtype} to {np.dtype(dtype)} "
                       "requires a copy, but copy=False was passed")
    return value if dtype is None else value.astype(dtype, copy=False)

  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Zero-copy export; while the consumer holds it, donating this array cannot reuse it."""
    self._check_alive()
    self._single_device("__dlpack__")
    return _jax.buffer_to_dlpack_managed_tensor(self._buffer)

  def __dlpack_device__(self):
    return (1, 0)

  def item(self):
    return self._value.item()

  def tolist(self):
    return self._value.tolist()

  def tobytes(self, order="C") -> bytes:
    return self._value.tobytes(order)

  def __bool__(self):
    check_conversion("bool", self.shape, self.dtype)
    return bool(self._value)

  def __int__(self):
    check_conversion("scalar", self.shape, self.dtype)
    return int(self._value)

  def __float__(self):
    check_conversion("scalar", self.shape, self.dtype)
    return float(self._value)

  def __complex__(self):
    check_conversion("scalar", self.shape, self.dtype)
    return complex(self._value)

  def __index__(self):
    check_conversion("index", self.shape, self.dtype)
    return operator.index(self._value)

  def __hash__(self):
    raise TypeError("unhashable type: 'Array' (like numpy arrays, minijax Arrays are mutable in "
                    "spirit and not hashable; use a tuple of Python scalars as a key instead)")

  def __reduce__(self):
    return (_rebuild, (self._value, self.aval.weak_type))

  # ---- sequence protocol over the leading axis
  def __len__(self):
    if not self.aval.shape:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]

  def __iter__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d array")
    aval = self.aval.update(shape=self.aval.shape[1:])
    device = self._device or backend.default_device()
    return (_put_numpy(row, aval, device, bool(self._committed)) for row in self._value)

  def __reversed__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d array")
    aval = self.aval.update(shape=self.aval.shape[1:])
    device = self._device or backend.default_device()
    return (_put_numpy(row, aval, device, bool(self._committed))
            for row in self._value[::-1])

  # ---- printing
  def __repr__(self):
    prefix = "Array("
    weak = ", weak_type=True" if self.aval.weak_type else ""
    dtype_str = f"dtype={self.dtype.name}{weak})"
    self._check_alive()  # as JAX: a deleted array has no repr (RuntimeError)
    if self.size == 0:
      body = f"[], shape={self.shape}"
    else:
      line_width = np.get_printoptions()["linewidth"]
      body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ",
                             max_line_width=line_width)
      last_line_len = len(body) - body.rfind("\n") + 1
      if last_line_len + len(dtype_str) + 1 > line_width:
        return f"{prefix}{body},\n{' ' * len(prefix)}{dtype_str}"
    return f"{prefix}{body}, {dtype_str}"

  def __str__(self):
    return str(self._value)

  def __format__(self, format_spec):
    value = self._value
    return format(value[()] if value.ndim == 0 else value, format_spec)


_buffer_slot = Array._buffer  # the slot behind HostArray's lazy `_buffer`


class HostArray(Array):
  """An Array whose value is already on the host: what a callback's host function receives.

  It wraps the read-only numpy array the callback machinery made (no copy) and is put on its
  device only when something needs a device buffer (an operation, `block_until_ready`,
  `delete`); reading it (`np.asarray`, printing, `item`) never does.  The native handlers
  build it in C (`csrc/host_call.cc`, `csrc/tap_queue.cc`: `set_host_array_type`), setting
  `aval`, `_device`, `_npy` and `_sharding` and leaving the buffer slot empty, so the fast
  paths pay for one object and no Python call.
  """
  __slots__ = ()
  _committed = False  # (the native handlers leave that slot empty)

  def __init__(self, value: np.ndarray, aval: ShapedArray, device):
    self.aval, self._device, self._npy, self._sharding = aval, device, value, None

  def _materialized(self) -> bool:
    try:
      _buffer_slot.__get__(self)
    except AttributeError:
      return False
    return True

  @property
  def _buffer(self):
    try:
      return _buffer_slot.__get__(self)
    except AttributeError:
      buffer = _put_numpy(self._npy, self.aval, self._device)._buffer
      _buffer_slot.__set__(self, buffer)
      return buffer

  def is_deleted(self) -> bool:
    return self._materialized() and Array.is_deleted(self)

  def delete(self) -> None:
    self._buffer  # noqa: B018 - a buffer to delete, so that later uses fail as for any Array
    Array.delete(self)

  def _check_alive(self) -> None:
    if self._materialized():
      Array._check_alive(self)


def host_array(value: np.ndarray, device) -> HostArray:
  """`value` (a numpy array of a dtype minijax knows) as a HostArray on `device`."""
  if not value.flags.owndata or value.flags.writeable:  # a view, or writable: keep a copy
    value = np.array(value)
    value.flags.writeable = False
  return HostArray(value, ShapedArray(value.shape, value.dtype), device)


def make_array(buffer, aval: ShapedArray, device=None) -> Array:
  """Wraps a jaxlib array whose aval is known (the dispatch path); finds its device if not given."""
  if device is None:
    device = buffer._sharding._device
  return Array(buffer, aval, device)


def _put_numpy(value: np.ndarray, aval: ShapedArray, device, committed: bool = False) -> Array:
  """Copies `value` (already of dtype `aval.dtype` and shape `aval.shape`) to `device`."""
  buffer = xla_client.batched_device_put(
      aval, backend.sharding_for(device), [value], [device], True,
      host_buffer_semantics=_IMMUTABLE_DURING_CALL, enable_x64=config.enable_x64)
  return Array(buffer, aval, device, None, committed)


_scalar_buffers: dict[tuple, Any] = {}
_MAX_SCALAR_BUFFERS = 1024


def scalar_buffer(x, aval: ShapedArray, device, *, reuse: bool = True):
  """A device buffer holding the Python scalar `x` as `aval` (its `python_scalar_aval`).

  Putting a scalar on a device costs about 6 µs, and code passes the same few constants
  (`x + 1.0`, a learning rate) over and over, so buffers are immutable and the buffers of
  up to `_MAX_SCALAR_BUFFERS` recent values are kept and shared, unless `reuse` is False (an
  executable that donates its arguments would delete a shared buffer).  Zeros are told apart
  by sign; NaNs and complex values are never shared."""
  key = None
  if reuse and type(x) is not complex and x == x:
    key = (x, aval, device) if x or type(x) is not float else (math.copysign(1.0, x), aval,
                                                                 device, "zero")
    buffer = _scalar_buffers.get(key)
    if buffer is not None:
      return buffer
  buffer = _put_numpy(np.asarray(x, aval.dtype), aval, device)._buffer
  if key is not None:
    if len(_scalar_buffers) >= _MAX_SCALAR_BUFFERS:
      _scalar_buffers.clear()
    _scalar_buffers[key] = buffer
  return buffer


def clear_scalar_buffers() -> None:
  """Forgets the shared buffers of Python scalars (`scalar_buffer`)."""
  _scalar_buffers.clear()


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
  return _put_numpy(value, ShapedArray(value.shape, value.dtype, weak_type), backend.default_device())


def _copy_to_device(x: Array, device, committed: bool) -> Array:
  x._check_alive()
  (buffer,) = _jax.batched_copy_array_to_devices_with_sharding(
      [x._buffer], [xla_client.DeviceList((device,))], [backend.sharding_for(device)],
      [xla_client.ArrayCopySemantics.ALWAYS_COPY])
  return Array(buffer, x.aval, device, None, committed)


def copy_array(x: Array) -> Array:
  """A copy of `x` in new buffers on the same device (each device's block copied in place,
  for an Array laid out over several)."""
  if x._sharding is not None:
    from minijax.runtime import sharded
    return sharded.copy(x)
  return _copy_to_device(x, x._device, x._committed)


def device_put(x: Any, device=None) -> Array:
  """Places `x` (an Array, a numpy array or scalar, or a Python scalar) on `device`.

  `device` is None (the default device, or where an Array already is), an index, a device
  object, or a `core.sharding` sharding (the value is split into blocks over its devices).
  Placed on a device or sharding named here, the result is committed to it; without one, a
  new value is uncommitted and an Array is returned as it is.  Python scalars are weakly
  typed; with x64 off, 64-bit values become their 32-bit kin.
  """
  if isinstance(device, sharding_lib.Sharding):
    return _put_sharded(x, device)
  if is_concrete_array(x):
    if device is None:
      return x
    device = backend.get_device(device)
    if x._device is None:  # laid out over several devices: through the host
      return _put_numpy(x._value, x.aval, device, True)
    if x._device != device:
      return _copy_to_device(x, device, True)
    return x if x._committed is True else Array(x._buffer, x.aval, device, None, True)
  committed = device is not None
  device = backend.get_device(device)
  if getattr(x, "dtype", None) == dtypes.float0:
    return _put_float0(x, device, committed)
  value, aval = _host_value(x)
  return _put_numpy(value, aval, device, committed)


def _put_float0(x: Any, device, committed: bool) -> Array:
  """A float0 value (the tangent of an integer: no data) as compiled code takes it: boolean
  zeros on the device, under its float0 aval."""
  zeros = _put_numpy(np.zeros(np.shape(x), np.bool_), ShapedArray(np.shape(x), np.bool_), device)
  return Array(zeros._buffer, ShapedArray(np.shape(x), dtypes.float0), device, None, committed)


def _put_sharded(x: Any, sharding: sharding_lib.Sharding) -> Array:
  from minijax.runtime import sharded
  if isinstance(sharding, sharding_lib.SingleDeviceSharding):
    return device_put(x, sharding._device)
  if len(sharding._device_assignment) == 1:  # committed to the sharding itself
    if is_concrete_array(x) and x._committed == sharding:
      return x
    sharding.check_shape(np.shape(x))
    out = device_put(x, sharding._device_assignment[0])
    return Array(out._buffer, out.aval, out._device, None, sharding)
  if is_concrete_array(x):
    sharding.check_shape(x.aval.shape)
    return sharded.reshard(x, sharding)
  value, aval = _host_value(x)
  sharding.check_shape(aval.shape)
  return sharded.put(value, aval, sharding)


def _host_value(x: Any) -> tuple[np.ndarray, ShapedArray]:
  """`x` as a numpy value of its canonical dtype, and its aval."""
  if isinstance(x, (np.ndarray, np.generic)):
    value, weak_type = x, False
  elif isinstance(x, dtypes.PYTHON_SCALARS):
    value, weak_type = x, not isinstance(x, bool)
  elif hasattr(x, "__array__") and hasattr(x, "dtype") and not hasattr(x, "aval"):
    value, weak_type = np.asarray(x), False
  else:
    raise TypeError(f"device_put: values of type {type(x).__name__} cannot be put on a device "
                    f"({x!r:.60}); pass an Array, a numpy array or a Python scalar")
  if isinstance(value, dtypes.PYTHON_SCALARS):
    dtype = dtypes.python_scalar_dtype(value)
  else:
    try:
      dtype = dtypes.canonicalize_dtype(value.dtype)
    except TypeError as err:
      raise TypeError(f"device_put: cannot put a {type(x).__name__} of dtype {value.dtype} on a "
                      f"device: {err}") from None
    if dtype == dtypes.float0:
      raise TypeError("float0 values (tangents of integers) cannot be laid out over several "
                      "devices; use numpy zeros of dtype bool if a device value is needed")
  value = np.asarray(value, dtype)
  return value, ShapedArray(value.shape, dtype, weak_type)
