"""Lowering for several devices: sharding attributes, manual regions and replica groups.

A module compiled for several devices is one SPMD program that XLA's partitioner splits:
`main` carries `mhlo.num_partitions` and an `mhlo.sharding` attribute on each argument and
result (the tile assignment of `core.sharding`, rendered as HLO text), and its devices are
numbered by their position in the module's *device assignment* (`ModuleContext.positions`).

`shard_map` (and `pmap`, which is built on it) lowers to a *manual region*: each operand
is annotated with its sharding and converted to its per-device block
(`@Sharding` then `@SPMDFullToShardShape`, after which the value is `{manual}`), the body
is lowered once for one device, as a function of its own (inline, its constants would merge
with equal ones outside the region), with `ModuleContext.axis_context` set to a
`ManualContext` (the mesh whose axes are now device axes), and each result goes back with
`@SPMDShardToFullShape`.  Inside such a region the collectives of `lax` lower to
`mhlo.all_reduce`, `all_gather`, ... whose `replica_groups` list device positions
(`use_global_device_ids`, one `channel_handle` per collective): devices that agree on every
mesh axis except the reduced ones form a group (`replica_groups`).  Side-effecting ops (the
tap custom call) must carry a sharding too: `{manual}` inside a region (every device runs
its own), `{maximal device=0}` elsewhere in a partitioned module (`side_effect_sharding`).

A region manual over only some of the mesh's axes (`shard_map(axis_names=...)`) has a
*subgroup* sharding instead of `{manual}`: the devices tiled by their manual coordinates,
replicated along the automatic ones (`manual_sharding`).  Its blocks enter and leave as
above, and every value computed in it gets that sharding (`pin_manual`), which XLA's
partitioner needs there; `axis_index` computes a device's coordinates in a region manual
over every axis and hands them over (a device's id means nothing to the partitioner in a
partly manual one), as JAX does.  Taps and debug callbacks there run in a shard_map
nested over the automatic axes, on its first device (`callbacks.common.lower_once_per_block`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.core.sharding import NamedSharding, PartitionSpec

MANUAL = "{manual}"
REPLICATED = "{replicated}"
FIRST_DEVICE = "{maximal device=0}"  # where a partitioned module's side effects run


@dataclasses.dataclass(frozen=True)
class ManualContext:
  """Lowering inside a `shard_map` body: `mesh`'s axes in `manual_axes` (all of them when
  None) are device axes; the others stay XLA's to partition (automatic)."""
  mesh: Any
  manual_axes: frozenset | None = None

  @property
  def axis_names(self) -> tuple:
    """The manual axes, in the mesh's order."""
    names = tuple(self.mesh.axis_names)
    return names if self.manual_axes is None else tuple(
        n for n in names if n in self.manual_axes)

  @property
  def partial(self) -> bool:
    """Whether an automatic axis of more than one device is left."""
    return any(self.mesh.shape[n] > 1 for n in self.mesh.axis_names
               if n not in self.axis_names)


def manual_sharding(mctx, ndim: int) -> str:
  """The sharding of a rank-`ndim` value inside the manual region being lowered: `{manual}`,
  or, when automatic axes are left, a subgroup sharding: the value whole on each device,
  the devices tiled by their manual coordinates and replicated along the automatic ones."""
  context = mctx.axis_context
  if not context.partial:
    return MANUAL
  return region_sharding(mctx, context.mesh, PartitionSpec(), ndim)


def position_grid(mctx, mesh) -> np.ndarray:
  """The module position of each device of `mesh`, in the mesh's shape."""
  positions = mctx.positions
  if positions is None:
    raise ValueError("internal error: a multi-device construct is lowered in a module "
                     "compiled for one device")
  try:
    return np.array([positions[d] for d in mesh.device_list],
                    np.int64).reshape(mesh.devices.shape)
  except KeyError:
    raise ValueError(f"the mesh {mesh} uses devices outside the device assignment of the "
                     f"computation, {list(positions)}; every mesh and sharding of one "
                     "computation must use the same devices") from None


def manual_context(mctx, what: str, axes: Sequence) -> ManualContext:
  """The manual region a collective over `axes` runs in (NameError if one is not a device
  axis here: it would be a vmap axis left unbatched, or an unbound name)."""
  context = mctx.axis_context
  for name in axes:
    if context is None or name not in context.axis_names:
      bound = list(context.axis_names) if context is not None else []
      raise NameError(f"unbound axis name: {name}. {what} can only refer to device axes of "
                      f"an enclosing pmap or shard_map here; bound: {bound}")
  return context


def replica_groups(mctx, axes: Sequence) -> list[list[int]]:
  """Groups of device positions that communicate in a collective over mesh axes `axes`:
  one group per combination of the other axes, each listing positions in row-major order
  of `axes` (in the order given, the first major)."""
  context = manual_context(mctx, "a collective", axes)
  names = tuple(context.mesh.axis_names)
  grid = position_grid(mctx, context.mesh)
  over = [names.index(a) for a in axes]
  rest = [i for i in range(len(names)) if i not in over]
  size = int(np.prod([grid.shape[i] for i in over], dtype=np.int64))
  return grid.transpose(rest + over).reshape(-1, size).tolist()


def axis_coordinates(mctx, axes: Sequence) -> np.ndarray:
  """For each device position, its index along `axes` (linearized, the first major)."""
  context = manual_context(mctx, "axis_index", axes)
  names = tuple(context.mesh.axis_names)
  grid = position_grid(mctx, context.mesh)
  table = np.zeros(grid.size, np.int32)
  for coords in np.ndindex(*grid.shape):
    index = 0
    for a in axes:
      i = names.index(a)
      index = index * grid.shape[i] + coords[i]
    table[grid[coords]] = index
  return table


