"""The runtime of JAX-style callbacks, under both mechanisms: order across loop iterations
and dispatches, delivery of every call, exceptions (where they surface, and that later
callbacks still work), reentrancy, payload buffers, several devices, and the fallback when
the native host-call extension is missing."""
import logging
import textwrap

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.experimental import io_callback
from minijax.runtime import host_calls
from tests.conftest import run_python, using_tap_mechanism

S = minijax.ShapeDtypeStruct
F32 = S((), np.float32)
I32 = S((), np.int32)


@pytest.fixture(autouse=True, params=["native", "callback"])
def mechanism(request):
  yield from using_tap_mechanism(request.param, minijax.effects_barrier)


def _loop(body, n):
  return minijax.jit(lambda x: lax.fori_loop(0, n, body, x))


@pytest.mark.parametrize("kind", ["debug", "io"])
def test_ordered_calls_keep_order_over_100_iterations_and_20_dispatches(kind):
  seen = []

  def record(i, tag):
    seen.append((int(tag), int(i)))
    return np.int32(i)

  def body(i, tag):
    if kind == "debug":
      minijax.debug.callback(record, i, tag, ordered=True)
    else:
      io_callback(record, I32, i, tag, ordered=True)
    return tag

  f = _loop(body, 100)
  for tag in range(20):
    f(np.int32(tag))
  minijax.effects_barrier()
  assert seen == [(tag, i) for tag in range(20) for i in range(100)]


def test_all_10000_calls_of_a_loop_are_delivered():
  count = [0]

  def bump(x):
    count[0] += 1

  f = _loop(lambda i, x: (minijax.debug.callback(bump, x), x + 1.0)[1], 10_000)
  assert float(f(np.float32(0))) == 10_000.0
  minijax.effects_barrier()
  assert count[0] == 10_000


def test_pure_callback_values_flow_through_10000_iterations():
  f = _loop(lambda i, x: minijax.pure_callback(lambda v: v + 1, F32, x), 10_000)
  assert float(f(np.float32(0))) == 10_000.0


def test_large_payloads_stay_valid_while_referenced():
  kept = []
  f = minijax.jit(lambda x: (minijax.debug.callback(kept.append, x), x)[1])
  for k in range(40):  # more 1 MiB payloads than the hurry threshold keeps queued
    f(np.full(1 << 18, k, np.float32))
  minijax.effects_barrier()
  assert [(a.shape, float(a.min()), float(a.max())) for a in kept] == [
      ((1 << 18,), k, k) for k in range(40)]


# ----------------------------------------------------------------------------- exceptions

class Boom(Exception):
  pass


def _boom(*args):
  raise Boom("host function failed")


@pytest.mark.parametrize("kind", ["pure", "io", "io_ordered"])
def test_a_failing_value_returning_callback_is_logged_and_fails_the_call_as_in_jax(
    kind, caplog):
  def f(x):
    if kind == "pure":
      return minijax.pure_callback(_boom, F32, x)
    return io_callback(_boom, F32, x, ordered=kind == "io_ordered")

  api = "pure_callback" if kind == "pure" else "io_callback"
  g = minijax.jit(lambda x: io_callback(lambda v: v + 1, F32, x, ordered=True))
  for call in (minijax.jit(f), f):
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="minijax.callbacks"), pytest.raises(
        minijax.errors.JaxRuntimeError,
        match="INTERNAL: CpuCallback error calling callback: Boom: host function failed"
    ) as info:
      call(np.float32(1))
    assert f"minijax.{api} failed" in caplog.text and "Traceback" in caplog.text
    assert type(info.value.__cause__) is Boom  # the original, with its traceback
    frames, tb = [], info.value.__cause__.__traceback__
    while tb is not None:
      frames.append(tb.tb_frame.f_code.co_name)
      tb = tb.tb_next
    assert "_boom" in frames
    assert float(g(np.float32(1))) == 2.0  # later callbacks, ordered ones too, still work
  ok = minijax.jit(lambda x: minijax.pure_callback(lambda v: v * 3, F32, x))
  assert float(ok(np.float32(2))) == 6.0


def test_a_failing_ordered_call_inside_a_loop_leaves_later_calls_working():
  def maybe_fail(i):
    if int(i) == 5:
      raise Boom(f"at {int(i)}")
    return i

  f = _loop(lambda i, x: x + io_callback(maybe_fail, I32, i, ordered=True), 10)
  with pytest.raises(RuntimeError, match="Boom: at 5"):
    f(np.int32(0))
  g = _loop(lambda i, x: x + io_callback(lambda v: v, I32, i, ordered=True), 4)
  assert int(g(np.int32(0))) == 6


