"""The device side of a tap: the custom call that lowering emits, for either mechanism.

`native` (the default) calls minijax's own XLA FFI handler, registered for the CPU platform
as `minijax_tap` as soon as the XLA client exists.  The handler copies the tapped buffers
into its device's queue without touching Python, so dispatch stays asynchronous:

    %t1 = mhlo.custom_call @minijax_tap(%t0, %x, %y) {api_version = 4 : i32,
        has_side_effect = true, backend_config = {consumer = 7 : i64}}
        : (!mhlo.token, tensor<3xf32>, tensor<i32>) -> !mhlo.token

`callback` calls jaxlib's `xla_ffi_python_cpu_callback`, whose `backend_config` holds the
index of a Python callable in the list of host callbacks the executable is compiled with.
That callable (a `TapCallback`) copies the arrays into the same per-device queue, so tap
functions still run on the receiver thread, in order, counted, and covered by barriers.

An ordered tap takes its effect's token as first operand and returns the next one; an
unordered tap has no token and no results, and `has_side_effect` keeps XLA from dropping it.
"""
from __future__ import annotations

from typing import Any, Sequence

from jaxlib import xla_client
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.config import config
from minijax.runtime import backend
from minijax.runtime.taps import queues as queues_mod
from minijax.runtime.taps import receiver

NATIVE_TARGET = "minijax_tap"
CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
MECHANISMS = ("native", "callback")


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


class TapCallback:
  """The host callable behind one callback-mechanism tap.

  jaxlib calls it on the executing thread, holding the GIL, with numpy views of the device
  buffers (and None for the token); it copies them into its device's queue.  Which device
  that is comes from `bind_host_callbacks`, which the compile step applies; unbound, it is
  the device with ordinal 0.
  """
  __slots__ = ("consumer_id", "ordered", "ordinal")

  def __init__(self, consumer_id: int, ordered: bool, ordinal: int = 0):
    self.consumer_id = consumer_id
    self.ordered = ordered
    self.ordinal = ordinal

  def __call__(self, *args):
    if self.ordered:
      queues_mod.queues.push(self.ordinal, self.consumer_id, args[1:])
      return (None,)
    queues_mod.queues.push(self.ordinal, self.consumer_id, args)
    return ()

  def for_ordinal(self, ordinal: int) -> "TapCallback":
    return TapCallback(self.consumer_id, self.ordered, ordinal)

  def __repr__(self):
    return (f"TapCallback(consumer={self.consumer_id}, ordered={self.ordered}, "
            f"ordinal={self.ordinal})")


def bind_host_callbacks(host_callbacks: Sequence[Any], device: Any) -> list:
  """The host callbacks to compile for `device`: tap callbacks bound to its queue, others
  unchanged.  The compile step calls this on the list the lowering filled."""
  ordinal = receiver.device_ordinal(device)
  return [cb.for_ordinal(ordinal) if isinstance(cb, TapCallback) else cb for cb in host_callbacks]


def _i64(value: int) -> ir.IntegerAttr:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def emit_tap(consumer_id: int, token: ir.Value | None, operands: Sequence[ir.Value], *,
             host_callbacks: list) -> ir.Value | None:
  """Emits the custom call of one tap at the current MLIR insertion point.

  `consumer_id` comes from `register_consumer`.  With a `token` (an ordered tap) the call is
  sequenced after it and the new token is returned; without one (unordered) None is
  returned.  For the callback mechanism, the host callable is appended to `host_callbacks`
  (the module's list, which the compile step must pass to jaxlib after
  `bind_host_callbacks`).  Emitting a tap also starts the receivers if they are not running.
  """
  receiver.ensure_started()
  which = mechanism()
  ordered = token is not None
  inputs = ([token] if ordered else []) + list(operands)
  results = [mhlo.TokenType.get()] if ordered else []
  if which == "native":
    target = NATIVE_TARGET
    config_attr = ir.DictAttr.get({"consumer": _i64(consumer_id)})
  else:
    target = CALLBACK_TARGET
    index = len(host_callbacks)
    host_callbacks.append(TapCallback(consumer_id, ordered))
    config_attr = ir.DictAttr.get(
        {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), index)})
  op = mhlo.CustomCallOp(results, inputs, target, has_side_effect=True,
                         backend_config=config_attr,
                         api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4))
  return op.result if ordered else None


def _register_native_target(client) -> None:
  xla_client.register_custom_call_target(NATIVE_TARGET, queues_mod.queues.handler(),
                                         platform="cpu", api_version=1)


if queues_mod.native_available():
  backend.on_client_created(_register_native_target)
