"""JAX's public names for flags, contexts and jit's behaviours, as JAX 0.10.2 has them.

Flag context managers are JAX's state objects (`.value`, `get_global`, `set_global`); a
`config.update` inside a `with` block changes the global value, in force once the block
ends; the flags that key jit's caches also key the traces of eager control-flow bodies.
"""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.config import config
from minijax.core.dtypes import TypePromotionError


def test_an_update_inside_a_flag_block_is_the_global_value_after_it():
  precision = minijax.default_matmul_precision
  assert precision.get_global() is None and precision.value is None
  try:
    with precision("tensorfloat32"):
      config.update("jax_default_matmul_precision", "float32")
      assert precision.value == "tensorfloat32"  # the block's value stays in force
      assert precision.get_global() == "float32"
    assert config.default_matmul_precision == "float32"
  finally:
    config.update("jax_default_matmul_precision", None)
  assert precision.value is None
  with pytest.raises(TypeError, match="bool"):
    bool(precision)


def test_set_global_is_update_and_decorators_restore_the_flag():
  rank = minijax.numpy_rank_promotion
  rank.set_global("warn")
  try:
    assert config.numpy_rank_promotion == "warn"

    @rank("raise")
    def read():
      return rank.value
    assert read() == "raise" and rank.value == "warn"
  finally:
    rank.set_global("allow")


def _counting(fun):
  calls = []

  def counted(*args):
    calls.append(1)
    return fun(*args)
  return counted, calls


def test_a_precision_change_traces_jit_and_eager_cond_bodies_again_and_back_reuses():
  x = jnp.ones((2, 2))
  g, calls = _counting(lambda x: jnp.dot(x, x))
  f = minijax.jit(g)
  branch, branch_calls = _counting(lambda x: jnp.dot(x, x))
  for run, count in [(f, calls), (lambda x: lax.cond(True, branch, branch, x), branch_calls)]:
    run(x)
    run(x)
    assert len(count) == 1  # an eager cond's bodies are traced once, as JAX's are
    with minijax.default_matmul_precision("tensorfloat32"):
      np.testing.assert_array_equal(run(x), 2 * np.ones((2, 2)))
      assert len(count) == 2
    run(x)
    assert len(count) == 2  # back to the first state: its trace is reused


def test_no_tracing_refuses_a_new_trace_and_no_execution_a_run():
  f = minijax.jit(lambda x: x * 2)
  f(jnp.arange(3))
  with minijax.no_tracing():
    assert f(jnp.arange(3)).tolist() == [0, 2, 4]  # cached: no trace needed
    with pytest.raises(RuntimeError, match="no_tracing"):
      f(jnp.arange(4))
  with minijax.no_execution():
    with pytest.raises(RuntimeError, match="no_execution"):
      f(jnp.arange(3))  # even with an executable on the fast path
  assert f(jnp.arange(3)).tolist() == [0, 2, 4]


def test_a_user_context_keys_jit_caches():
  ctx = minijax.make_user_context(0)
  g, calls = _counting(lambda x: x + 1)
  f = minijax.jit(g)
  f(1.0)
  f(1.0)
  with ctx(1):
    assert ctx.value == 1
    f(1.0)
  assert len(calls) == 2
  assert ctx.get_global() == 0
  ctx.set_global(5)
  try:
    assert ctx.value == 5 and ctx.get_global() == 5
    f(1.0)
    assert len(calls) == 3
  finally:
    ctx.set_global(0)


def test_f16_reductions_over_long_axes_are_refused_when_the_flag_is_off():
  x = jnp.ones(3, "bfloat16")
  assert float(lax.reduce_sum(x, [0])) == 3.0
  with minijax.allow_f16_reductions(False):
    with pytest.raises(ValueError, match=r"reduce_sum on operand bfloat16\[3\] is not allowed"):
      lax.reduce_sum(x, [0])
    with pytest.raises(ValueError, match="not allowed"):
      minijax.jit(lambda x: lax.reduce_sum(x, [0]))(jnp.ones(4, np.float16))
    assert lax.reduce_sum(jnp.ones((1, 3), "bfloat16"), [0]).shape == (3,)
  assert float(lax.reduce_sum(x, [0])) == 3.0


