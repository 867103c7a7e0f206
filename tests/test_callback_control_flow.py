"""Callbacks in control flow under vmap with a batched predicate, as JAX 0.10.2 has them:
io_callbacks are refused with JAX's errors, and a debug.print in a batched while_loop's
condition prints what JAX prints (the lines below were recorded from jax 0.10.2's
debugging_primitives_test.test_can_print_in_batched_while_cond), while the loop's values
stay right.  Also `fori_loop(unroll=)` and `debug.log`."""
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax import numpy as jnp
from minijax.experimental import io_callback


def test_an_io_callback_under_a_batched_cond_predicate_is_refused():
  def f(pred):
    return lax.cond(pred, lambda: io_callback(lambda: None, None),
                    lambda: io_callback(lambda: None, None))
  with pytest.raises(NotImplementedError, match="IO effect not supported in vmap-of-cond."):
    minijax.vmap(f)(jnp.array([True, True]))


@pytest.mark.parametrize("ordered, error", [
    (False, "Unordered IO effects not supported in while_loop with batched predicate"),
    (True, "Ordered IO effects not supported in vmap."),
])
def test_an_io_callback_in_a_while_loop_under_vmap_is_refused_as_in_jax(ordered, error):
  def f(i):
    def body(i):
      io_callback(lambda v: None, None, i, ordered=ordered)
      return i + 1
    return lax.while_loop(lambda i: i < 5, body, i)
  with pytest.raises(Exception, match=error):
    minijax.vmap(f)(jnp.array([0, 4]))
  if not ordered:  # with an unbatched predicate an unordered one maps lane by lane
    seen = []
    g = lambda x: lax.while_loop(lambda i: i < 2, lambda i: (
        io_callback(seen.append, None, x), i + 1)[1], 0)
    minijax.jit(minijax.vmap(g))(jnp.arange(3.0))
    minijax.effects_barrier()
    assert len(seen) == 6


ORDERED_LINES = [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]
UNORDERED_LINES = [0, 1, 0, 1, 1, 2, 1, 2, 2, 3, 2, 3, 3, 4, 3, 4, 4, 5, 4, 5, 5, 5]


@pytest.mark.parametrize("ordered, lines", [(True, ORDERED_LINES), (False, UNORDERED_LINES)])
def test_a_print_in_a_batched_while_condition_prints_what_jax_prints(capfd, ordered, lines):
  def f(x):
    def cond(x):
      minijax.debug.print("x: {x}", x=x, ordered=ordered)
      return x < 5
    return lax.while_loop(cond, lambda x: x + 1, x)
  out = minijax.vmap(f)(jnp.arange(2))
  minijax.effects_barrier()
  printed = [int(line[3:]) for line in capfd.readouterr().out.splitlines()]
  assert (printed if ordered else sorted(printed)) == (lines if ordered else sorted(lines))
  np.testing.assert_array_equal(out, [5, 5])  # each lane stops where its predicate says


def test_fori_loop_takes_unroll_with_static_bounds_only(capfd):
  f = lambda: lax.fori_loop(0, 4, lambda i, _: minijax.debug.print("{}", i), None, unroll=2)
  minijax.jit(f)()
  minijax.effects_barrier()
  assert sorted(map(int, capfd.readouterr().out.split())) == [0, 1, 2, 3]
  with pytest.raises(ValueError, match="Can only use `unroll` in `fori_loop` if the loop "
                                       "bounds are statically known."):
    minijax.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0, unroll=2))(3)


def test_debug_log_logs_on_the_minijax_debug_logger_from_the_callers_line(caplog):
  def f(x):
    minijax.debug.log("x={}", x * x)
    return x * x
  with caplog.at_level(logging.INFO, logger="minijax.debug"):
    assert int(minijax.jit(f)(2)) == 4
    minijax.effects_barrier()
  (record,) = [r for r in caplog.records if r.name == "minijax.debug"]
  assert record.getMessage() == "x=4" and record.levelno == logging.INFO
  assert record.pathname == __file__


def test_debug_log_has_logged_when_the_jitted_call_returns_its_value(caplog):
  """As with JAX, whose debugging test reads the record right after the call: debug.log
  runs during the computation (a host call), not later on the receiver thread."""
  def f(x):
    x = x * x
    minijax.debug.log("x={}", x)
    return x * x
  for _ in range(20):  # (a race would show in some of them)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="minijax.debug"):
      assert int(minijax.jit(f)(2)) == 16
      assert [r.getMessage() for r in caplog.records if r.name == "minijax.debug"] == ["x=4"]


