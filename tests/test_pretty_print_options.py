"""`Jaxpr.pretty_print(...)` with JAX 0.10.2's options: shapes off, source locations and
name stacks as notes after each equation, effects after each jaxpr's outputs, the custom
equation rules off, another width."""
import functools

import pytest

import minijax
from minijax import numpy as jnp
from minijax.ad_checkpoint import checkpoint_name


def _f(x):
  with minijax.named_scope("outer"):
    y = jnp.sin(x) * 2
  return minijax.jit(lambda z: z + 1)(y)


def test_the_default_is_str():
  closed = minijax.make_jaxpr(_f)(1.)
  assert closed.pretty_print() == closed.jaxpr.pretty_print() == str(closed.jaxpr)


def test_name_stacks_and_source_locations_are_notes_after_each_equation():
  text = minijax.make_jaxpr(_f)(1.).jaxpr.pretty_print(name_stack=True, source_info=True)
  sin_line = next(line for line in text.splitlines() if " = sin a" in line)
  line = _f.__code__.co_firstlineno + 2
  assert sin_line.endswith(f"# test_pretty_print_options.py:{line} (_f)  # [outer]")
  jit_line = next(line for line in text.splitlines() if "= jit[" in line)
  assert jit_line.endswith("  # []")


def test_shapes_can_be_left_out_of_binders():
  text = minijax.make_jaxpr(lambda x: jnp.sin(x) * 2.)(1.).jaxpr.pretty_print(print_shapes=False)
  assert text.startswith("{ lambda ; a. let")
  assert "b = sin a" in text and ":f32[]" in text  # (literals keep their type)


def test_effects_follow_the_outputs():
  jaxpr = minijax.make_jaxpr(lambda x: minijax.debug.print("{}", x))(1.).jaxpr
  assert jaxpr.pretty_print(print_effects=True).endswith("in () : { DebugEffect } }")
  assert minijax.make_jaxpr(jnp.sin)(1.).jaxpr.pretty_print(print_effects=True).endswith(
      "in (b,) : {  } }")


def test_width_and_bad_options():
  jaxpr = minijax.make_jaxpr(lambda x: jnp.sin(x) * 2.)(1.).jaxpr
  assert "\n" not in jaxpr.pretty_print(width=200)
  assert "\n" in jaxpr.pretty_print(width=20)
  assert jaxpr.pretty_print(use_color=True) == str(jaxpr)
  with pytest.raises(TypeError, match="unexpected keyword arguments \\['colour'\\]"):
    jaxpr.pretty_print(colour=True)
  with pytest.raises(ValueError, match="width must be a positive int"):
    jaxpr.pretty_print(width=0)


def test_a_checkpoint_recomputation_is_named_rematted_computation():
  # JAX 0.10.2's api_test `test_name_stack_annotation`: one equation, the recomputed call
  def g1(x, y):
    with minijax.named_scope("g1"):
      return checkpoint_name(x @ y, "save_me")

  def f2(x, ws):
    for i, w in enumerate(ws):
      with minijax.named_scope("g"):
        x = jnp.tanh(g1(x, w) if i % 2 else x @ w)
    return jnp.sum(x)

  @minijax.remat
  def f(x, ws):
    return minijax.named_call(minijax.jit(f2), name="run_per_expert_shard")(x, ws)

  x, ws = jnp.ones([64, 64]), [jnp.ones([64, 128]), jnp.ones([128, 64])]
  vjp = minijax.make_jaxpr(minijax.vjp(functools.partial(f, x), ws)[1])(f(x, ws))
  text = vjp.jaxpr.pretty_print(name_stack=True)
  assert text.count("rematted_computation") == 1
  # (JAX 0.10.2's names: the recomputation keeps the scope it was traced in, and the
  # checkpoint's transposition is marked as such)
  assert "= jit[  # [rematted_computation/run_per_expert_shard]" in text
  assert "= checkpoint[  # [transpose(jvp())]" in text
  assert "rematted_computation" not in str(vjp)


def test_transformed_equations_keep_the_source_of_the_equation_they_come_from():
  def f(x):
    return jnp.sin(x)

  line = f.__code__.co_firstlineno + 1
  jaxpr = minijax.make_jaxpr(lambda x: minijax.jvp(minijax.jit(f), (x,), (1.,)))(2.).jaxpr
  body = jaxpr.eqns[0].params["jaxpr"].jaxpr  # the jvp of the jit's body
  assert {(e.primitive.name, e.source_info.line, e.source_info.function)
          for e in body.eqns} >= {("sin", line, "f"), ("cos", line, "f")}
