"""Details of the public API that JAX's own `api_test.py` checks: the wording of tracing
errors that its tests match, and where `linearize` keeps its linear jaxpr."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.errors import (ConcretizationTypeError, TracerBoolConversionError,
                            TracerIntegerConversionError)


def test_if_on_a_traced_value_says_attempted_boolean_conversion_with_its_shape():
  f = minijax.jit(lambda x: 1 if x > 0 else 0)
  with pytest.raises(TracerBoolConversionError,
                     match=r"^Attempted boolean conversion of traced array with shape "
                           r"bool\[\]\. "):
    f(0)


def test_indexing_a_list_with_a_traced_value_says_the_index_method_was_called():
  f = minijax.jit(lambda n: [1, 2, 3][n])
  with pytest.raises(TracerIntegerConversionError,
                     match=r"^The __index__\(\) method was called on traced array"):
    f(jnp.int32(1))


def test_float_of_a_traced_value_suggests_astype():
  f = minijax.jit(lambda x: float(x))
  with pytest.raises(ConcretizationTypeError, match=r"try using `x\.astype\(float\)`"):
    f(1.0)


def test_a_string_argument_to_grad_is_not_a_valid_jax_type():
  with pytest.raises(TypeError, match=r"Argument 'foo' of type <class 'str'> is not a "
                                      r"valid JAX type"):
    minijax.grad(lambda x: x)("foo")


def test_linearize_keeps_its_linear_jaxpr_as_the_first_bound_argument():
  @minijax.jit
  @functools.partial(minijax.remat, policy=minijax.checkpoint_policies.checkpoint_dots)
  def f(x):
    for _ in range(3):
      x = jnp.sin(jnp.dot(x, x, precision=lax.Precision.HIGHEST) * 1e-3)
    return x

  _, f_lin = minijax.linearize(f, jnp.ones((2, 2)))
  text = str(f_lin.func.args[0])
  # the dots are saved, so the linear map recomputes the sines the later layers' tangents
  # need (not the last layer's), and the dots' tangents
  assert text.count(" sin ") == 2
  assert text.count(" dot_") == 6
  np.testing.assert_allclose(f_lin(jnp.ones((2, 2))),
                             minijax.jvp(f, (jnp.ones((2, 2)),), (jnp.ones((2, 2)),))[1],
                             rtol=1e-6)


def test_a_partial_boxed_in_a_pytree_partial_still_reads_as_that_partial():
  inner = functools.partial(lambda a, b, c: a + b + c, 1)
  p = minijax.tree_util.Partial(inner, 2)
  assert p.func.func is inner.func and p.func.args == (1,) and p.func.keywords == {}
  assert p.args == (2,) and p(3) == 6


def test_remat_traces_its_function_once_for_repeated_calls_with_the_same_types():
  count = 0

  @minijax.remat
  def g(x):
    nonlocal count
    count += 1
    return lax.sin(x), 3.

  for _ in range(10):
    y, _ = g(2.)
  assert count == 1
  np.testing.assert_allclose(y, np.sin(np.float32(2.)), rtol=1e-6)
  g(np.ones(3, np.float32))  # a new shape traces again
  assert count == 2


def test_remat_with_static_argnums_traces_once_per_static_value():
  count = 0

  @functools.partial(minijax.remat, static_argnums=(0,))
  def g(x):
    nonlocal count
    count += 1
    return lax.sin(x) if x > 0 else lax.cos(x)

  for _ in range(5):
    g(2.)
  assert count == 1
  np.testing.assert_allclose(g(-2.), np.cos(np.float32(-2.)), rtol=1e-6)
  assert count == 2


def test_remat_closing_over_an_outer_tracer_is_traced_afresh_each_time():
  def outer(a):
    inner = minijax.remat(lambda x: jnp.sin(x * a))
    return inner(1.)

  g = minijax.grad(outer)
  np.testing.assert_allclose(g(1.), np.cos(1.), rtol=1e-6)
  np.testing.assert_allclose(g(2.), np.cos(2.), rtol=1e-6)


def test_remat_of_one_function_under_a_closure_sees_each_outer_tracer():
  def f(x):
    return jnp.sin(x) * 2.

  rf = minijax.remat(f)
  for a in (1., 2.):
    np.testing.assert_allclose(minijax.grad(lambda x: rf(x) * a)(0.5), 2 * a * np.cos(0.5),
                               rtol=1e-6)
