"""PRNG implementations and typed key arrays.

A PRNG implementation (`PRNGImpl`) is five functions on raw key data, the uint32 array of
shape `key_shape` that one key is: `seed(int) -> key`, `split(key, shape) -> keys of
shape (*shape, *key_shape)`, `fold_in(key, uint32) -> key` and `random_bits(key,
bit_width, shape) -> uint{bit_width}[shape]`.  `prngs` holds the registered ones by name
(threefry2x32, the default; rbg and unsafe_rbg on XLA's bit generator; philox2x32,
philox4x32 and threefry4x32), and `register_prng` adds one.

A typed key array (`PRNGKeyArray`, made by `random.key`) pairs an implementation with its
data `uint32[*shape, *key_shape]`; its dtype is `KeyTy(impl)` (`key<fry>`), an extended
dtype under `dtypes.prng_key`.  It is a pytree node whose one leaf is the data and whose
static part is the implementation, which is what carries it through `jit` (in and out),
`vmap` (its leading axes are the data's), `scan`/`while_loop`/`cond` carries, `grad`
(uint32 data has no derivative: a key array's tangent is a key array over float0 data,
whose dtype is float0, JAX's tangent dtype of keys) and `custom_jvp`/`custom_vjp`.  Operations that make
sense on an array of keys (indexing, `reshape`, `.T`, `jnp.concatenate`, `lax.slice`,
`dynamic_update_slice`, `.at[]`, `jnp.where`, ...) act on the data with its trailing
key dimensions kept whole (`keyops.py`); arithmetic and conversion to numpy raise.
Legacy keys (`random.PRNGKey`) are the raw data itself, read with the default
implementation.
"""
from __future__ import annotations

import copy as _copy
import math
from typing import Callable, NamedTuple

import numpy as np

from minijax.tree_util import internal as tree_util
from minijax.config import config
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.core.trace import Tracer
from minijax.runtime import array as array_lib

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}


class PRNGImpl(NamedTuple):
  """A PRNG implementation: functions of raw key data (see the module docstring)."""
  key_shape: tuple
  seed: Callable
  split: Callable
  random_bits: Callable
  fold_in: Callable
  name: str = "<unnamed>"
  tag: str = "?"

  def __hash__(self):
    return hash(self.tag)

  def __eq__(self, other):
    return self is other

  def __ne__(self, other):
    return self is not other

  def __str__(self):
    return self.tag

  def pprint(self) -> str:
    return f"{self.name} (key shape {self.key_shape})"


prngs: dict[str, PRNGImpl] = {}


def register_prng(impl: PRNGImpl) -> None:
  if impl.name in prngs:
    raise ValueError(f"PRNG with name {impl.name} already registered: {impl}")
  prngs[impl.name] = impl


def default_prng_impl() -> PRNGImpl:
  """The implementation of keys made without `impl=` (the `jax_default_prng_impl` flag)."""
  return prngs[config.default_prng_impl]


class KeyTy(dtypes.ExtendedDType):
  """The dtype of typed keys of one implementation, printed `key<tag>`."""
  type = dtypes.prng_key

  def __init__(self, impl: PRNGImpl):
    self._impl = impl

  @property
  def impl(self) -> PRNGImpl:
    return self._impl

  @property
  def name(self) -> str:
    return f"key<{self._impl.tag}>"

  @property
  def itemsize(self) -> int:
    return math.prod(self._impl.key_shape) * 4

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def spec_value(self, spec):
    """A key array over a ShapeDtypeStruct of its data: what tracing takes for `spec`."""
    data = type(spec)((*spec.shape, *self._impl.key_shape), dtypes.uint32)
    return PRNGKeyArray(self._impl, data)

  @property
  def physical_shape(self) -> tuple[int, ...]:
    return self._impl.key_shape

  def physical(self, value):
    return random_unwrap(value)

  def wrap(self, data):
    return random_wrap(data, impl=self._impl)

  def __eq__(self, other):
    return type(other) is KeyTy and self._impl is other._impl

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash((KeyTy, self._impl))


def resolve_impl(spec) -> PRNGImpl:
  """The implementation named by `spec`: None (the default), a name, a `PRNGImpl` or a key
  dtype."""
  if spec is None:
    return default_prng_impl()
  if isinstance(spec, PRNGImpl):
    return spec
  if isinstance(spec, KeyTy):
    return spec._impl
  if isinstance(spec, str):
    if spec not in prngs:
      raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: '
                       f'{", ".join(repr(n) for n in prngs)}?')
    return prngs[spec]
  raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")