# ----------------------------------------------------------------------------- tokens

def test_tokens_are_values_that_jit_takes_and_returns():
  from minijax.extend.core import Token
  token = lax.create_token()
  assert isinstance(token, Token)
  with pytest.raises(RuntimeError, match="Cannot convert a token-shape buffer to a numpy"):
    token._buf._value
  assert isinstance(minijax.jit(lax.create_token)(1.0), Token)
  for _ in range(2):  # the second call from the caches
    two, captured = minijax.jit(lambda x: (x + 2, token))(7)
    assert int(two) == 9 and isinstance(captured, Token)
    arr, out = minijax.jit(lambda a, t: (a * 2, t))(jnp.ones(3), token)
    assert arr.tolist() == [2.0] * 3 and isinstance(out, Token) and out is not token
    same, out = minijax.jit(lambda a, t: (a, t))(jnp.ones(3), token)
    assert isinstance(out, Token) and out is not token
  # a token that went through a program is a token still: it goes in again
  assert isinstance(minijax.jit(lambda a, t: (a, t))(jnp.ones(3), out)[1], Token)
  assert "b:Token" in str(minijax.make_jaxpr(lambda a, t: (a, t))(1.0, token))


def test_identity_results_of_jit_are_buffers_of_their_own():
  x = jnp.array([1, 2, 3])
  y = minijax.jit(lambda x: x)(x)
  assert y is not x and x.unsafe_buffer_pointer() != y.unsafe_buffer_pointer()
  z1, z2 = minijax.jit(lambda x: (x, x))(x)
  assert z1.unsafe_buffer_pointer() != z2.unsafe_buffer_pointer()
  x.delete()
  assert y.tolist() == [1, 2, 3] and z1.tolist() == [1, 2, 3]


def test_empty_and_dce_sink():
  out = lax.empty((2, 2), dtype=jnp.float32)
  assert out.shape == (2, 2) and out.dtype == np.float32
  assert lax.empty(3, jnp.int32).shape == (3,)

  def f(x):
    lax.dce_sink(x * 2)
    return x
  assert minijax.vmap(f)(jnp.arange(3.0)).tolist() == [0.0, 1.0, 2.0]
  jaxpr = minijax.make_jaxpr(f)(1.0)
  assert "mul" in str(jaxpr) and "dce_sink" in str(jaxpr)  # the sink keeps what it uses
  assert float(minijax.grad(f)(1.0)) == 1.0
  assert float(minijax.jit(f)(3.0)) == 3.0


# ----------------------------------------------------------------------------- placement

def test_default_device_is_a_context_that_places_jit_and_device_put():
  devices = minijax.devices()
  with minijax.default_device("cpu"):
    out = minijax.jit(lambda x: x + 1)(1)
  assert out.device == minijax.local_devices(backend="cpu")[0]
  with pytest.raises(ValueError, match="default_device cannot be 'gpu'"):
    minijax.default_device("gpu").__enter__()
  last = devices[-1]
  with minijax.default_device(last):
    assert minijax.jit(lambda x: x * 2)(3).device == last
    assert minijax.device_put(np.ones(2)).device == last
  assert minijax.jit(lambda x: x * 2)(3).device == devices[0]


def test_device_put_refuses_what_is_not_a_placement_and_aliases_as_asked():
  with pytest.raises(ValueError, match="Received invalid value: cpu"):
    minijax.device_put(jnp.arange(8), "cpu")
  arr = minijax.device_put(np.arange(8), minijax.devices()[0])
  assert minijax.device_put(arr, may_alias=True, donate=False) is arr
  assert minijax.device_put(arr) is arr
  copy = minijax.device_put(arr, may_alias=False, donate=False)
  assert copy is not arr and copy.unsafe_buffer_pointer() != arr.unsafe_buffer_pointer()
  assert copy.tolist() == list(range(8))
  with pytest.raises(ValueError, match="may_alias and donate cannot be True at the same time"):
    minijax.device_put(arr, may_alias=True, donate=True)


