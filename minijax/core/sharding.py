"""Meshes, partition specs and shardings: how a global array is laid out on devices.

These are data, like avals: they appear in the params of primitives (`shard_map`'s mesh and
specs, a sharding constraint's sharding), key compile caches, and describe where an
`Array`'s pieces live.  Nothing here talks to a device; devices are the client's opaque,
hashable device objects (their `id`, `process_index` and `client` attributes are read).

A `Mesh` arranges devices in an n-dimensional grid with one name per axis.  A
`PartitionSpec` says, per array dimension, which mesh axes split it (`None`: none; a name;
or a tuple of names, major to minor).  `NamedSharding(mesh, spec)` is the two together: a
dimension split by axes of total size k is cut into k equal blocks, and the devices that
differ only along mesh axes that split no dimension hold the same block (the array is
replicated along those axes).  `SingleDeviceSharding(device)` puts the whole array on one
device.

Every sharding reduces to one *tile assignment* (`tile_assignment`): the number of blocks
per dimension, and which devices hold each block, numbered by their position in a device
assignment (the ordered device list of a compiled program or of an array).  The lowering
renders it as an `mhlo.sharding` attribute and the runtime as jaxlib's `HloSharding`
(`hlo_sharding_text` gives the one string both parse), so the two always agree.
"""
from __future__ import annotations

import enum
import functools
import math
import threading
from typing import Any, Sequence

import numpy as np


# ----------------------------------------------------------------------------- partition specs

class _Unconstrained:
  """`PartitionSpec.UNCONSTRAINED`: a dimension whose layout the partitioner may choose.
  minijax's `NamedSharding` lays such a dimension out unsplit (as `None`): the layout of a
  value, never the value, differs from what XLA's choice would be."""
  _instance = None

  def __new__(cls):
    if cls._instance is None:
      cls._instance = object.__new__(cls)
    return cls._instance

  def __repr__(self):
    return "UNCONSTRAINED"

  def __reduce__(self):
    return _Unconstrained, ()


class PartitionSpec(tuple):
  """One entry per leading array dimension: `None` (not split), a mesh axis name, or a tuple
  of names (split by their product, the first major).  Missing trailing entries mean `None`;
  `P('x', None) != P('x')`, as in JAX: specs compare as tuples."""
  UNCONSTRAINED = _Unconstrained()

  def __new__(cls, *partitions):
    for p in partitions:
      if not (p is None or p is PartitionSpec.UNCONSTRAINED or _is_axis_name(p)
              or isinstance(p, tuple) and all(_is_axis_name(n) for n in p)):
        raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or a tuple of "
                        f"names, got {p!r}")
    return tuple.__new__(cls, partitions)

  def __repr__(self):
    return f"PartitionSpec({', '.join(map(repr, self))})"

  def __reduce__(self):
    return (PartitionSpec, tuple(self))

  def axis_names(self) -> tuple[str, ...]:
    """Every mesh axis this spec uses, in order."""
    return tuple(n for p in self for n in _names(p))


P = PartitionSpec


class UnnamedAxis:
  """The mesh axis name of a `pmap` given no `axis_name`: unique to it, so that nothing
  (a collective, a nested unnamed `pmap`) can refer to it by mistake."""

  def __init__(self, fun):
    self.fun = fun

  def __repr__(self):
    return f"<axis name of pmap({getattr(self.fun, '__name__', 'fun')})>"


def _is_axis_name(name) -> bool:
  return isinstance(name, (str, UnnamedAxis))


def _names(entry) -> tuple:
  if entry is None:
    return ()
  return tuple(entry) if isinstance(entry, tuple) else (entry,)


# ----------------------------------------------------------------------------- meshes

