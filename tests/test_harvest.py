"""Harvest (sow / reap / plant / nest) with Oryx 0.2.9's semantics, through jit, vmap, grad,
scan, while_loop and cond; its errors name the tag or the name at fault; a sow nobody
harvests compiles to the program without it."""
from __future__ import annotations

import re

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.effects import call_and_reap, harvest, nest, plant, reap, sow


def f(x):
  y = sow(x + 1., tag="t", name="y")
  return y * 2.


def scanned(xs):
  def body(c, x):
    c = sow(c + x, tag="t", name="c", mode="clobber")
    y = sow(c * 2., tag="t", name="a", mode="append")
    return c, y
  return lax.scan(body, 0., xs)


def test_reap_returns_the_sown_values_by_name():
  assert reap(f, tag="t")(jnp.float32(1.)) == {"y": 2.}
  out, reaped = call_and_reap(f, tag="t")(jnp.float32(1.))
  assert float(out) == 4. and float(reaped["y"]) == 2.


def test_a_sow_of_another_tag_is_not_reaped():
  assert reap(f, tag="other")(jnp.float32(1.)) == {}


def test_plant_replaces_the_sown_value_and_harvest_does_not_reap_planted_names():
  assert float(plant(f, tag="t")({"y": 10.}, jnp.float32(1.))) == 20.
  out, reaped = harvest(f, tag="t")({"y": 10.}, jnp.float32(1.))
  assert float(out) == 20. and reaped == {}
  out, reaped = harvest(f, tag="t")({}, jnp.float32(1.))
  assert float(out) == 4. and float(reaped["y"]) == 2.


def test_allowlist_and_blocklist_choose_the_names_reaped():
  def g(x):
    return sow(x, tag="t", name="a") + sow(x * 2., tag="t", name="b")
  assert list(reap(g, tag="t", allowlist=["a"])(1.)) == ["a"]
  assert list(reap(g, tag="t", blocklist=["a"])(1.)) == ["b"]


def test_reaping_works_inside_and_around_jit_and_nested_jit():
  x = jnp.float32(1.)
  assert float(minijax.jit(reap(f, tag="t"))(x)["y"]) == 2.
  assert float(reap(minijax.jit(f), tag="t")(x)["y"]) == 2.
  nested = minijax.jit(lambda x: minijax.jit(f)(x) + 1.)
  out, reaped = call_and_reap(nested, tag="t")(x)
  assert float(out) == 5. and float(reaped["y"]) == 2.
  assert float(plant(nested, tag="t")({"y": jnp.float32(3.)}, x)) == 7.


def test_scan_stacks_appended_values_and_keeps_the_last_clobbered_one():
  xs = jnp.arange(4.)
  (c, ys), reaped = call_and_reap(scanned, tag="t")(xs)
  np.testing.assert_allclose(reaped["a"], [0., 2., 6., 12.])
  assert float(reaped["c"]) == 6.
  (_, _), jitted = minijax.jit(call_and_reap(scanned, tag="t"))(xs)
  np.testing.assert_allclose(jitted["a"], reaped["a"])
  assert float(jitted["c"]) == 6.


def test_plant_in_a_scan_gives_each_iteration_its_slice_of_an_appended_name():
  xs = jnp.arange(4.)
  _, ys = plant(scanned, tag="t")({"a": jnp.array([5., 6., 7., 8.])}, xs)
  np.testing.assert_allclose(ys, [5., 6., 7., 8.])
  (c, ys) = plant(scanned, tag="t")({"c": jnp.float32(1.)}, xs)
  np.testing.assert_allclose(ys, [2., 2., 2., 2.])
  assert float(c) == 1.


