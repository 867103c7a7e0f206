"""`jnp.ufunc` (JAX 0.10.2's): numpy's ufunc methods on minijax's elementwise functions and
on Python functions through `frompyfunc`, compared with numpy's own ufunc methods; JAX's
properties and errors recorded from it."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

X = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
XI = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
MASK = np.array([[True, False, True, True], [False, False, True, False], [True] * 4])


def _twice_minus(a, b):
  return a * 2 - b


TWICE_MINUS = jnp.frompyfunc(_twice_minus, 2, 1)
NP_TWICE_MINUS = np.frompyfunc(_twice_minus, 2, 1)


def _same(got, want):
  got, want = np.asarray(got), np.asarray(want, dtype=np.asarray(got).dtype)
  np.testing.assert_allclose(got, want, rtol=2e-6)


def test_power_of_a_concrete_integer_exponent_is_integer_pow_as_in_jax():
  x = jnp.array([2, 3, -1], jnp.int32)
  # a concrete integer scalar exponent, of any kind, is JAX's integer_pow (multiplications):
  # negative powers of integers are refused with JAX's TypeError
  for exponent in (-1, np.int32(-2), jnp.array(-1)):
    with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
      jnp.power(x, exponent)
  with pytest.raises(TypeError, match=r"integer_pow\(~int32\[\], -1\)"):
    jnp.power(2, -1)
  assert jnp.power(x, np.int64(3)).tolist() == [8, 27, -1]
  # bools become int32, as JAX's numeric promotion makes them
  assert jnp.power(jnp.array([True, False]), 2).dtype == np.int32
  # a traced exponent stays an array operation
  assert minijax.jit(jnp.power)(x, 2).tolist() == [4, 9, 1]


def test_jaxs_ufuncs_are_ufunc_objects_with_jaxs_properties():
  names = sorted(n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc))
  assert names == ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
                   "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
                   "negative", "subtract"]
  assert [(u.__name__, u.nin, u.nout, u.nargs, u.identity)
          for u in (jnp.add, jnp.negative, jnp.logaddexp, jnp.bitwise_and, jnp.maximum)] == [
      ("add", 2, 1, 2, 0), ("negative", 1, 1, 1, None), ("logaddexp", 2, 1, 2, -np.inf),
      ("bitwise_and", 2, 1, 2, -1), ("maximum", 2, 1, 2, None)]
  assert repr(jnp.add) == "<jnp.ufunc 'add'>" and repr(TWICE_MINUS) == "<jnp.ufunc '_twice_minus'>"
  assert jnp.add(2, 3) == 5 and jnp.add(X, X, out=None).shape == (3, 4)
  with pytest.raises(NotImplementedError, match="out argument of <jnp.ufunc 'add'>"):
    jnp.add(X, X, out=X)
  with pytest.raises(NotImplementedError, match="where argument"):
    jnp.add(X, X, where=MASK)
  # a key array still meets its own error through the ufunc
  with pytest.raises(TypeError, match="add does not accept dtypes key<fry>"):
    jnp.add(minijax.random.key(0), 1)


@pytest.mark.parametrize("name,kwargs", [
    ("add", dict()), ("add", dict(axis=None)), ("add", dict(axis=1, keepdims=True)),
    ("add", dict(axis=1, where=MASK)), ("add", dict(initial=100.0)),
    ("subtract", dict(axis=1)),
    ("subtract", dict(axis=0, keepdims=True)), ("subtract", dict(axis=1, initial=1.0)),
    ("subtract", dict(axis=1, where=MASK, initial=0.0)),
    ("multiply", dict(axis=1)), ("maximum", dict(axis=1, where=MASK, initial=-1.0)),
    ("minimum", dict(axis=0)), ("logaddexp", dict(axis=1))])
def test_reduce_agrees_with_numpy(name, kwargs):
  _same(getattr(jnp, name).reduce(X, **kwargs), getattr(np, name).reduce(X, **kwargs))


def test_reduce_of_integers_booleans_and_python_functions():
  for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "multiply"):
    np.testing.assert_array_equal(getattr(jnp, name).reduce(XI, axis=1),
                                  getattr(np, name).reduce(XI, axis=1))
  for name in ("logical_and", "logical_or", "logical_xor"):
    np.testing.assert_array_equal(getattr(jnp, name).reduce(MASK, axis=1),
                                  getattr(np, name).reduce(MASK, axis=1))
  np.testing.assert_array_equal(jnp.logical_and.reduce(XI - 5, axis=1), [True, False, True])
  assert jnp.subtract.reduce(X, axis=None) == -76.0  # JAX's: flattened (numpy refuses)
  assert jnp.add.reduce(MASK).tolist() == [2, 1, 3, 2]  # (JAX: bools sum as ints)
  assert jnp.add.reduce(XI, dtype=jnp.float32).dtype == np.float32
  _same(TWICE_MINUS.reduce(X, axis=1), NP_TWICE_MINUS.reduce(X, axis=1).astype(np.float32))
  jitted = minijax.jit(lambda a: jnp.subtract.reduce(a, axis=1))
  _same(jitted(X), np.subtract.reduce(X, axis=1))
  assert minijax.jit(lambda a, u: u.reduce(a), static_argnums=1)(X, jnp.add).tolist() == [
      15.0, 18.0, 21.0, 24.0]
  # the derivative runs through the scan of the generic form: d/da of ((a0*2-a1)*2-a2)*2-a3
  assert minijax.grad(TWICE_MINUS.reduce)(np.arange(4.0, dtype=np.float32)).tolist() == [
      8.0, -4.0, -2.0, -1.0]


def test_reduce_errors_are_jaxs():
  empty = np.zeros((0,), np.float32)
  assert jnp.add.reduce(empty) == 0.0
  with pytest.raises(ValueError, match="zero-size array to reduction operation subtract which "
                     "has no identity"):
    jnp.subtract.reduce(empty)
  assert jnp.frompyfunc(jnp.maximum, 2, 1, identity=-5).reduce(empty) == -5
  with pytest.raises(ValueError, match="reduction operation 'subtract' does not have an "
                     "identity, so to use a where mask one has to specify 'initial'"):
    jnp.subtract.reduce(X, where=MASK)
  with pytest.raises(ValueError, match="where argument must have dtype=bool; got dtype=int32"):
    jnp.add.reduce(X, where=XI)
  with pytest.raises(ValueError, match="reduce only supported for binary ufuncs"):
    jnp.negative.reduce(X)
  with pytest.raises(ValueError, match="reduce only supported for functions returning a single"):
    jnp.frompyfunc(lambda a, b: (a + b, a - b), 2, 2).reduce(X)
  with pytest.raises(NotImplementedError, match="out argument of add.reduce"):
    jnp.add.reduce(X, out=X)
  with pytest.raises(NotImplementedError, match="tuple of axes"):
    jnp.subtract.reduce(X, axis=(0, 1))


@pytest.mark.parametrize("name,axis", [("add", 1), ("multiply", 0), ("subtract", 1),
                                       ("maximum", 0), ("minimum", 1), ("logaddexp", -1)])
def test_accumulate_agrees_with_numpy(name, axis):
  _same(getattr(jnp, name).accumulate(X, axis=axis), getattr(np, name).accumulate(X, axis=axis))


def test_accumulate_of_python_functions_and_nans():
  _same(TWICE_MINUS.accumulate(X, axis=-1),
        NP_TWICE_MINUS.accumulate(X, axis=-1).astype(np.float32))
  np.testing.assert_array_equal(
      jnp.maximum.accumulate(np.array([1.0, 3.0, np.nan, 2.0, 5.0])), [1, 3, np.nan, np.nan, np.nan])
  assert jnp.add.accumulate(XI, axis=0, dtype=jnp.float32).dtype == np.float32
  assert TWICE_MINUS.accumulate(np.zeros((0, 2), np.float32)).shape == (0, 2)
  with pytest.raises(ValueError, match="accumulate does not allow multiple axes"):
    TWICE_MINUS.accumulate(X, axis=None)


def _numpy_at(ufunc, a, indices, *b):
  a = np.array(a)
  ufunc.at(a, indices, *b)
  return a


@pytest.mark.parametrize("name,indices,b", [
    ("add", (np.array([0, 0, 2]), np.array([1, 1, 3])), 10.0),
    ("add", (slice(None), 1), np.array([1.0, 2.0, 3.0])),
    ("subtract", np.array([1, 1]), 1.0), ("multiply", np.array([0, 0]), 3.0),
    ("maximum", np.array([0, 2, 2]), np.array([[30.0], [2.0], [70.0]])),
    ("negative", np.array([0, 2, 2]), None)])
def test_at_agrees_with_numpy(name, indices, b):
  extra = () if b is None else (b,)
  got = getattr(jnp, name).at(X, indices, *extra, inplace=False)
  _same(got, _numpy_at(getattr(np, name), X, indices, *extra))


def test_at_of_a_python_function_compounds_repeats_and_drops_out_of_bounds():
  got = TWICE_MINUS.at(np.arange(5.0), np.array([1, 1, -1, 9]), 1.0, inplace=False)
  assert got.tolist() == [0.0, 1.0, 2.0, 3.0, 7.0]  # JAX 0.10.2's; numpy raises for the 9
  batched = minijax.vmap(lambda a: jnp.add.at(a, np.array([0, 0]), 1.0, inplace=False))(X)
  _same(batched, X + np.array([2.0, 0, 0, 0]))
  with pytest.raises(NotImplementedError, match=r"jnp.ufunc.at\(\) cannot operate inplace"):
    jnp.add.at(X, 0, 1.0)
  with pytest.raises(TypeError, match="add.at"):
    jnp.add.at(X, 0, inplace=False)


def test_reduceat_agrees_with_numpy():
  a, idx = np.arange(8.0, dtype=np.float32), np.array([0, 4, 1, 5, 7])
  for name in ("add", "maximum", "multiply"):
    _same(getattr(jnp, name).reduceat(a, idx), getattr(np, name).reduceat(a, idx))
  _same(jnp.add.reduceat(X, np.array([0, 2, 3]), axis=1),
        np.add.reduceat(X, np.array([0, 2, 3]), axis=1))
  _same(TWICE_MINUS.reduceat(a, idx[:4]),
        NP_TWICE_MINUS.reduceat(a, idx[:4]).astype(np.float32))
  with pytest.raises(ValueError, match=r"reduceat: a must have 1 or more dimension, got "
                     r"a.shape=\(\)"):
    jnp.add.reduceat(np.float32(1), np.array([0]))
  with pytest.raises(ValueError, match=r"indices must be one-dimensional, got "
                     r"indices.shape=\(1, 1\)"):
    jnp.add.reduceat(X, np.array([[0]]))


def test_outer_and_calls_of_python_functions():
  a, b = np.arange(3), np.arange(4.0).reshape(2, 2)
  _same(jnp.add.outer(a, b), np.add.outer(a, b))
  _same(TWICE_MINUS.outer(np.arange(3.0), np.arange(2.0)),
        NP_TWICE_MINUS.outer(np.arange(3.0), np.arange(2.0)).astype(np.float64))
  _same(TWICE_MINUS(np.arange(3.0), np.arange(3.0)[:, None]),
        NP_TWICE_MINUS(np.arange(3.0), np.arange(3.0)[:, None]).astype(np.float64))
  plus_minus = jnp.frompyfunc(lambda p, q: (p + q, p - q), 2, 2)
  s, d = plus_minus(np.arange(3.0), 1.0)
  assert s.tolist() == [1.0, 2.0, 3.0] and d.tolist() == [-1.0, 0.0, 1.0]
  with pytest.raises(ValueError, match="outer only supported for binary ufuncs"):
    jnp.negative.outer(X, X)


def test_hypot_scales_so_squares_neither_overflow_nor_underflow():
  # (it squared its operands: hypot(1e30, 1e30) was inf in float32, hypot(1e-30, 1e-30) 0)
  big, tiny = np.float32(1e30), np.float32(1e-30)
  np.testing.assert_allclose(jnp.hypot(big, big), np.hypot(big, big), rtol=2e-7)
  np.testing.assert_allclose(jnp.hypot(tiny, -tiny), np.hypot(tiny, tiny), rtol=2e-7)
  assert jnp.hypot(np.inf, np.nan) == np.inf and jnp.hypot(0.0, 0.0) == 0.0
  assert jnp.hypot(3, 4) == 5.0
  np.testing.assert_allclose(minijax.grad(jnp.hypot, argnums=(0, 1))(3.0, 4.0), (0.6, 0.8),
                             rtol=1e-6)


def test_logarithms_in_other_bases_take_jaxs_forms():
  # log10 multiplies by 1/log(10) rounded to the dtype (as JAX's), log2 divides by log(2);
  # logaddexp2 is JAX's max + log1p(2^-|a-b|) / log(2) with its own tangent rule
  x = np.float32(1000.0)
  text = str(minijax.make_jaxpr(jnp.log10)(x))
  assert "mul b 0.4342944920063019:f32[]" in text and "div" not in text
  # (within ulps: what log rounds to is the CPU's code generation's)
  np.testing.assert_allclose(jnp.log10(x), 3.0, rtol=4 * 2.0 ** -23)
  np.testing.assert_allclose(jnp.log2(np.float32(8)), 3.0, rtol=4 * 2.0 ** -23)
  np.testing.assert_allclose(jnp.logaddexp2(1.0, 2.0), np.logaddexp2(1.0, 2.0), rtol=1e-7)
  assert jnp.logaddexp2(np.inf, np.inf) == np.inf and jnp.logaddexp2(-np.inf, -np.inf) == -np.inf
  np.testing.assert_allclose(minijax.grad(jnp.logaddexp2)(1.0, 2.0), 1 / 3, rtol=1e-6)
  assert minijax.grad(jnp.logaddexp2)(np.inf, 2.0) == 1.0
  np.testing.assert_allclose(jnp.logaddexp2(np.complex64(1 + 1j), np.complex64(2)),
                             np.log2(2 ** (1 + 1j) + 4), rtol=1e-6)


def test_isclose_compares_integers_as_floats_and_takes_array_tolerances():
  # integers are compared in float, as JAX and numpy do (minijax compared them exactly,
  # ignoring atol: silently another answer)
  assert jnp.isclose(jnp.array([1, 2]), jnp.array([1, 3]), atol=1).tolist() == [True, True]
  x, y = np.array([1.0, 2.0, 3.0], np.float32), np.array([1.1, 2.0, 3.3], np.float32)
  # tolerances may be arrays (dynamax passes a Monte Carlo standard error per element)
  assert jnp.isclose(x, y, atol=np.array([0.2, 0.0, 0.0], np.float32)).tolist() == \
      np.isclose(x, y, atol=[0.2, 0.0, 0.0]).tolist()
  wide = np.full((2, 3), 0.05, np.float32)
  np.testing.assert_array_equal(jnp.isclose(x, y, atol=wide), np.isclose(x, y, atol=wide))
  assert bool(jnp.allclose(x, y, rtol=np.float32(0.2)))



def test_ufunc_methods_compute_in_the_functions_result_dtype():
  """JAX 0.10.2's values: a logical ufunc's accumulate and at fold booleans (minijax folded
  in the integers' dtype, so logical_or.accumulate([1, 0, 4]) gave [1, 1, 4]), and the
  logical reductions take initial= (they raised)."""
  ints = np.array([[1, 0, 4], [0, 0, 2]], np.int32)
  acc = jnp.logical_or.accumulate(ints, axis=1)
  assert acc.dtype == np.bool_ and acc.tolist() == [[True, True, True], [False, False, True]]
  at = jnp.logical_or.at(np.arange(5), np.array([3, 1, 3, 0]), 2, inplace=False)
  assert at.dtype == np.bool_ and at.tolist() == [True, True, True, True, True]
  assert jnp.logical_or.reduce(np.zeros(3, np.int32), initial=True).tolist() is True
  assert jnp.logical_and.reduce(np.ones((2, 3), np.int32), axis=0, keepdims=True,
                                initial=False).tolist() == [[False] * 3]
  assert jnp.logical_or.reduce(ints, axis=1, where=np.array([False, True, False]),
                               initial=False).tolist() == [False, False]