class AxisType(enum.Enum):
  """How a mesh axis is partitioned (JAX's names).  minijax partitions every axis as
  `Auto` (XLA's propagation); `Explicit` and `Manual` axes are refused by `Mesh`."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()


class Mesh:
  """Devices arranged in a named grid: `Mesh(np.array(devices).reshape(2, 2), ('x', 'y'))`.

  `with mesh:` makes it the mesh that `shard_map` and sharding constraints given only a
  `PartitionSpec` use."""

  def __init__(self, devices, axis_names, axis_types=None):
    devices = np.array(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
    if isinstance(axis_names, str):
      axis_names = (axis_names,)
    axis_names = tuple(axis_names)
    if devices.ndim != len(axis_names):
      raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal "
                       f"the length of its second argument (`axis_names`), but got "
                       f"devices.ndim == {devices.ndim} and len(axis_names) == "
                       f"{len(axis_names)}.")
    if len(set(axis_names)) != len(axis_names):
      raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
    if not all(_is_axis_name(n) for n in axis_names):
      raise TypeError(f"Mesh axis names must be strings, got {axis_names}")
    ids = [d.id for d in devices.flat]
    if len(set(ids)) != len(ids):
      raise ValueError(f"Mesh devices must be distinct, got ids {ids}")
    if axis_types is not None:
      axis_types = (axis_types,) if isinstance(axis_types, AxisType) else tuple(axis_types)
      if len(axis_types) != len(axis_names):
        raise ValueError(f"Number of axis_types {len(axis_types)} must match the number of "
                         f"axis_names {len(axis_names)}")
      if any(t is not AxisType.Auto for t in axis_types):
        raise NotImplementedError(f"Mesh axis_types {axis_types}: minijax partitions every "
                                  "mesh axis as AxisType.Auto")
    self.devices = devices
    self.axis_names = axis_names
    self.axis_types = axis_types
    self._key = (axis_names, devices.shape, tuple(ids))

  @property
  def shape(self) -> dict[str, int]:
    return dict(zip(self.axis_names, self.devices.shape))

  @property
  def axis_sizes(self) -> tuple[int, ...]:
    return tuple(self.devices.shape)

  size = property(lambda self: self.devices.size)
  # every axis is partitioned as AxisType.Auto (see __init__)
  are_all_axes_auto, are_all_axes_explicit, are_all_axes_manual = True, False, False
  abstract_mesh = property(lambda self: AbstractMesh(self.axis_sizes, self.axis_names))
  device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices))
  empty = property(lambda self: self.devices.size == 0)

  @functools.cached_property
  def device_list(self) -> tuple:
    """The devices in row-major mesh order: the device assignment of programs on this mesh."""
    return tuple(self.devices.flat)

  @property
  def local_devices(self) -> list:
    return [d for d in self.device_list if _is_addressable(d)]

  @functools.cached_property
  def local_mesh(self) -> "Mesh":
    """The mesh of this process's devices: the box of the grid they fill."""
    where = np.argwhere(np.vectorize(_is_addressable, otypes=[bool])(self.devices))
    if where.size == 0:
      raise ValueError(f"{self} has no device of this process")
    box = tuple(slice(lo, hi + 1) for lo, hi in zip(where.min(0), where.max(0)))
    devices = self.devices[box]
    if devices.size != len(where):
      raise ValueError(f"the devices of this process do not fill a box of {self}")
    return Mesh(devices, self.axis_names, self.axis_types)

  @property
  def is_multi_process(self) -> bool:
    return len({d.process_index for d in self.device_list}) > 1

  def __eq__(self, other):
    return type(other) is Mesh and other._key == self._key

  def __hash__(self):
    return hash(self._key)

  def __repr__(self):
    axes = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
    return f"Mesh(axis_sizes=({axes}), device_ids={self.device_ids.tolist()})"

  def __enter__(self):
    _mesh_context.stack.append(self)
    return self

  def __exit__(self, *exc):
    _mesh_context.stack.pop()
    return False


