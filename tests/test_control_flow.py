"""Control flow: cond/switch, while_loop/fori_loop and scan, eager vs jit vs Python, under
transformations, their MHLO, token threading of ordered effects, and their errors."""
from __future__ import annotations

import re

import numpy as np
import pytest
from jaxlib.mlir.dialects import mhlo

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.core import effects as effects_lib
from minijax.core.primitive import Primitive
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet

f32 = np.float32


def rng_array(shape, seed=0):
  return np.asarray(np.random.RandomState(seed).randn(*shape), f32)


def close(a, b, tol=1e-5):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- a test effect

class OrderedTestEffect(effects_lib.Effect):
  ordered = True


ordered_test_effect = OrderedTestEffect()
touch_p = Primitive("touch")


@touch_p.def_effectful_abstract_eval
def _touch_abstract_eval(x):
  return x, frozenset({ordered_test_effect})


def _touch_lowering(ctx, x):
  (token,) = ctx.tokens_in.tokens()
  new = mhlo.AfterAllOp([token]).result
  ctx.set_tokens_out(TokenSet.from_lists([ordered_test_effect], [new]))
  return x


mlir.register_lowering(touch_p, _touch_lowering)


def touch(x):
  """Identity with an ordered effect, lowered to a token passing through `after_all`."""
  return touch_p.bind(x)


# ----------------------------------------------------------------------------- cond / switch

def _cond_fn(p, x):
  return lax.cond(p, lambda x: lax.sin(x), lambda x: lax.cos(x), x)


@pytest.mark.parametrize("pred", [True, False])
def test_cond_eager_and_jit_match_python(pred):
  x = rng_array((3,))
  expected = np.sin(x) if pred else np.cos(x)
  close(_cond_fn(pred, x), expected)
  close(minijax.jit(_cond_fn)(pred, x), expected)


def test_cond_numeric_predicate_is_nonzero():
  x = f32(0.5)
  close(minijax.jit(_cond_fn)(np.int32(-2), x), np.sin(x))
  close(minijax.jit(_cond_fn)(f32(0.0), x), np.cos(x))


def test_cond_pytrees_and_closures():
  y = rng_array((2,), 1)

  def f(p, ops):
    a, b = ops["a"], ops["b"]
    return lax.cond(p, lambda a, b: (lax.add(a, y), {"k": b}),
                    lambda a, b: (lax.sub(a, y), {"k": lax.neg(b)}), a, b)

  a, b = rng_array((2,), 2), rng_array((), 3)
  for p in (True, False):
    out = minijax.jit(f)(p, {"a": a, "b": b})
    close(out[0], a + y if p else a - y)
    close(out[1]["k"], b if p else -b)


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 5])
def test_switch_clamps_index_like_lax(index):
  branches = [lambda x: lax.sin(x), lambda x: lax.cos(x), lambda x: lax.neg(x)]
  refs = [np.sin, np.cos, np.negative]
  x = rng_array((4,))
  expected = refs[min(max(index, 0), 2)](x)
  close(lax.switch(index, branches, x), expected)
  close(minijax.jit(lambda i, x: lax.switch(i, branches, x))(np.int32(index), x), expected)


def test_cond_jaxpr_prints_both_branches_indented():
  text = str(minijax.make_jaxpr(_cond_fn)(True, f32(1)))
  assert "cond[" in text and "branches=(" in text
  assert "sin" in text and "cos" in text


def test_cond_lowers_to_mhlo_if_and_switch_to_case():
  text = minijax.jit(_cond_fn).lower(True, f32(1)).as_text()
  assert "mhlo.if" in text
  branches = [lambda x: lax.sin(x), lambda x: lax.cos(x), lambda x: lax.neg(x)]
  text = minijax.jit(lambda i, x: lax.switch(i, branches, x)).lower(np.int32(0), f32(1)).as_text()
  assert "mhlo.case" in text


def test_cond_branch_output_mismatch_errors_name_both_functions():
  # JAX 0.10.2's texts
  with pytest.raises(TypeError, match=r"(?s)cond branches must have equal output types but "
                     r"they differ.*true_fun is <lambda> at .*The output of true_fun has type "
                     r"float32\[\] but the corresponding output of false_fun has type "
                     r"int32\[\], so the dtypes do not match"):
    lax.cond(True, lambda x: x, lambda x: lax.convert_element_type(x, np.int32), f32(1))
  with pytest.raises(TypeError, match=r"(?s)cond branch outputs must have the same pytree "
                     r"structure, but they differ.*true_fun output is a <class 'tuple'> but "
                     r"false_fun output is a pytree leaf, so their Python types differ"):
    lax.cond(True, lambda x: (x, x), lambda x: x, f32(1))
  with pytest.raises(TypeError, match=r"switch branches must have equal output types(?s:.*)"
                     r"The output of branch 0 at path \['a'\] has type float32\[1\] but the "
                     r"corresponding output of branch1 has type float32\[\], so the shapes"):
    lax.switch(1, [lambda _: dict(a=np.ones(1, f32)), lambda _: dict(a=f32(1))], 1.)
  with pytest.raises(TypeError, match=r"Pred must be a scalar, got \[ True  True\] of shape"):
    lax.cond(np.ones(2, bool), lambda x: x, lambda x: x, f32(1))
  with pytest.raises(TypeError, match=r"Pred must be a scalar, got foo of type <class 'str'>"):
    lax.cond("foo", lambda x: x, lambda x: x, f32(1))
  with pytest.raises(TypeError, match="Pred type must be either boolean or number, got <function"):
    lax.cond(lambda x: True, lambda x: x, lambda x: x, f32(1))
  with pytest.raises(TypeError, match=r"Branch index must be scalar, got \(1.0, 1.0\) of shape"):
    lax.switch((1., 1.), [lambda x: x, lambda x: x], f32(1))
  with pytest.raises(TypeError, match="Index type must be an integer, got foo."):
    lax.switch("foo", [lambda x: x, lambda x: x], f32(1))
  assert lax.cond(True, lambda x: x + 1, lambda x: x, operand=f32(1)) == 2


