"""`minijax.numpy.vectorize` with generalized-ufunc signatures, against numpy's."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

_rng = np.random.default_rng(0)
A = _rng.standard_normal((5, 3, 4)).astype(np.float32)
V = _rng.standard_normal((4,)).astype(np.float32)


def test_matrix_vector_signature_broadcasts_loop_dimensions():
  mv = jnp.vectorize(jnp.dot, signature="(m,n),(n)->(m)")
  np.testing.assert_allclose(mv(A, V), np.einsum("bmn,n->bm", A, V), rtol=1e-5, atol=1e-5)
  B, W = A[:2, None], _rng.standard_normal((5, 4)).astype(np.float32)
  want = np.vectorize(np.dot, signature="(m,n),(n)->(m)")(B, W)
  np.testing.assert_allclose(mv(B, W), want, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(minijax.jit(mv)(B, W), want, rtol=1e-5, atol=1e-5)


def test_several_outputs_scalars_and_excluded_arguments():
  stats = jnp.vectorize(lambda x: (x.sum(), x.max()), signature="(n)->(),()")
  s, m = stats(A)
  np.testing.assert_allclose(s, A.sum(-1), rtol=1e-5)
  np.testing.assert_array_equal(m, A.max(-1))
  scaled = jnp.vectorize(lambda x, k: x * k, excluded={1})
  np.testing.assert_array_equal(scaled(np.arange(3.0), 2.0), [0, 2, 4])
  add = jnp.vectorize(lambda a, b: a + b, signature="(),()->()")
  np.testing.assert_array_equal(add(np.arange(3.0), np.arange(2.0)[:, None]),
                                np.arange(3.0) + np.arange(2.0)[:, None])
  assert jnp.vectorize(jnp.sum, signature="(n)->()")(A).shape == (5, 3)


def test_vectorize_composes_with_grad():
  norm = jnp.vectorize(lambda v: jnp.sqrt(jnp.sum(v * v)), signature="(n)->()")
  g = minijax.grad(lambda x: jnp.sum(norm(x)))(A)
  np.testing.assert_allclose(g, A / np.linalg.norm(A, axis=-1, keepdims=True), rtol=1e-5)


def test_signature_mismatches_raise_naming_the_dimension():
  mv = jnp.vectorize(jnp.dot, signature="(m,n),(n)->(m)")
  with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
    mv(A, np.ones(3))
  with pytest.raises(ValueError, match="does not have enough dimensions"):
    mv(V, V)
  with pytest.raises(ValueError, match="output shape .* does not match core dimensions"):
    jnp.vectorize(jnp.sum, signature="(n)->(n)")(A)
  with pytest.raises(ValueError, match="not a valid gufunc signature"):
    jnp.vectorize(jnp.sum, signature="(n->(n)")
  with pytest.raises(TypeError, match="wrong number of positional arguments"):
    mv(A)
  with pytest.raises(TypeError, match="output must be a tuple"):
    jnp.vectorize(jnp.sum, signature="(n)->(),()")(A)
  with pytest.raises(TypeError, match="can only exclude integer or string"):
    jnp.vectorize(jnp.sum, excluded={1.5})


def test_none_arguments_pass_through_and_output_counts_are_checked():
  f = jnp.vectorize(lambda x, y: x if y is None else x + y)
  np.testing.assert_array_equal(f(np.arange(3), None), np.arange(3))
  np.testing.assert_array_equal(f(np.arange(3), np.arange(3)), 2 * np.arange(3))
  with pytest.raises(ValueError, match=r"Cannot pass None at locations \{1\} with "
                     r"signature='\(k\),\(k\)->\(k\)'"):
    jnp.vectorize(lambda x, y: x, signature="(k),(k)->(k)")(np.arange(3), None)
  with pytest.raises(TypeError, match="wrong number of output arguments: expected 3, got 2"):
    jnp.vectorize(lambda *args: args, signature="(),()->(),(),()")(1, 2)
  with pytest.raises(ValueError, match=r"excluded=\{-1\} contains negative numbers"):
    jnp.vectorize(lambda x: x, excluded={-1})
  g = jnp.vectorize(lambda x, y, func=jnp.add: func(x, y), excluded=(2, "func"))
  x = np.arange(4, dtype=np.int32)
  np.testing.assert_array_equal(g(x, np.int32(2), jnp.power), x ** 2)
  np.testing.assert_array_equal(g(x, np.int32(2), func=jnp.power), x ** 2)


def test_key_arrays_are_vectorized_over_like_any_array():
  # flowjax draws one sample per key of a key array through vectorize (JAX's values)
  keys = minijax.random.split(minijax.random.key(0), 3)
  draw = jnp.vectorize(lambda k, c: minijax.random.normal(k) + c, signature="(),()->()")
  for f in (draw, minijax.jit(draw)):
    np.testing.assert_allclose(f(keys, jnp.arange(3.0)),
                               [1.0040143, -1.4424558, 3.295636], rtol=1e-5)
  pairs = jnp.vectorize(lambda k: minijax.random.normal(k, (2,)), signature="()->(n)")(keys)
  assert pairs.shape == (3, 2)