def test_debug_log_logs_on_jaxs_logger_when_minijax_stands_in_for_jax(tmp_path):
  code = textwrap.dedent("""
      import logging
      import minijax
      jax = minijax.install_as_jax()
      records = []
      handler = logging.Handler()
      handler.emit = records.append
      logging.getLogger("jax._src.debugging").addHandler(handler)
      assert jax.jit(lambda x: (jax.debug.log("x={}", x * x), x * x * x)[1])(2) == 8
      print(records[0].msg)
  """)
  out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
                           os.path.abspath(__file__)))))
  assert out.returncode == 0, out.stderr
  assert out.stdout == "x=4\n"


def test_a_debug_print_in_a_cond_branch_other_than_the_first_is_never_dropped(capsys):
  """The cond was dropped when its outputs were all forwarded operands and only branch 0
  was asked for effects: a print in the true branch vanished, eagerly, under jit and
  under vmap (where, as in JAX, the branch runs for every lane)."""
  def g(x):
    def t(x):
      minijax.debug.print("pos {}", x)
      return x
    return lax.cond(x > 0, t, lambda x: x, x)
  g(1.0)
  g(-1.0)
  minijax.jit(g)(2.0)
  minijax.effects_barrier()
  assert capsys.readouterr().out == "pos 1.0\npos 2.0\n"
  out = minijax.vmap(g)(np.array([1.0, -1.0], np.float32))
  minijax.effects_barrier()
  np.testing.assert_array_equal(out, [1.0, -1.0])
  assert capsys.readouterr().out == "pos 1.0\npos -1.0\n"  # as jax 0.10.2 prints


def _switch_with_debug_effects(i, x):
  b0 = lambda x: (minijax.debug.print("b0 {x}", x=x), x + 1)[1]
  b1 = lambda x: (minijax.debug.callback(lambda v: print("b1 cb", v), x), x * 2)[1]
  b2 = lambda x: (minijax.debug.print("b2 {}", x, ordered=True), x - 1)[1]
  return lax.switch(i, [b0, b1, b2], x)


def test_vmap_of_a_switch_with_a_batched_index_runs_every_branch_with_its_debug_effects(capsys):
  """As JAX does, a batched index turns the switch into a select over every branch run on
  every lane, so each branch's debug.print/debug.callback (ordered or not) sees each lane:
  the lines jax 0.10.2 prints, eagerly in this order, under jit in some order."""
  index, x = jnp.array([2, 0, 1]), jnp.array([1.0, 2.0, 3.0])
  out = minijax.vmap(_switch_with_debug_effects)(index, x)
  minijax.effects_barrier()
  np.testing.assert_array_equal(out, [0.0, 3.0, 6.0])
  expected = ["b0 1.0", "b0 2.0", "b0 3.0", "b1 cb 1.0", "b1 cb 2.0", "b1 cb 3.0",
              "b2 1.0", "b2 2.0", "b2 3.0"]
  assert capsys.readouterr().out.splitlines() == expected
  out = minijax.jit(minijax.vmap(_switch_with_debug_effects))(index, x)
  minijax.effects_barrier()
  np.testing.assert_array_equal(out, [0.0, 3.0, 6.0])
  lines = capsys.readouterr().out.splitlines()
  assert sorted(lines) == expected
  assert [l for l in lines if l.startswith("b2")] == ["b2 1.0", "b2 2.0", "b2 3.0"]
  out = minijax.vmap(_switch_with_debug_effects, in_axes=(0, None))(jnp.array([2, 0]), 5.0)
  minijax.effects_barrier()
  np.testing.assert_array_equal(out, [4.0, 6.0])
  assert capsys.readouterr().out.splitlines() == [
      "b0 5.0", "b0 5.0", "b1 cb 5.0", "b1 cb 5.0", "b2 5.0", "b2 5.0"]


def test_an_ordered_io_callback_under_a_batched_cond_predicate_is_refused():
  def f(pred):
    return lax.cond(pred, lambda: io_callback(lambda: None, None, ordered=True), lambda: None)
  with pytest.raises(NotImplementedError, match="IO effect not supported in vmap-of-cond."):
    minijax.vmap(f)(jnp.array([True, False]))
