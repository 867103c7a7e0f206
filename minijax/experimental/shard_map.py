"""`minijax.experimental.shard_map.shard_map`: JAX's older spelling of `minijax.shard_map`
(positional mesh and specs, `check_rep` for `check_vma`), kept so ported code runs; it
warns, as JAX's does, that the name is deprecated."""
import warnings

from minijax.lax.shard_map import shard_map as _shard_map


def _legacy_shard_map(f, mesh, in_specs, out_specs, check_rep=True):
  """`minijax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
  check_vma=check_rep)`."""
  return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                    check_vma=check_rep)


def __getattr__(name):
  if name == "shard_map":
    warnings.warn("jax.experimental.shard_map is deprecated in v0.8.0. Use jax.shard_map "
                  "instead.", DeprecationWarning, stacklevel=2)
    return _legacy_shard_map
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