# ----------------------------------------------------------------------------- while / fori

def _count_to(limit):
  return lambda x: lax.lt(x[0], limit)


def _while_fn(x):
  def body(c):
    i, v = c
    return lax.add(i, np.int32(1)), lax.mul(v, 1.5)
  return lax.while_loop(lambda c: lax.lt(c[0], np.int32(5)), body, (np.int32(0), x))


def test_while_loop_eager_and_jit_match_python():
  x = rng_array((3,))
  expected = x * 1.5 ** 5
  i, v = _while_fn(x)
  assert int(i) == 5
  close(v, expected)
  close(minijax.jit(_while_fn)(x)[1], expected)


def test_while_loop_that_never_runs_returns_init():
  out = minijax.jit(lambda x: lax.while_loop(lambda v: lax.lt(v, f32(0)), lax.neg, x))(f32(3))
  close(out, 3.0)


def test_while_loop_closes_over_traced_values():
  def f(limit, step):
    return lax.while_loop(lambda v: lax.lt(v, limit), lambda v: lax.add(v, step), f32(0))
  close(minijax.jit(f)(f32(10), f32(3)), 12.0)


@pytest.mark.parametrize("lo,hi", [(0, 5), (2, 7), (3, 3), (5, 2)])
def test_fori_loop_static_and_traced_bounds_match_python(lo, hi):
  body = lambda i, x: lax.add(lax.mul(x, f32(2)), lax.convert_element_type(i, np.float32))
  expected = f32(1)
  for i in range(lo, hi):
    expected = expected * 2 + i
  close(lax.fori_loop(lo, hi, body, f32(1)), expected)
  close(minijax.jit(lambda x: lax.fori_loop(lo, hi, body, x))(f32(1)), expected)
  traced = minijax.jit(lambda lo, hi, x: lax.fori_loop(lo, hi, body, x))
  close(traced(np.int32(lo), np.int32(hi), f32(1)), expected)


def test_fori_loop_static_bounds_is_a_scan_and_traced_bounds_a_while():
  body = lambda i, x: lax.mul(x, f32(2))
  assert "scan[" in str(minijax.make_jaxpr(lambda x: lax.fori_loop(0, 3, body, x))(f32(1)))
  text = str(minijax.make_jaxpr(lambda n, x: lax.fori_loop(0, n, body, x))(np.int32(3), f32(1)))
  assert "while[" in text


def test_while_lowers_to_mhlo_while():
  text = minijax.jit(_while_fn).lower(f32(1)).as_text()
  assert "mhlo.while" in text


def test_while_loop_carry_type_change_is_an_error():
  # JAX 0.10.2's texts
  with pytest.raises(TypeError, match=r"(?s)while_loop body function carry input and carry "
                     r"output must have equal types, but they differ:\n\nThe input carry x has "
                     r"type float32\[\] but the corresponding output carry component has type "
                     r"int32\[\], so the dtypes do not match.*Revise the function"):
    lax.while_loop(lambda x: lax.lt(x, f32(3)),
                   lambda x: lax.convert_element_type(x, np.int32), f32(0))
  with pytest.raises(TypeError, match=re.escape(
      "while_loop body function carry input and carry output must have the same pytree "
      "structure, but they differ:\n\nThe input carry c is a pytree leaf but the "
      "corresponding component of the carry output is a <class 'tuple'>, so their Python "
      "types differ.")):
    lax.while_loop(lambda c: True, lambda c: (1., 1.), 0.)
  with pytest.raises(TypeError, match=re.escape(
      "The input carry component c[1] has type float32[] but the corresponding output carry "
      "component has type bool[], so the dtypes do not match.")):
    lax.while_loop(lambda c: True, lambda c: (True, True), (np.bool_(True), f32(0.)))
  with pytest.raises(TypeError, match=re.escape(
      "cond_fun must return a boolean scalar, but got output type(s) "
      "[ShapedArray(float32[])].")):
    lax.while_loop(lambda x: x, lambda x: x, f32(0))
  with pytest.raises(TypeError, match=re.escape(  # (a weak type is shown, as in JAX)
      "but got output type(s) [ShapedArray(float32[], weak_type=True)].")):
    lax.while_loop(lambda x: x, lambda x: x, 0.0)
  with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got pytree"):
    lax.while_loop(lambda c: (1., 1.), lambda c: c, 0.)


