"""Mutable state as an effect: refs, their effects, the discharge pass, and refs under jit,
grad, vmap and control flow.

Numbers are JAX 0.10.2's, recorded on CPU (`/work/shared/notes/jax-0.10.2-facts.md`, "The
Ref API"), as literals; error texts are JAX's, word for word where JAX has one.  Tests named
`..._where_jax_...` check behaviour JAX 0.10.2 gets wrong."""
from __future__ import annotations

import re

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.core import effects as effects_lib
from minijax.core.jaxpr import eval_closed_jaxpr, typecheck_jaxpr
from minijax.effects import discharge_state, run_state
from minijax.ref import addupdate, freeze, new_ref, swap

jit, grad, vmap = minijax.jit, minijax.grad, minijax.vmap


def close(x, y, tol=1e-6):
  np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- the surface

def test_the_public_names_are_jaxs():
  assert set(minijax.ref.__all__) == {"AbstractRef", "Ref", "addupdate", "empty_ref",
                                       "free_ref", "freeze", "get", "new_ref", "set", "swap"}
  for name in ("new_ref", "freeze", "empty_ref", "free_ref", "Ref"):
    assert getattr(minijax, name) is getattr(minijax.ref, name)
  assert {"GradRef", "GradValue", "DontWant", "DidntWant"} <= set(dir(minijax.ad))


def test_a_ref_prints_and_types_as_in_jax():
  r = new_ref(jnp.zeros(3))
  r[1] = 5.
  r[...] += 1.
  r[0] += 2.
  assert repr(r) == "Ref([3., 6., 1.], dtype=float32)"
  assert str(minijax.typeof(r)) == "Ref{float32[3]}"
  assert str(minijax.typeof(new_ref(jnp.zeros((2, 3), jnp.int32)))) == "Ref{int32[2,3]}"
  assert repr(new_ref(1.0)) == "Ref(1., dtype=float32, weak_type=True)"


def test_swap_returns_the_old_value_and_set_and_addupdate_return_none():
  r = new_ref(jnp.float32(2.))
  assert float(swap(r, (), jnp.float32(9.))) == 2.
  assert minijax.ref.set(r, (), jnp.float32(1.)) is None
  assert addupdate(r, (), jnp.float32(1.)) is None
  assert float(r[...]) == 2.


def test_isinstance_ref_holds_for_traced_refs():
  seen = []
  jit(lambda r: seen.append(isinstance(r, minijax.Ref)))(new_ref(jnp.zeros(2)))
  assert seen == [True]
  assert not isinstance(jnp.zeros(2), minijax.Ref)


@pytest.mark.parametrize("jitted", [False, True])
def test_indexing_by_ints_tuples_and_slices_reads_and_writes_the_selected_part(jitted):
  def f(r):
    r[0, 2] = 9
    r[1] = r[1] + jnp.array([0, 2, 2, 2], jnp.int32)
    r[2, 0:2] = jnp.array([9, 9], jnp.int32)
    return r[0], r[2, 2]
  r = new_ref(jnp.array([[1, 1, 1, 3], [1, 1, 0, 1], [1, 1, 10, 2]], jnp.int32))
  row, v = (jit(f) if jitted else f)(r)
  np.testing.assert_array_equal(np.asarray(r[...]), [[1, 1, 9, 3], [1, 3, 2, 3], [9, 9, 10, 2]])
  np.testing.assert_array_equal(np.asarray(row), [1, 1, 9, 3])
  assert int(v) == 10


def test_a_dynamic_index_reads_and_writes_at_a_traced_position_counted_from_the_end_when_negative():
  r = new_ref(jnp.arange(4.))
  jit(lambda r, i: r.__setitem__(i, r[i] * 10.))(r, -1)
  jit(lambda r, i: r.__setitem__(i, r[i] * 10.))(r, 1)
  np.testing.assert_array_equal(np.asarray(r[...]), [0., 10., 2., 30.])


# ----------------------------------------------------------------------------- jaxprs and effects

