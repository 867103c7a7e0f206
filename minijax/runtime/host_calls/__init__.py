"""The runtime half of value-returning host callbacks (`pure_callback`, `io_callback`).

A call site is registered at lowering time (`register_host_call`) and reached from compiled
code through a custom call, either to minijax's own XLA FFI handler or to jaxlib's Python
callback (`calls`).  The function runs synchronously, on the thread that dispatched the
computation, and its results flow back into the computation.  An executable that makes host
calls is told so at compile time (`compile(..., host_calls=...)`) and waits for its
results before returning, so that an exception raised by a host function reaches the call
that dispatched it, as JAX's `JaxRuntimeError` caused by it (`errors.raise_filed`).

Host functions that return nothing (`debug.callback`) do not come here: they travel through
the tap queues (`runtime/taps`) and run on the receiver threads, and their exceptions wait
for the next `effects_barrier()` (`errors.raise_async_exceptions`).
"""
from minijax.runtime.host_calls.calls import (
    CALLBACK_TARGET,
    NATIVE_CALLBACK_ATTRIBUTE,
    NATIVE_TARGET,
    HostCall,
    PythonHostCallback,
    check_result_count,
    convert_result,
    host_call_depth,
    mechanism,
    native_available,
    register_host_call,
)
from minijax.runtime.host_calls.errors import (
    call_error,
    file_async_exception,
    file_call_exception,
    log_call_failure,
    raise_async_exceptions,
    raise_filed,
)

__all__ = [
    "CALLBACK_TARGET", "NATIVE_CALLBACK_ATTRIBUTE", "NATIVE_TARGET", "HostCall",
    "PythonHostCallback", "call_error", "check_result_count", "log_call_failure", "convert_result", "file_async_exception",
    "file_call_exception", "host_call_depth", "mechanism", "native_available",
    "raise_async_exceptions", "raise_filed", "register_host_call",
]
