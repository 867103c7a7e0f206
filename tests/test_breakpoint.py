"""`debug.breakpoint`: the debugger sees the values a computation has where it stops, under
`jit`, `vmap`, `grad` and control flow, and its command line prints what JAX's jdb prints."""
from __future__ import annotations

import io

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.callbacks.breakpoint import get_debugger, register_debugger

SEEN: list[dict] = []


def _record(frames, thread_id, **kwargs):
  """A debugger that keeps the innermost frame's locals (and the kwargs it was given)."""
  SEEN.append({"locals": dict(frames[0].locals), "kwargs": kwargs, "frames": frames})


register_debugger("record", _record, priority=-10)  # below `cli`: only when named


@pytest.fixture(autouse=True)
def _clear():
  SEEN.clear()
  yield
  SEEN.clear()


def _cli(*commands):
  return io.StringIO("".join(c + "\n" for c in commands)), io.StringIO()


def test_cli_prints_values_of_a_jitted_function_where_it_stops():
  stdin, stdout = _cli("p y", "pp {'y': y}", "x + 1", "p nope", "c")

  @minijax.jit
  def f(x):
    y = x * 3
    minijax.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
    return y * 2

  assert float(f(np.float32(2.0))) == 12.0
  assert stdout.getvalue() == (
      "Entering jdb:\n"
      "(jdb) Array(6., dtype=float32)\n"
      "(jdb) {'y': Array(6., dtype=float32)}\n"
      "(jdb) Array(3., dtype=float32)\n"
      "(jdb) *** NameError: name 'nope' is not defined\n"
      "(jdb) ")


def test_cli_moves_between_frames_and_lists_source():
  stdin, stdout = _cli("u", "p inner", "d", "d", "w", "c")

  def inner(x):
    y = x * 3
    minijax.debug.breakpoint(stdin=stdin, stdout=stdout)
    return y

  def outer(x):
    inner = "outer's"  # noqa: F841 - read by the debugger
    return globals_free(x)

  globals_free = inner
  minijax.jit(outer)(np.float32(1.0))
  text = stdout.getvalue()
  assert "(jdb) > " in text and "->      return globals_free(x)" in text
  assert "(jdb) 'outer's'\n" in text.replace('"', "'")
  assert "At bottommost frame." in text
  where = text[text.index("Traceback:"):]
  assert where.index("return globals_free(x)") < where.index("minijax.debug.breakpoint(")


def test_values_under_vmap_grad_and_eagerly():
  def f(x):
    y = jnp.sin(x)
    minijax.debug.breakpoint(backend="record", tag="t")
    return y

  minijax.vmap(f)(np.arange(2, dtype=np.float32))
  minijax.grad(f)(np.float32(1.0))
  f(np.float32(0.5))
  minijax.effects_barrier()
  ys = [float(s["locals"]["y"]) for s in SEEN]
  np.testing.assert_allclose(ys, np.sin([0.0, 1.0, 1.0, 0.5]), rtol=1e-6)
  assert all(s["kwargs"] == {"tag": "t"} for s in SEEN)


def test_inside_scan_cond_and_while_with_pytree_and_static_locals():
  def body(c, x):
    tree = {"carry": c, "name": "static", "none": None}  # noqa: F841 - read by the debugger
    minijax.debug.breakpoint(backend="record", ordered=True)
    return c + x, c

  minijax.jit(lambda xs: lax.scan(body, np.float32(0), xs))(np.arange(3, dtype=np.float32))
  trees = [s["locals"]["tree"] for s in SEEN]
  assert [float(t["carry"]) for t in trees] == [0.0, 0.0, 1.0]
  assert all(t["name"] == "static" and t["none"] is None for t in trees)
  SEEN.clear()

  def positive(x):
    minijax.debug.breakpoint(backend="record")
    return x

  f = minijax.jit(lambda x: lax.cond(x > 0, positive, lambda x: -x, x))
  f(np.float32(3.0)), f(np.float32(-3.0))
  assert [float(s["locals"]["x"]) for s in SEEN] == [3.0]
  SEEN.clear()

  def step(c):
    i, x = c
    minijax.debug.breakpoint(backend="record", num_frames=1)
    return i + 1, x * 2

  minijax.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, step, (0, x)))(np.float32(1.0))
  assert [(int(s["locals"]["i"]), float(s["locals"]["x"])) for s in SEEN] == [
      (0, 1.0), (1, 2.0), (2, 4.0)]
  assert all(len(s["frames"]) == 1 for s in SEEN)


def test_token_orders_and_passes_through():
  order = []

  def h(x):
    y = x + 1
    y = minijax.debug.breakpoint(backend="record", token=y)
    minijax.debug.callback(lambda v: order.append(("after", float(v))), y)
    return y * 2

  out = minijax.jit(h)(np.float32(1.0))
  minijax.effects_barrier()
  assert float(out) == 4.0 and float(SEEN[0]["locals"]["y"]) == 2.0
  assert order == [("after", 2.0)]
  with pytest.raises(ValueError, match="mutually exclusive"):
    minijax.debug.breakpoint(ordered=True, token=np.float32(1))


def test_filter_frames_shows_minijax_frames_only_when_asked():
  f = lambda x: (minijax.debug.breakpoint(backend="record", filter_frames=False), x)[1]  # noqa: E731
  minijax.jit(f)(np.float32(1.0))
  g = lambda x: (minijax.debug.breakpoint(backend="record"), x)[1]  # noqa: E731
  minijax.jit(g)(np.float32(1.0))
  unfiltered, filtered = ([fr.filename for fr in s["frames"]] for s in SEEN)
  assert any("/minijax/" in name for name in unfiltered)
  assert not any("/minijax/" in name for name in filtered)


@pytest.mark.parametrize("jit", [False, True])
def test_quit_and_end_of_input_end_the_program(jit):
  for command in ("q", None):
    stdin, stdout = _cli(*([command] if command else []))

    def f(x):
      minijax.debug.breakpoint(stdin=stdin, stdout=stdout)
      return x

    with pytest.raises(SystemExit):
      (minijax.jit(f) if jit else f)(np.float32(1.0))
      minijax.effects_barrier()
    assert stdout.getvalue() == "Entering jdb:\n(jdb) "


def test_debugger_registry():
  assert get_debugger("record") is _record
  assert get_debugger() is not _record  # `cli` has the higher priority
  assert get_debugger("no such backend") is get_debugger()
  with pytest.raises(ValueError, match='"record" already registered'):
    register_debugger("record", _record, 0)
