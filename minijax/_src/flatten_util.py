"""`jax._src.flatten_util` for libraries (blackjax imports `ravel_pytree` from here)."""
from minijax.flatten_util import ravel_pytree

__all__ = ["ravel_pytree"]
