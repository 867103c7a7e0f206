"""The PRNG primitives of `minijax.random`: the Threefry-2x32 block cipher
(`threefry2x32`), which the default implementation and its relatives are built on, and
XLA's own generator (`rng_bit_generator`), which the `rbg` implementations draw from.

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

`mulhi(x, y)` is the high half of the double-width product of two integers (elementwise;
the Philox generators' round function needs it): lowered as the product of the operands
widened to twice their width, shifted down.

`rng_bit_generator(key, shape, dtype, algorithm)` is XLA's `RngBitGenerator`: from a
`uint32[4]` key it returns the next key and `shape` random bits, by the algorithm named
(`RandomAlgorithm`; the platform's default on CPU is Philox).  XLA's op takes a `u64[2]`
state, so the lowering reinterprets the four words as two (as JAX does), and it draws
uint32 for 8- and 16-bit requests and narrows them.  Batched over keys, it draws once from
the first key with the batch as a leading dimension (JAX's rule, so vmapped `rbg` samplers
give JAX's numbers).
"""
from __future__ import annotations

import enum

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lowering import mlir

__all__ = ["RandomAlgorithm", "mulhi", "mulhi_p", "rng_bit_generator", "rng_bit_generator_p", "threefry2x32",
           "threefry2x32_p", "rng_uniform", "rng_uniform_p"]

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
  k1, k2, x1, x2 = utils.broadcast_operands(ctx, [k1, k2, x1, x2])
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


# ----------------------------------------------------------------------------- rng_bit_generator

class RandomAlgorithm(enum.IntEnum):
  """The algorithm of `rng_bit_generator`."""
  RNG_DEFAULT = 0
  RNG_THREE_FRY = 1
  RNG_PHILOX = 2

  def __str__(self):
    return self.name


_ALGORITHM_ATTRS = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                    RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                    RandomAlgorithm.RNG_PHILOX: "PHILOX"}
_RBG_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))

rng_bit_generator_p = Primitive("rng_bit_generator")
rng_bit_generator_p.multiple_results = True


def _rng_bit_generator_abstract_eval(key, *, shape, dtype, algorithm):
  if (key.dtype, key.shape) not in ((dtypes.uint32, (4,)), (np.dtype(np.uint64), (2,))):
    raise TypeError("rng_bit_generator takes a uint32[4] or uint64[2] key, got "
                    f"{key.str_short()}")
  return [key, ShapedArray(shape, dtype, False)]


rng_bit_generator_p.def_abstract_eval(_rng_bit_generator_abstract_eval)


def _rng_bit_generator_lowering(ctx, key, *, shape, dtype, algorithm):
  u32, u64 = ir.IntegerType.get_unsigned(32), ir.IntegerType.get_unsigned(64)
  wide_key = ctx.avals_in[0].dtype == np.uint64
  # XLA's state is u64[2]: a uint32 key's four words, two by two
  state = key if wide_key else mhlo.BitcastConvertOp(
      ir.RankedTensorType.get([2], u64),
      mhlo.ReshapeOp(ir.RankedTensorType.get([2, 2], u32), key).result).result
  narrow = np.dtype(dtype).itemsize < 4
  bits_type = ir.RankedTensorType.get(
      list(shape), u32 if narrow else mlir.dtype_to_ir_type(np.dtype(dtype)))
  op = ir.Operation.create(
      "mhlo.rng_bit_generator", results=[state.type, bits_type], operands=[state],
      attributes={"rng_algorithm": ir.Attribute.parse(
          f"#mhlo.rng_algorithm<{_ALGORITHM_ATTRS[RandomAlgorithm(algorithm)]}>")})
  new_state, bits = op.results
  new_key = new_state if wide_key else mhlo.ReshapeOp(
      ir.RankedTensorType.get([4], u32),
      mhlo.BitcastConvertOp(ir.RankedTensorType.get([2, 2], u32), new_state).result).result
  if narrow:
    bits = mhlo.ConvertOp(ctx.module_context.ir_type(ctx.avals_out[1]), bits).result
  return [new_key, bits]


mlir.register_lowering(rng_bit_generator_p, _rng_bit_generator_lowering)
ad.defjvp(rng_bit_generator_p, None)


def _rng_bit_generator_batcher(args, dims, *, shape, dtype, algorithm):
  from minijax.lax.slicing import dynamic_update_index_in_dim, index_in_dim
  (keys,), (d,) = args, dims
  if d is None:
    return rng_bit_generator_p.bind(keys, shape=shape, dtype=dtype,
                                    algorithm=algorithm), (None, None)
  keys = batching.moveaxis(keys, d, 0)
  first = index_in_dim(keys, 0, 0, keepdims=False)
  new_key, bits = rng_bit_generator_p.bind(first, shape=(keys.shape[0], *shape),
                                           dtype=dtype, algorithm=algorithm)
  return [dynamic_update_index_in_dim(keys, new_key, 0, 0), bits], (0, 0)


batching.primitive_batchers[rng_bit_generator_p] = _rng_bit_generator_batcher


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT,
                      *, out_sharding=None):
  """`(new_key, bits)`: `shape` random unsigned integers of `dtype` from XLA's bit
  generator, and the key to use next (`key` is `uint32[4]`)."""
  from minijax.lax.structural import convert_to_array
  dtype = dtypes.canonicalize_explicit_dtype(dtype)
  if dtype not in _RBG_DTYPES:
    raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
  shape = tuple(int(d) for d in shape)
  return tuple(rng_bit_generator_p.bind(convert_to_array(key), shape=shape, dtype=dtype,
                                        algorithm=RandomAlgorithm(algorithm)))


