"""The runtime: the only part of minijax that talks to jaxlib's XLA client.

`backend` owns the CPU client and its devices, `array` the device-resident `Array` and
`device_put`, `executable` compilation, execution and the tokens that order effects.  The tap
receiver (`taps*`) builds on these; `lapack` registers jaxlib's LAPACK kernels with the client.
"""
from __future__ import annotations

from minijax.runtime.array import Array, device_put, make_array
from minijax.runtime.backend import (default_device, device_count, devices, get_client,
                                     get_device, local_devices, on_client_created, sharding_for)
from minijax.runtime.executable import Executable, compile
from minijax.runtime.tokens import RuntimeTokens, runtime_tokens
from minijax.runtime import lapack  # noqa: F401  (registers the LAPACK custom-call targets)

__all__ = [
    "Array", "Executable", "RuntimeTokens", "compile", "default_device", "device_count",
    "device_put", "devices", "get_client", "get_device", "local_devices", "make_array",
    "on_client_created", "runtime_tokens", "sharding_for",
]
