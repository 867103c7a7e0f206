"""The multivariate normal distribution N(mean, cov) over the last axis."""
from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.numpy import _util


def logpdf(x, mean, cov, allow_singular=None):
  """log N(x; mean, cov).  A scalar `cov` is a variance shared by the coordinates; a
  matrix is factored by Cholesky (`minijax.numpy.linalg.cholesky`)."""
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
  x, mean, cov = _util.promote_inexact("multivariate_normal.logpdf", x, mean, cov)
  if not _util.ndim(mean):
    return jnp.subtract(jnp.divide(jnp.multiply(-0.5, jnp.square(jnp.subtract(x, mean))), cov),
                        jnp.multiply(0.5, jnp.add(np.log(2 * np.pi), jnp.log(cov))))
  n = _util.shape(mean)[-1]
  diff = jnp.subtract(x, mean)
  if not _util.ndim(cov):
    quad = jnp.sum(jnp.square(diff), axis=-1)
    return jnp.subtract(jnp.multiply(-0.5, jnp.divide(quad, cov)),
                        jnp.multiply(n / 2, jnp.add(np.log(2 * np.pi), jnp.log(cov))))
  if _util.ndim(cov) < 2 or _util.shape(cov)[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes")
  from minijax.scipy import linalg as scipy_linalg
  chol = jnp.linalg.cholesky(cov)
  batch = _util.broadcast_shapes("multivariate_normal.logpdf", _util.shape(chol)[:-2],
                                 _util.shape(diff)[:-1])
  chol = jnp.broadcast_to(chol, batch + (n, n))
  diff = jnp.broadcast_to(diff, batch + (n,))
  # y = L⁻¹ (x - mean), so (x - mean)ᵀ cov⁻¹ (x - mean) = yᵀy
  y = scipy_linalg.solve_triangular(chol, jnp.expand_dims(diff, -1), lower=True)[..., 0]
  log_det_half = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
  return jnp.subtract(jnp.subtract(jnp.multiply(-0.5, jnp.sum(jnp.square(y), axis=-1)),
                                   n / 2 * np.log(2 * np.pi)), log_det_half)


def pdf(x, mean, cov):
  return jnp.exp(logpdf(x, mean, cov))