# ----------------------------------------------------------------------------- key arrays

class PRNGKeyArray:
  """An array of PRNG keys of one implementation over its data `uint32[*shape,
  *key_shape]` (see the module docstring).  Methods shared with arrays that act on the
  data are installed by `keyops.py`."""
  __slots__ = ("_impl", "_base_array")
  __array_priority__ = 100

  def __init__(self, impl: PRNGImpl, key_data):
    self._impl = impl
    self._base_array = key_data

  @property
  def shape(self) -> tuple:
    n = len(self._impl.key_shape)
    full = tuple(np.shape(self._base_array))
    return full[:len(full) - n]

  @property
  def ndim(self) -> int:
    return len(self.shape)

  @property
  def size(self) -> int:
    return math.prod(self.shape)

  @property
  def dtype(self):
    # A tangent or cotangent of keys holds float0 data: it is float0 (JAX's key tangent).
    if getattr(self._base_array, "dtype", None) == dtypes.float0:
      return dtypes.float0
    return KeyTy(self._impl)

  @property
  def itemsize(self) -> int:
    return self.dtype.itemsize

  @property
  def nbytes(self) -> int:
    return self.itemsize * self.size

  def _data_attr(self, name):
    base = self._base_array
    if isinstance(base, Tracer) or not hasattr(base, name):
      raise AttributeError(f"{name} is not available on a traced key array")
    return getattr(base, name)

  device = property(lambda self: self._data_attr("device"))
  sharding = property(lambda self: self._data_attr("sharding"))
  is_fully_addressable = property(lambda self: self._data_attr("is_fully_addressable"))
  committed = property(lambda self: self._data_attr("committed"))

  def devices(self):
    return self._data_attr("devices")()

  # the data's own answers, for what a key array shares with its data
  is_fully_replicated = property(lambda self: self._data_attr("is_fully_replicated"))
  addressable_shards = property(lambda self: self._data_attr("addressable_shards"))
  global_shards = property(lambda self: self._data_attr("global_shards"))

  def on_device_size_in_bytes(self) -> int:
    return self._data_attr("on_device_size_in_bytes")()

  def unsafe_buffer_pointer(self) -> int:
    return self._data_attr("unsafe_buffer_pointer")()

  def copy_to_host_async(self) -> None:
    self._data_attr("copy_to_host_async")()

  def addressable_data(self, index: int) -> "PRNGKeyArray":
    return PRNGKeyArray(self._impl, self._data_attr("addressable_data")(index))

  def delete(self):
    self._data_attr("delete")()

  def is_deleted(self) -> bool:
    return self._data_attr("is_deleted")()

  def block_until_ready(self):
    if hasattr(self._base_array, "block_until_ready"):
      self._base_array.block_until_ready()
    return self

  def copy(self):
    return PRNGKeyArray(self._impl, self._base_array.copy()
                        if hasattr(self._base_array, "copy") else self._base_array)

  def __copy__(self):
    return self.copy()

  def __deepcopy__(self, memo):
    return PRNGKeyArray(self._impl, _copy.deepcopy(self._base_array, memo))

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d key array")
    return (self[i] for i in range(self.shape[0]))

  __hash__ = None

  def __array__(self, *args, **kwargs):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. "
                    "Use jax.random.key_data(arr) if you wish to extract the underlying "
                    "integer array.")

  def __bool__(self):
    raise TypeError("The truth value of a key array is not defined")

  def __repr__(self):
    return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._base_array}"

  def __str__(self):
    return repr(self)


def _unflatten(impl: PRNGImpl, leaves) -> PRNGKeyArray:
  data = leaves[0]
  shape = getattr(data, "shape", None)
  n = len(impl.key_shape)
  if (shape is not None and getattr(data, "dtype", None) == dtypes.uint32
      and (len(shape) < n or tuple(shape[len(shape) - n:]) != tuple(impl.key_shape))):
    # e.g. vmap(in_axes=-1) of keys maps the key words themselves (data axes count them)
    raise ValueError(f"a transformation split a key array of {impl.name} across its key "
                     f"words: its data became {tuple(shape)}, which does not end with the "
                     f"key shape {tuple(impl.key_shape)}; key arrays take non-negative "
                     f"axes (in_axes, out_axes, scan's axis) counted over the keys' own "
                     f"dimensions")
  return PRNGKeyArray(impl, data)


