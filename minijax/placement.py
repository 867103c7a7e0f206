"""Devices and placement: `device_put`, `device_get`, `block_until_ready`, device counts.

JAX's names for moving values between the host and devices and for asking what the
machine has.  Placement of one array goes straight to the runtime's `device_put`; a pytree,
or a target that is a sharding or a pytree prefix of targets, is mapped leaf by leaf, and
inside a transformation a `NamedSharding` becomes a sharding constraint.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.tree_util import internal as tree_util
from minijax.api_util import prefix_pairs
from minijax.core import dtypes
from minijax.core import sharding as sharding_lib
from minijax.core.trace import Tracer
from minijax.runtime import array as array_lib
from minijax.runtime import backend as runtime_backend
from minijax.runtime.array import Array, is_concrete_array
from minijax.runtime.array import device_put as runtime_device_put

__all__ = ["device_put", "device_get", "block_until_ready", "device_count",
           "local_device_count", "default_backend", "print_environment_info"]


def device_put(x, device=None, *, src=None, donate: bool = False, may_alias=None):
  """Places `x` (a pytree) on `device`: None (the default device, or where an Array
  already is), a device or its index, or a sharding (each leaf split into blocks over its
  devices); a pytree prefix of those gives each subtree its own.  Inside a transformation
  a `NamedSharding` constrains the layout (`lax.with_sharding_constraint`), and anything
  else leaves the value as it is.
  An Array already in place is returned as it is (`may_alias=None` or True), or copied
  into a new buffer with `may_alias=False`; `donate=True` lets the result be the input's
  buffer (so the input must not be used after), and cannot go with `may_alias=True`."""
  del src
  if may_alias and donate:
    raise ValueError("may_alias and donate cannot be True at the same time.")

  def is_leaf(d):
    return d is None or isinstance(d, (sharding_lib.Sharding, int, runtime_backend.Device))

  if may_alias is False:  # a new buffer even where the value is in place already
    def put(leaf, target):
      out = runtime_device_put(leaf, target)
      return array_lib.copy_array(out) if out is leaf and out._device is not None else out
  else:
    put = runtime_device_put
  for target in tree_util.tree_leaves(device, is_leaf=is_leaf):
    if not is_leaf(target) or isinstance(target, bool):
      raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                       "`jax.Device` (or, in minijax, a device index) or a pytree of these "
                       f"values. Received invalid value: {target}")

  def one(leaf, target):
    if isinstance(leaf, Tracer):
      if isinstance(target, sharding_lib.NamedSharding):
        return lax.with_sharding_constraint(leaf, target)
      return leaf
    return put(leaf, target)

  if is_leaf(device):
    if isinstance(x, (np.ndarray, np.generic, *dtypes.PYTHON_SCALARS)) or hasattr(x, "_buffer"):
      return put(x, device)  # one array: no pytree machinery
    return tree_util.tree_map(lambda leaf: one(leaf, device), x)
  def mismatch(details):
    return ValueError("device_put device specification must be a tree prefix of the "
                      f"corresponding value; got {device} for value tree "
                      f"{tree_util.tree_structure(x)}.{details}")
  pairs = prefix_pairs(device, x, is_leaf=is_leaf, name="device", mismatch=mismatch)
  return tree_util.tree_structure(device, is_leaf=is_leaf).unflatten(
      [tree_util.tree_map(lambda leaf, t=t: one(leaf, t), sub) for t, sub in pairs])


def device_count(backend=None) -> int:
  """The number of devices (minijax's CPU devices; see `MINIJAX_NUM_CPU_DEVICES`)."""
  _check_backend(backend)
  return runtime_backend.device_count()


def local_device_count(backend=None) -> int:
  _check_backend(backend)
  return len(runtime_backend.local_devices())


def default_backend() -> str:
  return "cpu"


def _check_backend(backend) -> None:
  if backend not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {backend!r}: minijax runs on the 'cpu' backend only")


def device_get(x):
  """`x` with every Array (and traced value the transformation knows) as a numpy array;
  other leaves unchanged."""
  def get(leaf):
    if is_concrete_array(leaf):
      return np.asarray(leaf)
    return leaf
  return tree_util.tree_map(get, x)


def block_until_ready(x):
  """Waits until every Array in the pytree `x` is computed; returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    if hasattr(leaf, "block_until_ready"):
      leaf.block_until_ready()
  return x


def copy_to_host_async(x):
  """Starts copying every array of the pytree `x` to the host (leaves without
  `copy_to_host_async` are left alone); returns `x`."""
  for leaf in tree_util.tree_leaves(x):
    try:
      copy = leaf.copy_to_host_async
    except AttributeError:
      continue
    copy()  # (its own AttributeErrors propagate)
  return x


def print_environment_info(return_string: bool = False) -> str | None:
  """The versions of minijax, jaxlib, numpy and Python, and the devices."""
  import platform
  import sys
  from importlib import metadata
  import jaxlib
  devices = runtime_backend.local_devices()
  try:
    version = metadata.version("minijax-effects")
  except metadata.PackageNotFoundError:
    version = "unknown"
  info = "\n".join([
      f"minijax: {version}",
      f"jaxlib:  {jaxlib.__version__}",
      f"numpy:   {np.__version__}",
      f"python:  {sys.version}",
      f"device info: cpu-{len(devices)}, {len(devices)} local devices",
      f"process_count: {runtime_backend.process_count()}",
      f"platform: {platform.uname()}",
  ]) + "\n"
  if return_string:
    return info
  print(info, end="")
  return None
