"""Devices and placement: `device_put`, `device_get`, `block_until_ready`, device counts.

JAX's names for moving values between the host and devices and for asking what the
machine has.  Placement of one array goes straight to the runtime's `device_put`; a pytree,
or a target that is a sharding or a pytree prefix of targets, is mapped leaf by leaf, and
inside a transformation a `NamedSharding` becomes a sharding constraint.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.tree_util import internal as tree_util
from minijax.api_util import prefix_pairs
from minijax.core import dtypes, layout
from minijax.core import sharding as sharding_lib
from minijax.core.avals import ShapedArray
from minijax.core.errors import UnexpectedTracerError
from minijax.core.trace import Tracer
from minijax.runtime import array as array_lib
from minijax.runtime import backend as runtime_backend
from minijax.runtime.array import Array, is_concrete_array
from minijax.runtime.array import device_put as runtime_device_put
from minijax.runtime import sharded as runtime_sharded

__all__ = ["device_put", "device_get", "block_until_ready", "device_count",
           "local_device_count", "default_backend", "print_environment_info",
           "make_array_from_callback", "make_array_from_single_device_arrays", "live_arrays"]


def device_put(x, device=None, *, src=None, donate: bool = False, may_alias=None):
  """Places `x` (a pytree) on `device`: None (the default device, or where an Array
  already is), a device or its index, or a sharding (each leaf split into blocks over its
  devices; a `Format` of the default layout stands for its sharding); a pytree prefix of
  those gives each subtree its own.  Inside a transformation
  a `NamedSharding` constrains the layout (`lax.with_sharding_constraint`), and anything
  else leaves the value as it is.
  An Array already in place is returned as it is (`may_alias=None` or True), or copied
  into a new buffer with `may_alias=False`; `donate=True` lets the result be the input's
  buffer (so the input must not be used after), and cannot go with `may_alias=True`."""
  del src
  if may_alias and donate:
    raise ValueError("may_alias and donate cannot be True at the same time.")

  def is_leaf(d):
    return d is None or isinstance(d, (sharding_lib.Sharding, int, runtime_backend.Device,
                                       sharding_lib.PartitionSpec, layout.Format))

  if may_alias is False:  # a new buffer even where the value is in place already
    def put(leaf, target):
      out = runtime_device_put(leaf, target)
      return array_lib.copy_array(out) if out is leaf and out._device is not None else out
  else:
    put = runtime_device_put
  targets = tree_util.tree_leaves(device, is_leaf=is_leaf)
  for target in targets:
    if not is_leaf(target) or isinstance(target, bool):
      raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                       "`jax.Device` (or, in minijax, a device index) or a pytree of these "
                       f"values. Received invalid value: {target}")
  if any(isinstance(t, layout.Format) for t in targets):
    device = tree_util.tree_map(lambda d: layout.sharding_of(d, "device_put"), device,
                                is_leaf=is_leaf)
  if any(isinstance(t, sharding_lib.PartitionSpec) for t in targets):  # on the mesh in force
    device = tree_util.tree_map(
        lambda d: sharding_lib.on_current_mesh(d, "device_put")
        if isinstance(d, sharding_lib.PartitionSpec) else d, device, is_leaf=is_leaf)

  def one(leaf, target):
    if isinstance(leaf, Tracer):
      if isinstance(target, sharding_lib.NamedSharding):
        return lax.with_sharding_constraint(leaf, target)
      return leaf
    return put(leaf, target)

  with runtime_backend.explicit_transfers():
    if is_leaf(device):
      if (isinstance(x, (np.ndarray, np.generic, *dtypes.PYTHON_SCALARS))
          or hasattr(x, "_buffer")):
        return put(x, device)  # one array: no pytree machinery
      return tree_util.tree_map(lambda leaf: one(leaf, device), x)
  def mismatch(details):
    return ValueError("device_put device specification must be a tree prefix of the "
                      f"corresponding value; got {device} for value tree "
                      f"{tree_util.tree_structure(x)}.{details}")
  pairs = prefix_pairs(device, x, is_leaf=is_leaf, name="device", mismatch=mismatch)
  with runtime_backend.explicit_transfers():
    return tree_util.tree_structure(device, is_leaf=is_leaf).unflatten(
        [tree_util.tree_map(lambda leaf, t=t: one(leaf, t), sub) for t, sub in pairs])


def _extended_dtype(values):
  """The extended dtype (of typed PRNG keys, say) of `values`, or None."""
  dtype = getattr(values[0], "dtype", None) if values else None
  return dtype if dtypes.is_extended(dtype) else None


def _check_dtype(values, dtype, fname: str):
  """The dtype of the blocks `values`, which must agree (with `dtype` too, when given)."""
  if not values:
    if dtype is None:
      raise ValueError("If the Array has no addressable shards, `dtype` must be provided "
                       f"via the `dtype` argument to `jax.{fname}`.")
    return dtype
  found = values[0].dtype
  if dtype is not None and dtypes.canonicalize_dtype(dtype) != found:
    raise ValueError(f"If `dtype` is provided to `jax.{fname}`, it must match the dtype of "
                     f"the addressable shards. Got dtype={dtype} and shard dtype={found}`.")
  return found


def _check_blocks(values, expected_shape, dtype, shape, sharding) -> None:
  for v in values:
    if v.dtype != dtype:
      raise ValueError("Input buffers to `Array` must have matching dtypes. "
                       f"Got {v.dtype}, expected {dtype} for buffer: {v}")
    if tuple(v.shape) != tuple(expected_shape):
      raise ValueError(f"Expected shard shape {tuple(expected_shape)} doesn't match the single "
                       f"device array shape {tuple(v.shape)}. Shape of Array is "
                       f"{ShapedArray(tuple(shape), dtype).str_short()} with sharding {sharding}")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """An Array of global `shape` laid out by `sharding`, each block of this process's
  devices being `data_callback(index)` (`index`: a tuple of slices into the global value;
  asked once when the layout is fully replicated).  The callback may return numpy arrays,
  Arrays, Python scalars or PRNG key arrays; the result is committed to the devices."""
  if not isinstance(sharding, sharding_lib.Sharding):
    raise TypeError(f"sharding should be an instance of `jax.sharding`. Got {sharding} of "
                    f"type {type(sharding)}")
  shape = tuple(shape)
  indices = sharding.addressable_devices_indices_map(shape)

  def get(index):
    value = data_callback(index)
    if isinstance(value, Tracer):
      raise UnexpectedTracerError("jax.make_array_from_callback cannot be called within a "
                                  "traced context.")
    return value

  if sharding.is_fully_replicated:
    value = get((slice(None),) * len(shape))
    values = [value] * len(indices)
  else:
    values = [get(index) for index in indices.values()]
  extended = _extended_dtype(values)
  if extended is not None:
    data = [extended.physical(v) for v in values]
    base = make_array_from_callback(
        shape + extended.physical_shape, sharding,
        lambda index: data[_position(indices, index[:len(shape)])])
    return extended.wrap(base)
  values = [v if is_concrete_array(v) else _canonical(v) for v in values]
  dtype = _check_dtype(values, dtype, "make_array_from_callback")
  dtype = dtypes.canonicalize_dtype(dtype)
  _check_blocks(values, sharding.shard_shape(shape), dtype, shape, sharding)
  aval = ShapedArray(shape, dtype)
  blocks = {d: np.asarray(v) for d, v in zip(indices, values)}
  if len(sharding._device_assignment) == 1:
    ((device, block),) = blocks.items()
    return runtime_device_put(block.astype(dtype, copy=False), device)
  return runtime_sharded.put_blocks(blocks, aval, sharding)


def _canonical(value) -> np.ndarray:
  """A host value as numpy, of the dtype minijax gives it (64-bit types only with x64)."""
  if isinstance(value, dtypes.PYTHON_SCALARS):
    return np.asarray(value, dtypes.python_scalar_dtype(value))
  value = np.asarray(value)
  return value.astype(dtypes.canonicalize_dtype(value.dtype), copy=False)


def _position(indices: dict, index) -> int:
  """Which block of `indices` (device -> index) `index` is."""
  key = tuple((s.start, s.stop) for s in index)
  for i, known in enumerate(indices.values()):
    if tuple((s.start, s.stop) for s in known) == key:
      return i
  raise AssertionError(f"unknown block index {index}")


def process_region(sharding, global_shape) -> list[tuple[int, int]]:
  """Per axis, the `(start, stop)` of the part of an array of `global_shape` that this
  process's devices hold (a box: shardings give each process a box of blocks)."""
  index_of = sharding.addressable_devices_indices_map(global_shape)
  region = []
  for axis, size in enumerate(global_shape):
    spans = [index[axis].indices(size)[:2] for index in index_of.values()]
    region.append((min(a for a, _ in spans), max(b for _, b in spans)))
  return region


