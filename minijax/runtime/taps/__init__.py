"""The runtime half of host taps: device-side custom calls, per-device queues, receivers.

A tapped value travels: the tap primitive's lowering registers a consumer
(`registry.register_consumer`) and emits a custom call to one of the targets of
`custom_call`; at run time the call copies the arrays into its device's bounded queue
(`queues`: native C++, or a Python stand-in); the device's receiver thread pops them,
rebuilds the pytree and calls the tap function (`receiver`).  `barrier_wait` waits for all of that using counters, never by running code.

The executable's part of the contract, for a computation that contains taps:
`bind_host_callbacks(host_callbacks, device)` on the lowering's host callbacks when
compiling it, and `before_execution()` (which starts the receivers) before running it.  Barriers find the computations
in flight through the runtime tokens (`tokens.runtime_tokens`).
"""
from minijax.runtime.taps.custom_call import (
    CALLBACK_TARGET,
    NATIVE_CONSUMER_ATTRIBUTE,
    NATIVE_TARGET,
    TapCallback,
    bind_host_callbacks,
    mechanism,
)
from minijax.runtime.taps.queues import native_available
from minijax.runtime.taps.receiver import (
    TapFunctionException,
    TapStats,
    barrier_wait,
    before_execution,
    device_ordinal,
    ensure_started,
    in_receiver_thread,
    reset_tap_stats,
    stop_outfeed_receiver,
    tap_stats,
)
from minijax.runtime.taps.registry import Consumer, consumer, register_consumer

__all__ = [
    "CALLBACK_TARGET", "NATIVE_CONSUMER_ATTRIBUTE", "NATIVE_TARGET", "Consumer", "TapCallback", "TapFunctionException",
    "TapStats", "barrier_wait", "before_execution", "bind_host_callbacks", "consumer",
    "device_ordinal", "ensure_started", "in_receiver_thread", "mechanism",
    "native_available", "register_consumer", "reset_tap_stats",
    "stop_outfeed_receiver", "tap_stats",
]
