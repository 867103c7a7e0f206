"""PRNG keys: typed key arrays, raw `uint32[..., 2]` keys, and the Threefry-2x32 key
operations (seed, split, fold_in, random bits) on their data.

A key is two uint32 words.  Typed keys (`random.key`) are `PRNGKeyArray`s: a pytree node
whose one leaf is the key data, `uint32[*shape, 2]`, and whose `shape`, `ndim`, `dtype`
(`key<fry>`), indexing and `reshape` are those of the array of keys it stands for.  Being
a pytree is what makes it work everywhere without new machinery: `jit` passes the data in
and out as an ordinary argument, `vmap` maps its leading axes (a key array of shape (n,) has
data (n, 2), so `in_axes=0` splits it into n keys), `scan` and `while_loop` carry it, and
transformations that look inside values (grad, partial evaluation) see uint32 data, which
has no derivative.  The price is that a key is not an `Array`: arithmetic on it is an error,
as in JAX, and a negative `vmap` axis would count from the data's trailing dimension (use a
non-negative one).  Legacy keys (`random.PRNGKey`) are the raw data itself.

The key operations are plain functions of the data built on the `threefry2x32` primitive,
bit for bit those of JAX's defaults (threefry2x32 with `jax_threefry_partitionable`):
element i (in row-major order) of anything drawn from key (k1, k2) is the encryption of
the counter pair (i >> 32, i & 0xffffffff); `split(key, shape)` keeps both output words of
each counter as a new key, and `random_bits` xors them (32 bits), keeps their low bits
(8, 16) or joins them (64).  `fold_in(key, d)` is the key at counter (0, d), so
`fold_in(key, i)` equals `split(key, n)[i]`.  A seed becomes the key (high word, low
word) of its 64-bit two's complement value (its high word is 0 for a 32-bit seed).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from minijax import lax, tree_util
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.core.trace import Tracer

IMPL_NAME = "threefry2x32"
_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
                64: np.dtype(np.uint64)}


class KeyDType:
  """The dtype of a typed key array, printed `key<fry>` as in JAX."""
  name = "key<fry>"
  impl = IMPL_NAME

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __eq__(self, other):
    return isinstance(other, KeyDType) or other == self.name

  def __hash__(self):
    return hash(self.name)


key_dtype_ = KeyDType()


class PRNGKeyArray:
  """An array of PRNG keys (see the module docstring); its data is `uint32[*shape, 2]`."""
  __slots__ = ("_base",)
  __array_priority__ = 100

  def __init__(self, key_data):
    self._base = key_data

  @property
  def shape(self) -> tuple:
    return tuple(np.shape(self._base))[:-1]

  @property
  def ndim(self) -> int:
    return len(self.shape)

  @property
  def size(self) -> int:
    return math.prod(self.shape)

  @property
  def dtype(self) -> KeyDType:
    return key_dtype_

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object (a scalar key array)")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d key array")
    return (self[i] for i in range(self.shape[0]))

  def __getitem__(self, idx):
    idx = idx if isinstance(idx, tuple) else (idx,)
    # the key words' trailing axis is never indexed
    full = (*idx, slice(None)) if any(e is Ellipsis for e in idx) else (*idx, Ellipsis,
                                                                        slice(None))
    return PRNGKeyArray(self._base[full])

  def reshape(self, *shape, order="C"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
      shape = tuple(shape[0])
    size = self.size
    if -1 in shape:
      known = math.prod(s for s in shape if s != -1)
      shape = tuple(size // known if s == -1 else s for s in shape)
    import minijax.numpy as jnp
    return PRNGKeyArray(jnp.reshape(self._base, (*shape, 2), order=order))

  def ravel(self):
    return self.reshape(-1)

  flatten = ravel

  @property
  def T(self):
    import minijax.numpy as jnp
    perm = (*reversed(range(self.ndim)), self.ndim)
    return PRNGKeyArray(jnp.transpose(self._base, perm))

  def __eq__(self, other):
    if not isinstance(other, PRNGKeyArray):
      return NotImplemented
    import minijax.numpy as jnp
    return jnp.all(jnp.equal(self._base, other._base), axis=-1)

  def __ne__(self, other):
    if not isinstance(other, PRNGKeyArray):
      return NotImplemented
    import minijax.numpy as jnp
    return jnp.logical_not(self == other)

  __hash__ = None

  def _unsupported(self, *args, **kwargs):
    raise TypeError(f"arithmetic is not defined on key arrays ({self.dtype}); use "
                    "random.key_data(key) to get at the uint32 data")

  __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unsupported
  __truediv__ = __rtruediv__ = __neg__ = __array__ = _unsupported

  def block_until_ready(self):
    if hasattr(self._base, "block_until_ready"):
      self._base.block_until_ready()
    return self

  def __repr__(self):
    return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._base}"

  def __str__(self):
    return repr(self)


tree_util.register_pytree_node(PRNGKeyArray, lambda k: ((k._base,), None),
                               lambda _, leaves: PRNGKeyArray(leaves[0]))


# ----------------------------------------------------------------------------- checks

def _has_array_interface(x) -> bool:
  return isinstance(x, (np.ndarray, np.generic, Tracer)) or hasattr(x, "aval")


def check_key_data(key_data, where: str = "key data"):
  """Raises TypeError unless `key_data` is uint32 with a trailing dimension of 2."""
  if not _has_array_interface(key_data):
    raise TypeError(f"minijax encountered invalid PRNG {where}: expected an array of "
                    f"uint32 key data with a trailing dimension of 2 (from random.PRNGKey) "
                    f"or a typed key (from random.key), got {key_data!r} of type "
                    f"{type(key_data).__name__}")
  aval = get_aval(key_data)
  if not aval.shape:
    raise TypeError(f"minijax encountered invalid PRNG {where}: expected key data of "
                    f"rank >= 1 ending in 2 (uint32[..., 2]), got {aval.str_short()}")
  if aval.shape[-1] != 2:
    raise TypeError(f"minijax encountered invalid PRNG {where}: expected key data whose "
                    f"shape ends with (2,), got shape={aval.shape}")
  if aval.dtype != dtypes.uint32:
    raise TypeError(f"minijax encountered invalid PRNG {where}: expected key data of dtype "
                    f"uint32, got dtype={aval.dtype}")


def unwrap(name: str, key, allow_batched: bool = False):
  """`(key data, was_typed)` for a typed or raw key passed to `random.<name>`."""
  if isinstance(key, PRNGKeyArray):
    data, typed = key._base, True
  elif not _has_array_interface(key):
    raise TypeError(f"random.{name} expects a PRNG key (from random.key or random.PRNGKey) "
                    f"as its key argument, got {key!r} of type {type(key).__name__}")
  else:
    check_key_data(key, f"key passed to random.{name}")
    data, typed = key, False
  if not allow_batched and len(np.shape(data)) > 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{tuple(np.shape(data))[:-1]} != (). Use minijax.vmap for batching.")
  return data, typed


def rewrap(typed: bool, data):
  return PRNGKeyArray(data) if typed else data


# ----------------------------------------------------------------------------- threefry on data

def _words(key_data):
  """The two uint32 words of a single key's data `uint32[2]` (rank-0 each)."""
  k = lax.convert_to_array(key_data)
  return (lax.reshape(lax.slice(k, (0,), (1,)), ()),
          lax.reshape(lax.slice(k, (1,), (2,)), ()))


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


