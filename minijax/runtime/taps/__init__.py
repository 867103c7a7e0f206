"""The runtime half of host taps: device-side custom calls, per-device queues, receivers.

A tapped value travels: the tap primitive's lowering registers a consumer
(`registry.register_consumer`) and emits a custom call to one of the targets of
`custom_call`; at run time the call copies the arrays into its device's bounded queue
(`queues`: native C++, or a Python stand-in); the device's receiver thread pops them,
rebuilds the pytree and calls the tap function (`receiver`).  `effects_barrier` (and its
tap-flavoured name `barrier_wait`) waits for all of that using counters, never by running
code.

The executable's part of the contract, for a computation that contains taps:
`bind_host_callbacks(host_callbacks, devices)` on the lowering's host callbacks when
compiling it, `before_execution()` (which starts the receivers and paces dispatch) before
running it, `mark_progress` on the results of a run it asks to be marked, and
`take_interrupt()` when a run fails (a signal handler's exception, to raise instead of
jaxlib's error), and runs through `watched(execute)` (Ctrl-C while a tap waits on another
thread).  Barriers find the computations in flight through the runtime tokens
(`tokens.runtime_tokens`).  `exit` drains the queues when the interpreter exits.
"""
from minijax.runtime.taps.custom_call import (
    CALLBACK_TARGET,
    NATIVE_CONSUMER_ATTRIBUTE,
    NATIVE_TARGET,
    PER_PARTITION,
    TapCallback,
    bind_host_callbacks,
    mechanism,
)
from minijax.runtime.taps.queues import native_available, watched
from minijax.runtime.taps.receiver import (
    TapFunctionException,
    TapStats,
    barrier_wait,
    effects_barrier,
    before_execution,
    device_ordinal,
    ensure_started,
    in_receiver_thread,
    mark_progress,
    reset_tap_stats,
    stop_outfeed_receiver,
    streamed_dispatch,
    sweep_retired,
    take_interrupt,
    tap_stats,
)
from minijax.runtime.taps.registry import Consumer, consumer, make_consumer, register_consumer
from minijax.runtime.taps import deferred
from minijax.runtime.taps import exit as _exit  # noqa: F401  (registers the exit handler)

__all__ = [
    "CALLBACK_TARGET", "NATIVE_CONSUMER_ATTRIBUTE", "NATIVE_TARGET", "PER_PARTITION", "Consumer",
    "TapCallback", "TapFunctionException", "TapStats", "barrier_wait", "before_execution",
    "bind_host_callbacks", "consumer", "deferred", "effects_barrier", "device_ordinal",
    "ensure_started", "make_consumer", "in_receiver_thread", "mark_progress", "mechanism",
    "native_available", "register_consumer", "reset_tap_stats", "stop_outfeed_receiver",
    "streamed_dispatch", "sweep_retired", "take_interrupt", "tap_stats", "watched",
]
