"""NaN-ignoring reductions, `unique`, and the complex forms of the inverse trigonometric and
hyperbolic functions, `logaddexp`, `softplus`, `expit` and `logsumexp`: the values JAX
0.10.2 gives (recorded from it as literals where they are exact; the rest against numpy
within a few ulps)."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.scipy import special

NAN = np.nan
X = np.array([[NAN, NAN, 2], [1, NAN, -3]], np.float32)


@pytest.mark.parametrize("name, kwargs, expected", [
    ("nanmax", dict(axis=0), [1, NAN, 2]),            # a slice of NaNs only is NaN
    ("nanmin", dict(axis=1), [2, -3]),
    ("nanmax", dict(axis=0, initial=10.0), [10, 10, 10]),
    ("nanmin", dict(axis=1, where=np.array([True, True, False]), initial=0.0), [0, 0]),
    ("nanargmax", dict(axis=0), [1, -1, 0]),          # -1 for a slice of NaNs only
    ("nanargmin", dict(axis=1, keepdims=True), [[2], [2]]),
    ("nansum", dict(axis=1, where=np.array([True, False, True])), [2, -2]),
    ("nansum", dict(initial=2.0), 2.0),
    ("nanprod", dict(axis=0, keepdims=True), [[1, 1, -6]]),
    ("nanmean", dict(axis=1, where=np.array([False, True, True])), [2, -3]),
    ("nanvar", dict(axis=1, where=np.array([True, False, True])), [0, 4]),
    ("nancumprod", dict(axis=1), [[1, 1, 2], [1, 1, -3]]),
])
def test_nan_reductions_take_jaxs_keywords_and_give_its_values(name, kwargs, expected):
  got = np.asarray(getattr(jnp, name)(X, **kwargs))
  np.testing.assert_array_equal(got, np.asarray(expected, got.dtype))


def test_nan_reductions_refuse_out_as_jax_does():
  with pytest.raises(NotImplementedError, match="'out' argument to jnp.nanmean"):
    jnp.nanmean(X, out=np.empty(2, np.float32))


M = np.array([[1, 2, 1], [3, 1, 2], [1, 2, 1]], np.int32)


@pytest.mark.parametrize("kwargs, expected", [
    (dict(axis=0), ([[1, 2, 1], [3, 1, 2]],)),
    (dict(axis=1, return_counts=True), ([[1, 1, 2], [2, 3, 1], [1, 1, 2]], [1, 1, 1])),
    (dict(return_index=True, return_inverse=True),
     ([1, 2, 3], [0, 1, 3], [[0, 1, 0], [2, 0, 1], [0, 1, 0]])),
    (dict(size=6, fill_value=-1, return_counts=True), ([1, 2, 3, -1, -1, -1], [5, 3, 1, 0, 0, 0])),
    (dict(size=6), ([1, 2, 3, 1, 1, 1],)),
    (dict(axis=0, size=4, return_counts=True),
     ([[1, 2, 1], [3, 1, 2], [1, 2, 1], [1, 2, 1]], [2, 1, 0, 0])),
])
def test_unique_of_rows_counts_and_fixed_sizes_as_jax(kwargs, expected):
  got = jnp.unique(M, **kwargs)
  got = got if isinstance(got, tuple) else (got,)
  assert len(got) == len(expected)
  for g, e in zip(got, expected):
    assert np.asarray(g).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def _ulps(got, want, dtype=np.float32):
  """The largest distance in units of `dtype`'s epsilon, relative to |want| (or 1)."""
  got, want = np.asarray(got, np.complex128), np.asarray(want, np.complex128)
  scale = np.maximum(np.abs(want), 1.0)
  return float(np.max(np.abs(got - want) / scale) / np.finfo(dtype).eps)


# Off the branch cuts (where the sign of a zero decides), numpy's principal values.
RE, IM = np.meshgrid([-3, -1, -0.5, 0.25, 0.5, 1, 3], [-2, -0.3, 0.3, 2])
Z = (RE + 1j * IM).astype(np.complex64).ravel()


@pytest.mark.parametrize("name", ["arcsin", "arccos", "arctan", "arcsinh", "arccosh",
                                  "arctanh"])
def test_inverse_trigonometric_and_hyperbolic_functions_take_complex_numbers(name):
  got = getattr(jnp, name)(Z)
  assert got.dtype == np.complex64
  assert _ulps(got, getattr(np, name)(Z.astype(np.complex128))) < 8
  real = np.array([-0.9, -0.3, 0.0, 0.4, 0.99], np.float32) + (2.0 if name == "arccosh" else 0)
  assert _ulps(getattr(jnp, name)(real), getattr(np, name)(real.astype(np.float64))) < 8
  assert _ulps(getattr(minijax.lax, name.replace("arc", "a"))(Z),
               getattr(np, name)(Z.astype(np.complex128))) < 8


