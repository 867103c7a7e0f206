"""`jnp.linspace` computes in the result's dtype as JAX 0.10.2 does, so its values are JAX's
bit for bit (the bit patterns below were recorded from JAX); numpy, which computes in
float64 and rounds, differs from them in the last place."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp


@pytest.mark.parametrize("call,bits", [
    (lambda: jnp.linspace(-3.3, 10.1, 13),
     [3226678067, 3221994428, 3213396104, 1028443392, 1066751320, 1074930211, 1079613850,
      1083213961, 1085555781, 1087897601, 1090239421, 1091550140, 1092721050]),
    (lambda: jnp.linspace(0.1, 0.7, 9, endpoint=False),
     [1036831949, 1042983595, 1047457520, 1050253722, 1052490684, 1054727646, 1056964608,
      1058083089, 1059201570]),
    (lambda: jnp.linspace(0, 1, 7),
     [0, 1042983595, 1051372203, 1056964608, 1059760811, 1062557014, 1065353216]),
])
def test_linspace_float32_values_are_jax_bit_for_bit(call, bits):
  out = np.asarray(call())
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out.view(np.uint32), np.array(bits, np.uint32))
  np.testing.assert_array_equal(np.asarray(minijax.jit(call)()).view(np.uint32),
                                np.array(bits, np.uint32))


def test_linspace_differs_from_numpy_where_jax_does():
  # numpy's float64 computation rounds 5/6 to 1062557013; JAX's float32 one gives ...014
  assert np.linspace(0, 1, 7).astype(np.float32).view(np.uint32)[5] == 1062557013
  assert np.asarray(jnp.linspace(0, 1, 7)).view(np.uint32)[5] == 1062557014


def test_linspace_dtypes_arrays_and_step_as_jax():
  np.testing.assert_array_equal(jnp.linspace(0, 10, 4, dtype=np.int32), [0, 3, 6, 10])
  np.testing.assert_array_equal(jnp.linspace(0, 1 + 2j, 5),
                                np.array([0, 0.25 + 0.5j, 0.5 + 1j, 0.75 + 1.5j, 1 + 2j],
                                         np.complex64))
  assert jnp.linspace(0, 1 + 2j, 5).dtype == np.complex64
  np.testing.assert_array_equal(
      jnp.linspace(np.array([0., 1.]), np.array([1., 3.]), 5, axis=1),
      [[0, 0.25, 0.5, 0.75, 1], [1, 1.5, 2, 2.5, 3]])
  np.testing.assert_array_equal(np.asarray(jnp.linspace(0, 1, 7, dtype=np.float16)).view(
      np.uint16), [0, 12629, 13653, 14336, 14677, 15018, 15360])
  values, step = jnp.linspace(2.0, 3.0, 6, retstep=True)
  assert float(step) == np.float32(0.2) and values.dtype == np.float32
  assert jnp.linspace(1.5, 3, 1).tolist() == [1.5] and jnp.linspace(1.5, 3, 0).shape == (0,)
  with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative"):
    jnp.linspace(0, 1, -1)


def test_linspace_is_differentiable_in_its_endpoints():
  g = minijax.grad(lambda a, b: jnp.sum(jnp.linspace(a, b, 5) ** 2), argnums=(0, 1))(
      np.float32(1.0), np.float32(2.0))
  t = np.linspace(0, 1, 5)
  x = 1 + t
  np.testing.assert_allclose(g, [np.sum(2 * x * (1 - t)), np.sum(2 * x * t)], rtol=1e-6)
