"""The tap runtime on real jaxlib: hand-built MHLO modules whose custom calls come from
`callbacks.common.emit_tap_call`, compiled through `executable.compile`, for both tap mechanisms.

Every module is `main(token, *args) -> (token, *args)` (or without the token for unordered
taps): the identity, tapping some of its arguments on the way.  Tests wait for taps with
`barrier_wait`, never with `sleep`.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import time

import ml_dtypes
import numpy as np
import pytest
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_dialect
from jaxlib.mlir.dialects import mhlo

from minijax import tree_util
from minijax.callbacks.common import emit_tap_call
from minijax.config import config
from minijax.core.avals import ShapedArray
from minijax.core.effects import Effect
from minijax.lowering.context import ir_context
from minijax.lowering.mlir import aval_to_ir_type
from minijax.runtime import backend, executable
from minijax.runtime import taps
from minijax.runtime.array import device_put
from minijax.runtime.taps.queues import native_available, queues
from tests.conftest import using_tap_mechanism

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TestTapEffect(Effect):
  ordered = True


# ----------------------------------------------------------------------------- module builders

def compile_tapping(in_avals, emit_body, *, ordered=True, device=0, name="taps"):
  """Compiles `main` whose body `emit_body(token, args, host_callbacks) -> token` taps."""
  in_avals = [ShapedArray(tuple(a.shape), np.dtype(a.dtype)) for a in in_avals]
  host_callbacks: list = []
  with ir_context(), ir.Location.unknown():
    module = ir.Module.create()
    token_types = [mhlo.TokenType.get()] if ordered else []
    types = token_types + [aval_to_ir_type(a) for a in in_avals]
    with ir.InsertionPoint(module.body):
      fn = func_dialect.FuncOp("main", ir.FunctionType.get(types, types))
      fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
      block = fn.add_entry_block()
      with ir.InsertionPoint(block):
        args = list(block.arguments)
        token = args.pop(0) if ordered else None
        token = emit_body(token, args, host_callbacks)
        func_dialect.ReturnOp(([token] if ordered else []) + args)
    module.operation.verify()
  dev = backend.get_device(device)
  effects = (TestTapEffect(),) if ordered else ()
  return executable.compile(
      module, device=dev, name=name, in_avals=in_avals, out_avals=in_avals,
      host_callbacks=host_callbacks, num_tokens=len(effects),
      ordered_effects=effects, unordered_effects=() if ordered else (TestTapEffect(),))


def consumer_for(func, avals, transforms=(), tree=None):
  """Registers `func` for the leaves `avals` (a tuple of them unless `tree` is given)."""
  treedef = tree_util.tree_structure(tree if tree is not None else tuple(range(len(avals))))
  return taps.register_consumer(func, transforms, treedef, avals)


def tap_args(func, indices=None, transforms=()):
  """A body that taps the arguments at `indices` (all of them by default) as one tuple."""
  def body(token, args, host_callbacks):
    chosen = args if indices is None else [args[i] for i in indices]
    avals = [_aval_of(v) for v in chosen]
    cid = consumer_for(func, avals, transforms)
    return emit_tap_call(cid, token, chosen, host_callbacks=host_callbacks)
  return body


def in_loop(n, body):
  """Wraps `body` in an mhlo.while that runs it `n` times, threading the token."""
  def loop_body(token, args, host_callbacks):
    i32 = ir.RankedTensorType.get((), ir.IntegerType.get_signless(32))
    carried = ([token] if token is not None else []) + list(args)
    loop = mhlo.WhileOp([i32] + [v.type for v in carried], [i32_constant(0)] + carried)
    cond = loop.cond.blocks.append(i32, *[v.type for v in carried])
    with ir.InsertionPoint(cond):
      pred = mhlo.CompareOp(cond.arguments[0], i32_constant(n),
                            mhlo.ComparisonDirectionAttr.get("LT")).result
      mhlo.ReturnOp([pred])
    step = loop.body.blocks.append(i32, *[v.type for v in carried])
    with ir.InsertionPoint(step):
      i, *rest = step.arguments
      tok = rest.pop(0) if token is not None else None
      tok = body(tok, rest, host_callbacks)
      nxt = mhlo.AddOp(i, i32_constant(1)).result
      mhlo.ReturnOp([nxt] + ([tok] if token is not None else []) + rest)
    results = list(loop.results)[1:]
    if token is not None:
      token = results.pop(0)
    args[:] = results
    return token
  return loop_body


def i32_constant(value: int, tensor_type=None) -> ir.Value:
  i32 = ir.IntegerType.get_signless(32)
  return mhlo.ConstantOp(ir.DenseElementsAttr.get_splat(
      tensor_type or ir.RankedTensorType.get((), i32), ir.IntegerAttr.get(i32, value))).result


def _aval_of(value: ir.Value):
  t = ir.RankedTensorType(value.type)
  return ShapedArray(tuple(t.shape), _DTYPES_BY_IR[str(t.element_type)])


_DTYPES_BY_IR = {"i1": np.dtype(bool), "i8": np.dtype(np.int8), "ui8": np.dtype(np.uint8),
                 "i32": np.dtype(np.int32), "f16": np.dtype(np.float16),
                 "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32),
                 "i16": np.dtype(np.int16), "ui32": np.dtype(np.uint32)}


def run(exe, *values):
  taps.before_execution()
  return exe(*[device_put(np.asarray(v), exe.device) for v in values])


class Recorder:
  """A tap function that remembers what it got (and optionally sleeps or raises)."""

  def __init__(self, delay=0.0, fail_on=None):
    self.calls = []
    self.delay = delay
    self.fail_on = fail_on
    self.threads = set()

  def __call__(self, arg, transforms):
    self.threads.add(threading.current_thread().name)
    if self.delay:
      time.sleep(self.delay)
    if self.fail_on is not None and self.fail_on(arg):
      raise ValueError(f"tap function refuses {arg}")
    self.calls.append((arg, transforms))

  @property
  def args(self):
    return [a for a, _ in self.calls]


@pytest.fixture(params=["native", "callback"])
def mechanism(request):
  yield from using_tap_mechanism(request.param, taps.barrier_wait)


f32 = np.float32


# ----------------------------------------------------------------------------- delivery

def test_a_tap_delivers_the_values_on_a_receiver_thread(mechanism):
  rec = Recorder()
  exe = compile_tapping([ShapedArray((3,), f32)], tap_args(rec))
  outs = run(exe, np.arange(3, dtype=f32))
  taps.barrier_wait()
  np.testing.assert_array_equal(np.asarray(outs[0]), np.arange(3, dtype=f32))
  (arg,) = rec.args
  assert isinstance(arg, tuple) and isinstance(arg[0], np.ndarray)
  np.testing.assert_array_equal(arg[0], np.arange(3, dtype=f32))
  assert rec.calls[0][1] == ()
  assert all(t.startswith("minijax-tap-receiver-") for t in rec.threads)
  assert taps.mechanism() == mechanism


def test_ordered_taps_arrive_in_program_order(mechanism):
  rec = Recorder()

  def body(token, args, host_callbacks):
    for k in range(10):
      token = tap_args(lambda a, t, k=k: rec((k, a), t))(token, args, host_callbacks)
    return token

  exe = compile_tapping([ShapedArray((), f32)], body)
  run(exe, f32(1))
  taps.barrier_wait()
  assert [k for k, _ in rec.args] == list(range(10))


def test_taps_from_successive_calls_arrive_in_call_order(mechanism):
  rec = Recorder()
  exe = compile_tapping([ShapedArray((), np.int32)], tap_args(rec))
  for i in range(50):
    run(exe, np.int32(i))
  taps.barrier_wait()
  assert [int(a[0]) for a in rec.args] == list(range(50))


@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "unordered"])
def test_taps_inside_a_while_loop_arrive_in_iteration_order(mechanism, ordered):
  rec = Recorder()

  def body(token, args, host_callbacks):
    (x,) = args
    args[0] = mhlo.AddOp(x, i32_constant(1)).result
    return tap_args(rec)(token, args, host_callbacks)

  exe = compile_tapping([ShapedArray((), np.int32)], in_loop(100, body), ordered=ordered)
  outs = run(exe, np.int32(0))
  taps.barrier_wait()
  assert int(np.asarray(outs[0])) == 100
  assert [int(a[0]) for a in rec.args] == list(range(1, 101))


def test_a_tap_of_an_empty_tuple_still_calls_the_tap_function(mechanism):
  got = []

  def body(token, args, host_callbacks):
    cid = consumer_for(lambda arg, t: got.append(arg), [])
    return emit_tap_call(cid, token, [], host_callbacks=host_callbacks)

  exe = compile_tapping([ShapedArray((), f32)], body)
  run(exe, f32(0))
  taps.barrier_wait()
  assert got == [()]


def test_several_arrays_and_a_pytree_arrive_in_one_tap(mechanism):
  got = []
  tree = {"a": 0, "b": (0, 0)}

  def body(token, args, host_callbacks):
    cid = consumer_for(lambda arg, t: got.append(arg), [_aval_of(v) for v in args], tree=tree)
    return emit_tap_call(cid, token, args, host_callbacks=host_callbacks)

  exe = compile_tapping([ShapedArray((2,), f32), ShapedArray((), np.int32),
                         ShapedArray((2, 2), np.uint8)], body)
  run(exe, np.array([1.5, 2.5], f32), np.int32(7), np.arange(4, dtype=np.uint8).reshape(2, 2))
  taps.barrier_wait()
  (arg,) = got
  assert sorted(arg) == ["a", "b"]
  np.testing.assert_array_equal(arg["a"], [1.5, 2.5])
  assert arg["b"][0] == 7 and arg["b"][0].dtype == np.int32
  np.testing.assert_array_equal(arg["b"][1], np.arange(4).reshape(2, 2))


def test_taps_of_one_leaf_several_leaves_trees_and_empty_leaves_interleave_in_order(mechanism):
  # The native queues deliver one array, a tuple of arrays and a tree of arrays themselves
  # (a tree through its treedef); a tap with an empty array goes through Python.  All keep
  # one order.
  got = []
  empty = ShapedArray((0,), f32)

  def body(token, args, host_callbacks):
    x, y = args
    ax, ay = _aval_of(x), _aval_of(y)
    for tag, tree, avals, values in [
        ("leaf", 0, [ax], [x]), ("one", (0,), [ax], [x]), ("pair", (0, 0), [ay, ax], [y, x]),
        ("tree", {"b": (0, 0), "a": 0}, [ax, ay, ax], [x, y, x]),
        ("empty", (0, 0), [ax, empty], [x, mhlo.ConstantOp(ir.DenseElementsAttr.get(
            np.zeros(0, f32))).result])]:
      cid = consumer_for(lambda arg, t, tag=tag: got.append((tag, arg)), avals, tree=tree)
      token = emit_tap_call(cid, token, values, host_callbacks=host_callbacks)
    return token

  n = 30
  exe = compile_tapping([ShapedArray((), np.int32), ShapedArray((2,), np.uint8)],
                        in_loop(n, body))
  run(exe, np.int32(5), np.array([3, 4], np.uint8))
  taps.barrier_wait()
  assert [tag for tag, _ in got] == ["leaf", "one", "pair", "tree", "empty"] * n
  for (_, leaf), (_, one), (_, pair), (_, tree), (_, with_empty) in zip(*[iter(got)] * 5):
    assert type(leaf) is np.ndarray and leaf.dtype == np.int32 and int(leaf) == 5
    assert type(one) is tuple and len(one) == 1 and int(one[0]) == 5
    assert type(pair) is tuple and pair[0].dtype == np.uint8 and pair[0].tolist() == [3, 4]
    assert pair[1].dtype == np.int32 and pair[1].shape == () and int(pair[1]) == 5
    assert list(tree) == ["a", "b"] and type(tree["b"]) is tuple
    assert int(tree["a"]) == 5 and tree["b"][0].tolist() == [3, 4] and int(tree["b"][1]) == 5
    assert int(with_empty[0]) == 5 and with_empty[1].shape == (0,)
    assert with_empty[1].dtype == np.float32
  if mechanism == "native":
    from minijax.runtime.taps import registry
    entries = {len(e) for e in registry.simple_consumers.values()}
    assert {5, 7} <= entries


DTYPES = [np.dtype(bool), np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32),
          np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)]
SHAPES = [(), (2,), (2, 3), (2, 3, 4)]


def test_every_dtype_and_shape_arrives_intact(mechanism):
  rng = np.random.default_rng(0)
  values = [(rng.standard_normal(s) * 10).astype(d) for d in DTYPES for s in SHAPES]
  got = []
  exe = compile_tapping(values, tap_args(lambda arg, t: got.append(arg)))
  run(exe, *values)
  taps.barrier_wait()
  (arg,) = got
  for want, have in zip(values, arg):
    assert have.dtype == want.dtype and have.shape == want.shape
    assert have.tobytes() == want.tobytes()


def test_a_tap_can_ask_for_its_device_and_transforms_are_unpacked(mechanism):
  got = []

  def with_device(arg, transforms, *, device):
    got.append((transforms, device))

  exe = compile_tapping([ShapedArray((), f32)], tap_args(
      with_device, transforms=(("batch", (0,)), ("jvp",), ("transpose",))))
  run(exe, f32(2))
  taps.barrier_wait()
  assert got == [((("batch", {"batch_dims": (0,)}), ("jvp", {}), ("transpose", {})),
                  backend.devices()[0])]


def test_an_unordered_tap_is_kept_and_delivered(mechanism):
  rec = Recorder()
  exe = compile_tapping([ShapedArray((4,), f32)], tap_args(rec), ordered=False)
  target = {"native": taps.NATIVE_TARGET, "callback": taps.CALLBACK_TARGET}[mechanism]
  assert f'custom_call_target="{target}"' in exe.as_text()
  run(exe, np.ones(4, f32))
  taps.barrier_wait()
  np.testing.assert_array_equal(rec.args[0][0], np.ones(4, f32))


def test_a_64_mb_tap_arrives_whole(mechanism):
  n = 16 * 1024 * 1024
  got = []
  exe = compile_tapping([ShapedArray((n,), f32)], tap_args(lambda a, t: got.append(a[0])))
  x = np.arange(n, dtype=f32)
  run(exe, x)
  taps.barrier_wait()
  np.testing.assert_array_equal(got[0], x)


def test_a_tap_larger_than_the_whole_queue_still_gets_through(mechanism):
  got = []
  exe = compile_tapping([ShapedArray((64 * 1024,), f32)],
                        in_loop(3, tap_args(lambda a, t: got.append(a[0][-1]))))
  saved = config.tap_queue_bytes
  config.update("tap_queue_bytes", 100_000)
  try:
    run(exe, np.arange(64 * 1024, dtype=f32))
    taps.barrier_wait()
  finally:
    config.update("tap_queue_bytes", saved)
  assert got == [64 * 1024 - 1] * 3


# ----------------------------------------------------------------------------- errors

def test_an_exception_in_a_tap_function_is_logged_counted_and_raised_at_the_barrier(
    mechanism, caplog):
  rec = Recorder(fail_on=lambda arg: int(arg[0]) % 3 == 0)
  exe = compile_tapping([ShapedArray((), np.int32)], tap_args(rec))
  before = sum(s.exceptions for s in taps.tap_stats().values())
  with caplog.at_level(logging.ERROR, logger="minijax.taps"):
    for i in range(7):
      run(exe, np.int32(i))
    with pytest.raises(taps.TapFunctionException, match="3 exception"):
      taps.barrier_wait()
  assert [int(a[0]) for a in rec.args] == [1, 2, 4, 5]
  failures = [r for r in caplog.records if r.name == "minijax.taps"]
  assert len(failures) == 3 and "tap function refuses" in failures[0].exc_text
  assert sum(s.exceptions for s in taps.tap_stats().values()) == before + 3
  taps.barrier_wait()  # the count was reset
  run(exe, np.int32(8))
  taps.barrier_wait()
  assert int(rec.args[-1][0]) == 8  # the receiver kept working


def test_barrier_wait_inside_a_tap_function_raises_instead_of_hanging(mechanism):
  errors = []

  def tap(arg, transforms):
    for attempt in (taps.barrier_wait, taps.before_execution):
      try:
        attempt()
      except RuntimeError as e:
        errors.append(str(e))

  exe = compile_tapping([ShapedArray((), f32)], tap_args(tap))
  run(exe, f32(0))
  taps.barrier_wait()
  assert len(errors) == 2
  assert "barrier_wait() was called from a tap function" in errors[0]
  assert "computation that contains taps" in errors[1]
  assert taps.in_receiver_thread() is False


# ----------------------------------------------------------------------------- the queue

def test_backpressure_delivers_every_tap_in_order_within_the_queue_bound(mechanism):
  n, size, bound = 1000, 64 * 1024, 1024 * 1024
  seen = []

  def slow(arg, transforms):
    x = arg[0]
    if len(seen) % 50 == 0:
      time.sleep(0.002)
    seen.append(int(x[0]))

  def body(token, args, host_callbacks):
    (payload,) = args
    args[0] = mhlo.AddOp(payload, i32_constant(1, payload.type)).result
    return tap_args(slow)(token, args, host_callbacks)

  exe = compile_tapping([ShapedArray((size // 4,), np.int32)], in_loop(n, body))
  saved = config.tap_queue_bytes
  config.update("tap_queue_bytes", bound)
  taps.barrier_wait()
  taps.reset_tap_stats()
  try:
    run(exe, np.zeros(size // 4, np.int32))
    taps.barrier_wait()
    stats = taps.tap_stats()[backend.devices()[0]]
  finally:
    config.update("tap_queue_bytes", saved)
  assert seen == list(range(1, n + 1))
  assert 0 < stats.queue_high_water_bytes <= bound
  assert stats.blocked_seconds > 0


def test_tap_stats_count_taps_and_bytes_per_device(mechanism):
  exe = compile_tapping([ShapedArray((10,), f32)], tap_args(lambda a, t: None))
  device = backend.devices()[0]
  run(exe, np.zeros(10, f32))  # the device's receiver starts with its first tapped run
  taps.barrier_wait()
  before = taps.tap_stats()[device]
  for _ in range(5):
    run(exe, np.zeros(10, f32))
  taps.barrier_wait()
  after = taps.tap_stats()[device]
  assert after.taps_delivered - before.taps_delivered == 5
  assert after.bytes_delivered - before.bytes_delivered == 5 * 40
  assert after.taps_enqueued == after.taps_delivered and after.queued_bytes == 0


def test_an_idle_barrier_compiles_nothing_and_waits_for_nothing(mechanism, caplog,
                                                                  monkeypatch):
  with caplog.at_level(logging.DEBUG, logger="minijax"):
    exe = compile_tapping([ShapedArray((), f32)], tap_args(lambda a, t: None))
    run(exe, f32(0))
    taps.barrier_wait()
    assert [r for r in caplog.records if "Finished XLA compilation" in r.getMessage()]
    caplog.clear()
    assert executable.runtime_tokens.pending() == []  # the finished chain was let go
    waits = []
    for name in ("flush", "wait_delivered"):
      original = getattr(queues, name)
      monkeypatch.setattr(queues, name,
                          lambda *args, _f=original, _n=name: waits.append(_n) or _f(*args))
    for _ in range(200):
      taps.barrier_wait()
  assert not [r for r in caplog.records if "compil" in r.getMessage().lower()]
  assert waits == []


def test_stop_waits_for_pending_taps_and_receivers_restart_on_next_use(mechanism):
  rec = Recorder(delay=0.01)
  exe = compile_tapping([ShapedArray((), np.int32)], tap_args(rec))
  for i in range(5):
    run(exe, np.int32(i))
  taps.stop_outfeed_receiver()
  assert [int(a[0]) for a in rec.args] == list(range(5))
  assert not [t for t in threading.enumerate() if t.name.startswith("minijax-tap-receiver")]
  for i in range(5, 8):
    run(exe, np.int32(i))
  taps.barrier_wait()
  assert [int(a[0]) for a in rec.args] == list(range(8))


def test_consumer_ids_are_never_reused_and_equal_consumers_share_one():
  f = lambda a, t: None  # noqa: E731
  avals = [ShapedArray((2,), f32)]
  first = consumer_for(f, avals)
  assert consumer_for(f, avals) == first
  others = {consumer_for(f, [ShapedArray((3,), f32)]), consumer_for(lambda a, t: None, avals),
            consumer_for(f, avals, transforms=(("jvp",),))}
  assert len(others) == 3 and all(i > first for i in others)
  with pytest.raises(TypeError, match="must be callable"):
    consumer_for(3, avals)


# ----------------------------------------------------------------------------- processes

def _run_python(code: str, env_extra=None, timeout=60):
  """Runs `code` in a fresh interpreter; a variable of `env_extra` set to None is removed."""
  env = {k: v for k, v in dict(os.environ, **(env_extra or {})).items() if v is not None}
  env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
  helpers = f"import sys; sys.path.insert(0, {os.path.join(REPO, 'tests')!r})\n"
  return subprocess.run([sys.executable, "-c", helpers + textwrap.dedent(code)],
                        capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


@pytest.mark.parametrize("which", ["native", "callback"])
def test_an_exit_with_pending_taps_prints_them_all(which):
  proc = _run_python("""
      import sys, time, numpy as np
      from test_tap_runtime import compile_tapping, tap_args, run, ShapedArray
      def slow_print(arg, transforms):
        time.sleep(0.002)
        sys.stdout.write(f"tap {int(arg[0])}\\n")  # one write: lines of two threads never mix
      exe = compile_tapping([ShapedArray((), np.int32)], tap_args(slow_print))
      for i in range(100):
        run(exe, np.int32(i))
      sys.stdout.write("main done\\n")
      """, {"MINIJAX_TAP_MECHANISM": which})
  assert proc.returncode == 0, proc.stderr
  lines = proc.stdout.split("\n")
  assert [l for l in lines if l.startswith("tap")] == [f"tap {i}" for i in range(100)]


def test_taps_on_several_devices_go_through_each_devices_receiver():
  proc = _run_python("""
      import numpy as np
      from minijax.runtime import backend, taps
      from test_tap_runtime import compile_tapping, tap_args, run, ShapedArray
      got = []
      def tap(arg, transforms, device):
        got.append((device.id, int(arg[0])))
      for mech in ("native", "callback"):
        from minijax.config import config
        config.update("tap_mechanism", mech)
        exes = [compile_tapping([ShapedArray((), np.int32)], tap_args(tap), device=d)
                for d in range(4)]
        for i in range(20):
          run(exes[i % 4], np.int32(i))
        taps.barrier_wait()
        assert sorted(got) == sorted((i % 4, i) for i in range(20)), got
        for d in range(4):
          assert [v for dev, v in got if dev == d] == list(range(d, 20, 4))
        got.clear()
      stats = taps.tap_stats()
      assert [stats[d].taps_delivered for d in backend.devices()] == [10] * 4, stats
      print("ok")
      """, {"MINIJAX_NUM_CPU_DEVICES": "4"})
  assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_without_the_native_extension_taps_fall_back_to_callbacks_with_one_warning():
  proc = _run_python("""
      import sys, warnings
      sys.modules["minijax.runtime.taps._native"] = None  # as if the build had failed
      import numpy as np
      with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from minijax.runtime import taps
        from test_tap_runtime import compile_tapping, tap_args, run, ShapedArray, Recorder
        assert not taps.native_available()
        rec = Recorder()
        for _ in range(2):
          exe = compile_tapping([ShapedArray((3,), np.float32)], tap_args(rec))
          run(exe, np.arange(3, dtype=np.float32))
        taps.barrier_wait()
      assert len(rec.args) == 2 and rec.args[1][0].tolist() == [0, 1, 2], rec.args
      assert taps.CALLBACK_TARGET in exe.as_text()
      mine = [w for w in caught if "native tap extension" in str(w.message)]
      assert len(mine) == 1, [str(w.message) for w in caught]
      print("ok")
      """, env_extra={"MINIJAX_TAP_MECHANISM": None})  # the default: native, when it builds
  assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


# ----------------------------------------------------------------------------- the transport

def _tapped_loop(n, fn):
  import minijax
  from minijax.experimental import host_callback as hcb

  def body(i, x):
    return hcb.id_tap(fn, x + i.astype(np.float32)) - i.astype(np.float32)

  return minijax.jit(lambda x: minijax.lax.fori_loop(0, n, body, x))


@pytest.mark.skipif(not native_available(), reason="needs the native tap queue")
def test_small_taps_kept_alive_by_their_functions_are_not_overwritten_by_later_taps():
  # Small taps travel in recycled slots: a slot goes back only once nothing views it.
  n = 3000
  kept, seen = [], []

  def keep_every_other(arg, transforms):
    seen.append(float(arg[0]))
    if len(seen) % 2:
      kept.append(arg)  # the payload's own view, not a copy

  f = _tapped_loop(n, keep_every_other)
  for _ in range(3):
    seen.clear(), kept.clear()
    f(np.array([0.0, 1.0, 2.0], np.float32))
    taps.barrier_wait()
    assert seen == [float(i) for i in range(n)]
    assert [k.tolist() for k in kept] == [[i, i + 1, i + 2] for i in range(0, n, 2)]


@pytest.mark.skipif(not native_available() or (os.cpu_count() or 1) > 16,
                    reason="needs the native tap queue (and few enough cores to busy them)")
def test_receivers_notice_busy_cpus_and_still_deliver_every_tap_in_order():
  from minijax.runtime.taps import _native
  busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
          for _ in range(2 * (os.cpu_count() or 1))]
  seen = []
  noticed = False  # contended() holds for 50 ms after a receiver notices
  try:
    f = _tapped_loop(2000, lambda arg, transforms: seen.append(int(arg[0])))
    deadline = time.monotonic() + 20
    while not noticed and time.monotonic() < deadline:
      seen.clear()
      f(np.zeros(2, np.float32))
      taps.barrier_wait()
      assert seen == list(range(2000))
      noticed = _native.contended()
  finally:
    for p in busy:
      p.kill()
      p.wait()
  assert noticed


@pytest.mark.skipif(not native_available(), reason="needs the native tap queue")
def test_taps_taken_in_partial_batches_arrive_in_order_and_intact():
  # 3,000 small taps wait in a closed queue (its receiver gone), then are taken 64 at a
  # time (16 times as many while the CPUs are busy): batches take part of the queue, and
  # the rest stays in order behind them.
  # Each tap is an int32[2, 3] (C order) that its tap function keeps.
  from minijax.runtime.taps import registry
  got = []
  f = _tapped_loop(1000, lambda arg, transforms: got.append(arg))
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  f(x)
  taps.barrier_wait()
  got.clear()
  ordinal = taps.receiver.device_ordinal(backend.local_devices()[0])
  queues.close(ordinal)  # the receiver takes what is queued (nothing) and exits
  rec = taps.receiver._receivers[ordinal]
  rec.thread.join(10)
  assert not rec.thread.is_alive()
  try:
    outs = [f(x) for _ in range(3)]
    for out in outs:
      out.block_until_ready()
    queues.open(ordinal)
    while len(got) < 3000:
      done = queues.deliver(ordinal, 64, registry.simple_consumers, lambda *a: 0,
                            lambda *a: None)
      assert done is not None and done[0] <= 64 * 16
      rec.processed += done[0]
  finally:
    queues.open(ordinal)
    taps.receiver._stop_receivers()
  assert len(got) == 3000
  for k, arg in enumerate(got):
    np.testing.assert_array_equal(arg, x + (k % 1000))
    assert arg.flags.c_contiguous
