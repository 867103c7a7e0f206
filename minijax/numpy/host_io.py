"""numpy's host-side helpers, as JAX offers them: printing (numpy's own), files (`save`,
`savez`, and `load`, whose arrays become minijax arrays), buffers and strings
(`frombuffer`, `fromstring`), DLPack (`from_dlpack`), `einsum_path` (numpy's, on the
operands' shapes).  `fromfile` and `fromiter` raise, as in JAX: reading a file or
consuming an iterator is not a pure function."""
from __future__ import annotations

import numpy as np

ComplexWarning = np.exceptions.ComplexWarning
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
array_repr = np.array_repr
save = np.save
savez = np.savez


def _jnp():
  import minijax.numpy as jnp
  return jnp


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
  return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def load(file, *args, **kwargs):
  """numpy's `load`; an array it reads becomes a minijax array."""
  out = np.load(file, *args, **kwargs)
  return _jnp().asarray(out) if isinstance(out, np.ndarray) else out


def frombuffer(buffer, dtype=float, count=-1, offset=0):
  return _jnp().asarray(np.frombuffer(buffer, dtype, count, offset))


def fromstring(string, dtype=float, count=-1, *, sep):
  return _jnp().asarray(np.fromstring(string, dtype, count, sep=sep))


def _impure(name: str):
  def refuse(*args, **kwargs):
    raise NotImplementedError(
        f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe for use "
        f"with jit and other transformations. Consider jnp.asarray(np.{name}(...)) instead, "
        f"outside transformed functions.")
  refuse.__name__ = name
  return refuse


fromfile = _impure("fromfile")
fromiter = _impure("fromiter")


def from_dlpack(x, /, *, device=None, copy=None):
  """An array of what a DLPack producer (`x.__dlpack__`) holds, copied to the device."""
  jnp = _jnp()
  value = np.from_dlpack(x)
  return jnp.asarray(value) if device is None else _device_put(value, device)


def _device_put(value, device):
  from minijax.runtime.array import device_put
  return device_put(value, device)


def einsum_path(subscripts, /, *operands, optimize="auto"):
  """The order `einsum(subscripts, *operands)` contracts in (on the operands' shapes), and
  numpy's description of it."""
  from minijax.numpy.products import contraction_path, interleaved_subscripts, shape_stand_ins
  if not isinstance(subscripts, str):
    subscripts, operands = interleaved_subscripts("einsum_path", (subscripts, *operands))
  shapes = [np.shape(o) for o in operands]
  path = contraction_path(subscripts, shapes, optimize)
  stand_ins = shape_stand_ins(shapes)
  return path, np.einsum_path(subscripts, *stand_ins, optimize=["einsum_path", *path])[1]
