"""The threefry2x32 PRNG implementation (JAX's default), on the `threefry2x32` primitive.

A key is two uint32 words, bit for bit those of JAX's defaults (threefry2x32 with
`jax_threefry_partitionable`; with it False, JAX's original scheme: `_original_random_bits`,
and `split` encrypts one block of counters 0 .. 2n-1): element i (in row-major order) of anything drawn from key
(k1, k2) is the encryption of the counter pair (i >> 32, i & 0xffffffff); `split(key,
shape)` keeps both output words of each counter as a new key, and `random_bits` xors them
(32 bits), keeps their low bits (8, 16) or joins them (64).  `fold_in(key, d)` is the key
at counter (0, d), so `fold_in(key, i)` equals `split(key, n)[i]`.  A seed becomes the key
(high word, low word) of its 64-bit two's complement value (its high word is 0 for a
32-bit seed).
"""
from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax.config import config
from minijax.core import dtypes
from minijax.core.trace import Tracer
from minijax.random import prng
from minijax.runtime.array import is_concrete_array

__all__ = ["threefry_2x32", "threefry_fold_in", "threefry_prng_impl", "threefry_random_bits",
           "threefry_seed", "threefry_split"]


def words(key_data, n: int = 2):
  """The `n` uint32 words of a single key's data `uint32[n]` (rank-0 each)."""
  k = lax.convert_to_array(key_data)
  return tuple(lax.reshape(lax.slice(k, (i,), (i + 1,)), ()) for i in range(n))


def join_words(*ws):
  """`uint32[*shape, len(ws)]` from words of one shape."""
  shape = tuple(np.shape(ws[0]))
  n = len(shape)
  return lax.concatenate([lax.broadcast_in_dim(w, (*shape, 1), tuple(range(n))) for w in ws],
                         n)


def counters(shape) -> tuple:
  """(high, low) uint32 words of the row-major index of each element of `shape`."""
  shape = tuple(shape)
  u32 = dtypes.uint32
  if not shape:
    zero = lax.full((), 0, u32)
    return zero, zero
  if math.prod(shape) >= 2 ** 32:
    raise NotImplementedError(f"random values for {math.prod(shape)} elements (2**32 or "
                              f"more, shape {shape}) are not supported")
  low = None
  stride = 1
  for d in reversed(range(len(shape))):
    term = lax.broadcasted_iota(u32, shape, d)
    if stride != 1:
      term = lax.mul(term, lax.full(shape, stride, u32))
    low = term if low is None else lax.add(term, low)
    stride *= shape[d]
  return lax.full(shape, 0, u32), low


def threefry_2x32(keypair, count):
  """Threefry-2x32 of the uint32 array `count` under `keypair` (two uint32 words): its
  elements, padded to an even number, are split in halves that form the counter pairs."""
  import minijax.numpy as jnp
  k1, k2 = (lax.convert_to_array(k) for k in keypair)
  count = jnp.asarray(count)
  if any(np.dtype(a.dtype) != dtypes.uint32 for a in (k1, k2, count)):
    raise TypeError("threefry_2x32 requires uint32 arguments, got "
                    f"{[str(a.dtype) for a in (k1, k2, count)]}")
  flat = jnp.ravel(count)
  odd = flat.shape[0] % 2
  if odd:
    flat = jnp.concatenate([flat, jnp.zeros((1,), jnp.uint32)])
  half = flat.shape[0] // 2
  x1, x2 = lax.threefry2x32(k1, k2, flat[:half], flat[half:])
  out = jnp.concatenate([x1, x2])
  return jnp.reshape(out[:-1] if odd else out, count.shape)


def _seed_on_device(seed):
  from minijax import api
  return api.jit(threefry_seed)(seed)


