"""The one XLA client minijax runs on, its devices, and their shardings.

minijax runs on jaxlib's CPU client only.  The client is created lazily, once, on the first
call to `get_client()`; the flag `num_cpu_devices` (`MINIJAX_NUM_CPU_DEVICES`, or JAX's
`XLA_FLAGS=--xla_force_host_platform_device_count=N`; default 1, read when the client is
created) says how many CPU devices it exposes, and cannot change once the client exists.  Code that
must act right after the client exists (the tap runtime registers its custom-call targets,
which only takes effect once a client is up) hooks in with `on_client_created`; those hooks
run before any other thread can see the client.

jaxlib defers dropping some Python objects that its own threads release (the tracebacks it
records at every execution, for one) until `collect_garbage()` is called on a thread that
holds the GIL.  Every execution leaves such garbage behind (about 90 bytes), and a loop of
calls that allocates nothing else never wakes Python's cyclic collector, so collecting after
gc runs (as JAX does, and this module too) is not enough: as JAX's jitted functions do,
minijax's executables call `collect_jaxlib_garbage()` (42 ns when there is nothing to
drop) on every dispatch.

jaxlib is not fork-safe once the client exists: its thread pools do not survive `fork`.
So, as JAX does, `os.fork()` warns once the client exists.  In the child, compiling would
hang, so it raises instead (`check_can_compile`), while executables compiled before the
fork still run; and the client is kept alive for good, because destroying it at exit
would touch threads that do not exist there (a segfault).  Processes that need minijax
should be started with `multiprocessing`'s "spawn" (or "forkserver") start method.

Every single-device value and executable is described to jaxlib by a
`_jax.SingleDeviceSharding`.  jaxlib asks a sharding for its HLO form through a Python method
that JAX normally installs; minijax installs its own (always "replicated", which is exact for
one device) when this module is imported.
"""
from __future__ import annotations

import gc
import os
import threading
import warnings
from typing import Any, Callable

from jaxlib import _jax, xla_client

from minijax.config import config

Device = _jax.Device
Client = _jax.Client

NUM_DEVICES_ENV = "MINIJAX_NUM_CPU_DEVICES"

_lock = threading.RLock()
_client: Client | None = None
_client_callbacks: list[Callable[[Client], Any]] = []
_devices: tuple[Device, ...] = ()
_shardings: dict[Device, _jax.SingleDeviceSharding] = {}
_local: tuple[Device, ...] = ()
_distributed: dict = {}  # set by runtime/distributed.py before the client exists


def _replicated_hlo_sharding(self, num_dimensions):
  return xla_client.HloSharding.replicate()


if not hasattr(_jax.SingleDeviceSharding, "_to_xla_hlo_sharding"):
  _jax.SingleDeviceSharding._to_xla_hlo_sharding = _replicated_hlo_sharding


collect_jaxlib_garbage = _jax.collect_garbage


def _collect_jaxlib_garbage(phase: str, info: dict) -> None:
  _jax.collect_garbage()


_gc_callback: Callable = _collect_jaxlib_garbage
gc.callbacks.append(_gc_callback)


def set_gc_callback(callback: Callable) -> None:
  """Collects jaxlib's garbage with `callback(phase, info)` in each garbage collection
  instead.  The native tap module gives one in C (`ignoring_arguments`): Python ignores what a
  collector callback raises, so a Ctrl-C whose handler ran inside a Python one would be lost."""
  global _gc_callback
  if _gc_callback in gc.callbacks:
    gc.callbacks.remove(_gc_callback)
  _gc_callback = callback
  gc.callbacks.append(callback)


FORK_WARNING = (
    "os.fork() was called after minijax created its XLA client. jaxlib is multithreaded and "
    "not fork-safe: the child can run executables compiled before the fork, but compiling "
    "there raises (it would hang). Start processes with multiprocessing's 'spawn' start "
    "method (multiprocessing.get_context('spawn')) instead.")