def test_reads_writes_and_accumulations_carry_effects_naming_their_ref():
  def f(r, x):
    r[...] += x
    addupdate(r, 0, 10.)
    return r[...] * 2
  closed = minijax.make_jaxpr(f)(new_ref(jnp.zeros(2)), jnp.zeros(2))
  kinds = [(e.primitive.name, set(e.effects)) for e in closed.eqns if e.effects]
  assert kinds == [("get", {effects_lib.ReadEffect(0)}), ("swap", {effects_lib.WriteEffect(0)}),
                   ("addupdate", {effects_lib.AccumEffect(0)}),
                   ("get", {effects_lib.ReadEffect(0)})]
  assert closed.effects == {effects_lib.ReadEffect(0), effects_lib.WriteEffect(0),
                            effects_lib.AccumEffect(0)}
  text = str(closed)
  assert "c:f32[2] <- a[...]" in text and "a[0] += 10.0:f32[]" in text
  typecheck_jaxpr(closed.jaxpr)


def test_a_function_whose_refs_are_all_local_has_only_the_internal_effect():
  def f(x):
    r = new_ref(jnp.zeros(3))
    r[...] = x
    r[1] = r[1] + 2.
    return freeze(r)
  closed = minijax.make_jaxpr(f)(jnp.zeros(3))
  assert closed.effects == {effects_lib.InternalMutableArrayEffect()}
  assert effects_lib.needs_discharge(closed.effects)
  typecheck_jaxpr(closed.jaxpr)


def test_r_plus_equals_is_a_read_then_a_write_and_only_addupdate_accumulates():
  def f(r):
    r[...] += 1.
  prims = [e.primitive.name for e in minijax.make_jaxpr(f)(new_ref(jnp.zeros(2))).eqns]
  assert prims == ["get", "add", "swap"]


def test_the_ref_effects_must_be_discharged_before_lowering_and_need_no_tokens():
  for cls in (effects_lib.ReadEffect, effects_lib.WriteEffect, effects_lib.AccumEffect):
    assert cls.must_be_discharged and not cls.ordered
  assert effects_lib.InternalMutableArrayEffect.must_be_discharged
  from minijax.lowering.mlir import lower_jaxpr_to_module
  closed = minijax.make_jaxpr(lambda r: r.__setitem__(..., 1.))(new_ref(jnp.float32(0.)))
  with pytest.raises(ValueError, match="must be discharged before lowering"):
    lower_jaxpr_to_module(closed)


def test_discharge_state_threads_the_ref_values_and_appends_their_final_values():
  def g(r, x):
    r[...] += x
    addupdate(r, 0, 10.)
    return r[...] * 2
  closed = minijax.make_jaxpr(g)(new_ref(jnp.zeros(2)), jnp.zeros(2))
  pure = discharge_state(closed)
  assert [a.str_short() for a in pure.in_avals] == ["float32[2]", "float32[2]"]
  assert [a.str_short() for a in pure.out_avals] == ["float32[2]", "float32[2]"]
  assert pure.effects == set()
  out, final = eval_closed_jaxpr(pure, jnp.array([1., 2.]), jnp.array([3., 4.]))
  close(out, [28., 12.])
  close(final, [14., 6.])


def test_a_jaxpr_that_closes_over_a_ref_is_discharged_once_its_constants_are_inputs():
  r = new_ref(jnp.zeros(2))
  closed = minijax.make_jaxpr(lambda: r.__setitem__(..., jnp.ones(2)))()
  with pytest.raises(ValueError, match="make them inputs first"):
    discharge_state(closed)


# ----------------------------------------------------------------------------- jit

def test_jit_updates_a_ref_argument_in_place_and_the_ref_holds_the_result():
  @jit
  def f(r):
    r[1] += 1.
  r = new_ref(jnp.zeros(3))
  f(r)
  f(r)
  np.testing.assert_array_equal(np.asarray(r[...]), [0., 2., 0.])


def test_jit_aliases_each_ref_argument_to_its_final_value_in_the_mhlo():
  def f(r, x):
    r[...] += x
    return r[...] * 2
  text = jit(f).lower(new_ref(jnp.zeros(2)), jnp.zeros(2)).as_text()
  assert "%arg0: tensor<2xf32> {tf.aliasing_output = 1 : i32}" in text
  assert "%arg1: tensor<2xf32>)" in text
  assert "token" not in text