# Users see a key array as one leaf of key dtype (JAX's view); transformations see its data.
tree_util.register_opaque_node(PRNGKeyArray, lambda k: ((k._base_array,), k._impl),
                               _unflatten)
array_lib.register_array_type(PRNGKeyArray)  # key arrays are Arrays, as in JAX


# ----------------------------------------------------------------------------- key data

def has_array_interface(x) -> bool:
  return isinstance(x, (np.ndarray, np.generic, Tracer)) or hasattr(x, "aval")


def check_key_data(impl: PRNGImpl, key_data, where: str = "key data") -> None:
  """TypeError unless `key_data` is uint32 and ends with the implementation's key shape."""
  if not has_array_interface(key_data):
    raise TypeError(f"JAX encountered invalid PRNG key data: expected an array of uint32 key "
                    f"data (from random.PRNGKey) or a typed key (from random.key) as the "
                    f"{where}, got {key_data!r} of type {type(key_data).__name__}")
  aval = get_aval(key_data)
  n = len(impl.key_shape)
  if aval.shape[len(aval.shape) - n:] != tuple(impl.key_shape) or len(aval.shape) < n:
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.shape to end "
                    f"with {tuple(impl.key_shape)} (the {impl.name} key shape); got "
                    f"shape={aval.shape} for impl={impl.name} ({where})")
  if aval.dtype != dtypes.uint32:
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.dtype = "
                    f"uint32; got dtype={aval.dtype} ({where})")


def _vmapped(fun, data, impl: PRNGImpl, *args):
  """`fun(one key's data, *args)` mapped over the leading (batch) axes of `data`."""
  batch = np.ndim(data) - len(impl.key_shape)
  if batch == 0:
    return fun(data, *args)
  from minijax import api
  mapped = fun
  for _ in range(batch):
    mapped = api.vmap(mapped, in_axes=(0,) + (None,) * len(args))
  return mapped(data, *args)


def random_seed(seeds, impl: PRNGImpl) -> PRNGKeyArray:
  """Keys of `impl` from integer seeds (any shape)."""
  from minijax import api
  offset = config.random_seed_offset
  if offset:
    import minijax.numpy as jnp
    seeds = jnp.add(seeds, offset)
  seeds = seeds if has_array_interface(seeds) else np.asarray(seeds)
  fun = impl.seed
  for _ in range(np.ndim(seeds)):
    fun = api.vmap(fun)
  return PRNGKeyArray(impl, fun(seeds))


def random_split(keys: PRNGKeyArray, shape: tuple) -> PRNGKeyArray:
  return PRNGKeyArray(keys._impl, _vmapped(keys._impl.split, keys._base_array, keys._impl,
                                           tuple(shape)))


def random_fold_in(keys: PRNGKeyArray, msgs) -> PRNGKeyArray:
  return PRNGKeyArray(keys._impl, _vmapped(keys._impl.fold_in, keys._base_array, keys._impl,
                                           msgs))


def random_bits(keys, bit_width: int, shape) -> object:
  """`uint{bit_width}[*keys.shape, *shape]` random bits (one draw of `shape` per key)."""
  if not isinstance(keys, PRNGKeyArray):
    raise TypeError(f"random_bits takes key array operand, got {keys!r}")
  if bit_width not in UINT_DTYPES:
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  if bit_width == 64 and dtypes.canonicalize_explicit_dtype(dtypes.uint64) != dtypes.uint64:
    raise ValueError("64-bit random bits need 64-bit types: enable them with "
                     "minijax.config.update('jax_enable_x64', True)")
  impl = keys._impl
  return _vmapped(lambda d, bw, s: impl.random_bits(d, bw, s), keys._base_array, impl,
                  bit_width, tuple(shape))


def random_wrap(base_arr, *, impl: PRNGImpl) -> PRNGKeyArray:
  """A key array of `impl` over uint32 data."""
  if isinstance(base_arr, PRNGKeyArray):
    raise TypeError("random_wrap takes an array of uint32 key data, got a key array")
  if not has_array_interface(base_arr):
    base_arr = np.asarray(base_arr)
  check_key_data(impl, base_arr)
  if isinstance(base_arr, (np.ndarray, np.generic)):
    from minijax.lax import convert_to_array
    base_arr = convert_to_array(base_arr)
  return PRNGKeyArray(impl, base_arr)


def random_unwrap(keys):
  """The uint32 data of a key array."""
  if not isinstance(keys, PRNGKeyArray):
    raise TypeError(f"random_unwrap takes key array operand, got {keys!r}")
  return keys._base_array
