"""Shape-changing primitives: broadcast_in_dim, transpose, ... and `full`."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lowering import mlir

__all__ = ["broadcast_in_dim", "broadcast", "transpose", "full", "convert_to_array",
           "broadcast_in_dim_p", "transpose_p"]


# ---- broadcast_in_dim
broadcast_in_dim_p = Primitive("broadcast_in_dim")


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
  if len(broadcast_dimensions) != x.ndim or any(
      x.shape[i] not in (1, shape[d]) for i, d in enumerate(broadcast_dimensions)):
    raise TypeError(f"broadcast_in_dim cannot broadcast {x.str_short()} to shape {shape} "
                    f"with broadcast_dimensions={broadcast_dimensions}")
  return ShapedArray(shape, x.dtype, x.weak_type)


broadcast_in_dim_p.def_abstract_eval(_broadcast_in_dim_abstract_eval)


def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions):
  return mhlo.BroadcastInDimOp(mlir.aval_to_ir_type(ctx.avals_out[0]), x,
                               mlir.dense_i64(broadcast_dimensions)).result


mlir.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lowering)


def broadcast_in_dim(x, shape, broadcast_dimensions):
  return broadcast_in_dim_p.bind(x, shape=tuple(shape),
                                 broadcast_dimensions=tuple(broadcast_dimensions))


def broadcast(x, sizes):
  x = convert_to_array(x)
  ndim = np.ndim(x) if not hasattr(x, "ndim") else x.ndim
  shape = tuple(sizes) + tuple(x.shape)
  return broadcast_in_dim(x, shape, tuple(range(len(sizes), len(sizes) + ndim)))


# ---- transpose
transpose_p = Primitive("transpose")


def _transpose_abstract_eval(x, *, permutation):
  if sorted(permutation) != list(range(x.ndim)):
    raise TypeError(f"transpose permutation {permutation} is not a permutation of the "
                    f"axes of {x.str_short()}")
  return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p.def_abstract_eval(_transpose_abstract_eval)
mlir.register_lowering(transpose_p, lambda ctx, x, *, permutation: mhlo.TransposeOp(
    x, mlir.dense_i64(permutation)).result)


def transpose(x, permutation):
  return transpose_p.bind(x, permutation=tuple(permutation))


# ---- full (not a primitive: a constant broadcast to a shape)

def convert_to_array(x):
  """Python scalars and numpy values become arrays (as device values or jaxpr literals)."""
  if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
    from minijax.runtime.array import device_put
    return device_put(x)
  return x


def full(shape, fill_value, dtype=None, weak_type=False):
  dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else
                                    dtypes.dtype_and_weak_type(fill_value)[0])
  scalar = np.asarray(fill_value, dtype)
  from minijax.runtime.array import device_put
  from minijax.core.trace import is_eval_context
  if is_eval_context():
    return device_put(np.broadcast_to(scalar, tuple(shape)))
  return broadcast_in_dim(scalar, tuple(shape), ())