def test_jit_eval_shape_gives_the_out_shardings():
  s = minijax.sharding.SingleDeviceSharding(minijax.devices()[0])
  f = minijax.jit(lambda x: (x * 2, x.sum()), out_shardings=s)
  out, total = f.eval_shape(np.arange(8))
  assert out.shape == (8,) and out.dtype == np.int32 and out.sharding == s
  assert total.shape == () and total.sharding == s
  plain = minijax.jit(lambda x: x * 2).eval_shape(minijax.ShapeDtypeStruct((3,), np.float32))
  assert plain.shape == (3,) and plain.sharding is None


def test_modules_say_their_partition_and_replica_counts_in_stablehlo_too():
  lowered = minijax.jit(lambda x: x + 4).lower(1.0)
  for text in (lowered.as_text(), lowered.as_text("stablehlo")):
    assert "mhlo.num_partitions = 1" in text and "mhlo.num_replicas = 1" in text
  assert "stablehlo.add" in lowered.as_text("stablehlo")


# ----------------------------------------------------------------------------- numbers

def test_frexp_matches_numpy_subnormals_included_and_differentiates():
  x = np.array([1.0, 3.0, 5.0, 0.0, -0.75, np.inf, -np.inf, np.nan, 1e-40, -3e-45, 3.4e38, -0.0],
               np.float32)
  m, e = jnp.frexp(x)
  want_m, want_e = np.frexp(x)
  np.testing.assert_array_equal(np.asarray(m), want_m)
  np.testing.assert_array_equal(np.asarray(e), want_e)
  assert e.dtype == np.int32
  for dtype in (np.float16, jnp.bfloat16):
    y = np.array([1.5, 0.1, -6e-8, 100.0], dtype)
    m, e = jnp.frexp(y)
    want_m, want_e = np.frexp(y.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(m).astype(np.float32), want_m)
    np.testing.assert_array_equal(np.asarray(e), want_e)
  jac = minijax.jacrev(lambda x: jnp.frexp(x)[0])(jnp.array([3.0, 5.0]))
  np.testing.assert_array_equal(np.asarray(jac), [[0.25, 0.0], [0.0, 0.125]])
  with pytest.raises(TypeError, match="complex"):
    jnp.frexp(jnp.ones(2, np.complex64))


def test_python_ints_beyond_int32_convert_straight_to_the_target_type():
  assert float(lax.convert_element_type(2**100, jnp.float32)) == float(np.float32(2**100))
  assert float(lax.convert_element_type(2**40, jnp.float32)) == 2.0**40
  with pytest.raises(OverflowError):
    lax.convert_element_type(2**100, jnp.int32)
  with pytest.raises(OverflowError):
    jnp.multiply(2**100, 3.0)


# ----------------------------------------------------------------------------- logs

def test_a_compile_logs_what_jax_logs_at_debug_level(caplog):
  import logging

  @minijax.jit
  def twice(x):
    return x * 2
  twice(jnp.ones(2))
  with caplog.at_level(logging.DEBUG, logger="minijax"):
    caplog.clear()
    twice(2.0)  # a new signature: traced, lowered and compiled
  messages = [r.getMessage() for r in caplog.records]
  assert all(r.levelno == logging.DEBUG for r in caplog.records)
  for start in ("Finished tracing twice for jit in ",
                "Finished jaxpr to MLIR module conversion jit(twice) in ",
                "Compiling jit(twice) for ",
                "Finished XLA compilation of jit(twice) in "):
    assert sum(m.startswith(start) for m in messages) == 1, (start, messages)
  with caplog.at_level(logging.DEBUG, logger="minijax"):
    caplog.clear()
    twice(3.0)  # cached: nothing to say
  assert not caplog.records


