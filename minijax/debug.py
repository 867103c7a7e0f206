"""`minijax.debug`: `callback`, `print` and `log`, JAX's debugging callbacks (see
`minijax.callbacks.debug` for how they run), `breakpoint` (`minijax.callbacks.breakpoint`,
a debugger over the values a computation has), `inspect_array_sharding`, and the pictures of
`visualize_sharding` / `visualize_array_sharding` (`minijax.sharding.visualize`)."""
from minijax.callbacks.breakpoint import breakpoint  # noqa: A004 (JAX's name)
from minijax.callbacks.debug import DebugEffect, OrderedDebugEffect
from minijax.callbacks.debug import debug_callback as callback
from minijax.callbacks.debug import debug_log as log
from minijax.callbacks.debug import debug_print as print  # noqa: A001 (JAX's name)
from minijax.callbacks.inspect_sharding import inspect_array_sharding
from minijax.sharding.visualize import visualize_array_sharding, visualize_sharding

__all__ = ["breakpoint", "callback", "print", "log", "inspect_array_sharding", "DebugEffect",
           "OrderedDebugEffect", "visualize_array_sharding", "visualize_sharding"]
