"""`minijax.scipy.interpolate`: `RegularGridInterpolator`, linear or nearest-neighbour
interpolation on a rectangular grid given by one increasing array of coordinates per axis.

Each query point finds, along every axis, the grid cell it falls in (points outside use the
edge cell, so they extrapolate) and its fractional position `t` in that cell; linear
interpolation sums the values at the cell's corners weighted by products of `t` and `1 - t`,
nearest takes the corner each `t` rounds to (halves down).  Points outside the grid then
become `fill_value` unless it is None.  The interpolator is a pytree, so it passes through
`jit` and the other transformations."""
from __future__ import annotations

import itertools

import numpy as np

from minijax import numpy as jnp
from minijax import tree_util
from minijax.numpy import _util

_METHODS = ("linear", "nearest")


def _check_method(method):
  if method not in _METHODS:
    raise ValueError(f"RegularGridInterpolator: method {method!r} is not defined; use one of "
                     f"{_METHODS}")


def _query_points(xi, ndim: int):
  """`xi` as an array of shape (..., ndim): a tuple of coordinate arrays is broadcast and
  stacked, a flat array holds points of `ndim` coordinates one after another (scipy's rule)."""
  if isinstance(xi, tuple) and len(xi) == 1:
    xi = xi[0]
  if isinstance(xi, tuple):
    return jnp.stack(jnp.broadcast_arrays(*xi), axis=-1)
  xi = jnp.asarray(xi)
  return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
  """Interpolates `values` (N or more dimensions) given on the grid `points` (N increasing
  arrays) at query points; `bounds_error=True` is not supported (it cannot raise under jit)."""

  def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
    _check_method(method)
    if bounds_error:
      raise NotImplementedError("RegularGridInterpolator: bounds_error=True is not supported "
                                "(it cannot take effect under jit); check the points yourself")
    if len(points) > np.ndim(values):
      raise ValueError(f"RegularGridInterpolator: there are {len(points)} point arrays, but "
                       f"values has {np.ndim(values)} dimensions")
    (values,) = _util.promote_inexact("RegularGridInterpolator", values)
    if fill_value is not None:
      fill_value = jnp.asarray(fill_value)
      if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
        raise ValueError("RegularGridInterpolator: fill_value must be None or of a type that "
                         f"casts to values' {values.dtype}, got {fill_value.dtype}")
    self.method = method
    self.bounds_error = bounds_error
    self.fill_value = fill_value
    self.grid = tuple(jnp.asarray(p) for p in points)
    self.values = values

  def __call__(self, xi, method=None):
    method = self.method if method is None else method
    _check_method(method)
    ndim = len(self.grid)
    xi = _query_points(xi, ndim)
    if xi.shape[-1] != ndim:
      raise ValueError(f"RegularGridInterpolator: the query points have dimension "
                       f"{xi.shape[-1]}, but the grid has dimension {ndim}")
    batch_shape = xi.shape[:-1]
    xi = xi.reshape(-1, ndim)
    cells, fractions, outside = [], [], jnp.zeros(xi.shape[0], bool)
    for x, g in zip(xi.T, self.grid):
      i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
      cells.append(i)
      fractions.append((x - g[i]) / (g[i + 1] - g[i]))
      outside = outside | (x < g[0]) | (x > g[-1])
    trailing = (slice(None),) + (None,) * (self.values.ndim - ndim)
    if method == "nearest":
      result = self.values[tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(cells, fractions))]
    else:
      result = 0.0
      for corner in itertools.product((0, 1), repeat=ndim):
        weight = 1.0
        for up, t in zip(corner, fractions):
          weight = weight * (t if up else 1 - t)
        index = tuple(i + up for i, up in zip(cells, corner))
        result = result + self.values[index] * weight[trailing]
    if self.fill_value is not None:
      mask = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
      result = jnp.where(mask, self.fill_value, result)
    return result.reshape(batch_shape + self.values.shape[ndim:])


tree_util.register_pytree_node(
    RegularGridInterpolator,
    lambda r: ((r.grid, r.values, r.fill_value), (r.method, r.bounds_error)),
    lambda aux, children: RegularGridInterpolator(children[0], children[1], aux[0], aux[1],
                                                  children[2]))

__all__ = ["RegularGridInterpolator"]