def test_nested_scans_stack_per_level():
  def inner(c, x):
    return c, sow(x * c, tag="t", name="v", mode="append")

  def outer(c, x):
    _, ys = lax.scan(inner, c, x)
    return c + 1., ys
  xs = jnp.ones((2, 3))
  reaped = reap(lambda xs: lax.scan(outer, 1., xs), tag="t")(xs)
  np.testing.assert_allclose(reaped["v"], [[1., 1., 1.], [2., 2., 2.]])
  planted = plant(lambda xs: lax.scan(outer, 1., xs), tag="t")(
      {"v": jnp.arange(6.).reshape(2, 3)}, xs)
  np.testing.assert_allclose(planted[1], np.arange(6.).reshape(2, 3))


def test_strict_mode_inside_scan_is_an_error_naming_the_sow():
  def body(c, x):
    return sow(c + x, tag="t", name="z"), x
  with pytest.raises(ValueError, match="Cannot use strict mode for 'z' inside `scan`."):
    reap(lambda xs: lax.scan(body, 0., xs), tag="t")(jnp.arange(3.))


def test_while_loop_keeps_the_last_clobbered_value_and_rejects_other_modes():
  def loop(x, mode):
    def body(c):
      i, v = c
      v = sow(v * 2., tag="t", name="v", mode=mode)
      return i + 1, v
    return lax.while_loop(lambda c: c[0] < 3, body, (0, x))
  out, reaped = call_and_reap(lambda x: loop(x, "clobber"), tag="t")(jnp.float32(1.))
  assert float(reaped["v"]) == 8. and float(out[1]) == 8.
  assert float(plant(lambda x: loop(x, "clobber"), tag="t")({"v": 5.}, 1.)[1]) == 5.
  for mode in ("strict", "append"):
    with pytest.raises(ValueError, match="Must use clobber or cond_clobber mode for 'v' "
                                         "inside of a `while_loop`."):
      reap(lambda x: loop(x, mode), tag="t")(jnp.float32(1.))


def test_cond_reaps_the_sow_of_the_branch_taken():
  def g(p, x):
    return lax.cond(p, lambda x: sow(x + 1., tag="t", name="b"),
                    lambda x: sow(x - 1., tag="t", name="b"), x)
  assert float(reap(g, tag="t")(True, jnp.float32(1.))["b"]) == 2.
  assert float(reap(g, tag="t")(False, jnp.float32(1.))["b"]) == 0.
  assert float(plant(g, tag="t")({"b": 9.}, False, jnp.float32(1.))) == 9.
  assert float(minijax.jit(reap(g, tag="t"))(False, jnp.float32(1.))["b"]) == 0.


@pytest.mark.parametrize("false_fun, message", [
    (lambda x: x, "Mismatching number of `sow`s between branches."),
    (lambda x: sow(x, tag="t", name="c"), "Missing sow in branch: 'b'."),
    (lambda x: sow(jnp.ones(2), tag="t", name="b") [0], "Mismatched shape between branches: 'b'."),
])
def test_branches_that_sow_differently_are_errors_naming_the_sow(false_fun, message):
  g = lambda p, x: lax.cond(p, lambda x: sow(x + 1., tag="t", name="b"), false_fun, x)
  with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
    reap(g, tag="t")(True, jnp.float32(1.))


def test_a_strict_name_sown_twice_is_an_error_and_clobber_keeps_the_last():
  def twice(x, mode):
    return sow(x, tag="t", name="x", mode=mode) + sow(x * 3., tag="t", name="x", mode=mode)
  with pytest.raises(ValueError, match="Variable has already been reaped: x"):
    reap(lambda x: twice(x, "strict"), tag="t")(jnp.float32(1.))
  with pytest.raises(ValueError, match="Variable has already been planted: x"):
    plant(lambda x: twice(x, "strict"), tag="t")({"x": 1.}, jnp.float32(1.))
  assert float(reap(lambda x: twice(x, "clobber"), tag="t")(jnp.float32(1.))["x"]) == 3.


def test_an_unknown_mode_is_an_error_naming_the_mode_the_name_and_the_tag():
  with pytest.raises(ValueError, match="Invalid mode: 'sometimes' for sow 'x' of tag 't'"):
    sow(1., tag="t", name="x", mode="sometimes")


