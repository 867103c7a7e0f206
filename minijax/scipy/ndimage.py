"""`minijax.scipy.ndimage`: `map_coordinates`, interpolation of an array at given points.

Along each axis a coordinate becomes one node (order 0: the nearest index, halves rounded
away from zero) or two (order 1: the indices below and above it, weighted by distance); an
index outside the array is brought back in by the boundary `mode`, and under
`mode="constant"` its value is `cval` instead.  The result sums the array's values at every
combination of the axes' nodes times the product of their weights.  As in JAX, `"wrap"` and
`"constant"` are scipy's `"grid-wrap"` and `"grid-constant"`."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from minijax import lax
from minijax import numpy as jnp


def _mirror(index, size: int):
  """Reflects about the edge elements: ... 2 1 | 0 1 2 3 | 2 1 ... (period 2(size - 1))."""
  if size == 1:
    return jnp.zeros_like(index)
  period = 2 * (size - 1)
  m = index % period
  return jnp.where(m < size, m, period - m)


def _reflect(index, size: int):
  """Reflects about the array's edges: ... 1 0 | 0 1 2 3 | 3 2 ... (period 2 size)."""
  m = index % (2 * size)
  return jnp.where(m < size, m, 2 * size - 1 - m)


_BOUNDARY = {
    "constant": lambda index, size: jnp.clip(index, 0, size - 1),
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _nodes(coordinate, order: int):
  """The (index, weight) pairs that interpolate at `coordinate` along one axis."""
  if order == 0:
    nearest = coordinate if jnp.issubdtype(coordinate.dtype, jnp.integer) else lax.round(coordinate)
    return [(nearest.astype(np.int32), 1)]
  below = jnp.floor(coordinate)
  above_weight = coordinate - below
  below = below.astype(np.int32)
  return [(below, 1 - above_weight), (below + 1, above_weight)]


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
  """The values of `input` interpolated at `coordinates` (one array of positions per axis of
  `input`, all of one shape, the result's), by nearest neighbour (`order=0`) or linearly
  (`order=1`); points outside follow `mode` ("constant", "nearest", "wrap", "mirror",
  "reflect")."""
  input = jnp.asarray(input)
  coordinates = [jnp.asarray(c) for c in coordinates]
  if len(coordinates) != input.ndim:
    raise ValueError("map_coordinates: coordinates must be a sequence of one array per axis "
                     f"of input ({input.ndim}), got {len(coordinates)}")
  if mode not in _BOUNDARY:
    raise NotImplementedError(f"map_coordinates: mode={mode!r} is not supported; use one of "
                              f"{sorted(_BOUNDARY)}")
  if order not in (0, 1):
    raise NotImplementedError(f"map_coordinates: only order 0 (nearest) and 1 (linear) are "
                              f"supported, got order={order}")
  cval = jnp.asarray(cval, input.dtype)
  per_axis = []
  for coordinate, size in zip(coordinates, input.shape):
    per_axis.append([(_BOUNDARY[mode](index, size),
                      (index >= 0) & (index < size) if mode == "constant" else None,
                      weight)
                     for index, weight in _nodes(coordinate, order)])
  terms = []
  for nodes in itertools.product(*per_axis):
    indices, inside, weights = zip(*nodes)
    value = input[indices]
    masks = [m for m in inside if m is not None]
    if masks:
      value = jnp.where(functools.reduce(operator.and_, masks), value, cval)
    terms.append(functools.reduce(operator.mul, weights) * value)
  result = functools.reduce(operator.add, terms)
  if jnp.issubdtype(input.dtype, jnp.integer):
    result = lax.round(result) if jnp.issubdtype(result.dtype, jnp.inexact) else result
  return result.astype(input.dtype)


__all__ = ["map_coordinates"]
