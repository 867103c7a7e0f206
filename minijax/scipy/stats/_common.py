"""Helpers shared by the distribution modules."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy import _util

compiled_when_eager = _util.compiled_when_eager


def promote(name: str, *args):
  """The arguments promoted to one inexact dtype and to one rank (scalars stay scalars, as
  in JAX: a parameter's own functions are computed once, not once per element)."""
  out = _util.promote_and_broadcast(name, *args, inexact=True, keep_scalars=True)
  for x in out:
    if np.issubdtype(_util.dtype(x), np.complexfloating):
      raise ValueError(f"{name} does not support complex-valued inputs")
  return out


def const(x, value):
  return lax.full_like(x, value)


def standardize(x, loc, scale):
  return jnp.divide(jnp.subtract(x, loc), scale)



def off_lattice(k):
  """Where a count `k` is not a whole number: a pmf there is 0, as scipy's (JAX's
  formulas interpolate between the counts)."""
  return jnp.not_equal(jnp.floor(k), k)


def nan_unless(valid, out):
  """`out` with NaN where a parameter is outside its domain (`valid` false), as scipy's."""
  return jnp.where(valid, out, const(out, np.nan))


def log_density(out, outside):
  """`out` with -inf where `outside`."""
  return jnp.where(outside, const(out, -np.inf), out)


def log_binom(n, k):
  """log C(n, k) through log-gamma."""
  return jnp.subtract(lax.lgamma(jnp.add(n, 1)),
                      jnp.add(lax.lgamma(jnp.add(k, 1)), lax.lgamma(jnp.add(jnp.subtract(n, k), 1))))
