"""`jet` (Taylor mode): for functions that use every kind of rule (linear, bilinear, the
recurrences of div/exp/log/sin/cos/tanh/logistic/sqrt/rsqrt/integer_pow, calls, and the
nested-jvp fallback for loops, sorts and special functions), the derivatives of
`t -> f(x(t))` agree with ones computed independently by repeated `jvp` in t, and with
values recorded from JAX 0.10.2."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.experimental.jet import jet

RNG = np.random.RandomState(0)
X = RNG.rand(3) + 0.5
ORDER = 4
TERMS = [RNG.randn(3) for _ in range(ORDER)]
W = RNG.randn(3, 3)

FUNCTIONS = {
    "sin": jnp.sin, "cos": jnp.cos, "exp": jnp.exp, "log": jnp.log, "tanh": jnp.tanh,
    "logistic": minijax.nn.sigmoid, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt,
    "cube": lambda x: x ** 3, "inverse square": lambda x: x ** -2, "reciprocal": lambda x: 1 / x,
    "dot": lambda x: jnp.dot(W, x) * x, "sum": lambda x: jnp.sum(x * x),
    "erf": minijax.scipy.special.erf, "softplus": minijax.nn.softplus,
    "logsumexp": minijax.nn.logsumexp, "jit": minijax.jit(lambda x: jnp.sin(x) * x),
    "cumsum": lambda x: jnp.cumsum(jnp.exp(x)), "where": lambda x: jnp.where(x > 1, x ** 2, jnp.sin(x)),
    "gather": lambda x: x[jnp.array([2, 0])] * x[1],
    "fori_loop": lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, jnp.ones(3)),
    "x**x": lambda x: x ** x, "tan": jnp.tan, "sort": jnp.sort,
    "scan": lambda x: lax.scan(lambda c, a: (c * a, c), 1.0, x)[0],
    "softmax": minijax.nn.softmax, "norm": jnp.linalg.norm,
}


def _derivatives_by_nested_jvp(f, x, terms):
  def path(t):
    return f(x + sum(c * t ** k / math.factorial(k) for k, c in enumerate(terms, 1)))

  out = []
  g = path
  for _ in terms:
    g = (lambda h: lambda t: minijax.jvp(h, (t,), (1.0,))[1])(g)
    out.append(g(0.0))
  return out


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jet_agrees_with_repeated_jvp(name, x64):
  f = FUNCTIONS[name]
  primal, series = jet(f, (X,), (TERMS,))
  np.testing.assert_allclose(primal, f(X), rtol=1e-12)
  expected = _derivatives_by_nested_jvp(f, X, TERMS)
  assert len(series) == ORDER
  for k, (ours, theirs) in enumerate(zip(series, expected), 1):
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9, err_msg=f"order {k}")


def test_jet_matches_values_recorded_from_jax():
  # jax.experimental.jet.jet(jnp.sin, (0.5,), ([1., 2., 3.],)) in JAX 0.10.2 (float32):
  # 0.47942555, [0.87758255, 1.2757394, -1.1213907]; the third term is 2.6e-6 from the exact
  # -cos(.5) - 6 sin(.5) + 3 cos(.5), which minijax gives to float32's precision.
  primal, series = jet(jnp.sin, (0.5,), ([1.0, 2.0, 3.0],))
  np.testing.assert_allclose(primal, 0.47942555, rtol=1e-6)
  np.testing.assert_allclose(series[:2], [0.87758255, 1.2757394], rtol=1e-6)
  np.testing.assert_allclose(series[2], 2 * np.cos(0.5) - 6 * np.sin(0.5), rtol=1e-6)
  np.testing.assert_allclose(series[2], -1.1213907, rtol=3e-6)
  primal, series = jet(lambda x, y: x * y, (1.0, 2.0), ([1.0, 0.0], [0.0, 1.0]))
  assert float(primal) == 2.0 and [float(s) for s in series] == [2.0, 1.0]


def test_jet_takes_several_arguments_and_returns_pytrees(x64):
  y, y_terms = RNG.rand(3) + 0.5, [RNG.randn(3) for _ in range(ORDER)]
  _, series = jet(lambda a, b: a * b + a / b, (X, y), (TERMS, y_terms))
  expected = _derivatives_by_nested_jvp(
      lambda v: v[:3] * v[3:] + v[:3] / v[3:], np.concatenate([X, y]),
      [np.concatenate([a, b]) for a, b in zip(TERMS, y_terms)])
  np.testing.assert_allclose(series, expected, rtol=1e-9)
  primal, series = jet(lambda a: (a, {"q": a.sum(), "n": jnp.argmax(a)}), (X,), (TERMS[:2],))
  np.testing.assert_allclose(series[1]["q"], [TERMS[0].sum(), TERMS[1].sum()])
  assert [int(s) for s in series[1]["n"]] == [0, 0]  # integer outputs have zero series
  _, series = jet(lambda a: 3.0 * jnp.ones(2), (X,), (TERMS[:2],))
  assert np.asarray(series).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_jet_rejects_inconsistent_series():
  with pytest.raises(ValueError, match="inconsistent lengths"):
    jet(lambda a, b: a * b, (1.0, 2.0), ([1.0, 0.0], [2.0]))
  with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
    jet(lambda a: a, ({"b": 1.0},), ({"b": [2.0]},))
  with pytest.raises(ValueError, match="term 1 of argument 0 has shape"):
    jet(lambda a: a, (1.0,), ([np.ones(2)],))
