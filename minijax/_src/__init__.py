"""`jax._src`: the few JAX internals that libraries import by name at module level
(flax, equinox, chex, nnx), each mapped onto minijax's own objects, and `effects`, JAX's
effect type sets, over minijax's effect policies.

Nothing here is a second implementation: each module re-exports the minijax object that
plays the same part (`traceback_util.api_boundary`, `dtypes`, `core`), or a placeholder
a library only stores or patches (`compiler`).  Internals not listed here still raise
`ImportError` through `install_as_jax`'s finder, as minijax has no `jax._src`."""
from minijax._src import xla_bridge  # noqa: E402,F401  (read as jax._src.xla_bridge)
