"""`minijax.debug`: `callback`, `print` and `log`, JAX's debugging callbacks (see
`minijax.callbacks.debug` for how they run), `inspect_array_sharding`, and the pictures of
`visualize_sharding` / `visualize_array_sharding` (`minijax.sharding.visualize`)."""
from minijax.callbacks.debug import DebugEffect, OrderedDebugEffect
from minijax.callbacks.debug import debug_callback as callback
from minijax.callbacks.debug import debug_log as log
from minijax.callbacks.debug import debug_print as print  # noqa: A001 (JAX's name)
from minijax.callbacks.inspect_sharding import inspect_array_sharding
from minijax.sharding.visualize import visualize_array_sharding, visualize_sharding

__all__ = ["callback", "print", "log", "inspect_array_sharding", "DebugEffect",
           "OrderedDebugEffect", "visualize_array_sharding", "visualize_sharding"]
