"""The runtime against the real jaxlib: devices, Arrays, device_put, compile and execute, tokens.

Modules are written by hand in MHLO so that these tests depend on nothing above the runtime.
"""
from __future__ import annotations

import re
import logging
import os
import pickle
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func, mhlo

from minijax import runtime
from minijax.config import config
from minijax.core.avals import ShapedArray
from minijax.lowering.context import ir_context

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
f32_4 = ShapedArray((4,), np.float32)
f32_0d = ShapedArray((), np.float32)


def _tensor(aval):
  element = {np.dtype(np.float32): ir.F32Type.get, np.dtype(np.int32): lambda: ir.IntegerType.get_signless(32)}
  return ir.RankedTensorType.get(aval.shape, element[aval.dtype]())


def build_module(in_avals, out_avals, body, *, num_tokens=0, aliases=None):
  """A module whose public `main` takes `num_tokens` tokens then `in_avals`; `body(tokens, args)`
  returns (tokens, results).  `aliases` maps an array argument to the array result it donates
  to; in `tf.aliasing_output` both count the leading tokens."""
  with ir_context(), ir.Location.unknown():
    module = ir.Module.create()
    token = mhlo.TokenType.get()
    in_types = [token] * num_tokens + [_tensor(a) for a in in_avals]
    out_types = [token] * num_tokens + [_tensor(a) for a in out_avals]
    with ir.InsertionPoint(module.body):
      main = func.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      main.attributes["sym_visibility"] = ir.StringAttr.get("public")
      if aliases:
        i32 = ir.IntegerType.get_signless(32)
        main.arg_attrs = ir.ArrayAttr.get([
            ir.DictAttr.get({"tf.aliasing_output":
                             ir.IntegerAttr.get(i32, num_tokens + aliases[i - num_tokens])}
                            if i - num_tokens in aliases else {})
            for i in range(len(in_types))])
      block = main.add_entry_block()
      with ir.InsertionPoint(block):
        args = list(block.arguments)
        tokens, results = body(args[:num_tokens], args[num_tokens:])
        func.ReturnOp(list(tokens) + list(results))
  return module


def compile_add(device=None, aliases=None, aval=f32_4):
  module = build_module([aval, aval], [aval],
                        lambda toks, args: ([], [mhlo.AddOp(*args).result]), aliases=aliases)
  return runtime.compile(module, device=runtime.get_device(device), name="add",
                         in_avals=[aval, aval], out_avals=[aval],
                         donated_args=(bool(aliases), False))


def compile_effectful(effects, aliases=None):
  """main(tokens..., x: f32[]) -> (tokens..., x + x): one token per effect, passed through."""
  module = build_module([f32_0d], [f32_0d],
                        lambda toks, args: (toks, [mhlo.AddOp(args[0], args[0]).result]),
                        num_tokens=len(effects), aliases=aliases)
  return runtime.compile(module, device=runtime.get_device(None), name="effectful",
                         in_avals=[f32_0d], out_avals=[f32_0d], num_tokens=len(effects),
                         ordered_effects=effects, donated_args=(bool(aliases),))


def run_python(code: str, **env) -> str:
  result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
  assert result.returncode == 0, result.stderr
  return result.stdout


@pytest.fixture(scope="module")
def add_exe():
  return compile_add()


# ----------------------------------------------------------------------------- backend
def test_client_is_created_once_and_hooks_see_it():
  client = runtime.get_client()
  assert runtime.get_client() is client
  seen = []
  runtime.on_client_created(seen.append)
  assert seen == [client]


def test_get_device_accepts_none_index_and_device():
  d0 = runtime.devices()[0]
  assert runtime.get_device(None) is d0
  assert runtime.get_device(0) is d0
  assert runtime.get_device(d0) is d0
  assert runtime.local_devices() == runtime.devices()


