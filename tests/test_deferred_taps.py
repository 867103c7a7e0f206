"""Deferred taps (`tap_delivery="deferred"`): tapped values leave as outputs and arrive after
the computation, in program order, exactly as immediate taps arrive.  See
`minijax/runtime/taps/deferred.py` and docs/effects.md.

The project's tap, callback and ordering tests also pass with MINIJAX_TAP_DELIVERY=deferred
but for those that need delivery during the computation or read the immediate path's
internals (named in docs/effects.md)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.config import config
from minijax.core.deliveries import Branch, Buffered, Emit, Loop, Seq, walk
from minijax.experimental import host_callback as hcb
from minijax.experimental import io_callback
from minijax.interpreters.deferral import defer_taps
from minijax.runtime import backend, taps


def _deliveries(fn, *args, delivery: str):
  """What the taps of `jit(fn)(*args)` deliver, in order, under `delivery`; and the result."""
  got = []

  def tap(name):
    return lambda a, t: got.append((name, np.asarray(a).tolist(), tuple(x[0] for x in t)))

  with minijax.tap_delivery(delivery):
    out = minijax.jit(lambda *xs: fn(tap, *xs))(*args)
    hcb.barrier_wait()
  return got, np.asarray(out).tolist()


def _program(tap, x):
  x = hcb.id_tap(tap("first"), x)

  def body(c, y):
    c = hcb.id_tap(tap("scan"), c + y)
    c = lax.cond(c > 2, lambda c: hcb.id_tap(tap("big"), c), lambda c: c * 2, c)
    c = lax.switch(jnp.int32(c) % 3, [lambda c: c, lambda c: hcb.id_tap(tap("one"), c) + 1,
                                      lambda c: hcb.id_tap(tap("two"), c) - 1], c)
    return c, c

  c, ys = lax.scan(body, x, jnp.arange(4.0))
  c = minijax.checkpoint(lambda c: hcb.id_tap(tap("remat"), c * 0.5))(c)
  c = lax.fori_loop(0, 3, lambda i, c: hcb.id_tap(tap("fori"), c + i), c)
  c = minijax.jit(lambda c: hcb.id_tap(tap("inner jit"), c - 1))(c)
  return jnp.concatenate([ys, c[None]])


def test_deferred_taps_arrive_as_immediate_ones_do_through_scan_cond_switch_calls_and_fori():
  deferred = _deliveries(_program, np.float32(1.0), delivery="deferred")
  immediate = _deliveries(_program, np.float32(1.0), delivery="immediate")
  assert deferred == immediate
  names = [name for name, _, _ in deferred[0]]
  assert names[:2] == ["first", "scan"] and names.count("scan") == 4
  assert names[-5:] == ["remat", "fori", "fori", "fori", "inner jit"]
  assert {"big", "one", "two"} <= set(names)


def test_only_the_branch_taken_delivers_and_reverse_scans_deliver_in_the_order_they_ran():
  def f(tap, xs):
    def body(c, x):
      lax.cond(x > 1, lambda: hcb.id_tap(tap("yes"), x), lambda: hcb.id_tap(tap("no"), -x))
      return c, x
    return lax.scan(body, 0.0, xs, reverse=True)[1]

  got, _ = _deliveries(f, jnp.arange(4.0), delivery="deferred")
  assert [(name, v) for name, v, _ in got] == [("yes", 3.0), ("yes", 2.0), ("no", -1.0),
                                               ("no", -0.0)]


def test_the_seeds_transforms_of_vmap_jvp_and_grad_survive_the_deferral():
  def f(tap, x):
    g = lambda x: hcb.id_tap(tap("t"), x * 2.0).sum()  # noqa: E731
    y = minijax.vmap(lambda r: hcb.id_tap(tap("v"), r))(x)
    return minijax.grad(g)(y) + minijax.jvp(g, (y,), (y,))[1]

  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  deferred, immediate = (_deliveries(f, x, delivery=d) for d in ("deferred", "immediate"))
  assert deferred == immediate
  assert {t for _, _, t in deferred[0]} >= {("batch",), ("jvp",), ("jvp", "transpose")}


def test_a_deferred_program_keeps_no_tap_custom_call_and_no_effect():
  f = lambda x: hcb.id_print(lax.scan(lambda c, y: (hcb.id_tap(lambda a, t: None, c + y), c),  # noqa: E731
                                      x, jnp.ones(3))[0])
  closed = minijax.make_jaxpr(f)(np.float32(1))
  pure, plan, takes_record_id = defer_taps(closed)
  assert not takes_record_id and not pure.jaxpr.effects and len(pure.jaxpr.outvars) == 1 + plan.width == 3
  assert [type(item) for item in plan.items] == [Loop, Emit]
  with minijax.tap_delivery("deferred"):
    lowered = minijax.jit(f).lower(np.float32(1))
    assert "custom_call" not in lowered.as_text()
    assert float(lowered.compile()(np.float32(1))) == 4.0
    hcb.barrier_wait()
  with minijax.tap_delivery("immediate"):
    target = taps.NATIVE_TARGET if taps.mechanism() == "native" else taps.CALLBACK_TARGET
    assert target in minijax.jit(f).lower(np.float32(1)).as_text()


@pytest.mark.parametrize("loop_buffer", [1, 3, 1024])
def test_while_loop_taps_are_buffered_and_full_buffers_reach_the_host_in_order(loop_buffer):
  def f(tap, x):
    x = hcb.id_tap(tap("before"), x)
    x = lax.while_loop(lambda c: c < 10, lambda c: hcb.id_tap(tap("while"), c + 1), x)

    def body(c, y):  # a while_loop in each iteration of a scan, one in a branch
      c = lax.while_loop(lambda c: c < y, lambda c: hcb.id_tap(tap("inner"), c + 1), c)
      c = lax.cond(c % 2 == 0, lambda c: lax.while_loop(
          lambda d: d < c + 2, lambda d: hcb.id_tap(tap("branch"), d + 1), c), lambda c: c, c)
      return c, None

    x = lax.scan(body, x, jnp.arange(11, 17, dtype=np.int32))[0]
    return hcb.id_tap(tap("after"), x)

  previous = config.tap_loop_buffer
  config.update("tap_loop_buffer", loop_buffer)
  try:
    deferred = _deliveries(f, np.int32(0), delivery="deferred")
  finally:
    config.update("tap_loop_buffer", previous)
  assert deferred == _deliveries(f, np.int32(0), delivery="immediate")
  names = [name for name, _, _ in deferred[0]]
  assert names.count("while") == 10 and names[0] == "before" and names[-1] == "after"
  assert "branch" in names and "inner" in names


def test_a_while_loop_makes_the_deferred_program_take_its_record_id():
  f = lambda x: lax.while_loop(lambda c: c < 3, lambda c: hcb.id_print(c + 1), x)  # noqa: E731
  pure, plan, takes_record_id = defer_taps(minijax.make_jaxpr(f)(np.int32(0)), 2)
  assert takes_record_id and len(pure.jaxpr.invars) == 2
  assert [type(item) for item in plan.items] == [Buffered] and plan.items[0].size == 2
  assert {type(e).__name__ for e in pure.jaxpr.effects} == {"IOEffect"}  # the full buffers
  g = lambda x: hcb.id_print(x)  # noqa: E731
  assert defer_taps(minijax.make_jaxpr(g)(np.int32(0)))[2] is False


def test_taps_that_must_run_during_the_computation_keep_every_tap_of_it_immediate():
  def f(tap, x):
    x = hcb.id_tap(tap("before"), x)
    minijax.debug.log("logged")  # a host call when it runs: not deferrable
    return hcb.id_tap(tap("after"), x + 1)

  closed = minijax.make_jaxpr(lambda x: f(lambda n: (lambda a, t: None), x))(np.int32(0))
  assert defer_taps(closed) is None
  got, out = _deliveries(f, np.int32(0), delivery="deferred")
  assert [(n, v) for n, v, _ in got] == [("before", 0), ("after", 1)] and out == 1


def test_debug_callbacks_and_prints_of_no_operands_are_deferred_each_time_they_run(capsys):
  seen = []

  def f(x):
    def body(c, _):
      minijax.debug.print("tick", ordered=True)
      minijax.debug.callback(lambda a: seen.append(float(a)), c)
      return c + 1, None
    return lax.scan(body, x, None, length=3)[0]

  with minijax.tap_delivery("deferred"):
    assert float(minijax.jit(f)(np.float32(1))) == 4.0
    minijax.effects_barrier()
  assert capsys.readouterr().out == "tick\ntick\ntick\n" and seen == [1.0, 2.0, 3.0]


def test_calls_keep_dispatch_order_across_threads_and_across_a_switch_of_delivery():
  got = []
  heavy = minijax.jit(lambda m: hcb.id_tap(lambda a, t: got.append("heavy"),
                                           lax.fori_loop(0, 40, lambda i, m: jnp.tanh(m @ m), m)))
  light = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(int(a)), x))
  m = jnp.ones((96, 96)) * 0.01
  for first, second in [("immediate", "deferred"), ("deferred", "immediate")]:
    got.clear()
    with minijax.tap_delivery(first):
      heavy(m)
      light(0)
    with minijax.tap_delivery(second):
      for i in range(1, 10):
        light(i)
    hcb.barrier_wait()
    assert got == ["heavy", *range(10)], (first, second)


def test_a_deferred_call_dispatched_while_another_calls_the_host_comes_after_it():
  got = []
  started, dispatched = threading.Event(), threading.Event()

  def host(x):
    started.set()
    dispatched.wait(5)
    return x

  p = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append("after the host call"),
                                       io_callback(host, np.int32(0), x, ordered=True)))
  tap = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append("other thread"), x))

  def other():
    started.wait(5)
    tap(1)
    dispatched.set()

  with minijax.tap_delivery("deferred"):
    tap(0)
    hcb.barrier_wait()
    got.clear()
    t = threading.Thread(target=other)
    t.start()
    p(np.int32(1))
    t.join(10)
    hcb.barrier_wait()
  assert got == ["after the host call", "other thread"]


def test_exceptions_of_deferred_tap_functions_are_raised_by_the_barrier_and_delivery_goes_on():
  got = []

  def tap(a, t):
    if a == 1:
      raise ValueError("one is not welcome")
    got.append(int(a))

  f = minijax.jit(lambda xs: lax.scan(lambda c, x: (c, hcb.id_tap(tap, x)), 0, xs)[1])
  with minijax.tap_delivery("deferred"):
    f(jnp.arange(3))
    with pytest.raises(hcb.TapFunctionException, match="one is not welcome"):
      hcb.barrier_wait()
  assert got == [0, 2]


def test_switching_tap_delivery_back_and_forth_reuses_each_executable():
  got = []
  f = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(float(a)), x) * 2)
  executables = {}
  for delivery in ["deferred", "immediate", "deferred", "immediate"]:
    with minijax.tap_delivery(delivery):
      n = len(got)  # (read once: the tap may be delivered before the comparison)
      assert float(f(np.float32(n))) == 2.0 * n
      executables.setdefault(delivery, set()).add(
          f.lower(np.float32(0)).compile()._fn.__class__.__name__)
      hcb.barrier_wait()
  assert got == [0.0, 1.0, 2.0, 3.0]
  assert executables == {"deferred": {"DeferredCall"}, "immediate": {"Executable"}}


def test_auto_delivery_is_the_platforms_choice_and_immediate_on_the_cpu():
  cpu = backend.local_devices()[0]
  assert taps.deferred.AUTO_DELIVERY["cpu"] == "immediate"
  with minijax.tap_delivery("auto"):
    assert taps.deferred.delivery(cpu) == "immediate"
  with minijax.tap_delivery("deferred"):
    assert taps.deferred.delivery(cpu) == "deferred"
  with pytest.raises(ValueError, match="tap_delivery"):
    config.update("tap_delivery", "later")


def test_the_plan_walks_loops_and_branches_over_host_arrays_and_reports_failures():
  seen, failures = [], []
  emit = Emit(lambda arrays, device: seen.append((device, [a.tolist() for a in arrays])), 1)
  bad = Emit(lambda arrays, device: 1 / 0, 0, name="bad")
  plan = Seq([emit, Loop(2, False, Seq([Branch([Seq([bad]), Seq([emit])])]))])
  index, value = np.array([0, 1]), np.array([[0.0], [5.0]])
  walk(plan, [np.array(7.0), index, value], "dev",
       lambda e, which: failures.append((type(e), which.name)))
  assert seen == [("dev", [7.0]), ("dev", [[5.0]])]
  assert failures == [(ZeroDivisionError, "bad")]


def test_deferred_outputs_waiting_for_a_slow_receiver_are_bounded_by_the_queue_size():
  release = threading.Event()
  peak = []

  def slow(a, t):
    release.wait(10)
    peak.append(taps.deferred.pending_records())

  f = minijax.jit(lambda x: hcb.id_tap(slow, x))
  previous = config.tap_queue_bytes
  config.update("tap_queue_bytes", 3 * 4096)
  try:
    with minijax.tap_delivery("deferred"):
      timer = threading.Timer(0.5, release.set)
      timer.start()
      for _ in range(8):
        f(jnp.zeros(1024))  # 4 KiB held per call until delivered
      hcb.barrier_wait()
  finally:
    config.update("tap_queue_bytes", previous)
  assert len(peak) == 8 and max(peak) <= 3


def test_deferred_taps_of_a_program_still_queued_at_exit_are_delivered():
  code = textwrap.dedent("""
      import numpy as np, minijax
      from minijax import lax
      from minijax.experimental import host_callback as hcb
      minijax.config.update("tap_delivery", "deferred")
      f = minijax.jit(lambda xs: lax.scan(lambda c, x: (c, hcb.id_print(x)), 0, xs)[1])
      f(np.arange(3))
      """)
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=120)
  assert proc.returncode == 0, proc.stderr
  assert proc.stdout.split() == ["0", "1", "2"]
