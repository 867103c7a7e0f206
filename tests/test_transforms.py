"""grad, jvp, vjp, linearize, vmap, jacobians: the API, a composition table of base
functions x transformation stacks checked against finite differences, the VJP dot-product
identity over random programs, effects through transformations, partial evaluation and
DCE, and the errors users meet."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.core.errors import MissingRuleError
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from tests.transform_checks import rand_like, vdot


def allclose(a, b, rtol=1e-5, atol=1e-6):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                             rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- API basics

def test_grad_of_sin_of_square_is_the_chain_rule():
  x = np.float32(1.3)
  allclose(minijax.grad(lambda x: lax.sin(lax.mul(x, x)))(x), 2 * x * np.cos(x * x))


def test_grad_argnums_tuple_and_pytrees():
  def f(a, b, c):
    return lax.add(lax.mul(a["w"], b), lax.reduce_sum(lax.mul(c, c), (0,)))
  a, b, c = {"w": np.float32(2.0)}, np.float32(3.0), np.arange(3, dtype=np.float32)
  ga, gc = minijax.grad(f, argnums=(0, 2))(a, b, c)
  allclose(ga["w"], 3.0)
  allclose(gc, 2 * c)
  allclose(minijax.grad(f, argnums=1)(a, b, c), 2.0)


def test_value_and_grad_with_aux():
  def f(x):
    return lax.mul(x, x), {"double": lax.add(x, x)}
  (value, aux), g = minijax.value_and_grad(f, has_aux=True)(np.float32(3.0))
  allclose(value, 9.0)
  allclose(aux["double"], 6.0)
  allclose(g, 6.0)
  g2, aux2 = minijax.grad(f, has_aux=True)(np.float32(3.0))
  allclose(g2, 6.0)
  allclose(aux2["double"], 6.0)


def test_jvp_returns_primal_and_tangent_with_pytrees():
  f = lambda p: {"s": lax.sin(p[0]), "m": lax.mul(p[0], p[1])}
  x, y = np.float32(0.5), np.float32(2.0)
  out, t = minijax.jvp(f, ((x, y),), ((np.float32(1.0), np.float32(0.0)),))
  allclose(out["s"], np.sin(x))
  allclose(t["s"], np.cos(x))
  allclose(t["m"], y)


def test_linearize_evaluates_the_linear_map_without_rerunning_the_function():
  calls = []

  def f(x):
    calls.append(1)
    return lax.sin(x)
  out, f_jvp = minijax.linearize(f, np.float32(0.3))
  assert len(calls) == 1
  allclose(f_jvp(np.float32(2.0)), 2 * np.cos(0.3))
  allclose(f_jvp(np.float32(1.0)), np.cos(0.3))
  assert len(calls) == 1
  allclose(out, np.sin(0.3))


def test_vjp_pullback_of_a_vector_function():
  x = np.arange(1, 4, dtype=np.float32)
  out, pullback = minijax.vjp(lambda x: lax.mul(x, x), x)
  (ct,) = pullback(np.ones(3, np.float32))
  allclose(ct, 2 * x)
  with pytest.raises(TypeError, match="Tree structure of cotangent"):
    pullback((np.ones(3, np.float32),))


def test_integer_inputs_get_float0_tangents_and_cotangents():
  x, n = np.float32(2.0), np.int32(3)
  f = lambda x, n: lax.mul(x, lax.convert_element_type(n, np.float32))
  _, t = minijax.jvp(f, (x, n), (np.float32(1.0), np.zeros((), minijax.core.dtypes.float0)))
  allclose(t, 3.0)
  gx, gn = minijax.grad(f, argnums=(0, 1), allow_int=True)(x, n)
  allclose(gx, 3.0)
  assert gn.dtype == minijax.core.dtypes.float0
  _, pullback = minijax.vjp(f, x, n)
  assert pullback(np.float32(1.0))[1].dtype == minijax.core.dtypes.float0


def test_jacfwd_jacrev_hessian_of_a_vector_function():
  x = np.array([0.5, -1.0, 2.0], np.float32)
  f = lambda x: lax.mul(lax.sin(x), lax.broadcast(lax.reduce_sum(x, (0,)), (3,)))
  expected = np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]
  allclose(minijax.jacfwd(f)(x), expected, rtol=1e-5)
  allclose(minijax.jacrev(f)(x), expected, rtol=1e-5)
  g = lambda x: lax.reduce_sum(lax.mul(lax.mul(x, x), x), (0,))
  allclose(minijax.hessian(g)(x), np.diag(6 * x))
  m = np.arange(6, dtype=np.float32).reshape(2, 3)
  assert minijax.jacrev(lambda m: lax.mul(m, m))(m).shape == (2, 3, 2, 3)
  assert minijax.jacfwd(lambda m: lax.reduce_sum(m, (1,)))(m).shape == (2, 2, 3)


def test_stop_gradient_blocks_the_gradient():
  f = lambda x: lax.mul(x, lax.stop_gradient(x))
  allclose(minijax.grad(f)(np.float32(3.0)), 3.0)


# ----------------------------------------------------------------------------- vmap

def test_vmap_in_axes_out_axes_and_pytrees():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  y = np.float32([10.0, 20.0])
  f = lambda d, y: {"a": lax.add(d["x"], y), "b": lax.sin(d["x"])}
  out = minijax.vmap(f, in_axes=({"x": 1}, None), out_axes={"a": 0, "b": -1})({"x": x}, y)
  allclose(out["a"], (x + y[:, None]).T)
  allclose(out["b"], np.sin(x))
  allclose(minijax.vmap(lambda v: lax.mul(v, v), in_axes=-1)(x), (x * x).T)


def test_vmap_unbatched_output_is_broadcast_and_axis_size_allows_no_mapped_input():
  out = minijax.vmap(lambda x, c: c, in_axes=(0, None))(np.ones(4, np.float32), np.float32(2))
  allclose(out, np.full(4, 2.0))
  out = minijax.vmap(lambda c: lax.add(c, 1.0), in_axes=None, axis_size=3)(np.float32(1.0))
  allclose(out, np.full(3, 2.0))


def test_vmap_of_vmap_and_vmap_of_jit():
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  f = minijax.jit(lambda v: lax.reduce_sum(lax.sin(v), (0,)))
  allclose(minijax.vmap(minijax.vmap(f))(x), np.sin(x).sum(-1), rtol=1e-5)
  allclose(minijax.vmap(minijax.vmap(f, in_axes=1), in_axes=2)(x),
           np.sin(x).sum(0).T, rtol=1e-5)


def test_vmap_inconsistent_sizes_name_the_arguments():
  def f(alpha, beta):
    return lax.add(alpha, beta)
  with pytest.raises(ValueError, match=r"inconsistent sizes(.|\n)*alpha(.|\n)*beta"):
    minijax.vmap(f)(np.ones(2, np.float32), np.ones(3, np.float32))


def test_vmap_bad_axes_errors():
  with pytest.raises(ValueError, match="len\\(in_axes\\)=2, len\\(args\\)=1"):
    minijax.vmap(lax.sin, in_axes=(0, 0))(np.ones(2, np.float32))
  with pytest.raises(ValueError, match="rank should be at least 2"):
    minijax.vmap(lax.sin, in_axes=1)(np.ones(2, np.float32))
  with pytest.raises(ValueError, match="out_axes is None"):
    minijax.vmap(lax.sin, out_axes=None)(np.ones(2, np.float32))
  with pytest.raises(ValueError, match="at least one non-None"):
    minijax.vmap(lax.sin, in_axes=None)(np.ones(2, np.float32))


# ----------------------------------------------------------------------------- errors

def test_grad_of_integer_input_raises_jaxs_error():
  msg = ("grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
         "np.inexact), but got int32. If you want to use Boolean- or integer-valued inputs, "
         "use vjp or set allow_int to True.")
  with pytest.raises(TypeError) as e:
    minijax.grad(lambda n: lax.convert_element_type(n, np.float32))(np.int32(1))
  assert str(e.value) == msg


def test_grad_of_non_scalar_output_raises():
  with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions. "
                     r"Output had shape: \(3,\)"):
    minijax.grad(lax.sin)(np.ones(3, np.float32))
  with pytest.raises(TypeError, match="grad requires real-valued outputs"):
    minijax.grad(lambda x: lax.convert_element_type(x, np.int32))(np.float32(1))


def _opaque_primitive(name):
  p = Primitive(name)
  p.def_abstract_eval(lambda x: x)
  p.def_impl(lambda x: x)
  return p


def test_missing_rules_name_the_primitive_the_transformation_and_the_registry():
  p = _opaque_primitive("mystery")
  with pytest.raises(MissingRuleError, match=r"'mystery' has no jvp rule(.|\n)*ad.primitive_jvps"):
    minijax.jvp(p.bind, (np.float32(1),), (np.float32(1),))
  with pytest.raises(MissingRuleError, match=r"'mystery' has no batching rule(.|\n)*"
                     r"batching.primitive_batchers"):
    minijax.vmap(p.bind)(np.ones(2, np.float32))
  ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(*primals), p.bind(*tangents))
  with pytest.raises(MissingRuleError, match=r"'mystery' has no transpose rule(.|\n)*"
                     r"ad.primitive_transposes"):
    minijax.grad(p.bind)(np.float32(1))


def test_leaked_tracer_is_reported():
  leaked = []
  minijax.grad(lambda x: leaked.append(x) or lax.sin(x))(np.float32(1))
  with pytest.raises(Exception, match="leaked tracer"):
    lax.sin(leaked[0])


def test_python_control_flow_on_jvp_primals_works_eagerly():
  def f(x):
    return lax.sin(x) if float(x) > 0 else lax.cos(x)
  allclose(minijax.jvp(f, (np.float32(1.0),), (np.float32(1.0),))[1], np.cos(1.0))