def test_device_index_out_of_range_names_index_count_and_env_var():
  n = len(runtime.devices())
  with pytest.raises(ValueError, match=rf"index {n + 4}.*{n} CPU device.*MINIJAX_NUM_CPU_DEVICES"):
    runtime.get_device(n + 4)
  with pytest.raises(ValueError, match="MINIJAX_NUM_CPU_DEVICES"):
    runtime.device_put(1.0, n)
  with pytest.raises(TypeError, match="str"):
    runtime.get_device("cpu")


# ----------------------------------------------------------------------------- device_put
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.uint32,
                                   np.int32, np.complex64, np.bool_])
def test_device_put_round_trips_each_dtype(dtype):
  x = (np.arange(6) % 3).reshape(2, 3).astype(dtype)
  a = runtime.device_put(x)
  assert a.dtype == np.dtype(dtype) and a.shape == (2, 3) and not a.weak_type
  np.testing.assert_array_equal(np.asarray(a), x)
  assert np.asarray(a).dtype == np.dtype(dtype)


def test_float64_becomes_float32_without_x64_and_stays_with_it():
  assert runtime.device_put(np.arange(3.0)).dtype == np.float32
  assert runtime.device_put(np.int64(7)).dtype == np.int32
  config.update("enable_x64", True)
  try:
    a = runtime.device_put(np.arange(3.0) / 3)
    assert a.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(a), np.arange(3.0) / 3)
    assert runtime.device_put(1.5).dtype == np.float64
  finally:
    config.update("enable_x64", False)


@pytest.mark.parametrize("value, dtype, weak", [
    (1.5, np.float32, True), (3, np.int32, True), (True, np.bool_, False),
    (1 + 2j, np.complex64, True), (np.float32(2), np.float32, False),
    (np.float64(2), np.float32, False)])
def test_scalars_get_canonical_dtypes_and_python_scalars_are_weak(value, dtype, weak):
  a = runtime.device_put(value)
  assert (a.shape, a.dtype, a.weak_type) == ((), np.dtype(dtype), weak)
  assert a.item() == value


def test_device_put_rejects_strings_objects_and_overflowing_ints():
  with pytest.raises(TypeError, match="str"):
    runtime.device_put("hello")
  with pytest.raises(TypeError, match="object"):
    runtime.device_put(np.array([None, 1], dtype=object))
  with pytest.raises(TypeError, match="list"):
    runtime.device_put([1, 2])
  with pytest.raises(OverflowError):
    runtime.device_put(2 ** 40)


def test_device_put_copies_broadcast_transposed_and_later_mutated_numpy_arrays():
  b = np.broadcast_to(np.float32(3), (2, 3))
  np.testing.assert_array_equal(np.asarray(runtime.device_put(b)), np.full((2, 3), 3, np.float32))
  t = np.arange(6, dtype=np.float32).reshape(2, 3).T
  np.testing.assert_array_equal(np.asarray(runtime.device_put(t)), t)
  x = np.arange(4, dtype=np.float32)
  a = runtime.device_put(x)
  x[0] = 99
  assert np.asarray(a)[0] == 0


def test_device_put_of_an_array_on_its_device_is_identity():
  a = runtime.device_put(np.ones(3, np.float32))
  assert runtime.device_put(a) is a
  # As in JAX, naming the device commits the value to it: a new Array over the same
  # buffer (no copy), which a second device_put to that device returns as it is.
  b = runtime.device_put(a, 0)
  assert b is not a and b._buffer is a._buffer
  assert (a.committed, b.committed) == (False, True)
  assert runtime.device_put(b, 0) is b and runtime.device_put(b) is b


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 1)])
def test_zero_size_arrays_round_trip_and_run(shape):
  x = np.zeros(shape, np.float32)
  a = runtime.device_put(x)
  assert np.asarray(a).shape == shape and a.size == 0
  assert repr(a) == f"Array([], shape={shape}, dtype=float32)"
  aval = ShapedArray(shape, np.float32)
  (out,) = compile_add(aval=aval)(a, a)
  assert out.shape == shape and np.asarray(out).shape == shape


