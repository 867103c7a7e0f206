"""Handlers at trace time: `handle(f, tag=, handler=)` replaces sown values, and handlers of
user-defined effects (reader, writer, state) replace their operations, through jit, vmap,
grad, scan, while_loop and cond; an operation nobody handles is an error naming the effect
and the operation."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.effects import (Handler, UnhandledEffectError, define_effect, handle, reap,
                             sow)

scalar = lambda *avals: minijax.ShapeDtypeStruct((), jnp.float32)
nothing = lambda *avals: ()

reader = define_effect("reader")
ask = reader.operation("ask", scalar)

writer = define_effect("writer")
tell = writer.operation("tell", nothing)

state = define_effect("state")
get = state.operation("get", scalar)
put = state.operation("put", nothing)


def environment(env):
  return Handler(reader, {ask: lambda: env})


def log(initial=0.):
  return Handler(writer, {tell: lambda total, x: ((), total + x)}, state=initial)


def cell(initial):
  return Handler(state, {get: lambda s: (s, s), put: lambda s, x: ((), x)}, state=initial)


def test_a_sow_handler_replaces_each_sown_value_in_program_order():
  seen = []

  def handler(name, value):
    seen.append(name)
    return value * 10.

  def f(x):
    return sow(x, tag="t", name="a") + sow(x + 1., tag="t", name="b")
  assert float(handle(f, tag="t", handler=handler)(jnp.float32(1.))) == 30.
  assert seen == ["a", "b"]


def test_a_sow_handler_inside_scan_runs_once_and_applies_to_every_iteration():
  calls = []

  def handler(name, value):
    calls.append(name)
    return value * 2.

  def f(xs):
    return lax.scan(lambda c, x: (c + sow(x, tag="t", name="x", mode="append"), c), 0., xs)
  carry, ys = handle(f, tag="t", handler=handler)(jnp.arange(4.))
  assert float(carry) == 12. and calls == ["x"]
  np.testing.assert_allclose(ys, [0., 0., 2., 6.])


def test_a_sow_handler_is_differentiable_like_any_value():
  f = lambda x: sow(x * x, tag="t", name="sq")
  g = minijax.grad(handle(f, tag="t", handler=lambda name, v: 3. * v))
  assert float(g(jnp.float32(2.))) == 12.


def test_a_reader_handler_supplies_the_environment():
  f = lambda x: x * ask() + ask()
  assert float(handle(f, environment(2.))(jnp.float32(3.))) == 8.
  assert float(minijax.jit(handle(f, environment(2.)))(jnp.float32(3.))) == 8.
  assert float(handle(minijax.jit(f), environment(2.))(jnp.float32(3.))) == 8.


def test_a_writer_handler_accumulates_a_log_into_an_output():
  def f(x):
    tell(x)
    tell(x * 2.)
    return x
  out, total = handle(f, log())(jnp.float32(1.5))
  assert float(out) == 1.5 and float(total) == 4.5


def test_a_state_handler_threads_its_state_through_scan_while_and_cond():
  def counter(xs):
    def body(c, x):
      put(get() + x)
      return c + 1., get()
    return lax.scan(body, 0., xs)
  (n, seen), final = handle(counter, cell(10.))(jnp.arange(4.))
  np.testing.assert_allclose(seen, [10., 11., 13., 16.])
  assert float(final) == 16. and float(n) == 4.
  (_, seen), final = minijax.jit(handle(counter, cell(10.)))(jnp.arange(4.))
  assert float(final) == 16.

  def looped(x):
    return lax.while_loop(lambda i: i < 3, lambda i: (put(get() * x), i + 1)[1], 0)
  _, final = handle(looped, cell(1.))(jnp.float32(2.))
  assert float(final) == 8.

  def branchy(p):
    lax.cond(p, lambda: put(get() + 1.), lambda: put(get() - 1.))
    return get()
  assert float(handle(branchy, cell(5.))(True)[1]) == 6.
  assert float(handle(branchy, cell(5.))(False)[1]) == 4.


def test_handled_functions_compose_with_vmap_and_grad():
  def f(x):
    put(get() * x)
    return get()
  g = minijax.grad(lambda x: handle(f, cell(3.))(x)[0])
  assert float(g(jnp.float32(2.))) == 3.
  out, final = minijax.vmap(handle(f, cell(3.)))(jnp.arange(3.))
  np.testing.assert_allclose(final, [0., 3., 6.])


def test_nested_handlers_of_different_effects_each_take_their_own_operations():
  def f(x):
    tell(x * ask())
    return x
  out, total = handle(handle(f, environment(3.)), log())(jnp.float32(2.))
  assert float(total) == 6.
  out, total = handle(lambda x: handle(f, log())(x), environment(3.))(jnp.float32(2.))
  assert float(total) == 6.


def test_an_unhandled_operation_is_an_error_naming_the_effect_and_the_operation():
  f = lambda x: x + ask()
  with pytest.raises(UnhandledEffectError, match="'ask' of effect 'reader'"):
    minijax.jit(f)(jnp.float32(1.))
  with pytest.raises(UnhandledEffectError, match="'ask' of effect 'reader'"):
    minijax.jit(f).lower(jnp.float32(1.))
  with pytest.raises(UnhandledEffectError, match="'tell' of effect 'writer'"):
    handle(lambda x: (tell(x), ask())[1], environment(1.))(jnp.float32(1.))


def test_operations_carry_their_effect_in_the_jaxpr_with_the_declared_policy():
  ordered = define_effect("console", ordered=True)
  say = ordered.operation("say", nothing)
  jaxpr = minijax.make_jaxpr(lambda x: (say(x), x + ask())[1])(1.)
  assert {repr(e) for e in jaxpr.effects} == {"console", "reader"}
  assert [e.ordered for e in sorted(jaxpr.effects, key=repr)] == [True, False]
  with pytest.raises(TypeError, match="unknown policy flags \\['sorted'\\]"):
    define_effect("bad", sorted=True)


def test_a_handler_of_the_wrong_shape_or_state_structure_is_an_error_naming_the_operation():
  with pytest.raises(TypeError, match="'reader.ask' returned a result of shape \\(2,\\)"):
    handle(lambda: ask(), Handler(reader, {ask: lambda: jnp.ones(2)}))()
  bad = Handler(state, {get: lambda s: (s, (s, s))}, state=1.)
  with pytest.raises(TypeError, match="'state.get' changed the state's structure"):
    handle(lambda: get(), bad)()
  with pytest.raises(UnhandledEffectError, match="has no function for it"):
    handle(lambda: put(1.), Handler(state, {get: lambda s: (s, s)}, state=1.))()


def test_handle_and_reap_compose():
  def f(x):
    y = sow(x * ask(), tag="t", name="y")
    return y + 1.
  reaped = reap(handle(f, environment(4.)), tag="t")(jnp.float32(2.))
  assert float(reaped["y"]) == 8.


def test_operations_inside_custom_jvp_are_handled_and_state_there_is_an_error():
  @minijax.custom_jvp
  def g(x):
    return x * ask()
  g.defjvp(lambda p, t: (g(p[0]), t[0] * 10.))
  assert float(handle(g, environment(3.))(jnp.float32(2.))) == 6.

  @minijax.custom_jvp
  def counted(x):
    tell(x)
    return x
  counted.defjvp(lambda p, t: (counted(p[0]), t[0]))
  with pytest.raises(NotImplementedError, match="handler of effect 'writer' has state"):
    handle(counted, log())(jnp.float32(2.))


def test_an_operation_on_a_mapped_or_differentiated_value_before_its_handler_is_an_error():
  xs = jnp.arange(3.)
  with pytest.raises(NotImplementedError, match="vmap the operation 'tell' of effect 'writer'"):
    handle(minijax.vmap(lambda x: (tell(x), x)[1]), log())(xs)
  with pytest.raises(NotImplementedError, match="differentiate the operation 'put'"):
    handle(minijax.grad(lambda x: (put(x), x)[1]), cell(0.))(jnp.float32(1.))
  # Unmapped operands pass through the vmap to the handler outside it.
  out, total = handle(minijax.vmap(lambda x: (tell(1.), x * 2.)[1]), log())(xs)
  assert float(total) == 1. and out.shape == (3,)
