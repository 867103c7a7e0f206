"""minijax.random against JAX 0.10.2 (threefry2x32, partitionable; its bits exactly), under
the transformations, in its statistics, and in its errors.

`FACTS` and `X64_FACTS` were recorded once from jax 0.10.2 with its defaults: each row is
an expression (evaluated here with `random`, `jnp` and `np` bound to minijax's), and the
dtype, shape and values JAX gave for it (floats as the shortest decimal that round-trips in
their dtype).  Eager results must equal them, and so must the same expressions all compiled
as one `jit` program: integers (keys, bits, indices) exactly, floats within a few ulps, since
XLA's code generation and LAPACK may round the last bit differently on another CPU.  Samplers whose exact values are not meaningful to pin
(the gradients of gamma-based samplers, which JAX computes with another algorithm) are
compared to JAX within rounding, and every distribution's moments are checked against its
law on large samples.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax, random
from tests.conftest import compiles
from tests.ulps import assert_within_ulps

pytestmark = pytest.mark.usefixtures("x64_off")


# (expression, dtype, shape, values) recorded from jax 0.10.2
FACTS = [
    ('random.split(random.PRNGKey(0))',
     'uint32', (2, 2), [1797259609, 2579123966, 928981903, 3453687069]),
    ('random.split(random.PRNGKey(42), 5)',
     'uint32', (5, 2), [1832780943, 270669613, 64467757, 2916123636, 2465931498, 255383827, 3134548294, 894150801, 2954079971, 3276725750]),
    ('random.split(random.PRNGKey(7), (2, 3))',
     'uint32', (2, 3, 2), [3625411723, 1954958720, 195045567, 4062205631, 966301609, 1948237315, 276534068, 1641862660, 51277378, 3088387524, 3583082021, 1947592014]),
    ('random.fold_in(random.PRNGKey(3), 17)',
     'uint32', (2,), [3297648638, 1387884871]),
    ('random.fold_in(random.PRNGKey(3), 2**31 + 5)',
     'uint32', (2,), [1887271982, 2728263104]),
    ('random.fold_in(random.PRNGKey(1234), 0)',
     'uint32', (2,), [1264997412, 2518116175]),
    ('random.PRNGKey(-1)',
     'uint32', (2,), [0, 4294967295]),
    ('random.PRNGKey(2**40 + 3)',
     'uint32', (2,), [0, 3]),
    ('random.PRNGKey(123456789)',
     'uint32', (2,), [0, 123456789]),
    ('random.PRNGKey(np.uint32(4000000000))',
     'uint32', (2,), [0, 4000000000]),
    ('random.PRNGKey(np.int8(-3))',
     'uint32', (2,), [0, 4294967293]),
    ('random.key_data(random.key(99))',
     'uint32', (2,), [0, 99]),
    ('random.key_data(random.split(random.key(99), 3))',
     'uint32', (3, 2), [2409909296, 1748937858, 1925565811, 346054269, 3190976147, 2276514278]),
    ('random.key_data(random.fold_in(random.key(99), 5))',
     'uint32', (2,), [733239418, 3626201925]),
    ('random.bits(random.PRNGKey(1), (5,))',
     'uint32', (5,), [1883912375, 2292451390, 1915204986, 1882898417, 3854144420]),
    ('random.bits(random.PRNGKey(1), (2, 3), jnp.uint8)',
     'uint8', (2, 3), [183, 62, 122, 241, 164, 188]),
    ('random.bits(random.PRNGKey(1), (4,), jnp.uint16)',
     'uint16', (4,), [14519, 2110, 46458, 49137]),
    ('random.bits(random.PRNGKey(2), ())',
     'uint32', (), [2752176745]),
    ('random.uniform(random.PRNGKey(0), (5,))',
     'float32', (5,), [0.947667, 0.9785799, 0.33229148, 0.46866846, 0.5698887]),
    ('random.uniform(random.PRNGKey(5), (2, 3), minval=-2., maxval=3.)',
     'float32', (2, 3), [0.3318994, 2.6044052, 1.6790508, -1.5245928, 2.5724483, 1.3886462]),
    ('random.uniform(random.PRNGKey(5), (4,), jnp.float16)',
     'float16', (4,), [0.674, 0.8604, 0.06055, 0.2607]),
    ('random.uniform(random.PRNGKey(5), (4,), jnp.bfloat16)',
     'bfloat16', (4,), [0.523438, 0.390625, 0.5625, 0.765625]),
    ('random.uniform(random.PRNGKey(9), ())',
     'float32', (), [0.04077804]),
    ('random.uniform(random.PRNGKey(9), (3,), minval=jnp.array([0., 1., 2.]), maxval=5.)',
     'float32', (3,), [0.2038902, 4.8702483, 3.2595553]),
    ('random.uniform(random.key(31), (2, 2))',
     'float32', (2, 2), [0.92777133, 0.39104724, 0.5446435, 0.03484571]),
    ('random.normal(random.PRNGKey(0), (3,))',
     'float32', (3,), [1.6226422, 2.0252647, -0.43359444]),
    ('random.normal(random.PRNGKey(11), (2, 4))',
     'float32', (2, 4), [-0.80717516, -2.0803597, 0.6050853, -0.39861456, 0.27889383, -0.49347746, -2.043362, 0.9530603]),
    ('random.normal(random.PRNGKey(11), ())',
     'float32', (), [-0.80717516]),
    ('random.normal(random.PRNGKey(11), (3,), jnp.float16)',
     'float16', (3,), [-0.447, 0.1505, -0.1616]),
    ('random.normal(random.PRNGKey(11), (3,), jnp.bfloat16)',
     'bfloat16', (3,), [1.54688, -0.212891, 0.449219]),
    ('random.normal(random.key(12), (5,))',
     'float32', (5,), [0.25540063, 0.08309579, 0.11247405, -0.7555607, 0.14588562]),
    ('random.truncated_normal(random.PRNGKey(2), -1., 2., (6,))',
     'float32', (6,), [0.47667542, 1.2584372, -0.39354113, 1.1766709, 0.0025504408, -0.4557782]),
    ('random.truncated_normal(random.PRNGKey(2), jnp.array([-3., 0.5]), 1.)',
     'float32', (2,), [0.099453956, 0.94021636]),
    ('random.lognormal(random.PRNGKey(8), 0.5, (4,))',
     'float32', (4,), [0.75900054, 0.50431406, 3.9648583, 1.3257732]),
    ('random.bernoulli(random.PRNGKey(4), 0.3, (8,))',
     'bool', (8,), [False, False, True, False, False, False, True, False]),
    ('random.bernoulli(random.PRNGKey(4), jnp.array([0.1, 0.5, 0.9]))',
     'bool', (3,), [False, False, True]),
    ("random.bernoulli(random.PRNGKey(4), 0.3, (8,), mode='high')",
     'bool', (8,), [False, False, True, False, False, False, True, False]),
    ('random.gumbel(random.PRNGKey(8), (5,))',
     'float32', (5,), [-0.21160328, -0.899937, 5.82952, 1.0864725, -0.61958414]),
    ("random.gumbel(random.PRNGKey(8), (5,), mode='high')",
     'float32', (5,), [1.0688674, 2.4151013, -1.7631867, -0.22349225, 1.7745749]),
    ('random.exponential(random.PRNGKey(8), (5,))',
     'float32', (5,), [0.34339717, 0.08935826, 5.8309894, 1.250436, 0.16955549]),
    ('random.laplace(random.PRNGKey(8), (5,))',
     'float32', (5,), [0.54251033, 1.7663004, -5.1378527, -0.5572888, 1.1650078]),
    ('random.logistic(random.PRNGKey(8), (5,))',
     'float32', (5,), [-0.89226043, -2.3700898, 5.8280497, 0.91303134, -1.6885996]),
    ('random.cauchy(random.PRNGKey(8), (5,))',
     'float32', (5,), [-0.7724458, -3.6337464, 108.44464, 0.79405826, -1.8749727]),
    ('random.rademacher(random.PRNGKey(8), (6,))',
     'int32', (6,), [1, 1, -1, -1, 1, 1]),
    ('random.pareto(random.PRNGKey(8), 3., (4,))',
     'float32', (4,), [1.1212742, 1.0302341, 6.984288, 1.5171173]),
    ('random.f(random.PRNGKey(21), 3., 5., (3,))',
     'float32', (3,), [3.5333357, 0.1359384, 1.241688]),
    ('random.maxwell(random.PRNGKey(22), (4,))',
     'float32', (4,), [1.8840815, 1.2723819, 1.7695259, 1.9585295]),
    ('random.weibull_min(random.PRNGKey(23), 2., 1.5, (4,))',
     'float32', (4,), [2.129956, 0.83474314, 1.5628221, 1.5210028]),
    ('random.rayleigh(random.PRNGKey(24), 2., (4,))',
     'float32', (4,), [1.8820468, 2.7425618, 3.0943093, 1.5676352]),
    ('random.geometric(random.PRNGKey(25), 0.3, (6,))',
     'int32', (6,), [1, 9, 7, 2, 1, 2]),
    ('random.geometric(random.PRNGKey(25), jnp.array([0.1, 0.9]))',
     'int32', (2,), [2, 2]),
    ('random.randint(random.PRNGKey(6), (6,), 0, 10)',
     'int32', (6,), [2, 2, 8, 1, 2, 8]),
    ('random.randint(random.PRNGKey(6), (2, 3), -5, 5)',
     'int32', (2, 3), [-3, -3, 3, -4, -3, 3]),
    ('random.randint(random.PRNGKey(6), (6,), 0, 256, jnp.uint8)',
     'uint8', (6,), [14, 182, 124, 167, 72, 204]),
    ('random.randint(random.PRNGKey(6), (6,), -100, 100, jnp.int8)',
     'int8', (6,), [82, 42, 48, -69, 52, 48]),
    ('random.randint(random.PRNGKey(6), (6,), 0, 1000, jnp.int16)',
     'int16', (6,), [382, 342, 148, 31, 952, 348]),
    ('random.randint(random.PRNGKey(6), (6,), 3, 3)',
     'int32', (6,), [3, 3, 3, 3, 3, 3]),
    ('random.randint(random.PRNGKey(6), (4,), jnp.array([0, 10, 20, 30]), 40)',
     'int32', (4,), [22, 22, 28, 31]),
    ('random.randint(random.PRNGKey(6), (5,), -2**31, 2**31 - 1)',
     'int32', (5,), [-1319046898, 3478710, -2057229188, -722035033, 764107080]),
    ('random.randint(random.PRNGKey(7), (5,), 0, np.uint32(4000000000), jnp.uint32)',
     'uint32', (5,), [2899676959, 3548400998, 1692160380, 1822441453, 900059358]),
    ('random.categorical(random.PRNGKey(10), jnp.array([0.1, 1.0, -0.5, 2.0]), shape=(8,))',
     'int32', (8,), [3, 3, 1, 3, 1, 3, 0, 3]),
    ('random.categorical(random.PRNGKey(10), jnp.log(jnp.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])))',
     'int32', (2,), [2, 0]),
    ('random.categorical(random.PRNGKey(10), jnp.zeros((3, 4)), axis=0)',
     'int32', (4,), [1, 2, 1, 1]),
    ('random.categorical(random.PRNGKey(10), jnp.array([0.1, 1.0, -0.5, 2.0]), shape=(3,), replace=False)',
     'int32', (3,), [3, 1, 2]),
    ('random.choice(random.PRNGKey(12), 10, (4,))',
     'int32', (4,), [2, 0, 0, 4]),
    ('random.choice(random.PRNGKey(12), 10, (4,), replace=False)',
     'int32', (4,), [1, 8, 6, 3]),
    ('random.choice(random.PRNGKey(12), jnp.arange(20.).reshape(4, 5), (3,), axis=1)',
     'float32', (4, 3), [2.0, 0.0, 0.0, 7.0, 5.0, 5.0, 12.0, 10.0, 10.0, 17.0, 15.0, 15.0]),
    ('random.choice(random.PRNGKey(12), 5, (6,), p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2]))',
     'int32', (6,), [2, 2, 2, 3, 2, 4]),
    ('random.choice(random.PRNGKey(12), 5, (3,), replace=False, p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2]))',
     'int32', (3,), [2, 4, 1]),
    ('random.choice(random.PRNGKey(12), jnp.array([10, 20, 30]), (2, 2))',
     'int32', (2, 2), [20, 20, 20, 20]),
    ('random.permutation(random.PRNGKey(13), 10)',
     'int32', (10,), [1, 9, 8, 0, 4, 7, 2, 5, 3, 6]),
    ('random.permutation(random.PRNGKey(13), jnp.arange(12).reshape(4, 3))',
     'int32', (4, 3), [3, 4, 5, 0, 1, 2, 6, 7, 8, 9, 10, 11]),
    ('random.permutation(random.PRNGKey(13), jnp.arange(12).reshape(4, 3), axis=1, independent=True)',
     'int32', (4, 3), [1, 0, 2, 4, 5, 3, 8, 7, 6, 9, 11, 10]),
    ('random.gamma(random.PRNGKey(14), jnp.array([0.1, 0.5, 1.0, 3.0, 20.0]))',
     'float32', (5,), [0.00025861798, 2.2896383, 2.1608458, 5.3822136, 17.722765]),
    ('random.loggamma(random.PRNGKey(14), jnp.array([0.01, 0.5, 4.0]))',
     'float32', (3,), [-87.34443, 0.8283938, 1.8578222]),
    ('random.beta(random.PRNGKey(15), jnp.array([0.5, 1., 5.]), 0.7)',
     'float32', (3,), [0.9959649, 0.60848343, 0.9985935]),
    ('random.dirichlet(random.PRNGKey(16), jnp.array([1., 2., 3.]), (2,))',
     'float32', (2, 3), [0.033861686, 0.49045923, 0.47567907, 0.05419217, 0.22023368, 0.72557414]),
    ('random.t(random.PRNGKey(17), 3., (5,))',
     'float32', (5,), [0.29685277, 0.7082015, 0.5208639, -0.34285077, 1.7693578]),
    ('random.poisson(random.PRNGKey(18), jnp.array([0., 0.5, 4., 12., 50., 1000.]))',
     'int32', (6,), [0, 1, 5, 7, 43, 958]),
    ('random.multivariate_normal(random.PRNGKey(19), jnp.array([1., -1.]), jnp.array([[2., 0.5], [0.5, 1.]]), (3,))',
     'float32', (3, 2), [0.23368448, -1.3389021, 2.99724, 0.4811573, 1.8543155, 0.0884881]),
    ('random.orthogonal(random.PRNGKey(20), 3)',
     'float32', (3, 3), [-0.30279756, 0.11040207, -0.9466389, -0.78932697, 0.527599, 0.31401008, -0.53411305, -0.842289, 0.072612286]),

]

X64_FACTS = [
    ('random.uniform(random.PRNGKey(0), (4,), jnp.float64)',
     'float64', (4,), [0.41845711171638644, 0.21629545460551136, 0.9653214611189975, 0.5745005337275046]),
    ('random.normal(random.PRNGKey(0), (4,), jnp.float64)',
     'float64', (4,), [-0.2058421394796434, -0.7847657764467411, 1.8160866726679836, 0.1878440128937887]),
    ('random.bits(random.PRNGKey(1), (3,), jnp.uint64)',
     'uint64', (3,), [2179487362436112514, 8370371427069427784, 10487943526538222699]),
    ('random.PRNGKey(-1)',
     'uint32', (2,), [4294967295, 4294967295]),
    ('random.PRNGKey(2**40 + 3)',
     'uint32', (2,), [256, 3]),
    ('random.randint(random.PRNGKey(6), (4,), 0, 10, jnp.int64)',
     'int64', (4,), [5, 1, 7, 6]),
    ('random.randint(random.PRNGKey(6), (4,), -2**40, 2**40)',
     'int64', (4,), [-758126550207, 658066589999, 1062263569803, 228044706194]),
    ('random.gamma(random.PRNGKey(14), jnp.array([0.3, 2.0, 7.0]), dtype=jnp.float64)',
     'float64', (3,), [1.503332890852087, 0.6213863858152255, 4.980728961899418]),
    ('random.truncated_normal(random.PRNGKey(2), -1., 2., (4,), jnp.float64)',
     'float64', (4,), [0.014431443014905556, -0.5824630972581075, 0.5351478873918424, 0.043901013535688385]),
    ('random.exponential(random.PRNGKey(8), (3,), jnp.float64)',
     'float64', (3,), [2.4293918161371306, 2.577076708918159, 0.8052669880264378]),

]

_NAMESPACE = {"random": random, "jnp": jnp, "np": np}


def _evaluate(expr):
  out = eval(expr, dict(_NAMESPACE))  # noqa: S307 (the table's own expressions)
  return out


def _expected(dtype, shape, values):
  dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
  return np.array([dtype.type(v) for v in values], dtype).reshape(shape)


# LAPACK computes these samples (a QR or a Cholesky factorization): their rounding scales with
# the matrix
_FACTORIZED = ("random.orthogonal", "random.multivariate_normal")


def _assert_equals_jax(got, dtype, shape, values, what):
  """Integers (and threefry's bits) exactly; floats, which XLA's code generation or LAPACK
  may round differently on another CPU, within a few ulps (tests/ulps.py)."""
  expected = _expected(dtype, shape, values)
  got = np.asarray(got)
  if np.issubdtype(expected.dtype, np.integer) or expected.dtype == np.bool_:
    assert got.dtype == expected.dtype and got.shape == expected.shape, (what, got.dtype,
                                                                          got.shape)
    assert got.tobytes() == expected.tobytes(), f"{what}:\n got {got.ravel()}\nwant {expected.ravel()}"
  elif what.removeprefix("under jit: ").startswith(_FACTORIZED):
    assert_within_ulps(got, expected, 8, scale="array", what=what)
  else:
    assert_within_ulps(got, expected, 4, what=what)


@pytest.mark.parametrize("expr,dtype,shape,values", FACTS, ids=[f[0] for f in FACTS])
def test_eager_samples_equal_jax(expr, dtype, shape, values):
  _assert_equals_jax(_evaluate(expr), dtype, shape, values, expr)


@pytest.mark.parametrize("expr,dtype,shape,values", X64_FACTS, ids=[f[0] for f in X64_FACTS])
def test_64_bit_samples_equal_jax(x64, expr, dtype, shape, values):
  _assert_equals_jax(_evaluate(expr), dtype, shape, values, expr)


_JITTED = {
    "random.normal(random.PRNGKey(11), (2, 4))": lambda k: random.normal(k, (2, 4)),
    "random.uniform(random.PRNGKey(5), (2, 3), minval=-2., maxval=3.)":
        lambda k: random.uniform(k, (2, 3), minval=-2., maxval=3.),
    "random.randint(random.PRNGKey(6), (2, 3), -5, 5)": lambda k: random.randint(k, (2, 3), -5, 5),
    "random.split(random.PRNGKey(7), (2, 3))": lambda k: random.split(k, (2, 3)),
    "random.permutation(random.PRNGKey(13), 10)": lambda k: random.permutation(k, 10),
    "random.bernoulli(random.PRNGKey(4), 0.3, (8,))": lambda k: random.bernoulli(k, 0.3, (8,)),
}


def test_samplers_under_jit_equal_jax():
  """(With the key an argument: JAX's own numbers change when XLA can fold a constant key,
  and so do minijax's, identically.)"""
  facts = {f[0]: f[1:] for f in FACTS}
  seeds = {"normal": 11, "uniform": 5, "randint": 6, "split": 7, "permutation": 13,
           "bernoulli": 4}
  for expr, draw in _JITTED.items():
    seed = next(v for n, v in seeds.items() if f"random.{n}(" in expr)
    got = minijax.jit(draw)(random.PRNGKey(seed))
    _assert_equals_jax(got, *facts[expr], f"under jit: {expr}")


# ----------------------------------------------------------------------------- keys

def test_typed_keys_print_index_reshape_and_compare_like_jax():
  key = random.key(0)
  assert repr(key) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
  assert str(key.dtype) == "key<fry>" and key.shape == () and key.ndim == 0
  keys = random.split(key, 6)
  assert isinstance(keys, random.PRNGKeyArray) and keys.shape == (6,) and len(keys) == 6
  data = np.asarray(random.key_data(keys))
  assert data.shape == (6, 2) and data.dtype == np.uint32
  np.testing.assert_array_equal(random.key_data(keys[4]), data[4])
  np.testing.assert_array_equal(random.key_data(keys[1:3]), data[1:3])
  grid = keys.reshape(2, 3)
  assert grid.shape == (2, 3) and grid[1, 2].shape == () and grid[:, 0].shape == (2,)
  np.testing.assert_array_equal(random.key_data(grid[1, 2]), data[5])
  np.testing.assert_array_equal(random.key_data(grid[..., 1]), data[[1, 4]])
  assert grid.T.shape == (3, 2) and keys[None].shape == (1, 6)
  np.testing.assert_array_equal(np.asarray(keys == keys), np.ones(6, bool))
  assert not bool(keys[0] == keys[1]) and bool(keys[0] != keys[1])
  assert [k.shape for k in keys[:2]] == [(), ()]
  assert random.key_impl(key) == random.key_impl(random.PRNGKey(0)) == "threefry2x32"


def test_typed_and_raw_keys_draw_the_same_numbers():
  typed, raw = random.key(21), random.PRNGKey(21)
  np.testing.assert_array_equal(random.key_data(typed), raw)
  for draw in (lambda k: random.normal(k, (4,)), lambda k: random.randint(k, (3,), 0, 9)):
    np.testing.assert_array_equal(draw(typed), draw(raw))
  split_typed, split_raw = random.split(typed, 3), random.split(raw, 3)
  assert isinstance(split_typed, random.PRNGKeyArray) and not isinstance(
      split_raw, random.PRNGKeyArray)
  np.testing.assert_array_equal(random.key_data(split_typed), split_raw)
  wrapped = random.wrap_key_data(split_raw)
  assert isinstance(wrapped, random.PRNGKeyArray) and wrapped.shape == (3,)
  np.testing.assert_array_equal(random.key_data(wrapped), split_raw)
  np.testing.assert_array_equal(random.key_data(random.fold_in(typed, 3)),
                                random.fold_in(raw, 3))


def test_fold_in_is_the_key_at_that_counter():
  key = random.PRNGKey(5)
  keys = random.split(key, 40)
  for i in (0, 1, 17, 39):
    np.testing.assert_array_equal(random.fold_in(key, i), keys[i])


def test_seeds_of_every_integer_type_and_traced_seeds():
  for seed in (7, np.int32(7), np.uint8(7), np.int64(7), jnp.int32(7)):
    np.testing.assert_array_equal(random.PRNGKey(seed), [0, 7])
  np.testing.assert_array_equal(minijax.jit(random.PRNGKey)(-2), [0, 4294967294])
  np.testing.assert_array_equal(minijax.vmap(random.PRNGKey)(jnp.arange(3)),
                                [[0, 0], [0, 1], [0, 2]])
  np.testing.assert_array_equal(
      random.key_data(minijax.vmap(random.key)(jnp.array([1, 2]))), [[0, 1], [0, 2]])


def test_an_eager_sampler_is_one_compiled_call(caplog):
  key = random.PRNGKey(0)
  random.normal(key, (7,))  # compiled here
  assert compiles(caplog, lambda: random.normal(key, (7,))) == []
  logged = compiles(caplog, lambda: random.normal(key, (9,)))
  assert len(logged) == 1 and "_normal" in logged[0]


# ----------------------------------------------------------------------------- transformations

_PER_KEY = {
    "uniform": lambda k: random.uniform(k, (3,), minval=-1., maxval=2.),
    "normal": lambda k: random.normal(k, (2, 2)),
    "randint": lambda k: random.randint(k, (3,), 0, 100),
    "bernoulli": lambda k: random.bernoulli(k, 0.4, (5,)),
    "gamma": lambda k: random.gamma(k, jnp.array([0.5, 3.0])),
    "categorical": lambda k: random.categorical(k, jnp.array([0.0, 1.0, 2.0]), shape=(4,)),
    "choice": lambda k: random.choice(k, 6, (3,), replace=False),
    "permutation": lambda k: random.permutation(k, 5),
    "split": lambda k: random.split(k, 3),
    "fold_in": lambda k: random.fold_in(k, 9),
    "truncated_normal": lambda k: random.truncated_normal(k, -0.5, 0.5, (3,)),
}


@pytest.mark.parametrize("name", list(_PER_KEY))
def test_vmap_over_keys_equals_a_loop_over_them(name):
  draw = _PER_KEY[name]
  keys = random.split(random.PRNGKey(8), 3)
  batched = minijax.vmap(draw)(keys)
  for i in range(3):
    np.testing.assert_array_equal(np.asarray(batched[i]), np.asarray(draw(keys[i])))


def test_vmap_over_parameters_equals_a_loop():
  key = random.PRNGKey(4)
  cases = [
      (lambda lo: random.uniform(key, (3,), minval=lo, maxval=lo + 2.), jnp.arange(3.)),
      (lambda hi: random.randint(key, (3,), 0, hi), jnp.array([2, 50, 1000])),
      (lambda p: random.bernoulli(key, p, (4,)), jnp.array([0.1, 0.5, 0.9])),
      (lambda i: random.fold_in(key, i), jnp.arange(3)),
  ]
  for draw, params in cases:
    batched = minijax.vmap(draw)(params)
    for i in range(params.shape[0]):
      np.testing.assert_array_equal(np.asarray(batched[i]), np.asarray(draw(params[i])))


def test_vmap_maps_typed_key_arrays_and_returns_them():
  keys = random.split(random.key(8), 3)
  draws = minijax.vmap(lambda k: random.normal(k, (2, 2)))(keys)
  np.testing.assert_array_equal(draws[2], random.normal(keys[2], (2, 2)))
  children = minijax.vmap(lambda k: random.split(k, 3))(keys)
  assert isinstance(children, random.PRNGKeyArray) and children.shape == (3, 3)
  np.testing.assert_array_equal(random.key_data(children[1]),
                                random.key_data(random.split(keys[1], 3)))


def test_nested_vmap_jit_and_scan_carry_keys():
  grid = random.split(random.PRNGKey(2), (2, 3))
  nested = minijax.vmap(minijax.vmap(lambda k: random.normal(k, (2,))))(grid)
  assert nested.shape == (2, 3, 2)
  np.testing.assert_array_equal(nested[1, 2], random.normal(grid[1, 2], (2,)))
  jitted = minijax.jit(minijax.vmap(lambda k: random.uniform(k)))(grid.reshape(6, 2))
  np.testing.assert_array_equal(jitted[4], random.uniform(grid[1, 1]))

  def step(key, _):
    key, sub = random.split(key)
    return key, random.normal(sub)

  _, scanned = lax.scan(step, random.key(3), None, length=4)
  key, expected = random.key(3), []
  for _ in range(4):
    key, sub = random.split(key)
    expected.append(random.normal(sub))
  np.testing.assert_array_equal(scanned, np.array(expected))


# ----------------------------------------------------------------------------- gradients

def test_reparameterized_samplers_differentiate():
  key = random.PRNGKey(1)
  z = random.normal(key, (5,))
  g_mu, g_sigma = minijax.grad(lambda m, s: (m + s * random.normal(key, (5,))).sum(),
                               argnums=(0, 1))(1.0, 2.0)
  assert float(g_mu) == 5.0
  np.testing.assert_allclose(g_sigma, np.sum(z), rtol=1e-6)
  # the uniform's draw is linear in minval and maxval
  g_lo = minijax.grad(lambda lo: random.uniform(key, (4,), minval=lo, maxval=3.).sum())(1.0)
  u = np.asarray(random.uniform(key, (4,)))
  np.testing.assert_allclose(g_lo, np.sum(1 - u), rtol=1e-5)


# d/d(parameter) of sum(samples) at key PRNGKey(3), recorded from jax 0.10.2
# (beta's runs through loggamma's gradient, in log space; t's, chisquare's and dirichlet's
# reuse gamma's and loggamma's)
_GRAD_FACTS = [
    ("beta", lambda k, a: random.beta(k, a, 2.0, (4,)).sum(), 1.5, 0.6617379),
]


@pytest.mark.parametrize("name,fn,param,expected", _GRAD_FACTS, ids=[f[0] for f in _GRAD_FACTS])
def test_gamma_based_gradients_match_jax(name, fn, param, expected):
  got = minijax.grad(lambda p: fn(random.PRNGKey(3), p))(param)
  np.testing.assert_allclose(got, expected, rtol=2e-5)


def test_gamma_gradient_matches_jax_and_is_the_implicit_derivative_of_its_quantile():
  key = random.PRNGKey(3)
  draw = minijax.jit(lambda a: minijax.jvp(lambda b: random.gamma(key, b, (4,)), (a,), (1.,)))
  for a, grad_of_sum in ((2.5, 3.6815836), (0.3, 3.332357)):  # jax 0.10.2
    x, dx = draw(a)
    np.testing.assert_allclose(np.sum(dx), grad_of_sum, rtol=2e-5)
    # x(a) keeps P(a, x(a)) fixed, so dP/da + dP/dx · dx/da = 0
    x, dx = np.asarray(x, np.float64), np.asarray(dx, np.float64)
    density = np.exp((a - 1) * np.log(x) - x - math.lgamma(a))
    residual = np.asarray(lax.igamma_grad_a(np.full(4, a, np.float32), x.astype(np.float32)))
    np.testing.assert_allclose(residual + density * dx, 0, atol=2e-5)


# ----------------------------------------------------------------------------- errors

def _raises(exc, match, fn):
  with pytest.raises(exc, match=match):
    fn()


def test_bad_keys_raise_clear_errors():
  key = random.PRNGKey(0)
  _raises(TypeError, "random.normal expects a PRNG key.*got 1.0", lambda: random.normal(1.0))
  _raises(TypeError, "got None", lambda: random.uniform(None, (2,)))
  _raises(TypeError, "key_data.shape to end with \\(2,\\).*got shape=\\(3,\\)",
          lambda: random.normal(np.zeros(3, np.uint32)))
  _raises(TypeError, "key_data.dtype = uint32; got dtype=int32",
          lambda: random.normal(np.zeros(2, np.int32)))
  _raises(ValueError, "normal accepts a single key, but was given a key array of shape "
          "\\(2,\\)", lambda: random.normal(random.split(key), (2,)))
  _raises(ValueError, "split accepts a single key", lambda: random.split(random.split(key)))
  _raises(TypeError, "add does not accept dtypes key<fry>, int32", lambda: random.key(0) + 1)
  _raises(TypeError, "key_data.shape to end with \\(2,\\).*got shape=\\(3, 3\\)",
          lambda: random.wrap_key_data(np.zeros((3, 3), np.uint32)))
  _raises(TypeError, "seed must be an integer", lambda: random.PRNGKey(1.5))
  _raises(TypeError, "key accepts a scalar seed, but was given an array of shape \\(2,\\)",
          lambda: random.key(jnp.zeros(2, jnp.int32)))
  _raises(TypeError, "fold_in accepts a scalar", lambda: random.fold_in(key, jnp.zeros(2)))
  _raises(OverflowError, "out of bounds for uint32", lambda: random.fold_in(key, -1))
  _raises(ValueError, 'unrecognized PRNG implementation "rgb"',
          lambda: random.key(0, impl="rgb"))


def test_bad_sampler_arguments_raise_jax_errors():
  key = random.PRNGKey(0)
  _raises(ValueError, "dtype argument to `normal` must be a float or complex dtype, got int32",
          lambda: random.normal(key, (2,), jnp.int32))
  _raises(ValueError, "dtype argument to `uniform` must be a float dtype",
          lambda: random.uniform(key, (2,), jnp.int32))
  _raises(TypeError, "randint only accepts integer dtypes, got float32",
          lambda: random.randint(key, (2,), 0, 3, jnp.float32))
  _raises(ValueError, "must be an unsigned int dtype", lambda: random.bits(key, (2,), jnp.int32))
  _raises(ValueError, "Cannot take a larger sample \\(size 5\\) than population \\(size 3\\)",
          lambda: random.choice(key, 3, (5,), replace=False))
  _raises(ValueError, "a must be greater than 0", lambda: random.choice(key, 0, (2,)))
  _raises(ValueError, "p must be None or a 1D vector",
          lambda: random.choice(key, 5, (2,), p=jnp.ones(4) / 4))
  _raises(ValueError, "cannot exceed number of categories",
          lambda: random.categorical(key, jnp.zeros(3), shape=(4,), replace=False))
  _raises(TypeError, "x must be an integer or at least 1-dimensional",
          lambda: random.permutation(key, 2.5))
  _raises(ValueError, "Must provide valid mode for gumbel",
          lambda: random.gumbel(key, (2,), mode="bad"))
  _raises(ValueError, "broadcast-compatible with shape argument",
          lambda: random.randint(key, (2,), jnp.zeros(3, jnp.int32), 5))
  _raises(ValueError, "broadcast-compatible with shape argument",
          lambda: random.truncated_normal(key, jnp.zeros(3), 1., (2,)))
  _raises(ValueError, "negative dimension", lambda: random.split(key, -1))
  _raises(TypeError, "shapes must be 1D sequences", lambda: random.normal(key, (2.5,)))
  assert random.normal(key, 3).shape == (3,)  # an int shape is accepted, as in JAX


# ----------------------------------------------------------------------------- statistics

N = 40_000


def _moments(x):
  x = np.asarray(x, np.float64)
  return x.mean(), x.var()


def _close(value, target, tol, what):
  assert abs(value - target) <= tol, f"{what}: {value} vs {target} (tolerance {tol})"


# name -> (draw of N samples, mean, variance); tolerances are 6 standard errors.  (The
# gamma-based samplers and poisson are pinned to JAX's values above; their moments add
# little and their programs are the slowest to compile.)
_CONTINUOUS = {
    "uniform": (lambda k: random.uniform(k, (N,), minval=-1., maxval=3.), 1.0, 16 / 12),
    "normal": (lambda k: random.normal(k, (N,)), 0.0, 1.0),
    "exponential": (lambda k: random.exponential(k, (N,)), 1.0, 1.0),
    "laplace": (lambda k: random.laplace(k, (N,)), 0.0, 2.0),
    "logistic": (lambda k: random.logistic(k, (N,)), 0.0, math.pi ** 2 / 3),
    "gumbel": (lambda k: random.gumbel(k, (N,)), np.euler_gamma, math.pi ** 2 / 6),
    "gumbel high": (lambda k: random.gumbel(k, (N,), mode="high"), np.euler_gamma,
                    math.pi ** 2 / 6),
    "truncated normal": (lambda k: random.truncated_normal(k, 0.0, np.inf, (N,)),
                         math.sqrt(2 / math.pi), 1 - 2 / math.pi),
    "lognormal": (lambda k: random.lognormal(k, 0.5, (N,)), math.exp(0.125),
                  (math.exp(0.25) - 1) * math.exp(0.25)),
    "pareto 5": (lambda k: random.pareto(k, 5.0, (N,)), 1.25, 5 / (16 * 3)),
    "rademacher": (lambda k: random.rademacher(k, (N,)), 0.0, 1.0),
}


@pytest.mark.parametrize("name", list(_CONTINUOUS))
def test_sample_moments_match_the_distribution(name):
  draw, mean, var = _CONTINUOUS[name]
  m, v = _moments(draw(random.PRNGKey(100)))
  _close(m, mean, 6 * math.sqrt(var / N), f"{name} mean")
  _close(v, var, 0.06 * var + 1e-9, f"{name} variance")


def test_cauchy_quartiles_and_bernoulli_frequency():
  c = np.asarray(random.cauchy(random.PRNGKey(1), (N,)))
  np.testing.assert_allclose(np.percentile(c, [25, 50, 75]), [-1, 0, 1], atol=0.05)
  b = np.asarray(random.bernoulli(random.PRNGKey(2), 0.3, (N,)))
  _close(b.mean(), 0.3, 6 * math.sqrt(0.21 / N), "bernoulli")


def test_discrete_samplers_hit_each_outcome_at_its_rate():
  key = random.PRNGKey(11)
  r = np.asarray(random.randint(key, (N,), -2, 3))
  np.testing.assert_allclose(np.bincount(r + 2, minlength=5) / N, np.full(5, 0.2), atol=0.015)
  logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
  c = np.asarray(random.categorical(key, logits, shape=(N,)))
  np.testing.assert_allclose(np.bincount(c, minlength=4) / N, [0.1, 0.2, 0.3, 0.4], atol=0.015)
  p = np.array([0.5, 0.1, 0.4], np.float32)
  ch = np.asarray(random.choice(key, 3, (N,), p=p))
  np.testing.assert_allclose(np.bincount(ch, minlength=3) / N, p, atol=0.015)
  perms = np.asarray(minijax.vmap(lambda k: random.permutation(k, 4))(random.split(key, 4000)))
  assert all(sorted(row) == [0, 1, 2, 3] for row in perms[:50])
  np.testing.assert_allclose(np.mean(perms == 0, axis=0), np.full(4, 0.25), atol=0.04)
  firsts = np.asarray(minijax.vmap(lambda k: random.choice(k, 3, (2,), replace=False, p=p))(
      random.split(key, 4000)))[:, 0]
  np.testing.assert_allclose(np.bincount(firsts, minlength=3) / 4000, p, atol=0.04)


def test_multivariate_normal_covariance_and_orthogonal_matrices():
  cov = np.array([[2.0, 0.6], [0.6, 1.0]], np.float32)
  mean = np.array([1.0, -1.0], np.float32)
  for method in ("cholesky", "eigh", "svd"):
    x = np.asarray(random.multivariate_normal(random.PRNGKey(3), mean, cov, (N,),
                                              method=method))
    np.testing.assert_allclose(x.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)
  q = np.asarray(random.orthogonal(random.PRNGKey(4), 4, (3,)))
  np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (3, 4, 4)),
                             atol=1e-5)
  wide = np.asarray(random.orthogonal(random.PRNGKey(4), 2, m=5))
  np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)


