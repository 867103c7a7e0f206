"""`jax._src.tree_util` for libraries: `_registry` answers `type in _registry` for the
types registered as pytree nodes (flax.nnx asks it)."""
from minijax.tree_util import *  # noqa: F401,F403
from minijax.tree_util import registry as _jaxlib_registry


class _RegisteredTypes:
  def __contains__(self, node_type) -> bool:
    try:
      return _jaxlib_registry.is_node(node_type)
    except TypeError:
      return False


_registry = _RegisteredTypes()
