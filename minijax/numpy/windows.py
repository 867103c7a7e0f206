"""numpy's window functions: `bartlett`, `blackman`, `hamming`, `hanning` in the default
float type, and `kaiser`, as JAX computes them."""
from __future__ import annotations

import numpy as np

from minijax.core import dtypes


def _jnp():
  import minijax.numpy as jnp
  return jnp


def _n(M, name) -> int:
  """The window length: `int(M)` of a concrete number (as JAX takes it)."""
  from minijax.numpy import _util
  try:
    return int(_util.concrete_or_error(f"M argument of jnp.{name}", M))
  except (TypeError, ValueError) as e:
    raise TypeError(f"{name}: M must be a number, got {M!r}") from e


def _positions(M):
  jnp = _jnp()
  return jnp.arange(1 - M, M, 2, dtype=dtypes.default_float_dtype())


def bartlett(M):
  M = _n(M, "bartlett")
  jnp = _jnp()
  if M <= 1:
    return jnp.ones(max(M, 0), dtypes.default_float_dtype())
  return 1 - jnp.abs(_positions(M)) / (M - 1)


def _cosine_window(M, name, *coefficients):
  M = _n(M, name)
  jnp = _jnp()
  if M <= 1:
    return jnp.ones(max(M, 0), dtypes.default_float_dtype())
  n = _positions(M)
  out = jnp.zeros_like(n)
  for k, c in enumerate(coefficients):
    out = out + c * jnp.cos(np.pi * k * n / (M - 1))
  return out


def blackman(M):
  return _cosine_window(M, "blackman", 0.42, 0.5, 0.08)


def hamming(M):
  return _cosine_window(M, "hamming", 0.54, 0.46)


def hanning(M):
  return _cosine_window(M, "hanning", 0.5, 0.5)


def kaiser(M, beta):
  from minijax.numpy.bessel import numpy_i0 as i0
  M = _n(M, "kaiser")
  jnp = _jnp()
  if M <= 1:
    return jnp.ones(max(M, 0), dtypes.default_float_dtype())
  n = jnp.arange(M, dtype=dtypes.default_float_dtype())
  alpha = (M - 1) / 2.0
  beta = jnp.asarray(beta, dtypes.default_float_dtype())
  return i0(beta * jnp.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