# The samplers JAX 0.10.2 has beside the others: values recorded from jax 0.10.2 for key(7)
# of threefry2x32 and of rbg (float results of XLA's code, compared within a few ulps).
_MORE_SAMPLERS = [
    ('random.double_sided_maxwell(k, 1., 2., (4,))',
     [-1.4771909713745117, -4.170105457305908, 3.7603445053100586, 5.872409343719482],
     [7.540484428405762, 2.810466766357422, -1.8715848922729492, 3.813265323638916]),
    ('random.double_sided_maxwell(k, np.array([0., 1.]), 2.)',
     [[-2.4771909713745117, -4.170105457305908], [2.7603445053100586, 5.872409343719482]],
     [[6.540484428405762, 2.810466766357422], [-2.871584892272949, 3.813265323638916]]),
    ('random.wald(k, 1.5, (4,))',
     [0.41869986057281494, 1.783737063407898, 0.7993422746658325, 0.8879154920578003],
     [0.6670571565628052, 0.8229382634162903, 0.08866357803344727, 1.4102660417556763]),
    ('random.wald(k, np.array([0.5, 2.0]))',
     [0.23181116580963135, 2.442716360092163],
     [0.31055548787117004, 1.0032473802566528]),
    ('random.triangular(k, 0., 0.3, 2., (4,))',
     [0.9473394155502319, 1.7062269449234009, 0.46041178703308105, 0.625030517578125],
     [1.031259536743164, 0.47760069370269775, 0.8132871389389038, 1.117016315460205]),
    ('random.generalized_normal(k, 1.5, (4,))',
     [-0.11314882338047028, -0.786064863204956, 0.05867381393909454, 0.3168768882751465],
     [0.13431794941425323, 0.4465455412864685, -0.45755159854888916, 0.18157155811786652]),
    ('random.ball(k, 3, 2, (2,))',
     [[-0.3638841509819031, 0.39458540081977844, 0.11975819617509842], [-0.48726168274879456, 0.13322879374027252, -0.14461813867092133]],
     [[0.4471975564956665, -0.35528337955474854, -0.705735445022583], [0.6101064085960388, -0.39139804244041443, -0.5445823073387146]]),
    ('random.ball(k, 2, 1.5)',
     [-0.35683032870292664, 0.37051665782928467],
     [0.6309358477592468, -0.4156869649887085]),
]


