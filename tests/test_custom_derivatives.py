"""custom_jvp and custom_vjp: the user's rules are used (not autodiff of the function)
under jvp, grad, jit, vmap and their compositions; nondiff_argnums; pytrees; errors."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax
import minijax.numpy as jnp


def allclose(a, b, rtol=1e-5, atol=1e-6):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                             rtol=rtol, atol=atol)


@minijax.custom_jvp
def sin_tenfold(x):
  return lax.sin(x)


@sin_tenfold.defjvp
def _sin_tenfold_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return sin_tenfold(x), lax.mul(lax.mul(t, lax.cos(x)), 10.0)


@minijax.custom_vjp
def sin_threefold(x):
  return lax.sin(x)


def _st_fwd(x):
  return sin_threefold(x), lax.cos(x)


def _st_bwd(cos_x, g):
  return (lax.mul(lax.mul(g, cos_x), 3.0),)


sin_threefold.defvjp(_st_fwd, _st_bwd)

TRANSFORMS = {
    "grad": lambda f: minijax.grad(f),
    "jit(grad)": lambda f: minijax.jit(minijax.grad(f)),
    "grad(jit)": lambda f: minijax.grad(minijax.jit(f)),
    "vmap(grad)": lambda f: minijax.vmap(minijax.grad(f)),
    "grad(sum(vmap))": lambda f: minijax.grad(lambda xs: lax.reduce_sum(minijax.vmap(f)(xs), (0,))),
    "jit(vmap(grad(jit)))": lambda f: minijax.jit(minijax.vmap(minijax.grad(minijax.jit(f)))),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("fn,scale", [(sin_tenfold, 10.0), (sin_threefold, 3.0)],
                         ids=["custom_jvp", "custom_vjp"])
def test_custom_rule_is_used_under_every_transformation(fn, scale, name):
  xs = np.array([0.3, -0.8, 1.4], np.float32)
  vectorized = "vmap" in name
  x = xs if vectorized else xs[0]
  allclose(TRANSFORMS[name](fn)(x), scale * np.cos(x))


def test_custom_functions_evaluate_and_jit_and_vmap_to_the_function():
  xs = np.array([0.3, -0.8], np.float32)
  for fn in (sin_tenfold, sin_threefold):
    allclose(fn(xs), np.sin(xs))
    allclose(minijax.jit(fn)(xs), np.sin(xs))
    allclose(minijax.vmap(fn)(xs), np.sin(xs))
    allclose(minijax.jit(minijax.vmap(fn))(xs), np.sin(xs))


def test_jvp_uses_the_custom_jvp_rule_and_staging_shows_the_call():
  _, t = minijax.jvp(sin_tenfold, (np.float32(0.5),), (np.float32(1.0),))
  allclose(t, 10 * np.cos(0.5))
  text = str(minijax.make_jaxpr(sin_tenfold)(np.float32(0.5)))
  assert "custom_jvp_call" in text
  assert "custom_vjp_call" in str(minijax.make_jaxpr(sin_threefold)(np.float32(0.5)))


def test_second_order_through_custom_rules():
  x = np.float32(0.4)
  # d/dx (10 cos x) = -10 sin x: the rule's own tangent computation is differentiated.
  allclose(minijax.grad(minijax.grad(sin_tenfold))(x), -10 * np.sin(x))
  allclose(minijax.grad(minijax.grad(sin_threefold))(x), -3 * np.sin(x))


def test_custom_jvp_under_nested_vmap_with_an_undifferentiated_argument():
  # the argument that grad does not follow has a symbolic zero tangent: it must not reach the
  # batched rule as a value (it leaked into the jit's constants; dynamax's GammaHMM)
  @minijax.custom_jvp
  def scaled_sin(a, b):
    return a * lax.sin(b)

  scaled_sin.defjvp(lambda p, t: (scaled_sin(*p),
                                  t[0] * lax.sin(p[1]) + t[1] * p[0] * lax.cos(p[1])))
  data = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)

  def loss(c):
    return minijax.vmap(minijax.vmap(scaled_sin))(c * jnp.ones((2, 3)), data).sum()

  for fn in (minijax.grad(loss), minijax.jit(minijax.grad(loss))):
    allclose(fn(2.0), np.sin(data).sum())
  tangent = minijax.jvp(lambda c: minijax.vmap(minijax.vmap(scaled_sin))(
      c * jnp.ones((2, 3)), data), (2.0,), (1.0,))[1]
  allclose(tangent, np.sin(data))


def test_custom_jvp_under_vmap_keeps_unbatched_operands_unbatched():
  # equinox's runtime errors: a cond on an unbatched predicate whose branch calls back to
  # the host with it (a pure_callback without a vmap_method, which cannot be batched)
  def report(flag):
    return np.float32(-1.0)

  @minijax.custom_jvp
  def checked(x, flag):
    struct = minijax.ShapeDtypeStruct((), np.float32)
    return lax.cond(flag, lambda: minijax.pure_callback(report, struct, flag) * x,
                    lambda: x)

  checked.defjvp(lambda p, t: (checked(*p), t[0]))
  xs = np.arange(3.0, dtype=np.float32)
  for flag, want in ((False, xs), (True, -xs)):
    allclose(minijax.vmap(checked, (0, None))(xs, flag), want)
    allclose(minijax.jit(minijax.vmap(checked, (0, None)))(xs, flag), want)
  allclose(minijax.jvp(lambda x: minijax.vmap(checked, (0, None))(x, False),
                       (xs,), (np.ones(3, np.float32),))[1], [1, 1, 1])


def test_custom_vjp_under_vmap_keeps_unbatched_operands_unbatched():
  # as for custom_jvp: the function sees its unbatched flag as it is, and the cotangent of
  # an unbatched operand is summed over the batch (JAX's values)
  def report(flag):
    return np.float32(-1.0)

  @minijax.custom_vjp
  def checked(x, flag):
    struct = minijax.ShapeDtypeStruct((), np.float32)
    return lax.cond(flag, lambda: minijax.pure_callback(report, struct, flag) * x,
                    lambda: x)

  checked.defvjp(lambda x, flag: (checked(x, flag), None), lambda r, g: (g, None))
  xs = np.arange(3.0, dtype=np.float32)
  allclose(minijax.vmap(checked, (0, None))(xs, True), -xs)
  allclose(minijax.grad(lambda x: minijax.vmap(checked, (0, None))(x, False).sum())(xs),
           [1, 1, 1])

  @minijax.custom_vjp
  def scale(x, c):
    return x * c

  scale.defvjp(lambda x, c: (x * c, (x, c)), lambda r, g: (g * r[1], g * r[0]))
  grads = minijax.jit(minijax.grad(lambda c, x: minijax.vmap(scale, (0, None))(x, c).sum(),
                                   argnums=(0, 1)))(np.float32(2.0), xs)
  allclose(grads[0], 3.0)
  allclose(grads[1], [2, 2, 2])


def test_custom_jvp_defjvps():
  @minijax.custom_jvp
  def f(x, y):
    return lax.mul(x, y)
  f.defjvps(lambda tx, out, x, y: lax.mul(tx, 2.0), lambda ty, out, x, y: lax.mul(ty, 5.0))
  gx, gy = minijax.grad(f, argnums=(0, 1))(np.float32(1.0), np.float32(2.0))
  allclose(gx, 2.0)
  allclose(gy, 5.0)


def test_custom_jvp_nondiff_argnums_passes_them_first():
  from functools import partial

  @partial(minijax.custom_jvp, nondiff_argnums=(0,))
  def apply(fn, x):
    return fn(x)

  @apply.defjvp
  def _apply_jvp(fn, primals, tangents):
    return apply(fn, primals[0]), lax.mul(tangents[0], 7.0)

  allclose(minijax.grad(lambda x: apply(lax.sin, x))(np.float32(0.2)), 7.0)
  allclose(minijax.jit(minijax.grad(lambda x: apply(lax.cos, x)))(np.float32(0.2)), 7.0)


def test_custom_vjp_nondiff_argnums_pytrees_and_none_cotangents():
  from functools import partial

  @partial(minijax.custom_vjp, nondiff_argnums=(2,))
  def f(p, q, power):
    return {"out": lax.mul(lax.integer_pow(p["a"], power), q)}

  def fwd(p, q, power):
    return f(p, q, power), (p["a"], q)

  def bwd(power, res, g):
    a, q = res
    ga = lax.mul(lax.mul(g["out"], q), lax.mul(float(power), lax.integer_pow(a, power - 1)))
    return {"a": ga}, None

  f.defvjp(fwd, bwd)
  p, q = {"a": np.float32(2.0)}, np.float32(3.0)
  loss = lambda p, q: f(p, q, 3)["out"]
  gp, gq = minijax.grad(loss, argnums=(0, 1))(p, q)
  allclose(gp["a"], 3 * 4.0 * 3.0)
  allclose(gq, 0.0)
  allclose(minijax.jit(minijax.grad(loss))(p, q)["a"], 36.0)


def test_custom_vjp_bwd_may_return_none_for_a_whole_pytree_argument():
  @minijax.custom_vjp
  def f(x, d):
    return lax.mul(x, d["k"])
  f.defvjp(lambda x, d: (f(x, d), d["k"]), lambda k, g: (lax.mul(g, k), None))
  gx, gd = minijax.grad(f, argnums=(0, 1))(np.float32(2.0), {"k": np.float32(3.0)})
  allclose(gx, 3.0)
  allclose(gd["k"], 0.0)


def test_custom_vjp_function_closing_over_an_outer_tracer():
  def outer(y):
    @minijax.custom_vjp
    def g(x):
      return lax.mul(x, y)
    g.defvjp(lambda x: (g(x), None), lambda res, ct: (lax.mul(ct, 2.0),))
    return minijax.grad(g)(np.float32(1.0))
  allclose(outer(np.float32(5.0)), 2.0)
  allclose(minijax.jit(outer)(np.float32(5.0)), 2.0)


def test_custom_rule_errors():
  @minijax.custom_jvp
  def no_rule(x):
    return x
  with pytest.raises(AttributeError, match="No JVP defined"):
    minijax.grad(no_rule)(np.float32(1.0))

  @minijax.custom_vjp
  def bad(x):
    return lax.sin(x)
  bad.defvjp(lambda x: (bad(x), None), lambda res, g: (g, g))
  with pytest.raises(TypeError, match=r"must produce a tuple of length equal to the number of "
                     r"arguments .* but got bwd output structure PyTreeDef\(\(\*, \*\)\) for "
                     r"primal input structure PyTreeDef\(\(\*,\)\)"):
    minijax.grad(bad)(np.float32(1.0))
  # a cotangent of another shape than its primal's is JAX's ValueError (it was summed into
  # the gradient, silently: grad of a scalar function gave an array of three)
  spread = minijax.custom_vjp(lambda x, y: x * y)
  spread.defvjp(lambda x, y: (x * y, None), lambda res, g: (jnp.ones(3), g))
  with pytest.raises(ValueError, match=r"at output\[0\] the bwd rule produced an output of type "
                     r"float32\[3\] corresponding to an input of type float32\[\], so the "
                     r"shapes do not"):
    minijax.grad(spread)(np.float32(1.0), np.float32(2.0))
  unpaired = minijax.custom_vjp(lambda x: x * 2)
  unpaired.defvjp(lambda x: x * 2, lambda res, g: (g,))
  with pytest.raises(TypeError, match=r"fwd rule <lambda> for function <lambda> must produce a "
                     r"pair .* but instead of a pair the fwd rule <lambda> produced 2.0"):
    minijax.grad(unpaired)(1.0)

  @minijax.custom_jvp
  def wrong_shape(x):
    return lax.sin(x)
  wrong_shape.defjvp(lambda p, t: (lax.broadcast(p[0], (2,)), t[0]))
  with pytest.raises(TypeError, match=r"corresponding shapes and dtypes. Expected float32\[2\] "
                                      r"\(tangent type of float32\[2\]\) but got float32\[\]"):
    minijax.jvp(wrong_shape, (np.float32(1.0),), (np.float32(1.0),))
  # Once the function is traced (jvp of jit), the rule's primal must match its output.
  with pytest.raises(TypeError, match="same shapes and dtypes"):
    minijax.jvp(minijax.jit(wrong_shape), (np.float32(1.0),), (np.float32(1.0),))


def test_checkpoint_recomputes_instead_of_saving_residuals():
  f = minijax.checkpoint(lambda x: lax.sin(lax.sin(x)))
  x = np.float32(0.7)
  allclose(minijax.grad(f)(x), np.cos(np.sin(x)) * np.cos(x))
  jaxpr = minijax.make_jaxpr(minijax.grad(f))(x)
  backward = [e for e in jaxpr.eqns if e.primitive.name == "checkpoint"]
  assert len(backward) == 1
  # the staged backward pass recomputes sin(x) from x instead of reading a saved residual
  assert [e.primitive.name for e in backward[0].params["jaxpr"].eqns][0] == "sin"


def test_named_call_names_its_operations_in_name_stacks_and_lowered_locations():
  # JAX 0.10.2's named_call is a named_scope around the call: no equation of its own
  f = minijax.named_call(lambda x: lax.sin(x), name="my_block")
  x = np.float32(0.5)
  closed = minijax.make_jaxpr(minijax.grad(f))(x)
  assert [e.primitive.name for e in closed.eqns] == ["sin", "cos", "mul"]
  # (JAX 0.10.2's names: the transformations wrap the scope that follows them)
  assert [str(e.source_info.name_stack) for e in closed.eqns] == [
      "jvp(my_block)", "jvp(my_block)", "transpose(jvp(my_block))"]
  with minijax.named_scope("outer"):  # (a trace records the names entered inside it)
    batched = minijax.make_jaxpr(minijax.vmap(minijax.grad(f)))(np.ones(2, np.float32))
  assert [str(e.source_info.name_stack) for e in batched.eqns] == [
      "vmap(jvp(my_block))", "vmap(jvp(my_block))", "vmap(transpose(jvp(my_block)))"]
  assert 'loc("jit(<lambda>)/my_block/sin"' in minijax.jit(f).lower(x).as_text(debug_info=True)
  text = minijax.jit(minijax.grad(f)).lower(x).as_text(debug_info=True)
  assert 'loc("jit(<lambda>)/transpose(jvp(my_block))/mul"' in text
  allclose(minijax.vmap(f)(np.ones(2, np.float32)), np.sin(np.ones(2)))


def test_linear_call_transposes_by_the_users_transpose_not_the_functions():
  from minijax.custom_derivatives import linear_call, zero_from_primal

  def f(x):  # the transpose is deliberately not f's own: reverse mode must use it
    return linear_call(lambda r, x: r * x, lambda r, t: 7.0 * t, 2.0, x)

  assert float(f(3.0)) == 6.0
  assert minijax.jvp(f, (1.0,), (1.0,))[1] == 2.0  # forward mode applies the function
  assert float(minijax.grad(f)(1.0)) == 7.0
  assert float(minijax.jit(minijax.grad(f))(1.0)) == 7.0

  def g(x):
    return linear_call(lambda r, x: (x * 2, x * 3), lambda r, t: t[0] * 2 + t[1] * 3, (), x)

  assert float(minijax.linear_transpose(g, 1.0)((1.0, 1.0))[0]) == 5.0
  assert "linear_call" in str(minijax.make_jaxpr(g)(1.0))
  with pytest.raises(NotImplementedError, match="with respect to residual_args"):
    minijax.grad(lambda r: linear_call(lambda r, x: r * x, lambda r, t: r * t, r, 1.0))(2.0)
  assert np.asarray(zero_from_primal(jnp.ones(2))).tolist() == [0.0, 0.0]
  assert zero_from_primal({"i": jnp.ones(2, np.int32)})["i"].dtype == minijax.dtypes.float0


class _Box:
  """A pytree node holding one array (as flax's Variables are)."""

  def __init__(self, value):
    self.value = value


minijax.tree_util.register_pytree_node(_Box, lambda b: ((b.value,), None),
                                       lambda _, leaves: _Box(leaves[0]))


def test_custom_vjp_bwd_may_give_an_array_for_a_node_that_holds_one_as_jax_allows():
  @minijax.custom_vjp
  def f(params):
    return jnp.sin(params["w"].value) * params["b"][0]

  def f_fwd(params):
    return f(params), params

  def f_bwd(params, g):  # an array where the primal has a _Box; None for a whole subtree
    return ({"w": g * jnp.cos(params["w"].value) * params["b"][0], "b": None},)
  f.defvjp(f_fwd, f_bwd)
  params = {"w": _Box(jnp.float32(0.5)), "b": (jnp.float32(3.0), jnp.float32(4.0))}
  g = minijax.grad(f)(params)
  np.testing.assert_allclose(g["w"].value, 3.0 * np.cos(0.5), rtol=1e-6)
  assert [float(x) for x in g["b"]] == [0.0, 0.0]

  def bad_bwd(params, g):  # one array for the two leaves of "b": refused
    return ({"w": g, "b": g},)
  f.defvjp(f_fwd, bad_bwd)
  with pytest.raises((ValueError, TypeError)):
    minijax.grad(f)(params)
