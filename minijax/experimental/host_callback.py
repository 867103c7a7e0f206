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
the runtime and emits a custom call to the runtime's tap target (`emit_tap_custom_call`),
which copies the values into the device's tap queue; a receiver thread per device calls
the tap functions (see `minijax.runtime.taps`).

Transformations follow JAX's host_callback: vmap taps the whole batch once and adds
`('batch', {'batch_dims': ...})` to `transforms`; jvp taps the primals and then the tangents
with `'jvp'`; reverse mode taps the primals in the forward pass (when they are computed)
and the cotangents with `'jvp', 'transpose'`.
"""
from __future__ import annotations

import contextlib
import functools
import sys
import warnings
from typing import Any, Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax import tree_util
from minijax.core import axes as axes_lib
from minijax.core import pretty
from minijax.core.avals import get_aval
from minijax.core.dtypes import PYTHON_SCALARS
from minijax.core.effects import Effect
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer
from minijax.interpreters import ad, batching
from minijax.lowering import mlir, spmd
from minijax.lowering.tokens import TokenSet
from minijax.runtime import taps as tap_runtime
from minijax.runtime.array import Array
from minijax.runtime.taps import (TapFunctionException, barrier_wait, stop_outfeed_receiver,
                                  tap_stats)

__all__ = ["id_tap", "id_print", "barrier_wait", "TapFunctionException",
           "stop_outfeed_receiver", "outfeed_receiver", "tap_stats", "id_tap_p",
           "OrderedTap", "UnorderedTap"]


class OrderedTap(Effect):
  """Taps that must reach the host in program order (they get a token)."""
  ordered = True


class UnorderedTap(Effect):
  """Taps ordered only by data dependencies (no token)."""
  ordered = False


ordered_tap = OrderedTap()
unordered_tap = UnorderedTap()


# ----------------------------------------------------------------------------- API

def _check_leaves(leaves, what: str) -> None:
  for leaf in leaves:
    if isinstance(leaf, (Array, Tracer, np.ndarray, np.generic, *PYTHON_SCALARS)):
      continue
    raise TypeError(f"{what} must be a pytree of arrays or scalars, but it has a leaf of "
                    f"type {type(leaf).__name__}: {leaf!r:.60}")


def id_tap(tap_func: Callable, arg: Any, *, result: Any = None, ordered: bool = True, **kwargs):
  """Returns `arg` (or `result`) and calls `tap_func(arg, transforms)` on the host with the
  runtime value of `arg`.  With `ordered=False` the tap is ordered only by data dependency.
  A tap function that takes a `device` keyword also receives the device it came from."""
  if kwargs:
    warnings.warn("passing keyword arguments for the tap function through id_tap is "
                  "deprecated; use functools.partial(tap_func, **kwargs)", FutureWarning,
                  stacklevel=2)
    tap_func = functools.partial(tap_func, **kwargs)
  if not callable(tap_func):
    raise TypeError(f"id_tap expects a callable tap_func, got {type(tap_func).__name__}: "
                    f"{tap_func!r:.60}")
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


def id_print(arg: Any, *, result: Any = None, output_stream=None, threshold=None,
             ordered: bool = True, **kwargs):
  """Like `id_tap` with a tap function that prints `kwargs` (sorted by key, with
  `transforms`) on one line and then `arg`, arrays through `numpy.array2string`.  Inside
  `pmap` or `shard_map`, where every device prints, the line names the device too
  (`device: cpu:1`)."""
  consumer = _print_consumer_naming_device if axes_lib.spmd_axis_bound() else _print_consumer
  printer = functools.partial(consumer, output_stream=output_stream, threshold=threshold,
                              **kwargs)
  return id_tap(printer, arg, result=result, ordered=ordered)


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

def _pp_lines(value, threshold) -> list[str]:
  """The printed lines of a tapped value: lists as `[ a\\n  b ]`, dicts as `{ k=v ... }`."""
  if isinstance(value, (tuple, list)):
    return _bracket("[ ", [_pp_lines(v, threshold) for v in value], " ]")
  if isinstance(value, dict):
    return _bracket("{ ", [_prefix(f"{k}=", _pp_lines(v, threshold))
                           for k, v in sorted(value.items())], " }")
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


def _print_consumer_naming_device(arg, transforms, *, device, **kwargs):
  _print_consumer(arg, transforms, device=device, **kwargs)


def _print_consumer(arg, transforms, *, output_stream=None, threshold=None, **kwargs):
  if transforms:
    kwargs["transforms"] = [(name, params) if params else name for name, params in transforms]
  lines = [" ".join(f"{k}: {v}" for k, v in sorted(kwargs.items()))] if kwargs else []
  lines += _pp_lines(arg, threshold)
  # one write per tap: the receivers of several devices print at once
  text = "\n".join(lines) + "\n"
  if output_stream is not None:
    output_stream.write(text)
  else:
    sys.stdout.write(text)
    sys.stdout.flush()


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


def _i64(value: int, signed: bool = True) -> ir.IntegerAttr:
  kind = ir.IntegerType.get_signless(64) if signed else ir.IntegerType.get_unsigned(64)
  return ir.IntegerAttr.get(kind, value)


def emit_tap_custom_call(consumer_id: int, token: ir.Value | None, operands, *,
                         host_callbacks: list, sharding: str | None = None) -> ir.Value | None:
  """Emits, at the current insertion point, the custom call that sends `operands` to the
  consumer `consumer_id` (from `register_consumer`) through the tap mechanism in use:

      %t1 = mhlo.custom_call @minijax_tap(%t0, %x, %y) {api_version = 4 : i32,
          has_side_effect = true, backend_config = {consumer = 7 : i64}}
          : (!mhlo.token, tensor<3xf32>, tensor<i32>) -> !mhlo.token

  With a `token` (an ordered tap) the call is sequenced after it and returns the next
  token; without one it has no results, and `has_side_effect` keeps XLA from dropping it.
  For the callback mechanism the target is jaxlib's Python callback, and the host callable
  is appended to `host_callbacks` (the module's list, compiled with the executable).

  In a module for several devices the call carries `sharding` (`spmd.side_effect_sharding`):
  `{manual}` inside `pmap`/`shard_map`, where every device runs its own call and its
  device's receiver gets the tap; one device elsewhere."""
  takes_token = token is not None
  if tap_runtime.mechanism() == "native":
    target = tap_runtime.NATIVE_TARGET
    config_attr = ir.DictAttr.get({tap_runtime.NATIVE_CONSUMER_ATTRIBUTE: _i64(consumer_id)})
  else:
    target = tap_runtime.CALLBACK_TARGET
    config_attr = ir.DictAttr.get({"index": _i64(len(host_callbacks), signed=False)})
    host_callbacks.append(tap_runtime.TapCallback(consumer_id, takes_token))
  op = mhlo.CustomCallOp([mhlo.TokenType.get()] if takes_token else [],
                         ([token] if takes_token else []) + list(operands), target,
                         has_side_effect=True, backend_config=config_attr,
                         api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4))
  if sharding is not None:
    op.attributes["mhlo.sharding"] = spmd.sharding_attr(sharding)
  return op.result if takes_token else None