# ----------------------------------------------------------------------------- Array protocol
def test_repr_matches_jax_format():
  assert repr(runtime.device_put(np.array([1.0, 2.0], np.float32))) == \
      "Array([1., 2.], dtype=float32)"
  assert repr(runtime.device_put(1.0)) == "Array(1., dtype=float32, weak_type=True)"
  assert repr(runtime.device_put(np.int32(3))) == "Array(3, dtype=int32)"
  assert repr(runtime.device_put(np.array([1.5], ml_dtypes.bfloat16))) == \
      "Array([1.5], dtype=bfloat16)"
  assert repr(runtime.device_put(np.array([[1, 2], [3, 4]], np.int32))) == \
      "Array([[1, 2],\n       [3, 4]], dtype=int32)"
  long = repr(runtime.device_put(np.arange(30, dtype=np.float32)))
  assert long.startswith("Array([ 0.,  1.,") and long.endswith("dtype=float32)")
  assert all(len(line) <= np.get_printoptions()["linewidth"] for line in long.splitlines())
  assert str(runtime.device_put(np.array([1.0, 2.0], np.float32))) == "[1. 2.]"


def test_array_converts_like_numpy():
  v = runtime.device_put(np.array([1.0, 2.0, 3.0], np.float32))
  s = runtime.device_put(np.int32(5))
  assert len(v) == 3 and v.ndim == 1 and v.size == 3
  assert v.devices() == {runtime.devices()[0]} and v.device is runtime.devices()[0]
  rows = list(v)
  assert all(isinstance(r, runtime.Array) and r.shape == () for r in rows)
  assert [float(r) for r in rows] == [1.0, 2.0, 3.0]
  assert [float(r) for r in reversed(v)] == [3.0, 2.0, 1.0]
  assert v.tolist() == [1.0, 2.0, 3.0]
  assert np.asarray(v, dtype=np.int32).dtype == np.int32
  assert int(s) == 5 and float(s) == 5.0 and complex(s) == 5 and bool(s)
  assert [10, 20, 30, 40, 50, 60][s] == 60
  assert f"{runtime.device_put(np.float32(1.25)):.1f}" == "1.2"
  with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
    len(s)
  with pytest.raises(TypeError, match="iteration over a 0-d array"):
    iter(s)
  with pytest.raises(ValueError, match="ambiguous"):
    bool(v)
  with pytest.raises(TypeError, match="unhashable"):
    hash(v)
  with pytest.raises(TypeError):
    [1, 2][runtime.device_put(np.float32(1))]
  assert v.block_until_ready() is v
  restored = pickle.loads(pickle.dumps(runtime.device_put(2.0)))
  assert float(restored) == 2.0 and restored.weak_type
  assert np.from_dlpack(v).tolist() == [1.0, 2.0, 3.0]


def test_host_copy_is_read_only_and_cached():
  a = runtime.device_put(np.arange(3, dtype=np.float32))
  assert a._value is a._value
  with pytest.raises(ValueError):
    a._value[0] = 1


def test_deleted_array_raises_on_read_but_keeps_metadata():
  a = runtime.device_put(np.arange(3, dtype=np.float32))
  np.asarray(a)
  a.delete()
  assert a.is_deleted() and a.shape == (3,)
  with pytest.raises(RuntimeError, match="deleted.*donated"):
    np.asarray(a)
  with pytest.raises(RuntimeError, match="deleted"):
    a.block_until_ready()
  with pytest.raises(RuntimeError, match="deleted"):  # as JAX: no repr once deleted
    repr(a)


# ----------------------------------------------------------------------------- compile/execute
def test_compiled_add_runs_and_returns_arrays(add_exe):
  x = runtime.device_put(np.arange(4, dtype=np.float32))
  y = runtime.device_put(np.full(4, 10, np.float32))
  (out,) = add_exe(x, y)
  assert isinstance(out, runtime.Array) and out.aval == f32_4
  assert out.device is runtime.devices()[0]
  np.testing.assert_array_equal(np.asarray(out), [10, 11, 12, 13])
  (again,) = add_exe(out, out)
  np.testing.assert_array_equal(np.asarray(again), [20, 22, 24, 26])


