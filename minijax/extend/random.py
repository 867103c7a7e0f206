"""`jax.extend.random`: defining a PRNG implementation of one's own, and the built-in ones.

`define_prng_impl` makes a `PRNGImpl` from its five functions on raw key data (see
`minijax.random.prng`); `random.key(seed, impl=it)` and `random.wrap_key_data(data,
impl=it)` make typed keys of it, which every sampler then draws from."""
from __future__ import annotations

from typing import Callable

from minijax.lax.prng import threefry2x32_p
from minijax.random import prng
from minijax.random.rbg import rbg_prng_impl, unsafe_rbg_prng_impl
from minijax.random.threefry2x32 import threefry_2x32, threefry_prng_impl


def define_prng_impl(*, key_shape: tuple[int, ...], seed: Callable, split: Callable,
                     random_bits: Callable, fold_in: Callable, name: str = "<unnamed>",
                     tag: str = "?") -> prng.PRNGImpl:
  """A PRNG implementation from `seed(seed) -> key data`, `split(key, shape)`,
  `random_bits(key, bit_width, shape)` and `fold_in(key, data)`, whose key data are uint32
  arrays of shape `key_shape` (not registered by name: pass it as `impl=`)."""
  return prng.PRNGImpl(tuple(key_shape), seed, split, random_bits, fold_in, name, tag)


def seed_with_impl(impl: prng.PRNGImpl, seed) -> prng.PRNGKeyArray:
  """A typed key of `impl` from an integer seed."""
  return prng.random_seed(seed, prng.resolve_impl(impl))


random_seed = prng.random_seed

__all__ = ["define_prng_impl", "random_seed", "rbg_prng_impl", "seed_with_impl",
           "threefry2x32_p", "threefry_2x32", "threefry_prng_impl", "unsafe_rbg_prng_impl"]