def _id_tap_lowering(ctx, *args, tap_func_, arg_treedef_, nr_tapped_args_, transforms, effect):
  consumer_id = tap_runtime.register_consumer(tap_func_, transforms, arg_treedef_,
                                              ctx.avals_in[:nr_tapped_args_])
  token = ctx.tokens_in.get(effect) if effect.ordered else None
  token = emit_tap_custom_call(consumer_id, token, args[:nr_tapped_args_],
                               host_callbacks=ctx.module_context.host_callbacks,
                               sharding=spmd.side_effect_sharding(ctx.module_context))
  if effect.ordered:
    ctx.set_tokens_out(TokenSet({effect: token}))
  return list(args)


mlir.register_lowering(id_tap_p, _id_tap_lowering)


def _instantiate(tangent, aval):
  """A concrete value for a symbolic zero (or a missing cotangent) of type `aval`."""
  return ad.instantiate_zeros(ad.Zero(aval) if tangent is None else tangent)


def _id_tap_jvp(primals, tangents, **params):
  out_primals = id_tap_p.bind(*primals, **params)
  # One primal output rides along, untapped, so the tangent tap comes after the primal one.
  tangent_values = [_instantiate(t, get_aval(p).tangent_aval()) for p, t in zip(primals, tangents)]
  out_tangents = id_tap_p.bind(*tangent_values, out_primals[0], **_add_transform(params, "jvp"))
  return out_primals, out_tangents[:-1]


def _id_tap_transpose(cts, *args, **params):
  cts = [_instantiate(ct, get_aval(a)) for a, ct in zip(args, cts)]
  ct_args = id_tap_p.bind(*cts, **_add_transform(params, "transpose"))
  return [ct if ad.is_undefined_primal(a) else None for a, ct in zip(args, ct_args)]


def _id_tap_batching(batched_args, batch_dims, **params):
  tapped_dims = tuple(batch_dims[:params["nr_tapped_args_"]])
  outs = id_tap_p.bind(*batched_args, **_add_transform(params, "batch", tapped_dims))
  return outs, list(batch_dims)


ad.primitive_jvps[id_tap_p] = _id_tap_jvp
ad.primitive_transposes[id_tap_p] = _id_tap_transpose
batching.primitive_batchers[id_tap_p] = _id_tap_batching


def _id_tap_pp(params, names, indent):
  func = params["tap_func_"]
  func = getattr(func, "func", func)
  lines = [f"tap_func_={getattr(func, '__name__', type(func).__name__)}",
           f"nr_tapped_args_={params['nr_tapped_args_']}"]
  if params["transforms"]:
    lines.append(f"transforms={params['transforms']}")
  return lines


pretty.pp_rules[id_tap_p] = _id_tap_pp