def test_executable_accepts_numpy_and_checks_arguments(add_exe):
  (out,) = add_exe(np.ones(4, np.float32), runtime.device_put(np.ones(4, np.float32)))
  np.testing.assert_array_equal(np.asarray(out), [2, 2, 2, 2])
  x = runtime.device_put(np.ones(4, np.float32))
  with pytest.raises(TypeError, match="takes 2 array argument"):
    add_exe(x)
  with pytest.raises(TypeError, match=r"argument 1 .* float32\[4\], got int32\[4\]"):
    add_exe(x, np.ones(4, np.int32))
  with pytest.raises(TypeError, match=r"argument 0 .* float32\[4\], got float32\[3\]"):
    add_exe(runtime.device_put(np.ones(3, np.float32)), x)


def test_executable_text_cost_and_compile_log(caplog):
  config.update("log_compiles", True)
  try:
    with caplog.at_level(logging.WARNING, logger="minijax"):
      exe = compile_add()
  finally:
    config.update("log_compiles", False)
  assert any("Compiling jit(add)" in r.getMessage() and "float32[4]" in r.getMessage()
             for r in caplog.records)
  assert any(re.fullmatch(r"Finished XLA compilation of jit\(add\) in \d+\.\d+ sec",
                          r.getMessage()) for r in caplog.records)
  assert "add" in exe.as_text() and "HloModule" in exe.as_text()
  assert exe.cost_analysis()["flops"] == 4.0


def test_donated_argument_is_deleted_and_reading_it_raises():
  exe = compile_add(aliases={0: 0})
  x = runtime.device_put(np.arange(4, dtype=np.float32))
  y = runtime.device_put(np.ones(4, np.float32))
  np.asarray(x)  # a cached host copy must not keep the buffer from being donated
  (out,) = exe(x, y)
  np.testing.assert_array_equal(np.asarray(out), [1, 2, 3, 4])
  assert x.is_deleted() and not y.is_deleted()
  with pytest.raises(RuntimeError, match="donated"):
    np.asarray(x)
  with pytest.raises(RuntimeError, match="deleted.*argument 0"):
    exe(x, y)


def test_donation_next_to_tokens_counts_the_tokens_in_both_indices():
  exe = compile_effectful(("a", "b"), aliases={0: 0})  # arg 2 -> result 2 in the module
  x = runtime.device_put(np.float32(3))
  (out,) = exe(x)
  assert float(out) == 6.0 and x.is_deleted()
  runtime.runtime_tokens.clear()


def test_ordered_effects_chain_tokens_per_effect():
  runtime.runtime_tokens.clear()
  device = runtime.devices()[0]
  both = compile_effectful(("a", "b"))
  only_b = compile_effectful(("b",))
  tokens = runtime.runtime_tokens
  initial = tokens.current("a", device)
  assert tokens.pending() == []
  (out,) = both(runtime.device_put(np.float32(2)))
  assert float(out) == 4.0
  after_first = tokens.current("a", device), tokens.current("b", device)
  assert after_first[0] is not initial and after_first[1] is not after_first[0]
  (out,) = only_b(out)
  assert float(out) == 8.0
  assert tokens.current("a", device) is after_first[0]
  assert tokens.current("b", device) is not after_first[1]
  (out,) = both(np.float32(1))  # numpy arguments take the same path
  assert len(tokens.pending()) == 2
  tokens.wait_all()  # finished chains go back to their initial token
  assert tokens.pending() == []
  assert tokens.current("a", device) is initial and tokens.current("b", device) is initial