# ----------------------------------------------------------------------------- mulhi

mulhi_p = utils.standard_primitive(
    "mulhi", utils.elementwise_shapes("mulhi"),
    lambda x, y: _mulhi_dtype(x, y))


def _mulhi_dtype(x, y):
  if x.dtype != y.dtype or not dtypes.is_integer(x.dtype) or x.dtype.itemsize > 4:
    raise TypeError(f"mulhi takes two integers of one dtype of at most 32 bits, got "
                    f"{x.str_short()} and {y.str_short()}")
  return x.dtype


def _mulhi_lowering(ctx, x, y):
  aval = ctx.avals_out[0]
  x, y = utils.broadcast_operands(ctx, [x, y])
  bits = aval.dtype.itemsize * 8
  signed = np.issubdtype(aval.dtype, np.signedinteger)
  wide_dtype = np.dtype(f"{'i' if signed else 'u'}{aval.dtype.itemsize * 2}")
  wide = mlir.aval_to_ir_type(aval.update(dtype=wide_dtype))
  product = mhlo.MulOp(mhlo.ConvertOp(wide, x).result, mhlo.ConvertOp(wide, y).result).result
  shift = mlir.splat_constant(np.array(bits, wide_dtype), aval.shape)
  high = (mhlo.ShiftRightArithmeticOp if signed else mhlo.ShiftRightLogicalOp)(
      product, shift).result
  return mhlo.ConvertOp(ctx.module_context.ir_type(aval), high).result


mlir.register_lowering(mulhi_p, _mulhi_lowering, splat_literals=True)
ad.defjvp(mulhi_p, None, None)
batching.defbroadcasting(mulhi_p)


def mulhi(x, y):
  """The high half of the double-width product `x * y`, elementwise."""
  from minijax.lax.structural import convert_to_array
  x, y = convert_to_array(x), convert_to_array(y)
  if x.dtype == y.dtype and x.dtype.itemsize == 8 and dtypes.is_integer(x.dtype):
    return _mulhi64(x, y)
  return mulhi_p.bind(x, y)


def _mulhi64(x, y):
  """mulhi of 64-bit integers (XLA has no 128-bit type): the schoolbook product of their
  32-bit halves as uint64, then, for signed ones, the correction of the two's complement
  (subtract y where x < 0 and x where y < 0)."""
  from minijax.lax.elementwise import (add, bitwise_and, lt, mul, shift_right_logical, sub)
  from minijax.lax.misc import bitcast_convert_type, select
  from minijax.lax.structural import full
  x, y = utils.broadcast_elementwise("mulhi", x, y)
  signed = np.issubdtype(x.dtype, np.signedinteger)
  u64 = np.dtype(np.uint64)
  ux, uy = (bitcast_convert_type(v, u64) if signed else v for v in (x, y))
  shape = ux.shape
  low_mask, bits = full(shape, 0xFFFFFFFF, u64), full(shape, 32, u64)
  low = lambda v: bitwise_and(v, low_mask)
  high = lambda v: shift_right_logical(v, bits)
  xl, xh, yl, yh = low(ux), high(ux), low(uy), high(uy)
  ll, lh, hl, hh = mul(xl, yl), mul(xl, yh), mul(xh, yl), mul(xh, yh)
  middle = add(add(high(ll), low(lh)), low(hl))
  out = add(add(add(hh, high(lh)), high(hl)), high(middle))
  if signed:
    zero_u, zero = full(shape, 0, u64), full(shape, 0, x.dtype)
    out = sub(sub(out, select(lt(x, zero), uy, zero_u)), select(lt(y, zero), ux, zero_u))
    out = bitcast_convert_type(out, x.dtype)
  return out


# ---- rng_uniform
rng_uniform_p = Primitive("rng_uniform")


def _rng_uniform_abstract_eval(a, b, *, shape):
  if a.shape or b.shape or a.dtype != b.dtype:
    raise TypeError("rng_uniform: a and b must be scalars of one dtype, got "
                    f"{a.str_short()} and {b.str_short()}")
  if not (dtypes.is_float(a.dtype) or dtypes.is_integer(a.dtype)):
    raise TypeError(f"rng_uniform draws integers or real floats, got {a.dtype}")
  return ShapedArray(shape, a.dtype)


def _rng_uniform_lowering(ctx, a, b, *, shape):
  shape_operand = mlir.ir_constant(np.array(shape, np.int64))
  return mhlo.RngOp(a, b, shape_operand, mhlo.RngDistributionAttr.get("UNIFORM")).result


rng_uniform_p.def_abstract_eval(_rng_uniform_abstract_eval)
mlir.register_lowering(rng_uniform_p, _rng_uniform_lowering)


def rng_uniform(a, b, shape):
  """Values drawn uniformly from [a, b) by XLA's stateful generator (`RngUniform`): not
  reproducible, unlike `minijax.random`."""
  from minijax.lax.structural import convert_to_array
  return rng_uniform_p.bind(convert_to_array(a), convert_to_array(b),
                            shape=tuple(int(d) for d in shape))
