"""Host taps: `id_tap` and `id_print` behave like the identity and send values to the host.

    y = id_tap(tap_func, x)            # calls tap_func(x, transforms) on the host; y is x
    y = id_tap(tap_func, x, result=z)  # taps x, returns z
    id_print(x, what="activation")     # prints "what: activation" and x on the host

A tap is one primitive, `id_tap_p`, whose every rule is in this file.  Its `effect` param
is `OrderedTap()` (the default) or `UnorderedTap()` (`ordered=False`), and its abstract
evaluation is the identity plus that effect.  The lowering threads one token through every
`OrderedTap` equation, so taps on a device arrive in program order and, through the
runtime's tokens, in call order across calls; an unordered tap is ordered only by its data
dependencies.  Whether a tap takes a token is read from its effect, nowhere else.  The
lowering registers a consumer (tap function, transforms, tree structure, leaf types) with
the runtime, owned by the module being lowered (so that it lives as long as the executable
compiled from it, and no longer), and emits a custom call to the runtime's tap target
(`callbacks.common.emit_queue_call`), which copies the values into the device's tap queue; a receiver thread per device calls
the tap functions (see `minijax.runtime.taps`).

Transformations follow JAX's host_callback, in one of two semantics chosen by
`config.host_callback_semantics` (`MINIJAX_HOST_CALLBACK_SEMANTICS`), read when a tap is
traced (jit's caches are keyed on it):

* `seed` (the default), the seed file's: vmap taps the whole batch once and adds
  `('batch', {'batch_dims': ...})` to `transforms`; jvp taps the primals and then the
  tangents with `'jvp'`; reverse mode taps the primals in the forward pass (when they are
  computed) and the cotangents with `'jvp', 'transpose'`.  Tangents and cotangents of
  integer and boolean values (float0) are tapped as boolean zeros, as JAX 0.4 showed them.
  `id_print` lays containers out one element per line, in square brackets, and extra
  keyword arguments of `id_tap` are bound to the tap function with a FutureWarning.
* `jax`, JAX 0.4.34's, whose taps are its callbacks: vmap taps once per batch element, in
  order, with no transforms (an ordered tap too, where JAX refuses to vmap its ordered
  io_callback); jvp and grad tap the primals only (JAX dropped the tangent and cotangent
  taps in 0.2.27; a custom_jvp or custom_vjp taps them where wanted); `id_print` lays
  tuples out as `( a b )`, lists as `[ a b ]` and dicts as
  `{ k=v ... }`, on one line when they fit in 80 columns; extra keyword arguments of
  `id_tap` raise TypeError.

The API is JAX 0.4.34's in both: `tap_with_device=True` calls
`tap_func(arg, transforms, device=device)`, `device_index` names the device that taps in an
SPMD program (a minijax computation taps on the device it runs on), `callback_flavor`
(`CallbackFlavor`) picks the tap's ordering (IO_CALLBACK: ordered; DEBUG and PURE:
unordered), and `barrier_wait(logging_name=None)` raises `CallbackException` (the same class
as `TapFunctionException`) carrying the last failure's type, text and traceback.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import sys
import threading
import warnings
from typing import Any, Callable

import numpy as np

from minijax.tree_util import internal as tree_util
from minijax.api_util import function_key
from minijax.callbacks import common as callbacks_common
from minijax.config import config
from minijax.core import axes as axes_lib
from minijax.core import dtypes, pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.dtypes import PYTHON_SCALARS
from minijax.core.effects import Effect
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer
from minijax.core.deliveries import Emit
from minijax.interpreters import ad, batching, deferral
from minijax.lax import remat as remat_lib
from minijax.lowering import mlir, spmd
from minijax.lowering.tokens import TokenSet
from minijax.runtime import taps as tap_runtime
from minijax.runtime import backend
from minijax.runtime.array import Array
from minijax.runtime.taps import (TapFunctionException, barrier_wait, stop_outfeed_receiver,
                                  tap_stats)

__all__ = ["id_tap", "id_print", "call", "barrier_wait", "TapFunctionException",
           "CallbackException",
           "CallbackFlavor", "stop_outfeed_receiver", "outfeed_receiver", "tap_stats",
           "id_tap_p", "OrderedTap", "UnorderedTap"]

CallbackException = TapFunctionException  # JAX 0.4.34's name for the exception of barrier_wait


class CallbackFlavor(enum.Enum):
  """Which of JAX's callbacks a JAX 0.4.34 host callback was built on; in minijax it picks
  the tap's ordering: IO_CALLBACK taps are ordered, DEBUG and PURE taps unordered."""
  IO_CALLBACK = 1
  PURE = 2
  DEBUG = 3


