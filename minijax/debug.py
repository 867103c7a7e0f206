"""`minijax.debug`: `callback` and `print`, JAX's debugging callbacks (see
`minijax.callbacks.debug` for how they run)."""
from minijax.callbacks.debug import DebugEffect, OrderedDebugEffect
from minijax.callbacks.debug import debug_callback as callback
from minijax.callbacks.debug import debug_print as print  # noqa: A001 (JAX's name)

__all__ = ["callback", "print", "DebugEffect", "OrderedDebugEffect"]
