"""The device side of a tap, for either mechanism: the custom-call targets and host callables.

The tap primitive's lowering rule (`experimental/host_callback.py`) emits a custom call to
one of two targets, chosen by `mechanism()`:

`native` (the default) calls minijax's own XLA FFI handler, registered here for the CPU
platform as `minijax_tap` as soon as the XLA client exists, and told its consumer by the
`consumer` attribute of its `backend_config`.  The handler copies the tapped buffers into
its device's queue without touching Python, so dispatch stays asynchronous.

`callback` calls jaxlib's `xla_ffi_python_cpu_callback`, whose `backend_config` holds the
index of a Python callable in the list of host callbacks the executable is compiled with.
That callable (a `TapCallback`) copies the arrays into the same per-device queue, so tap
functions still run on the receiver thread, in order, counted, and covered by barriers; the
compile step binds it to its device's queue (`bind_host_callbacks`).
"""
from __future__ import annotations

from typing import Any, Sequence

from jaxlib import xla_client

from minijax.config import TAP_MECHANISMS, config
from minijax.runtime import backend
from minijax.runtime.taps import queues as queues_mod
from minijax.runtime.taps import receiver

NATIVE_TARGET = "minijax_tap"
NATIVE_CONSUMER_ATTRIBUTE = "consumer"  # the backend_config entry the native handler reads
CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
MECHANISMS = TAP_MECHANISMS


def mechanism() -> str:
  """The tap mechanism new lowerings use: `config.tap_mechanism`, or "callback" (after one
  warning) when "native" is asked for but the extension is missing."""
  requested = config.tap_mechanism
  if requested not in MECHANISMS:
    raise ValueError(f"minijax.config.tap_mechanism is {requested!r}; expected one of "
                     f"{MECHANISMS} (or set MINIJAX_TAP_MECHANISM)")
  if requested == "native" and not queues_mod.native_available():
    queues_mod.warn_native_unavailable()
    return "callback"
  return requested


PER_PARTITION = "per partition"  # a `TapCallback.placement`: see there


class TapCallback:
  """The host callable behind one callback-mechanism tap.

  jaxlib calls it on the executing thread, holding the GIL, with numpy views of the device
  buffers (and None for the token); it copies them into its device's queue.  Which device
  that is comes from `placement` and from `ordinals`, the queue ordinals of the program's
  devices by position, which the compile step sets (`bind_host_callbacks`): `placement` is
  the position of the device the call runs on, or `PER_PARTITION` for a call that runs on
  every device of a manual region (shard_map, pmap), whose first operand after the token
  is then the executing partition's index (`mhlo.partition_id`).  Unbound, the one device
  is the one with ordinal 0.
  """
  __slots__ = ("consumer_id", "takes_token", "placement", "ordinals")

  def __init__(self, consumer_id: int, takes_token: bool, placement: int | str = 0,
               ordinals: tuple[int, ...] = (0,)):
    self.consumer_id = consumer_id
    self.takes_token = takes_token  # the call's first operand and only result is a token
    self.placement = placement
    self.ordinals = ordinals

  def __call__(self, *args):
    if self.takes_token:
      args = args[1:]
    if self.placement == PER_PARTITION:
      ordinal = self.ordinals[int(args[0])]
      args = args[1:]
    else:
      ordinal = self.ordinals[self.placement]
    queues_mod.queues.push(ordinal, self.consumer_id, args)
    return (None,) if self.takes_token else ()

  def bound(self, ordinals: tuple[int, ...]) -> "TapCallback":
    return TapCallback(self.consumer_id, self.takes_token, self.placement, ordinals)

  def __repr__(self):
    return (f"TapCallback(consumer={self.consumer_id}, takes_token={self.takes_token}, "
            f"placement={self.placement!r}, ordinals={self.ordinals})")


def bind_host_callbacks(host_callbacks: Sequence[Any], devices: Sequence[Any]) -> list:
  """The host callbacks to compile for `devices` (the program's, in order): tap callbacks
  bound to their queues, others unchanged.  The compile step calls this on the list the
  lowering filled."""
  ordinals = tuple(receiver.device_ordinal(d) for d in devices)
  return [cb.bound(ordinals) if isinstance(cb, TapCallback) else cb for cb in host_callbacks]


def _register_native_target(client) -> None:
  xla_client.register_custom_call_target(NATIVE_TARGET, queues_mod.queues.handler(),
                                         platform="cpu", api_version=1)


if queues_mod.native_available():
  backend.on_client_created(_register_native_target)
