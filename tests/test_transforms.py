"""grad, jvp, vjp, linearize, vmap, jacobians: the API, a composition table of base
functions x transformation stacks checked against finite differences, the VJP dot-product
identity over random programs, effects through transformations, partial evaluation and
DCE, and the errors users meet."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import minijax
from minijax import lax
import minijax.numpy as jnp
from minijax.core.errors import MissingRuleError
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from tests.transform_checks import rand_like, vdot
from tests.ulps import assert_within_ulps


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
  with pytest.raises(ValueError, match="unexpected tree structure of the argument to the "
                                       r"function returned by minijax.vjp for <lambda>: it must "
                                       r"have the structure of <lambda>'s output, PyTreeDef\(\*\), "
                                       r"but has PyTreeDef\(\(\*,\)\)"):
    pullback((np.ones(3, np.float32),))
  with pytest.raises(ValueError, match=r"unexpected JAX type \(e.g. shape/dtype\) for argument "
                                       r"to VJP function: got float32\[4\], but expected "
                                       r"float32\[3\]"):
    pullback(np.ones(4, np.float32))
  with pytest.raises(ValueError, match=r"got float16\[3\], but expected float32\[3\]"):
    pullback(np.ones(3, np.float16))


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


def test_float0_values_pass_through_jit_and_refuse_arithmetic():
  float0 = minijax.float0
  assert float0 is minijax.dtypes.float0
  grad_f = minijax.grad(lambda x, i: x[i], argnums=(0, 1), allow_int=True)
  gx, gi = minijax.jit(grad_f)(np.ones(2, np.float32), 1)
  allclose(gx, [0.0, 1.0])
  assert type(gi) is np.ndarray and gi == np.zeros((), float0)
  _, pullback = minijax.vjp(lambda x, y: x + y, 2, 1)
  tx, ty = minijax.jit(pullback)(np.zeros((), float0))  # a float0 argument
  assert tx == np.zeros((), float0) and ty == np.zeros((), float0)
  zero = minijax.grad(lambda x: x + 0.0, allow_int=True)(1)
  for op in (lambda: zero + jnp.zeros(()), lambda: lax.add(zero, jnp.zeros(()))):
    with pytest.raises(TypeError, match="float0s do not support any operations by design"):
      op()
    with minijax.numpy_dtype_promotion("strict"):  # (a TypeError first, not a promotion error)
      with pytest.raises(TypeError, match="float0s do not support any operations by design"):
        op()


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
  # keyword arguments pass through undifferentiated (jax-md's energies take `box=`)
  h = lambda x, *, scale: jnp.sum(scale * x ** 3)
  for jac in (minijax.jacfwd, minijax.jacrev):
    allclose(jac(h)(x, scale=2.0), 6 * x ** 2)
  allclose(minijax.hessian(h)(x, scale=jnp.float32(2.0)), np.diag(12 * x))


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


def test_vmap_rebuilds_custom_results_only_once_their_batch_axes_are_in_place():
  # e3nn-jax's IrrepsArray checks its chunks' shapes against its array when unflattened:
  # vmap must build it from the stacked results, never from values still batched on
  # another axis (jax-md's NequIP model failed so).
  @minijax.tree_util.register_pytree_node_class
  class Vec3:
    def __init__(self, v):
      if np.shape(v)[-1] != 3:
        raise ValueError(f"Vec3 of shape {np.shape(v)}")
      self.v = v

    def tree_flatten(self):
      return (self.v,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls(*children)

  x = np.arange(15, dtype=np.float32).reshape(3, 5)
  out = minijax.vmap(lambda v: Vec3(v), in_axes=1)(x)
  assert isinstance(out, Vec3)
  allclose(out.v, x.T)
  with pytest.raises(ValueError, match="out_axes specification must be a tree prefix"):
    minijax.vmap(lambda v: Vec3(v), in_axes=1, out_axes=(0, 0))(x)


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
  with pytest.raises(ValueError, match="at vmap out_axes, got axis spec None but output was "
                                       "batched on axis 0"):
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


# ----------------------------------------------------------------------------- compositions
# Base functions of one scalar, with a float64 numpy twin for finite differences.

def _poly_sin(x):
  return lax.add(lax.mul(lax.sin(x), x), lax.integer_pow(x, 3))


_inner_jit = minijax.jit(lambda x: lax.exp(lax.sin(x)))


def _with_jit(x):
  return lax.mul(_inner_jit(x), x)


def _with_cond(x):
  return lax.cond(lax.gt(x, 0.0), lambda v: lax.mul(lax.sin(v), v), lax.cos, x)


def _with_scan(x):
  def body(c, w):
    return lax.add(lax.mul(c, lax.sin(x)), w), lax.mul(c, c)
  c, ys = lax.scan(body, x, np.array([0.5, -1.0, 2.0], np.float32))
  return lax.add(c, lax.reduce_sum(ys, (0,)))


def _with_fori(x):
  return lax.fori_loop(0, 3, lambda i, c: lax.add(lax.mul(c, x), lax.sin(c)), x)


@minijax.custom_jvp
def _softplus(x):
  return lax.log1p(lax.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), lax.mul(t[0], lax.logistic(p[0]))))


@minijax.custom_vjp
def _softplus_vjp(x):
  return lax.log1p(lax.exp(x))


_softplus_vjp.defvjp(lambda x: (_softplus_vjp(x), x),
                     lambda x, g: (lax.mul(g, lax.logistic(x)),))

_remat_fn = minijax.checkpoint(lambda x: lax.mul(lax.sin(lax.sin(x)), x))
_named_fn = minijax.named_call(lambda x: lax.mul(lax.tanh(x), x), name="tanh_x")


def _np_scan(x):
  c, total = x, 0.0
  for w in (0.5, -1.0, 2.0):
    total += c * c
    c = c * np.sin(x) + w
  return c + total


def _np_fori(x):
  c = x
  for _ in range(3):
    c = c * x + np.sin(c)
  return c


BASES = {
    "poly_sin": (_poly_sin, lambda x: np.sin(x) * x + x ** 3),
    "jit": (_with_jit, lambda x: np.exp(np.sin(x)) * x),
    "cond": (_with_cond, lambda x: np.where(x > 0, np.sin(x) * x, np.cos(x))),
    "scan": (_with_scan, _np_scan),
    "fori_loop": (_with_fori, _np_fori),
    "custom_jvp": (_softplus, lambda x: np.log1p(np.exp(x))),
    "custom_vjp": (_softplus_vjp, lambda x: np.log1p(np.exp(x))),
    "checkpoint": (_remat_fn, lambda x: np.sin(np.sin(x)) * x),
    "named_call": (_named_fn, lambda x: np.tanh(x) * x),
}

G = minijax.grad
J = minijax.jit
V = minijax.vmap
# name -> (transformation of a scalar function, derivative order, vectorized input)
STACKS = {
    "grad": (lambda f: G(f), 1, False),
    "jit(grad)": (lambda f: J(G(f)), 1, False),
    "grad(jit)": (lambda f: G(J(f)), 1, False),
    "grad(grad)": (lambda f: G(G(f)), 2, False),
    "jit(grad(grad(jit)))": (lambda f: J(G(G(J(f)))), 2, False),
    "vmap(grad)": (lambda f: V(G(f)), 1, True),
    "jit(vmap(grad(jit)))": (lambda f: J(V(G(J(f)))), 1, True),
    "vmap(grad(grad))": (lambda f: V(G(G(f))), 2, True),
    "grad(sum(vmap))": (lambda f: G(lambda xs: lax.reduce_sum(V(f)(xs), (0,))), 1, True),
    "jacfwd(jacrev)": (lambda f: minijax.jacfwd(minijax.jacrev(f)), 2, False),
    "jacrev(jacrev)": (lambda f: minijax.jacrev(minijax.jacrev(f)), 2, False),
    "jvp": (lambda f: lambda x: minijax.jvp(f, (x,), (np.ones_like(x),))[1], 1, False),
    "linearize": (lambda f: lambda x: minijax.linearize(f, x)[1](np.ones_like(x)), 1, False),
    "jvp(grad)": (lambda f: lambda x: minijax.jvp(G(f), (x,), (np.ones_like(x),))[1], 2, False),
}
# forward mode through a custom_vjp function is an error, as in JAX
_UNSUPPORTED = {("custom_vjp", s) for s in ("jacfwd(jacrev)", "jvp", "linearize", "jvp(grad)")}


def _fd(np_f, x, order, eps=1e-3):
  if order == 1:
    return (np_f(x + eps) - np_f(x - eps)) / (2 * eps)
  return (np_f(x + eps) - 2 * np_f(x) + np_f(x - eps)) / eps ** 2


@pytest.mark.parametrize("stack", list(STACKS))
@pytest.mark.parametrize("base", list(BASES))
def test_composition_table(base, stack):
  f, np_f = BASES[base]
  transform, order, vectorized = STACKS[stack]
  xs = np.array([0.7, -0.4, 1.1], np.float32)
  x = xs if vectorized else xs[0]
  if (base, stack) in _UNSUPPORTED:
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
      transform(f)(x)
    return
  got = transform(f)(x)
  expected = _fd(np_f, np.asarray(x, np.float64), order)
  allclose(got, expected, rtol=2e-2 if order == 2 else 2e-3, atol=2e-2 if order == 2 else 2e-3)


def test_jvp_of_custom_vjp_function_raises():
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    minijax.jvp(_softplus_vjp, (np.float32(1.0),), (np.float32(1.0),))


# ----------------------------------------------------------------------------- dot-product test

_UNARY = [lax.sin, lax.cos, lax.tanh, lambda v: lax.mul(v, v), lax.logistic,
          lambda v: lax.rev(v, (0,)), lambda v: lax.cumsum(v, 0)]
_BINARY = [lax.add, lax.sub, lax.mul]


def _random_program(seed):
  rng = np.random.default_rng(seed)
  steps = [(rng.integers(2), rng.integers(len(_UNARY)), rng.integers(len(_BINARY)),
            rng.integers(3)) for _ in range(6)]

  def f(x, y):
    vals = [x, y]
    for kind, u, b, k in steps:
      a = vals[-1 - k % len(vals)]
      vals.append(_UNARY[u](a) if kind == 0 else _BINARY[b](a, vals[-1]))
    return vals[-1], lax.reduce_sum(vals[-2], (0,))
  return f


@pytest.mark.parametrize("seed", range(8))
def test_vjp_dot_product_identity_over_random_programs(seed):
  f = _random_program(seed)
  rng = np.random.default_rng(100 + seed)
  x, y = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
  u = rand_like(rng, (x, y))
  run = (lambda g: g) if seed % 2 else minijax.jit
  out, ju = run(lambda a, b, u: minijax.jvp(f, (a, b), u))(x, y, u)
  v = rand_like(rng, out)
  jtv = run(lambda a, b, v: minijax.vjp(f, a, b)[1](v))(x, y, v)
  lhs, rhs = vdot(ju, v), vdot(u, jtv)
  assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs)), (lhs, rhs)


# ----------------------------------------------------------------------------- rank-0 operands

_XV = np.array([0.5, -1.5, 2.0], np.float32)


def test_grad_with_respect_to_a_rank0_operand_sums_the_cotangent():
  y = np.float32(1.7)
  allclose(minijax.grad(lambda y: lax.reduce_sum(lax.mul(_XV, y), (0,)))(y), _XV.sum())
  allclose(minijax.grad(lambda y: lax.reduce_sum(lax.mul(y, _XV), (0,)))(y), _XV.sum())
  allclose(minijax.grad(lambda y: lax.reduce_sum(lax.sub(_XV, y), (0,)))(y), -3.0)
  allclose(minijax.grad(lambda y: lax.reduce_sum(lax.div(_XV, y), (0,)))(y),
           -_XV.sum() / y ** 2, rtol=1e-5)
  g = minijax.grad(lambda y, x: lax.reduce_sum(lax.mul(x, y), (0,)), argnums=(0, 1))(y, _XV)
  allclose(g[0], _XV.sum())
  allclose(g[1], np.full(3, y))
  # mul's transpose for its rank-0 operand is a mul and a sum to rank 0 (as in JAX)
  closed = minijax.make_jaxpr(minijax.grad(lambda y: lax.reduce_sum(lax.mul(_XV, y), (0,))))(y)
  last = closed.jaxpr.eqns[-2:]
  assert [e.primitive.name for e in last] == ["mul", "reduce_sum"], closed
  assert last[0].outvars[0].aval.shape == (3,) and last[1].outvars[0].aval.shape == ()


def test_jvp_broadcasts_the_tangent_of_a_lone_rank0_operand():
  y = np.float32(0.25)
  out, t = minijax.jvp(lambda y: lax.add(_XV, y), (y,), (np.float32(2.0),))
  allclose(out, _XV + y)
  assert np.shape(t) == (3,)
  allclose(t, np.full(3, 2.0))
  out, t = minijax.jvp(lambda x, y: lax.mul(x, y), (_XV, y), (np.ones(3, np.float32),
                                                              np.float32(3.0)))
  allclose(t, y + 3.0 * _XV)
  # the rank-0 operand's tangent is zero: the result's tangent keeps the array's shape
  _, t = minijax.jvp(lambda x: lax.max(x, np.float32(0.0)), (_XV,), (np.ones(3, np.float32),))
  allclose(t, [1.0, 0.0, 1.0])


def test_vjp_and_linear_transpose_of_a_rank0_operand():
  ct = np.array([1.0, 2.0, 4.0], np.float32)
  _, vjp = minijax.vjp(lambda y: lax.add(_XV, y), np.float32(0.5))
  allclose(vjp(ct)[0], 7.0)
  (t,) = minijax.linear_transpose(lambda y: lax.mul(_XV, y), np.float32(0.0))(ct)
  assert np.shape(t) == ()
  allclose(t, np.dot(_XV, ct))


def test_vmap_over_a_rank0_operand_only_broadcasts_it_against_the_array():
  ys = np.array([1.0, 2.0], np.float32)
  x23 = np.arange(6, dtype=np.float32).reshape(2, 3)
  allclose(minijax.vmap(lambda y: lax.mul(_XV, y))(ys), np.outer(ys, _XV))
  allclose(minijax.vmap(lambda y: lax.sub(y, x23))(ys), ys[:, None, None] - x23)
  allclose(minijax.vmap(lambda y: lax.sub(y, x23), out_axes=2)(ys),
           np.moveaxis(ys[:, None, None] - x23, 0, 2))
  # both batched, the rank-0 one along its only axis and the array along a later one
  xs = np.stack([_XV, 2 * _XV], axis=1)
  allclose(minijax.vmap(lax.mul, in_axes=(1, 0))(xs, ys), xs.T * ys[:, None])
  # batched array, unbatched rank-0 operand: the operand stays a rank-0 literal
  text = str(minijax.make_jaxpr(minijax.vmap(lambda x: lax.mul(x, 2.0)))(x23))
  assert text == "{ lambda ; a:f32[2,3]. let b:f32[2,3] = mul a 2.0:f32[] in (b,) }", text
  # grad of vmap and vmap of grad with respect to the rank-0 operand
  g = minijax.vmap(minijax.grad(lambda y: lax.reduce_sum(lax.mul(_XV, lax.mul(y, y)), (0,))))
  allclose(g(ys), 2 * ys * _XV.sum())


# ----------------------------------------------------------------------------- size-1 axes

def test_numpy_promotes_ranks_and_lax_broadcasts_size1_axes_as_in_jax():
  """JAX 0.10.2's jnp only adds leading axes; the elementwise primitive broadcasts size-1
  axes itself, so XLA compiles the one operation JAX does (and rounds as it does: dividing
  by a broadcast value becomes a multiplication by its reciprocal inside one program)."""
  x34, y4 = np.ones((3, 4), np.float32), np.ones(4, np.float32)
  text = str(minijax.make_jaxpr(lambda x, y: x + y)(x34, y4))
  assert text == ("{ lambda ; a:f32[3,4] b:f32[4]. let\n"
                  "    c:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,)] b\n"
                  "    d:f32[3,4] = add a c\n  in (d,) }"), text
  text = str(minijax.make_jaxpr(lambda x, s: x / s)(np.ones(40, np.float32),
                                                    np.ones(1, np.float32)))
  assert text == "{ lambda ; a:f32[40] b:f32[1]. let c:f32[40] = div a b in (c,) }", text
  a = np.random.RandomState(0).normal(size=400).astype(np.float32)
  s = np.array([0.9], np.float32)
  np.testing.assert_array_equal(np.asarray(jnp.asarray(a) / s),
                                np.asarray(minijax.jit(jnp.divide)(a, s)))


def test_vmap_of_an_elementwise_op_computes_what_each_unbatched_call_computes():
  r = np.random.RandomState(1)
  xs = r.normal(size=(3, 5, 4)).astype(np.float32)
  y = r.uniform(0.5, 2.0, (1, 4)).astype(np.float32)
  batched = np.asarray(minijax.vmap(lax.div, (0, None))(xs, y))
  for i in range(3):
    np.testing.assert_array_equal(batched[i], np.asarray(lax.div(xs[i], y)))
  # the unbatched operand gets a leading size-1 axis; a batched scalar, trailing ones
  text = str(minijax.make_jaxpr(minijax.vmap(lax.div, (0, None)))(xs, y))
  assert "c:f32[1,1,4] = broadcast_in_dim" in text and "div a c" in text, text
  ys = np.array([1.0, 2.0, 4.0], np.float32)
  out = minijax.vmap(lambda s: lax.div(xs[0], s))(ys)
  np.testing.assert_array_equal(np.asarray(out), xs[0][None] / ys[:, None, None])


def test_grad_starts_from_a_literal_one_and_returns_arrays():
  text = str(minijax.make_jaxpr(minijax.grad(lambda x: x * 2.0))(1.0))
  assert "mul 1.0:f32[] 2.0:f32[]" in text, text  # (JAX's jaxpr)
  # an input whose cotangent is the seed itself still gets an array, weakly typed as JAX's
  g = minijax.grad(lambda d: d["a"] + d["b"] + d["a"])({"a": 10.0, "b": 20.0})
  assert all(type(v) is minijax.Array and v.weak_type for v in g.values())
  assert float(g["a"]) == 2.0 and float(g["b"]) == 1.0
  g = minijax.grad(lambda a: a)(np.float32(3.0))
  assert type(g) is minijax.Array and not g.weak_type and float(g) == 1.0


def test_third_derivative_of_a_quotient_whose_square_overflows_is_jaxs():
  """The quotient rule's divisor term is `-g * x * y**-2` (JAX's): differentiating it again
  stays finite where y*y overflows float32; numpyro's log1mexp (a custom JVP dividing by
  expm1(-x)) is checked to third order at x = -80.56 by numpyro's tests."""
  @minijax.custom_jvp
  def log1mexp(x):
    return jnp.where(x > -0.6931472, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))
  log1mexp.defjvps(lambda t, ans, x: -t / jnp.expm1(-x))
  f = log1mexp
  expected = [-1.027651757642162e-35, -1.027651757642162e-35, -0.0, -0.0]  # JAX 0.10.2
  for value in expected:  # (log1p/exp round as XLA's CPU code does: within a few ulps)
    got = np.float32(f(np.float32(-80.5632)))
    assert np.isfinite(got) and np.signbit(got) == np.signbit(value), (got, value)
    if value == 0:
      assert got == 0, got
    else:
      assert_within_ulps(got, np.float32(value), 4)
    f = minijax.grad(f)
  third = minijax.grad(minijax.grad(minijax.grad(lambda y: 1.0 / y)))
  assert [float(third(np.float32(v))) for v in (2.0, 3e19)] == [-0.375, -0.0]