def test_weak_typed_init_is_promoted_when_the_body_makes_it_strong():
  out = minijax.jit(lambda: lax.fori_loop(0, 3, lambda i, x: lax.add(x, f32(1)), 0.0))()
  close(out, 3.0)


# ----------------------------------------------------------------------------- scan

def _scan_ref(f, init, xs, reverse=False):
  carry, ys = init, []
  order = range(len(xs))[::-1] if reverse else range(len(xs))
  for i in order:
    carry, y = f(carry, xs[i])
    ys.append(y)
  ys = ys[::-1] if reverse else ys
  return carry, np.stack(ys)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_eager_and_jit_match_python(reverse):
  xs = rng_array((5, 3))
  step = lambda c, x: (lax.add(lax.mul(c, 0.5), x), lax.sin(lax.add(c, x)))
  ref = lambda c, x: (c * 0.5 + x, np.sin(c + x))
  c_ref, ys_ref = _scan_ref(ref, np.zeros(3, f32), xs, reverse)
  for run in (lax.scan, minijax.jit(lax.scan, static_argnums=(0, 3, 4))):
    c, ys = run(step, np.zeros(3, f32), xs, None, reverse)
    close(c, c_ref)
    close(ys, ys_ref)


def test_scan_with_pytrees_length_and_no_xs():
  def step(carry, x):
    a, b = carry["a"], carry["b"]
    return {"a": lax.add(a, x[0]), "b": lax.mul(b, x[1])}, (a, [b])

  xs = (rng_array((4,)), rng_array((4, 2), 1))
  carry, (ys_a, [ys_b]) = minijax.jit(lambda c, xs: lax.scan(step, c, xs))(
      {"a": f32(0), "b": np.ones(2, f32)}, xs)
  close(carry["a"], xs[0].sum())
  close(carry["b"], xs[1].prod(0))
  close(ys_a, np.concatenate([[0], np.cumsum(xs[0])[:-1]]))
  assert ys_b.shape == (4, 2)
  c, ys = lax.scan(lambda c, _: (lax.add(c, f32(1)), c), f32(0), None, length=3)
  close(c, 3.0)
  close(ys, [0, 1, 2])


def test_scan_of_length_zero_returns_init_and_empty_ys():
  c, ys = minijax.jit(lambda xs: lax.scan(lambda c, x: (lax.add(c, x), x), f32(1), xs))(
      np.zeros((0, 2), f32)[:, 0])
  close(c, 1.0)
  assert ys.shape == (0,)


def test_lax_map_applies_a_function_to_each_slice():
  xs = rng_array((4, 3))
  close(lax.map(lax.sin, xs), np.sin(xs))
  out = minijax.jit(lambda xs: lax.map(lambda x: {"s": lax.sin(x), "c": lax.cos(x)}, xs))(xs)
  close(out["c"], np.cos(xs))


def test_scan_errors():
  with pytest.raises(ValueError, match="different leading axis sizes"):
    lax.scan(lambda c, x: (c, x), f32(0), (np.zeros(3, f32), np.zeros(4, f32)))
  with pytest.raises(ValueError, match="no leading axis"):
    lax.scan(lambda c, x: (c, x), f32(0), f32(1))
  with pytest.raises(TypeError, match=re.escape(
      "scan body function carry input and carry output must have equal types, but they "
      "differ:\n\nThe input carry c has type float32[] but the corresponding output carry "
      "component has type float32[2], so the shapes do not match.")):
    lax.scan(lambda c, x: (lax.broadcast(c, (2,)), x), f32(0), np.zeros(3, f32))
  with pytest.raises(TypeError, match=re.escape(
      "  * the input carry component x[0] is a <class 'dict'> with 1 child but the "
      "corresponding component of the carry output is a <class 'dict'> with 2 children, "
      "so the numbers of children do not match, with the symmetric difference of key sets: "
      "{'b'};\n")):
    lax.scan(lambda x, _: (({"a": x[0]["a"], "b": x[0]["a"]},) * 2, None),
             ({"a": np.int32(0)},) * 2, None, length=1)
  with pytest.raises(TypeError, match=re.escape(
      "  * the input carry component x[0] has type int32[] but the corresponding output "
      "carry component has type float32[], so the dtypes do not match;\n  * the input "
      "carry component x[1] has type int32[] but the corresponding output carry component "
      "has type float32[1,1], so the dtypes do not match, and the shapes do not match.")):
    lax.scan(lambda x, _: ((x[0].astype("float32"), x[1].astype("float32").reshape(1, 1),
                            x[2]), None), (np.int32(0),) * 3, None, length=1)
  with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
    lax.scan(lambda c, x: (c, x), f32(0), np.zeros(3, f32), unroll=-1)


def test_scan_lowers_to_a_while_with_dynamic_slices():
  text = minijax.jit(lambda xs: lax.scan(lambda c, x: (lax.add(c, x), c), f32(0), xs)).lower(
      np.zeros(3, f32)).as_text()
  assert "mhlo.while" in text and "mhlo.dynamic_slice" in text
  assert "mhlo.dynamic_update_slice" in text