# ops whose regions are scalar computations (reducers, comparators), not program control
_COMPUTATION_REGIONS = ("mhlo.reduce", "mhlo.all_reduce", "mhlo.reduce_scatter", "mhlo.sort",
                        "mhlo.scatter", "mhlo.reduce_window", "mhlo.select_and_scatter")
# collectives: the partitioner takes the sharding of their operands and users, and XLA
# translates some of them (all_to_all) to ops of another shape than the sharding's
_COLLECTIVES = ("mhlo.all_reduce", "mhlo.all_gather", "mhlo.all_to_all",
                "mhlo.collective_permute", "mhlo.reduce_scatter")


def region_sharding(mctx, mesh, spec, ndim: int) -> str:
  """The sharding of a rank-`ndim` value laid out by `spec` over `mesh`, where it is being
  lowered: in a region manual over some of the mesh's axes (a shard_map nested in one), a
  subgroup sharding whose last tile dimensions are those manual axes and the replicas."""
  context = mctx.axis_context
  if context is None:
    return NamedSharding(mesh, spec).tile_assignment(ndim, mctx.positions).hlo_sharding_text()
  names = tuple(mesh.axis_names)
  entries = list(spec) + [None] * (ndim - len(spec))
  split = [() if e is None else (e if isinstance(e, tuple) else (e,)) for e in entries]
  manual = tuple(n for n in names if n in context.axis_names)
  used = {n for dims in split for n in dims}
  rest = tuple(n for n in names if n not in used and n not in manual and mesh.shape[n] > 1)
  groups = [*split, manual, *([rest] if rest else [])]
  placed = [n for group in groups for n in group]
  order = [names.index(n) for n in placed] + [i for i, n in enumerate(names) if n not in placed]
  shape = [math.prod(mesh.shape[n] for n in group) for group in groups]
  tiles = position_grid(mctx, mesh).transpose(order).ravel()
  kinds = "{manual, replicated}" if rest else "{manual}"
  return (f"{{devices=[{','.join(map(str, shape))}]{','.join(map(str, tiles))} "
          f"last_tile_dims={kinds}}}")


def pin_manual(mctx, fn, module) -> None:
  """Gives every value computed in `fn` (a function lowered inside a manual region over some
  of the mesh's axes) and in the functions it calls the region's sharding, replicated along
  the automatic axes.  XLA's partitioner needs a sharding for every value of such a region
  to tell it from the unpartitioned program around it; this one is what each device holds
  (its block, whole along the automatic axes)."""
  symbols = ir.SymbolTable(module.operation)
  seen: set[str] = set()

  def sharding_of(value_type) -> str | None:
    if not isinstance(value_type, ir.RankedTensorType):
      return None
    return manual_sharding(mctx, value_type.rank)

  def visit(op) -> None:
    name = op.operation.name
    if name == "func.call":
      callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
      if callee in mctx.region_bodies:  # a nested region's body: its values are its own
        return
      if callee not in seen:
        seen.add(callee)
        visit(symbols[callee])
    results = list(op.results)
    # (one result: the partitioner propagates to a loop's or a branch's several from them)
    if len(results) == 1 and "mhlo.sharding" not in op.attributes and name not in _COLLECTIVES:
      text = sharding_of(results[0].type)
      if text is not None:
        op.attributes["mhlo.sharding"] = sharding_attr(text)
    if name in _COMPUTATION_REGIONS:
      return
    for region in op.regions:
      for block in region.blocks:
        for inner in block.operations:
          visit(inner)

  visit(fn)


def groups_attr(groups: list[list[int]]) -> ir.DenseElementsAttr:
  return ir.DenseElementsAttr.get(np.asarray(groups, np.int64))


def channel_handle(mctx) -> Any:
  """A fresh device-to-device channel for one collective of the module."""
  mctx.channels += 1
  return mhlo.ChannelHandle.get(mctx.channels, 1)


# ----------------------------------------------------------------------------- sharding ops

def sharding_attr(text: str) -> ir.StringAttr:
  return ir.StringAttr.get(text)


def side_effect_sharding(mctx) -> str | None:
  """The sharding a side-effecting op needs here (None in a single-device module)."""
  if mctx.axis_context is not None:
    if mctx.axis_context.partial:
      raise ValueError("internal error: a side effect lowered in a partly manual region "
                       "(its rule must nest a region manual over every axis first)")
    return MANUAL
  if mctx.positions is not None and len(mctx.positions) > 1:
    return FIRST_DEVICE
  return None


def _custom_call(target: str, x: ir.Value, result_type: ir.Type, sharding: str) -> ir.Value:
  op = mhlo.CustomCallOp([result_type], [x], target)
  op.attributes["mhlo.sharding"] = sharding_attr(sharding)
  return op.result


def annotate(x: ir.Value, sharding: str) -> ir.Value:
  """`x` constrained to `sharding` (a `@Sharding` custom call, XLA's constraint)."""
  return _custom_call("Sharding", x, x.type, sharding)


def full_to_shard(x: ir.Value, block_type: ir.Type, sharding: str,
                  manual: str = MANUAL) -> ir.Value:
  """Enters a manual region: `x`, laid out as `sharding`, as each device's block (of the
  region's sharding `manual`, `manual_sharding`'s)."""
  return _custom_call("SPMDFullToShardShape", annotate(x, sharding), block_type, manual)


def shard_to_full(x: ir.Value, full_type: ir.Type, sharding: str,
                  manual: str = MANUAL) -> ir.Value:
  """Leaves a manual region: each device's block `x` as the global value laid out as
  `sharding`."""
  return _custom_call("SPMDShardToFullShape", annotate(x, manual), full_type, sharding)
