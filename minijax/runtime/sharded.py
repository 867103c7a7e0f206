"""Arrays laid out over several devices: placing them, reading their blocks, their shards.

A sharded `Array` holds one multi-device jaxlib array (`_buffer`: one buffer per device,
described to jaxlib by a `_jax.GSPMDSharding`, an HLO sharding over an ordered device
list) with its global aval and its minijax sharding (`_sharding`, a `core.sharding`
sharding, which is what users see as `x.sharding`); its `_device` is None.  Executables
over several devices take such arrays as they are and return new ones.

Placing a value puts each block on its device as an ordinary single-device array and
assembles those into one multi-device array (`_jax.ArrayImpl` with the arrays, which
takes blocks held by several devices, where `batched_device_put` fails).  Nothing here
asks jaxlib for single-device views of a multi-device array: every jaxlib path
that builds one (`_arrays`, `disassemble_into_single_device_arrays`, a callable result
handler) imports `jax` to make its aval.  To read the block a device holds, the array is
re-viewed with that device first in its device list (`_jax.reorder_shards`, which moves no
data) and exported through DLPack, which exports the first device's buffer.  A shard's
`data` is a copy of that block on its device.
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from jaxlib import _jax, xla_client

from minijax.core import dtypes
from minijax.core import sharding as sharding_lib
from minijax.core.avals import ShapedArray
from minijax.runtime.array import (_DELETED_MESSAGE, Array, _buffer_to_numpy, _put_numpy)

_REUSE = xla_client.ArrayCopySemantics.REUSE_INPUT


@functools.lru_cache(maxsize=1024)
def device_list(devices: tuple) -> Any:
  return xla_client.DeviceList(devices)


@functools.lru_cache(maxsize=4096)
def hlo_sharding(sharding: sharding_lib.Sharding, ndim: int):
  """jaxlib's `HloSharding` of `sharding` for arrays of rank `ndim` (devices numbered by
  their position in `sharding._device_assignment`)."""
  return xla_client.HloSharding.from_string(
      sharding.tile_assignment(ndim).hlo_sharding_text())


@functools.lru_cache(maxsize=4096)
def jaxlib_sharding(sharding: sharding_lib.Sharding, ndim: int):
  """The `_jax.GSPMDSharding` jaxlib describes an array of rank `ndim` laid out by
  `sharding` with."""
  return _jax.GSPMDSharding(device_list(sharding._device_assignment), hlo_sharding(sharding, ndim))


def is_sharded(x: Any) -> bool:
  return type(x) is Array and x._sharding is not None


# ----------------------------------------------------------------------------- placing

def put(value: np.ndarray, aval: ShapedArray, sharding: sharding_lib.Sharding) -> Array:
  """Copies `value` (of dtype `aval.dtype`, shape `aval.shape`) onto the devices of
  `sharding`, each getting its block; a single device gets an ordinary Array."""
  devices = sharding._device_assignment
  if len(devices) == 1:
    return _put_numpy(np.asarray(value, order="C"), aval, devices[0], True)
  indices = sharding.addressable_devices_indices_map(aval.shape)
  return put_blocks({d: value[index] for d, index in indices.items()}, aval, sharding)


def put_blocks(blocks: dict, aval: ShapedArray, sharding: sharding_lib.Sharding) -> Array:
  """An Array laid out by `sharding` from the blocks of this process's devices
  (`{device: block}`; with several processes, the others put theirs).  Each block is put
  on its device and the single-device arrays are assembled into one (jaxlib's
  `batched_device_put` fails on blocks held by several devices)."""
  # float0 values (no data) are held as boolean zeros, as compiled code takes them
  held = aval.update(dtype=np.dtype(np.bool_)) if aval.dtype == dtypes.float0 else aval
  block_aval = held.update(shape=sharding.shard_shape(aval.shape))
  singles = [_put_numpy(np.zeros(np.shape(block), np.bool_) if held is not aval
                        else np.asarray(block, aval.dtype, order="C"), block_aval, d)._buffer
             for d, block in blocks.items()]
  buffer = _jax.ArrayImpl(held, jaxlib_sharding(sharding, aval.ndim), singles, True, True)
  return Array(buffer, aval, None, sharding, True)


def assemble(arrays: dict, aval: ShapedArray, sharding: sharding_lib.Sharding) -> Array:
  """An Array laid out by `sharding` over the single-device Arrays holding this process's
  blocks (`{device: Array}`, each of the block's shape and `aval`'s dtype), without a copy;
  over one device, that device's Array."""
  devices = [d for d in sharding._device_assignment if d in arrays]
  if len(sharding._device_assignment) == 1:
    return Array(arrays[devices[0]]._buffer, aval, devices[0], None, True)
  buffers = [arrays[d]._buffer for d in devices]
  buffer = _jax.ArrayImpl(aval, jaxlib_sharding(sharding, aval.ndim), buffers, True, True)
  return Array(buffer, aval, None, sharding, True)


def wrap(buffer, aval: ShapedArray, sharding: sharding_lib.Sharding) -> Array:
  return Array(buffer, aval, None, sharding, True)


# ----------------------------------------------------------------------------- reading