def test_jit_traces_again_for_another_axis_environment():
  f = lambda: lax.axis_size("i")  # noqa: E731
  g = minijax.jit(f)
  for size in (2, 3, 2):
    out = minijax.vmap(g, axis_name="i", axis_size=size, out_axes=None)()
    assert int(out) == size


def test_strict_promotion_lets_python_scalars_join_bfloat16_and_int4():
  with minijax.numpy_dtype_promotion("strict"):
    x = jnp.ones((), jnp.bfloat16)
    assert (x + 1).dtype == jnp.bfloat16 and float(minijax.jit(lambda x: x + 1)(x)) == 2.0
    assert (x * 2.5).dtype == jnp.bfloat16
    assert (jnp.ones(2, jnp.int4) + 1).dtype == jnp.int4
    with pytest.raises(TypePromotionError, match="strict"):
      x + jnp.int32(1)
    with pytest.raises(TypePromotionError, match="strict"):
      x + 1j


# ----------------------------------------------------------------------------- arrays

def test_a_deleted_array_has_no_repr():
  x = minijax.device_put(1.0)
  x.delete()
  with pytest.raises(RuntimeError, match="Array has been deleted"):
    repr(x)


def test_jnp_array_copies_so_donating_the_original_leaves_the_copy():
  x = jnp.asarray([0, 1])
  x_copy = jnp.array(x, copy=True)
  assert x_copy.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
  assert jnp.asarray(x) is x  # asarray does not copy
  out = minijax.jit(lambda a: a.at[0].set(77), donate_argnums=0)(x)
  assert x.is_deleted() and out.tolist() == [77, 1] and x_copy.tolist() == [0, 1]


def test_an_unusable_donation_warns_and_leaves_the_argument_alive():
  x = jnp.array([1.0, 2.0], jnp.float32)
  y = jnp.array([1, 2], jnp.int32)
  f = minijax.jit(lambda x, y: x.sum() + jnp.float32(y.sum()), donate_argnames=("x", "y"))
  with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: "
                    r"ShapedArray\(float32\[2\]\), ShapedArray\(int32\[2\]\)"):
    assert float(f(x, y)) == 6.0
  assert not x.is_deleted() and x.tolist() == [1.0, 2.0]


def test_deepcopy_of_a_traced_value_is_a_value_of_the_trace():
  import copy
  assert int(minijax.jit(lambda x: copy.deepcopy(x) + 1)(1)) == 2
  a = jnp.arange(3)
  for b in (copy.deepcopy(a), copy.copy(a), copy.deepcopy({"a": a})["a"]):
    assert b.tolist() == [0, 1, 2] and b.unsafe_buffer_pointer() != a.unsafe_buffer_pointer()


def test_a_static_argument_whose_eq_raises_is_named_in_a_value_error():
  class HashableWithoutEq:
    def __hash__(self):
      return 1

    def __eq__(self, other):
      raise NotImplementedError("no comparing")

  f = minijax.jit(lambda x, y: x + 3, static_argnums=[1])
  assert int(f(1, 1)) == 4
  with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
    f(1, np.asarray(1))
  with pytest.raises(ValueError, match=r"static arguments should be comparable using __eq__"
                     r".*HashableWithoutEq.*NotImplementedError: no comparing"):
    f(1, HashableWithoutEq())
    f(1, HashableWithoutEq())  # a second instance: equal hashes, so __eq__ is asked