def test_a_closed_over_ref_is_read_at_call_time_and_traced_once():
  traces = []
  r = new_ref(jnp.float32(1.))

  @jit
  def f(x):
    traces.append(1)
    return r[...] * x
  assert float(f(2.)) == 2.
  r[...] = jnp.float32(10.)
  assert float(f(2.)) == 20.
  assert len(traces) == 1


def test_two_refs_of_one_type_share_a_trace_and_keep_their_own_values():
  traces = []

  @jit
  def f(r, x):
    traces.append(1)
    r[...] += x
  a, b = new_ref(jnp.zeros(2)), new_ref(jnp.ones(2))
  f(a, jnp.ones(2))
  f(b, jnp.ones(2))
  f(a, jnp.ones(2))
  np.testing.assert_array_equal(np.asarray(a[...]), [2., 2.])
  np.testing.assert_array_equal(np.asarray(b[...]), [2., 2.])
  assert len(traces) == 1


def test_a_value_written_whole_into_a_ref_stays_usable_after_the_ref_changes():
  a = jnp.arange(3.)
  r = new_ref(jnp.zeros(3))
  r[...] = a
  r[1] = 7.
  v = r[...]
  r[...] += 1.
  np.testing.assert_array_equal(np.asarray(a), [0., 1., 2.])
  np.testing.assert_array_equal(np.asarray(v), [0., 7., 2.])


def test_a_nested_jit_over_a_ref_argument_updates_the_outer_ref():
  inner = jit(lambda r, x: r.__setitem__(..., r[...] + x))

  @jit
  def outer(r, x):
    inner(r, x)
    inner(r, x)
    return r[...]
  r = new_ref(jnp.zeros(3))
  np.testing.assert_array_equal(np.asarray(outer(r, jnp.ones(3))), [2., 2., 2.])
  np.testing.assert_array_equal(np.asarray(r[...]), [2., 2., 2.])


def _message(fn, *args) -> str:
  with pytest.raises(Exception) as info:
    fn(*args)
  return str(info.value)


def test_returning_a_ref_from_jit_is_jaxs_error_naming_where_the_ref_came_from():
  msg = _message(jit(lambda: new_ref(1.0)))
  assert re.fullmatch(
      r"function <lambda> at .*test_state.py:\d+ traced for jit returned a mutable array "
      r"reference of type Ref\{float32\[\]\}, but mutable array references cannot be "
      r"returned.\n\nThe returned mutable array was created on line .*test_state.py:\d+ "
      r"\(<lambda>\).", msg)
  msg = _message(jit(lambda r: r), new_ref(jnp.zeros(2)))
  assert msg.endswith("The returned mutable array was passed in as the argument r.")


def test_passing_one_ref_twice_or_closing_over_it_and_passing_it_is_jaxs_error():
  r = new_ref(jnp.zeros(2))
  msg = _message(jit(lambda a, b: None), r, r)
  assert re.fullmatch(
      r"only one reference to a mutable array may be passed as an argument to a function, but "
      r"when tracing <lambda> at .*:\d+ for jit the mutable array reference of type "
      r"Ref\{float32\[2\]\} appeared at both a and b.", msg)
  msg = _message(jit(lambda a: a[...] + r[...]), r)
  assert re.fullmatch(r"when tracing <lambda> at .*:\d+ for jit, a mutable array reference of "
                      r"type Ref\{float32\[2\]\} was both closed over and passed as the "
                      r"argument a", msg)


@pytest.mark.parametrize("value, prim, text", [
    (jnp.zeros(4), "swap", "Invalid shape for `swap`. Ref shape: (3,). Expected shape: (3,). "
                           "Value shape: (4,). Transforms: (). "),
    (2.0, "swap", "Invalid shape for `swap`. Ref shape: (3,). Expected shape: (3,). "
                  "Value shape: (). Transforms: (). "),
    (jnp.arange(3), "swap", "Invalid dtype for `swap`. Ref dtype: float32. Value dtype: int32. "),
    (1.0, "addupdate", "Invalid shape for `addupdate`. Ref shape: (3,). Expected shape: (3,). "
                       "Value shape: (). Transforms: (). "),
])
def test_writes_never_broadcast_or_convert_and_get_jaxs_errors(value, prim, text):
  r = new_ref(jnp.zeros(3))
  write = (lambda: r.__setitem__(..., value)) if prim == "swap" else (
      lambda: addupdate(r, ..., value))
  assert _message(write) == text
  assert _message(jit(write)) == text