def test_a_planted_value_of_the_wrong_shape_is_an_error_naming_the_sow():
  with pytest.raises(ValueError, match="planted value for 'y' \\(tag 't'\\) has shape"):
    plant(f, tag="t")({"y": jnp.ones(3)}, jnp.float32(1.))


def test_vmap_outside_or_inside_reap_stacks_along_the_mapped_axis():
  xs = jnp.arange(3.)
  np.testing.assert_allclose(reap(minijax.vmap(f), tag="t")(xs)["y"], [1., 2., 3.])
  np.testing.assert_allclose(minijax.vmap(reap(f, tag="t"))(xs)["y"], [1., 2., 3.])
  np.testing.assert_allclose(minijax.vmap(lambda x: plant(f, tag="t")({"y": x}, x))(xs),
                             [0., 2., 4.])


def test_grad_of_a_harvested_function_and_reaping_the_primal_of_a_gradient():
  g = minijax.grad(lambda x: call_and_reap(f, tag="t")(x)[0])
  assert float(g(jnp.float32(1.))) == 2.
  # A planted value is a constant: the gradient does not flow through the sow.
  assert float(minijax.grad(lambda x: plant(f, tag="t")({"y": 3.}, x) + x)(1.)) == 1.
  assert float(reap(minijax.grad(f), tag="t")(jnp.float32(1.))["y"]) == 2.


def test_nest_puts_the_names_under_its_scope():
  g = lambda x: nest(f, scope="a")(x) + nest(f, scope="b")(x)
  reaped = reap(g, tag="t")(jnp.float32(1.))
  assert {k: float(v["y"]) for k, v in reaped.items()} == {"a": 2., "b": 2.}
  assert float(plant(g, tag="t")({"a": {"y": 0.}}, jnp.float32(1.))) == 4.
  jitted = reap(minijax.jit(lambda x: nest(minijax.jit(f), scope="s")(x)), tag="t")
  assert float(jitted(jnp.float32(1.))["s"]["y"]) == 2.


def _computations(hlo: str) -> str:
  """The optimized HLO's computations, without the source locations (which differ)."""
  body = hlo[hlo.index("\n%"):]
  return re.sub(r",? metadata=\{[^}]*\}", "", body)


def test_a_sow_nobody_harvests_is_the_identity_and_compiles_to_the_same_program():
  def with_sows(x):
    def body(c, x):
      c = sow(c * x, tag="t", name="c", mode="clobber")
      return c, sow(jnp.sin(c), tag="t", name="s", mode="append")
    return lax.scan(body, 1., sow(x, tag="t", name="x"))

  def without(x):
    def body(c, x):
      c = c * x
      return c, jnp.sin(c)
    return lax.scan(body, 1., x)

  x = jnp.linspace(0.5, 1.5, 8)
  texts = []
  for fun in (with_sows, without):
    fun.__name__ = "step"
    compiled = minijax.jit(fun).lower(x).compile()
    texts.append(_computations(compiled.as_text()))
    np.testing.assert_array_equal(compiled(x)[1], without(x)[1])
  assert texts[0] == texts[1]


def test_reaping_from_a_jitted_function_reuses_its_compiled_program_when_it_has_no_sows():
  plain = minijax.jit(lambda x: x * 2.)
  assert reap(plain, tag="t")(jnp.float32(1.)) == {}
  assert float(reap(lambda x: plain(x) + f(x), tag="t")(jnp.float32(1.))["y"]) == 2.


def test_reaping_from_a_jitted_function_again_reuses_its_compiled_program(caplog):
  from tests.conftest import compiles
  g = minijax.jit(lambda x: f(x) * 3.)
  x, x2 = jnp.float32(1.), jnp.float32(2.)
  assert len(compiles(caplog, lambda: reap(g, tag="t")(x))) == 1
  assert len(compiles(caplog, lambda: [reap(g, tag="t")(x), reap(g, tag="t")(x2)])) == 0
  assert float(reap(g, tag="t")(x2)["y"]) == 3.


