"""The philox2x32, philox4x32 and threefry4x32 PRNG implementations (JAX 0.10.2's, bit for
bit), written as lax operations on uint32 words.

Each is a keyed hash of counters, used as threefry2x32 is: element i of a draw is the hash
of the counter of index i (its high and low words in two counter slots, zeros in the
others), `split` keeps the first key-size words of each counter's hash, `fold_in` hashes
the counter whose last word is the datum, and a seed becomes the hash (under a zero key for
Philox-2x32, as counter words for the others) of its high and low words.

- Philox-2x32 (Salmon et al., SC 2011): a one-word key; ten rounds of `(x0, x1) <-
  (hi(M x0) ^ x1 ^ k, lo(M x0))`, the key bumped by the Weyl constant between rounds.
- Philox-4x32: a two-word key; ten rounds on two products per round.
- Threefry-4x32: a four-word key; twenty rounds of Threefish mixing with the Random123
  rotation table, a key injection from the five-word schedule every four rounds.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.random import prng
from minijax.random.threefry2x32 import counters, join_words, threefry_seed, words

__all__ = ["philox2x32_prng_impl", "philox4x32_prng_impl", "threefry4x32_prng_impl"]

_U32 = dtypes.uint32


def _c(value):
  return lax.full((), value, _U32)


def _add(a, b):
  return lax.add(a, b)


def _xor(*xs):
  out = xs[0]
  for x in xs[1:]:
    out = lax.bitwise_xor(out, x)
  return out


def _broadcast(*xs):
  shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
  return [x if np.shape(x) == shape else lax.broadcast_in_dim(x, shape, ()) for x in xs]


def _bits(outs, bit_width, hi_lo):
  if bit_width == 64:
    u64 = dtypes.uint64
    hi, lo = (lax.convert_element_type(w, u64) for w in hi_lo)
    return lax.bitwise_or(lax.shift_left(hi, lax.full(np.shape(hi), 32, u64)), lo)
  out = _xor(*outs)
  return out if bit_width == 32 else lax.convert_element_type(out, prng.UINT_DTYPES[bit_width])


def _seed_words(seed):
  """(high, low) uint32 words of an integer seed."""
  return words(threefry_seed(seed))


# ----------------------------------------------------------------------------- philox2x32

_PHILOX_M2 = 0xD256D193
_PHILOX_M4 = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def philox2x32_hash(k0, x0, x1):
  k0, x0, x1 = _broadcast(k0, x0, x1)
  m = lax.full(np.shape(x0), _PHILOX_M2, _U32)
  for rnd in range(10):
    if rnd:
      k0 = _add(k0, _c(_PHILOX_W[0]))
    lo, hi = lax.mul(m, x0), lax.mulhi(m, x0)
    x0, x1 = _xor(hi, x1, k0), lo
  return x0, x1


def _philox2x32_seed(seed):
  hi, lo = _seed_words(seed)
  out0, _ = philox2x32_hash(_c(0), hi, lo)
  return lax.reshape(out0, (1,))


def _philox2x32_split(key, shape):
  c_hi, c_lo = counters(shape)
  out0, _ = philox2x32_hash(words(key, 1)[0], c_hi, c_lo)
  return join_words(out0)


def _philox2x32_fold_in(key, data):
  out0, _ = philox2x32_hash(words(key, 1)[0], _c(0), lax.convert_element_type(data, _U32))
  return lax.reshape(out0, (1,))


def _philox2x32_random_bits(key, bit_width, shape):
  c_hi, c_lo = counters(shape)
  out0, out1 = philox2x32_hash(words(key, 1)[0], c_hi, c_lo)
  return _bits((out0, out1), bit_width, (out0, out1))


philox2x32_prng_impl = prng.PRNGImpl(
    key_shape=(1,), seed=_philox2x32_seed, split=_philox2x32_split,
    random_bits=_philox2x32_random_bits, fold_in=_philox2x32_fold_in, name="philox2x32",
    tag="phx2")
prng.register_prng(philox2x32_prng_impl)


# ----------------------------------------------------------------------------- philox4x32

def philox4x32_hash(k0, k1, x0, x1, x2, x3):
  k0, k1, x0, x1, x2, x3 = _broadcast(k0, k1, x0, x1, x2, x3)
  m0 = lax.full(np.shape(x0), _PHILOX_M4[0], _U32)
  m1 = lax.full(np.shape(x0), _PHILOX_M4[1], _U32)
  for rnd in range(10):
    if rnd:
      k0, k1 = _add(k0, _c(_PHILOX_W[0])), _add(k1, _c(_PHILOX_W[1]))
    lo0, hi0 = lax.mul(m0, x0), lax.mulhi(m0, x0)
    lo1, hi1 = lax.mul(m1, x2), lax.mulhi(m1, x2)
    x0, x1, x2, x3 = _xor(hi1, x1, k0), lo1, _xor(hi0, x3, k1), lo0
  return x0, x1, x2, x3


def _philox4x32_seed(seed):
  hi, lo = _seed_words(seed)
  out = philox4x32_hash(_c(0), _c(0), hi, lo, _c(0), _c(0))
  return join_words(out[0], out[1])


def _philox4x32_split(key, shape):
  k0, k1 = words(key)
  c_hi, c_lo = counters(shape)
  zero = lax.full(tuple(shape), 0, _U32)
  out = philox4x32_hash(k0, k1, zero, zero, c_hi, c_lo)
  return join_words(out[0], out[1])


def _philox4x32_fold_in(key, data):
  k0, k1 = words(key)
  out = philox4x32_hash(k0, k1, _c(0), _c(0), _c(0), lax.convert_element_type(data, _U32))
  return join_words(out[0], out[1])


def _philox4x32_random_bits(key, bit_width, shape):
  k0, k1 = words(key)
  c_hi, c_lo = counters(shape)
  zero = lax.full(tuple(shape), 0, _U32)
  out = philox4x32_hash(k0, k1, c_hi, c_lo, zero, zero)
  return _bits(out, bit_width, (out[0], out[1]))


philox4x32_prng_impl = prng.PRNGImpl(
    key_shape=(2,), seed=_philox4x32_seed, split=_philox4x32_split,
    random_bits=_philox4x32_random_bits, fold_in=_philox4x32_fold_in, name="philox4x32",
    tag="phx4")
prng.register_prng(philox4x32_prng_impl)


# ----------------------------------------------------------------------------- threefry4x32

_ROTATIONS_4X32 = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10),
                   (18, 20))
_KS_PARITY = 0x1BD11BDA


def _rotl(x, d):
  return lax.bitwise_or(lax.shift_left(x, _c(d)), lax.shift_right_logical(x, _c(32 - d)))


def threefry4x32_hash(k0, k1, k2, k3, x0, x1, x2, x3):
  k0, k1, k2, k3, x0, x1, x2, x3 = _broadcast(k0, k1, k2, k3, x0, x1, x2, x3)
  ks = [k0, k1, k2, k3, _xor(k0, k1, k2, k3, _c(_KS_PARITY))]
  x0, x1, x2, x3 = _add(x0, ks[0]), _add(x1, ks[1]), _add(x2, ks[2]), _add(x3, ks[3])
  for rnd in range(20):
    r0, r1 = _ROTATIONS_4X32[rnd % 8]
    if rnd % 2 == 0:
      x0 = _add(x0, x1)
      x1 = _xor(x0, _rotl(x1, r0))
      x2 = _add(x2, x3)
      x3 = _xor(x2, _rotl(x3, r1))
    else:
      x0 = _add(x0, x3)
      x3 = _xor(x0, _rotl(x3, r0))
      x2 = _add(x2, x1)
      x1 = _xor(x2, _rotl(x1, r1))
    if rnd % 4 == 3:
      i = rnd // 4
      x0, x1 = _add(x0, ks[(1 + i) % 5]), _add(x1, ks[(2 + i) % 5])
      x2 = _add(x2, ks[(3 + i) % 5])
      x3 = _add(_add(x3, ks[(4 + i) % 5]), _c(1 + i))
  return x0, x1, x2, x3


def _threefry4x32_seed(seed):
  hi, lo = _seed_words(seed)
  zero = _c(0)
  return join_words(*threefry4x32_hash(hi, lo, zero, zero, zero, zero, zero, zero))


def _threefry4x32_split(key, shape):
  c_hi, c_lo = counters(shape)
  zero = lax.full(tuple(shape), 0, _U32)
  return join_words(*threefry4x32_hash(*words(key, 4), zero, zero, c_hi, c_lo))


def _threefry4x32_fold_in(key, data):
  zero = _c(0)
  return join_words(*threefry4x32_hash(*words(key, 4), zero, zero, zero,
                                       lax.convert_element_type(data, _U32)))


def _threefry4x32_random_bits(key, bit_width, shape):
  c_hi, c_lo = counters(shape)
  zero = lax.full(tuple(shape), 0, _U32)
  out = threefry4x32_hash(*words(key, 4), c_hi, c_lo, zero, zero)
  return _bits(out, bit_width, (_xor(out[0], out[2]), _xor(out[1], out[3])))


threefry4x32_prng_impl = prng.PRNGImpl(
    key_shape=(4,), seed=_threefry4x32_seed, split=_threefry4x32_split,
    random_bits=_threefry4x32_random_bits, fold_in=_threefry4x32_fold_in,
    name="threefry4x32", tag="fry4")
prng.register_prng(threefry4x32_prng_impl)