def test_errors_for_values_that_are_not_refs_or_not_arrays():
  r = new_ref(jnp.zeros(3))
  assert _message(addupdate, new_ref(jnp.int32(1)), (), 1.5) == (
      "Invalid dtype for `addupdate`. Ref dtype: int32. Value shape: float32. ")
  assert _message(lambda: r[5]) == "Out of bound indexer: idx=5, dim=3."
  assert _message(lambda: r + 1) == "unsupported operand type(s) for +: 'Ref' and 'int'"
  assert _message(new_ref, {"a": 1.}) == (
      "Error interpreting argument to new_ref as a JAX value. The problematic value is of type "
      "<class 'dict'> and was passed to new_ref at position 0.")
  assert _message(jnp.sin, r).startswith("sin requires ndarray or scalar arguments, got ")


# ----------------------------------------------------------------------------- freeze

def test_freeze_ends_a_ref_so_using_it_afterwards_raises():
  r = new_ref(jnp.ones(3))
  np.testing.assert_array_equal(np.asarray(freeze(r)), [1., 1., 1.])
  with pytest.raises(ValueError, match="after it was frozen"):
    r[0]

  def use_after_freeze():
    q = new_ref(jnp.zeros(3))
    freeze(q)
    return q[0]
  with pytest.raises(ValueError, match="after it was frozen"):
    jit(use_after_freeze)()


def test_freezing_a_ref_outside_the_scope_that_made_it_raises_where_jax_accepts_it():
  with pytest.raises(ValueError, match="only be frozen in the scope that created it"):
    jit(lambda r: freeze(r))(new_ref(jnp.zeros(3)))


# ----------------------------------------------------------------------------- grad

def test_grad_through_a_local_ref_and_its_second_order_where_jax_raises():
  def f(x):
    r = new_ref(jnp.zeros(()))
    r[...] = jnp.sin(x)
    return r[...]
  close(grad(f)(1.), 0.5403023)
  close(jit(grad(f))(1.), 0.5403023)
  close(grad(grad(f))(1.), -0.84147096)

  def cube(x):
    r = new_ref(x)
    r[...] = r[...] ** 3
    return r[...]
  close(grad(cube)(2.), 12.)
  close(grad(grad(cube))(2.), 12.)  # JAX 0.10.2: AttributeError ('accum')


def test_grad_of_a_sum_over_a_frozen_ref():
  def f(x):
    r = new_ref(jnp.zeros(3))
    r[...] += x
    r[1] += 3 * x[0]
    return jnp.sum(freeze(r) ** 2)
  close(grad(f)(jnp.array([1., 2., 3.])), [32., 10., 6.])


def test_the_transposed_jaxpr_shows_the_duality_of_reads_and_accumulations():
  def f(x):
    r = new_ref(jnp.zeros(3))
    r[1] = x
    addupdate(r, 2, 3 * x)
    return freeze(r)
  out, f_vjp = minijax.vjp(f, 1.)
  close(out, [0., 1., 3.])
  close(f_vjp(jnp.array([1., 10., 100.]))[0], 310.)
  prims = [e.primitive.name for e in minijax.make_jaxpr(f_vjp)(jnp.ones(3)).eqns]
  # freeze^T: a cotangent ref from the cotangent; addupdate^T: a read; swap^T: a swap
  assert prims.index("new_ref") < prims.index("get") < prims.index("swap")


def test_a_differentiated_value_into_a_ref_from_outside_is_jaxs_error():
  r = new_ref(jnp.zeros(()))
  msg = _message(grad(lambda x: (r.__setitem__(..., x), x)[1]), 1.)
  assert msg == ("performing a set/swap operation with a differentiated value on a "
                 "non-differentiated array reference of type Ref{float32[]}. Move the array "
                 "reference to be an argument of the differentiated function?")


def test_jacfwd_through_a_local_ref_where_jax_gets_an_out_axes_error():
  def f(x):
    r = new_ref(x)
    r[...] = r[...] ** 3
    return r[...]
  close(minijax.jacfwd(f)(2.), 12.)


