"""numpy's remaining elementwise and array math: `gcd`, `lcm`, `modf`, `spacing`,
`nextafter`, `i0`, `unwrap`, `gradient`, `packbits`, `unpackbits`, as JAX computes them."""
from __future__ import annotations

import operator

import ml_dtypes
import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy import _util


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _integers(name, x1, x2):
  a, b = _util.promote_and_broadcast(name, x1, x2)
  if not dtypes.is_integer(_util.dtype(a)):
    raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
  return a, b


def gcd(x1, x2):
  """The greatest common divisor, elementwise (Euclid's algorithm in a while_loop)."""
  jnp = _jnp()
  a, b = _integers("gcd", x1, x2)
  a, b = jnp.abs(a), jnp.abs(b)

  def step(carry):
    x, y = carry
    nonzero = y != 0
    safe = jnp.where(nonzero, y, 1)
    return jnp.where(nonzero, y, x), jnp.where(nonzero, x % safe, 0)

  return lax.while_loop(lambda c: jnp.any(c[1] != 0), step, (a, b))[0]


def lcm(x1, x2):
  jnp = _jnp()
  a, b = _integers("lcm", x1, x2)
  d = gcd(a, b)
  return jnp.where(d == 0, 0, jnp.abs(jnp.multiply(a // jnp.where(d == 0, 1, d), b)))


def modf(x, /, out=None):
  """(fractional part, integral part), each with the sign of x."""
  _util.reject_out("modf", out)
  jnp = _jnp()
  (x,) = _util.promote_inexact("modf", x)
  whole = jnp.trunc(x)
  return x - whole, whole


def nextafter(x, y, /):
  a, b = _util.promote_and_broadcast("nextafter", x, y, inexact=True)
  return lax.nextafter(a, b)


def spacing(x, /):
  """The distance from x to the next representable number away from zero (numpy's)."""
  jnp = _jnp()
  (x,) = _util.promote_inexact("spacing", x)
  dt = _util.dtype(x)
  # away from zero, except in float16, where numpy (and JAX) step towards +inf
  towards = jnp.full_like(x, np.inf) if dt == np.float16 else \
      jnp.where(x < 0, -np.inf, np.inf).astype(dt)
  step = nextafter(x, towards) - x
  # XLA flushes the subnormal differences near zero to 0; their spacing is the smallest one
  tiny = jnp.copysign(jnp.asarray(ml_dtypes.finfo(dt).smallest_subnormal, dt), x)
  return jnp.where(step == 0, tiny, step)


def i0(x):
  """The modified Bessel function of the first kind, order 0, of real `x`."""
  from minijax.numpy import bessel
  (x,) = _util.promote_inexact("i0", x)
  if dtypes.issubdtype(_util.dtype(x), np.complexfloating):
    raise TypeError("i0 does not support complex-valued inputs; pass real values")
  return bessel.numpy_i0(x)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  """`p` with jumps larger than `discont` (half the period by default) taken back by
  multiples of `period`."""
  jnp = _jnp()
  (p,) = _util.promote("unwrap", p)
  if not dtypes.is_inexact(_util.dtype(p)):  # (as JAX's: in the default float type)
    p = lax.convert_element_type(p, dtypes.default_float_dtype())
  (axis,) = _util.canonicalize_axes(axis, _util.ndim(p))
  dd = jnp.diff(p, axis=axis)
  if discont is None:
    discont = period / 2
  interval = period / 2
  ddmod = jnp.mod(dd + interval, period) - interval
  ddmod = jnp.where((ddmod == -interval) & (dd > 0), interval, ddmod)
  correction = jnp.where(jnp.abs(dd) < discont, 0, ddmod - dd)
  first = lax.slice_in_dim(p, 0, 1, axis=axis)
  rest = lax.slice_in_dim(p, 1, _util.shape(p)[axis], axis=axis) + jnp.cumsum(correction,
                                                                             axis=axis)
  return jnp.concatenate([first, rest], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
  """Second-order central differences inside, first-order one-sided at the edges."""
  jnp = _jnp()
  if edge_order is not None and edge_order != 1:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  (f,) = _util.promote_inexact("gradient", f)
  axes = _util.canonicalize_axes(axis, _util.ndim(f)) if axis is not None else tuple(
      range(_util.ndim(f)))
  if len(varargs) == 0:
    spacings = [1.0] * len(axes)
  elif len(varargs) == 1:
    spacings = list(varargs) * len(axes)
  elif len(varargs) == len(axes):
    spacings = list(varargs)
  else:
    raise TypeError("Invalid number of spacing arguments")
  out = []
  for ax, h in zip(axes, spacings):
    n = _util.shape(f)[ax]
    if n < 2:
      raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                       "least (edge_order + 1) elements are required.")
    sl = lambda a, b: lax.slice_in_dim(f, a, b, axis=ax)  # noqa: E731
    if _util.ndim(h) == 0:
      inner = (sl(2, n) - sl(0, n - 2)) / (2.0 * h)
      first = (sl(1, 2) - sl(0, 1)) / h
      last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
    else:
      h = jnp.asarray(h, _util.dtype(f))
      dx = jnp.diff(h)
      shape = [1] * _util.ndim(f)
      shape[ax] = n - 2
      dx1, dx2 = dx[:-1].reshape(shape), dx[1:].reshape(shape)
      a = -dx2 / (dx1 * (dx1 + dx2))
      b = (dx2 - dx1) / (dx1 * dx2)
      c = dx1 / (dx2 * (dx1 + dx2))
      inner = a * sl(0, n - 2) + b * sl(1, n - 1) + c * sl(2, n)
      first = (sl(1, 2) - sl(0, 1)) / dx[0]
      last = (sl(n - 1, n) - sl(n - 2, n - 1)) / dx[-1]
    out.append(jnp.concatenate([first, inner, last], axis=ax))
  return out[0] if len(out) == 1 else out


def packbits(a, axis=None, bitorder="big"):
  """Booleans (or integers: nonzero) packed eight to a uint8 along `axis` (flattened when
  None), the last byte padded with zeros."""
  jnp = _jnp()
  a = jnp.asarray(a)
  if not (dtypes.is_integer(_util.dtype(a)) or _util.dtype(a) == dtypes.bool_):
    raise TypeError("Expected an input array of integer or boolean data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  bits = (a != 0).astype(np.uint8)
  if axis is None:
    bits, axis = jnp.ravel(bits), 0
  (axis,) = _util.canonicalize_axes(axis, _util.ndim(bits))
  bits = jnp.moveaxis(bits, axis, -1)
  n = _util.shape(bits)[-1]
  pad = (-n) % 8
  bits = jnp.pad(bits, [(0, 0)] * (_util.ndim(bits) - 1) + [(0, pad)])
  bits = bits.reshape(_util.shape(bits)[:-1] + (-1, 8))
  weights = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big"
                     else [1, 2, 4, 8, 16, 32, 64, 128], np.uint8)
  packed = jnp.sum(bits * weights, axis=-1, dtype=np.uint8)
  return jnp.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
  jnp = _jnp()
  a = jnp.asarray(a)
  if _util.dtype(a) != np.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  shifts = np.array([7, 6, 5, 4, 3, 2, 1, 0] if bitorder == "big"
                    else [0, 1, 2, 3, 4, 5, 6, 7], np.uint8)
  bits = (a[..., None] >> shifts) & np.uint8(1)
  if axis is None:
    bits, axis = jnp.ravel(bits), 0
  else:
    (axis,) = _util.canonicalize_axes(axis, _util.ndim(a))
    bits = jnp.moveaxis(bits, _util.ndim(a), axis + 1)
    shape = list(_util.shape(a))
    shape[axis] *= 8
    bits = bits.reshape(shape)
  if count is not None:
    bits = lax.slice_in_dim(bits, 0, operator.index(count), axis=axis)
  return bits
