"""`jax._src.dispatch` for libraries: `wait_for_tokens` waits for every effect minijax
has dispatched (`effects_barrier`)."""
from minijax.runtime.barrier import effects_barrier as wait_for_tokens

__all__ = ["wait_for_tokens"]