def test_debug_callback_exceptions_fail_the_call_that_ran_them_as_in_jax(caplog):
  twice = minijax.jit(lambda x: (minijax.debug.callback(_boom, x),
                                 minijax.debug.callback(_boom, x + 1), x)[-1])
  with caplog.at_level(logging.ERROR, logger="minijax.callbacks"), pytest.raises(
      minijax.errors.JaxRuntimeError,
      match="INTERNAL: CpuCallback error calling callback: Boom: host function failed"
  ) as info:
    twice(np.float32(0))
  assert type(info.value.__cause__) is Boom  # the original, with its traceback
  assert "1 more exception(s)" in str(info.value.__cause__.__notes__)
  assert sum("Exception in debug callback _boom" in r.getMessage() for r in caplog.records) == 2
  minijax.effects_barrier()  # reported once
  with pytest.raises(Boom):  # outside jit: the function's own exception, as JAX's
    minijax.debug.callback(_boom, np.float32(1))
  calls = []
  minijax.jit(lambda x: minijax.debug.callback(calls.append, x))(np.float32(2))
  assert [float(c) for c in calls] == [2.0]  # later calls still work


# ----------------------------------------------------------------------------- reentrancy

def test_a_callback_may_call_jitted_code_that_calls_back():
  inner = minijax.jit(lambda v: minijax.pure_callback(lambda y: y * 3, F32, v) + 1)
  middle = minijax.jit(lambda v: io_callback(lambda y: np.asarray(inner(y)), F32, v,
                                             ordered=True))
  outer = minijax.jit(lambda v: minijax.pure_callback(lambda y: np.asarray(middle(y)) * 2,
                                                      F32, v))
  assert float(outer(np.float32(2))) == 14.0
  assert float(outer(np.float32(3))) == 20.0


def test_callbacks_of_heavy_programs_run_on_the_dispatching_thread_and_may_nest_from_threads():
  # A program big enough that XLA would run it on a worker thread still makes its host
  # calls on the thread that dispatched it, so that several threads may each wait, inside
  # host functions, for computations they dispatch (holding XLA's workers instead, as
  # many as there are cores, would leave nothing to run them).
  import threading
  big = np.ones((128, 128), np.float32)
  heavy = lambda x: lax.fori_loop(0, 2, lambda i, m: m @ m * 1e-3, x)
  spec = S(big.shape, big.dtype)
  threads_seen = set()

  def host(v):
    threads_seen.add(threading.current_thread().name)
    return v + 1

  inner = minijax.jit(lambda x: heavy(minijax.pure_callback(host, spec, x)))
  outer = minijax.jit(lambda x: heavy(io_callback(lambda v: np.asarray(inner(v)), spec, x,
                                                  ordered=True)))
  results, errors = [], []

  def work():
    try:
      for _ in range(3):
        results.append(float(np.asarray(outer(big))[0, 0]))
    except Exception as e:  # noqa: BLE001
      errors.append(e)

  workers = [threading.Thread(target=work, name=f"caller-{k}") for k in range(3)]
  for t in workers:
    t.start()
  for t in workers:
    t.join(60)
  assert not errors and len(results) == 9 and not any(t.is_alive() for t in workers)
  assert threads_seen == {"caller-0", "caller-1", "caller-2"}


@pytest.mark.usefixtures("immediate_taps")
def test_debug_prints_dispatched_from_inside_a_callback_keep_program_order(capsys):
  inner = minijax.jit(lambda a: minijax.debug.print("inner {}", a, ordered=True))

  def host(v):
    inner(v)
    return v

  def f(a):
    minijax.debug.print("before {}", a, ordered=True)
    b = io_callback(host, F32, a, ordered=True)
    minijax.debug.print("after {}", b, ordered=True)

  minijax.jit(f)(np.float32(2))
  minijax.effects_barrier()
  assert capsys.readouterr().out.splitlines() == ["before 2.0", "inner 2.0", "after 2.0"]


def test_a_host_function_may_print_but_not_wait_for_the_computation_calling_it(capsys):
  def host(v):
    minijax.debug.print("inside {}", v)  # outside jit: printed at once
    return v

  f = minijax.jit(lambda x: io_callback(host, F32, x, ordered=True))
  assert float(f(np.float32(4))) == 4.0
  assert capsys.readouterr().out == "inside 4.0\n"

  def waits(v):
    minijax.effects_barrier()
    return v

  with pytest.raises(RuntimeError, match="effects_barrier.. was called from inside a "
                                         "pure_callback or io_callback function"):
    minijax.jit(lambda x: minijax.pure_callback(waits, F32, x))(np.float32(1))


