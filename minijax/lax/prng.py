"""The Threefry-2x32 block cipher as a primitive: the one source of randomness of
`minijax.random`.

`threefry2x32(k1, k2, x1, x2)` encrypts each counter pair `(x1, x2)` under the key
`(k1, k2)` (all uint32, elementwise; any operand may have rank 0) with the 20-round
Threefry-2x32 of Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC 2011):
five groups of four rounds `x1 += x2; x2 = rotl(x2, r); x2 ^= x1`, with rotation amounts
13, 15, 26, 6 and 17, 29, 16, 24 alternating by group, and after each group a key
injection from the schedule `(k1, k2, k1 ^ k2 ^ 0x1BD11BDA)` plus the group number.

The lowering emits those integer ops straight into the module, as a `while` of five
iterations (one per group of rounds, the rotation amounts picked by the group's parity)
rather than unrolled: samplers that draw inside loops (gamma, poisson) hold several
ciphers, and the rolled form compiles several times faster.  Its results are integers and
it has no derivative; batching is elementwise broadcasting.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

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
  u32 = ctx.module_context.ir_type(aval)
  u32_scalar = ir.RankedTensorType.get((), mlir.dtype_to_ir_type(dtypes.uint32))
  i32_scalar = ir.RankedTensorType.get((), ir.IntegerType.get_signless(32))

  def op(name, a, b, result=u32):
    return ir.Operation.create(name, results=[result], operands=[a, b]).result

  def splat(value):
    return mlir.splat_constant(np.uint32(value), aval.shape)

  schedule = [k1, k2, op("mhlo.xor", op("mhlo.xor", k1, k2), splat(_KEY_PARITY))]
  a, b = op("mhlo.add", x1, schedule[0]), op("mhlo.add", x2, schedule[1])
  # One loop iteration per group of four rounds.  The carry holds the group number, the
  # two words and the key schedule rotated so that its first two entries are the group's
  # injection: (ks[(g+1)%3], ks[(g+2)%3], ks[g%3]).
  types = [i32_scalar] + [u32] * 5
  init = [mlir.ir_constant(np.int32(0)), a, b, schedule[1], schedule[2], schedule[0]]
  loop = mhlo.WhileOp(types, init)
  cond = loop.cond.blocks.append(*types)
  with ir.InsertionPoint(cond):
    five = mlir.ir_constant(np.int32(5))
    mhlo.ReturnOp([mhlo.CompareOp(cond.arguments[0], five,
                                  mhlo.ComparisonDirectionAttr.get("LT"),
                                  compare_type=mhlo.ComparisonTypeAttr.get("SIGNED")).result])
  body = loop.body.blocks.append(*types)
  with ir.InsertionPoint(body):
    group, a, b, inject_a, inject_b, rest = body.arguments
    parity = op("mhlo.and", group, mlir.ir_constant(np.int32(1)), i32_scalar)
    even = mhlo.CompareOp(parity, mlir.ir_constant(np.int32(0)),
                          mhlo.ComparisonDirectionAttr.get("EQ"),
                          compare_type=mhlo.ComparisonTypeAttr.get("SIGNED")).result
    for even_r, odd_r in zip(*_ROTATIONS):
      r = mhlo.SelectOp(even, mlir.ir_constant(np.uint32(even_r)),
                        mlir.ir_constant(np.uint32(odd_r))).result
      left = mhlo.BroadcastInDimOp(u32, r, []).result
      right = mhlo.BroadcastInDimOp(
          u32, op("mhlo.subtract", mlir.ir_constant(np.uint32(32)), r, u32_scalar), []).result
      a = op("mhlo.add", a, b)
      rotated = op("mhlo.or", op("mhlo.shift_left", b, left),
                   op("mhlo.shift_right_logical", b, right))
      b = op("mhlo.xor", a, rotated)
    next_group = op("mhlo.add", group, mlir.ir_constant(np.int32(1)), i32_scalar)
    count = mhlo.BroadcastInDimOp(
        u32, mhlo.ConvertOp(u32_scalar, next_group).result, []).result
    a = op("mhlo.add", a, inject_a)
    b = op("mhlo.add", op("mhlo.add", b, inject_b), count)
    mhlo.ReturnOp([next_group, a, b, inject_b, rest, inject_a])
  return [loop.results[1], loop.results[2]]


mlir.register_lowering(threefry2x32_p, _threefry2x32_lowering, splat_literals=True)
ad.defjvp(threefry2x32_p, None, None, None, None)
batching.defbroadcasting(threefry2x32_p)


def threefry2x32(k1, k2, x1, x2):
  """The Threefry-2x32 encryption of the counters `(x1, x2)` under the key `(k1, k2)`."""
  from minijax.lax.structural import convert_to_array
  return threefry2x32_p.bind(*map(convert_to_array, (k1, k2, x1, x2)))