def threefry_split(key_data, shape) -> object:
  """uint32[*shape, 2]: one new key per counter."""
  k1, k2 = _words(key_data)
  hi, lo = counters(shape)
  b1, b2 = lax.threefry2x32(k1, k2, hi, lo)
  shape = tuple(shape)
  n = len(shape)
  b1 = lax.broadcast_in_dim(b1, (*shape, 1), tuple(range(n)))
  b2 = lax.broadcast_in_dim(b2, (*shape, 1), tuple(range(n)))
  return lax.concatenate([b1, b2], n)


def threefry_fold_in(key_data, data) -> object:
  """uint32[2]: the key at counter (0, data)."""
  k1, k2 = _words(key_data)
  zero = lax.full((), 0, dtypes.uint32)
  b1, b2 = lax.threefry2x32(k1, k2, zero, data)
  return lax.concatenate([lax.reshape(b1, (1,)), lax.reshape(b2, (1,))], 0)


def random_bits(key_data, bit_width: int, shape):
  """Uniformly random `uint{bit_width}` values of `shape` from one key's data."""
  k1, k2 = _words(key_data)
  hi, lo = counters(shape)
  b1, b2 = lax.threefry2x32(k1, k2, hi, lo)
  if bit_width == 64:
    u64 = dtypes.uint64
    if dtypes.canonicalize_dtype(u64) != u64:
      raise ValueError("64-bit random bits need 64-bit types: enable them with "
                       "minijax.config.update('enable_x64', True)")
    high = lax.convert_element_type(b1, u64)
    low = lax.convert_element_type(b2, u64)
    return lax.bitwise_or(lax.shift_left(high, lax.full(shape, 32, u64)), low)
  bits = lax.bitwise_xor(b1, b2)
  if bit_width == 32:
    return bits
  return lax.convert_element_type(bits, _UINT_DTYPES[bit_width])