def test_with_refs_accumulates_cotangents_into_refs():
  _, f_vjp = minijax.vjp(jnp.sin, 1.)
  acc = new_ref(jnp.float32(100.))
  assert f_vjp.with_refs(acc)(1.) == (minijax.ad.GradRef(),)
  close(acc[...], 100.5403)
  assert f_vjp.with_refs(minijax.ad.DontWant())(1.) == (minijax.ad.DidntWant(),)
  close(f_vjp.with_refs(minijax.ad.GradValue())(1.)[0], 0.5403023)
  grads = new_ref(jnp.zeros(10))
  for i in (3, 5, 3):
    _, pullback = minijax.vjp(lambda x: x[i], jnp.zeros(10))
    pullback.with_refs(grads)(1.)
  np.testing.assert_array_equal(np.asarray(grads[...]), [0, 0, 0, 2, 0, 1, 0, 0, 0, 0])


def test_vjp_with_respect_to_a_ref_argument_where_jax_raises_a_cotangent_type_error():
  r = new_ref(jnp.float32(3.))
  _, pullback = minijax.vjp(lambda r: r[...] ** 2, r)
  g = new_ref(jnp.float32(0.))
  assert pullback.with_refs(g)(1.) == (minijax.ad.GradRef(),)
  close(g[...], 6.)
  close(grad(lambda r: r[...] ** 2)(r), 6.)


# ----------------------------------------------------------------------------- vmap

def test_vmap_of_a_local_ref_batches_it():
  def f(x):
    r = new_ref(jnp.zeros(()))
    r[...] = x * 2
    r[...] += 1.
    return r[...]
  np.testing.assert_array_equal(np.asarray(vmap(f)(jnp.arange(3.))), [1., 3., 5.])


def test_nested_vmaps_write_a_distance_matrix_into_a_ref_argument():
  xs = jnp.array([0., 8., 16.])

  def dist(x, y, out):
    out[...] = (x - y) ** 2
  out = new_ref(jnp.zeros((3, 3)))
  vmap(vmap(dist, (0, None, 0)), (None, 0, 0))(xs, xs, out)
  np.testing.assert_array_equal(np.asarray(out[...]),
                                [[0, 64, 256], [64, 0, 64], [256, 64, 0]])


def test_a_ref_argument_mapped_on_another_axis_where_jax_raises_a_shape_error():
  def put(r, i, v):
    r[i] = v
  r = new_ref(jnp.zeros((4, 2)))
  vmap(put, in_axes=(1, 0, 0))(r, jnp.array([1, 3]), jnp.array([5., 7.]))
  np.testing.assert_array_equal(np.asarray(r[...]), [[0, 0], [5, 0], [0, 0], [0, 7]])


def test_a_vmapped_value_into_an_unbatched_ref_is_jaxs_error():
  r = new_ref(jnp.zeros(()))
  msg = _message(vmap(lambda x: r.__setitem__(..., x)), jnp.arange(3.))
  assert msg == ("performing a set/swap operation with vmapped value on an unbatched array "
                 "reference of type Ref{float32[]}. Move the array reference to be an "
                 "argument to the vmapped function?")


# ----------------------------------------------------------------------------- control flow

@pytest.mark.parametrize("jitted", [False, True])
def test_a_fori_loop_accumulates_into_a_local_ref(jitted):
  def f():
    r = new_ref(jnp.float32(0.))
    lax.fori_loop(0, 5, lambda i, c: (r.__setitem__(..., r[...] + i.astype(jnp.float32)), c)[1],
                  None)
    return r[...]
  assert float((jit(f) if jitted else f)()) == 10.


@pytest.mark.parametrize("jitted", [False, True])
def test_a_while_condition_sees_every_write_of_the_body_where_jax_reads_a_stale_copy(jitted):
  def f():
    r = new_ref(jnp.int32(1))

    def body(c):
      r[...] = r[...] * 3
      return c + 1
    c = lax.while_loop(lambda c: r[...] < 100, body, 0)
    return c, r[...]
  c, r = (jit(f) if jitted else f)()
  assert (int(c), int(r)) == (5, 243)