def test_host_callback_threaded_on_a_token_sees_calls_in_order():
  seen = []
  aval = ShapedArray((3,), np.float32)

  def body(tokens, args):
    call = mhlo.CustomCallOp(
        [mhlo.TokenType.get()], [args[0], tokens[0]],
        call_target_name=ir.StringAttr.get("xla_ffi_python_cpu_callback"),
        has_side_effect=ir.BoolAttr.get(True),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
        backend_config=ir.DictAttr.get(
            {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), 0)}))
    return [call.results[0]], args

  module = build_module([aval], [aval], body, num_tokens=1)
  exe = runtime.compile(module, device=None, name="tap", in_avals=[aval], out_avals=[aval],
                        host_callbacks=[lambda x, token: seen.append(float(x[0])) or ()],
                        num_tokens=1, ordered_effects=("io",))
  for i in range(5):
    exe(np.full(3, i, np.float32))
  runtime.runtime_tokens.wait_all()
  assert seen == [0, 1, 2, 3, 4]
  runtime.runtime_tokens.clear()


def test_num_tokens_must_match_ordered_effects():
  module = build_module([f32_0d], [f32_0d], lambda toks, args: (toks, args), num_tokens=1)
  with pytest.raises(ValueError, match="num_tokens=1 but 0 ordered effect"):
    runtime.compile(module, device=None, name="bad", in_avals=[f32_0d], out_avals=[f32_0d],
                    num_tokens=1)


def test_unordered_effects_are_waited_for_by_wait_all():
  module = build_module([f32_0d], [f32_0d], lambda toks, args: ([], args))
  exe = runtime.compile(module, device=None, name="unordered", in_avals=[f32_0d],
                        out_avals=[f32_0d], unordered_effects=("u",))
  runtime.runtime_tokens.clear()
  exe(runtime.device_put(np.float32(1)))
  assert len(runtime.runtime_tokens.pending()) == 1
  runtime.runtime_tokens.wait_all()
  assert runtime.runtime_tokens.pending() == []


# ----------------------------------------------------------------------------- subprocesses
def test_each_of_four_devices_runs_its_own_executable():
  out = run_python("""
    import numpy as np
    from minijax import runtime
    from minijax.core.avals import ShapedArray
    from tests.test_runtime import compile_add, compile_effectful
    devices = runtime.devices()
    assert len(devices) == 4, devices
    for k, device in enumerate(devices):
      exe = compile_add(k)
      x = runtime.device_put(np.full(4, k, np.float32), k)
      assert x.device is device
      (out,) = exe(x, x)
      assert out.device is device and out.devices() == {device}, (out.device, device)
      assert np.asarray(out).tolist() == [2 * k] * 4
      (moved,) = exe(runtime.device_put(np.ones(4, np.float32), 0), x)  # copied to device k
      assert moved.device is device and np.asarray(moved).tolist() == [k + 1] * 4
    y = runtime.device_put(runtime.device_put(np.arange(4, dtype=np.float32), 1), 3)
    assert y.device is devices[3] and np.asarray(y).tolist() == [0, 1, 2, 3]
    try:
      runtime.get_device(4)
    except ValueError as err:
      assert "4 CPU device" in str(err)
    print("ok")
  """, MINIJAX_NUM_CPU_DEVICES="4")
  assert out.strip() == "ok"


def test_runtime_never_imports_jax():
  out = run_python("""
    import sys
    import numpy as np, ml_dtypes
    from minijax import runtime
    from tests.test_runtime import compile_add, compile_effectful
    (out,) = compile_add()(runtime.device_put(np.ones(4, np.float32)), np.ones(4, np.float32))
    np.asarray(out); repr(out); list(out)
    (t,) = compile_effectful(("e",))(runtime.device_put(1.0))
    float(t)
    runtime.runtime_tokens.wait_all()
    np.asarray(runtime.device_put(np.ones(3, ml_dtypes.bfloat16)))
    jax_modules = [m for m in sys.modules if m == "jax" or m.startswith("jax.")]
    assert not jax_modules, jax_modules
    print("ok")
  """)
  assert out.strip() == "ok"