def _global_shape_of(sharding, local_shape) -> tuple[int, ...]:
  """The global shape whose part on this process's devices has `local_shape`: along each
  axis the local size times the blocks of the axis over the blocks this process holds."""
  blocks = sharding.tile_assignment(len(local_shape)).dims
  held = process_region(sharding, tuple(blocks))  # (each block of size 1)
  shape = []
  for axis, (size, n) in enumerate(zip(local_shape, blocks)):
    mine = held[axis][1] - held[axis][0]
    if (size * n) % mine:
      raise ValueError(f"make_array_from_process_local_data: axis {axis} of the local data "
                       f"(size {size}) is not {mine} of the {n} blocks of the sharding")
    shape.append(size * n // mine)
  return tuple(shape)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """An Array laid out by `sharding` from the data this process holds: the part of the
  global array that this process's devices hold (all of it with one process, or when the
  layout replicates).  `global_shape` is worked out from the sharding when not given."""
  local_data = np.asarray(local_data) if not isinstance(local_data, Array) else local_data
  local_shape = tuple(np.shape(local_data))
  global_shape = tuple(_global_shape_of(sharding, local_shape) if global_shape is None
                       else global_shape)
  region = process_region(sharding, global_shape)
  if tuple(b - a for a, b in region) != local_shape:
    raise ValueError(f"make_array_from_process_local_data: the local data has shape "
                     f"{local_shape}, but with global_shape={global_shape} laid out by "
                     f"{sharding} this process's devices hold a part of shape "
                     f"{tuple(b - a for a, b in region)}")

  def local_block(index):
    return local_data[tuple(slice(s.indices(n)[0] - a, s.indices(n)[1] - a)
                            for s, n, (a, _) in zip(index, global_shape, region))]
  return make_array_from_callback(global_shape, sharding, local_block)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """An Array of global `shape` laid out by `sharding` over `arrays`, one single-device
  Array (or PRNG key array) per device of this process, each holding that device's block
  (no copy is made).  The result is committed to the devices."""
  if not isinstance(arrays, (list, tuple)):
    raise TypeError("jax.make_array_from_single_device_arrays `arrays` argument must be a "
                    f"list or tuple, but got {type(arrays)}.")
  if any(isinstance(a, Tracer) for a in arrays):
    raise ValueError("jax.make_array_from_single_device_arrays requires a list of concrete "
                     f"arrays as input, but got types {set(map(type, arrays))}")
  if not isinstance(sharding, sharding_lib.Sharding):
    raise TypeError(f"sharding should be an instance of `jax.sharding`. Got {sharding} of "
                    f"type {type(sharding)}")
  shape = tuple(shape)
  extended = _extended_dtype(arrays)
  if extended is not None:
    base = make_array_from_single_device_arrays(
        shape + extended.physical_shape, sharding, [extended.physical(a) for a in arrays])
    return extended.wrap(base)
  dtype = _check_dtype(list(arrays), dtype, "make_array_from_single_device_arrays")
  _check_blocks(arrays, sharding.shard_shape(shape), dtype, shape, sharding)
  wanted = sharding.addressable_devices
  by_device = {}
  for a in arrays:
    if not is_concrete_array(a) or a._device is None:
      raise ValueError("jax.make_array_from_single_device_arrays takes Arrays each on one "
                       f"device, got {type(a).__name__} on {a.devices()}")
    if a._device not in wanted or a._device in by_device:
      raise ValueError(f"the arrays must hold one block for each device of this process in "
                       f"{sharding}: got one on {a._device}, which is "
                       f"{'another array' if a._device in by_device else 'not one of them'}")
    by_device[a._device] = a
  if set(by_device) != wanted:
    raise ValueError(f"the arrays must hold one block for each device of this process in "
                     f"{sharding}; none is on {sorted(wanted - set(by_device), key=str)}")
  return runtime_sharded.assemble(by_device, ShapedArray(shape, dtype), sharding)


def live_arrays(platform=None) -> list:
  """Every array the devices hold alive (ones whose Python objects are gone included, until
  jaxlib frees them), each as an Array over its buffer."""
  _check_backend(platform)
  return runtime_sharded.live_arrays()


def device_count(backend=None) -> int:
  """The number of devices (minijax's CPU devices; see `MINIJAX_NUM_CPU_DEVICES`)."""
  _check_backend(backend)
  return runtime_backend.device_count()


def local_device_count(backend=None) -> int:
  _check_backend(backend)
  return len(runtime_backend.local_devices())


def default_backend() -> str:
  return "cpu"


def _check_backend(backend) -> None:
  if backend not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {backend!r}: minijax runs on the 'cpu' backend only")


def device_get(x):
  """`x` with every Array (and traced value the transformation knows) as a numpy array;
  other leaves unchanged."""
  def get(leaf):
    if is_concrete_array(leaf):
      return np.asarray(leaf)
    return leaf
  with runtime_backend.explicit_transfers():
    return tree_util.tree_map(get, x)


def block_until_ready(x):
  """Waits until every Array in the pytree `x` is computed; returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    if hasattr(leaf, "block_until_ready"):
      leaf.block_until_ready()
  return x


def copy_to_host_async(x):
  """Starts copying every array of the pytree `x` to the host (leaves without
  `copy_to_host_async` are left alone); returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    try:
      copy = leaf.copy_to_host_async
    except AttributeError:
      continue
    copy()  # (its own AttributeErrors propagate)
  return x


def print_environment_info(return_string: bool = False) -> str | None:
  """The versions of minijax, jaxlib, numpy and Python, and the devices."""
  import platform
  import sys
  from importlib import metadata
  import jaxlib
  devices = runtime_backend.local_devices()
  try:
    version = metadata.version("minijax-effects")
  except metadata.PackageNotFoundError:
    version = "unknown"
  info = "\n".join([
      f"minijax: {version}",
      f"jaxlib:  {jaxlib.__version__}",
      f"numpy:   {np.__version__}",
      f"python:  {sys.version}",
      f"device info: cpu-{len(devices)}, {len(devices)} local devices",
      f"process_count: {runtime_backend.process_count()}",
      f"platform: {platform.uname()}",
  ]) + "\n"
  if return_string:
    return info
  print(info, end="")
  return None
