"""`debug.callback` and `debug.print`: host functions that observe values, as in JAX.

    minijax.debug.callback(log, x, "step", i=i)   # calls log(x, "step", i=i) on the host
    minijax.debug.print("x = {x}, y = {}", y, x=x)

`debug_callback_p` has no outputs and one effect: `DebugEffect`, or `OrderedDebugEffect`
(with a token of its own) for `ordered=True`.  Every rule is in this file.  A call travels
like a tap: the lowering registers a tap consumer and emits a custom call that copies the
operands into the device's tap queue, and the device's receiver thread calls the function
with `HostArray`s over the copied bytes (Arrays, as JAX hands its callbacks `jax.Array`s,
valid for as long as the function keeps them; the native queues build them in C).
The call that runs the computation returns once the receiver has made its calls, as JAX's
does (`DebugEffect.delivered_by_return`), so a program finds their output right after it;
if a function raised, the call raises, as JAX's, a `JaxRuntimeError` caused by the first
exception (each is also logged on the "minijax.callbacks" logger; one raised on behalf of
a call made on a receiver thread waits for `minijax.effects_barrier()`, which raises it as
itself).  Outside `jit` the function is called at once, after the callbacks of
computations already dispatched, and its exception propagates.

Arguments that are not arrays (strings, None, functions) pass through unchanged; Python
numbers become arrays.  Under `jvp` and `grad` the primal values are delivered, once, and
never tangents; under `vmap` the function is called once per batch element, in order.
`debug.print` formats with `str.format` (unused arguments raise ValueError when the call
is traced), under numpy's print options of that moment, 0-d arrays as Python scalars, and
writes one line to `sys.stdout` when it runs.

Two kinds of call run during the computation instead, as all of JAX's do: `debug.log`'s
(a host call, so that its record exists when the computation returns), and, in a module
over several devices, `partitioned=True` ones: jaxlib's partitioned Python callback, which
XLA's partitioner hands each device's shards of the operands, so every device calls the
function with its own shards.
"""
from __future__ import annotations

import dataclasses
import logging
import string
import sys
from typing import Any, Callable

import numpy as np

from minijax.tree_util import internal as tree_util
from minijax.callbacks import common
from minijax.core import pretty
from minijax.core.effects import Effect
from minijax.core.jaxpr import user_source_info
from minijax.core.primitive import Primitive
from minijax.core.deliveries import Emit
from minijax.interpreters import ad, batching, deferral
from minijax.lax import remat as remat_lib
from minijax.lowering import mlir, spmd
from minijax.lowering.tokens import TokenSet
from minijax.runtime import backend, host_calls, taps
from minijax.runtime.array import is_concrete_array
from minijax.runtime.barrier import wait_for_effects

__all__ = ["debug_callback", "debug_print", "debug_log", "debug_callback_p", "DebugEffect",
           "OrderedDebugEffect"]


class DebugEffect(Effect):
  """A debug callback: runs even when unused, ordered only by its data dependencies, and
  has run when the call that ran its computation returns."""
  deferrable = True
  delivered_by_return = True


class OrderedDebugEffect(Effect):
  """An ordered debug callback: its calls keep program order (one token); on one device
  only, as in JAX."""
  ordered = True
  ordered_across_devices = False
  deferrable = True
  delivered_by_return = True


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()


# ----------------------------------------------------------------------------- API

