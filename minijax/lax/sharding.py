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

import functools
import inspect

from minijax.tree_util import internal as tree_util
from minijax.core import layout
from minijax.core.avals import get_aval
from minijax.core.primitive import Primitive
from minijax.core.sharding import (NamedSharding, PartitionSpec, Sharding, current_mesh,
                                   on_current_mesh)
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
  s = layout.sharding_of(s, "with_sharding_constraint")
  if isinstance(s, Sharding):
    return s
  if isinstance(s, PartitionSpec):
    return on_current_mesh(s, "with_sharding_constraint")
  raise TypeError(f"with_sharding_constraint expects Shardings or PartitionSpecs, got {s!r}")


def with_sharding_constraint(x, shardings):
  """`x` (a pytree), constrained to `shardings` (a sharding, a PartitionSpec under
  `with mesh:`, a `Format` of the default layout, or a pytree prefix of `x` of those)."""
  is_leaf = lambda s: isinstance(s, (Sharding, PartitionSpec, layout.Format))  # noqa: E731
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


def constrain_to(x, out_sharding):
  """JAX's `out_sharding=` keyword of functions that make arrays: `x` constrained to it (a
  `Sharding`, or a `PartitionSpec` of the current mesh).  None, or the sharding of an
  unsharded type (what `typeof(x).sharding` reports here), leaves `x` as it is."""
  if out_sharding is None or _unsharded(out_sharding):
    return x
  return with_sharding_constraint(x, out_sharding)


def _unsharded(sharding) -> bool:
  if isinstance(sharding, PartitionSpec):
    return current_mesh() is None and all(axis is None for axis in sharding)
  mesh = getattr(sharding, "mesh", None)
  return getattr(mesh, "empty", False) and all(axis is None for axis in sharding.spec)


def takes_out_sharding(make):
  """`make`, which returns an array, given JAX's `out_sharding` keyword (`constrain_to`):
  added keyword-only, or, where `make` already declares it, honoured in place."""
  signature = inspect.signature(make)
  declared = "out_sharding" in signature.parameters

  @functools.wraps(make)
  def made(*args, **kwargs):
    if declared:
      bound = signature.bind(*args, **kwargs)
      out_sharding = bound.arguments.pop("out_sharding", None)
      return constrain_to(make(*bound.args, **bound.kwargs), out_sharding)
    out_sharding = kwargs.pop("out_sharding", None)
    return constrain_to(make(*args, **kwargs), out_sharding)

  if not declared:
    keyword = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)
    made.__signature__ = signature.replace(parameters=[*signature.parameters.values(), keyword])
  return made
