"""Control flow: cond/switch, while_loop/fori_loop and scan, eager vs jit vs Python, under
transformations, their MHLO, token threading of ordered effects, and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from jaxlib.mlir.dialects import mhlo

import minijax
from minijax import lax
from minijax.core import effects as effects_lib
from minijax.core.primitive import Primitive
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet

f32 = np.float32
needs_convert = pytest.mark.skipif(not hasattr(lax, "convert_element_type"),
                                   reason="lax.convert_element_type has not landed")


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


@needs_convert
def test_cond_branch_output_mismatch_errors_name_both_functions():
  with pytest.raises(TypeError, match="true_fun and false_fun output must have identical types"):
    lax.cond(True, lambda x: x, lambda x: lax.convert_element_type(x, np.int32), f32(1))
  with pytest.raises(TypeError, match="true_fun and false_fun output must have same type structure"):
    lax.cond(True, lambda x: (x, x), lambda x: x, f32(1))
  with pytest.raises(TypeError, match="Pred must be a scalar"):
    lax.cond(np.ones(2, bool), lambda x: x, lambda x: x, f32(1))


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


@needs_convert
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


@needs_convert
def test_while_loop_carry_type_change_is_an_error():
  with pytest.raises(TypeError, match="body_fun output and input must have identical types"):
    lax.while_loop(lambda x: lax.lt(x, f32(3)),
                   lambda x: lax.convert_element_type(x, np.int32), f32(0))
  with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
    lax.while_loop(lambda x: x, lambda x: x, f32(0))


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


def test_scan_errors():
  with pytest.raises(ValueError, match="different leading axis sizes"):
    lax.scan(lambda c, x: (c, x), f32(0), (np.zeros(3, f32), np.zeros(4, f32)))
  with pytest.raises(ValueError, match="no leading axis"):
    lax.scan(lambda c, x: (c, x), f32(0), f32(1))
  with pytest.raises(TypeError, match="carry input and carry output must have identical types"):
    lax.scan(lambda c, x: (lax.broadcast(c, (2,)), x), f32(0), np.zeros(3, f32))


def test_scan_lowers_to_a_while_with_dynamic_slices():
  text = minijax.jit(lambda xs: lax.scan(lambda c, x: (lax.add(c, x), c), f32(0), xs)).lower(
      np.zeros(3, f32)).as_text()
  assert "mhlo.while" in text and "mhlo.dynamic_slice" in text
  assert "mhlo.dynamic_update_slice" in text


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
