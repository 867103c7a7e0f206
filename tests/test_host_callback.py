"""Host taps end to end, under both tap mechanisms (native FFI handler and jaxlib's Python
callback): ordering, values, pytrees, dtypes, sizes, errors, threads, devices, control flow.
Tests wait for taps with `barrier_wait`, never with `sleep`."""
import io
import logging
import threading

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.experimental import host_callback as hcb
from tests.conftest import run_python, using_tap_mechanism


@pytest.fixture(autouse=True, params=["native", "callback"])
def mechanism(request):
  yield from using_tap_mechanism(request.param, hcb.barrier_wait, hcb.TapFunctionException)


class Recorder:
  def __init__(self):
    self.calls = []
    self.lock = threading.Lock()

  def __call__(self, arg, transforms):
    with self.lock:
      self.calls.append((arg, transforms))

  def values(self):
    return [a for a, _ in self.calls]


def f32(*values):
  return np.array(values, np.float32)


def test_taps_in_sequence_arrive_in_program_order():
  rec = Recorder()
  def f(x):
    for i in range(5):
      x = hcb.id_tap(rec, lax.add(x, float(i)))
    return x
  minijax.jit(f)(f32(0.0))
  hcb.barrier_wait()
  assert [float(v[0]) for v in rec.values()] == [0.0, 1.0, 3.0, 6.0, 10.0]


def test_id_tap_returns_its_argument_and_result_overrides_it():
  rec = Recorder()
  def f(x):
    y = hcb.id_tap(rec, x)
    z = hcb.id_tap(rec, lax.mul(x, 2.0), result=lax.sin(x))
    return y, z
  y, z = minijax.jit(f)(f32(1.0, 2.0))
  hcb.barrier_wait()
  np.testing.assert_allclose(y, [1.0, 2.0])
  np.testing.assert_allclose(z, np.sin([1.0, 2.0]), rtol=1e-6)
  np.testing.assert_allclose(rec.values()[1], [2.0, 4.0])


def test_pytree_args_arrive_with_their_structure():
  rec = Recorder()
  minijax.jit(lambda x: hcb.id_tap(rec, {"a": x, "b": (x, lax.neg(x))}))(f32(3.0))
  hcb.barrier_wait()
  arg, transforms = rec.calls[0]
  assert transforms == ()
  assert set(arg) == {"a", "b"} and isinstance(arg["b"], tuple)
  np.testing.assert_allclose(arg["b"][1], [-3.0])


def test_taps_in_nested_jit_arrive_in_program_order():
  rec = Recorder()
  inner = minijax.jit(lambda x: hcb.id_tap(rec, lax.add(x, 1.0)))
  def f(x):
    x = hcb.id_tap(rec, x)
    x = inner(inner(x))
    return hcb.id_tap(rec, lax.add(x, 10.0))
  minijax.jit(f)(f32(0.0))
  hcb.barrier_wait()
  assert [float(v[0]) for v in rec.values()] == [0.0, 1.0, 2.0, 12.0]


def test_taps_inside_cond_branches_arrive_in_program_order():
  rec = Recorder()
  def f(p, x):
    x = hcb.id_tap(rec, x)
    y = lax.cond(p, lambda v: hcb.id_tap(rec, lax.add(v, 1.0)),
                 lambda v: hcb.id_tap(rec, lax.add(v, -1.0)), x)
    return hcb.id_tap(rec, y)
  g = minijax.jit(f)
  g(True, f32(0.0))
  g(False, f32(0.0))
  hcb.barrier_wait()
  assert [float(v[0]) for v in rec.values()] == [0.0, 1.0, 1.0, 0.0, -1.0, -1.0]


def test_taps_inside_while_body_arrive_in_program_order():
  rec = Recorder()
  def f(x):
    def body(c):
      i, v = c
      return lax.add(i, 1), hcb.id_tap(rec, lax.add(v, 1.0))
    return lax.while_loop(lambda c: lax.lt(c[0], 4), body, (np.int32(0), x))
  minijax.jit(f)(f32(0.0))
  hcb.barrier_wait()
  assert [float(v[0]) for v in rec.values()] == [1.0, 2.0, 3.0, 4.0]