# ----------------------------------------------------------------------------- jaxprs and effects

def test_make_jaxpr_of_each_transformation():
  f = lambda x: lax.sin(lax.mul(x, x))
  x = np.ones(3, np.float32)
  for name, g in {"grad": minijax.grad(lambda x: lax.reduce_sum(f(x), (0,))),
                  "vmap": minijax.vmap(f),
                  "jvp": lambda x: minijax.jvp(f, (x,), (x,)),
                  "vjp": lambda x: minijax.vjp(f, x)[1](x),
                  "jacrev": minijax.jacrev(f)}.items():
    closed = minijax.make_jaxpr(g)(x)
    assert closed.eqns, name
    from minijax.core.jaxpr import eval_closed_jaxpr, typecheck_jaxpr
    typecheck_jaxpr(closed.jaxpr)
    got = eval_closed_jaxpr(closed, x)
    want = minijax.tree_util.tree_leaves(g(x))
    for a, b in zip(got, want):
      allclose(a, b)


class _Noisy(minijax.core.effects.Effect):
  ordered = False


_noisy_p = Primitive("noisy")
_noisy_p.def_effectful_abstract_eval(lambda x: (x, frozenset([_Noisy()])))


def test_partial_eval_runs_known_effects_in_the_known_part_and_stages_the_rest():
  def f(x, y):
    a = _noisy_p.bind(lax.sin(x))
    b = _noisy_p.bind(lax.mul(a, y))
    return [b]
  closed = pe.trace_to_closed_jaxpr(f, [ad.get_aval(np.float32(1))] * 2)
  assert _Noisy() in closed.effects
  known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(closed, [False, True])
  assert out_uk == [True]
  assert [e.primitive.name for e in known.eqns] == ["sin", "noisy"]
  assert [e.primitive.name for e in unknown.eqns] == ["mul", "noisy"]
  assert _Noisy() in known.effects and _Noisy() in unknown.effects
  assert num_res == 1