def debug_callback(callback: Callable[..., None] | None = None, *args: Any,
                   ordered: bool = False, partitioned: bool = False, **kwargs: Any):
  """Calls `callback(*args, **kwargs)` on the host with the values `args` and `kwargs` have
  when the computation runs (see the module docstring).  The two-call form
  `debug_callback(ordered=True)(callback, *args, **kwargs)` takes the options first."""
  def bind(callback: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
    common.check_callable(callback, "minijax.debug.callback")
    flat, dynamic = common.flat_callback(callback, c_args, c_kwargs, results=None)
    debug_callback_p.bind(*dynamic, callback=flat,
                          effect=ordered_debug_effect if ordered else debug_effect,
                          partitioned=partitioned)

  if callback is not None:
    bind(callback, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError("debug_callback received unexpected arguments in the two-call form:"
                    f" {args=} {kwargs=}")
  return bind


class _FormatChecker(string.Formatter):
  """Formats nothing; raises ValueError for arguments the format does not use."""

  def format_field(self, value, format_spec):
    return ""

  def check_unused_args(self, used_args, args, kwargs):
    unused_args = [arg for i, arg in enumerate(args) if i not in used_args]
    unused_kwargs = [k for k in kwargs if k not in used_args]
    if unused_args:
      raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
    if unused_kwargs:
      raise ValueError(
          f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be passing "
          "an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should pass in a "
          "regular string.")


_format_checker = _FormatChecker()


def _logger() -> logging.Logger:
  """`debug.log`'s logger: "minijax.debug", or JAX's "jax._src.debugging" while minijax
  stands in for `jax` (`install_as_jax`), where JAX programs listen for it."""
  as_jax = getattr(sys.modules.get("jax"), "__minijax__", None) is not None
  return logging.getLogger("jax._src.debugging" if as_jax else "minijax.debug")


@dataclasses.dataclass(frozen=True)
class _Printer:
  """The host function of one `debug.print`: formats and writes a line to `sys.stdout`, or
  (`debug.log`) logs it at INFO on the "minijax.debug" logger, as from `where` (the file and
  line of the call)."""
  fmt: str
  np_printoptions: tuple
  has_placeholders: bool
  where: tuple | None = None

  def __call__(self, *args, **kwargs) -> None:
    args = [_scalar(a) for a in args]
    kwargs = {k: _scalar(v) for k, v in kwargs.items()}
    if self.has_placeholders:
      with np.printoptions(**dict(self.np_printoptions)):
        message = self.fmt.format(*args, **kwargs)
    else:
      message = " ".join((self.fmt, *map(str, args)))
    if self.where is None:
      sys.stdout.write(message + "\n")
    else:
      log = _logger()
      log.handle(log.makeRecord(log.name, logging.INFO, *self.where, message, (), None))

  @property
  def __name__(self):
    return "print"

  @property
  def runs_during_computation(self) -> bool:
    return self.where is not None


def _scalar(value):
  """A 0-d array as the Python scalar it holds (how JAX's arrays format)."""
  concrete = isinstance(value, np.ndarray) or is_concrete_array(value)
  return value.item() if concrete and value.ndim == 0 else value


def debug_print(fmt: str | None = None, *args: Any, ordered: bool = False,
                partitioned: bool = False, skip_format_check: bool = False,
                _use_logging: bool = False, **kwargs: Any):
  """Prints `fmt.format(*args, **kwargs)` on the host with the values the arguments have
  when the computation runs (see the module docstring).  The two-call form
  `debug_print(ordered=True)(fmt, *args, **kwargs)` takes the options first."""
  def bind(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
    if not skip_format_check:
      _format_checker.format(fmt, *c_args, **c_kwargs)
    has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
    where = None
    if _use_logging:
      info = user_source_info()
      where = (info.file, info.line) if info is not None else ("(unknown file)", 0)
    printer = _Printer(fmt, tuple(np.get_printoptions().items()), has_placeholders, where)
    debug_callback(printer, *c_args, ordered=ordered, partitioned=partitioned, **c_kwargs)

  if fmt is not None:
    bind(fmt, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError("debug_print received unexpected arguments in the two-call form:"
                    f" {args=} {kwargs=}")
  return bind


def debug_log(fmt: str | None = None, *args: Any, **kwargs: Any):
  """`debug_print`, whose lines go to the "minijax.debug" logger (INFO, with the file and
  line of the call) instead of `sys.stdout`."""
  return debug_print(fmt, *args, _use_logging=True, **kwargs)


# ----------------------------------------------------------------------------- the primitive
# Params: callback (a FlatCallback of the dynamic leaves), effect (DebugEffect or
# OrderedDebugEffect) and partitioned (whether each device calls it with its own shards).

debug_callback_p = Primitive("debug_callback")
debug_callback_p.multiple_results = True


def _debug_callback_abstract_eval(*avals, callback, effect, partitioned):
  return [], frozenset([effect])


debug_callback_p.def_effectful_abstract_eval(_debug_callback_abstract_eval)


def _debug_callback_impl(*args, callback, effect, partitioned):
  wait_for_effects()  # after the calls of computations dispatched before this one
  callback(*common.host_args(args))
  return []


debug_callback_p.def_impl(_debug_callback_impl)


def _debug_callback_remat(saveable: bool, inputs_recomputed: bool, params: dict
                          ) -> tuple[bool, bool]:
  """Inside `checkpoint` under reverse mode a debug callback runs in the forward pass, and
  again in the backward pass when the policy does not let it be saved or when all it reads
  is recomputed there anyway (so it shows what the backward pass computes), as JAX's does."""
  return True, (not saveable) or inputs_recomputed


remat_lib.remat_effect_rules[debug_callback_p] = _debug_callback_remat


def _synchronous(callback: common.FlatCallback) -> bool:
  """Whether `callback` runs while the computation runs, before its results are ready (a
  host call), rather than on the receiver thread: `debug.log`'s, whose records a program
  reads as soon as the computation returns, as with JAX, and `debug.breakpoint`'s, whose
  computation waits at the prompt.  Their host functions say so."""
  return getattr(callback.callback, "runs_during_computation", False)


def _deliverer(callback: common.FlatCallback, n: int) -> Callable:
  """The tap function that delivers the calls of `callback` (of `n` array leaves): the
  receiver calls it with the array (`n == 1`) or the tuple of arrays, and the transforms.
  One per callback, so that equal call sites share one tap consumer."""
  if callback.deliverer is None:
    fn = callback.callback if callback.direct else callback
    where = f"debug callback {callback.__name__}"
    report = host_calls.file_async_exception
    if n == 1:
      def deliver(x, transforms):
        try:
          fn(x)
        except BaseException as e:  # noqa: BLE001 - raised by the next effects_barrier
          report(e, where)
    else:
      def deliver(xs, transforms):
        try:
          fn(*xs)
        except BaseException as e:  # noqa: BLE001
          report(e, where)
    callback.deliverer = deliver
  return callback.deliverer


def _debug_callback_lowering(ctx, *args, callback, effect, partitioned):
  if common.partly_manual(ctx):
    return common.lower_once_per_block(
        ctx, debug_callback_p, args, dict(callback=callback, effect=effect,
                                          partitioned=partitioned), returns_args=False)
  token = ctx.tokens_in.get(effect) if effect.ordered else None
  if partitioned and ctx.module_context.positions is not None:
    token = _lower_partitioned(ctx, callback, args, token)
    if effect.ordered:
      ctx.set_tokens_out(TokenSet({effect: token}))
    return []
  if _synchronous(callback):
    call = common.FlatCallback(callback.callback, callback.in_tree, callback.static,
                               results=0, api="debug.callback", device=callback.device)
    _, token = common.lower_host_call(ctx, call, args, [], token, has_side_effect=True)
    if effect.ordered:
      ctx.set_tokens_out(TokenSet({effect: token}))
    return []
  n = len(args)
  treedef = (tree_util.tree_structure(0) if n == 1
             else tree_util.treedef_tuple([tree_util.tree_structure(0)] * n))
  consumer_id = taps.register_consumer(_deliverer(callback, n), (), treedef, ctx.avals_in,
                                       owner=ctx.module_context.keepalives,
                                       host_arrays_on=backend.get_device(None))
  token = common.emit_queue_call(ctx, consumer_id, args, token)
  if effect.ordered:
    ctx.set_tokens_out(TokenSet({effect: token}))
  return []


mlir.register_lowering(debug_callback_p, _debug_callback_lowering)


def _debug_callback_deferral(eqn, args, ctx):
  """Deferred (`tap_delivery`): the operands leave as outputs, delivered as the tap
  consumer of the lowering would deliver them; `debug.log`'s calls and partitioned ones
  run during the computation, so they cannot be deferred."""
  callback = eqn.params["callback"]
  if eqn.params["partitioned"] or _synchronous(callback):
    raise deferral.CannotDefer("a debug callback that runs during the computation")
  n = len(args)
  treedef = (tree_util.tree_structure(0) if n == 1
             else tree_util.treedef_tuple([tree_util.tree_structure(0)] * n))
  consumer = taps.make_consumer(_deliverer(callback, n), (), treedef,
                                [v.aval for v in eqn.invars],
                                host_arrays_on=backend.get_device(None))
  return [], list(args), Emit(consumer.deliver_values, n, f"debug callback {callback.__name__}")


deferral.deferral_rules[debug_callback_p] = _debug_callback_deferral


class _ShardCall:
  """The host function of a partitioned debug callback (jaxlib's Python callback, which
  each device calls with its own shards, numpy views valid during the call): calls the
  callback with Arrays of copies, at once; an exception is filed for the next
  `effects_barrier`, as for other debug callbacks."""
  __slots__ = ("callback", "takes_token")

  def __init__(self, callback: common.FlatCallback, takes_token: bool):
    self.callback, self.takes_token = callback, takes_token

  def __call__(self, *args):
    shards = args[1:] if self.takes_token else args
    try:
      self.callback(*common.host_args([np.array(x) for x in shards]))
    except BaseException as e:  # noqa: BLE001 - raised by the next effects_barrier
      host_calls.file_async_exception(e, f"debug callback {self.callback.__name__}")
    return (None,) if self.takes_token else ()


def _lower_partitioned(ctx, callback: common.FlatCallback, args, token):
  """`partitioned=True` in a module over several devices: jaxlib's partitioned Python
  callback, which XLA's partitioner hands each device's shards of the operands (laid out as
  the partitioner chose) and runs on every device, as JAX does."""
  mctx = ctx.module_context
  index = len(mctx.host_callbacks)
  mctx.host_callbacks.append(_ShardCall(callback, token is not None))
  op = common.custom_call(_PARTITIONED_TARGET, token, args, [], {"index": np.uint64(index)},
                          has_side_effect=True, row_major_layouts=True)
  if mctx.axis_context is not None:
    op.attributes["mhlo.sharding"] = spmd.sharding_attr(spmd.side_effect_sharding(mctx))
  return op.results[0] if token is not None else None


_PARTITIONED_TARGET = "xla_ffi_partitioned_python_cpu_callback"


def _debug_callback_jvp(primals, tangents, **params):
  return debug_callback_p.bind(*primals, **params), []


def _debug_callback_transpose(cts, *args, **params):
  return [None] * len(args)


ad.primitive_jvps[debug_callback_p] = _debug_callback_jvp
ad.primitive_transposes[debug_callback_p] = _debug_callback_transpose


def _debug_callback_batching(args, dims, **params):
  common.batch_sequentially(lambda *xs: debug_callback_p.bind(*xs, **params), args, dims)
  return [], []


batching.primitive_batchers[debug_callback_p] = _debug_callback_batching


def _debug_callback_pp(params, names, indent) -> list[str]:
  return [f"callback={params['callback'].__name__}", f"effect={params['effect']!r}",
          *(["partitioned=True"] if params["partitioned"] else [])]


pretty.pp_rules[debug_callback_p] = _debug_callback_pp