@functools.lru_cache(maxsize=4096)
def _first(sharding: sharding_lib.Sharding, ndim: int, device) -> Any:
  """`sharding`'s jaxlib form with `device` moved to the front of its device list."""
  devices = sharding._device_assignment
  order = (device,) + tuple(d for d in devices if d != device)
  return _jax.GSPMDSharding(device_list(order), hlo_sharding(sharding, ndim))


def block_value(x: Array, device) -> np.ndarray:
  """The block of `x` that `device` holds, as a read-only numpy array."""
  x._check_alive()
  aval = x.aval
  view = _jax.reorder_shards(x._buffer, _first(x._sharding, aval.ndim, device), _REUSE)
  return _buffer_to_numpy(view, aval.update(shape=x._sharding.shard_shape(aval.shape)))


def value(x: Array) -> np.ndarray:
  """The global value of a sharded `x`, assembled from its blocks (each read once)."""
  sharding = x._sharding
  if not sharding.is_fully_addressable:
    raise RuntimeError("Fetching value for `minijax.Array` that spans non-addressable (non "
                       "process local) devices is not possible. You can use "
                       "`multihost_utils.process_allgather` or read "
                       "`x.addressable_shards` instead.")
  indices = sharding.devices_indices_map(x.aval.shape)
  if sharding.is_fully_replicated:
    return block_value(x, next(iter(indices)))
  out = np.empty(x.aval.shape, x.aval.dtype)
  seen = set()
  for device, index in indices.items():
    key = _index_key(index)
    if key not in seen:
      seen.add(key)
      out[index] = block_value(x, device)
  out.flags.writeable = False
  return out


def _index_key(index: tuple) -> tuple:
  return tuple((s.start, s.stop) for s in index)


class Shard(NamedTuple):
  """One device's block of an Array: its device, its index into the global value, which
  copy of that block it is (`replica_id`), and the block itself as an Array (`data`)."""
  device: Any
  index: tuple
  replica_id: int
  data: Array


def addressable_shards(x: Array) -> list[Shard]:
  if x._sharding is None:
    index = tuple(slice(None) for _ in x.aval.shape)
    return [Shard(x._device, index, 0, x)]
  x._check_alive()
  sharding = x._sharding
  block = x.aval.update(shape=sharding.shard_shape(x.aval.shape))
  replicas: dict = {}
  shards = []
  for device, index in sharding.devices_indices_map(x.aval.shape).items():
    key = _index_key(index)
    replica = replicas.get(key, 0)
    replicas[key] = replica + 1
    if device.process_index != device.client.process_index():
      continue
    data = _put_numpy(block_value(x, device), block, device, True)
    shards.append(Shard(device, index, replica, data))
  return shards


def copy(x: Array) -> Array:
  """A copy of `x` with the same layout: each device copies its block (no host trip)."""
  x._check_alive()
  sharding = x._sharding
  (buffer,) = _jax.batched_copy_array_to_devices_with_sharding(
      [x._buffer], [device_list(sharding._device_assignment)],
      [jaxlib_sharding(sharding, x.aval.ndim)], [xla_client.ArrayCopySemantics.ALWAYS_COPY])
  return Array(buffer, x.aval, None, sharding, True)


def reshard(x: Array, sharding: sharding_lib.Sharding) -> Array:
  """`x` laid out by `sharding` (through the host: every block is read and put again)."""
  if x._buffer.is_deleted():
    raise RuntimeError(_DELETED_MESSAGE)
  if x._sharding is not None and (x._sharding == sharding or
                                  x._sharding.is_equivalent_to(sharding, x.aval.ndim)):
    if x._sharding._device_assignment == sharding._device_assignment:
      return Array(x._buffer, x.aval, None, sharding, True)
  if not sharding.is_fully_addressable:
    if x._sharding is None or not x._sharding.is_fully_addressable:
      raise ValueError(f"cannot move an Array laid out by {x.sharding!r} to {sharding!r}: "
                       "both span devices of other processes, and minijax moves values "
                       "through the host")
    indices = sharding.addressable_devices_indices_map(x.aval.shape)
    full = x._value
    return put_blocks({d: full[i] for d, i in indices.items()}, x.aval, sharding)
  return put(x._value, x.aval, sharding)


def live_arrays() -> list[Array]:
  """An Array over each array buffer the client holds alive (JAX's `live_arrays`): new
  Array objects over the same buffers (deleting one deletes the buffer), laid out as the
  buffers are."""
  from minijax.runtime import backend
  from minijax.runtime.sharded_executable import sharding_of_hlo
  out = []
  for buffer in backend.get_client().live_arrays():
    aval = buffer.aval
    if type(aval) is not ShapedArray or buffer.is_deleted():
      continue  # runtime tokens
    jaxlib_sharding = buffer._sharding
    if isinstance(jaxlib_sharding, _jax.SingleDeviceSharding):
      out.append(Array(buffer, aval, jaxlib_sharding._device))
    else:
      devices = tuple(jaxlib_sharding._devices)
      out.append(Array(buffer, aval, None, sharding_of_hlo(
          jaxlib_sharding._hlo_sharding, aval.ndim, devices, None), True))
  return out


def token_group(tokens: list, devices: tuple, aval: ShapedArray) -> Any:
  """One multi-device token array made of a single-device token per device."""
  replicated = sharding_lib.HloShardingWrapper(devices, None)
  return _jax.ArrayImpl(aval, jaxlib_sharding(replicated, aval.ndim), tokens, True, True)