def test_eager_control_flow_compiles_once_per_structure_and_uses_current_values():
  from minijax.staging import compiler
  xs = rng_array((4, 3))
  results, sizes = [], []
  for scale in (1.0, 2.0, 2.0):
    w = np.full(3, scale, f32)              # an array constant: an operand of the scan
    step = lambda c, x: (lax.add(c, lax.mul(x, w)), lax.mul(c, scale))  # a literal
    results.append(lax.scan(step, np.zeros(3, f32), xs))
    sizes.append(len(compiler._primitive_cache))
  for (c, ys), scale in zip(results, (1.0, 2.0, 2.0)):
    close(c, xs.sum(0) * scale)
    close(ys, np.concatenate([np.zeros((1, 3)), np.cumsum(xs, 0)[:-1]]) * scale ** 2)
  assert sizes[2] == sizes[1]


# ----------------------------------------------------------------------------- tokens

def test_tokens_thread_through_cond_branches():
  def f(p, x):
    return lax.cond(p, lambda x: touch(lax.sin(x)), lambda x: lax.cos(x), x)

  jaxpr = minijax.make_jaxpr(f)(True, f32(1))
  assert ordered_test_effect in jaxpr.effects
  text = minijax.jit(f).lower(True, f32(1)).as_text()
  assert "mhlo.if" in text
  assert "(tensor<i1>) -> (!mhlo.token, tensor<f32>)" in text
  assert "mhlo.after_all" in text
  close(minijax.jit(f)(True, f32(1)), np.sin(1))
  close(minijax.jit(f)(False, f32(1)), np.cos(1))


def test_tokens_thread_through_while_body_and_condition():
  def f(x):
    return lax.while_loop(lambda v: lax.lt(touch(v), f32(10)),
                          lambda v: touch(lax.add(v, f32(3))), x)

  text = minijax.jit(f).lower(f32(0)).as_text()
  while_line = next(l for l in text.splitlines() if "mhlo.while" in l)
  assert "!mhlo.token" in while_line
  # The condition runs once before the loop and again inside the body, after the body.
  assert text.count("mhlo.after_all") == 3
  close(minijax.jit(f)(f32(0)), 12.0)
  close(f(f32(0)), 12.0)


def test_tokens_thread_through_while_body_only_when_the_condition_is_pure():
  f = lambda x: lax.while_loop(lambda v: lax.lt(v, f32(10)), lambda v: touch(lax.add(v, f32(3))), x)
  text = minijax.jit(f).lower(f32(0)).as_text()
  assert text.count("mhlo.after_all") == 1
  close(minijax.jit(f)(f32(0)), 12.0)


def test_tokens_thread_through_scan_and_switch():
  branches = [lambda x: touch(x), lambda x: lax.neg(x), lambda x: touch(lax.sin(x))]

  def f(xs):
    return lax.scan(lambda c, x: (lax.add(c, x), lax.switch(np.int32(2), branches, x)), f32(0), xs)

  xs = rng_array((4,))
  text = minijax.jit(f).lower(xs).as_text()
  assert "mhlo.case" in text and "mhlo.while" in text
  c, ys = minijax.jit(f)(xs)
  close(c, xs.sum())
  close(ys, np.sin(xs))
  assert ordered_test_effect in minijax.make_jaxpr(f)(xs).effects


# ----------------------------------------------------------------------------- transformations

def _numeric_grad(f, x, eps=1e-3):
  x = np.asarray(x, np.float64)
  g = np.zeros_like(x)
  for i in np.ndindex(x.shape):
    d = np.zeros_like(x)
    d[i] = eps
    g[i] = (float(f(np.asarray(x + d, f32))) - float(f(np.asarray(x - d, f32)))) / (2 * eps)
  return g


def _cond_loss(x):
  y = lax.cond(lax.lt(lax.reduce_sum(x, (0,)), f32(0)),
               lambda x: lax.mul(lax.sin(x), x), lambda x: lax.cos(lax.mul(x, x)), x)
  return lax.reduce_sum(y, (0,))


def _switch_loss(x):
  i = lax.convert_element_type(lax.reduce_sum(x, (0,)), np.int32)
  y = lax.switch(i, [lax.sin, lambda x: lax.mul(x, x), lax.exp], x)
  return lax.reduce_sum(y, (0,))


def _scan_loss(x):
  w = lax.mul(x, 0.5)
  def step(c, xi):
    c = lax.add(lax.mul(lax.sin(c), w), xi)
    return c, lax.mul(c, c)
  c, ys = lax.scan(step, x, lax.mul(lax.broadcast(x, (4,)), 0.3))
  return lax.add(lax.reduce_sum(c, (0,)), lax.reduce_sum(ys, (0, 1)))


def _reverse_scan_loss(x):
  c, ys = lax.scan(lambda c, xi: (lax.mul(c, xi), lax.sin(c)), x,
                   lax.broadcast(x, (3,)), reverse=True)
  return lax.add(lax.reduce_sum(c, (0,)), lax.reduce_sum(ys, (0, 1)))