class AbstractMesh:
  """Axis sizes and names of a mesh, without devices."""

  def __init__(self, axis_sizes: tuple[int, ...], axis_names: tuple[str, ...],
               axis_types: tuple[AxisType, ...] | None = None):
    if len(axis_sizes) != len(axis_names):
      raise ValueError(f"AbstractMesh: {len(axis_sizes)} axis sizes for {len(axis_names)} "
                       "axis names; give one size per name")
    self.axis_sizes = tuple(axis_sizes)
    self.axis_names = tuple(axis_names)
    self.axis_types = tuple(axis_types) if axis_types else (AxisType.Auto,) * len(axis_names)

  shape = property(lambda self: dict(zip(self.axis_names, self.axis_sizes)))
  size = property(lambda self: math.prod(self.axis_sizes))
  empty = property(lambda self: not self.axis_names)
  are_all_axes_auto = property(lambda self: all(t is AxisType.Auto for t in self.axis_types))
  are_all_axes_explicit = property(
      lambda self: bool(self.axis_types) and all(t is AxisType.Explicit for t in self.axis_types))
  are_all_axes_manual = property(
      lambda self: bool(self.axis_types) and all(t is AxisType.Manual for t in self.axis_types))

  def __eq__(self, other):
    return (isinstance(other, AbstractMesh) and (self.axis_sizes, self.axis_names)
            == (other.axis_sizes, other.axis_names))

  def __hash__(self):
    return hash((self.axis_sizes, self.axis_names))

  def __repr__(self):
    return f"AbstractMesh({self.shape})"


class AvalSharding:
  """The sharding an array type reports (`typeof(x).sharding`): minijax's types carry no
  sharding (one device per computation), so it is JAX's unsharded one: every axis unsplit
  (`spec` all None) on the empty abstract mesh, fully replicated."""

  def __init__(self, ndim: int):
    self.mesh = AbstractMesh((), ())
    self.spec = PartitionSpec(*(None,) * ndim)
    self.memory_kind = None

  is_fully_replicated = True

  def update(self, *, spec=None, mesh=None, memory_kind=None) -> "AvalSharding":
    """This sharding with another (unsplit) spec: the types carry no other."""
    spec = self.spec if spec is None else spec
    require_unsplit(spec, f"spec={spec!r}")
    return aval_sharding(len(spec))

  def __eq__(self, other):
    return type(other) is AvalSharding and other.spec == self.spec

  def __hash__(self):
    return hash(self.spec)

  def __repr__(self):
    return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def require_unsplit(spec, shown: str) -> None:
  """Raises unless `spec` splits no dimension: a type's sharding (JAX's types carry one)
  can only be the unsplit one, as minijax's types carry none."""
  if spec is None or any(p is not None for p in spec):
    raise NotImplementedError(
        f"minijax's array types carry no sharding (one layout per computation: jax.jit's "
        f"in_shardings/out_shardings and with_sharding_constraint place values); got {shown}")


@functools.lru_cache(maxsize=None)
def aval_sharding(ndim: int) -> AvalSharding:
  return AvalSharding(ndim)


class _MeshContext(threading.local):
  def __init__(self):
    self.stack: list[Mesh] = []


_mesh_context = _MeshContext()


class set_mesh:
  """Makes `mesh` the current mesh (`get_mesh()`; what a bare `PartitionSpec` refers to):
  for the rest of the thread when called alone (`set_mesh(mesh)`), or for a block when used
  as a context manager (`with set_mesh(mesh): ...`), as in JAX."""
  __slots__ = ("_previous",)

  def __init__(self, mesh: Mesh | None):
    if mesh is not None and not isinstance(mesh, Mesh):
      raise ValueError(f"Expected mesh of type `minijax.sharding.Mesh`. Got {type(mesh)}")
    stack = _mesh_context.stack
    self._previous = list(stack)
    stack[:] = [] if mesh is None else [*stack, mesh]

  def __enter__(self):
    return None

  def __exit__(self, *exc):
    _mesh_context.stack[:] = self._previous
    return False


use_mesh = set_mesh  # JAX's earlier name


def current_mesh() -> Mesh | None:
  """The innermost mesh entered with `with mesh:`, or None."""
  stack = _mesh_context.stack
  return stack[-1] if stack else None