def test_taps_inside_while_cond_arrive_in_program_order():
  rec = Recorder()
  def f(x):
    def cond(c):
      i = hcb.id_tap(rec, c[0])
      return lax.lt(i, 3)
    return lax.while_loop(cond, lambda c: (lax.add(c[0], 1), c[1]), (np.int32(0), x))
  minijax.jit(f)(f32(0.0))
  hcb.barrier_wait()
  assert [int(v) for v in rec.values()] == [0, 1, 2, 3]


def test_taps_inside_scan_arrive_once_per_iteration_in_order():
  rec = Recorder()
  def f(xs):
    def step(c, x):
      c = lax.add(c, x)
      return c, hcb.id_tap(rec, c)
    return lax.scan(step, np.float32(0.0), xs)
  minijax.jit(f)(f32(1.0, 2.0, 3.0))
  hcb.barrier_wait()
  assert [float(v) for v in rec.values()] == [1.0, 3.0, 6.0]


def test_taps_inside_fori_loop_are_not_hoisted_out_of_it():
  rec = Recorder()
  f = lambda x: lax.fori_loop(0, 6, lambda i, v: hcb.id_tap(rec, lax.add(v, 1.0)), x)
  minijax.jit(f)(np.float32(0.0))
  hcb.barrier_wait()
  assert [float(v) for v in rec.values()] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_taps_from_successive_jit_calls_arrive_in_call_order():
  rec = Recorder()
  f = minijax.jit(lambda x: hcb.id_tap(rec, x))
  for i in range(20):
    f(f32(float(i)))
  hcb.barrier_wait()
  assert [float(v[0]) for v in rec.values()] == list(range(20))


def test_100_interleaved_taps_from_10_jit_calls_arrive_in_order():
  rec = Recorder()
  def f(x):
    for j in range(10):
      x = hcb.id_tap(rec, lax.add(x, 1.0))
    return x
  g = minijax.jit(f)
  for i in range(10):
    g(f32(100.0 * i))
  hcb.barrier_wait()
  expected = [100.0 * i + j + 1 for i in range(10) for j in range(10)]
  assert [float(v[0]) for v in rec.values()] == expected


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.int32, np.uint8,
                                   np.float16, "bfloat16", np.float32])
@pytest.mark.parametrize("shape", [(), (2,), (2, 3), (2, 3, 4)])
def test_every_supported_dtype_and_shape_arrives_intact(dtype, shape):
  from minijax.core.dtypes import bfloat16
  dtype = bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
  value = (np.arange(int(np.prod(shape))) % 3).reshape(shape).astype(dtype)
  rec = Recorder()
  minijax.jit(lambda x: hcb.id_tap(rec, x))(value)
  hcb.barrier_wait()
  got = rec.values()[0]
  assert got.dtype == dtype and got.shape == shape
  np.testing.assert_array_equal(got.astype(np.float32), value.astype(np.float32))


def test_64_bit_values_arrive_intact_with_x64(x64):
  rec = Recorder()
  value = np.array([2**40, -3], np.int64)
  minijax.jit(lambda x: hcb.id_tap(rec, (x, lax.mul(x, 2))))(value)
  hcb.barrier_wait()
  got = rec.values()[0]
  assert got[0].dtype == np.int64
  np.testing.assert_array_equal(got[1], value * 2)


def test_a_10000_element_tap_and_a_64_mb_tap_arrive_whole():
  rec = Recorder()
  small = np.arange(10_000, dtype=np.float32)
  big = np.ones(16 * 1024 * 1024, np.float32)
  minijax.jit(lambda x: hcb.id_tap(rec, x))(small)
  minijax.jit(lambda x: hcb.id_tap(rec, x))(big)
  hcb.barrier_wait()
  np.testing.assert_array_equal(rec.values()[0], small)
  assert rec.values()[1].nbytes == 64 * 1024 * 1024 and rec.values()[1].sum() == big.size