def _fori_loss(x):
  def body(i, v):
    return lax.mul(lax.sin(v), lax.broadcast(lax.convert_element_type(i, np.float32), (3,)))
  y = lax.fori_loop(1, 4, body, x)
  return lax.reduce_sum(y, (0,))


LOSSES = [_cond_loss, _switch_loss, _scan_loss, _reverse_scan_loss, _fori_loss]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("sign", [1, -1])
def test_grad_through_control_flow_matches_finite_differences(loss, sign):
  x = np.asarray([0.3, -0.2, 0.5], f32) * sign
  expected = _numeric_grad(loss, x)
  close(minijax.grad(loss)(x), expected, 2e-2)
  close(minijax.jit(minijax.grad(loss))(x), expected, 2e-2)
  close(minijax.grad(minijax.jit(loss))(x), expected, 2e-2)
  _, t = minijax.jvp(loss, (x,), (np.ones(3, f32),))
  close(t, expected.sum(), 2e-2)


@pytest.mark.parametrize("loss", [_cond_loss, _scan_loss], ids=lambda f: f.__name__)
def test_second_order_and_vmap_of_grad_through_control_flow(loss):
  x = np.asarray([0.3, -0.2, 0.5], f32)
  g = minijax.jit(minijax.grad(loss))
  hess = np.stack([_numeric_grad(lambda x: np.asarray(g(x))[i], x) for i in range(3)])
  close(minijax.jacfwd(g)(x), hess, 5e-2)
  close(minijax.hessian(loss)(x), hess, 5e-2)
  close(minijax.jacrev(g)(x), hess, 5e-2)
  xs = np.stack([x, -x])
  close(minijax.vmap(g)(xs), np.stack([g(x), g(-x)]), 1e-5)


def test_grad_of_scan_computes_loop_invariant_residuals_once():
  w = rng_array((3, 3))

  def f(w, x):
    c, _ = lax.scan(lambda c, _: (lax.sin(lax.dot(c, lax.mul(w, 0.3))), None), x, None,
                    length=50)
    return lax.reduce_sum(c, (0,))

  text = str(minijax.make_jaxpr(minijax.grad(f))(w, np.ones(3, f32)))
  assert "f32[50,3,3]" not in text and "f32[50,3]" in text
  expected = _numeric_grad(lambda w: f(w, np.ones(3, f32)), w)
  close(minijax.jit(minijax.grad(f))(w, np.ones(3, f32)), expected, 2e-2)


def test_vjp_dot_product_through_scan_and_cond():
  def f(c0, x):
    c, ys = lax.scan(lambda c, xi: (lax.add(lax.sin(c), xi), lax.mul(c, xi)), c0, x)
    return lax.cond(lax.gt(lax.reduce_sum(c, (0,)), f32(0)), lax.sin, lax.cos, ys)
  c0, x = rng_array((2,), 3), rng_array((3, 2))
  u0, u, v = rng_array((2,), 4), rng_array((3, 2), 1), rng_array((3, 2), 2)
  _, ju = minijax.jvp(f, (c0, x), (u0, u))
  _, vjp = minijax.vjp(f, c0, x)
  jtv0, jtv = vjp(v)
  close(np.sum(np.asarray(ju) * v), np.sum(u * np.asarray(jtv)) + np.sum(u0 * np.asarray(jtv0)),
        1e-4)


def test_while_loop_forward_mode_works_and_reverse_mode_raises_jax_error():
  def f(n, x):
    return lax.fori_loop(0, n, lambda i, v: lax.mul(lax.sin(v), 2.0), x)
  x, expected = f32(0.5), f32(0.5)
  d = 1.0
  for _ in range(4):
    d *= 2 * np.cos(expected)
    expected = 2 * np.sin(expected)
  p, t = minijax.jvp(lambda x: f(np.int32(4), x), (x,), (f32(1),))
  close(p, expected)
  close(t, d)
  p, t = minijax.jit(lambda n, x: minijax.jvp(lambda x: f(n, x), (x,), (f32(1),)))(np.int32(4), x)
  close(t, d)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.whi"):
    minijax.jit(lambda n, x: minijax.grad(lambda x: f(n, x))(x))(np.int32(4), x)


def test_axis_index_of_a_vmapped_axis_inside_control_flow_with_unbatched_operands():
  # JAX 0.10.2 (lax_control_flow_test testWhileLoopAxisIndexBatched): a loop, jit, cond or
  # scan whose body names the vmapped axis is batched even when none of its operands is
  def loop(x):
    return lax.while_loop(lambda x: x < lax.axis_index("i"), lambda x: x + 2, x)
  zeros = np.zeros(4, np.int32)
  expected = [0, 2, 2, 4]
  for f in (loop, minijax.jit(loop)):
    assert np.asarray(minijax.vmap(f, axis_name="i")(zeros)).tolist() == expected
    out = minijax.vmap(lambda _, x: f(x), axis_name="i", in_axes=(0, None))(zeros, 0)
    assert np.asarray(out).tolist() == expected
  picked = minijax.vmap(lambda _, x: lax.cond(x == 0, lambda: lax.axis_index("i"), lambda: 0),
                        axis_name="i", in_axes=(0, None))(zeros, 0)
  assert np.asarray(picked).tolist() == [0, 1, 2, 3]
  counted = minijax.vmap(
      lambda _, x: lax.scan(lambda c, _: (c + lax.psum(1.0, "i"), None), x, None, length=2)[0],
      axis_name="i", in_axes=(0, None))(zeros, 0.0)
  assert np.asarray(counted).tolist() == [8.0] * 4
  no_operands = minijax.vmap(lambda _: minijax.jit(lambda: lax.axis_index("i"))(),
                             axis_name="i")(np.zeros(3))
  assert np.asarray(no_operands).tolist() == [0, 1, 2]