def test_a_while_condition_that_writes_a_ref_raises():
  r = new_ref(jnp.int32(0))
  with pytest.raises(ValueError, match="condition may read refs but not write them"):
    lax.while_loop(lambda c: (r.__setitem__(..., c), c < 3)[1], lambda c: c + 1, 0)


def test_cond_branches_update_a_ref_and_the_loop_body_jaxprs_hold_only_values():
  def f(p, x):
    r = new_ref(x)
    lax.cond(p, lambda: r.__setitem__(..., r[...] * 2), lambda: None)
    return r[...]
  assert float(f(True, 3.)) == 6.
  assert float(jit(f)(False, 3.)) == 3.
  closed = minijax.make_jaxpr(f)(True, 3.)
  cond_eqn = next(e for e in closed.eqns if e.primitive.name == "cond")
  assert all(not b.effects for b in cond_eqn.params["branches"])


def test_scan_over_a_ref_gives_the_body_rows_it_updates_in_place():
  def body(c, x):
    x[...] = x[...] * 2 + c
    return c + 1., x[0]
  r = new_ref(jnp.arange(6.).reshape(3, 2))
  carry, ys = lax.scan(body, 0., r)
  assert float(carry) == 3.
  np.testing.assert_array_equal(np.asarray(ys), [0., 5., 10.])
  np.testing.assert_array_equal(np.asarray(r[...]), [[0, 2], [5, 7], [10, 12]])
  r = new_ref(jnp.arange(6.).reshape(3, 2))
  _, ys = jit(lambda r: lax.scan(body, 0., r, reverse=True))(r)
  np.testing.assert_array_equal(np.asarray(ys), [2., 5., 8.])


def test_a_scan_accumulating_a_loss_in_a_ref_differentiates():
  xs = jnp.array([1., 2.])

  def loss(w):
    acc = new_ref(jnp.float32(0.))

    def body(c, x):
      acc[...] += (w * x - 1.) ** 2
      return c, None
    lax.scan(body, None, xs)
    return acc[...] / 2
  value, g = minijax.value_and_grad(loss)(0.5)
  close(value, 0.125)  # ((0.5 - 1)**2 + (1 - 1)**2) / 2
  close(g, -0.5)       # (0.5 - 1) * 1 + (1 - 1) * 2
  value, g = jit(minijax.value_and_grad(loss))(2.)
  close(value, 5.)     # (1 + 9) / 2
  close(g, 7.)         # 1 * 1 + 3 * 2


def test_returning_a_ref_from_a_loop_body_or_branch_is_jaxs_error():
  r = new_ref(jnp.zeros(3))
  assert "traced for scan returned a mutable array reference" in _message(
      lax.scan, lambda c, x: (c, r), 0., jnp.arange(3.))
  assert "traced for cond returned a mutable array reference" in _message(
      lax.cond, True, lambda: r, lambda: r)


def test_taps_and_callbacks_on_a_ref_inside_a_loop_arrive_in_program_order():
  got = []

  def f():
    r = new_ref(jnp.float32(0.))

    def body(i, c):
      r[...] += i.astype(jnp.float32)
      minijax.debug.callback(lambda v: got.append(float(v)), r[...], ordered=True)
      return c
    lax.fori_loop(0, 5, body, None)
    return r[...]
  assert float(jit(f)()) == 10.
  minijax.effects_barrier()
  assert got == [0., 1., 3., 6., 10.]


# ----------------------------------------------------------------------------- run_state

def test_run_state_is_pure_under_jit_grad_jvp_and_vmap():
  def step(refs):
    x, y = refs
    y[...] = jnp.sin(x[...]) * 2
    x[...] += 1.
  run = run_state(step)
  x, y = run((1., 0.))
  close(x, 2.)
  close(y, 2 * np.sin(1.))
  close(jit(run)((1., 0.))[1], 2 * np.sin(1.))
  close(grad(lambda a: run((a, 0.))[1])(1.), 2 * np.cos(1.))
  close(minijax.jvp(lambda a: run((a, 0.))[1], (1.,), (1.,))[1], 2 * np.cos(1.))
  close(vmap(lambda a: run((a, 0.))[1])(jnp.arange(3.)), 2 * np.sin(np.arange(3.)))
  closed = minijax.make_jaxpr(lambda a: run((a, 0.)))(1.)
  assert closed.effects == set()


