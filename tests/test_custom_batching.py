"""`custom_vmap` and `sequential_vmap` (JAX's `jax.custom_batching`): the user's rule runs
under `vmap` only, sees which arguments are batched, survives `jit` and forward mode on
either side of `vmap`; reverse mode differentiates the function itself; bad rules and
batched closures get errors that say what to fix."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.custom_batching import custom_vmap, sequential_vmap

X = np.arange(3.0, dtype=np.float32)


def _sin_times(calls):
  @custom_vmap
  def f(x, y):
    return jnp.sin(x) * y

  @f.def_vmap
  def rule(axis_size, in_batched, x, y):
    calls.append((axis_size, in_batched))
    return jnp.cos(x) * y, in_batched[0] or in_batched[1]  # visibly not f: cos for sin

  return f


def test_the_rule_runs_under_vmap_only_and_sees_which_arguments_are_batched():
  calls = []
  f = _sin_times(calls)
  assert float(f(1.0, 2.0)) == pytest.approx(2 * np.sin(1.0))
  assert float(minijax.jit(f)(1.0, 2.0)) == pytest.approx(2 * np.sin(1.0))
  assert calls == []
  np.testing.assert_allclose(minijax.vmap(f, (0, None))(X, 2.0), 2 * np.cos(X), rtol=1e-6)
  np.testing.assert_allclose(minijax.jit(minijax.vmap(f))(X, X), X * np.cos(X), rtol=1e-6)
  assert calls == [(3, [True, False]), (3, [True, True])]
  assert "custom_vmap_call" in str(minijax.make_jaxpr(f)(1.0, 2.0))


def test_forward_mode_keeps_the_rule_on_either_side_of_vmap():
  calls = []
  f = _sin_times(calls)
  out, tangent = minijax.jvp(minijax.vmap(f, (0, None)), (X, 2.0), (np.ones(3, np.float32), 0.0))
  np.testing.assert_allclose(out, 2 * np.cos(X), rtol=1e-6)
  np.testing.assert_allclose(tangent, -2 * np.sin(X), rtol=1e-6)  # the rule's derivative
  out, tangent = minijax.vmap(lambda x: minijax.jvp(f, (x, 2.0), (1.0, 0.0)))(X)
  np.testing.assert_allclose(out, 2 * np.cos(X), rtol=1e-6)
  np.testing.assert_allclose(tangent, -2 * np.sin(X), rtol=1e-6)
  assert [c[0] for c in calls] == [3, 3]
  grads = minijax.grad(lambda x: minijax.vmap(f, (0, None))(x, 2.0).sum())(X)
  np.testing.assert_allclose(grads, -2 * np.sin(X), rtol=1e-6)


def test_reverse_mode_differentiates_the_function_itself():
  f = _sin_times([])
  assert float(minijax.grad(f)(1.0, 2.0)) == pytest.approx(2 * np.cos(1.0))
  np.testing.assert_allclose(minijax.vmap(minijax.grad(f), (0, None))(X, 2.0), 2 * np.cos(X),
                             rtol=1e-6)


def test_sequential_vmap_runs_the_function_once_per_element():
  shapes = []

  def f(x, y):
    shapes.append(np.shape(x))
    return x * y + 1, {"twice": 2 * x}

  out, extra = minijax.vmap(sequential_vmap(f), (0, None))(X, 2.0)
  np.testing.assert_allclose(out, 2 * X + 1)
  np.testing.assert_allclose(extra["twice"], 2 * X)
  assert shapes[-1] == ()  # traced per element, in a loop
  np.testing.assert_allclose(minijax.vmap(minijax.vmap(sequential_vmap(jnp.sin)))(np.ones((2, 3))),
                             np.sin(np.ones((2, 3))), rtol=1e-6)


def test_bad_rules_and_batched_closures_are_refused_with_the_fix():
  @custom_vmap
  def f(x):
    return x

  with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap function f"):
    minijax.vmap(f)(X)

  @f.def_vmap
  def rule(axis_size, in_batched, x):
    return x, (True,)

  with pytest.raises(ValueError, match=r"output batching specification returned by custom vmap "
                                       r"rule \(rule\) do not match"):
    minijax.vmap(f)(X)

  def closing_over(c):
    @custom_vmap
    def g(x):
      return x * c

    g.def_vmap(lambda n, b, x: (x * c, b[0]))
    return g(1.0)

  with pytest.raises(NotImplementedError, match="closes over a value batched by this vmap"):
    minijax.vmap(closing_over)(X)



def test_keyword_arguments_reach_the_rule_by_position():
  @custom_vmap
  def f(x, y=2.0):
    return x * y

  f.def_vmap(lambda n, batched, x, y: (x * y + 100, batched[0] or batched[1]))
  assert float(f(1.0, y=3.0)) == 3.0 and float(f(1.0)) == 2.0
  assert np.asarray(minijax.vmap(lambda x: f(x, y=3.0))(X)).tolist() == [100.0, 103.0, 106.0]