def test_vmap_of_cond_with_batched_and_unbatched_predicates():
  xs = rng_array((4, 3))
  ps = np.array([True, False, True, False])
  expected = np.where(ps[:, None], np.sin(xs), np.cos(xs))
  close(minijax.vmap(_cond_fn)(ps, xs), expected)
  close(minijax.jit(minijax.vmap(_cond_fn))(ps, xs), expected)
  close(minijax.vmap(_cond_fn, (None, 0))(True, xs), np.sin(xs))
  close(minijax.vmap(_cond_fn, (None, 1), 1)(False, xs.T), np.cos(xs).T)
  idx = np.array([0, 2, 1, 7], np.int32)
  branches = [lax.sin, lax.cos, lax.neg]
  expected = np.stack([[np.sin, np.cos, np.negative][min(i, 2)](x) for i, x in zip(idx, xs)])
  close(minijax.vmap(lambda i, x: lax.switch(i, branches, x))(idx, xs), expected)


def test_vmap_of_while_with_a_batched_predicate_runs_until_every_lane_is_done():
  def f(limit, x):
    return lax.while_loop(lambda v: lax.lt(v, limit), lambda v: lax.add(v, 1.5), x)
  limits = np.array([1., 5., 10., 0.], f32)
  expected = []
  for limit in limits:
    v = f32(0)
    while v < limit:
      v += 1.5
    expected.append(v)
  close(minijax.vmap(f, (0, None))(limits, f32(0)), expected)
  close(minijax.jit(minijax.vmap(f))(limits, np.zeros(4, f32)), expected)
  close(minijax.vmap(f, (None, 0))(f32(4), np.array([0., 3., 5.], f32)), [4.5, 4.5, 5.])


def test_forward_mode_and_vmap_compose_through_while_with_a_batched_predicate():
  def w(x):
    body = lambda v: (lax.add(v[0], lax.exp(lax.mul(v[1], 0.1))), lax.sin(v[1]))
    return lax.while_loop(lambda v: lax.lt(v[0], f32(5)), body, (x, x))[1]

  xs = np.array([0.5, 1., 3., 4.9], f32)
  jvp = lambda x: minijax.jvp(w, (x,), (f32(1),))
  expected = np.array([jvp(x) for x in xs], np.float64).T
  for out in (minijax.vmap(jvp)(xs), minijax.jit(minijax.vmap(jvp))(xs),
              minijax.jvp(minijax.vmap(w), (xs,), (np.ones(4, f32),))):
    close(out[0], expected[0])
    close(out[1], expected[1])


def test_vmap_of_scan_over_batched_xs_carry_and_consts():
  def f(w, c, xs):
    return lax.scan(lambda c, x: (lax.add(lax.mul(c, w), x), lax.sin(c)), c, xs)
  w, c, xs = rng_array((2, 3)), rng_array((2, 3), 1), rng_array((2, 5, 3), 2)
  for in_axes in [(None, None, 0), (0, None, None), (None, 0, None), (0, 0, 0)]:
    args = [a if ax == 0 else a[0] for a, ax in zip((w, c, xs), in_axes)]
    out_c, out_ys = minijax.vmap(f, in_axes)(*args)
    for b in range(2):
      ref_c, ref_ys = f(*[a[b] if ax == 0 else a for a, ax in zip(args, in_axes)])
      close(np.asarray(out_c)[b], ref_c)
      close(np.asarray(out_ys)[b], ref_ys)


# ----------------------------------------------------------------------------- taps

def _tapper(log, name):
  def tap(x, transforms):
    log.append((name, np.asarray(x).tolist(), tuple(t if isinstance(t, str) else t[0]
                                                   for t in transforms)))
  return tap


def test_taps_inside_while_cond_and_body_arrive_in_program_order():
  hcb = pytest.importorskip("minijax.experimental.host_callback")
  log = []
  f = lambda x: lax.while_loop(lambda v: lax.lt(hcb.id_tap(_tapper(log, "cond"), v), f32(2)),
                               lambda v: hcb.id_tap(_tapper(log, "body"), lax.add(v, f32(1))), x)
  expected = [("cond", 0.0, ()), ("body", 1.0, ()), ("cond", 1.0, ()), ("body", 2.0, ()),
              ("cond", 2.0, ())]
  for run in (f, minijax.jit(f)):
    close(run(f32(0)), 2.0)
    hcb.barrier_wait()
    assert log == expected
    log.clear()


