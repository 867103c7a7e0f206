"""`io_callback`: a Python function with side effects whose results flow back, as in JAX.

    y = minijax.experimental.io_callback(read_sensor, ShapeDtypeStruct((), np.float32), i)

`io_callback_p` carries an effect, so it runs even when its results are unused: `IOEffect`
for unordered calls, `OrderedIOEffect` (with a token of its own) for `ordered=True`, whose
calls keep program order within a computation and call order across computations.  Every
rule is in this file.  Under `jit` the function runs synchronously, on the thread that
executes the computation, through the runtime's value-returning host-call handler
(`runtime/host_calls`); outside `jit` it is called directly.  `jvp` and transposition raise
JAX's ValueError; `vmap` calls the function once per batch element in a loop when the
callback is unordered and raises ValueError when it is ordered (the loop would reorder
calls that the effect orders).
"""
from __future__ import annotations

from typing import Any, Callable

from minijax.callbacks import common
from minijax.core import pretty
from minijax.core.effects import Effect
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet

__all__ = ["io_callback", "io_callback_p", "IOEffect", "OrderedIOEffect"]


class IOEffect(Effect):
  """An io_callback: runs even when unused, ordered only by its data dependencies.  Reverse
  mode through `checkpoint` would run it twice, so it is refused there, and so is a batched
  predicate over it (every lane would run it)."""
  allowed_in_remat = False
  allowed_with_batched_predicate = False


class OrderedIOEffect(Effect):
  """An ordered io_callback: its calls keep program order (one token)."""
  ordered = True
  allowed_in_remat = False
  allowed_with_batched_predicate = False


io_effect = IOEffect()
ordered_io_effect = OrderedIOEffect()


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any):
  """Calls `callback(*args, **kwargs)` on the host, for its side effects and its results, a
  pytree of arrays shaped like `result_shape_dtypes` (see the module docstring)."""
  common.check_callable(callback, "io_callback")
  result_avals, out_tree = common.result_avals_of(result_shape_dtypes)
  flat, dynamic = common.flat_callback(callback, args, kwargs, results=len(result_avals),
                                       single=len(result_avals) == 1, api="io_callback",
                                       sharding=sharding)
  outs = io_callback_p.bind(*dynamic, callback=flat, result_avals=tuple(result_avals),
                            ordered=bool(ordered))
  return out_tree.unflatten(outs)


# ----------------------------------------------------------------------------- the primitive
# Params: callback (a FlatCallback), result_avals (the flat result avals), ordered.

io_callback_p = Primitive("io_callback")
io_callback_p.multiple_results = True


def _effect(ordered: bool) -> Effect:
  return ordered_io_effect if ordered else io_effect


def _io_callback_abstract_eval(*avals, callback, result_avals, ordered):
  return list(result_avals), frozenset([_effect(ordered)])


io_callback_p.def_effectful_abstract_eval(_io_callback_abstract_eval)


def _io_callback_impl(*args, callback, result_avals, ordered):
  return common.call_eagerly(callback, result_avals, args)


io_callback_p.def_impl(_io_callback_impl)


def _io_callback_lowering(ctx, *args, callback, result_avals, ordered):
  effect = _effect(ordered)
  token = ctx.tokens_in.get(effect) if ordered else None
  results, token = common.lower_host_call(ctx, callback, args, result_avals, token,
                                          has_side_effect=True)
  if ordered:
    ctx.set_tokens_out(TokenSet({effect: token}))
  return results


mlir.register_lowering(io_callback_p, _io_callback_lowering)


def _io_callback_jvp(primals, tangents, **params):
  raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts, *args, **params):
  raise ValueError("IO callbacks do not support transpose.")


ad.primitive_jvps[io_callback_p] = _io_callback_jvp
ad.primitive_transposes[io_callback_p] = _io_callback_transpose


def _io_callback_batching(args, dims, *, callback, result_avals, ordered):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  params = dict(callback=callback, result_avals=result_avals, ordered=False)
  outs = common.batch_sequentially(lambda *xs: io_callback_p.bind(*xs, **params), args, dims)
  return outs, [0] * len(outs)


batching.primitive_batchers[io_callback_p] = _io_callback_batching
pretty.pp_rules[io_callback_p] = common.pp_callback_params