def test_vmap_and_make_jaxpr_name_and_document_what_they_wrap():
  def superfun(a):
    """Does things with stuff."""
  assert minijax.vmap(superfun).__doc__ == (
      "Vectorized version of superfun. Takes similar arguments as superfun but with "
      "additional array axes over which superfun is mapped.\n\nOriginal documentation:\n\n"
      "Does things with stuff.")
  assert minijax.vmap(lambda x: x).__doc__.startswith("Vectorized version of <lambda>.")

  def foo(x, y, z):
    return x + y + z
  jfoo = minijax.make_jaxpr(foo)
  assert jfoo.__name__ == "make_jaxpr(foo)" and jfoo.__module__ == "minijax"
  assert jfoo.__qualname__ == f"make_jaxpr({foo.__qualname__})"
  assert "add" in str(jfoo(1.0, 2.0, 3.0))


def test_lowering_for_another_platform_gives_text_and_refuses_to_compile():
  f = minijax.jit(lambda x: x * 2)
  lowered = f.trace(jnp.arange(8)).lower(lowering_platforms=("tpu",))
  assert "mhlo.multiply" in lowered.as_text()
  with pytest.raises(ValueError, match="lowered for 'tpu'.*compiles for the CPU only"):
    lowered.compile()
  with pytest.raises(NotImplementedError, match="one of"):
    f.trace(jnp.arange(8)).lower(lowering_platforms=("cpu", "tpu"))
  g = minijax.jit(lambda x: jnp.linalg.inv(x))  # a LAPACK custom call: the CPU's own
  with pytest.raises(NotImplementedError, match="custom calls"):
    g.trace(jnp.eye(3)).lower(lowering_platforms=("tpu",))
  assert f.trace(jnp.arange(8)).lower(lowering_platforms=("cpu",)).compile()(
      jnp.arange(8)).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]


def test_names_that_jaxs_own_test_files_import_exist_with_jaxs_fields():
  """Issue 31: lax_test, lax_autodiff_test and shard_map_test failed to import, and
  x64_context_test had nothing to run, for want of these."""
  import pickle
  import minijax.numpy as jnp
  from minijax import lax, tree_util
  assert lax.ScatterDimensionNumbers._fields == (
      "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
      "operand_batching_dims", "scatter_indices_batching_dims")
  spec = minijax.ShapeDtypeStruct((2, 3), "float32")
  assert spec.update(shape=(4,)) == minijax.ShapeDtypeStruct((4,), "float32")
  assert spec.update(dtype="int32").dtype == np.int32 and spec.shape == (2, 3)
  with pytest.raises(TypeError, match="unexpected keyword"):
    spec.update(size=3)
  with minijax.enable_x64(True):
    assert minijax.enable_x64.value and jnp.ones(1).dtype == np.float64
    assert minijax.jit(lambda x: x + 1)(1).dtype == np.int64
  assert not minijax.enable_x64.value and jnp.ones(1).dtype == np.float32
  treedef = tree_util.tree_structure({"a": [1, (2, 3)], "b": None})
  assert pickle.loads(pickle.dumps(treedef)) == treedef


@pytest.mark.parametrize("dtype, kinds", [
    (np.bool_, {"bool"}), (np.int8, {"signed integer", "integral", "numeric"}),
    (np.uint32, {"unsigned integer", "integral", "numeric"}),
    ("int4", {"signed integer", "integral", "numeric"}),
    ("bfloat16", {"real floating", "numeric"}), ("float8_e4m3fn", {"real floating", "numeric"}),
    (np.complex64, {"complex floating", "numeric"})])
def test_isdtype_sorts_every_dtype_into_the_array_apis_kinds(dtype, kinds):
  import minijax.numpy as jnp
  every = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
           "complex floating", "numeric"]
  assert {k for k in every if jnp.isdtype(dtype, k)} == kinds
  assert jnp.isdtype(dtype, (dtype, "bool")) and not jnp.isdtype(dtype, np.float64)
  with pytest.raises(ValueError, match="Unrecognized kind='bad'"):
    jnp.isdtype(dtype, "bad")
  with pytest.raises(TypeError, match="Expected kind to be a dtype, string, or tuple"):
    jnp.isdtype(dtype, 3)