def test_taps_inside_cond_fire_only_for_the_branch_taken():
  hcb = pytest.importorskip("minijax.experimental.host_callback")
  log = []
  f = minijax.jit(lambda p, x: lax.cond(p, lambda x: hcb.id_tap(_tapper(log, "T"), x),
                                        lambda x: hcb.id_tap(_tapper(log, "F"), x), x))
  f(True, f32(1))
  f(False, f32(2))
  hcb.barrier_wait()
  assert log == [("T", 1.0, ()), ("F", 2.0, ())]


def test_grad_of_scan_keeps_every_tap():
  hcb = pytest.importorskip("minijax.experimental.host_callback")
  log = []

  def f(x):
    def step(c, xi):
      c = hcb.id_tap(_tapper(log, "c"), lax.mul(lax.sin(c), xi))
      return c, c
    return lax.scan(step, x, np.arange(1, 4, dtype=f32))[0]

  for run in (minijax.grad(f), minijax.jit(minijax.grad(f))):
    run(f32(0.5))
    hcb.barrier_wait()
    assert [t for _, _, t in log] == [()] * 3 + [("jvp", "transpose")] * 3
    close([v for _, v, _ in log[:3]], [np.sin(0.5), np.sin(np.sin(0.5)) * 2,
                                       np.sin(np.sin(np.sin(0.5)) * 2) * 3])
    log.clear()


def test_scan_unroll_runs_several_iterations_per_trip_with_the_same_results():
  f = lambda c, x: (c * 2 + x, c + x)
  xs = np.arange(7, dtype=f32)
  want = lax.scan(f, f32(1), xs)
  sizes = {}
  for unroll, loops in ((1, True), (2, True), (3, True), (7, False), (0, False), (True, False),
                        (False, True), (10, False)):
    g = minijax.jit(lambda c, xs: lax.scan(f, c, xs, unroll=unroll, reverse=unroll == 3))
    got = g(f32(1), xs)
    expected = lax.scan(f, f32(1), xs, reverse=True) if unroll == 3 else want
    np.testing.assert_allclose(got[0], expected[0])
    np.testing.assert_allclose(got[1], expected[1])
    text = g.lower(f32(1), xs).as_text()
    sizes[repr(unroll)] = len(text)
    assert ("mhlo.while" in text) == loops, unroll
  assert sizes["1"] < sizes["2"] < sizes["True"]
  assert "unroll=2" in str(minijax.make_jaxpr(lambda c: lax.scan(f, c, xs, unroll=2))(f32(1)))
  with pytest.raises(TypeError, match="The `unroll` argument to `scan` expects a concrete"):
    minijax.jit(lambda n, x: lax.scan(lambda c, z: (c, z), x, (), 10, unroll=n))(3, f32(1))


def test_fori_loop_unroll_and_bound_types_as_jax():
  body = lambda i, c: c + 1
  init = f32(10)
  assert lax.fori_loop(np.int16(0), 10, body, init, unroll=3) == 20
  assert lax.fori_loop(0, np.int16(10), body, init, unroll=True) == 20
  for upper in (0, -1):
    assert minijax.jit(lambda: lax.fori_loop(0, upper, body, init, unroll=True))() == 10
  with pytest.raises(ValueError, match="Can only use `unroll` in `fori_loop` if the loop "
                     "bounds are statically known."):
    minijax.jit(lambda u: lax.fori_loop(np.int16(0), u, body, init, unroll=3))(10)
  with pytest.raises(TypeError, match="lower and upper arguments to fori_loop must have "
                     "equal types, got int16 and int32"):
    lax.fori_loop(np.int16(0), np.int32(10), body, init)
  assert minijax.jit(lambda u: lax.fori_loop(0, u, body, init))(5) == 15


def test_platform_dependent_runs_and_lowers_only_the_cpu_branch():
  x = np.arange(3, dtype=f32)
  f = lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)
  np.testing.assert_allclose(f(x), np.sin(x), rtol=1e-6)
  np.testing.assert_allclose(minijax.vmap(f)(x), np.sin(x), rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(lambda x: f(x).sum())(x), np.cos(x), rtol=1e-6)
  text = minijax.jit(f).lower(x).as_text()
  assert "sine" in text and "cosine" not in text
  g = lambda x: lax.platform_dependent(x, tpu=jnp.cos, default=jnp.sin)
  np.testing.assert_allclose(minijax.jit(g)(x), np.sin(x), rtol=1e-6)
  assert lax.platform_dependent(cpu=lambda: 1.0, default=lambda: 2.0) == 1.0
  with pytest.raises(NotImplementedError, match="translation rule .* not found for platform"):
    lax.platform_dependent(3., tpu=lambda x: x + 2.)
  with pytest.raises(ValueError, match="Use 'cuda' or 'rocm'"):
    lax.platform_dependent(3., gpu=lambda x: x)


