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
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

MANUAL = "{manual}"
REPLICATED = "{replicated}"


@dataclasses.dataclass(frozen=True)
class ManualContext:
  """Lowering inside a `shard_map` body: `mesh`'s axes are device axes."""
  mesh: Any

  @property
  def axis_names(self) -> tuple:
    return tuple(self.mesh.axis_names)


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
  names = context.axis_names
  grid = position_grid(mctx, context.mesh)
  over = [names.index(a) for a in axes]
  rest = [i for i in range(len(names)) if i not in over]
  size = int(np.prod([grid.shape[i] for i in over], dtype=np.int64))
  return grid.transpose(rest + over).reshape(-1, size).tolist()


def axis_coordinates(mctx, axes: Sequence) -> np.ndarray:
  """For each device position, its index along `axes` (linearized, the first major)."""
  context = manual_context(mctx, "axis_index", axes)
  names = context.axis_names
  grid = position_grid(mctx, context.mesh)
  table = np.zeros(grid.size, np.int32)
  for coords in np.ndindex(*grid.shape):
    index = 0
    for a in axes:
      i = names.index(a)
      index = index * grid.shape[i] + coords[i]
    table[grid[coords]] = index
  return table


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
    return MANUAL
  if mctx.positions is not None and len(mctx.positions) > 1:
    return "{maximal device=0}"
  return None


def _custom_call(target: str, x: ir.Value, result_type: ir.Type, sharding: str) -> ir.Value:
  op = mhlo.CustomCallOp([result_type], [x], target)
  op.attributes["mhlo.sharding"] = sharding_attr(sharding)
  return op.result


def annotate(x: ir.Value, sharding: str) -> ir.Value:
  """`x` constrained to `sharding` (a `@Sharding` custom call, XLA's constraint)."""
  return _custom_call("Sharding", x, x.type, sharding)


def full_to_shard(x: ir.Value, block_type: ir.Type, sharding: str) -> ir.Value:
  """Enters a manual region: `x`, laid out as `sharding`, as each device's block."""
  return _custom_call("SPMDFullToShardShape", annotate(x, sharding), block_type, MANUAL)


def shard_to_full(x: ir.Value, full_type: ir.Type, sharding: str) -> ir.Value:
  """Leaves a manual region: each device's block `x` as the global value laid out as
  `sharding`."""
  return _custom_call("SPMDShardToFullShape", annotate(x, MANUAL), full_type, sharding)