@pytest.mark.parametrize("delivery", ["immediate", "deferred"])
def test_debug_calls_have_run_when_the_call_returns_as_in_jax(delivery, capsys):
  """A program reads what its computation printed right after the call, without a barrier
  (optax's tests read `debug.print` output so); taps stay asynchronous."""
  import contextlib
  import io
  with minijax.tap_delivery(delivery):
    def body(i, x):
      minijax.debug.print("step {}", i)
      minijax.debug.callback(lambda v: seen.append(int(v)), i, ordered=True)
      return x * 2
    seen = []
    run = minijax.jit(lambda x: lax.fori_loop(0, 50, body, x))
    for _ in range(3):
      seen.clear()
      out = io.StringIO()
      with contextlib.redirect_stdout(out):
        run(np.float32(1))
      assert out.getvalue() == "".join(f"step {i}\n" for i in range(50))
      assert seen == list(range(50))
    seen.clear()
    with contextlib.redirect_stdout(io.StringIO()) as out:  # eagerly: a loop compiled alone
      lax.fori_loop(0, 3, body, np.float32(1))
    assert out.getvalue() == "step 0\nstep 1\nstep 2\n" and seen == [0, 1, 2]


def test_a_debug_callback_that_dispatches_callbacks_gets_a_clear_error():
  inner = minijax.jit(lambda a: minijax.debug.callback(print, a))
  with pytest.raises(minijax.errors.JaxRuntimeError, match="receiver thread") as info:
    minijax.jit(lambda a: minijax.debug.callback(lambda v: inner(v), a))(np.float32(1))
  assert type(info.value.__cause__) is RuntimeError


# ----------------------------------------------------------------------------- processes

@pytest.mark.parametrize("mechanism", ["native"], indirect=True)  # one run covers both
def test_callbacks_on_two_devices_run_for_each_device_in_order(mechanism):
  proc = run_python(textwrap.dedent("""
      import threading
      import numpy as np, minijax
      from minijax import lax
      from minijax.experimental import io_callback
      F32 = minijax.ShapeDtypeStruct((), np.float32)
      for mech in ("native", "callback"):
        minijax.config.update("tap_mechanism", mech)
        debug, io = [], []
        def body(i, x):
          minijax.debug.callback(lambda v, d: debug.append((int(d), float(v),
              threading.current_thread().name)), i, x, ordered=True)
          return x + minijax.pure_callback(lambda v: v * 0, F32, x) + io_callback(
              lambda v, d: io.append((int(d), float(v))) or np.float32(0), F32, i, x,
              ordered=True)
        f = minijax.jit(lambda x: lax.fori_loop(0, 5, body, x))
        outs = [minijax.jit(lambda x: f(x), device=d)(np.float32(d.id))
                for d in minijax.devices()]
        minijax.effects_barrier()
        assert [float(o) for o in outs] == [0.0, 1.0]
        for d in (0, 1):
          assert [v for dev, v, _ in debug if dev == d] == list(range(5)), debug
          assert {t for dev, _, t in debug if dev == d} == {f"minijax-tap-receiver-{d}"}
          assert [v for dev, v in io if dev == d] == list(range(5)), io
      print("ok")
      """), {"MINIJAX_NUM_CPU_DEVICES": "2"})
  assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]


@pytest.mark.parametrize("mechanism", ["native"], indirect=True)  # one run covers both
def test_without_the_native_extension_callbacks_use_jaxlibs_with_one_warning(mechanism):
  proc = run_python(textwrap.dedent("""
      import sys, warnings
      sys.modules["minijax.runtime.host_calls._native"] = None  # as if the build had failed
      import numpy as np, minijax
      from minijax.experimental import io_callback
      from minijax.runtime import host_calls
      assert not host_calls.native_available()
      F32 = minijax.ShapeDtypeStruct((), np.float32)
      with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = minijax.jit(lambda x: minijax.pure_callback(lambda v: v + 1, F32, x))
        g = minijax.jit(lambda x: io_callback(lambda v: v * 2, F32, x, ordered=True))
        assert float(f(np.float32(1))) == 2.0 and float(g(np.float32(2))) == 4.0
        assert host_calls.CALLBACK_TARGET in f.lower(np.float32(1)).as_text()
      mine = [w for w in caught if "native host-call extension" in str(w.message)]
      assert len(mine) == 1, [str(w.message) for w in caught]
      print("ok")
      """))
  assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]


def test_each_mechanism_lowers_to_its_own_target(mechanism):
  text = minijax.jit(lambda x: minijax.pure_callback(np.sin, F32, x)).lower(
      np.float32(1)).as_text()
  target = host_calls.NATIVE_TARGET if mechanism == "native" else host_calls.CALLBACK_TARGET
  assert f"@{target}(" in text
