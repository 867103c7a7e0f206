"""Helpers shared by the distribution modules."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy import _util

compiled_when_eager = _util.compiled_when_eager


def promote(name: str, *args):
  """The arguments promoted to one inexact dtype and broadcast to one shape."""
  out = _util.promote_and_broadcast(name, *args, inexact=True)
  for x in out:
    if np.issubdtype(_util.dtype(x), np.complexfloating):
      raise ValueError(f"{name} does not support complex-valued inputs")
  return out


def const(x, value):
  return lax.full_like(x, value)


def standardize(x, loc, scale):
  return jnp.divide(jnp.subtract(x, loc), scale)