def test_sown_pytrees_and_any_hashable_tag_are_reaped_and_planted_whole():
  tree = reap(lambda x: sow({"a": x, "b": (x, x * 2.)}, tag=("t", 1), name="t"),
              tag=("t", 1))(jnp.float32(1.))
  assert float(tree["t"]["b"][1]) == 2.
  assert plant(lambda x: sow(x, tag=3, name="x"), tag=3)({"x": 2.}, 1.) == 2.


def test_a_jitted_function_without_outputs_still_has_its_sows_reaped():
  @minijax.jit
  def g(x):
    sow(x * 2., tag="t", name="x")
  assert float(reap(g, tag="t")(jnp.float32(1.))["x"]) == 2.
  assert minijax.make_jaxpr(reap(lambda x: sow(x, tag="t", name="x"), tag="t"))(1.).eqns == []


def test_checkpointed_functions_are_planted_and_differentiated():
  g = minijax.checkpoint(lambda x: sow(x * 2., tag="t", name="y") ** 2.)
  assert float(minijax.grad(g)(2.)) == 16.
  assert float(minijax.grad(plant(g, tag="t"))({"y": 3.}, 2.)["y"]) == 6.
  assert float(reap(g, tag="t")(jnp.float32(2.))["y"]) == 4.


def test_sows_in_custom_jvp_and_custom_vjp_functions_are_reaped_and_planted_keeping_the_rules():
  @minijax.custom_jvp
  def g(x):
    y = sow(x * 2., tag="t", name="y")
    return y + jnp.sin(x)
  g.defjvp(lambda p, t: (g(p[0]), t[0] * 10.))  # a rule that differs from the function's

  @minijax.custom_vjp
  def h(x):
    y = sow(x * 2., tag="t", name="y")
    return y + jnp.sin(x)
  h.defvjp(lambda x: (h(x), x), lambda x, ct: (10. * ct,))

  x = jnp.float32(3.)
  for fun in (g, h):
    assert float(reap(fun, tag="t")(x)["y"]) == 6.
    np.testing.assert_allclose(plant(fun, tag="t")({"y": 2.}, x), 2. + np.sin(3.), rtol=1e-6)
    assert float(minijax.grad(lambda x: call_and_reap(fun, tag="t")(x)[0])(x)) == 10.
    assert float(minijax.grad(lambda x: plant(fun, tag="t")({"y": 2.}, x))(x)) == 10.
    np.testing.assert_allclose(minijax.vmap(reap(fun, tag="t"))(jnp.arange(2.))["y"], [0., 2.])


def test_a_sow_in_the_condition_of_a_while_loop_is_an_error_naming_it():
  looped = lambda x: lax.while_loop(lambda c: sow(c, tag="t", name="c", mode="clobber") < 3.,
                                    lambda c: c + 1., x)
  with pytest.raises(NotImplementedError, match="'sow' \\[tag='t', name='c'.*cond_fun"):
    reap(looped, tag="t")(jnp.float32(0.))


def test_the_recomputation_of_a_checkpoint_under_grad_is_not_reaped_twice():
  @minijax.checkpoint
  def g(x):
    y = sow(jnp.sin(x), tag="t", name="y")
    return y * y

  nested = minijax.checkpoint(lambda x: g(x) + 1.)
  for fun in (g, nested):
    out, reaped = call_and_reap(minijax.value_and_grad(fun), tag="t")(jnp.float32(1.))
    np.testing.assert_allclose(reaped["y"], np.sin(1.), rtol=1e-6)
    np.testing.assert_allclose(out[1], 2 * np.sin(1.) * np.cos(1.), rtol=1e-6)
  # Planting reaches the recomputation too: the gradient uses the planted value.
  planted = plant(minijax.grad(g), tag="t")({"y": jnp.float32(3.)}, jnp.float32(1.))
  np.testing.assert_allclose(planted, 2 * 3. * np.cos(1.), rtol=1e-6)