class OrderedTap(Effect):
  """Taps that must reach the host in program order (they get a token)."""
  ordered = True
  deferrable = True


class UnorderedTap(Effect):
  """Taps ordered only by data dependencies (no token)."""
  ordered = False
  deferrable = True


ordered_tap = OrderedTap()
unordered_tap = UnorderedTap()


# ----------------------------------------------------------------------------- API

def _check_leaves(leaves, what: str) -> None:
  for leaf in leaves:
    if isinstance(leaf, (Array, Tracer, np.ndarray, np.generic, *PYTHON_SCALARS)):
      continue
    raise TypeError(f"{what} must be a pytree of arrays or scalars, but it has a leaf of "
                    f"type {type(leaf).__name__}: {leaf!r:.60}")


def _semantics() -> str:
  semantics = config.host_callback_semantics
  if semantics not in ("seed", "jax"):
    raise ValueError(f"minijax.config.host_callback_semantics is {semantics!r}; expected "
                     "'seed' or 'jax' (or set MINIJAX_HOST_CALLBACK_SEMANTICS)")
  return semantics


class _WithDevice:
  """A tap function called as `func(arg, transforms, device=device)` (tap_with_device)."""
  __slots__ = ("func",)

  def __init__(self, func):
    self.func = func

  def __call__(self, arg, transforms, *, device):
    return self.func(arg, transforms, device=device)

  def _function_key(self):
    # The wrapper of a function is the same tap function as any other wrapper of it, and
    # caches see that (`api_util.function_key`), however the function defines `__eq__`.
    return (type(self), function_key(self.func))

  def __eq__(self, other):
    return type(other) is type(self) and other._function_key() == self._function_key()

  def __hash__(self):
    return hash(self._function_key())

  def __repr__(self):
    return f"{type(self).__name__}({self.func!r})"


class _WithoutDevice(_WithDevice):
  """A tap function called as `func(arg, transforms)` although it accepts `device=`: under
  the jax semantics only `tap_with_device=True` passes the device."""
  __slots__ = ()

  def __call__(self, arg, transforms):
    return self.func(arg, transforms)


def _accepts_device(func) -> bool:
  try:
    p = inspect.signature(func).parameters.get("device")
  except (TypeError, ValueError):
    return False
  return p is not None and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)


def _check_device_index(device_index) -> None:
  if not isinstance(device_index, (int, np.integer)) or isinstance(device_index, bool):
    raise TypeError(f"device_index must be an int, got {type(device_index).__name__}")
  n = len(backend.local_devices())
  if not 0 <= device_index < n:
    raise ValueError(f"device_index={device_index} is out of range: there are {n} local "
                     "device(s). (A minijax computation taps on the device it runs on; "
                     "device_index only chooses among the devices of an SPMD program.)")


