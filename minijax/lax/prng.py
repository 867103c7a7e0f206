"""The Threefry-2x32 block cipher as a primitive: the one source of randomness of
`minijax.random`.

`threefry2x32(k1, k2, x1, x2)` encrypts each counter pair `(x1, x2)` under the key
`(k1, k2)` (all uint32, elementwise; any operand may have rank 0) with the 20-round
Threefry-2x32 of Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC 2011):
five groups of four rounds `x1 += x2; x2 = rotl(x2, r); x2 ^= x1`, with rotation amounts
13, 15, 26, 6 and 17, 29, 16, 24 alternating by group, and after each group a key
injection from the schedule `(k1, k2, k1 ^ k2 ^ 0x1BD11BDA)` plus the group number.

The lowering emits those integer ops straight into the module (unrolled: about a hundred
elementwise ops that XLA fuses into one loop), so the cipher costs no call and no loop.
Its results are integers and it has no derivative; batching is elementwise broadcasting.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lowering import mlir

__all__ = ["threefry2x32", "threefry2x32_p"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA


threefry2x32_p = Primitive("threefry2x32")
threefry2x32_p.multiple_results = True
_common_shape = utils.elementwise_shapes("threefry2x32")


def _threefry2x32_abstract_eval(k1, k2, x1, x2):
  avals = (k1, k2, x1, x2)
  if any(a.dtype != dtypes.uint32 for a in avals):
    shown = ", ".join(a.str_short() for a in avals)
    raise TypeError(f"threefry2x32 takes uint32 keys and counters, got {shown}")
  out = ShapedArray(_common_shape(*avals), dtypes.uint32, False)
  return [out, out]


threefry2x32_p.def_abstract_eval(_threefry2x32_abstract_eval)


def _threefry2x32_lowering(ctx, k1, k2, x1, x2):
  aval = ctx.avals_out[0]
  k1, k2, x1, x2 = utils.broadcast_scalar_operands(ctx, [k1, k2, x1, x2])
  out_type = ctx.module_context.ir_type(aval)

  def op(name, a, b):
    return ir.Operation.create(name, results=[out_type], operands=[a, b]).result

  def const(value):
    return mlir.splat_constant(np.uint32(value), aval.shape)

  def rotate_left(v, r):
    return op("mhlo.or", op("mhlo.shift_left", v, const(r)),
              op("mhlo.shift_right_logical", v, const(32 - r)))

  schedule = [k1, k2, op("mhlo.xor", op("mhlo.xor", k1, k2), const(_KEY_PARITY))]
  a, b = op("mhlo.add", x1, schedule[0]), op("mhlo.add", x2, schedule[1])
  for group in range(5):
    for r in _ROTATIONS[group % 2]:
      a = op("mhlo.add", a, b)
      b = op("mhlo.xor", a, rotate_left(b, r))
    a = op("mhlo.add", a, schedule[(group + 1) % 3])
    b = op("mhlo.add", op("mhlo.add", b, schedule[(group + 2) % 3]), const(group + 1))
  return [a, b]


mlir.register_lowering(threefry2x32_p, _threefry2x32_lowering, splat_literals=True)
ad.defjvp(threefry2x32_p, None, None, None, None)
batching.defbroadcasting(threefry2x32_p)


def threefry2x32(k1, k2, x1, x2):
  """The Threefry-2x32 encryption of the counters `(x1, x2)` under the key `(k1, k2)`."""
  from minijax.lax.structural import convert_to_array
  return threefry2x32_p.bind(*map(convert_to_array, (k1, k2, x1, x2)))