def test_a_one_input_executable_called_with_another_number_of_arrays_says_so():
  module = build_module([f32_4], [f32_4], lambda toks, args: ([], [mhlo.NegOp(args[0]).result]))
  exe = runtime.compile(module, device=runtime.get_device(None), name="neg",
                        in_avals=[f32_4], out_avals=[f32_4])
  x = runtime.device_put(np.ones(4, np.float32))
  assert np.asarray(exe(x)[0]).tolist() == [-1.0] * 4
  for args in [(), (x, x)]:
    with pytest.raises(TypeError, match=r"takes 1 array argument\(s\), got"):
      exe(*args)


def test_transfer_guards_refuse_implicit_transfers_and_allow_explicit_ones():
  import minijax
  import minijax.numpy as jnp
  x = jnp.arange(3.)
  add_one = minijax.jit(lambda a: a + 1)
  closes_over_numpy = minijax.jit(lambda a: a + np.ones(3, np.float32))
  refused = "Disallowed host-to-device transfer"
  with minijax.transfer_guard("disallow"):
    assert minijax.config.transfer_guard_host_to_device == "disallow"
    with pytest.raises(Exception, match=refused):
      add_one(np.ones(3, np.float32))  # a numpy argument: an implicit transfer
    with pytest.raises(Exception, match=refused):
      x + np.ones(3, np.float32)
    np.testing.assert_array_equal(add_one(minijax.device_put(np.ones(3))), [2., 2., 2.])
    np.testing.assert_array_equal(closes_over_numpy(x), [1., 2., 3.])  # constants: no
    np.testing.assert_array_equal(minijax.device_get(x), [0., 1., 2.])  # reads on CPU: never
    assert str(x) == "[0. 1. 2.]"
    # random_test's test_seed_no_implicit_transfers: a seed on the device stays there
    key = minijax.random.PRNGKey(minijax.device_put(42))
    np.testing.assert_array_equal(key, [0, 42])
    typed = minijax.random.key(minijax.device_put(-5), impl="threefry2x32")
    np.testing.assert_array_equal(minijax.random.key_data(typed), [0, 2**32 - 5])
    with minijax.transfer_guard_host_to_device("allow"):  # one direction's own level
      add_one(np.ones(3, np.float32))
  with minijax.transfer_guard("disallow_explicit"):
    with pytest.raises(Exception, match=refused):
      minijax.device_put(np.ones(3))
  assert minijax.config.transfer_guard_host_to_device is None
  add_one(np.ones(3, np.float32))  # allowed again after the block
  minijax.config.update("jax_transfer_guard", "disallow")  # set-only: sets every direction
  try:
    assert minijax.config.transfer_guard_device_to_device == "disallow"
    with pytest.raises(Exception, match=refused):
      add_one(np.ones(3, np.float32))
  finally:
    minijax.config.update("jax_transfer_guard", None)
  add_one(np.ones(3, np.float32))
  with pytest.raises(ValueError, match="transfer_guard cannot be 'nope'"):
    minijax.transfer_guard("nope").__enter__()


def test_a_one_device_named_sharding_stays_the_arrays_sharding():
  import minijax
  import minijax.numpy as jnp
  from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P
  device = minijax.devices()[0]
  s = NamedSharding(Mesh(np.array([device]), ("x",)), P("x"))
  x = jnp.arange(3)
  y = minijax.device_put(x, s)
  assert y.sharding == s and y.committed and y.devices() == {device}
  np.testing.assert_array_equal(y, [0, 1, 2])
  assert minijax.device_put(y, s) is y and minijax.device_put(y) is y  # already there
  u = minijax.device_put(y, device)
  assert u.sharding == minijax.sharding.SingleDeviceSharding(device) and u.committed
  assert jnp.copy(y).sharding == s
  assert (y + 1).committed and minijax.jit(lambda a: a * 2, in_shardings=s)(y).committed
