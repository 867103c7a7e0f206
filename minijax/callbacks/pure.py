"""`pure_callback`: a Python function that computes values for the computation, as in JAX.

    y = minijax.pure_callback(np.sin, minijax.ShapeDtypeStruct(x.shape, x.dtype), x)

The function is taken to be pure: `pure_callback_p` has no effect, so dead-code elimination
drops a call whose results are unused (and XLA drops its custom call, which has no side
effect), and a call may run once per batch element under `vmap`.  Every rule is in this
file (the `vmap_method` dispatch, shared with `ffi_call`, in `common`).  Under `jit` the
function runs synchronously, on the thread that executes the computation, through the
value-returning host-call handler of the runtime (`runtime/host_calls`); outside `jit` it
is called directly.  It receives Arrays, as in JAX (`HostArray`s over read-only copies of
the operands, which it may keep; outside `jit` the Arrays themselves) and its results are
converted to the declared types by JAX's rules.  `jvp` and transposition raise JAX's
ValueError: wrap the callback in `custom_jvp` or `custom_vjp` to differentiate through
it.  `vmap` follows `vmap_method`:

  sequential            a loop (`scan`) calling the function once per batch element;
  sequential_unrolled   the same loop unrolled;
  expand_dims           one call; batched arguments carry the batch axis first, unbatched
                        ones a new leading axis of size 1;
  broadcast_all         one call; unbatched arguments are tiled to the batch size;
  legacy_vectorized     one call; batched arguments carry the batch axis first, unbatched
                        ones are passed unchanged;
  None                  vmap raises NotImplementedError.
"""
from __future__ import annotations

from typing import Any, Callable

from minijax.callbacks import common
from minijax.core import pretty
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lowering import mlir

__all__ = ["pure_callback", "pure_callback_p", "VMAP_METHODS"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any):
  """Calls `callback(*args, **kwargs)` on the host and returns its results, a pytree of
  arrays shaped like `result_shape_dtypes` (see the module docstring)."""
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  common.check_callable(callback, "pure_callback")
  result_avals, out_tree = common.result_avals_of(result_shape_dtypes)
  flat, dynamic = common.flat_callback(callback, args, kwargs, results=len(result_avals),
                                       single=len(result_avals) == 1, sharding=sharding)
  outs = pure_callback_p.bind(*dynamic, callback=flat, result_avals=tuple(result_avals),
                              vmap_method=vmap_method)
  return out_tree.unflatten(outs)


# ----------------------------------------------------------------------------- the primitive
# Params: callback (a FlatCallback), result_avals (the flat result avals), vmap_method.

pure_callback_p = Primitive("pure_callback")
pure_callback_p.multiple_results = True


def _pure_callback_abstract_eval(*avals, callback, result_avals, vmap_method):
  return list(result_avals)


pure_callback_p.def_abstract_eval(_pure_callback_abstract_eval)


def _pure_callback_impl(*args, callback, result_avals, vmap_method):
  return common.call_eagerly(callback, result_avals, args)


pure_callback_p.def_impl(_pure_callback_impl)


def _pure_callback_lowering(ctx, *args, callback, result_avals, vmap_method):
  results, _ = common.lower_host_call(ctx, callback, args, result_avals, None,
                                      has_side_effect=False)
  return results


mlir.register_lowering(pure_callback_p, _pure_callback_lowering)


def _pure_callback_jvp(primals, tangents, **params):
  raise ValueError("Pure callbacks do not support JVP. Please use `minijax.custom_jvp` to use "
                   "callbacks while taking gradients.")


def _pure_callback_transpose(cts, *args, **params):
  raise ValueError("Pure callbacks do not support transpose. Please use `minijax.custom_vjp` "
                   "to use callbacks while taking gradients.")


ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp
ad.primitive_transposes[pure_callback_p] = _pure_callback_transpose


def _pure_callback_batching(args, dims, *, callback, result_avals, vmap_method):
  def bind_all(operands, size):
    batched = tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
    return pure_callback_p.bind(*operands, callback=callback, result_avals=batched,
                                vmap_method=vmap_method)
  return common.batch_by_vmap_method(
      "pure_callback", vmap_method, args, dims,
      lambda *xs: pure_callback_p.bind(*xs, callback=callback, result_avals=result_avals,
                                       vmap_method=vmap_method), bind_all)


batching.primitive_batchers[pure_callback_p] = _pure_callback_batching


pretty.pp_rules[pure_callback_p] = common.pp_callback_params
