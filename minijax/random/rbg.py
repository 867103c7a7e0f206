"""The `rbg` and `unsafe_rbg` PRNG implementations: random bits from XLA's
`RngBitGenerator` (`lax.rng_bit_generator`), keys of four uint32 words.

Both seed a key as two copies of the threefry2x32 key of the seed and draw bits with
`rng_bit_generator` (XLA's default algorithm).  `rbg` splits and folds in as threefry2x32
does on each half of the key; `unsafe_rbg` derives keys from the bit generator itself
(every tenth of `10 n` draws of four words for `split`, the xor with the last of ten draws
seeded by the datum for `fold_in`), which is faster and has no proof of independence.
XLA does not promise the same bits on every backend or version; on CPU with jaxlib 0.10.2
they are JAX 0.10.2's.
"""
from __future__ import annotations

import math

import numpy as np

from minijax import api, lax
from minijax.random import prng
from minijax.random.threefry2x32 import threefry_fold_in, threefry_seed, threefry_split

__all__ = ["rbg_prng_impl", "unsafe_rbg_prng_impl"]


def _rbg_seed(seed):
  half = threefry_seed(seed)
  return lax.concatenate([half, half], 0)


def _rbg_split(key, shape):
  halves = lax.reshape(key, (2, 2))
  split = api.vmap(lambda half: threefry_split(half, shape), out_axes=len(shape))(halves)
  return lax.reshape(split, (*shape, 4))


def _rbg_fold_in(key, data):
  halves = lax.reshape(key, (2, 2))
  return lax.reshape(api.vmap(lambda half: threefry_fold_in(half, data))(halves), (4,))


def _rbg_random_bits(key, bit_width, shape):
  if bit_width not in prng.UINT_DTYPES:
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  _, bits = lax.rng_bit_generator(key, tuple(shape), dtype=prng.UINT_DTYPES[bit_width])
  return bits


rbg_prng_impl = prng.PRNGImpl(
    key_shape=(4,), seed=_rbg_seed, split=_rbg_split, random_bits=_rbg_random_bits,
    fold_in=_rbg_fold_in, name="rbg", tag="rbg")
prng.register_prng(rbg_prng_impl)


def _unsafe_rbg_split(key, shape):
  num = math.prod(shape)
  _, keys = lax.rng_bit_generator(key, (10 * num, 4), dtype=np.uint32)
  return lax.reshape(lax.slice(keys, (0, 0), (10 * num, 4), (10, 1)), (*shape, 4))


def _unsafe_rbg_fold_in(key, data):
  _, bits = lax.rng_bit_generator(_rbg_seed(data), (10, 4), dtype=np.uint32)
  return lax.bitwise_xor(key, lax.reshape(lax.slice(bits, (9, 0), (10, 4)), (4,)))


unsafe_rbg_prng_impl = prng.PRNGImpl(
    key_shape=(4,), seed=_rbg_seed, split=_unsafe_rbg_split, random_bits=_rbg_random_bits,
    fold_in=_unsafe_rbg_fold_in, name="unsafe_rbg", tag="urbg")
prng.register_prng(unsafe_rbg_prng_impl)
