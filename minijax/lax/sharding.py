"""`with_sharding_constraint`: ask XLA's partitioner to lay a value out a given way.

`sharding_constraint_p` is the identity with a `sharding` param (a `core.sharding`
sharding).  In a module compiled for several devices it lowers to XLA's `@Sharding`
custom call, which pins the layout of that value while the partitioner propagates layouts
through the rest of the program; in a module for one device it is the identity.  On
concrete values it moves the value to that sharding (`device_put`, installed by
`minijax.staging`).  It is linear: its jvp and transpose constrain the tangent and the
cotangent the same way; under vmap the batch dimension goes first and stays unsplit.
"""
from __future__ import annotations

from minijax.tree_util import internal as tree_util
from minijax.core.avals import get_aval
from minijax.core.primitive import Primitive
from minijax.core.sharding import NamedSharding, PartitionSpec, Sharding, current_mesh
from minijax.interpreters import ad, batching
from minijax.lax.structural import convert_to_array
from minijax.lowering import mlir, spmd

__all__ = ["with_sharding_constraint", "sharding_constraint_p"]

sharding_constraint_p = Primitive("sharding_constraint")


def _abstract_eval(x, *, sharding):
  sharding.check_shape(x.shape)
  return x


def _lowering(ctx, x, *, sharding):
  mctx = ctx.module_context
  if mctx.axis_context is not None:
    raise ValueError("with_sharding_constraint cannot be used inside shard_map or pmap, "
                     "whose bodies already run on one device each")
  if mctx.positions is None:
    return x
  tile = sharding.tile_assignment(ctx.avals_in[0].ndim, mctx.positions)
  return spmd.annotate(x, tile.hlo_sharding_text())


def _batch(args, dims, *, sharding):
  (x,), (d,) = args, dims
  x = batching.moveaxis(x, d, 0)
  if isinstance(sharding, NamedSharding):
    sharding = NamedSharding(sharding.mesh, PartitionSpec(None, *sharding.spec))
  elif not sharding.is_fully_replicated:
    raise NotImplementedError(f"vmap of with_sharding_constraint to {sharding!r}")
  return sharding_constraint_p.bind(x, sharding=sharding), 0


def _transpose(ct, x, *, sharding):
  return [sharding_constraint_p.bind(ad.instantiate_zeros(ct), sharding=sharding)]


sharding_constraint_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(sharding_constraint_p, _lowering)
ad.defjvp(sharding_constraint_p, lambda t, x, *, sharding: sharding_constraint_p.bind(
    t, sharding=sharding))
ad.primitive_transposes[sharding_constraint_p] = _transpose
batching.primitive_batchers[sharding_constraint_p] = _batch


def _as_sharding(s) -> Sharding:
  if isinstance(s, Sharding):
    return s
  if isinstance(s, PartitionSpec):
    mesh = current_mesh()
    if mesh is None:
      raise ValueError(f"with_sharding_constraint was given the PartitionSpec {s} without a "
                       "mesh: pass a NamedSharding, or call it inside `with mesh:`")
    return NamedSharding(mesh, s)
  raise TypeError(f"with_sharding_constraint expects Shardings or PartitionSpecs, got {s!r}")


def with_sharding_constraint(x, shardings):
  """`x` (a pytree), constrained to `shardings` (a sharding, a PartitionSpec under
  `with mesh:`, or a pytree prefix of `x` of those)."""
  is_leaf = lambda s: isinstance(s, (Sharding, PartitionSpec))  # noqa: E731
  leaves, spec_tree = tree_util.tree_flatten(shardings, is_leaf=is_leaf)
  try:
    subtrees = spec_tree.flatten_up_to(x)
  except (ValueError, TypeError):
    raise ValueError(f"with_sharding_constraint shardings {shardings} is not a tree prefix "
                     f"of the value's structure {tree_util.tree_structure(x)}") from None
  out = []
  for s, sub in zip(leaves, subtrees):
    sharding = _as_sharding(s)
    sub_leaves, sub_tree = tree_util.tree_flatten(sub)
    done = []
    for leaf in sub_leaves:
      leaf = convert_to_array(leaf)
      sharding.check_shape(get_aval(leaf).shape)
      done.append(sharding_constraint_p.bind(leaf, sharding=sharding))
    out.append(sub_tree.unflatten(done))
  return spec_tree.unflatten(out)