def id_tap(tap_func: Callable, arg: Any, *, result: Any = None, tap_with_device: bool = False,
           device_index: int = 0, callback_flavor: CallbackFlavor = CallbackFlavor.IO_CALLBACK,
           ordered: bool | None = None, **kwargs):
  """Returns `arg` (or `result`) and calls `tap_func(arg, transforms)` on the host with the
  runtime value of `arg` (with `device=` the device it came from when `tap_with_device`).

  `ordered` (minijax's) overrides the ordering `callback_flavor` gives: with
  `ordered=False` the tap is ordered only by data dependency.  Under the seed semantics a
  tap function that takes a `device` keyword receives it even without `tap_with_device`,
  and extra keyword arguments are bound to `tap_func` (deprecated); under the jax semantics
  they raise TypeError."""
  if kwargs:
    if _semantics() == "jax":
      raise TypeError("Support for **kwargs in ``id_tap`` has been removed. Instead, "
                      "pre-apply keyword arguments, either by using a closure or by passing "
                      f"``functools.partial(tap_func, **kwargs)``. Got {sorted(kwargs)}.")
    warnings.warn("passing keyword arguments for the tap function through id_tap is "
                  "deprecated; use functools.partial(tap_func, **kwargs)", FutureWarning,
                  stacklevel=2)
    tap_func = functools.partial(tap_func, **kwargs)
  if not callable(tap_func):
    raise TypeError(f"id_tap expects a callable tap_func, got {type(tap_func).__name__}: "
                    f"{tap_func!r:.60}")
  if not isinstance(callback_flavor, CallbackFlavor):
    raise TypeError(f"callback_flavor must be a CallbackFlavor, got {callback_flavor!r:.60}")
  _check_device_index(device_index)
  if tap_with_device:
    tap_func = _WithDevice(tap_func)
  elif _semantics() == "jax" and _accepts_device(tap_func):
    tap_func = _WithoutDevice(tap_func)
  if ordered is None:
    ordered = callback_flavor is CallbackFlavor.IO_CALLBACK
  flat_args, arg_treedef = tree_util.tree_flatten(arg)
  _check_leaves(flat_args, "the tapped value")
  params = dict(tap_func_=tap_func, arg_treedef_=arg_treedef, nr_tapped_args_=len(flat_args),
                transforms=(), effect=ordered_tap if ordered else unordered_tap)
  if result is None:
    return arg_treedef.unflatten(id_tap_p.bind(*flat_args, **params))
  flat_results, result_treedef = tree_util.tree_flatten(result)
  _check_leaves(flat_results, "result=")
  outs = id_tap_p.bind(*flat_args, *flat_results, **params)
  return result_treedef.unflatten(outs[len(flat_args):])


def id_print(arg: Any, *, result: Any = None, tap_with_device: bool = False,
             device_index: int = 0, output_stream=None, threshold=None,
             callback_flavor: CallbackFlavor = CallbackFlavor.IO_CALLBACK,
             ordered: bool | None = None, **kwargs):
  """Like `id_tap` with a tap function that prints `kwargs` (sorted by key, with
  `transforms`, and `device` with `tap_with_device`) on one line and then `arg`, arrays
  through `numpy.array2string`, laid out as the semantics in force says.  Inside `pmap` or
  `shard_map`, where every device prints, the line always names the device
  (`device: cpu:1`)."""
  printer = functools.partial(_print_consumer, output_stream=output_stream,
                              threshold=threshold, layout=_semantics(), **kwargs)
  tap_with_device = tap_with_device or axes_lib.spmd_axis_bound()
  return id_tap(printer, arg, result=result, tap_with_device=tap_with_device,
                device_index=device_index, callback_flavor=callback_flavor, ordered=ordered)


_deprecated_id_print = id_print  # JAX 0.4.34's own name for it (its tests import it)


