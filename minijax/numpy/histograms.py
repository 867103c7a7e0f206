"""numpy's histograms: `histogram_bin_edges`, `histogram`, `histogram2d`, `histogramdd`,
as JAX computes them (bins by `searchsorted`, counts by a scatter-add; the last bin closed
on the right), traceable for a static number of bins or given edges.  Complex samples are binned as JAX
bins them, in lexicographic order (real parts first; numpy drops their imaginary parts with
a warning)."""
from __future__ import annotations

import operator

import numpy as np

from minijax.core import dtypes
from minijax.numpy import _util


def _jnp():
  import minijax.numpy as jnp
  return jnp


def histogram_bin_edges(a, bins=10, range=None, weights=None):
  jnp = _jnp()
  if weights is not None:
    _util.promote("histogram_bin_edges", a, weights)
  if _util.ndim(bins) == 1:
    return jnp.asarray(bins)
  (a,) = _util.promote_inexact("histogram_bin_edges", a)
  bins = operator.index(bins)
  if bins < 1:
    raise ValueError(f"bins must be a positive integer, got {bins}")
  dt = _util.dtype(a)
  if range is None:
    lo, hi = jnp.min(a), jnp.max(a)
  else:
    lo, hi = jnp.asarray(range[0], dt), jnp.asarray(range[1], dt)
  same = lo == hi  # (one value: bins around it, 1 wide in all, as numpy)
  lo, hi = jnp.where(same, lo - 0.5, lo), jnp.where(same, hi + 0.5, hi)
  return jnp.linspace(lo, hi, bins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
  jnp = _jnp()
  if weights is None:
    a = jnp.ravel(jnp.asarray(a))
    (counted,) = _util.promote_inexact("histogram", a)  # counts in a's inexact dtype (JAX's)
  else:
    a, weights = (jnp.ravel(x) for x in _util.promote_inexact("histogram", a, weights))
    counted = weights
  edges = histogram_bin_edges(a, bins, range, weights)
  nbins = _util.shape(edges)[0] - 1
  index = jnp.searchsorted(edges, a, side="right")
  index = jnp.where(a == edges[-1], nbins, index)  # the last bin is closed on the right
  counts = jnp.zeros(nbins + 2, _util.dtype(counted))
  counts = counts.at[index].add(1 if weights is None else weights)[1:-1]
  if density:
    widths = jnp.diff(edges)
    counts = counts / widths / counts.sum()
  return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
  jnp = _jnp()
  sample = jnp.asarray(sample)
  if _util.ndim(sample) != 2:
    raise ValueError("histogramdd: sample must be a 2-d array of shape (N, D)")
  n, d = _util.shape(sample)
  if weights is not None and _util.shape(weights) != (n,):
    raise ValueError("should have one weight for each sample.")
  bins_per_dim = bins if isinstance(bins, (list, tuple)) else [bins] * d
  ranges = range if range is not None else [None] * d
  edges = [histogram_bin_edges(sample[:, i], b, r) for i, (b, r) in
           enumerate(zip(bins_per_dim, ranges))]
  flat = jnp.zeros((), dtypes.default_int_dtype())
  shape = []
  for i, e in enumerate(edges):
    nb = _util.shape(e)[0] - 1
    index = jnp.searchsorted(e, sample[:, i], side="right")
    index = jnp.where(sample[:, i] == e[-1], nb, index)
    flat = flat * (nb + 2) + index
    shape.append(nb + 2)
  total = int(np.prod(shape))
  if weights is not None:
    count_dtype = _util.dtype(jnp.asarray(weights))
  else:  # counts are integers, unless a density is asked for (in the sample's float type)
    count_dtype = (dtypes.to_inexact_dtype(_util.dtype(sample)) if density
                   else dtypes.default_int_dtype())
  hist = jnp.zeros(total, count_dtype)
  hist = hist.at[flat].add(1 if weights is None else weights).reshape(shape)
  hist = hist[tuple(slice(1, -1) for _ in shape)]
  if density:
    hist = hist / hist.sum()
    for i, e in enumerate(edges):
      widths = jnp.diff(e)
      shape_i = [1] * d
      shape_i[i] = _util.shape(widths)[0]
      hist = hist / widths.reshape(shape_i)
  return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
  jnp = _jnp()
  if _util.ndim(x) != 1 or _util.ndim(y) != 1:
    raise ValueError(f"histogram2d: x and y must be 1-d, got shapes {_util.shape(x)} and "
                     f"{_util.shape(y)}")
  if isinstance(bins, (list, tuple)) and len(bins) != 2 and _util.ndim(jnp.asarray(bins)) == 1:
    bins = [bins, bins]
  sample = jnp.stack([jnp.asarray(x), jnp.asarray(y)], axis=1)
  hist, edges = histogramdd(sample, bins, range, weights, density)
  return hist, edges[0], edges[1]