def test_several_arrays_in_one_tap_arrive_together():
  rec = Recorder()
  minijax.jit(lambda x, y, z: hcb.id_tap(rec, (x, y, z)))(f32(1.0), np.int32(2), np.ones((2, 2), np.bool_))
  hcb.barrier_wait()
  x, y, z = rec.values()[0]
  assert float(x[0]) == 1.0 and int(y) == 2 and z.dtype == np.bool_


def test_an_exception_in_a_tap_function_is_raised_at_the_barrier_and_others_still_arrive():
  rec = Recorder()
  def bad(arg, transforms):
    raise ValueError("boom")
  f = minijax.jit(lambda x: hcb.id_tap(rec, hcb.id_tap(bad, hcb.id_tap(rec, x))))
  f(f32(1.0))
  with pytest.raises(hcb.TapFunctionException):
    hcb.barrier_wait()
  assert len(rec.calls) == 2
  f(f32(2.0))
  with pytest.raises(hcb.TapFunctionException):
    hcb.barrier_wait()
  assert len(rec.calls) == 4


def test_a_failing_tap_of_one_array_is_logged_with_its_traceback_and_spares_the_receiver(
    caplog):
  got = []
  def bad(arg, transforms):
    if float(arg) == 2.0:
      raise SystemExit("tap function exits")  # not even this may end a receiver
    if float(arg) == 3.0:
      raise ValueError("tap function refuses")
    got.append(float(arg))
  f = minijax.jit(lambda x: hcb.id_tap(bad, x))
  with caplog.at_level(logging.ERROR, logger="minijax.taps"):
    for v in [1.0, 2.0, 3.0, 4.0]:
      f(np.float32(v))
    with pytest.raises(hcb.TapFunctionException, match="2 exception"):
      hcb.barrier_wait()
  failures = [r for r in caplog.records if r.name == "minijax.taps"]
  assert len(failures) == 2
  assert "tap function exits" in failures[0].exc_text
  assert "tap function refuses" in failures[1].exc_text and "in bad" in failures[1].exc_text
  f(np.float32(5.0))
  hcb.barrier_wait()
  assert got == [1.0, 4.0, 5.0]


