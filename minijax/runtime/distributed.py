"""Several processes: jaxlib's distributed runtime and the CPU client that spans them.

Process 0 runs the coordination service (`_jax.get_distributed_runtime_service`); every
process, process 0 included, connects a client to it (`get_distributed_runtime_client`,
then `connect`, which waits until all `num_processes` have joined or `init_timeout`
passes).  The CPU client is then created with that client, this process's id and the
number of processes, and with gloo collectives over TCP (`make_gloo_tcp_collectives`,
JAX's default for CPU): it exchanges the device topology through the service, so that
`backend.devices()` lists every process's devices (process p's CPU device ids start at
p * 2048) and `local_devices()` this process's.  Programs over devices of several
processes run with each process executing its part, and their collectives go through
gloo.

`initialize` must therefore run before the client exists (before any computation, and
before `minijax.devices()`); `shutdown` disconnects the client and stops the service.  The
service watches heartbeats: when a process dies, the others learn of it within
`heartbeat_timeout_seconds` and end with the runtime's error, instead of waiting forever
in a collective.
"""
from __future__ import annotations

import logging
import threading
from typing import Sequence

from jaxlib import _jax

from minijax.config import config
from minijax.runtime import backend

logger = logging.getLogger("minijax")

_lock = threading.Lock()


class _State:
  def __init__(self):
    self.service = None
    self.client = None
    self.process_id = 0
    self.num_processes = 1
    self.coordinator_address: str | None = None
    self.by_launcher = False


state = _State()


def is_initialized() -> bool:
  return state.client is not None


def initialize(coordinator_address: str, num_processes: int, process_id: int,
               local_device_ids: int | Sequence[int] | None = None, *,
               initialization_timeout: int = 300, heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None) -> None:
  """Joins this process to the distributed runtime (see the module docstring)."""
  if coordinator_address is None:
    raise ValueError("coordinator_address should be defined.")
  if num_processes is None:
    raise ValueError("Number of processes must be defined.")
  if process_id is None:
    raise ValueError("The process id of the current process must be defined.")
  if not isinstance(process_id, int) or isinstance(process_id, bool):
    raise TypeError(f"process_id must be a nonnegative int. Got process_id={process_id} of "
                    f"type {type(process_id)}.")
  if not isinstance(num_processes, int) or isinstance(num_processes, bool):
    raise TypeError(f"num_processes must be a positive int. Got num_processes={num_processes} "
                    f"of type {type(num_processes)}.")
  if not 0 <= process_id < num_processes:
    raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                     f"num_processes. Got process_id={process_id}, "
                     f"num_processes={num_processes}.")
  implementation = config.cpu_collectives_implementation
  if implementation not in ("gloo", None):
    raise ValueError(f"cpu_collectives_implementation={implementation!r}: minijax supports "
                     "'gloo' only")
  if isinstance(local_device_ids, int):
    local_device_ids = [local_device_ids]
  with _lock:
    if backend.client_created():
      raise RuntimeError("minijax.distributed.initialize() must be called before any minijax "
                         "calls that might initialise the XLA backend. This includes any "
                         "computation, but also calls to minijax.devices, minijax.device_put, "
                         "and others.")
    if state.client is not None:
      raise RuntimeError("distributed.initialize should only be called once.")
    if process_id == 0:
      bind = coordinator_bind_address or "[::]:" + coordinator_address.rsplit(":", 1)[1]
      logger.info("Starting the distributed service on %s", bind)
      state.service = _jax.get_distributed_runtime_service(
          bind, num_processes, heartbeat_timeout=heartbeat_timeout_seconds,
          shutdown_timeout=shutdown_timeout_seconds)
    client = _jax.get_distributed_runtime_client(
        coordinator_address, process_id, init_timeout=initialization_timeout,
        heartbeat_timeout=heartbeat_timeout_seconds, shutdown_timeout=shutdown_timeout_seconds,
        use_compression=True)
    logger.info("Connecting to the distributed service on %s", coordinator_address)
    try:
      client.connect()
    except Exception:
      if state.service is not None:
        state.service.shutdown()
        state.service = None
      raise
    state.client = client
    state.process_id = process_id
    state.num_processes = num_processes
    state.coordinator_address = coordinator_address
    num_devices = len(local_device_ids) if local_device_ids else None
    backend.set_distributed(client, process_id, num_processes,
                            lambda c: _jax.make_gloo_tcp_collectives(distributed_client=c),
                            num_devices)


def shutdown() -> None:
  """Disconnects from the distributed runtime (and stops the service, on process 0)."""
  with _lock:
    if state.client is not None:
      state.client.shutdown()
      state.client = None
    if state.service is not None:
      state.service.shutdown()
      state.service = None
