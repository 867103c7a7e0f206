"""A flag's `with` block holds in its own thread only, as JAX's do (x64_context_test's
`test_thread_safety`): other threads keep the global value, for jit's caches, eager
primitives, Python scalars and the NaN checks alike, and `config.update` still reaches
every thread."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.config import LOCAL_BLOCKS, config


def _in_thread(fn):
  out = {}

  def run():
    try:
      out["value"] = fn()
    except BaseException as e:  # (re-raised in the test's thread)
      out["error"] = e
  t = threading.Thread(target=run)
  t.start()
  t.join(timeout=120)
  if "error" in out:
    raise out["error"]
  return out["value"]


def _while_another_thread_is_in_a_block(block, inside, outside):
  """Runs `inside()` in a thread inside `block`, and `outside()` here while that block is
  open; returns both results."""
  entered, done = threading.Event(), threading.Event()

  def run():
    with block:
      entered.set()
      done.wait(timeout=120)
      return inside()
  results = {}
  t = threading.Thread(target=lambda: results.setdefault("inside", run()))
  t.start()
  assert entered.wait(timeout=120)
  try:
    results["outside"] = outside()
  finally:
    done.set()
    t.join(timeout=120)
  return results["inside"], results["outside"]


def test_enable_x64_in_one_thread_leaves_the_others_32_bit():
  f = minijax.jit(lambda: jnp.array(np.int64(0)) + 1)
  g = minijax.jit(lambda x: x * 2)
  inside, outside = _while_another_thread_is_in_a_block(
      minijax.enable_x64(True),
      lambda: (f().dtype, jnp.arange(3.0).dtype, g(1.0).dtype, (jnp.ones(2) + 1).dtype),
      lambda: (f().dtype, jnp.arange(3.0).dtype, g(1.0).dtype, (jnp.ones(2) + 1).dtype))
  assert inside == (np.int64, np.float64, np.float64, np.float64)
  assert outside == (np.int32, np.float32, np.float32, np.float32)
  assert LOCAL_BLOCKS[0] == 0 and f().dtype == np.int32


def test_two_threads_in_opposite_blocks_each_see_their_own():
  # JAX's x64_context_test.test_thread_safety, with both threads inside their blocks at once
  barrier = threading.Barrier(2, timeout=120)

  def dtype_under(enabled):
    with minijax.enable_x64(enabled):
      barrier.wait()
      out = jnp.array(np.int64(0)).dtype
      barrier.wait()
      return out
  results = {}
  threads = [threading.Thread(target=lambda e=e: results.setdefault(e, dtype_under(e)))
             for e in (True, False)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(timeout=120)
  assert results == {True: np.int64, False: np.int32}


def test_update_inside_a_block_changes_the_global_value_for_every_thread():
  before = config.get_global("debug_nans")
  try:
    with minijax.debug_nans(True):
      config.update("jax_debug_nans", True)
      assert _in_thread(lambda: config.debug_nans) is True
      config.update("jax_debug_nans", False)
      assert config.debug_nans is True and _in_thread(lambda: config.debug_nans) is False
    assert config.debug_nans is False
  finally:
    config.update("jax_debug_nans", before)


def test_debug_nans_in_one_thread_checks_only_that_threads_computations():
  log = minijax.jit(jnp.log)

  def inside():
    with pytest.raises(FloatingPointError):
      log(-1.0)
    with pytest.raises(FloatingPointError):
      jnp.log(-1.0)
    return "raised"
  assert _while_another_thread_is_in_a_block(
      minijax.debug_nans(True), inside,
      lambda: bool(np.isnan(log(-1.0))) and bool(np.isnan(jnp.log(-1.0)))) == ("raised", True)


def test_user_contexts_are_per_thread_too():
  ctx = minijax.make_user_context(0)
  f = minijax.jit(lambda x: x + ctx.value)
  inside, outside = _while_another_thread_is_in_a_block(
      ctx(10), lambda: float(f(1.0)), lambda: float(f(1.0)))
  assert (inside, outside) == (11.0, 1.0)