_forked_child = False  # this process was forked from one whose client existed


def _warn_before_fork() -> None:
  if _client is not None:
    warnings.warn(FORK_WARNING, RuntimeWarning, stacklevel=2)


def _after_fork_in_child() -> None:
  global _forked_child
  _lock._at_fork_reinit()
  if _client is not None:
    _forked_child = True
    import ctypes  # one reference that is never dropped: the client is never destroyed here
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_client))


if hasattr(os, "register_at_fork"):
  os.register_at_fork(before=_warn_before_fork, after_in_child=_after_fork_in_child)


def check_can_compile() -> None:
  """Raises RuntimeError in a process forked after the client was created (see above)."""
  if _forked_child:
    raise RuntimeError(
        "minijax cannot compile in a process forked after its XLA client was created: "
        "jaxlib's compiler threads did not survive the fork, and compiling would hang. "
        "Compile before forking (executables compiled then still run in the child), or "
        "start processes with multiprocessing's 'spawn' start method.")


def _refuse_device_count_change(n: int) -> None:
  if _client is not None and n != len(_local):
    raise RuntimeError(
        "jax_num_cpu_devices config should be updated before backends are initialized: "
        f"num_cpu_devices cannot change to {n}, the XLA client already exists with "
        f"{len(_local)} device(s). Set it (or {NUM_DEVICES_ENV}) before the first minijax "
        "computation.")


config.guard("num_cpu_devices", _refuse_device_count_change)


def get_client() -> Client:
  """The process's CPU client, created on first use (thread-safe)."""
  client = _client
  if client is not None:
    return client
  with _lock:
    if _client is None:
      _create_client()
    return _client


def client_created() -> bool:
  return _client is not None


def set_distributed(distributed_client, node_id: int, num_nodes: int,
                    make_collectives: Callable, num_devices: int | None) -> None:
  """Makes the client, when it is created, one of `num_nodes` processes (see
  `runtime/distributed.py`)."""
  with _lock:
    if _client is not None:
      raise RuntimeError("the XLA client exists already; initialize the distributed runtime "
                         "before any computation")
    _distributed.update(client=distributed_client, node_id=node_id, num_nodes=num_nodes,
                        make_collectives=make_collectives, num_devices=num_devices)


def _create_client() -> None:
  global _client, _devices, _local
  if _distributed:
    dist = _distributed["client"]
    client = xla_client.make_cpu_client(
        distributed_client=dist, node_id=_distributed["node_id"],
        num_nodes=_distributed["num_nodes"], collectives=_distributed["make_collectives"](dist),
        num_devices=_distributed["num_devices"] or config.read_env_again("num_cpu_devices"))
  else:
    client = xla_client.make_cpu_client(num_devices=config.read_env_again("num_cpu_devices"))
  _devices = tuple(client.devices())
  _local = tuple(client.local_devices())
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


def _check_backend(backend) -> None:
  """`backend` (JAX's argument of the device queries) must name minijax's CPU client."""
  if backend is None or backend is _client or (isinstance(backend, str)
                                                and backend.lower() == "cpu"):
    return
  raise RuntimeError(f"Unknown backend: '{backend}' requested, but no platforms that are "
                     f"instances of {backend} are present. Platforms present are: cpu")


def devices(backend=None) -> list[Device]:
  """Every device (of every process); `backend` may only be "cpu", as in JAX on a CPU."""
  get_client()
  _check_backend(backend)
  return list(_devices)


def local_devices(process_index: int | None = None, backend=None,
                  host_id: int | None = None) -> list[Device]:
  """The devices of this process (or of `process_index`)."""
  get_client()
  _check_backend(backend)
  index = process_index if process_index is not None else host_id
  if index is None:
    return list(_local)
  return [d for d in _devices if d.process_index == index]


def device_count(backend=None) -> int:
  _check_backend(backend)
  get_client()
  return len(_devices)