@pytest.mark.parametrize("expr,threefry,rbg", _MORE_SAMPLERS, ids=[s[0] for s in _MORE_SAMPLERS])
def test_more_samplers_match_jax(expr, threefry, rbg):
  for impl, expected in (("threefry2x32", threefry), ("rbg", rbg)):
    got = eval(expr, {"random": random, "np": np, "k": random.key(7, impl=impl)})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.array(expected, np.float32), rtol=2e-6, atol=1e-7)


def test_more_samplers_check_their_arguments():
  key = random.key(0)
  _raises(ValueError, "dtype argument to `wald` must be a float dtype",
          lambda: random.wald(key, 1., (2,), np.int32))
  _raises(ValueError, "triangular parameter shapes must be broadcast-compatible",
          lambda: random.triangular(key, np.zeros(3), 0.5, 1., (2,)))
  assert random.ball(key, 4, shape=(5,)).shape == (5, 4)
  assert float(np.max(np.sum(np.abs(np.asarray(random.ball(key, 3, 1.5, (200,)))) ** 1.5,
                             -1))) <= 1


SHARDED_SAMPLERS = {  # every sampler to which JAX 0.10.2 gives `out_sharding`, with arguments
    "ball": (2,), "bernoulli": (0.5, (3,)), "beta": (2.0, 3.0, (3,)), "bits": ((3,),),
    "categorical": (jnp.zeros(4), -1, (3,)), "cauchy": ((3,),), "chisquare": (2.0, (3,)),
    "dirichlet": (jnp.ones(3),), "exponential": ((3,),), "f": (2.0, 3.0, (3,)),
    "gamma": (2.0, (3,)), "generalized_normal": (2.0, (3,)), "geometric": (0.5, (3,)),
    "gumbel": ((3,),), "laplace": ((3,),), "loggamma": (2.0, (3,)), "logistic": ((3,),),
    "lognormal": (1.0, (3,)), "maxwell": ((3,),),
    "multivariate_normal": (jnp.zeros(2), jnp.eye(2), (3,)), "normal": ((3,),),
    "orthogonal": (2,), "pareto": (2.0, (3,)), "permutation": (5,), "poisson": (2.0, (3,)),
    "rademacher": ((3,),), "randint": ((3,), 0, 5), "rayleigh": (1.0, (3,)), "t": (2.0, (3,)),
    "triangular": (0.0, 0.5, 1.0, (3,)), "truncated_normal": (-1.0, 1.0, (3,)),
    "uniform": ((3,),), "wald": (1.0, (3,))}


@pytest.mark.parametrize("name", sorted(SHARDED_SAMPLERS))
def test_samplers_take_jaxs_out_sharding_keyword(name):
  import inspect
  from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P
  sampler, args, key = getattr(random, name), SHARDED_SAMPLERS[name], random.key(0)
  param = inspect.signature(sampler).parameters["out_sharding"]
  assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None
  plain = np.asarray(sampler(key, *args))
  # flax.nnx's Dropout passes the sharding of its input's type: unsharded, nothing changes
  unsharded = minijax.typeof(jnp.ones(plain.shape)).sharding
  np.testing.assert_array_equal(sampler(key, *args, out_sharding=unsharded), plain)
  mesh = Mesh(minijax.devices()[:1], ("x",))
  placed = minijax.jit(lambda k: sampler(k, *args, out_sharding=NamedSharding(mesh, P())))(key)
  np.testing.assert_array_equal(placed, minijax.jit(lambda k: sampler(k, *args))(key))