def call(callback_func: Callable, arg: Any, *, result_shape: Any = None,
         call_with_device: bool = False, device_index: int = 0,
         callback_flavor: CallbackFlavor = CallbackFlavor.IO_CALLBACK):
  """Calls `callback_func(arg)` on the host and returns its result, shaped like
  `result_shape` (a pytree of numbers, or of values with `shape` and `dtype`; None or `()`
  for no result), as JAX 0.4.34's `host_callback.call` does on its callbacks: an ordered
  `io_callback` (IO_CALLBACK), a `pure_callback` (PURE) or a `debug.callback` (DEBUG, only
  without results), run from local device `device_index`."""
  from minijax.callbacks.debug import debug_callback
  from minijax.callbacks.io import io_callback
  from minijax.callbacks.pure import pure_callback
  from minijax.sharding import SingleDeviceSharding
  if callback_flavor is CallbackFlavor.DEBUG and result_shape is not None:
    raise NotImplementedError("The `DEBUG` flavor of host_callback.call takes no "
                              "`result_shape` (it has no results); use IO_CALLBACK or PURE.")
  if call_with_device:
    raise NotImplementedError("host_callback.call does not support `call_with_device` (as "
                              "JAX's on its callbacks); see "
                              "https://github.com/jax-ml/jax/issues/20385.")
  callbacks_common.check_callable(callback_func, "host_callback.call")
  _check_device_index(device_index)
  _check_leaves(tree_util.tree_leaves(arg), "the argument of host_callback.call")
  flat_shapes, result_tree = tree_util.tree_flatten(result_shape)
  try:
    flat_shapes = [ShapedArray(np.shape(r), dtypes.canonicalize_dtype(
        r.dtype if hasattr(r, "dtype") else dtypes.dtype_and_weak_type(r)[0]))
        for r in flat_shapes]
  except Exception:
    raise ValueError("result_shape should be a pytree of values with structure matching the "
                     "expected result of the callback function. The values must be either "
                     "numeric scalars, or must have 'shape' and 'dtype' attributes. Got "
                     f"{result_shape}") from None
  shapes = result_tree.unflatten(flat_shapes)
  if callback_flavor is CallbackFlavor.DEBUG:
    debug_callback(callback_func, arg)
    return None
  sharding = SingleDeviceSharding(backend.local_devices()[device_index])
  if callback_flavor is CallbackFlavor.PURE:
    # (JAX 0.4.34's pure_callback, not vectorized, ran under vmap once per batch element)
    return pure_callback(callback_func, shapes, arg, sharding=sharding,
                         vmap_method="sequential")
  return io_callback(callback_func, shapes, arg, sharding=sharding, ordered=True)


class _LegacyFlag:
  """JAX 0.4.34's `_HOST_CALLBACK_LEGACY` flag, read by its tests: minijax's host callbacks
  are never the legacy (outfeed) ones."""
  value = False


_HOST_CALLBACK_LEGACY = _LegacyFlag()


def _use_outfeed(platform: str) -> bool:
  """JAX 0.4.34's: whether host callbacks on `platform` use outfeed; in minijax never."""
  return False


@contextlib.contextmanager
def outfeed_receiver():
  """Deprecated: the receivers start by themselves.  Ends with a `barrier_wait()`."""
  warnings.warn("outfeed_receiver is unnecessary and deprecated: receivers start "
                "automatically; use barrier_wait() to wait for taps", DeprecationWarning,
                stacklevel=3)
  try:
    yield
  finally:
    barrier_wait()


# ----------------------------------------------------------------------------- printing

_WIDTH = 80  # JAX's pretty printer's line width


def _pp_lines(value, threshold, layout: str = "seed", column: int = 0) -> list[str]:
  """The printed lines of a tapped value starting at `column`.

  `seed`: tuples and lists in square brackets and dicts as `{ k=v ... }`, one element per
  line.  `jax` (JAX 0.4.34's printer): tuples as `( a b )`, lists as `[ a b ]`, dicts as
  `{ k=v ... }`, on one line when that fits in 80 columns, else one element per line;
  arrays as `str` prints them."""
  if isinstance(value, (tuple, list, dict)):
    if isinstance(value, dict):
      opener, closer = "{ ", " }"
      items = [(f"{k}=", v) for k, v in sorted(value.items())]
    elif layout == "jax" and isinstance(value, tuple):
      opener, closer = "( ", " )"
      items = [("", v) for v in value]
    else:
      opener, closer = "[ ", " ]"
      items = [("", v) for v in value]
    if layout == "jax":
      flat = [_pp_lines(v, threshold, layout, 0) for _, v in items]
      if all(len(lines) == 1 for lines in flat):
        line = opener + " ".join(k + lines[0] for (k, _), lines in zip(items, flat)) + closer
        if column + len(line) <= _WIDTH:
          return [line]
    inner = column + len(opener)
    return _bracket(opener, [_prefix(k, _pp_lines(v, threshold, layout, inner + len(k)))
                             for k, v in items], closer)
  if layout == "jax" and hasattr(value, "__array__"):
    # JAX 0.4.34 handed its taps jax.Arrays and printed them with str(), under jit or not
    # (a 0-d float as `3.0`; `threshold` unused)
    return str(np.asarray(value)).split("\n")
  if isinstance(value, np.ndarray):
    return np.array2string(value, threshold=threshold).split("\n")
  return str(value).split("\n")