def test_dce_keeps_effectful_equations():
  def f(x):
    _noisy_p.bind(lax.cos(x))
    lax.sin(x)
    return [lax.neg(x)]
  closed = pe.trace_to_closed_jaxpr(f, [ad.get_aval(np.float32(1))])
  new, used = pe.dce_jaxpr(closed.jaxpr, [True])
  assert [e.primitive.name for e in new.eqns] == ["cos", "noisy", "neg"]
  assert used == [True]
  new, used = pe.dce_jaxpr(closed.jaxpr, [False])
  assert [e.primitive.name for e in new.eqns] == ["cos", "noisy"]


def test_transformed_jaxprs_carry_their_equations_effects():
  ad.primitive_jvps[_noisy_p] = lambda p, t: (_noisy_p.bind(*p), _noisy_p.bind(*t))
  ad.primitive_transposes[_noisy_p] = lambda ct, x: [_noisy_p.bind(ct)]
  batching.primitive_batchers[_noisy_p] = lambda a, d: (_noisy_p.bind(*a), d[0])
  f = lambda x: lax.sin(_noisy_p.bind(x))
  x = np.float32(0.5)
  for g, arg in ((minijax.grad(f), x), (minijax.vmap(f), np.ones(2, np.float32)),
                 (minijax.jit(minijax.grad(f)), x), (lambda x: minijax.jvp(f, (x,), (x,)), x)):
    assert _Noisy() in minijax.make_jaxpr(g)(arg).effects
  closed = minijax.make_jaxpr(minijax.grad(f))(x)
  assert sum(e.primitive is _noisy_p for e in closed.eqns) == 2  # forward tap, transposed tap
  closed = minijax.make_jaxpr(minijax.grad(minijax.jit(f)))(x)
  assert all(_Noisy() in e.effects for e in closed.eqns if e.primitive.name == "jit")