def threefry_seed(seed):
  """uint32[2] key data of an integer seed: its two's complement (high word, low word), the
  high word being 0 for a seed of 32 bits or fewer.  A Python int is an int64 first, and,
  as every 64-bit value without x64, is then wrapped to 32 bits (JAX does the same)."""
  if isinstance(seed, (bool, np.bool_)):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
  if is_concrete_array(seed):  # on its device, as JAX does: no transfer to or from the host
    return _seed_on_device(seed)
  if not isinstance(seed, Tracer):
    arr = np.int64(seed) if isinstance(seed, int) else np.asarray(seed)
    if not dtypes.is_integer(arr.dtype):
      raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    dtype = dtypes.canonicalize_dtype(arr.dtype)
    value = int(arr.astype(dtype))
    high = (value >> 32) & 0xFFFFFFFF if dtype.itemsize == 8 else 0
    return lax.convert_to_array(np.array([high, value & 0xFFFFFFFF], np.uint32))
  aval = seed.aval
  if not dtypes.is_integer(aval.dtype):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
  u32 = dtypes.uint32
  low = lax.convert_element_type(seed, u32)
  if aval.dtype.itemsize == 8:
    high = lax.convert_element_type(
        lax.shift_right_logical(seed, lax.full((), 32, aval.dtype)), u32)
  else:
    high = lax.full((), 0, u32)
  return lax.concatenate([lax.reshape(high, (1,)), lax.reshape(low, (1,))], 0)


def threefry_split(key_data, shape) -> object:
  """uint32[*shape, 2]: one new key per counter."""
  if not config.threefry_partitionable:
    n = math.prod(shape)
    return lax.reshape(threefry_2x32(words(key_data), lax.iota(dtypes.uint32, 2 * n)),
                       (*shape, 2))
  k1, k2 = words(key_data)
  hi, lo = counters(shape)
  return join_words(*lax.threefry2x32(k1, k2, hi, lo))


def threefry_fold_in(key_data, data) -> object:
  """uint32[2]: the key at counter (0, data)."""
  k1, k2 = words(key_data)
  data = lax.convert_element_type(data, dtypes.uint32)
  zero = lax.full((), 0, dtypes.uint32)
  b1, b2 = lax.threefry2x32(k1, k2, zero, data)
  return lax.concatenate([lax.reshape(b1, (1,)), lax.reshape(b2, (1,))], 0)


def bits_of_words(b1, b2, bit_width: int, shape):
  """Random bits of width `bit_width` from two uint32 words per element (xor, or both)."""
  if bit_width == 64:
    u64 = dtypes.uint64
    high = lax.convert_element_type(b1, u64)
    low = lax.convert_element_type(b2, u64)
    return lax.bitwise_or(lax.shift_left(high, lax.full(shape, 32, u64)), low)
  bits = lax.bitwise_xor(b1, b2)
  if bit_width == 32:
    return bits
  return lax.convert_element_type(bits, prng.UINT_DTYPES[bit_width])


def threefry_random_bits(key_data, bit_width: int, shape):
  """Uniformly random `uint{bit_width}` values of `shape` from one key's data."""
  if bit_width not in prng.UINT_DTYPES:
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  if not config.threefry_partitionable:
    return _original_random_bits(key_data, bit_width, tuple(shape))
  k1, k2 = words(key_data)
  hi, lo = counters(shape)
  b1, b2 = lax.threefry2x32(k1, k2, hi, lo)
  return bits_of_words(b1, b2, bit_width, tuple(shape))


def _original_random_bits(key_data, bit_width: int, shape):
  """JAX's original scheme (`jax_threefry_partitionable=False`): one block of
  ceil(bits / 32) counters 0, 1, ... encrypted by `threefry_2x32`; 64-bit values join the
  block's first half (high words) to its second, 8- and 16-bit ones cut each word into
  little-endian pieces."""
  size = math.prod(shape)
  count = -(-bit_width * size // 32)
  if count >= 2 ** 32 - 1:
    raise NotImplementedError(f"random values for {size} elements of {bit_width} bits are not "
                              "supported with jax_threefry_partitionable=False")
  bits = threefry_2x32(words(key_data), lax.iota(dtypes.uint32, count))
  if bit_width == 64:
    u64 = dtypes.uint64
    high, low = (lax.convert_element_type(lax.slice(bits, (start,), (start + count // 2,)), u64)
                 for start in (0, count // 2))
    bits = lax.bitwise_or(lax.shift_left(high, lax.full((count // 2,), 32, u64)), low)
  elif bit_width in (8, 16):
    pieces = lax.bitcast_convert_type(bits, prng.UINT_DTYPES[bit_width])
    bits = lax.slice(lax.reshape(pieces, (count * 32 // bit_width,)), (0,), (size,))
  return lax.reshape(bits, shape)


threefry_prng_impl = prng.PRNGImpl(
    key_shape=(2,), seed=threefry_seed, split=threefry_split,
    random_bits=threefry_random_bits, fold_in=threefry_fold_in, name="threefry2x32",
    tag="fry")
prng.register_prng(threefry_prng_impl)