def _prefix(prefix: str, lines: list[str]) -> list[str]:
  pad = " " * len(prefix)
  return [prefix + lines[0]] + [pad + line for line in lines[1:]]


def _bracket(open_: str, items: list[list[str]], close: str) -> list[str]:
  lines = [line for item in items for line in item] or [""]
  lines = _prefix(open_, lines)
  lines[-1] += close
  return lines


def _print_consumer(arg, transforms, *, output_stream=None, threshold=None, layout="seed",
                    **kwargs):
  # `device` comes in `kwargs`, from tap_with_device only (a `device` parameter here would
  # make the seed semantics pass it to every print).
  if transforms:
    kwargs["transforms"] = [(name, params) if params else name for name, params in transforms]
  chunks = [" ".join(f"{k}: {v}" for k, v in sorted(kwargs.items()))] if kwargs else []
  chunks.append("\n".join(_pp_lines(arg, threshold, layout)))
  # As the seed: the header and the value, each a newline-ended write; the lock keeps the
  # receivers of several devices from interleaving them.
  with _print_lock:
    for chunk in chunks:
      if output_stream is not None:
        output_stream.write(chunk + "\n")
      else:
        sys.stdout.write(chunk + "\n")
    if output_stream is None:
      sys.stdout.flush()


_print_lock = threading.Lock()


# ----------------------------------------------------------------------------- the primitive
# Params: tap_func_, arg_treedef_, nr_tapped_args_ (the leading operands that are tapped;
# the rest only pass through, for `result=` and data dependencies), transforms (a tuple of
# `(name, *params)`, innermost first) and effect (an OrderedTap or UnorderedTap).

id_tap_p = Primitive("id_tap")
id_tap_p.multiple_results = True


def _add_transform(params: dict, name: str, *transform_params) -> dict:
  return dict(params, transforms=params["transforms"] + ((name, *transform_params),))


def _id_tap_abstract_eval(*avals, effect, **params):
  return list(avals), frozenset([effect])


id_tap_p.def_effectful_abstract_eval(_id_tap_abstract_eval)


def _id_tap_lowering(ctx, *args, tap_func_, arg_treedef_, nr_tapped_args_, transforms, effect):
  if callbacks_common.partly_manual(ctx):
    return callbacks_common.lower_once_per_block(
        ctx, id_tap_p, args, dict(tap_func_=tap_func_, arg_treedef_=arg_treedef_,
                                  nr_tapped_args_=nr_tapped_args_, transforms=transforms,
                                  effect=effect), returns_args=True)
  consumer_id = tap_runtime.register_consumer(tap_func_, transforms, arg_treedef_,
                                              ctx.avals_in[:nr_tapped_args_],
                                              owner=ctx.module_context.keepalives)
  token = ctx.tokens_in.get(effect) if effect.ordered else None
  token = callbacks_common.emit_queue_call(
      ctx, consumer_id, args[:nr_tapped_args_], token,
      sharding=spmd.side_effect_sharding(ctx.module_context))
  if effect.ordered:
    ctx.set_tokens_out(TokenSet({effect: token}))
  # the tapped values as the call hands them back (aliased in place), the rest unchanged
  replaced = ctx.replaced_operands or {}
  return [replaced.get(i, arg) for i, arg in enumerate(args)]


mlir.register_lowering(id_tap_p, _id_tap_lowering)


def _id_tap_deferral(eqn, args, ctx):
  """Deferred (`tap_delivery`): the tapped operands leave as outputs, for the same consumer
  the lowering would register, which the plan holds."""
  n = eqn.params["nr_tapped_args_"]
  consumer = tap_runtime.make_consumer(eqn.params["tap_func_"], eqn.params["transforms"],
                                       eqn.params["arg_treedef_"],
                                       [v.aval for v in eqn.invars[:n]])
  return list(args), list(args[:n]), Emit(consumer.deliver_values, n, repr(consumer))