def test_taps_from_concurrent_jit_calls_in_5_threads_all_arrive():
  rec = Recorder()
  f = minijax.jit(lambda x: hcb.id_tap(rec, lax.add(x, 1.0)))
  def work(k):
    for i in range(20):
      f(f32(1000.0 * k + i))
  threads = [threading.Thread(target=work, args=(k,)) for k in range(5)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  hcb.barrier_wait()
  got = sorted(float(v[0]) for v in rec.values())
  assert got == sorted(1000.0 * k + i + 1 for k in range(5) for i in range(20))
  per_thread = [[float(v[0]) for v in rec.values() if int(v[0]) // 1000 == k] for k in range(5)]
  assert all(p == sorted(p) for p in per_thread)


def test_eager_taps_go_through_the_receiver():
  rec = Recorder()
  seen_threads = []
  def tap(arg, transforms):
    seen_threads.append(threading.current_thread())
    rec(arg, transforms)
  y = hcb.id_tap(tap, f32(5.0))
  hcb.barrier_wait()
  np.testing.assert_allclose(y, [5.0])
  assert rec.values()[0][0] == 5.0
  assert seen_threads[0] is not threading.main_thread()


def test_id_print_formats_like_the_seed():
  out = io.StringIO()
  minijax.jit(lambda x: hcb.id_print((x, {"b": x, "a": lax.neg(x)}), what="pair",
                                     output_stream=out))(f32(1.0, 2.0))
  hcb.barrier_wait()
  assert out.getvalue() == "what: pair\n[ [1. 2.]\n  { a=[-1. -2.]\n    b=[1. 2.] } ]\n"


class Writes:
  """An output stream that keeps each `write` apart."""

  def __init__(self):
    self.chunks = []

  def write(self, text):
    self.chunks.append(text)


def test_id_print_writes_header_and_value_as_two_lines_like_the_seed():
  out = Writes()
  minijax.jit(lambda x: hcb.id_print(x * 2, what="a * 2", output_stream=out))(np.float32(5))
  hcb.id_print(np.float32(7), output_stream=out)
  hcb.barrier_wait()
  assert out.chunks == ["what: a * 2\n", "10.\n", "7.\n"]


def test_tap_function_may_ask_for_its_device():
  devices = []
  minijax.jit(lambda x: hcb.id_tap(lambda a, t, *, device: devices.append(device), x))(f32(1.0))
  hcb.barrier_wait()
  assert devices == [minijax.devices()[0]]


@pytest.mark.usefixtures("immediate_taps")
def test_unordered_taps_are_delivered():
  rec = Recorder()
  f = minijax.jit(lambda x: hcb.id_tap(rec, lax.mul(x, 3.0), ordered=False))
  text = f.lower(f32(1.0)).as_text()
  assert "!mhlo.token" not in text and "custom_call" in text
  f(f32(1.0))
  hcb.barrier_wait()
  assert float(rec.values()[0][0]) == 3.0


def test_a_non_callable_tap_function_is_rejected_at_the_call_site():
  with pytest.raises(TypeError, match="callable tap_func, got int"):
    hcb.id_tap(42, f32(1.0))


def test_non_array_leaves_are_rejected_at_the_call_site():
  with pytest.raises(TypeError, match="leaf of type str"):
    hcb.id_tap(Recorder(), {"a": "text"})
  with pytest.raises(TypeError, match="result=.*leaf of type object"):
    hcb.id_tap(Recorder(), f32(1.0), result=object())


def test_barrier_wait_in_a_tap_function_is_an_error_not_a_hang():
  errors = []
  def tap(arg, transforms):
    try:
      hcb.barrier_wait()
    except RuntimeError as e:
      errors.append(str(e))
  minijax.jit(lambda x: hcb.id_tap(tap, x))(f32(1.0))
  hcb.barrier_wait()
  assert errors and "tap function" in errors[0]


def test_stop_and_restart_of_the_receiver_keeps_delivering():
  rec = Recorder()
  f = minijax.jit(lambda x: hcb.id_tap(rec, x))
  f(f32(1.0))
  hcb.stop_outfeed_receiver()
  assert len(rec.calls) == 1
  f(f32(2.0))
  hcb.barrier_wait()
  assert [float(v[0]) for v in rec.values()] == [1.0, 2.0]


@pytest.mark.usefixtures("immediate_taps")
def test_jaxpr_shows_the_tap_effect_and_mhlo_threads_tokens_through_while_and_if(
    runtime_token_lowering):
  def f(x):
    x = hcb.id_print(x)
    x = lax.fori_loop(0, 3, lambda i, v: hcb.id_print(v), x)
    return lax.cond(True, lambda v: hcb.id_print(v), lambda v: v, x)
  def g(x, n):
    return lax.while_loop(lambda c: lax.lt(c[0], n), lambda c: (lax.add(c[0], 1), hcb.id_print(c[1])),
                          (np.int32(0), x))
  jaxpr = str(minijax.make_jaxpr(f)(f32(1.0)))
  assert "id_tap" in jaxpr and "# effects: OrderedTap" in jaxpr
  text = minijax.jit(g).lower(f32(1.0), np.int32(2)).as_text()
  assert "func.func public @main(%arg0: !mhlo.token" in text
  assert "mhlo.while" in text and "!mhlo.token" in text.split("mhlo.while")[1]
  text_if = minijax.jit(f).lower(f32(1.0)).as_text()
  assert "mhlo.if" in text_if or "mhlo.case" in text_if


def test_taps_on_each_of_4_devices_arrive_through_that_devices_receiver(mechanism):
  result = run_python(f"""
import numpy as np, minijax, threading
from minijax import lax
from minijax.experimental import host_callback as hcb
minijax.config.update("tap_mechanism", "{mechanism}")
seen = []
def tap(x, transforms, *, device):
  seen.append((device.id, float(x[0]), threading.current_thread().name))
for d in range(4):
  f = minijax.jit(lambda x: hcb.id_tap(tap, lax.add(x, 1.0)), device=d)
  out = f(np.full(2, d, np.float32))
  assert out.devices() == {{minijax.devices()[d]}}
hcb.barrier_wait()
assert sorted((d, v) for d, v, _ in seen) == [(d, d + 1.0) for d in range(4)], seen
assert len({{name for _, _, name in seen}}) == 4, seen
print("ok")
""", env={"MINIJAX_NUM_CPU_DEVICES": "4"})
  assert result.returncode == 0, result.stderr[-3000:]


def test_an_exit_with_pending_taps_prints_them_all(mechanism):
  result = run_python(f"""
import numpy as np, minijax
from minijax import lax
from minijax.experimental import host_callback as hcb
minijax.config.update("tap_mechanism", "{mechanism}")
f = minijax.jit(lambda x: hcb.id_print(lax.add(x, 1.0), n="tap"))
for i in range(50):
  f(np.float32(i))
""")
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.count("n: tap") == 50


# ----------------------------------------------------------------------------- transformations

def power3_with_tap(rec):
  def power3(x):
    y = lax.mul(x, x)
    _, y = hcb.id_tap(rec, (x, y))
    return lax.mul(y, x)
  return power3


def _floats(arg):
  return [np.asarray(a, np.float32).tolist() for a in arg]


def test_vmap_taps_the_whole_batch_once_with_its_batch_dims():
  rec = Recorder()
  minijax.vmap(power3_with_tap(rec))(np.arange(3, dtype=np.float32))
  hcb.barrier_wait()
  assert len(rec.calls) == 1
  arg, transforms = rec.calls[0]
  assert transforms == (("batch", {"batch_dims": (0, 0)}),)
  assert _floats(arg) == [[0.0, 1.0, 2.0], [0.0, 1.0, 4.0]]


def test_vmap_marks_unbatched_leaves_with_none():
  rec = Recorder()
  c = np.float32(7.0)
  minijax.vmap(lambda x: hcb.id_tap(rec, (x, c))[0])(np.arange(2, dtype=np.float32))
  hcb.barrier_wait()
  assert rec.calls[0][1] == (("batch", {"batch_dims": (0, None)}),)


def test_vmap_of_vmap_adds_two_batch_entries():
  rec = Recorder()
  minijax.vmap(minijax.vmap(power3_with_tap(rec)))(np.ones((2, 3), np.float32))
  hcb.barrier_wait()
  assert len(rec.calls) == 1
  assert rec.calls[0][1] == (("batch", {"batch_dims": (0, 0)}),) * 2
  assert rec.calls[0][0][1].shape == (2, 3)


def test_jvp_taps_the_primals_then_the_tangents():
  rec = Recorder()
  minijax.jvp(power3_with_tap(rec), (np.float32(3.0),), (np.float32(0.1),))
  hcb.barrier_wait()
  assert [t for _, t in rec.calls] == [(), (("jvp", {}),)]
  assert _floats(rec.calls[0][0]) == [3.0, 9.0]
  np.testing.assert_allclose(_floats(rec.calls[1][0]), [0.1, 0.6], rtol=1e-6)


def test_jvp_instantiates_symbolic_zero_tangents():
  rec = Recorder()
  c = np.float32(5.0)
  minijax.jvp(lambda x: hcb.id_tap(rec, (x, c))[0], (np.float32(1.0),), (np.float32(1.0),))
  hcb.barrier_wait()
  assert _floats(rec.calls[1][0]) == [1.0, 0.0]


def test_grad_taps_primals_forward_and_cotangents_backward():
  rec = Recorder()
  g = minijax.grad(power3_with_tap(rec))(np.float32(3.0))
  hcb.barrier_wait()
  assert float(g) == 27.0
  assert [t for _, t in rec.calls] == [(), (("jvp", {}), ("transpose", {}))]
  assert _floats(rec.calls[0][0]) == [3.0, 9.0]
  assert _floats(rec.calls[1][0]) == [0.0, 3.0]


def test_grad_with_an_unused_primal_still_taps_and_differentiates():
  rec = Recorder()
  def f(x):
    hcb.id_tap(rec, x)
    return lax.mul(x, 2.0)
  assert float(minijax.grad(f)(np.float32(3.0))) == 2.0
  hcb.barrier_wait()
  assert float(rec.values()[0]) == 3.0


def test_grad_of_grad_taps_each_order():
  rec = Recorder()
  g2 = minijax.grad(minijax.grad(power3_with_tap(rec)))(np.float32(3.0))
  hcb.barrier_wait()
  assert float(g2) == 18.0
  transforms = [tuple(name for name, _ in t) for _, t in rec.calls]
  assert () in transforms and ("jvp", "transpose") in transforms
  assert ("jvp", "transpose", "jvp", "transpose") in transforms


def test_vmap_of_grad_taps_batched_primals_and_cotangents():
  rec = Recorder()
  g = minijax.vmap(minijax.grad(power3_with_tap(rec)))(np.arange(2, dtype=np.float32))
  hcb.barrier_wait()
  np.testing.assert_allclose(g, [0.0, 3.0])
  assert len(rec.calls) == 2
  assert rec.calls[0][1] == (("batch", {"batch_dims": (0, 0)}),)
  assert rec.calls[1][1][:2] == (("jvp", {}), ("transpose", {}))
  assert rec.calls[1][1][2][0] == "batch"


def test_jit_of_grad_and_grad_of_jit_tap_like_grad():
  for transform in (lambda f: minijax.jit(minijax.grad(f)), lambda f: minijax.grad(minijax.jit(f))):
    rec = Recorder()
    assert float(transform(power3_with_tap(rec))(np.float32(3.0))) == 27.0
    hcb.barrier_wait()
    assert [tuple(n for n, _ in t) for _, t in rec.calls] == [(), ("jvp", "transpose")]


def test_grad_of_scan_delivers_every_forward_and_backward_tap():
  rec = Recorder()
  def loss(x):
    def step(c, _):
      c = lax.mul(hcb.id_tap(rec, c), 1.5)
      return c, None
    c, _ = lax.scan(step, x, None, length=4)
    return c
  g = minijax.grad(loss)(np.float32(1.0))
  hcb.barrier_wait()
  np.testing.assert_allclose(float(g), 1.5 ** 4, rtol=1e-6)
  kinds = [tuple(n for n, _ in t) for _, t in rec.calls]
  assert kinds.count(()) == 4 and kinds.count(("jvp", "transpose")) == 4


def test_taps_inside_custom_jvp_and_custom_vjp_survive_grad():
  rec = Recorder()

  @minijax.custom_jvp
  def f(x):
    return lax.sin(hcb.id_tap(rec, x))

  @f.defjvp
  def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), lax.mul(lax.cos(x), t)

  @minijax.custom_vjp
  def g(x):
    return lax.mul(hcb.id_tap(rec, x), 2.0)

  g.defvjp(lambda x: (g(x), None), lambda res, ct: (lax.mul(ct, 2.0),))
  out = minijax.grad(lambda x: g(f(x)))(np.float32(0.5))
  hcb.barrier_wait()
  np.testing.assert_allclose(float(out), 2 * np.cos(0.5), rtol=1e-6)
  assert len(rec.calls) >= 2


def test_taps_of_a_slow_call_arrive_before_those_of_a_later_fast_call():
  order = []
  a = minijax.device_put(np.ones((192, 192), np.float32) / 192)

  def slow(m):
    for _ in range(40):
      m = lax.dot(m, m)
    return hcb.id_tap(lambda x, t: order.append("slow"), m[0, 0])

  slow_f = minijax.jit(slow)
  fast_f = minijax.jit(lambda x: hcb.id_tap(lambda x, t: order.append("fast"), x))
  one = minijax.device_put(np.float32(1.0))
  slow_f(a), fast_f(one)
  hcb.barrier_wait()
  order.clear()
  for _ in range(10):
    slow_f(a)  # dispatched asynchronously; the next call waits for its token
    fast_f(one)
  hcb.barrier_wait()
  assert order == ["slow", "fast"] * 10
