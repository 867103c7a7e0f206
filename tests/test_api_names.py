"""JAX's public names for flags, contexts and jit's behaviours, as JAX 0.10.2 has them.

Flag context managers are JAX's state objects (`.value`, `get_global`, `set_global`); a
`config.update` inside a `with` block changes the global value, in force once the block
ends; the flags that key jit's caches also key the traces of eager control-flow bodies.
"""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.config import config


def test_an_update_inside_a_flag_block_is_the_global_value_after_it():
  precision = minijax.default_matmul_precision
  assert precision.get_global() is None and precision.value is None
  try:
    with precision("tensorfloat32"):
      config.update("jax_default_matmul_precision", "float32")
      assert precision.value == "tensorfloat32"  # the block's value stays in force
      assert precision.get_global() == "float32"
    assert config.default_matmul_precision == "float32"
  finally:
    config.update("jax_default_matmul_precision", None)
  assert precision.value is None
  with pytest.raises(TypeError, match="bool"):
    bool(precision)


def test_set_global_is_update_and_decorators_restore_the_flag():
  rank = minijax.numpy_rank_promotion
  rank.set_global("warn")
  try:
    assert config.numpy_rank_promotion == "warn"

    @rank("raise")
    def read():
      return rank.value
    assert read() == "raise" and rank.value == "warn"
  finally:
    rank.set_global("allow")


def _counting(fun):
  calls = []

  def counted(*args):
    calls.append(1)
    return fun(*args)
  return counted, calls


def test_a_precision_change_traces_jit_and_eager_cond_bodies_again_and_back_reuses():
  x = jnp.ones((2, 2))
  g, calls = _counting(lambda x: jnp.dot(x, x))
  f = minijax.jit(g)
  branch, branch_calls = _counting(lambda x: jnp.dot(x, x))
  for run, count in [(f, calls), (lambda x: lax.cond(True, branch, branch, x), branch_calls)]:
    run(x)
    run(x)
    assert len(count) == 1  # an eager cond's bodies are traced once, as JAX's are
    with minijax.default_matmul_precision("tensorfloat32"):
      np.testing.assert_array_equal(run(x), 2 * np.ones((2, 2)))
      assert len(count) == 2
    run(x)
    assert len(count) == 2  # back to the first state: its trace is reused


def test_no_tracing_refuses_a_new_trace_and_no_execution_a_run():
  f = minijax.jit(lambda x: x * 2)
  f(jnp.arange(3))
  with minijax.no_tracing():
    assert f(jnp.arange(3)).tolist() == [0, 2, 4]  # cached: no trace needed
    with pytest.raises(RuntimeError, match="no_tracing"):
      f(jnp.arange(4))
  with minijax.no_execution():
    with pytest.raises(RuntimeError, match="no_execution"):
      f(jnp.arange(3))  # even with an executable on the fast path
  assert f(jnp.arange(3)).tolist() == [0, 2, 4]


def test_a_user_context_keys_jit_caches():
  ctx = minijax.make_user_context(0)
  g, calls = _counting(lambda x: x + 1)
  f = minijax.jit(g)
  f(1.0)
  f(1.0)
  with ctx(1):
    assert ctx.value == 1
    f(1.0)
  assert len(calls) == 2
  assert ctx.get_global() == 0
  ctx.set_global(5)
  try:
    assert ctx.value == 5 and ctx.get_global() == 5
    f(1.0)
    assert len(calls) == 3
  finally:
    ctx.set_global(0)


def test_f16_reductions_over_long_axes_are_refused_when_the_flag_is_off():
  x = jnp.ones(3, "bfloat16")
  assert float(lax.reduce_sum(x, [0])) == 3.0
  with minijax.allow_f16_reductions(False):
    with pytest.raises(ValueError, match=r"reduce_sum on operand bf16\[3\] is not allowed"):
      lax.reduce_sum(x, [0])
    with pytest.raises(ValueError, match="not allowed"):
      minijax.jit(lambda x: lax.reduce_sum(x, [0]))(jnp.ones(4, np.float16))
    assert lax.reduce_sum(jnp.ones((1, 3), "bfloat16"), [0]).shape == (3,)
  assert float(lax.reduce_sum(x, [0])) == 3.0