# ----------------------------------------------------------------------------- checkpoint, custom_vjp

@pytest.mark.parametrize("jitted", [False, True])
def test_checkpoint_writes_a_ref_once_and_never_replays_it_in_the_backward_pass(jitted):
  x_ref = new_ref(1., kind="no_grad_no_remat")

  @minijax.checkpoint
  def f(y):
    out = y * x_ref[...]
    x_ref[...] += 1
    return out
  assert float(grad(jit(f) if jitted else f)(2.)) == 1.
  assert float(x_ref[...]) == 2.


@pytest.mark.parametrize("jitted", [False, True])
def test_a_no_grad_ref_takes_differentiated_values_and_drops_their_tangents(jitted):
  @minijax.checkpoint
  def f(y, x_ref):
    out = y * y
    x_ref[...] += out
    return out
  x_ref = new_ref(1., kind="no_grad_no_remat")
  assert float(grad(jit(f) if jitted else f)(2., x_ref)) == 4.
  assert float(x_ref[...]) == 5.


@pytest.mark.parametrize("jitted", [False, True])
def test_a_custom_vjp_bwd_stashes_gradients_into_a_ref(jitted):
  @minijax.custom_vjp
  def stash(grads_ref, x):
    return x
  stash.defvjp(lambda grads_ref, x: (x, grads_ref),
               lambda grads_ref, g: (grads_ref.__setitem__(..., g), (None, g))[1])

  def primal(grads_ref, x):
    x = jnp.sin(x)
    x = stash(grads_ref, x)
    return jnp.sin(x)
  grads_ref = new_ref(jnp.float32(0.))
  grad(jit(primal) if jitted else primal, 1)(grads_ref, jnp.float32(1.))
  close(grads_ref[...], 0.66636676)  # cos(sin(1))


@pytest.mark.parametrize("jitted", [False, True])
def test_both_branches_of_a_cond_closing_over_one_ref_update_it(jitted):
  x_ref = new_ref(0.)

  def f(x):
    lax.cond(x > 0, lambda: x_ref.__setitem__(..., x_ref[...] + x),
             lambda: x_ref.__setitem__(..., x_ref[...] - x))
  (jit(f) if jitted else f)(3.)
  assert float(x_ref[...]) == 3.


def test_jit_of_jit_with_a_local_ref_and_an_argument_array_survives_a_ref_read():
  f = jit(jit(lambda: new_ref(jnp.zeros(8))[...]))
  np.testing.assert_array_equal(np.asarray(f()), np.zeros(8))
  x = jnp.arange(3.)
  jit(lambda r: r[...])(new_ref(x))
  np.testing.assert_array_equal(np.asarray(x + 1), [1., 2., 3.])


def test_empty_ref_and_free_ref():
  r = minijax.empty_ref(jnp.zeros(3))
  r[...] = jnp.ones(3)
  np.testing.assert_array_equal(np.asarray(r[...]), [1., 1., 1.])
  assert minijax.free_ref(r) is None


def test_repeated_jitted_calls_on_refs_take_the_fast_path_and_update_each_ref():
  inc = jit(lambda r: r.__setitem__(..., r[...] + 1.))
  r = new_ref(jnp.float32(0.))
  for _ in range(5):
    inc(r)
  assert float(r[...]) == 5.
  assert len(inc._wrapped._fast) == 1  # one fast-path entry served the calls

  closed = new_ref(jnp.zeros(2))
  both = jit(lambda a, x: (a.__setitem__(..., a[...] + x),
                           closed.__setitem__(..., closed[...] + 2 * x)))
  a = new_ref(jnp.zeros(2))
  for _ in range(3):
    both(a, jnp.ones(2))
  np.testing.assert_array_equal(np.asarray(a[...]), [3., 3.])
  np.testing.assert_array_equal(np.asarray(closed[...]), [6., 6.])
  with pytest.raises(ValueError, match="only one reference to a mutable array"):
    jit(lambda a, b: a.__setitem__(..., b[...]))(a, a)
  freeze(r)
  with pytest.raises(ValueError, match="after it was frozen"):
    inc(r)


