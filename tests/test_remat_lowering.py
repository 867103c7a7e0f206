"""How `checkpoint` reaches XLA, as JAX 0.10.2 lowers it: the backward pass's recomputation
reads the operands `prevent_cse` marks through an `optimization_barrier` (so XLA cannot
merge it with the forward pass), float residuals are rounded to their dtype where they are
made (`reduce_precision`), and what each checkpoint saves is logged.  Also the two
primitives this needs, `lax.optimization_barrier` and `lax.reduce_precision`."""
import logging
import re
from functools import partial

import numpy as np
import pytest

import minijax
from minijax import ad_checkpoint as ac
from minijax import lax
from minijax import numpy as jnp


def _g(x):
  return lax.sin(lax.sin(x)), 3.


def _first(g):
  return lambda x: g(x)[0]


@pytest.mark.parametrize("remat", [
    minijax.checkpoint, partial(minijax.checkpoint, policy=lambda *_, **__: False)])
def test_only_the_backward_pass_recomputation_sits_behind_a_barrier(remat):
  f = _first(remat(_g))
  assert "opt-barrier" not in minijax.jit(f).lower(2.).as_text("hlo")
  assert "opt-barrier" in minijax.jit(minijax.grad(f)).lower(2.).as_text("hlo")
  assert float(minijax.jit(minijax.grad(f))(2.)) == pytest.approx(
      np.cos(np.sin(2.)) * np.cos(2.), rel=1e-6)


def test_prevent_cse_false_puts_no_barrier_anywhere():
  f = _first(minijax.checkpoint(_g, prevent_cse=False))
  assert "opt-barrier" not in minijax.jit(minijax.grad(f)).lower(2.).as_text("hlo")


def _barrier_operands(text: str) -> list[int]:
  """The number of operands of each optimization_barrier in a lowered module's text."""
  return [len(m.split(",")) for m in re.findall(r"optimization_barrier (%[^:]*):", text)]


def _loss(layer):
  def loss(Ws, x):
    for W in Ws:
      x = layer(W, x)
    return jnp.sum(x ** 2)
  return loss


def _layer(W, x):
  return x @ W + jnp.array([1.0, 2.0, 3.0])


_Ws = [jnp.ones((3, 3)), 2 * jnp.ones((3, 3))]
_x = jnp.arange(3.)


@pytest.mark.parametrize("prevent_cse, operands", [  # the operand counts are JAX 0.10.2's
    ((False, True), [2, 2]),   # x and the cotangent
    ((True, True), [3, 3]),    # W too
    ((False, False), [1, 1]),  # the cotangent, which differentiation adds, always
])
def test_prevent_cse_per_argument_marks_only_those_arguments(prevent_cse, operands):
  layer = minijax.checkpoint(_layer, prevent_cse=prevent_cse)
  grad = minijax.jit(minijax.grad(_loss(layer), (0, 1)))
  assert _barrier_operands(grad.lower(_Ws, _x).as_text()) == operands
  expected = minijax.grad(_loss(_layer), (0, 1))(_Ws, _x)
  for got, want in zip(minijax.tree_util.tree_leaves(grad(_Ws, _x)),
                       minijax.tree_util.tree_leaves(expected)):
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_prevent_cse_is_a_pytree_prefix_of_the_arguments():
  layer = minijax.checkpoint(lambda d: d["x"] @ d["W"], prevent_cse=({"W": False, "x": True},))
  loss = _loss(lambda W, x: layer(dict(W=W, x=x)))
  text = minijax.jit(minijax.grad(loss, (0, 1))).lower(_Ws, _x).as_text()
  assert re.search(r"optimization_barrier %[a-z0-9]+, %[a-z0-9]+ :", text)
  with pytest.raises(ValueError, match="prevent_cse.*prefix"):
    minijax.checkpoint(lambda a, b: a * b, prevent_cse=(True, True, True))(1., 2.)
  with pytest.raises(TypeError, match="prevent_cse must be a bool or tuple of bools"):
    minijax.checkpoint(jnp.sin, prevent_cse="yes")


