"""The function `vjp` returns (a `VJP`): its residuals in view (`args_res`,
`opaque_residuals`), set again after being dropped, passed through `jit`, and
`with_refs(DontWant(), ...)` computing only the wanted cotangents (JAX 0.10.2's vjp3)."""
import numpy as np
import pytest

import minijax
from minijax import lax
import minijax.numpy as jnp
from minijax.api import NotNeeded


def test_residuals_computed_on_the_way_are_opaque():
  _, f_vjp = minijax.vjp(jnp.sin, 3.)
  assert len(f_vjp.opaque_residuals) == 1  # cos(3.)
  np.testing.assert_allclose(f_vjp.opaque_residuals[0], np.cos(3.), rtol=1e-6)
  assert isinstance(f_vjp.args_res[0], NotNeeded)
  _, f_vjp = minijax.vjp(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), 3.)
  assert f_vjp.opaque_residuals
  np.testing.assert_allclose(f_vjp(1.)[0], np.cos(3.), rtol=1e-6)


def _f2(x, w):
  return 2. * ((1. * x) @ w)


def test_a_primal_read_by_the_backward_pass_is_in_args_res_and_can_be_dropped():
  x, w = jnp.ones((3, 4)), jnp.arange(16.).reshape(4, 4)
  y, f_vjp = minijax.vjp(_f2, x, w)
  assert isinstance(f_vjp.args_res[0], NotNeeded)  # (1. * x is what is read)
  assert f_vjp.args_res[1] is w
  f_vjp.args_res[1] = None  # dropped between the passes, as FSDP does with weights
  with pytest.raises(ValueError, match="args_res"):
    f_vjp(jnp.ones_like(y))
  f_vjp.args_res[1] = w
  y_grad = jnp.ones_like(y)
  x_grad, w_grad = f_vjp(y_grad)
  np.testing.assert_allclose(x_grad, 2. * np.ones((3, 4)) @ np.asarray(w).T)
  np.testing.assert_allclose(w_grad, 2. * np.ones((3, 4)).T @ np.ones((3, 4)))
  with pytest.raises(ValueError, match="unexpected JAX type"):
    f_vjp(jnp.ones((2, 4)))


def test_vjp_function_passes_through_jit_with_its_residuals():
  @minijax.jit
  def forward():
    y, f_vjp = minijax.vjp(lambda a, b: a * b, 2., 3.)
    f_vjp.args_res = [None, None]
    return y, f_vjp

  @minijax.jit
  def backward(f_vjp):
    f_vjp.args_res = [2., 3.]
    return f_vjp(1.)

  y, f_vjp = forward()
  assert isinstance(f_vjp, minijax.api.VJP)
  np.testing.assert_allclose(backward(f_vjp), (3., 2.))
  np.testing.assert_allclose(y, 6.)


def test_with_refs_dont_want_skips_that_cotangent():
  x = jnp.arange(3.)
  z, f_vjp = minijax.vjp(lambda a, b: a * b, x, x)
  g_vjp = f_vjp.with_refs(minijax.ad.DontWant(), minijax.ad.GradValue())
  ones = jnp.ones_like(z)
  g = minijax.jit(lambda: g_vjp(ones))
  x_grad, y_grad = g()
  assert x_grad == minijax.ad.DidntWant()
  np.testing.assert_allclose(y_grad, x)
  assert [e.primitive.name for e in g.trace().jaxpr.eqns] == ["mul"]
  # both wanted: both computed
  both = minijax.jit(lambda: f_vjp.with_refs(minijax.ad.GradValue(),
                                             minijax.ad.GradValue())(ones))
  assert len(both.trace().jaxpr.eqns) == 2
  np.testing.assert_allclose(both()[0], x)


def test_vjp_function_shows_the_linear_jaxpr_its_backward_pass_transposes():
  _, f_vjp = minijax.vjp(lambda x: jnp.sin(jnp.sin(x)), 1.0)
  text = str(f_vjp.jaxpr)
  assert text.count(" mul ") == 2 and " sin " not in text and " cos " not in text