# ----------------------------------------------------------------------------- more API

def test_jvp_vjp_linearize_with_aux():
  f = lambda x: (lax.sin(x), {"aux": lax.cos(x)})
  x = np.float32(0.3)
  out, t, aux = minijax.jvp(f, (x,), (np.float32(2.0),), has_aux=True)
  allclose(t, 2 * np.cos(x))
  allclose(aux["aux"], np.cos(x))
  out, pullback, aux = minijax.vjp(f, x, has_aux=True)
  allclose(pullback(np.float32(1.0))[0], np.cos(x))
  allclose(aux["aux"], np.cos(x))
  out, f_jvp, aux = minijax.linearize(f, x, has_aux=True)
  allclose(f_jvp(np.float32(3.0)), 3 * np.cos(x))


def test_jvp_argument_errors():
  with pytest.raises(TypeError, match="must be tuples or lists"):
    minijax.jvp(lax.sin, np.float32(1), np.float32(1))
  with pytest.raises(TypeError, match="same tree structure"):
    minijax.jvp(lax.add, (np.float32(1), np.float32(1)), (np.float32(1),))
  with pytest.raises(TypeError, match="expected tangent dtype float0"):
    minijax.jvp(lambda n: n, (np.int32(1),), (np.float32(1),))
  with pytest.raises(ValueError, match="different primal and tangent shapes"):
    minijax.jvp(lax.sin, (np.ones(2, np.float32),), (np.ones(3, np.float32),))