def test_prevent_cse_per_argument_survives_vmap_jvp_and_effect_handlers():
  layer = minijax.checkpoint(_layer, prevent_cse=(False, True))
  loss = _loss(layer)
  batched = minijax.jit(minijax.vmap(minijax.grad(loss, 1), in_axes=(None, 0)))
  xs = jnp.stack([_x, _x + 1])
  want = np.stack([minijax.grad(_loss(_layer), 1)(_Ws, x) for x in xs])
  np.testing.assert_allclose(batched(_Ws, xs), want, rtol=1e-6)
  hessian = minijax.jit(minijax.jacfwd(minijax.grad(loss, 1), 1))(_Ws, _x)
  np.testing.assert_allclose(hessian, minijax.jacfwd(minijax.grad(_loss(_layer), 1), 1)(_Ws, _x),
                             rtol=1e-6)


def test_residuals_are_rounded_so_both_passes_see_the_same_bits():
  # JAX 0.10.2's api_test `test_excess_precision_hell`: XLA computes the bfloat16 product
  # in float32; without rounding the saved residual the forward output kept the excess
  eps = jnp.finfo("bfloat16").eps

  @minijax.custom_vjp
  def dot(x):
    return jnp.dot(x, x)
  dot.defvjp(lambda x: (dot(x), None), lambda _, g: (g,))

  @minijax.custom_vjp
  def widen(x):
    return jnp.float32(1.) * x.astype("float32")
  widen.defvjp(lambda x: (widen(x), x), lambda x, _: (jnp.float32(1.) * x.astype("float32"),))

  f = minijax.jit(minijax.checkpoint(lambda x: widen(dot(x)), policy=lambda *_, **__: True))
  x = (jnp.bfloat16(1) + eps) * jnp.eye(2, dtype="bfloat16")
  y, vjp = minijax.vjp(f, x)
  y_, = vjp(jnp.ones_like(y))
  np.testing.assert_array_equal(y, y_)
  np.testing.assert_array_equal(y, 1.015625 * np.eye(2, dtype=np.float32))  # JAX's


def _sin_then_cos(x):
  return jnp.cos(jnp.sin(x).sum())


@pytest.mark.parametrize("policy, lines", [
    (None, ["saving inputs with shapes:", "  float32[3]"]),
    (lambda *_, **__: True, ["saving these intermediates:", " from output of cos from ",
                             " from output of sin from "]),
    (lambda p, *_, **__: str(p) == "cos", ["saving inputs with shapes:",
                                           "and saving these intermediates:",
                                           "float32[3] from output of cos from "]),
])
def test_what_a_checkpoint_saves_is_logged(caplog, policy, lines):
  with caplog.at_level(logging.DEBUG, logger="minijax.lax.remat"):
    minijax.grad(minijax.checkpoint(_sin_then_cos, policy=policy))(jnp.arange(3.))
  text = "\n".join(r.getMessage() for r in caplog.records if r.name == "minijax.lax.remat")
  assert text.startswith("remat-decorated function ")
  # where the saved values were traced, as JAX says it (not where grad was called)
  where = f"test_remat_lowering.py:{_sin_then_cos.__code__.co_firstlineno + 1} (_sin_then_cos)"
  assert text.count(" from output of ") == text.count(f" from {where}\n")
  for line in lines:
    assert line in text
  if policy is None:
    assert "intermediates" not in text


def test_log_checkpoint_residuals_logs_at_warning(caplog):
  minijax.config.update("jax_log_checkpoint_residuals", True)
  try:
    with caplog.at_level(logging.WARNING, logger="minijax.lax.remat"):
      minijax.grad(minijax.checkpoint(_sin_then_cos))(jnp.arange(3.))
  finally:
    minijax.config.update("jax_log_checkpoint_residuals", False)
  assert any(r.levelno == logging.WARNING and "saving inputs" in r.getMessage()
             for r in caplog.records)


# ---- the primitives
def test_reduce_precision_rounds_to_the_format_and_is_linear():
  assert float(lax.reduce_precision(jnp.float32(1.1), 5, 10)) == 1.099609375  # JAX's
  assert lax.reduce_precision(1.1, 5, 10).dtype == np.float32
  text = minijax.jit(lambda x: lax.reduce_precision(x, 5, 10)).lower(1.).as_text()
  assert "reduce_precision" in text and "e5m10" in text
  assert float(minijax.grad(lambda x: lax.reduce_precision(x * x, 8, 7))(3.)) == 6.0
  np.testing.assert_array_equal(
      minijax.vmap(lambda x: lax.reduce_precision(x, 8, 7))(jnp.array([1.1, 2.2])),
      np.array([1.1, 2.2], np.float32).astype(jnp.bfloat16).astype(np.float32))


