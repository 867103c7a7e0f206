"""`debug.inspect_array_sharding`: calls a host function with the sharding of a value, as
early as that sharding is known, as in JAX.

    minijax.debug.inspect_array_sharding(x, callback=print)

On a concrete Array the callback runs at once with the Array's sharding.  Inside `jit` it
runs when the computation is lowered and compiled, once per compilation (never when a
cached executable runs): for one device at lowering, with that device's sharding; for
several, when XLA's partitioner has chosen the value's layout.  The lowering emits XLA's
`InspectSharding` custom call, whose backend config names a callback that the partitioner
calls with the chosen `HloSharding` and then removes the call; minijax turns that into a
`NamedSharding` of the module's mesh (the enclosing `shard_map`'s, the mesh set with
`set_mesh`, or the one its arguments' shardings use) when one lays the value out so, else
into a sharding over the tile assignment.

`inspect_sharding_p` has no outputs and `DebugEffect`, so that it is never dropped; under
`vmap` it inspects the whole batch, under `jvp`/`grad` the primal value.
"""
from __future__ import annotations

from typing import Callable

from jaxlib import xla_client
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.tree_util import internal as tree_util
from minijax.callbacks.debug import debug_effect
from minijax.core import sharding as sharding_lib
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lowering import mlir
from minijax.runtime import backend
from minijax.runtime.sharded_executable import sharding_of_hlo

__all__ = ["inspect_array_sharding", "inspect_sharding_p"]


def inspect_array_sharding(value, *, callback: Callable[[sharding_lib.Sharding], None]) -> None:
  """Calls `callback` with the sharding of each array of the pytree `value` (see the module
  docstring for when)."""
  if not callable(callback):
    raise TypeError("inspect_array_sharding's callback must be callable, got "
                    f"{type(callback).__name__}")
  tree_util.tree_map(lambda x: inspect_sharding_p.bind(x, callback=callback), value)


# ----------------------------------------------------------------------------- the primitive
# Params: callback (the user's function of a Sharding).

inspect_sharding_p = Primitive("inspect_sharding")
inspect_sharding_p.multiple_results = True


def _abstract_eval(aval, *, callback):
  return [], frozenset([debug_effect])


inspect_sharding_p.def_effectful_abstract_eval(_abstract_eval)


def _impl(value, *, callback):
  callback(value.sharding)
  return []


inspect_sharding_p.def_impl(_impl)


def _lowering(ctx, value, *, callback):
  mctx = ctx.module_context
  (aval,) = ctx.avals_in
  if mctx.positions is None or len(mctx.positions) == 1:
    device = next(iter(mctx.positions)) if mctx.positions else backend.get_device(None)
    callback(sharding_lib.SingleDeviceSharding(device))
    return []
  devices = tuple(sorted(mctx.positions, key=mctx.positions.get))
  manual = mctx.axis_context
  mesh = manual.mesh if manual is not None else (sharding_lib.current_mesh() or mctx.mesh)

  def on_sharding(hlo: xla_client.HloSharding) -> None:
    callback(sharding_of_hlo(hlo, aval.ndim, devices, mesh))

  mctx.keepalives.append(on_sharding)  # the partitioner calls it while compiling
  mhlo.CustomCallOp([value.type], [value], "InspectSharding", has_side_effect=True,
                    backend_config=ir.StringAttr.get(
                        xla_client.encode_inspect_sharding_callback(on_sharding)),
                    api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1))
  return []


mlir.register_lowering(inspect_sharding_p, _lowering)


def _batching(args, dims, *, callback):
  inspect_sharding_p.bind(*args, callback=callback)
  return [], []


batching.primitive_batchers[inspect_sharding_p] = _batching


def _jvp(primals, tangents, *, callback):
  return inspect_sharding_p.bind(*primals, callback=callback), []


ad.primitive_jvps[inspect_sharding_p] = _jvp
ad.primitive_transposes[inspect_sharding_p] = lambda cts, *args, **params: [None] * len(args)
