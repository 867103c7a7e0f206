"""Primitives that make values without computing on data: `create_token`, and `empty`
(built on `full`).  (`dce_sink`, which marks values as used, is in `lax/misc.py`.)

A token (`create_token`) carries no data, only an order: its aval is `AbstractToken`, it
lowers to XLA's token type, and as a value it is a `core.avals.Token` wrapping a device
buffer of that type (jit passes tokens in and out; `staging/compiler.py`).
"""
from __future__ import annotations

from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import abstract_token
from minijax.core.primitive import Primitive
from minijax.lax.structural import full
from minijax.lowering import mlir

__all__ = ["after_all", "after_all_p", "create_token", "create_token_p", "empty"]


# ---- create_token
create_token_p = Primitive("create_token")
create_token_p.def_abstract_eval(lambda *_: abstract_token)
mlir.register_lowering(create_token_p, lambda ctx, *_: mhlo.CreateTokenOp().result)


def create_token(_=None):
  """A new token (XLA's `after_all` of nothing).  The argument is ignored, as JAX ignores
  it: `jit(lax.create_token)(x)` works."""
  return create_token_p.bind()


# ---- after_all
after_all_p = Primitive("after_all")


def _after_all_abstract_eval(*tokens):
  if any(t is not abstract_token for t in tokens):
    raise TypeError("after_all: every operand must be a token (lax.create_token()), got "
                    f"{[str(t) for t in tokens]}")
  return abstract_token


after_all_p.def_abstract_eval(_after_all_abstract_eval)
mlir.register_lowering(after_all_p, lambda ctx, *tokens: mhlo.AfterAllOp(list(tokens)).result)


def after_all(*operands):
  """A token ordered after every token of `operands` (XLA's `after_all`)."""
  return after_all_p.bind(*operands)


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