@pytest.mark.parametrize("args, error, message", [
    ((jnp.int32(1), 5, 10), TypeError,
     "reduce_precision does not accept dtype int32. Accepted dtypes are subtypes of floating."),
    ((1., 0, 3), ValueError, "reduce_precision: exponent_bits must be positive; got 0"),
    ((1., 3, -1), ValueError, "reduce_precision: mantissa_bits must be non-negative; got -1"),
])
def test_reduce_precision_errors_are_jaxs(args, error, message):
  with pytest.raises(error, match=re.escape(message)):
    lax.reduce_precision(*args)


def test_optimization_barrier_is_the_identity_on_a_pytree():
  out = lax.optimization_barrier([1., 2])
  assert [float(out[0]), int(out[1])] == [1.0, 2] and out[1].dtype == np.int32
  f = lambda x: lax.optimization_barrier((x, 2 * x))
  text = minijax.jit(f).lower(1.).as_text()
  assert re.search(r"optimization_barrier %arg0, %[0-9]+ :", text)
  assert "optimization_barrier" in str(minijax.make_jaxpr(f)(1.))
  assert float(minijax.grad(lambda x: lax.optimization_barrier(x * x))(3.)) == 6.0
  np.testing.assert_array_equal(
      minijax.vmap(lambda x: lax.optimization_barrier(x * x))(jnp.arange(3.)), [0., 1., 4.])
  assert float(minijax.jit(lambda x: lax.optimization_barrier(jnp.sin(x)) + jnp.sin(x))(0.5)
               ) == pytest.approx(2 * np.sin(0.5))


# ---- saved_residuals / print_saved_residuals (JAX's words and order, recorded from JAX)
def _named_product(x, y):
  x1, x2 = x
  z = ac.checkpoint_name(jnp.sin(3.), "z")
  return z * ((x1 * x2) * y) * np.array([3.])


def test_saved_residuals_names_arguments_constants_and_equations():
  res = ac.saved_residuals(_named_product, (2., 3.), y=4.)
  line = _named_product.__code__.co_firstlineno
  assert [(a.shape, s) for a, s in res] == [
      ((1,), "from a constant"), ((), "from the argument x[0]"),
      ((), "from the argument x[1]"), ((), "from the argument y"),
      ((), f"named 'z' from test_remat_lowering.py:{line + 2} (_named_product)"),
      ((), f"output of mul from test_remat_lowering.py:{line + 3} (_named_product)")]
  # a checkpoint saves only its inputs
  assert [s for _, s in ac.saved_residuals(minijax.checkpoint(_sin_then_cos), jnp.ones(3))] == [
      "from the argument x"]


def test_print_saved_residuals(capsys):
  def f(x, y):
    return jnp.cos(jnp.sin(x) * y)
  ac.print_saved_residuals(f, 2., 3.)
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == "f32[] from the argument y"
  assert [line.split(" from test_remat_lowering.py:")[0] for line in lines[1:]] == [
      "f32[] output of sin", "f32[] output of cos", "f32[] output of sin"]


def test_prevent_cse_per_argument_under_an_effect_handler():
  from minijax.effects import call_and_reap, sow

  @partial(minijax.checkpoint, prevent_cse=(True, False))
  def g(x, y):
    return sow(jnp.sin(x), tag="t", name="s") * y

  fun = minijax.jit(call_and_reap(minijax.value_and_grad(g), tag="t"))
  (value, grad), reaped = fun(jnp.float32(1.), jnp.float32(2.))
  np.testing.assert_allclose([value, grad, reaped["s"]],
                             [2 * np.sin(1.), 2 * np.cos(1.), np.sin(1.)], rtol=1e-6)


def test_outputs_without_a_cotangent_are_dropped_from_the_recomputation():
  @partial(minijax.checkpoint, prevent_cse=(True, False))
  def g(x, y):
    return jnp.sin(x) * y, x > 0, jnp.cos(y)  # (a comparison has no transpose)

  f = lambda x, y: g(x, y)[0]
  for grad in (minijax.grad(f, (0, 1)), minijax.jit(minijax.grad(f, (0, 1)))):
    np.testing.assert_allclose(grad(1., 2.), [2 * np.cos(1.), np.sin(1.)], rtol=1e-6)
  eqn, = [e for e in minijax.make_jaxpr(minijax.grad(f))(1., 2.).eqns
          if e.primitive.name == "checkpoint"]
  assert eqn.params["prevent_cse"] == (True, False, True) and len(eqn.outvars) == 1
