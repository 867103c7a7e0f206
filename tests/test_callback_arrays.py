"""Host functions of `pure_callback`, `io_callback` and `debug.callback` receive Arrays, as
JAX 0.10.2 hands its callbacks `jax.Array`s: inside jit (a `HostArray` over the read-only
host copy of the operand, put on a device only when an operation needs it) and outside it.
Every test runs under both mechanisms (the native handlers build the Arrays in C, jaxlib's
Python callback in Python)."""
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax import numpy as jnp
from minijax.experimental import io_callback
from minijax.runtime.array import HostArray
from tests.conftest import using_tap_mechanism

F32 = minijax.ShapeDtypeStruct((), np.float32)


@pytest.fixture(autouse=True, params=["native", "callback"])
def mechanism(request):
  yield from using_tap_mechanism(request.param, minijax.effects_barrier)


def _kinds(seen):
  return [(isinstance(x, minijax.Array), x.dtype, x.weak_type) for x in seen]


@pytest.mark.parametrize("kind", ["pure", "io", "debug"])
def test_every_callback_gets_arrays_in_and_out_of_jit(kind):
  seen = []

  def host(x, n):
    seen.extend([x, n])
    return x

  def f(x):
    if kind == "pure":
      return minijax.pure_callback(host, F32, x, 1)
    if kind == "io":
      return io_callback(host, F32, x, 1)
    minijax.debug.callback(host, x, 1)
    return x

  for g in (minijax.jit(f), f):
    seen.clear()
    assert float(g(jnp.float32(2.0))) == 2.0
    minijax.effects_barrier()
    # a Python int operand arrives as an int32 Array, as in JAX
    assert _kinds(seen) == [(True, np.float32, False), (True, np.int32, False)]
    assert float(seen[0]) == 2.0 and int(seen[1]) == 1


def test_a_host_array_is_read_on_the_host_and_put_on_a_device_only_when_used():
  seen = []
  minijax.jit(lambda x: minijax.debug.callback(seen.append, x))(jnp.arange(3.0))
  minijax.effects_barrier()
  (x,) = seen
  assert type(x) is HostArray and x.sharding == minijax.sharding.SingleDeviceSharding(
      minijax.devices()[0])
  assert repr(x) == "Array([0., 1., 2.], dtype=float32)" and x.tolist() == [0.0, 1.0, 2.0]
  assert not x._materialized() and not x.is_deleted()
  np.testing.assert_array_equal(x * 2, [0.0, 2.0, 4.0])  # an operation: now on a device
  assert x._materialized()
  x.delete()
  with pytest.raises(RuntimeError, match="Array has been deleted"):
    np.asarray(x)


def test_a_host_function_may_compute_with_minijax_on_its_arrays():
  # (JAX's test_async_deadlock: the callback uses the arrays it gets)
  hits = []

  def check(i, maxiter):
    assert isinstance(i, minijax.Array) and isinstance(maxiter, minijax.Array)
    hits.append(bool(i == maxiter))

  def step(v):
    minijax.debug.callback(check, v + 1, 10)
    return v + 1

  assert int(minijax.jit(lambda v: lax.while_loop(lambda v: v < 10, step, v))(0)) == 10
  minijax.effects_barrier()
  assert hits == [False] * 9 + [True]
  twice = minijax.jit(lambda x: minijax.pure_callback(lambda a: a * 2 + jnp.ones(()), F32, x))
  assert float(twice(jnp.float32(3.0))) == 7.0


@pytest.mark.usefixtures("immediate_taps")
def test_a_debug_callback_of_several_operands_gets_each_intact_and_in_order(mechanism):
  # Several operands are delivered by the native queues themselves (one fast-path entry per
  # consumer, every leaf's shape, dtype and aval), as one operand is.
  from minijax.runtime.taps import registry
  seen = []

  def host(a, label, b, c, *, d, e):
    seen.append((a, label, b, c, d, e))

  def step(i, x):
    minijax.debug.callback(host, x, "step", (x * 2).astype(np.int32) + jnp.arange(3),
                           jnp.full((2, 2), i % 2 == 0), d=x.astype(np.float16) + jnp.zeros(2, np.float16),
                           e=(i + jnp.arange(5)).astype(np.uint8))
    return x + 1

  n = 40
  g = minijax.jit(lambda x: lax.fori_loop(0, n, step, x))  # (kept: it keeps its consumers)
  assert float(g(jnp.float32(0.5))) == n + 0.5
  minijax.effects_barrier()
  assert len(seen) == n
  for i, (a, label, b, c, d, e) in enumerate(seen):
    assert label == "step"
    for got, dtype, shape in [(a, np.float32, ()), (b, np.int32, (3,)), (c, np.bool_, (2, 2)),
                              (d, np.float16, (2,)), (e, np.uint8, (5,))]:
      assert type(got) is HostArray and got.dtype == dtype and got.shape == shape
      assert not np.asarray(got).flags.writeable
    assert float(a) == i + 0.5
    assert b.tolist() == [int((i + 0.5) * 2) + k for k in range(3)]
    assert c.tolist() == [[i % 2 == 0] * 2] * 2
    assert d.tolist() == [i + 0.5] * 2 and e.tolist() == [(i + k) % 256 for k in range(5)]
  if mechanism == "native":
    fast = [c for c in registry.consumers_by_id.values()
            if c.dtypes == tuple(map(np.dtype, ["float32", "int32", "bool", "float16", "uint8"]))]
    assert fast and all(len(registry.simple_consumers[c.id]) == 7 for c in fast)


def test_debug_print_formats_host_arrays_as_jax_arrays():
  import io
  import contextlib
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    minijax.jit(lambda x: minijax.debug.print("x: {}", dict(foo=x), ordered=True))(np.int32(2))
    minijax.effects_barrier()
  assert out.getvalue() == "x: {'foo': Array(2, dtype=int32)}\n"  # jax 0.10.2's line


def test_the_device_queries_take_jaxs_backend_argument():
  assert minijax.devices("cpu") == minijax.devices() == minijax.devices(backend="cpu")
  assert minijax.local_devices(backend="cpu") == minijax.local_devices(process_index=0)
  with pytest.raises(RuntimeError, match="Unknown backend: 'gpu' requested, but no platforms "
                                         "that are instances of gpu are present"):
    minijax.devices("gpu")
