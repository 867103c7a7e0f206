"""`ravel_pytree`: a pytree of arrays as one flat vector, and the function that undoes it.

The flat vector has the leaves' common result dtype; unraveling casts each piece back to
its leaf's dtype, so optimizers and samplers can work on one vector and hand back the
original structure."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.tree_util import internal as tree_util


def ravel_pytree(pytree):
  """`(flat, unravel)`: `flat` is a 1-d array of every leaf raveled and concatenated;
  `unravel(flat)` rebuilds a pytree of the same structure, shapes and dtypes."""
  leaves, treedef = tree_util.tree_flatten(pytree)
  flat, unravel_list = _ravel_list(leaves)
  return flat, lambda flat_: treedef.unflatten(unravel_list(flat_))


def _ravel_list(leaves):
  if not leaves:
    return jnp.zeros(0, jnp.float32), lambda _: []
  from_dtypes = [jnp.result_type(x) for x in leaves]
  to_dtype = jnp.result_type(*from_dtypes)
  shapes = [np.shape(x) for x in leaves]
  sizes = [int(np.prod(s)) for s in shapes]
  flat = jnp.concatenate([jnp.ravel(jnp.asarray(x, to_dtype)) for x in leaves])
  splits = np.cumsum(sizes)[:-1]

  def unravel(arr):
    if np.shape(arr) != (sum(sizes),):
      raise ValueError("The unravel function expected an array of shape "
                       f"{(sum(sizes),)}, got shape {np.shape(arr)}.")
    if jnp.result_type(arr) != to_dtype:
      raise TypeError("The unravel function expected an array of dtype "
                      f"{to_dtype}, got dtype {jnp.result_type(arr)}.")
    pieces = jnp.split(arr, splits)
    return [jnp.reshape(p, s).astype(d) if d != to_dtype else jnp.reshape(p, s)
            for p, s, d in zip(pieces, shapes, from_dtypes)]

  return flat, unravel


__all__ = ["ravel_pytree"]
