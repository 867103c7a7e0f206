"""Primitives that make or mark values without computing on data: `create_token`,
`dce_sink`, and `empty` (built on `full`).

A token (`create_token`) carries no data, only an order: its aval is `AbstractToken`, it
lowers to XLA's token type, and as a value it is a `core.avals.Token` wrapping a device
buffer of that type (jit passes tokens in and out; `staging/compiler.py`).  `dce_sink`
marks a value as used, so that dead-code elimination keeps what computes it: it has no
results, and an effect (`NoDCEEffect`) that keeps its equation and needs no token.
"""
from __future__ import annotations

from jaxlib.mlir.dialects import mhlo

from minijax import tree_util
from minijax.core import dtypes
from minijax.core.avals import abstract_token
from minijax.core.effects import Effect
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax.structural import full
from minijax.lowering import mlir

__all__ = ["create_token", "create_token_p", "dce_sink", "dce_sink_p", "empty"]


# ---- create_token
create_token_p = Primitive("create_token")
create_token_p.def_abstract_eval(lambda *_: abstract_token)
mlir.register_lowering(create_token_p, lambda ctx, *_: mhlo.CreateTokenOp().result)


def create_token(_=None):
  """A new token (XLA's `after_all` of nothing).  The argument is ignored, as JAX ignores
  it: `jit(lax.create_token)(x)` works."""
  return create_token_p.bind()


# ---- dce_sink
class NoDCEEffect(Effect):
  """Keeps a `dce_sink` equation although it has no results; orders nothing."""
  tracked_at_runtime = False
  runs_with_zero_cotangents = False


no_dce_effect = NoDCEEffect()

dce_sink_p = Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_effectful_abstract_eval(lambda *_, **__: ([], frozenset({no_dce_effect})))
dce_sink_p.def_impl(lambda *_, **__: [])
mlir.register_lowering(dce_sink_p, lambda ctx, *_, **__: [])
ad.primitive_jvps[dce_sink_p] = lambda primals, tangents, **params: (
    dce_sink_p.bind(*primals, **params), [])
batching.primitive_batchers[dce_sink_p] = lambda args, dims, **params: (
    dce_sink_p.bind(*args, **params), [])


def dce_sink(val) -> None:
  """Marks every leaf of `val` as used: dead-code elimination keeps what computes it."""
  for leaf in tree_util.tree_leaves(val):
    dce_sink_p.bind(leaf)


# ---- empty
def empty(shape, dtype, *, out_sharding=None):
  """An array of `shape` and `dtype` whose values are unspecified (JAX leaves them to the
  backend; on the CPU minijax fills zeros)."""
  if out_sharding is not None:
    raise NotImplementedError("lax.empty(out_sharding=...) is not implemented in minijax; "
                              "make the array, then place it with jax.device_put or "
                              "lax.with_sharding_constraint")
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  return full(shape, 0, dtypes.canonicalize_user_dtype(dtype, "empty"))
