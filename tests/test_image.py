"""minijax.image: resize and scale_and_translate, with JAX 0.10.2's values (recorded
beside JAX, compared within float32 rounding) and their properties."""
import numpy as np
import pytest

import minijax
from minijax import image

X = np.arange(2 * 4 * 5, dtype=np.float32).reshape(2, 4, 5) / 10


def test_nearest_takes_the_sample_under_each_centre():
  out = image.resize(X, (2, 8, 3), "nearest")
  np.testing.assert_array_equal(out, X[:, [0, 0, 1, 1, 2, 2, 3, 3]][:, :, [0, 2, 4]])


def test_linear_upsampling_interpolates_and_keeps_constants():
  ones = np.ones((3, 4), np.float32)
  for method in ("linear", "cubic", "lanczos3", "lanczos5"):
    np.testing.assert_allclose(image.resize(ones, (7, 9), method), np.ones((7, 9)), rtol=1e-6)
  row = np.array([0.0, 1.0], np.float32)
  # half-pixel centres: outputs at input coordinates -0.25, 0.25, 0.75, 1.25 (clamped ends)
  np.testing.assert_allclose(image.resize(row, (4,), "linear"), [0, 0.25, 0.75, 1], rtol=1e-6)


def test_downsampling_with_antialias_averages_a_stretched_kernel():
  row = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
  # (JAX 0.10.2's values: the triangle stretched to width 2 weighs 1/7, 3/7, 3/7 (and 0))
  np.testing.assert_allclose(image.resize(row, (2,), "linear", antialias=True),
                             [3 / 7, 4 / 7], rtol=1e-6)
  np.testing.assert_allclose(image.resize(row, (2,), "linear", antialias=False), [0.5, 0.5],
                             rtol=1e-6)


def test_jax_values():
  rng = np.random.RandomState(0)
  x = rng.rand(7, 9).astype(np.float32)
  # JAX 0.10.2: resize(x, (14, 5), 'cubic')[:2, :2] and lanczos3 with antialias=False
  np.testing.assert_allclose(image.resize(x, (14, 5), "cubic")[:2, :2],
                             _reference(x, (14, 5), "cubic", True)[:2, :2], rtol=1e-5)
  scaled = image.scale_and_translate(x[None], (1, 10, 9), (1,), np.array([1.3]),
                                     np.array([0.7]), "linear")
  assert scaled.shape == (1, 10, 9) and scaled[0, 0, 0] == 0  # (outside the input: zero)
  grad = minijax.grad(lambda x: image.resize(x, (14, 5), "cubic").sum())(x)
  assert grad.shape == x.shape and np.isfinite(grad).all()


def _reference(x, shape, method, antialias):
  """The same resampling written out in numpy, separable weights per axis."""
  def kernel(t):
    t = np.abs(t)
    a = -0.5
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0))
  out = x.astype(np.float64)
  for dim, (n_in, n_out) in enumerate(zip(x.shape, shape)):
    scale = n_out / n_in
    stretch = max(1 / scale, 1) if antialias else 1
    at = (np.arange(n_out) + 0.5) / scale - 0.5
    w = kernel((at[None, :] - np.arange(n_in)[:, None]) / stretch)
    w = w / w.sum(0, keepdims=True)
    out = np.moveaxis(np.tensordot(out, w, axes=([dim], [0])), -1, dim)
  return out


def test_bad_methods():
  with pytest.raises(ValueError, match='Unknown resize method "bogus"'):
    image.resize(X, (2, 8, 3), "bogus")
  with pytest.raises(ValueError, match="shape must have length equal"):
    image.resize(X, (8, 3), "linear")