def _is_addressable(device) -> bool:
  return device.process_index == device.client.process_index()


# ----------------------------------------------------------------------------- tile assignments

class TileAssignment:
  """Blocks per dimension (`dims`), the device positions holding each block (`devices`, an
  int array of shape `dims + (replicas,)`), and whether the last axis lists replicas."""
  __slots__ = ("dims", "devices")

  def __init__(self, dims: tuple[int, ...], devices: np.ndarray):
    self.dims = dims
    self.devices = devices

  @property
  def replicated(self) -> bool:
    return all(d == 1 for d in self.dims)

  def hlo_sharding_text(self) -> str:
    """The sharding as HLO text: `{replicated}`, `{devices=[4,1]0,1,2,3}`, or with
    `last_tile_dim_replicate` when blocks are held by several devices."""
    if self.replicated:
      return "{replicated}"
    replicas = self.devices.shape[-1]
    dims = list(self.dims) + ([replicas] if replicas > 1 else [])
    ids = ",".join(str(int(i)) for i in self.devices.flat)
    suffix = " last_tile_dim_replicate" if replicas > 1 else ""
    return f"{{devices=[{','.join(map(str, dims))}]{ids}{suffix}}}"


# ----------------------------------------------------------------------------- shardings

class Sharding:
  """What every sharding offers: its devices, the shape and index of each block."""

  @property
  def device_set(self) -> set:
    return set(self._device_assignment)

  @property
  def addressable_devices(self) -> set:
    return {d for d in self._device_assignment if _is_addressable(d)}

  @property
  def is_fully_addressable(self) -> bool:
    return all(_is_addressable(d) for d in self._device_assignment)

  @property
  def num_devices(self) -> int:
    return len(self._device_assignment)

  memory_kind = None

  @property
  def _device_assignment(self) -> tuple:
    raise NotImplementedError

  def tile_assignment(self, ndim: int, positions: dict | None = None) -> TileAssignment:
    """The tile assignment for an array of rank `ndim`, devices numbered by `positions`
    (device -> position; by default their order in `_device_assignment`)."""
    raise NotImplementedError

  @property
  def is_fully_replicated(self) -> bool:
    raise NotImplementedError

  def check_shape(self, shape: Sequence[int]) -> None:
    """Raises ValueError when an array of `shape` cannot be laid out this way."""

  def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
    self.check_shape(global_shape)
    dims = self.tile_assignment(len(global_shape)).dims
    return tuple(s // d for s, d in zip(global_shape, dims))

  def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Any, tuple]:
    """Device -> the index (a tuple of slices) of the block it holds."""
    self.check_shape(global_shape)
    tile = self.tile_assignment(len(global_shape))
    order = self._device_assignment
    out = {}
    for block in np.ndindex(*tile.dims):
      index = tuple(slice(None) if d == 1 else slice(i * (s // d), (i + 1) * (s // d))
                    for i, d, s in zip(block, tile.dims, global_shape))
      for position in tile.devices[block]:
        out[order[int(position)]] = index
    return {d: out[d] for d in order}

  def addressable_devices_indices_map(self, global_shape) -> dict[Any, tuple]:
    return {d: i for d, i in self.devices_indices_map(global_shape).items()
            if _is_addressable(d)}

  def is_equivalent_to(self, other: "Sharding", ndim: int) -> bool:
    """Whether both lay out an array of rank `ndim` on the same devices the same way."""
    if self._device_assignment != other._device_assignment:
      if set(self._device_assignment) != set(other._device_assignment):
        return False
    positions = {d: i for i, d in enumerate(self._device_assignment)}
    mine = self.tile_assignment(ndim, positions)
    theirs = other.tile_assignment(ndim, positions)
    if mine.dims != theirs.dims:
      return False
    return np.array_equal(np.sort(mine.devices, axis=-1), np.sort(theirs.devices, axis=-1))


def _concrete(mesh: AbstractMesh) -> Mesh:
  """The mesh in force (`set_mesh`, `with mesh:`) that `mesh` describes: a sharding names
  devices, so one on an abstract mesh is one on that mesh."""
  current = current_mesh()
  if current is None or (current.axis_sizes, current.axis_names) != (mesh.axis_sizes,
                                                                     mesh.axis_names):
    raise ValueError(f"NamedSharding on {mesh!r} needs the mesh it describes in force "
                     f"(`with minijax.set_mesh(mesh):`); the mesh in force is {current!r}")
  return current


class NamedSharding(Sharding):
  """`spec` laid out on `mesh` (see the module docstring)."""

  def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None, *, memory_kind=None):
    if isinstance(mesh, AbstractMesh):
      mesh = _concrete(mesh)
    if not isinstance(mesh, Mesh):
      raise TypeError(f"NamedSharding expects a Mesh as its first argument, got "
                      f"{type(mesh).__name__}")
    spec = PartitionSpec() if spec is None else spec
    if not isinstance(spec, PartitionSpec):
      if isinstance(spec, tuple):
        spec = PartitionSpec(*spec)
      else:
        raise TypeError(f"NamedSharding expects a PartitionSpec, got {spec!r}")
    if PartitionSpec.UNCONSTRAINED in spec:  # laid out unsplit (see _Unconstrained)
      spec = PartitionSpec(*(None if p is PartitionSpec.UNCONSTRAINED else p for p in spec))
    used = spec.axis_names()
    for name in used:
      if name not in mesh.axis_names:
        raise ValueError(f"Resource axis: {name} of {spec} is not found in mesh: "
                         f"{tuple(mesh.axis_names)}.")
    if len(set(used)) != len(used):
      raise ValueError(f"A mesh axis may split at most one dimension, but {spec} uses "
                       f"{[n for n in used if used.count(n) > 1][0]!r} more than once")
    self.mesh = mesh
    self.spec = spec
    self.memory_kind = memory_kind
    self._key = (mesh, spec)

  def __eq__(self, other):
    return type(other) is NamedSharding and other._key == self._key

  def __hash__(self):
    return hash(self._key)

  def __repr__(self):
    return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"

  @property
  def _device_assignment(self) -> tuple:
    return self.mesh.device_list

  @property
  def is_fully_replicated(self) -> bool:
    return all(self.mesh.shape[n] == 1 for n in self.spec.axis_names())

  def check_shape(self, shape) -> None:
    if len(self.spec) > len(shape):
      raise ValueError(f"One of the arguments was given the sharding {self!r}, which "
                       f"implies that it has a rank of at least {len(self.spec)}, but it "
                       f"is {len(shape)}")
    for dim, (entry, size) in enumerate(zip(self.spec, shape)):
      parts = math.prod(self.mesh.shape[n] for n in _names(entry))
      if size % parts:
        raise ValueError(
            f"One of the arguments was given the sharding of {self!r}, which implies that "
            f"the global size of its dimension {dim} should be divisible by {parts}, but it "
            f"is equal to {size} (full shape: {tuple(shape)})")

  def tile_assignment(self, ndim: int, positions: dict | None = None) -> TileAssignment:
    return _named_tile_assignment(self.mesh, self.spec, ndim,
                                  None if positions is None else _positions_key(positions))


def on_current_mesh(spec: PartitionSpec, what: str) -> NamedSharding:
  """A bare PartitionSpec given to `what` as the sharding it names on the mesh in force."""
  mesh = current_mesh()
  if mesh is None:
    raise ValueError(f"{what} was given the PartitionSpec {spec} but no mesh is in force: "
                     "set a mesh via `jax.set_mesh` (or `with mesh:`), or pass a NamedSharding")
  return NamedSharding(mesh, spec)


def _positions_key(positions: dict) -> tuple:
  return tuple(sorted(((d.id, p) for d, p in positions.items())))


@functools.lru_cache(maxsize=512)
def _named_tile_assignment(mesh: Mesh, spec: PartitionSpec, ndim: int,
                           positions: tuple | None) -> TileAssignment:
  if len(spec) > ndim:
    raise ValueError(f"PartitionSpec {spec} has {len(spec)} entries, more than the rank "
                     f"{ndim} of the array it shards")
  by_id = dict(positions) if positions is not None else None
  ids = np.array([i if by_id is None else by_id[d.id] for i, d in enumerate(mesh.device_list)],
                 dtype=np.int64).reshape(mesh.devices.shape)
  entries = list(spec) + [None] * (ndim - len(spec))
  order = [mesh.axis_names.index(n) for e in entries for n in _names(e)]
  unused = [i for i in range(len(mesh.axis_names)) if i not in order]
  dims = tuple(math.prod(mesh.shape[n] for n in _names(e)) for e in entries)
  replicas = math.prod(mesh.devices.shape[i] for i in unused)
  devices = ids.transpose(order + unused).reshape(dims + (replicas,))
  return TileAssignment(dims, devices)


class SingleDeviceSharding(Sharding):
  """The whole array on `device`."""

  def __init__(self, device, *, memory_kind=None):
    self._device = device
    self.memory_kind = "device" if memory_kind is None else memory_kind  # (the default, named)

  def __eq__(self, other):
    return (type(other) is SingleDeviceSharding and other._device == self._device
            and other.memory_kind == self.memory_kind)

  def __hash__(self):
    return hash((SingleDeviceSharding, self._device, self.memory_kind))

  def __repr__(self):
    return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"

  @property
  def _device_assignment(self) -> tuple:
    return (self._device,)

  is_fully_replicated = True

  def tile_assignment(self, ndim: int, positions: dict | None = None) -> TileAssignment:
    position = 0 if positions is None else positions[self._device]
    return TileAssignment((1,) * ndim, np.full((1,) * ndim + (1,), position, np.int64))


class HloShardingWrapper(Sharding):
  """A layout XLA chose that is not a `NamedSharding` of a known mesh: a tile assignment
  over an ordered device list (what the outputs of a partitioned program may carry), or,
  with `tile=None`, the whole array replicated on every device of the list."""

  def __init__(self, devices: Sequence, tile: TileAssignment | None):
    self._devices = tuple(devices)
    self._tile = tile

  def _tile_key(self):
    tile = self._tile
    return None if tile is None else (tile.dims, tile.devices.tobytes())

  def __eq__(self, other):
    return (type(other) is HloShardingWrapper and other._devices == self._devices
            and other._tile_key() == self._tile_key())

  def __hash__(self):
    return hash((self._devices, self._tile_key()))

  def __repr__(self):
    text = "{replicated}" if self._tile is None else self._tile.hlo_sharding_text()
    return f"HloShardingWrapper({text}, devices={list(self._devices)})"

  @property
  def _device_assignment(self) -> tuple:
    return self._devices

  @property
  def is_fully_replicated(self) -> bool:
    return self._tile is None or self._tile.replicated

  def tile_assignment(self, ndim: int, positions: dict | None = None) -> TileAssignment:
    order = self._devices if positions is None else [positions[d] for d in self._devices]
    order = np.array(order if positions is not None else range(len(order)), np.int64)
    tile = self._tile
    if tile is None:
      return TileAssignment((1,) * ndim, order.reshape((1,) * ndim + (len(order),)))
    if len(tile.dims) != ndim:
      raise ValueError(f"{self!r} shards arrays of rank {len(tile.dims)}, not {ndim}")
    return TileAssignment(tile.dims, order[tile.devices])


def replicated_like(sharding: Sharding) -> Sharding:
  """A sharding on the same devices that replicates the whole array on each."""
  if isinstance(sharding, NamedSharding):
    return NamedSharding(sharding.mesh, PartitionSpec())
  devices = sharding._device_assignment
  if len(devices) == 1:
    return SingleDeviceSharding(devices[0])
  return HloShardingWrapper(devices, None)