def test_the_inverse_functions_are_differentiated_by_their_formulas():
  for name, x, slope in [("arcsin", 0.6, 1 / 0.8), ("arccos", 0.6, -1 / 0.8),
                         ("arctan", 0.5, 0.8), ("arcsinh", 0.75, 0.8), ("arccosh", 1.25, 4 / 3),
                         ("arctanh", 0.5, 4 / 3)]:
    assert abs(float(minijax.grad(getattr(jnp, name))(np.float32(x))) - slope) < 1e-6, name


def test_complex_logaddexp_softplus_expit_and_logsumexp_are_numpys_principal_values():
  rng = np.random.default_rng(0)
  a = (rng.normal(size=40) * 3 + 1j * rng.normal(size=40) * 4).astype(np.complex64)
  b = (rng.normal(size=40) * 3 + 1j * rng.normal(size=40) * 4).astype(np.complex64)
  wide_a, wide_b = a.astype(np.complex128), b.astype(np.complex128)
  assert _ulps(jnp.logaddexp(a, b), np.log(np.exp(wide_a) + np.exp(wide_b))) < 16
  assert _ulps(minijax.nn.softplus(a), np.log1p(np.exp(wide_a))) < 16
  assert _ulps(special.expit(a), 1 / (1 + np.exp(-wide_a))) < 16
  m = a.reshape(5, 8)
  for axis in (None, 0, 1):
    want = np.log(np.sum(np.exp(m.astype(np.complex128)), axis=axis))
    assert _ulps(special.logsumexp(m, axis=axis), want) < 16, axis
  # JAX 0.10.2: with return_sign the log of |sum| is real and the sign is the sum's phase
  out, sign = minijax.nn.logsumexp(m, axis=1, return_sign=True)
  total = np.sum(np.exp(m.astype(np.complex128)), axis=1)
  assert out.dtype == np.float32 and _ulps(out, np.log(np.abs(total))) < 16
  assert _ulps(sign, total / np.abs(total)) < 16
  # weights b, negative ones too: the complex log of the weighted sum (it was NaN)
  weights = np.where(np.arange(8) % 3 == 0, -1.5, 1.0).astype(np.float32)
  want = np.log(np.sum(weights * np.exp(m.astype(np.complex128)), axis=1))
  assert _ulps(special.logsumexp(m, axis=1, b=weights), want) < 16
  assert minijax.nn.logsumexp is special.logsumexp


def test_variance_squares_deviations_as_jax_does():
  # real: lax.square of the deviations; complex: re^2 + im^2 as z * conj(z), not |z|
  # squared after a square root (which rounds twice)
  x = np.array([1.0, 2.0, 4.0], np.float32)
  names = [e.primitive.name for e in minijax.make_jaxpr(jnp.var)(x).eqns]
  assert "square" in names
  z = np.array([1 + 2j, -1j, 3 + 0.5j], np.complex64)
  names = [e.primitive.name for e in minijax.make_jaxpr(jnp.var)(z).eqns]
  assert "conj" in names and "abs" not in names and "sqrt" not in names
  np.testing.assert_allclose(jnp.var(z), np.var(z.astype(np.complex128)), rtol=1e-6)


def test_complex_sqrt_log1p_sin_cos_and_square_at_their_edges():
  # XLA's own complex sqrt, log1p, sine and cosine are inexact there (sqrt(-1) gave
  # -4.4e-8 + 1j, log1p(-1) gave 0, sin(1e-20j) gave 0 and sin(100j) NaN + inf j); JAX's
  # values, which are numpy's
  c = lambda *v: np.array(v, np.complex64)  # noqa: E731
  for f in (lambda f, x: f(x), lambda f, x: minijax.jit(f)(x)):
    np.testing.assert_array_equal(f(jnp.sqrt, c(-1, -4)), c(1j, 2j))
    np.testing.assert_array_equal(f(jnp.log1p, c(-1)), c(complex(-np.inf, 0)))
    np.testing.assert_array_equal(f(jnp.sin, c(1e-20j, 100j)), c(1e-20j, complex(0, np.inf)))
    np.testing.assert_array_equal(f(jnp.cos, c(1e20j, -1e20j)), c(np.inf, np.inf))
    np.testing.assert_array_equal(f(jnp.square, c(1e20 + 1e20j)), c(complex(0, np.inf)))
    np.testing.assert_array_equal(f(jnp.sinc, c(1e-20j)), c(1))
  z = np.array([complex(a, b) for a in (-2, -0.5, 0.3, 3) for b in (-30, -1e-3, 0.7, 5)],
               np.complex64)
  for name in ("sqrt", "log1p", "sin", "cos", "square"):
    np.testing.assert_allclose(getattr(jnp, name)(z), getattr(np, name)(z.astype(complex)),
                               rtol=3e-6, err_msg=name)
