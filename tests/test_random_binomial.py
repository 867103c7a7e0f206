"""random.binomial and random.multinomial against JAX 0.10.2.

The samples are counts (integers held in floats), so they are compared exactly with the
values recorded once from jax 0.10.2 (threefry2x32, x64 off): the same key gives the same
counts only when the inversion and BTRS rejection samplers draw the same uniforms in the
same order and make the same accept decisions.  Each recorded row also runs under jit and
(for binomial) under vmap over keys, whose numbers JAX gives too.
"""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import random

pytestmark = pytest.mark.usefixtures("x64_off")

NAN, INF = float("nan"), float("inf")

# (sampler, expected) recorded from jax 0.10.2
BINOMIAL = [
    # n q <= 10: inversion
    (lambda k: random.binomial(k, 5., 0.3, shape=(8,)), [2, 1, 1, 0, 1, 3, 3, 0]),
    # n q > 10: BTRS rejection
    (lambda k: random.binomial(k, 100., 0.4, shape=(8,)), [33, 38, 34, 45, 36, 42, 45, 39]),
    # p >= 1/2 samples q = 1 - p and returns n minus the count
    (lambda k: random.binomial(k, 60., 0.8, shape=(6,)), [53, 50, 52, 45, 51, 47]),
    (lambda k: random.binomial(k, 20., 0.5, shape=(3,), dtype=jnp.float16), [11, 10, 8]),
    (lambda k: random.binomial(k, jnp.float16(100), jnp.float16(0.5)), 48),
    # corner cases: a negative or NaN n gives NaN, an infinite one inf; a bad p gives NaN
    (lambda k: random.binomial(k, jnp.array([-1, 0, jnp.nan, jnp.inf]), 0.5, shape=(4,)),
     [NAN, 0, NAN, INF]),
    (lambda k: random.binomial(k, 5, jnp.array([jnp.nan, 0, -0.1, 1.1]), shape=(4,)),
     [NAN, 0, NAN, NAN]),
]


def _check(got, expected, dtype=np.float32):
  got = np.asarray(got)
  expected = np.asarray(expected, dtype)
  assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape)
  np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("i", range(len(BINOMIAL)))
def test_binomial_counts_equal_jax_eagerly_and_under_jit(i):
  draw, expected = BINOMIAL[i]
  dtype = np.float16 if i == 3 else np.float32
  _check(draw(random.key(0)), expected, dtype)
  _check(minijax.jit(draw)(random.key(0)), expected, dtype)


def test_binomial_broadcasts_counts_and_probabilities_like_jax():
  got = random.binomial(random.PRNGKey(3), jnp.array([3., 50., 1000., 7.5]),
                        jnp.array([0.9, 0.5, 0.02, 0.25]))
  _check(got, [3, 25, 14, 1])


def test_binomial_under_jit_and_vmap_over_keys_equals_jax():
  draw = lambda k: random.binomial(k, 30., 0.6, shape=(5,))
  _check(minijax.jit(draw)(random.key(0)), [22, 19, 22, 15, 20])
  keys = random.split(random.key(0), 3)
  got = minijax.vmap(lambda k: random.binomial(k, 30., 0.6, shape=(2,)))(keys)
  _check(got, [[22, 19], [22, 19], [16, 19]])


def test_multinomial_counts_equal_jax():
  key = random.key(0)
  _check(random.multinomial(key, 20., jnp.array([0.2, 0.3, 0.5])), [1, 6, 13])
  got = random.multinomial(key, jnp.array([10., 500.]),
                           jnp.array([[0.1, 0.6, 0.3], [0.25, 0.25, 0.5]]), dtype=jnp.int32)
  _check(got, [[0, 9, 1], [120, 123, 257]], np.int32)
  got = random.multinomial(random.PRNGKey(1), 7, jnp.array([0.5, 0.5]), shape=(3, 2))
  _check(got, [[5, 2], [5, 2], [1, 6]])


def test_binomial_sample_moments_match_the_law():
  n, p = 21., 0.3
  s = np.asarray(random.binomial(random.key(5), n, p, shape=(20000,)))
  assert np.all(s == np.floor(s)) and s.min() >= 0 and s.max() <= n
  np.testing.assert_allclose(s.mean(), n * p, rtol=0.02)
  np.testing.assert_allclose(s.var(), n * p * (1 - p), rtol=0.05)
  counts = np.asarray(random.multinomial(random.key(6), 1e5, jnp.array([0.1, 0.2, 0.7])))
  assert counts.sum() == 1e5
  np.testing.assert_allclose(counts / 1e5, [0.1, 0.2, 0.7], atol=1e-2)


def test_binomial_and_multinomial_check_their_arguments_like_jax():
  key = random.key(0)
  with pytest.raises(ValueError, match="dtype argument to `binomial` must be a float dtype"):
    random.binomial(key, 10, 0.3, dtype=int)
  with pytest.raises(TypeError, match="binomial"):
    random.binomial(key, [10], 0.3)
  with pytest.raises(TypeError, match="multinomial"):
    random.multinomial(key, 10, [0.3, 0.7])
  with pytest.raises(ValueError, match="shape"):
    random.binomial(key, jnp.ones(3), 0.3, shape=(2,))
  with pytest.raises(ValueError, match="accepts a single key"):
    random.binomial(random.split(key), 10, 0.3)
