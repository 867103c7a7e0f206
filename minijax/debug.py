"""`minijax.debug`: `callback`, `print` and `log`, JAX's debugging callbacks (see
`minijax.callbacks.debug` for how they run)."""
from minijax.callbacks.debug import DebugEffect, OrderedDebugEffect
from minijax.callbacks.debug import debug_callback as callback
from minijax.callbacks.debug import debug_log as log
from minijax.callbacks.debug import debug_print as print  # noqa: A001 (JAX's name)

__all__ = ["callback", "print", "log", "DebugEffect", "OrderedDebugEffect"]
