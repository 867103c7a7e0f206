"""JAX's callback API: host functions called from compiled code.

Three primitives, each in its own module with every rule it has:

  `debug.debug_callback_p`  `minijax.debug.callback` / `minijax.debug.print`: observe
                            values; no results; delivered asynchronously through the tap
                            queues; `DebugEffect` / `OrderedDebugEffect`;
  `io.io_callback_p`        `minijax.experimental.io_callback`: side effects with results;
                            synchronous; `IOEffect` / `OrderedIOEffect`;
  `pure.pure_callback_p`    `minijax.pure_callback`: results only; synchronous; no effect,
                            so it is dropped when its results are unused.

`breakpoint` builds `minijax.debug.breakpoint` on the first (a debugger over the frames
where the computation stops).  `common` holds what they share (flat callbacks, result types, the custom calls);
`deferral` the rules that turn the taps inside control flow into outputs, for
`tap_delivery="deferred"`.  The
runtime halves are `runtime/taps` (the queues and receivers) and `runtime/host_calls` (the
value-returning FFI handler).
"""
from minijax.callbacks.debug import (DebugEffect, OrderedDebugEffect, debug_callback,
                                     debug_callback_p, debug_print)
from minijax.callbacks.io import IOEffect, OrderedIOEffect, io_callback, io_callback_p
from minijax.callbacks.pure import pure_callback, pure_callback_p
from minijax.callbacks import deferral as _deferral  # noqa: F401  (control flow's rules)

__all__ = ["DebugEffect", "IOEffect", "OrderedDebugEffect", "OrderedIOEffect", "debug_callback",
           "debug_callback_p", "debug_print", "io_callback", "io_callback_p", "pure_callback",
           "pure_callback_p"]
