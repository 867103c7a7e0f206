"""The public key API of `minijax.random`: making keys (`key`, `PRNGKey`,
`wrap_key_data`), deriving them (`split`, `fold_in`, `clone`) and asking about them
(`key_data`, `key_impl`, `key_dtype`), over the implementations of `prng.py`.

Every random function accepts a typed key (`random.key`) or a legacy one (raw uint32 data
from `random.PRNGKey`, read with the default implementation; the `jax_legacy_prng_key`
flag may warn about or refuse them).  `unwrap` turns either into a typed key, which is
what the samplers' compiled programs take, and `rewrap` gives results back in the kind
they came in.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from minijax import lax
from minijax.config import config
from minijax.random import prng
from minijax.random.prng import PRNGKeyArray, has_array_interface, random_bits  # noqa: F401
from minijax.random import threefry2x32, rbg, philox  # noqa: F401  (registers the impls)

_LEGACY_MESSAGE = ("Legacy uint32 key array passed as key to jax.random function. Please "
                   "create keys using jax.random.key(). If use of a raw key array was "
                   "intended, set jax_legacy_prng_key=\"allow\".")


def unwrap(name: str, key, allow_batched: bool = False):
  """`(typed key, was_typed)` for a typed or raw key passed to `random.<name>`."""
  if isinstance(key, PRNGKeyArray):
    keys, typed = key, True
  elif not has_array_interface(key):
    raise TypeError(f"random.{name} expects a PRNG key (from random.key or random.PRNGKey) "
                    f"as its key argument, got {key!r} of type {type(key).__name__}")
  else:
    impl = prng.default_prng_impl()
    prng.check_key_data(impl, key, f"key passed to random.{name}")
    mode = config.legacy_prng_key
    if mode == "error":
      raise ValueError(_LEGACY_MESSAGE)
    if mode == "warn":
      warnings.warn(_LEGACY_MESSAGE, UserWarning, stacklevel=3)
    keys, typed = PRNGKeyArray(impl, lax.convert_to_array(key)), False
  if not allow_batched and keys.ndim:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{keys.shape} != (). Use jax.vmap for batching.")
  return keys, typed


split_keys = prng.random_split


def rewrap(typed: bool, keys: PRNGKeyArray):
  return keys if typed else keys._base_array


def shape_tuple(shape, name: str) -> tuple:
  """A shape argument (a sequence of ints, or one int) as a tuple of non-negative ints."""
  if isinstance(shape, (int, np.integer)):
    shape = (shape,)
  try:
    out = tuple(operator.index(d) for d in shape)
  except TypeError:
    raise TypeError(f"random.{name}: shapes must be 1D sequences of concrete values of "
                    f"integer type, got {shape!r}") from None
  if any(d < 0 for d in out):
    raise ValueError(f"random.{name}: shape {out} has a negative dimension")
  return out


# ----------------------------------------------------------------------------- public key API

def _impl_of(ctor: str, impl, dtype) -> prng.PRNGImpl:
  if dtype is not None:
    if impl is not None:
      raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to {ctor}")
    impl = dtype
  return prng.resolve_impl(impl)


def _seeded(ctor: str, seed, impl) -> PRNGKeyArray:
  if isinstance(seed, PRNGKeyArray):
    raise TypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                    f"{tuple(np.shape(seed))} != (). Use jax.vmap for batching")
  dtype = seed.aval.dtype if hasattr(seed, "aval") else np.result_type(seed)
  if isinstance(seed, (bool, np.bool_)) or not (
      isinstance(seed, int) or np.issubdtype(dtype, np.integer)):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
  return prng.random_seed(seed, impl)


def key(seed, *, impl=None, dtype=None):
  """A typed PRNG key (`key<fry>[]` by default) from an integer seed."""
  return _seeded("key", seed, _impl_of("random.key", impl, dtype))


def PRNGKey(seed, *, impl=None):
  """A legacy PRNG key: its raw data (`uint32[2]` for threefry2x32) from an integer seed
  (a typed key when the `jax_enable_custom_prng` flag is on)."""
  keys = _seeded("PRNGKey", seed, prng.resolve_impl(impl))
  return keys if config.enable_custom_prng else keys._base_array


def _split_impl(keys, *, shape):
  return prng.random_split(keys, shape)


def split(key, num=2):
  """`num` new keys (or an array of keys of shape `num`, a tuple) from one key."""
  from minijax.random._samplers import compiled
  keys, typed = unwrap("split", key)
  shape = tuple(num) if isinstance(num, (tuple, list)) else (num,)
  shape = shape_tuple(shape, "split")
  return rewrap(typed, compiled(_split_impl, shape=shape)(keys))


def _fold_in_impl(keys, msg):
  import minijax.numpy as jnp
  return prng.random_fold_in(keys, jnp.asarray(msg).astype(np.uint32))


def fold_in(key, data):
  """A new key that is a deterministic function of `key` and the 32-bit integer `data`."""
  keys, typed = unwrap("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                    f"{tuple(np.shape(data))} != (). Use jax.vmap for batching.")
  from minijax.random._samplers import compiled
  if isinstance(data, (int, np.integer)):
    if not 0 <= int(data) < 2 ** 32:
      raise OverflowError(f"Python integer {data} out of bounds for uint32 (fold_in data)")
    data = np.uint32(data)
  return rewrap(typed, compiled(_fold_in_impl)(keys, data))


def key_data(keys):
  """The uint32 data of a key array (`uint32[*keys.shape, *key_shape]`)."""
  keys, _ = unwrap("key_data", keys, allow_batched=True)
  return keys._base_array


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """A typed key array holding `key_bits_array` (uint32, ending in the key shape)."""
  impl = _impl_of("random.wrap_key_data", impl, dtype)
  if isinstance(key_bits_array, PRNGKeyArray):
    raise TypeError("wrap_key_data takes uint32 key data, got a typed key array; use "
                    "random.key_data to unwrap it first")
  return prng.random_wrap(key_bits_array, impl=impl)


def key_dtype(impl_spec=None) -> prng.KeyTy:
  """The dtype of typed keys of an implementation (`key<fry>` for threefry2x32)."""
  return prng.KeyTy(prng.resolve_impl(impl_spec))


def key_impl(keys):
  """The implementation of a key array: its name for the built-in ones, else the
  `PRNGImpl` itself."""
  keys, _ = unwrap("key_impl", keys, allow_batched=True)
  impl = keys._impl
  return impl.name if prngs_builtin(impl) else impl


def prngs_builtin(impl) -> bool:
  return prng.prngs.get(impl.name) is impl


def clone(key):
  """The key itself (keys are immutable values in minijax)."""
  return key