def local_device_count(backend=None) -> int:
  _check_backend(backend)
  get_client()
  return len(_local)


def process_index(backend=None) -> int:
  _check_backend(backend)
  return get_client().process_index()


def process_count(backend=None) -> int:
  _check_backend(backend)
  get_client()
  return max(d.process_index for d in _devices) + 1


def process_indices(backend=None) -> list[int]:
  """The indices of the processes that share the computation: 0 to process_count() - 1."""
  return list(range(process_count(backend)))


def _renamed(old: str, new: str, function: Callable) -> Callable:
  def alias(backend=None):
    warnings.warn(f"jax.{old} has been renamed to jax.{new}. This alias will eventually be "
                  "removed; please update your code.", UserWarning, stacklevel=2)
    return function(backend)
  alias.__name__ = alias.__qualname__ = old
  return alias


# JAX's old names of the process queries, which warn
host_count = _renamed("host_count", "process_count", process_count)
host_id = _renamed("host_id", "process_index", process_index)
host_ids = _renamed("host_ids", "process_indices", process_indices)


def default_device() -> Device:
  """Where values without a device go: `config.default_device` (JAX's
  `jax_default_device`, set by `with minijax.default_device(d):`), else device 0."""
  get_client()
  device = config.default_device
  return _local[0] if device is None or device == "cpu" else get_device(device)


def get_device(device: Device | int | None = None) -> Device:
  """Resolves `None` (the default device), an index, or a device object to one of the
  client's devices."""
  get_client()
  if device is None:
    device = config.default_device
    if device is None or device == "cpu":
      return _local[0]
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


# ----------------------------------------------------------------------------- transfer guards
# jaxlib itself guards its transfers (`guard_lib`): putting host values on a device, copies
# between devices, and reads (never guarded on CPU), each at the level of its direction,
# an explicit `device_put`/`device_get` being told apart by a thread-local mark.  The flags
# `transfer_guard_<direction>` set jaxlib's process-wide levels.

_guard_lib = _jax.guard_lib
_GUARD_LEVELS = {None: None, "allow": _guard_lib.TransferGuardLevel.ALLOW,
                 "log": _guard_lib.TransferGuardLevel.LOG,
                 "disallow": _guard_lib.TransferGuardLevel.DISALLOW,
                 "log_explicit": _guard_lib.TransferGuardLevel.LOG_EXPLICIT,
                 "disallow_explicit": _guard_lib.TransferGuardLevel.DISALLOW_EXPLICIT}


def _apply_transfer_guard(name: str, value) -> None:
  if name.startswith("transfer_guard_"):
    setattr(_guard_lib.global_state(), name[len("transfer_guard_"):], _GUARD_LEVELS[value])


def _apply_thread_transfer_guard(name: str, value) -> None:
  """A `with transfer_guard(...)` block guards its own thread's transfers only."""
  if name.startswith("transfer_guard_"):
    setattr(_guard_lib.thread_local_state(), name[len("transfer_guard_"):],
            _GUARD_LEVELS[value])


for _direction in ("host_to_device", "device_to_device", "device_to_host"):
  _apply_transfer_guard(f"transfer_guard_{_direction}",
                        getattr(config, f"transfer_guard_{_direction}"))
config.on_change(_apply_transfer_guard)
config.on_local_change(_apply_thread_transfer_guard)


class explicit_transfers:
  """`with explicit_transfers():` marks the transfers inside as explicit ones
  (`device_put`, `device_get`, and the constants staging places), which only the
  '*_explicit' guard levels log or refuse."""
  __slots__ = ("previous",)

  def __enter__(self):
    state = _guard_lib.thread_local_state()
    self.previous = state.explicit_device_put, state.explicit_device_get
    state.explicit_device_put = state.explicit_device_get = True

  def __exit__(self, *exc):
    state = _guard_lib.thread_local_state()
    state.explicit_device_put, state.explicit_device_get = self.previous