def test_grad_argnums_out_of_range():
  with pytest.raises(TypeError, match="requires at least 2 positional arguments"):
    minijax.grad(lax.sin, argnums=1)(np.float32(1))


def test_eager_grad_of_jit_compiles_once(caplog):
  import logging
  f = minijax.jit(lambda x: lax.reduce_sum(lax.sin(lax.mul(x, x)), (0,)))
  g = minijax.grad(f)
  x = np.ones(5, np.float32)
  g(x)
  minijax.config.update("log_compiles", True)
  try:
    with caplog.at_level(logging.WARNING, logger="minijax"):
      caplog.clear()
      g(x + 1)
      g(x + 2)
  finally:
    minijax.config.update("log_compiles", False)
  assert sum("Finished XLA compilation" in r.getMessage() for r in caplog.records) == 0
  assert not any("Compiling" in r.getMessage() for r in caplog.records)
  allclose(g(x), 2 * x * np.cos(x * x))


def test_grad_of_a_function_of_a_jitted_vmap_and_back():
  w = np.array([[0.5, -1.0], [2.0, 0.3], [1.0, 1.0]], np.float32)

  def loss(w, xs):
    pred = minijax.vmap(lambda x: lax.tanh(lax.dot(x, w)))(xs)
    return lax.reduce_sum(lax.mul(pred, pred), (0, 1))
  xs = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
  g = minijax.jit(minijax.grad(loss))(w, xs)
  pred = np.tanh(xs @ w)
  allclose(g, xs.T @ (2 * pred * (1 - pred ** 2)), rtol=1e-4, atol=1e-5)


