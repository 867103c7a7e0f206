"""Experimental APIs: `io_callback` (JAX's, see `minijax.callbacks.io`) and `host_callback`
(host taps)."""
from minijax.callbacks.io import io_callback

__all__ = ["io_callback"]
from minijax.experimental import checkify  # noqa: E402
