"""The one XLA client minijax runs on, its devices, and their shardings.

minijax runs on jaxlib's CPU client only.  The client is created lazily, once, on the first
call to `get_client()`; `MINIJAX_NUM_CPU_DEVICES` (default 1) says how many CPU devices it
exposes, or, when it is not set, JAX's `XLA_FLAGS=--xla_force_host_platform_device_count=N`.  Code that must act right after the client exists (the tap runtime registers its
custom-call targets, which only takes effect once a client is up) hooks in with
`on_client_created`; those hooks run before any other thread can see the client.

Every single-device value and executable is described to jaxlib by a
`_jax.SingleDeviceSharding`.  jaxlib asks a sharding for its HLO form through a Python method
that JAX normally installs; minijax installs its own (always "replicated", which is exact for
one device) when this module is imported.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

from jaxlib import _jax, xla_client

Device = _jax.Device
Client = _jax.Client

NUM_DEVICES_ENV = "MINIJAX_NUM_CPU_DEVICES"

_lock = threading.RLock()
_client: Client | None = None
_client_callbacks: list[Callable[[Client], Any]] = []
_devices: tuple[Device, ...] = ()
_shardings: dict[Device, _jax.SingleDeviceSharding] = {}


def _replicated_hlo_sharding(self, num_dimensions):
  return xla_client.HloSharding.replicate()


if not hasattr(_jax.SingleDeviceSharding, "_to_xla_hlo_sharding"):
  _jax.SingleDeviceSharding._to_xla_hlo_sharding = _replicated_hlo_sharding


def _xla_flags_device_count() -> str | None:
  """N from `--xla_force_host_platform_device_count=N` in `XLA_FLAGS` (the last one wins)."""
  found = None
  for flag in os.environ.get("XLA_FLAGS", "").split():
    name, _, value = flag.partition("=")
    if name.lstrip("-") == "xla_force_host_platform_device_count":
      found = value
  return found


def _requested_num_devices() -> int:
  raw = os.environ.get(NUM_DEVICES_ENV)
  if raw is None:
    raw = _xla_flags_device_count() or "1"
  try:
    n = int(raw)
  except ValueError:
    n = 0
  if n < 1:
    raise ValueError(f"{NUM_DEVICES_ENV}={raw!r}: expected a positive integer number of CPU devices")
  return n


def get_client() -> Client:
  """The process's CPU client, created on first use (thread-safe)."""
  client = _client
  if client is not None:
    return client
  with _lock:
    if _client is None:
      _create_client()
    return _client


def _create_client() -> None:
  global _client, _devices
  client = xla_client.make_cpu_client(num_devices=_requested_num_devices())
  _devices = tuple(client.devices())
  # Hooks run while `_lock` is held, so no other thread gets the client before they finish.
  # `_lock` is re-entrant, so a hook may call back into this module.
  _client = client
  for callback in list(_client_callbacks):
    callback(client)


def on_client_created(callback: Callable[[Client], Any]) -> None:
  """Calls `callback(client)` once the client exists: now if it does, else right after creation."""
  with _lock:
    _client_callbacks.append(callback)
    client = _client
    if client is not None:
      callback(client)


def devices() -> list[Device]:
  get_client()
  return list(_devices)


def local_devices() -> list[Device]:
  return list(get_client().local_devices())


def device_count() -> int:
  get_client()
  return len(_devices)


def default_device() -> Device:
  get_client()
  return _devices[0]


def get_device(device: Device | int | None = None) -> Device:
  """Resolves `None` (device 0), an index, or a device object to one of the client's devices."""
  get_client()
  if device is None:
    return _devices[0]
  if isinstance(device, Device):
    if device not in _devices:
      raise ValueError(f"device {device!r} does not belong to minijax's CPU client, whose devices "
                       f"are {list(_devices)}")
    return device
  if isinstance(device, int) and not isinstance(device, bool):
    if not -len(_devices) <= device < len(_devices):
      raise ValueError(
          f"device index {device} is out of range: minijax has {len(_devices)} CPU device(s). "
          f"Set the environment variable {NUM_DEVICES_ENV} (before the first minijax computation) "
          f"to use more.")
    return _devices[device]
  raise TypeError(f"expected a device, a device index or None, got {type(device).__name__}: "
                  f"{device!r:.80}")


def sharding_for(device: Device) -> _jax.SingleDeviceSharding:
  """The (cached) sharding that places a value or an executable on `device`."""
  sharding = _shardings.get(device)
  if sharding is None:
    sharding = _shardings.setdefault(device, _jax.SingleDeviceSharding(device))
  return sharding
