"""`gaussian_kde`: a Gaussian kernel density estimate, as scipy's.

The kernel covariance is the data covariance (weighted, with the effective sample size
`neff`) times `factor**2`, where `factor` comes from `bw_method` ("scott":
`neff**(-1/(d+4))`, "silverman": `(neff*(d+2)/4)**(-1/(d+4))`, a number, or a function of
the estimate).  Densities are sums of the kernels at the data points."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.tree_util import internal as tree_util
from minijax.scipy.special import logsumexp


class gaussian_kde:  # noqa: N801 (scipy's name)
  """`gaussian_kde(dataset, bw_method=None, weights=None)`; `dataset` is `(d, n)` or `(n,)`."""

  def __init__(self, dataset, bw_method=None, weights=None):
    dataset = jnp.atleast_2d(jnp.asarray(dataset))
    if jnp.issubdtype(dataset.dtype, jnp.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if dataset.size <= 1:
      raise ValueError("gaussian_kde: the dataset must have more than one element")
    d, n = dataset.shape
    if weights is None:
      weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
    else:
      weights = jnp.atleast_1d(jnp.asarray(weights, dataset.dtype))
      if weights.shape != (n,):
        raise ValueError(f"gaussian_kde: weights must have shape ({n},), got {weights.shape}")
      weights = weights / jnp.sum(weights)
    neff = 1 / jnp.sum(weights ** 2)
    self.dataset, self.weights, self.neff, self.d, self.n = dataset, weights, neff, d, n
    if bw_method is None or bw_method == "scott":
      factor = neff ** (-1.0 / (d + 4))
    elif bw_method == "silverman":
      factor = (neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
    elif np.isscalar(bw_method) and not isinstance(bw_method, str):
      factor = bw_method
    elif callable(bw_method):
      factor = bw_method(self)
    else:
      raise ValueError("gaussian_kde: bw_method must be 'scott', 'silverman', a scalar or a "
                       "callable")
    self.factor = factor
    mean = jnp.sum(weights * dataset, axis=1, keepdims=True)
    centered = dataset - mean
    data_cov = (weights * centered) @ centered.T / (1 - jnp.sum(weights ** 2))
    self.covariance = data_cov * factor ** 2
    self.inv_cov = jnp.linalg.inv(self.covariance)

  def evaluate(self, points):
    """The estimated density at `points` (`(d, m)` or `(m,)` when `d == 1`)."""
    return jnp.exp(self.logpdf(points))

  __call__ = pdf = evaluate

  def logpdf(self, points):
    points = jnp.atleast_2d(jnp.asarray(points))
    if points.shape[0] != self.d:
      if points.shape == (1, self.d):
        points = points.T
      else:
        raise ValueError(f"gaussian_kde: points have dimension {points.shape[0]}, the "
                         f"dataset has dimension {self.d}")
    diff = self.dataset[:, :, None] - points[:, None, :]  # (d, n, m)
    quad = jnp.einsum("inm,ij,jnm->nm", diff, self.inv_cov, diff)
    _, logdet = jnp.linalg.slogdet(2 * np.pi * self.covariance)
    return logsumexp(-quad / 2 + jnp.log(self.weights)[:, None], axis=0) - logdet / 2


tree_util.register_pytree_node(
    gaussian_kde,
    lambda k: ((k.dataset, k.weights, k.neff, k.factor, k.covariance, k.inv_cov), (k.d, k.n)),
    lambda aux, c: _rebuild(aux, c))


def _rebuild(aux, children):
  kde = object.__new__(gaussian_kde)
  kde.d, kde.n = aux
  (kde.dataset, kde.weights, kde.neff, kde.factor, kde.covariance, kde.inv_cov) = children
  return kde


__all__ = ["gaussian_kde"]
