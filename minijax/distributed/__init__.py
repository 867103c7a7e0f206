"""`minijax.distributed`: run one program in several processes, as `jax.distributed` does.

    minijax.distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=0)  # process 0
    minijax.distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=1)  # process 1

After `initialize`, `minijax.devices()` lists the devices of every process and
`minijax.local_devices()` this process's; `pmap` and `jit`/`shard_map` over a mesh of all
of them run in every process at once, with collectives crossing processes (gloo over TCP),
and taps arrive in the process whose device made them.  `python -m minijax.launch -n N
script.py` starts N local processes that are initialized already: in them,
`initialize()` without arguments does nothing.  The mechanics are in
`minijax/runtime/distributed.py`.
"""
from __future__ import annotations

import atexit
from typing import Sequence

from minijax.runtime import distributed as _runtime

__all__ = ["initialize", "shutdown", "is_initialized"]

_atexit_registered = False


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None, *,
               initialization_timeout: int = 300, heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None) -> None:
  """Connects this process to the others; call it before any other minijax call.

  `coordinator_address` is process 0's `host:port`, where it runs the coordination service;
  `local_device_ids` only sets how many CPU devices this process has.  A process whose
  peers stop sending heartbeats for `heartbeat_timeout_seconds` ends with an error."""
  global _atexit_registered
  if (_runtime.state.by_launcher and coordinator_address is None and num_processes is None
      and process_id is None):
    return  # started by minijax.launch, which initialized it
  _runtime.initialize(coordinator_address, num_processes, process_id, local_device_ids,
                      initialization_timeout=initialization_timeout,
                      heartbeat_timeout_seconds=heartbeat_timeout_seconds,
                      shutdown_timeout_seconds=shutdown_timeout_seconds,
                      coordinator_bind_address=coordinator_bind_address)
  if not _atexit_registered:
    atexit.register(shutdown)
    _atexit_registered = True


def shutdown() -> None:
  """Disconnects from the other processes (process 0 also stops the service)."""
  _runtime.shutdown()


def is_initialized() -> bool:
  return _runtime.is_initialized()