def seed_to_key_data(seed):
  """uint32[2] key data of an integer seed: its two's complement (high word, low word), the
  high word being 0 for a seed of 32 bits or fewer.  A Python int is an int64 first, and,
  as every 64-bit value without x64, is then wrapped to 32 bits (JAX does the same)."""
  if isinstance(seed, (bool, np.bool_)):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
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


def check_impl(impl, what: str = "impl"):
  if impl is None or impl == IMPL_NAME or isinstance(impl, KeyDType):
    return
  if isinstance(impl, str):
    raise ValueError(f'unrecognized PRNG implementation "{impl}"; minijax implements '
                     f'"{IMPL_NAME}" only')
  raise TypeError(f"unrecognized type {type(impl)} for specifying the PRNG implementation "
                  f"({what}); minijax implements '{IMPL_NAME}' only")


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

def _key_data_of_seed(ctor: str, seed, impl):
  check_impl(impl)
  if isinstance(seed, PRNGKeyArray):
    raise TypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                    f"{tuple(np.shape(seed))} != (). Use minijax.vmap for batching")
  return seed_to_key_data(seed)


def key(seed, *, impl=None, dtype=None):
  """A typed PRNG key (`key<fry>[]`) from an integer seed."""
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to random.key")
    impl = dtype
  return PRNGKeyArray(_key_data_of_seed("key", seed, impl))


def PRNGKey(seed, *, impl=None):
  """A legacy PRNG key: its raw data, `uint32[2]`, from an integer seed."""
  return _key_data_of_seed("PRNGKey", seed, impl)


def _compiled_split(shape):
  from minijax.random._samplers import compiled
  return compiled(_split_impl, shape=shape)


def _split_impl(data, *, shape):
  return threefry_split(data, shape)


def split(key, num=2):
  """`num` new keys (or an array of keys of shape `num`, a tuple) from one key."""
  data, typed = unwrap("split", key)
  shape = tuple(num) if isinstance(num, (tuple, list)) else (num,)
  shape = shape_tuple(shape, "split")
  return rewrap(typed, _compiled_split(shape)(data))


def _fold_in_impl(data, msg):
  import minijax.numpy as jnp
  return threefry_fold_in(data, jnp.asarray(msg).astype(dtypes.uint32))


def fold_in(key, data):
  """A new key that is a deterministic function of `key` and the 32-bit integer `data`."""
  key_data_, typed = unwrap("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                    f"{tuple(np.shape(data))} != (). Use minijax.vmap for batching.")
  from minijax.random._samplers import compiled
  if isinstance(data, (int, np.integer)):
    if not 0 <= int(data) < 2 ** 32:
      raise OverflowError(f"Python integer {data} out of bounds for uint32 (fold_in data)")
    data = np.uint32(data)
  return rewrap(typed, compiled(_fold_in_impl)(key_data_, data))


def key_data(keys):
  """The uint32 data of a key array (`uint32[*keys.shape, 2]`)."""
  data, _ = unwrap("key_data", keys, allow_batched=True)
  return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """A typed key array holding `key_bits_array` (uint32, trailing dimension 2)."""
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                       "random.wrap_key_data")
    impl = dtype
  check_impl(impl)
  if isinstance(key_bits_array, PRNGKeyArray):
    raise TypeError("wrap_key_data takes uint32 key data, got a typed key array; use "
                    "random.key_data to unwrap it first")
  data = key_bits_array if _has_array_interface(key_bits_array) else np.asarray(
      key_bits_array)
  check_key_data(data)
  return PRNGKeyArray(lax.convert_to_array(data) if isinstance(data, np.ndarray) else data)


def key_dtype(impl=None) -> KeyDType:
  """The dtype of typed keys (`key<fry>`)."""
  check_impl(impl)
  return key_dtype_


def key_impl(keys) -> str:
  """The name of the PRNG implementation of a key array: 'threefry2x32'."""
  unwrap("key_impl", keys, allow_batched=True)
  return IMPL_NAME


def clone(key):
  """The key itself (keys are immutable values in minijax)."""
  return key