deferral.deferral_rules[id_tap_p] = _id_tap_deferral


def _id_tap_remat(saveable: bool, inputs_recomputed: bool, params: dict) -> tuple[bool, bool]:
  """Inside `checkpoint` under reverse mode an unordered tap of the `jax` semantics (JAX
  0.4.34's DEBUG flavor, a `debug.callback`) runs again in the backward pass as a debug
  callback does; otherwise a tap runs once, in the forward pass."""
  if _semantics() == "jax" and not params["effect"].ordered:
    return True, (not saveable) or inputs_recomputed
  return True, False


remat_lib.remat_effect_rules[id_tap_p] = _id_tap_remat


def _instantiate(tangent, aval):
  """A concrete value for a symbolic zero (or a missing cotangent) of type `aval`."""
  return ad.instantiate_zeros(ad.Zero(aval) if tangent is None else tangent)


def _tappable(value, aval):
  """What a tap sends for a (co)tangent: float0 values (of integer and boolean primals),
  which have no device representation, travel as boolean zeros, as in JAX 0.4."""
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, np.bool_)
  return value


def _id_tap_jvp(primals, tangents, **params):
  out_primals = id_tap_p.bind(*primals, **params)
  if _semantics() == "jax":
    return out_primals, list(tangents)  # JAX 0.4.34 taps primals only
  # One primal output rides along, untapped, so the tangent tap comes after the primal one.
  avals = [get_aval(p).tangent_aval() for p in primals]
  tapped = [_tappable(_instantiate(t, a), a) for t, a in zip(tangents, avals)]
  out_tangents = id_tap_p.bind(*tapped, out_primals[0], **_add_transform(params, "jvp"))
  return out_primals, [ad.Zero(a) if a.dtype == dtypes.float0 else t
                       for t, a in zip(out_tangents[:-1], avals)]


def _ct_aval(arg):
  aval = arg.aval if ad.is_undefined_primal(arg) else get_aval(arg)
  return aval.tangent_aval()


def _id_tap_transpose(cts, *args, **params):
  avals = [_ct_aval(a) for a in args]
  tapped = [_tappable(_instantiate(ct, aval), aval) for ct, aval in zip(cts, avals)]
  ct_args = id_tap_p.bind(*tapped, **_add_transform(params, "transpose"))
  return [(ad.Zero(aval) if aval.dtype == dtypes.float0 else ct)
          if ad.is_undefined_primal(a) else None
          for a, ct, aval in zip(args, ct_args, avals)]


def _id_tap_batching(batched_args, batch_dims, **params):
  if _semantics() == "jax":  # JAX 0.4.34's taps are its callbacks: once per batch element
    outs = callbacks_common.batch_sequentially(lambda *xs: id_tap_p.bind(*xs, **params),
                                               batched_args, batch_dims)
    return outs, [0] * len(outs)
  tapped_dims = tuple(batch_dims[:params["nr_tapped_args_"]])
  outs = id_tap_p.bind(*batched_args, **_add_transform(params, "batch", tapped_dims))
  return outs, list(batch_dims)


ad.primitive_jvps[id_tap_p] = _id_tap_jvp
ad.primitive_transposes[id_tap_p] = _id_tap_transpose
batching.primitive_batchers[id_tap_p] = _id_tap_batching


def _id_tap_pp(params, names, indent):
  func = params["tap_func_"]
  while hasattr(func, "func") and not hasattr(func, "__name__"):  # partials, device wrappers
    func = func.func
  lines = [f"tap_func_={getattr(func, '__name__', type(func).__name__)}",
           f"nr_tapped_args_={params['nr_tapped_args_']}"]
  if params["transforms"]:
    lines.append(f"transforms={params['transforms']}")
  return lines


pretty.pp_rules[id_tap_p] = _id_tap_pp
