"""Parameter initializers: functions `init(key, shape, dtype=None)` returning arrays, made by
constructors with JAX's signatures (`normal(stddev)`, `glorot_uniform()`, ...); `zeros` and
`ones` are initializers themselves.  The default dtype is the default float type.

They draw from `minijax.random`, which reproduces JAX's generator bit for bit, and scale
as JAX does, so the same key gives the same parameters as in JAX.  `variance_scaling` is
the general rule behind glorot/xavier, he/kaiming and lecun: samples of variance
`scale / n`, n the fan-in, fan-out, their mean or their geometric mean, where fans count the
kernel's receptive field (every axis that is not an in, out or batch axis); a truncated
normal is divided by the standard deviation of a unit normal truncated to [-2, 2], and a
uniform drawn on [-1, 1) is scaled by sqrt(3 * variance).  Complex dtypes draw from a disk
(uniform) or a modulus-truncated complex normal.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from minijax import numpy as jnp
from minijax import random
from minijax.core import dtypes
from minijax.lax.sharding import takes_out_sharding

__all__ = ["Initializer", "zeros", "ones", "constant", "uniform", "normal",
           "truncated_normal", "variance_scaling", "glorot_uniform", "glorot_normal",
           "xavier_uniform", "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform",
           "he_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]

Initializer = Callable[..., Any]


def _dtype(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtype


@takes_out_sharding
def zeros(key, shape, dtype=None, out_sharding=None):
  """An initializer of zeros (the key is ignored)."""
  return jnp.zeros(shape, _dtype(dtype))


@takes_out_sharding
def ones(key, shape, dtype=None, out_sharding=None):
  """An initializer of ones (the key is ignored)."""
  return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None) -> Initializer:
  """An initializer filling with `value`."""
  @takes_out_sharding
  def init(key, shape, dtype=dtype, out_sharding=None):
    return jnp.full(shape, value, dtype=_dtype(dtype))
  return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
  """Uniform on [0, scale)."""
  @takes_out_sharding
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    return random.uniform(key, shape, dtype) * jnp.array(scale, dtype)
  return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
  """Normal with mean 0 and standard deviation `stddev`."""
  @takes_out_sharding
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    return random.normal(key, shape, dtype) * jnp.array(stddev, dtype)
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
  """A unit normal truncated to [lower, upper], times `stddev` (no variance correction)."""
  @takes_out_sharding
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    return random.truncated_normal(key, lower, upper, shape, dtype) * jnp.array(stddev, dtype)
  return init


def _size(shape, axes) -> int:
  if isinstance(axes, int):
    return shape[axes]
  return math.prod(shape[a] for a in axes)


def _compute_fans(shape: Sequence[int], in_axis=-2, out_axis=-1, batch_axis=()):
  """(fan_in, fan_out): the in and out sizes times the receptive field (the remaining
  axes, batch axes excluded)."""
  if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                     "weights tensor with default in_axis. Must be at least 2D or specify "
                     "in_axis explicitly.")
  in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
  receptive_field = math.prod(shape) / in_size / out_size / _size(shape, batch_axis)
  return in_size * receptive_field, out_size * receptive_field


def _real_dtype(dtype):
  return np.array(0, dtype).real.dtype


def _complex_uniform(key, shape, dtype):
  """Uniform on the unit-variance disk."""
  key_r, key_theta = random.split(key)
  real = _real_dtype(dtype)
  r = jnp.sqrt(2 * random.uniform(key_r, shape, real)).astype(dtype)
  theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(dtype)
  return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
  """A unit-variance complex normal whose modulus is truncated to `upper`."""
  key_r, key_theta = random.split(key)
  real = _real_dtype(dtype)
  t = ((1 - jnp.exp(jnp.array(-(upper ** 2), dtype)))
       * random.uniform(key_r, shape, real).astype(dtype))
  r = jnp.sqrt(-jnp.log(1 - t))
  theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(dtype)
  return r * jnp.exp(1j * theta)


# the standard deviation of a unit normal truncated to [-2, 2], and of the complex one
_TRUNCATED_STDDEV = 0.87962566103423978
_COMPLEX_TRUNCATED_STDDEV = 0.95311164380491208


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None) -> Initializer:
  """Samples of variance scale / n, n given by `mode` ('fan_in', 'fan_out', 'fan_avg',
  'fan_geo_avg'), from `distribution` ('truncated_normal', 'normal', 'uniform')."""
  @takes_out_sharding
  def init(key, shape, dtype=dtype, out_sharding=None):
    shape = tuple(int(d) for d in shape)
    dtype = _dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    if mode == "fan_in":
      denominator = fan_in
    elif mode == "fan_out":
      denominator = fan_out
    elif mode == "fan_avg":
      denominator = (fan_in + fan_out) / 2
    elif mode == "fan_geo_avg":
      denominator = (fan_in * fan_out) ** 0.5
    else:
      raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    variance = jnp.array(scale / denominator, dtype=dtype)
    is_real = not np.issubdtype(np.dtype(dtype), np.complexfloating)  # (bfloat16 too)
    if distribution == "truncated_normal":
      if is_real:
        stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_STDDEV, dtype)
        return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
      stddev = jnp.sqrt(variance) / jnp.array(_COMPLEX_TRUNCATED_STDDEV, dtype)
      return _complex_truncated_normal(key, 2, shape, dtype) * stddev
    if distribution == "normal":
      return random.normal(key, shape, dtype) * jnp.sqrt(variance)
    if distribution == "uniform":
      if is_real:
        return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
      return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
  return init


def _specialization(scale, mode, distribution, doc):
  def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)
  make.__doc__ = doc
  return make


glorot_uniform = _specialization(1.0, "fan_avg", "uniform",
                                 "variance_scaling(1.0, 'fan_avg', 'uniform')")
glorot_normal = _specialization(1.0, "fan_avg", "truncated_normal",
                                "variance_scaling(1.0, 'fan_avg', 'truncated_normal')")
lecun_uniform = _specialization(1.0, "fan_in", "uniform",
                                "variance_scaling(1.0, 'fan_in', 'uniform')")
lecun_normal = _specialization(1.0, "fan_in", "truncated_normal",
                               "variance_scaling(1.0, 'fan_in', 'truncated_normal')")
he_uniform = _specialization(2.0, "fan_in", "uniform",
                             "variance_scaling(2.0, 'fan_in', 'uniform')")
he_normal = _specialization(2.0, "fan_in", "truncated_normal",
                            "variance_scaling(2.0, 'fan_in', 'truncated_normal')")
for _name, _fn in (("glorot_uniform", glorot_uniform), ("glorot_normal", glorot_normal),
                   ("lecun_uniform", lecun_uniform), ("lecun_normal", lecun_normal),
                   ("he_uniform", he_uniform), ("he_normal", he_normal)):
  _fn.__name__ = _fn.__qualname__ = _name
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
  """A (scaled) matrix with orthonormal columns along `column_axis` (rows if fewer), the
  other axes flattened into rows."""
  @takes_out_sharding
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    if 0 in shape:
      return jnp.zeros(shape, dtype=dtype)
    n_cols = shape[column_axis]
    n_rows = math.prod(shape) // n_cols
    q = random.orthogonal(key, n_rows, (), dtype, n_cols)
    q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
    return jnp.array(scale, dtype) * jnp.moveaxis(q, -1, column_axis)
  return init


def delta_orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
  """A convolution kernel that is zero except at its spatial center, where it holds an
  orthogonal matrix (for 3-, 4- and 5-d kernels with fan_in <= fan_out)."""
  @takes_out_sharding
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _dtype(dtype)
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    center = tuple((k - 1) // 2 for k in shape[:-2])
    return jnp.zeros(shape, dtype=dtype).at[center].set(matrix)
  return init