def test_a_ref_keeps_its_type_when_a_weakly_typed_value_is_written_whole():
  r = new_ref(jnp.ones(2))
  jit(lambda a, b: a.__setitem__(..., b[...] * 3))(r, new_ref(jnp.full(2, 2.)))
  assert repr(r) == "Ref([6., 6.], dtype=float32)"
  assert not r[...].weak_type


def test_free_ref_ends_a_ref_and_freeing_or_reading_it_again_raises():
  @jit
  def f(x):
    r = minijax.empty_ref(jnp.zeros(()))
    r[...] = 2. * x
    out = r[...]
    minijax.free_ref(r)
    return out
  assert float(f(3.)) == 6.
  assert float(grad(f)(3.)) == 2.

  def twice():
    r = new_ref(1.)
    minijax.free_ref(r)
    minijax.free_ref(r)
  with pytest.raises(ValueError):
    jit(twice)()
  with pytest.raises(ValueError):
    twice()


def test_an_unused_inner_jit_with_a_local_ref_lowers_to_nothing():
  @jit
  def f(x, y):
    @jit
    def g(y):
      r = new_ref(y)
      r[...] += 1
      return freeze(r)
    g(y)
    return x
  assert "add" not in f.lower(1, 2).as_text()


@pytest.mark.parametrize("jitted", [False, True])
def test_a_custom_vjp_of_a_ref_argument_sends_its_cotangent_to_the_ref(jitted):
  @minijax.custom_vjp
  def f(x_ref):
    return x_ref[...]
  f.defvjp(lambda x_ref: (f(x_ref), None), lambda _, g: (g,))
  f = jit(f) if jitted else f
  _, pullback = minijax.vjp(lambda x: f(new_ref(x)), 3.14)
  close(pullback(1.)[0], 1.)


def test_aliasing_and_returned_refs_raise_for_custom_vjp_vjp_and_vmap():
  @minijax.custom_vjp
  def f(x_ref, y_ref):
    return None
  f.defvjp(lambda x_ref, y_ref: (None, None), lambda _, g: (None, None))
  r = new_ref(0.)
  for call in (lambda: f(r, r), lambda: minijax.vjp(f, r, r)):
    assert "appeared at both x_ref and y_ref" in _message(call)

  @minijax.custom_vjp
  def g(ref):
    return ref
  g.defvjp(lambda ref: (ref, None), lambda _, ct: (ct,))
  assert "returned a mutable array" in _message(g, r)
  x = new_ref(jnp.zeros((3, 3)))
  assert "only one reference to a mutable array" in _message(vmap(lambda a, b: None), x, x)


@pytest.mark.parametrize("jitted", [False, True])
def test_integer_array_indices_read_and_write_through_numpy_indexing(jitted):
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  r = new_ref(x)
  np.testing.assert_array_equal(np.asarray(r[np.arange(2), np.arange(2)]), [0., 5.])
  np.testing.assert_array_equal(np.asarray(r[np.arange(2), ..., np.arange(2)]), [0., 5.])

  def f(r):
    r[jnp.array([0, 2]), 1] = jnp.array([70., 90.])
    return r[jnp.array([0, 2])]
  rows = (jit(f) if jitted else f)(r)
  np.testing.assert_array_equal(np.asarray(rows), [[0, 70, 2, 3], [8, 90, 10, 11]])
  np.testing.assert_array_equal(np.asarray(r[:, 1]), [70., 5., 90.])


def test_run_state_reads_and_writes_back_a_ref_its_function_closes_over():
  outer = new_ref(jnp.float32(1.))

  def f(r):
    r[...] += outer[...]
    outer[...] = outer[...] * 10
  assert float(run_state(f)(jnp.float32(5.))) == 6.
  assert float(jit(run_state(f))(jnp.float32(5.))) == 15.
  assert float(outer[...]) == 100.


def test_a_jitted_function_takes_a_ref_beside_a_static_argument():
  # (the check of ref arguments unpacked the static arguments' entries wrongly)
  ref = minijax.new_ref(jnp.zeros(3))

  def add(n, r):
    r[...] = r[...] + n

  minijax.jit(add, static_argnums=0)(2, ref)
  minijax.jit(add, static_argnums=0)(2, ref)
  np.testing.assert_array_equal(np.asarray(ref[...]), [4.0, 4.0, 4.0])
