"""JAX's functions for the persistent compilation cache: `set_cache_dir(path)` turns it on
(the same as `config.update("jax_compilation_cache_dir", path)`), `reset_cache()` turns it
off again.  The cache itself is `minijax.runtime.compilation_cache`."""
from __future__ import annotations

from minijax.config import config

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path) -> None:
  """Keep compiled programs in the directory `path` (made when first written)."""
  config.update("jax_compilation_cache_dir", path)


def reset_cache() -> None:
  """Stop using the persistent cache (the directory's entries stay)."""
  config.update("jax_compilation_cache_dir", None)