def test_cond_outputs_passed_through_by_every_branch_are_the_operands_themselves():
  def f(x, y):
    return lax.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y)

  x, y = jnp.arange(3), jnp.array(3.0)
  x2, y2 = minijax.vmap(f, in_axes=(0, None), out_axes=(0, None))(x, y)  # y stays unbatched
  np.testing.assert_array_equal(x2, [0, 2, 4])
  assert y2 is y
  jaxpr = minijax.make_jaxpr(f)(1, 2.0)
  (cond_eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "cond"]
  assert len(cond_eqn.outvars) == 1
  with pytest.raises(TypeError, match=re.escape("scan body output must be a pair, got "
                                                "float32[].")):
    lax.scan(lambda c, x: np.float32(0.), 0, jnp.arange(5.))


def test_grad_of_a_vmapped_cond_ignores_the_branch_not_taken():
  eps = 1e-3

  def safe_sqrt(x):
    return lax.cond(x < eps, lambda _: eps, lambda _: jnp.sqrt(x), ())

  g = minijax.grad(lambda x: minijax.vmap(safe_sqrt)(x).sum())(np.array([0., 0., 4.], f32))
  np.testing.assert_allclose(g, [0, 0, 0.25])
  h = minijax.grad(lambda x: minijax.vmap(
      lambda v: lax.switch(jnp.int32(v > 1) + jnp.int32(v > 3),
                           [lambda v: v * 0, jnp.log, jnp.sqrt], v))(x).sum())
  np.testing.assert_allclose(h(np.array([0., 2., 4.], f32)), [0, 0.5, 0.25])


def test_weakly_typed_initial_carry_takes_the_bodys_dtype():
  # As in JAX 0.10.2 (optax's Hungarian algorithm starts a float carry at Python 0): the
  # carry is promoted to the result type and the body traced again; the body runs twice.
  traces = []

  def body(c):
    traces.append(1)
    i, m = c
    return i + 1, jnp.float32(0.5) + m
  i, m = lax.while_loop(lambda c: c[0] < 3, body, (0, 0))
  assert (i.dtype, i.weak_type, int(i)) == (np.int32, True, 3)
  assert (m.dtype, m.weak_type, float(m)) == (np.float32, False, 1.5) and len(traces) == 2
  i, m = minijax.jit(lambda: lax.while_loop(lambda c: c[0] < 3, body, (0, 0)))()
  assert m.dtype == np.float32 and float(m) == 1.5
  c, _ = lax.scan(lambda c, x: (c + jnp.float32(x), None), 0, jnp.arange(3.0))
  assert (c.dtype, c.weak_type, float(c)) == (np.float32, False, 3.0)
  g = minijax.grad(lambda x: lax.scan(lambda c, y: (c + x * y, None), 0, jnp.arange(3.0))[0])
  assert float(g(2.0)) == 3.0
  # a strong carry that changes dtype is still an error
  with pytest.raises(TypeError, match="carry"):
    lax.while_loop(lambda c: c < 3, lambda c: c + jnp.float32(1), jnp.int32(0))


def test_a_pmap_in_an_eager_loop_or_branch_compiles_over_its_devices():
  # (JAX 0.10.2's lax_control_flow_test test_while_loop_of_pmap*, on the devices there are)
  n = minijax.device_count()
  total = minijax.pmap(lambda v: lax.psum(jnp.sin(v), "i"), axis_name="i")
  out = lax.fori_loop(0, 3, lambda i, v: total(v) + v, jnp.ones(n))
  want = np.ones(n, np.float32)
  for _ in range(3):
    want = np.sin(want).sum() + want
  np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
  ident = minijax.pmap(lambda v: v * 2.0)
  np.testing.assert_array_equal(np.asarray(lax.cond(True, ident, ident, jnp.ones((n, 2)))),
                                np.full((n, 2), 2.0))
  # more slices than devices: each block keeps two, and the mapped axis cannot be squeezed
  with pytest.raises(ValueError, match=re.escape(
      "cannot select an axis to squeeze out which has size not equal to one, got "
      "shape=(2,) and dimensions=(0,)")):
    lax.fori_loop(0, 3, lambda i, v: total(v) + v, jnp.ones(2 * n))


def test_map_with_batch_size_vmaps_batches_and_the_remainder():
  xs = {"p": jnp.arange(7.0), "q": jnp.ones((7, 3))}
  calls = []

  def f(x):
    calls.append(np.shape(x["p"]))
    return {"a": x["p"] * 2, "b": x["q"].sum()}

  out = lax.map(f, xs, batch_size=3)
  assert np.asarray(out["a"]).tolist() == [0, 2, 4, 6, 8, 10, 12]
  assert np.asarray(out["b"]).tolist() == [3.0] * 7
  assert calls == [(), ()]  # traced once per batch shape (3 in the scan, then 1), vmapped
  text = str(minijax.make_jaxpr(lambda v: lax.map(jnp.sin, v, batch_size=3))(jnp.arange(7.0)))
  assert "scan" in text and "length=2" in text
  np.testing.assert_allclose(minijax.grad(lambda v: lax.map(jnp.sin, v, batch_size=3).sum())(
      jnp.arange(7.0)), np.cos(np.arange(7.0)), rtol=1e-6)
  with pytest.raises(ValueError, match="batch_size must be a positive int"):
    lax.map(f, xs, batch_size=0)
