"""Ordered effects across calls, under both `effects_ordering` settings: the seed's runtime
token (passed into and out of every execution) and the shared execution stream (the token
made inside the program, XLA's per-stream order across calls, fences for barriers).  See
docs/effects.md.  The other ordering tests run under either setting with
MINIJAX_EFFECTS_ORDERING; these run under both in every run."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.experimental import host_callback as hcb
from minijax.experimental import io_callback


@pytest.mark.usefixtures("immediate_taps")
def test_the_stream_lowering_makes_its_tokens_inside_main(effects_ordering):
  f = minijax.jit(lambda x: hcb.id_tap(lambda a, t: None, x * 2.0))
  text = f.lower(np.float32(1.0)).as_text()
  if effects_ordering == "stream":
    assert ('func.func public @main(%arg0: tensor<f32>) -> (tensor<f32> '
            '{jax.result_info = "result"})') in text
    assert "mhlo.create_token" in text
  else:
    assert ('@main(%arg0: !mhlo.token, %arg1: tensor<f32>) -> (!mhlo.token, tensor<f32> '
            '{jax.result_info = "result"})') in text
    assert "mhlo.create_token" not in text


def test_taps_of_successive_calls_arrive_in_call_order_even_behind_a_slow_program(
    effects_ordering):
  got = []
  heavy = minijax.jit(lambda m: hcb.id_tap(lambda a, t: got.append("heavy"),
                                           lax.fori_loop(0, 50, lambda i, m: jnp.tanh(m @ m), m)))
  light = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(int(a)), x))
  m = jnp.ones((96, 96)) * 0.01
  for round_ in range(3):
    got.clear()
    heavy(m)
    for i in range(20):
      light(i)
    hcb.barrier_wait()
    assert got == ["heavy", *range(20)], round_


def test_taps_from_several_threads_keep_each_threads_order(effects_ordering):
  got = {t: [] for t in range(3)}
  f = minijax.jit(lambda t, i: hcb.id_tap(lambda a, _: got[int(a[0])].append(int(a[1])),
                                          (t, i)))

  def run(t):
    for i in range(50):
      f(t, i)

  threads = [threading.Thread(target=run, args=(t,)) for t in range(3)]
  for th in threads:
    th.start()
  for th in threads:
    th.join()
  hcb.barrier_wait()
  assert got == {t: list(range(50)) for t in range(3)}


def test_a_host_function_that_dispatches_an_ordered_computation_runs_it_in_place(
    effects_ordering):
  got = []
  inner = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(("inner", int(a))), x))

  def host(x):
    got.append(("host", int(x)))
    inner(x + 100)
    return np.int32(x)

  outer = minijax.jit(lambda x: io_callback(host, jax_int(), hcb.id_tap(
      lambda a, t: got.append(("before", int(a))), x), ordered=True))
  assert int(outer(1)) == 1
  hcb.barrier_wait()
  # the inner computation ran to completion inside the host call (on the shared stream it
  # could not: the caller holds it), and every tap arrived
  assert sorted(got) == [("before", 1), ("host", 1), ("inner", 101)]


def test_a_host_function_dispatching_a_tapped_computation_again_takes_jits_fast_path(
    effects_ordering):
  # The second call from inside the host function is served by jit's fast path, which
  # runs a tapped program in jit's own frame: there too it runs in place, to completion.
  got = []
  inner = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(("inner", int(a))), x) * 2)
  y = minijax.device_put(np.int32(5))
  assert int(inner(y)) == 10
  hcb.barrier_wait()
  got.clear()

  def host(x):
    results = [int(inner(y)), int(inner(y))]
    got.append(("host", results))
    return np.int32(x)

  outer = minijax.jit(lambda x: io_callback(host, jax_int(), x, ordered=True))
  assert len(inner._wrapped._fast) == 1
  assert int(outer(1)) == 1
  hcb.barrier_wait()
  assert sorted(got) == [("host", [10, 10]), ("inner", 5), ("inner", 5)]
  assert len(inner._wrapped._fast) == 1  # served by the entry of the first call


def jax_int():
  return minijax.ShapeDtypeStruct((), np.int32)


def test_unordered_effects_on_the_stream_keep_no_status_and_barriers_cover_them():
  from minijax.runtime.tokens import runtime_tokens
  got = []

  def body(x):
    minijax.debug.callback(lambda a: got.append(int(a)), x)
    return x + 1

  saved = minijax.config.effects_ordering
  minijax.config.update("effects_ordering", "stream")
  try:
    f = minijax.jit(body)
    x = minijax.device_put(np.int32(0))
    minijax.effects_barrier()
    for _ in range(40):
      x = f(x)
    # no execution status was kept: the programs ran on the shared stream, whose fence
    # the barrier waits for
    assert not any(runtime_tokens._unordered.values())
    minijax.effects_barrier()
    assert sorted(got) == list(range(40)) and int(x) == 40
  finally:
    minijax.config.update("effects_ordering", saved)


def test_switching_the_setting_between_calls_keeps_call_order():
  got = []
  saved = minijax.config.effects_ordering
  f = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(int(a)), x))
  try:
    for k, mode in enumerate(("runtime_token", "stream", "runtime_token", "stream")):
      minijax.config.update("effects_ordering", mode)
      for i in range(5):
        f(5 * k + i)
    hcb.barrier_wait()
  finally:
    minijax.config.update("effects_ordering", saved)
  assert got == list(range(20))


def test_an_idle_barrier_dispatches_no_fence(effects_ordering):
  from minijax.runtime.tokens import runtime_tokens
  f = minijax.jit(lambda x: hcb.id_tap(lambda a, t: None, x))
  f(1)
  hcb.barrier_wait()
  hcb.barrier_wait()
  started, entries = runtime_tokens.snapshot()
  assert started == [] and entries == []


def test_programs_that_call_the_host_from_several_threads_call_it_on_those_threads(
    effects_ordering):
  # On the shared stream such a program, queued behind another thread's, would run (and
  # call its host functions) on one of XLA's worker threads; it runs on its own thread's
  # stream instead, after the streamed programs before it.
  seen = set()
  big = np.ones((96, 96), np.float32)
  spec = minijax.ShapeDtypeStruct(big.shape, big.dtype)

  def host(v):
    seen.add(threading.current_thread().name)
    return v

  f = minijax.jit(lambda m: lax.fori_loop(
      0, 2, lambda i, m: m @ m * 1e-3, io_callback(host, spec, m, ordered=True)))
  errors = []

  def work():
    try:
      for _ in range(4):
        np.asarray(f(big))
    except Exception as e:  # noqa: BLE001
      errors.append(e)

  threads = [threading.Thread(target=work, name=f"caller-{k}") for k in range(3)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(60)
  assert not errors and not any(t.is_alive() for t in threads)
  assert seen == {"caller-0", "caller-1", "caller-2"}


def test_a_tap_dispatched_while_a_program_calls_the_host_comes_after_that_program(
    effects_ordering):
  got = []
  started, dispatched = threading.Event(), threading.Event()

  def host(x):
    started.set()
    dispatched.wait(5)  # the other thread's call was made while this program runs
    return x

  p = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append("after the host call"),
                                       io_callback(host, jax_int(), x, ordered=True)))
  tap = minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append("other thread"), x))
  tap(0)
  hcb.barrier_wait()
  got.clear()

  def other():
    started.wait(5)
    threading.Timer(0.2, dispatched.set).start()  # let go of the host call even if
    tap(1)                                        # this dispatch waits for it
    dispatched.set()

  t = threading.Thread(target=other)
  t.start()
  p(np.int32(1))
  t.join(10)
  hcb.barrier_wait()
  assert got == ["after the host call", "other thread"]