def test_eval_shape_and_linear_transpose():
  s = minijax.eval_shape(lambda x, y: {"p": lax.dot(x, y)},
                         minijax.ShapeDtypeStruct((2, 3), np.float32), np.ones((3, 4), np.float32))
  assert s["p"] == minijax.ShapeDtypeStruct((2, 4), np.float32)
  m = np.arange(6, dtype=np.float32).reshape(2, 3)
  f_t = minijax.linear_transpose(lambda x: lax.dot(m, x), np.ones(3, np.float32))
  (ct,) = f_t(np.array([1.0, -1.0], np.float32))
  allclose(ct, m.T @ np.array([1.0, -1.0]))


def test_a_vjp_or_linearized_function_is_a_pytree_that_jit_takes_and_returns():
  linearized = minijax.jit(lambda f, x: minijax.linearize(f, x)[1], static_argnums=0)(
      lambda x: 2.0 * x, 1.0)
  assert float(minijax.jit(lambda f, x: f(x))(linearized, 3.0)) == 6.0
  out, pullback = minijax.jit(lambda x: minijax.vjp(lambda y: jnp.sin(y) * 2.0, x))(1.0)
  allclose(out, 2 * np.sin(1.0))
  allclose(pullback(1.0)[0], 2 * np.cos(1.0))
  assert [float(r) for r in minijax.tree_util.tree_leaves(pullback)] != []  # residuals
  _, again = minijax.vjp(lambda y: y * 3.0, 2.0)
  allclose(minijax.jit(lambda f, c: f(c))(again, 1.0)[0], 3.0)
  bound = minijax.tree_util.Partial(functools.partial(lambda a, b, c: a * b + c, 2.0), 3.0)
  assert minijax.tree_util.tree_leaves(bound) == [3.0] and bound(1.0) == 7.0


def test_a_vjp_function_called_with_several_arguments_says_so():
  def foo(x):
    return x * 2
  _, pullback = minijax.vjp(foo, 1.0)
  with pytest.raises(TypeError, match="applied to foo was called with 2 arguments"):
    pullback(1.0, 2.0)
  with pytest.raises(TypeError, match="two-element tuple; got tuple of length 3"):
    minijax.grad(lambda x: (x, 1, 2), has_aux=True)(1.0)
