"""jit: caching, static and donated arguments, lowering text, devices, and the errors
users meet at the jit boundary."""
import functools
import gc
import logging
import weakref

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.core.avals import ShapedArray
from tests.conftest import compiles, run_python


def _count_compiles(caplog, fn):
  return len(compiles(caplog, fn))


def test_jit_compiles_once_per_shape_and_dtype(caplog):
  f = minijax.jit(lambda x: lax.sin(lax.mul(x, x)))
  x3 = np.ones(3, np.float32)
  assert _count_compiles(caplog, lambda: [f(x3), f(x3 + 1), f(minijax.device_put(x3))]) == 1
  assert _count_compiles(caplog, lambda: f(np.ones(4, np.float32))) == 1
  np.testing.assert_allclose(f(x3), np.sin(x3 * x3), rtol=1e-6)


def test_log_compiles_names_the_function_and_avals(caplog):
  def my_function(x):
    return lax.cos(x)
  f = minijax.jit(my_function)
  minijax.config.update("log_compiles", True)
  try:
    with caplog.at_level(logging.WARNING, logger="minijax"):
      f(np.ones((2, 2), np.float32))
  finally:
    minijax.config.update("log_compiles", False)
  assert any("my_function" in r.getMessage() and "float32[2,2]" in r.getMessage()
             for r in caplog.records)


def test_results_stay_on_device_as_arrays():
  out = minijax.jit(lax.sin)(np.ones(2, np.float32))
  assert isinstance(out, minijax.Array)
  assert out.devices() == {minijax.devices()[0]}


def test_static_argnums_and_argnames_select_python_values():
  def f(x, n, *, scale):
    for _ in range(n):
      x = lax.mul(x, float(scale))
    return x
  g = minijax.jit(f, static_argnums=1, static_argnames="scale")
  np.testing.assert_allclose(g(np.ones(2, np.float32), 3, scale=2.0), [8.0, 8.0])
  np.testing.assert_allclose(g(np.ones(2, np.float32), 2, scale=3.0), [9.0, 9.0])


def test_a_jitted_function_has_its_functions_signature_even_unfollowed():
  """As in JAX, `inspect.signature(jit(f), follow_wrapped=False)` is f's (chex's fake pmap
  maps keyword arguments onto positions with it), and binds like it."""
  import inspect

  def f(x, y=2, *, z) -> int:
    return x
  sig = inspect.signature(minijax.jit(f), follow_wrapped=False)
  assert sig == inspect.signature(f) and str(sig) == "(x, y=2, *, z) -> int"
  assert dict(sig.bind(1, z=3).arguments) == {"x": 1, "z": 3}
  with pytest.raises(TypeError, match="z"):
    sig.bind(1)
  # a callable without a signature reads as taking anything
  assert str(inspect.signature(minijax.jit(max), follow_wrapped=False)) == "(*args, **kwargs)"
  # a partial of the jitted function (dinosaur reads it) and Signature's own methods
  unfollowed = inspect.signature(functools.partial(minijax.jit(f), 1), follow_wrapped=False)
  assert str(unfollowed) == "(y=2, *, z) -> int"
  assert str(sig.replace(return_annotation=float)) == "(x, y=2, *, z) -> float"
  # chex's fake pmap: keyword arguments bound to positions, then a vmap of the jitted
  jitted = minijax.jit(lambda x, y: x * 2 + y)
  x = jnp.array([[1, 2]])
  args = inspect.signature(jitted, follow_wrapped=False).bind(x=x, y=x).args
  np.testing.assert_array_equal(minijax.vmap(jitted)(*args), [[3, 6]])


def test_unhashable_static_argument_is_a_clear_error():
  g = minijax.jit(lambda x, shape: x, static_argnums=1)
  with pytest.raises(ValueError, match="Static argument 1 must be hashable"):
    g(1.0, [1, 2])
  with pytest.raises(ValueError, match="^Non-hashable static arguments are not supported"):
    g(1.0, np.ones(2))


def test_pytree_arguments_and_results():
  f = minijax.jit(lambda d: {"s": lax.sin(d["a"]), "pair": (d["b"], lax.cos(d["a"]))})
  out = f({"a": np.zeros(2, np.float32), "b": np.ones(3, np.float32)})
  np.testing.assert_allclose(out["pair"][1], [1.0, 1.0])
  assert out["pair"][0].shape == (3,)


def test_string_argument_is_rejected_with_its_type():
  with pytest.raises(TypeError, match="str"):
    minijax.jit(lambda x: x)("hello")


def test_object_leaf_is_rejected_with_its_type():
  with pytest.raises(TypeError, match="object"):
    minijax.jit(lambda x: x)(object())


def test_jaxpr_without_equations_returns_without_compiling(caplog):
  f = minijax.jit(lambda x, y: (y, x))
  assert _count_compiles(caplog, lambda: f(np.ones(2, np.float32), 3.0)) == 0
  a, b = f(np.ones(2, np.float32), 3.0)
  assert float(a) == 3.0 and isinstance(b, minijax.Array)


def test_nested_jit_lowers_to_a_func_call_of_a_private_function():
  inner = minijax.jit(lax.sin)
  text = minijax.jit(lambda x: lax.add(inner(x), inner(x))).lower(np.ones(2, np.float32)).as_text()
  assert "func.func public @main" in text
  assert text.count("call @sin") == 2 and text.count("func.func private @sin") == 1
  assert "mhlo.sine" in text


def test_python_scalar_arguments_are_served_by_one_compiled_entry(caplog):
  from minijax.core.avals import python_scalar_aval
  f = minijax.jit(lambda x, s: jnp.multiply(x, s))
  x = minijax.device_put(np.ones(2, np.float32))
  values = [2.0, 3.0, -0.0, 0.0, float("inf"), float("nan"), 2.0]
  assert _count_compiles(caplog, lambda: f(x, 1.0)) == 1
  assert _count_compiles(caplog, lambda: [f(x, v) for v in values]) == 0
  results = [np.asarray(f(x, v)) for v in values]
  for v, r in zip(values, results):
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r, [v, v])
    assert np.signbit(r).all() == np.signbit(v)  # -0.0 and 0.0 stay apart
  # the key is the avals, a Python float's being the weakly typed f32[] (as in JAX), and
  # whether an argument is committed to its device
  assert list(f._wrapped._fast) == [(x.aval, python_scalar_aval(1.0), False)]
  assert f(x, 3).dtype == np.float32 and f(x, True).dtype == np.float32
  assert len(f._wrapped._fast) == 3  # an int and a bool have avals of their own
  with pytest.raises(OverflowError):
    f(x, 2**40)


def test_a_donated_python_scalar_gets_a_buffer_of_its_own_each_call():
  bump = minijax.jit(lambda s: s + 1.0, donate_argnums=0)
  assert "tf.aliasing_output" in bump.lower(1.0).as_text()
  assert [float(bump(1.0)) for _ in range(3)] == [2.0, 2.0, 2.0]
  assert float(minijax.jit(lambda s: s * 3.0)(1.0)) == 3.0


def test_lowered_compile_shows_xla_optimized_hlo():
  compiled = minijax.jit(lax.sin).lower(np.ones(2, np.float32)).compile()
  assert "HloModule" in compiled.as_text()
  np.testing.assert_allclose(compiled(np.zeros(2, np.float32)), [0.0, 0.0])


def test_lower_then_compile_lowers_once_and_the_call_reuses_that_executable(monkeypatch):
  from minijax.lowering import mlir
  from minijax.staging import compiler, stages
  lowerings = []
  original = mlir.lower_jaxpr_to_module

  def counting(*args, **kwargs):
    lowerings.append(kwargs.get("name"))
    return original(*args, **kwargs)
  monkeypatch.setattr(stages, "lower_jaxpr_to_module", counting)
  monkeypatch.setattr(compiler, "lower_jaxpr_to_module", counting)
  f = minijax.jit(lambda x: lax.cos(x) * 2.0)
  compiled = f.lower(np.ones(3, np.float32)).compile()
  np.testing.assert_allclose(compiled(np.zeros(3, np.float32)), [2.0] * 3)
  np.testing.assert_allclose(f(np.zeros(3, np.float32)), [2.0] * 3)
  assert lowerings == ["<lambda>"]


def test_stages_know_their_signature_and_refuse_other_arguments():
  f = lambda x: jnp.sqrt(x ** 2) + 1.0
  lowered = minijax.jit(f).lower(1.0)
  compiled = lowered.compile()
  assert float(compiled(1.0)) == 2.0
  for stage in (lowered, compiled):
    assert stage.in_avals == ((ShapedArray((), np.float32, weak_type=True),), {})
    assert stage.in_tree == minijax.tree_util.tree_structure(((0,), {}))
  with pytest.raises(TypeError, match="compiled with input pytree does not match"):
    compiled([1.0])
  typed = minijax.jit(f).lower(np.float32(1)).compile()
  with pytest.raises(TypeError, match=r"(?s)Argument types differ.*Argument 'x' compiled with "
                                      r"float32\[\] and called with int32\[\]"):
    typed(np.int32(1))
  with pytest.raises(TypeError, match="Cannot apply JAX transformations .*BatchTracer"):
    minijax.vmap(lambda x: compiled(x) + 2)(jnp.ones(3))
  donating = minijax.jit(lambda x, y: (x, y * 2), donate_argnums=1).lower(
      {"a": np.float32(1), "b": np.float32(2)}, np.float32(3))
  (x_info, y_info), _ = donating.args_info
  assert not x_info["a"].donated and y_info.donated and donating.donate_argnums == (2,)
  assert x_info["a"].shape == () and x_info["a"].dtype == np.float32


def test_lowered_text_in_three_dialects_cost_and_memory_analysis():
  lowered = minijax.jit(lambda x: x + 4.0).lower(1.0)
  assert "mhlo.add" in lowered.as_text() and "stablehlo.add" in lowered.as_text("stablehlo")
  assert "add(" in lowered.as_text(dialect="hlo")
  assert "ENTRY" in lowered.compiler_ir(dialect="hlo").as_hlo_text()
  with pytest.raises(ValueError, match="unknown dialect 'llvm'"):
    lowered.as_text("llvm")
  assert lowered.cost_analysis()["flops"] == 1.0
  compiled = lowered.compile()
  assert compiled.cost_analysis()["flops"] >= 1.0
  assert compiled.memory_analysis().argument_size_in_bytes == 4
  assert compiled.runtime_executable() is not None
  trivial = minijax.jit(lambda x: x).lower(1.0).compile()  # compiled, though it does nothing
  assert trivial.runtime_executable() is not None and float(trivial(4.0)) == 4.0


def test_compiler_options_reach_xla_and_bad_ones_are_named():
  f = lambda x: jnp.sqrt(x ** 2) + 1.0
  lowered = minijax.jit(f).lower(1.0)
  plain, embedded = lowered.compile(), lowered.compile({"xla_embed_ir_in_executable": True})
  assert plain is not embedded and float(embedded(1.0)) == 2.0
  assert float(minijax.jit(f, compiler_options={"exec_time_optimization_effort": 0.0})(1.0)) == 2.0
  with pytest.raises(minijax.errors.JaxRuntimeError, match="No such compile option: 'bad_key'"):
    lowered.compile(compiler_options={"bad_key": "value"})
  with pytest.raises(minijax.errors.JaxRuntimeError, match="is not a valid bool value"):
    lowered.compile(compiler_options={"xla_embed_ir_in_executable": "maybe"})
  with pytest.raises(minijax.errors.JaxRuntimeError, match="No such compile option"):
    minijax.jit(f, compiler_options={"exec_time_compilation_effort": 0.0})(1.0)


def test_donated_argument_is_aliased_and_deleted_after_the_call():
  f = minijax.jit(lambda x: lax.add(x, x), donate_argnums=0)
  assert "tf.aliasing_output = 0 : i32" in f.lower(np.ones(4, np.float32)).as_text()
  x = minijax.device_put(np.ones(4, np.float32))
  y = f(x)
  np.testing.assert_allclose(y, [2.0] * 4)
  assert x.is_deleted()
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(x)


def test_deleted_array_cannot_be_read_or_passed():
  x = minijax.device_put(np.ones(2, np.float32))
  x.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    minijax.jit(lax.sin)(x)


def test_device_index_out_of_range_is_a_clear_error():
  with pytest.raises(ValueError, match="MINIJAX_NUM_CPU_DEVICES"):
    minijax.jit(lax.sin, device=99)


def test_debug_nans_names_the_primitive_that_made_the_nan():
  minijax.config.update("debug_nans", True)
  try:
    with pytest.raises(FloatingPointError, match="nan.*sin"):
      lax.sin(np.float32(np.inf))
    with pytest.raises(FloatingPointError, match="sin"):
      minijax.jit(lambda x: lax.sin(lax.mul(x, x)))(np.float32(np.inf))
  finally:
    minijax.config.update("debug_nans", False)


def test_a_function_jitted_for_each_of_4_devices_runs_there():
  result = run_python("""
import numpy as np, minijax
from minijax import lax
from minijax.core.avals import ShapedArray
assert len(minijax.devices()) == 4
for d in range(4):
  f = minijax.jit(lambda x: lax.add(lax.mul(x, x), 1.0), device=d)
  out = f(np.full(3, d, np.float32))
  assert out.devices() == {minijax.devices()[d]}, (d, out.devices())
  np.testing.assert_allclose(out, d * d + 1.0)
  x = minijax.device_put(np.ones(2, np.float32), minijax.devices()[d])
  y = lax.sin(x)
  assert y.devices() == {minijax.devices()[d]}
print("ok")
""", env={"MINIJAX_NUM_CPU_DEVICES": "4"})
  assert result.returncode == 0, result.stderr
  assert "ok" in result.stdout


def test_jax_is_never_imported():
  result = run_python("""
import sys, numpy as np, minijax
from minijax import lax
from minijax.core.avals import ShapedArray
x = minijax.device_put(np.arange(4, dtype=np.float32))
y = minijax.jit(lambda a: lax.sin(lax.mul(a, a)))(x)
z = lax.cos(y)
np.asarray(z); z.tolist(); repr(z)
bad = [m for m in sys.modules if m == "jax" or m.startswith("jax.")]
assert not bad, bad
print("ok")
""")
  assert result.returncode == 0, result.stderr


def test_changing_enable_x64_retraces_jitted_functions():
  f = minijax.jit(lambda x: lax.mul(x, 2.5))
  x = minijax.device_put(np.float32(2.0))
  assert f(x).dtype == np.float32 and f(3.0).dtype == np.float32
  minijax.config.update("enable_x64", True)
  try:
    assert f(3.0).dtype == np.float64
  finally:
    minijax.config.update("enable_x64", False)
  assert f(3.0).dtype == np.float32


@pytest.mark.usefixtures("immediate_taps")
def test_changing_the_tap_mechanism_relowers_jitted_functions():
  from minijax.experimental import host_callback as hcb
  f = minijax.jit(lambda x: hcb.id_tap(lambda *a: None, x))
  previous = minijax.config.tap_mechanism
  try:
    for mechanism, target in [("native", "minijax_tap"), ("callback", "xla_ffi_python_cpu_callback")]:
      minijax.config.update("tap_mechanism", mechanism)
      assert target in f.lower(np.float32(1.0)).as_text()
      f(np.float32(1.0))
  finally:
    minijax.config.update("tap_mechanism", previous)
    hcb.barrier_wait()


def test_switching_the_tap_mechanism_back_reuses_what_was_compiled_for_it(caplog):
  from minijax.experimental import host_callback as hcb
  f = minijax.jit(lambda x: hcb.id_tap(lambda *a: None, x) + 1)
  x = minijax.device_put(np.float32(1.0))
  previous = minijax.config.tap_mechanism
  try:
    for mechanism in ("native", "callback"):
      minijax.config.update("tap_mechanism", mechanism)
      f(x)
    with caplog.at_level(logging.DEBUG, logger="minijax"):
      for mechanism in ("native", "callback", "native"):
        minijax.config.update("tap_mechanism", mechanism)
        assert float(f(x)) == 2.0
    assert not [r for r in caplog.records if r.getMessage().startswith("Compiling")]
  finally:
    minijax.config.update("tap_mechanism", previous)
    hcb.barrier_wait()


# ----------------------------------------------------------------------------- caches by function

def test_jit_made_again_for_the_same_function_reuses_its_traces_and_executables(caplog):
  traces = []

  def f(x):
    traces.append(x)
    return x * 2.0

  x = minijax.device_put(np.ones(3, np.float32))
  assert _count_compiles(caplog, lambda: [minijax.jit(f)(x) for _ in range(5)]) == 1
  assert len(traces) == 1
  # other options are another cache; the same options written another way are not
  assert _count_compiles(caplog, lambda: minijax.jit(f, donate_argnums=())(x)) == 0
  assert _count_compiles(caplog, lambda: minijax.jit(f, static_argnames=())(x)) == 0
  assert _count_compiles(caplog, lambda: minijax.jit(f, device=first_device())(x)) == 1
  assert len(traces) == 2
  # a closure made anew is another function
  make = lambda: minijax.jit(lambda y: y + 1.0)  # noqa: E731
  assert _count_compiles(caplog, lambda: [make()(x) for _ in range(2)]) == 2


def first_device():
  return minijax.devices()[0]


def test_jit_made_again_keeps_the_globals_its_trace_read_as_jax_documents():
  # JAX's "common gotchas": a global read while tracing is a constant of the trace
  namespace = {"g": 0.0}
  exec("def f(x):\n  return x + g\n", namespace)
  f = namespace["f"]
  assert float(minijax.jit(f)(4.0)) == 4.0
  namespace["g"] = 10.0
  assert float(minijax.jit(f)(5.0)) == 5.0   # the cached trace kept g = 0
  np.testing.assert_array_equal(minijax.jit(f)(jnp.array([1.0, 2.0])), [11.0, 12.0])


def test_a_function_and_its_executables_go_when_it_does_whatever_jit_cached():
  from minijax.runtime.executable import Executable
  from minijax.staging import compiler

  def live_executables():
    return sum(1 for o in gc.get_objects() if type(o) is Executable)

  gc.collect()
  before = live_executables(), len(compiler._compiled)

  def f(x):
    return lax.sin(x) * 3.0

  for n in (1, 2, 3):
    minijax.jit(f)(np.ones(n, np.float32))
  g = minijax.jit(f, static_argnums=())
  g(np.ones(4, np.float32))
  assert len(compiler._compiled) == before[1] + 4
  dead = weakref.ref(f)
  del f, g
  # no cycle holds them: reference counting frees them without the collector
  assert dead() is None
  assert (live_executables(), len(compiler._compiled)) == before


def test_functions_that_cannot_be_keyed_weakly_still_jit():
  class Slotted:
    __slots__ = ()

    def __call__(self, x):
      return x + 1.0

  class Unhashable:
    __hash__ = None

    def __call__(self, x):
      return x + 2.0

  x = np.ones(2, np.float32)
  np.testing.assert_array_equal(minijax.jit(Slotted())(x), [2.0, 2.0])
  np.testing.assert_array_equal(minijax.jit(Unhashable())(x), [3.0, 3.0])
  np.testing.assert_array_equal(minijax.jit(len)([1, 2]), 2)


def test_static_arguments_are_served_by_the_fast_path_one_entry_per_value_and_type(caplog):
  traces = []

  def f(x, n, y):
    traces.append(n)
    return x * n + y

  g = minijax.jit(f, static_argnums=1)
  x, y = jnp.ones(2), jnp.full(2, 2.0)
  assert _count_compiles(caplog, lambda: [g(x, n, y) for n in (1, 2, 3) * 3]) == 3
  assert traces == [1, 2, 3]
  assert len(g._wrapped._fast) == 3  # every later call was served by an entry
  np.testing.assert_array_equal(g(x, 3, y), [5.0, 5.0])
  # 1 and 1.0 are equal and hash alike, but are two static values (as in JAX)
  assert g(x, 1.0, y).dtype == np.float32 and traces == [1, 2, 3, 1.0]
  assert type(traces[-1]) is float
  # negative positions, and calls where every argument is static
  h = minijax.jit(lambda a, k: jnp.full(2, float(k)) + a, static_argnums=(-1,))
  assert [float(h(x, k)[0]) for k in (1, 2, 1)] == [2.0, 3.0, 2.0]
  assert len(h._wrapped._fast) == 2
  c = minijax.jit(lambda k: jnp.arange(k), static_argnums=0)
  assert [len(c(k)) for k in (2, 3, 2)] == [2, 3, 2]
  with pytest.raises(ValueError, match="Static argument 1 must be hashable"):
    g(x, [1], y)


def test_cache_size_and_clear_cache_of_a_jitted_function_as_in_jax(caplog):
  f = minijax.jit(lambda x: (x ** 2).sum())
  assert f._cache_size() == 0
  x = jnp.arange(5.0)
  for _ in range(3):
    f(x)
  assert f._cache_size() == 1
  f.clear_cache()
  assert f._cache_size() == 0
  assert _count_compiles(caplog, lambda: f(x)) == 1


def test_jit_of_a_staticmethod_object_is_an_error_naming_it():
  with pytest.raises(TypeError, match="staticmethod arguments are not supported"):
    class A:
      @minijax.jit
      @staticmethod
      def g(x):
        return x + 2


def test_keyword_arguments_static_or_not_are_served_by_the_fast_path(caplog):
  traces = []

  def f(x, y, *, scale, mode="add"):
    traces.append((scale, mode))
    return x * scale + y if mode == "add" else x * scale - y

  g = minijax.jit(f, static_argnames=("scale", "mode"))
  x, y = jnp.ones(2), jnp.full(2, 3.0)
  calls = [lambda: g(x, y, scale=2.0), lambda: g(x, y=y, scale=2.0),
           lambda: g(x, y, mode="sub", scale=2.0), lambda: g(x, y, scale=2.0, mode="sub")]
  assert _count_compiles(caplog, lambda: [c() for c in calls * 3]) == 3
  assert [float(c()[0]) for c in calls] == [5.0, 5.0, -1.0, -1.0]
  assert sorted(set(traces)) == [(2.0, "add"), (2.0, "sub")] and len(traces) == 3
  # One entry per shape of call; the order of the keyword names does not matter.
  assert len(g._wrapped._fast) == 3
  # a dynamic keyword argument that is not an Array still works, on the slow path
  np.testing.assert_array_equal(g(x, y=np.full(2, 1.0, np.float32), scale=1.0), [2.0, 2.0])
  with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
    g(x, y, scale=[2.0])


def test_calls_that_alternate_keyword_names_each_get_their_own_entry():
  h = minijax.jit(lambda x, a=0.0, b=0.0: x + 10 * a + 100 * b)
  x = jnp.ones(2)
  got = [float(h(x, **{name: x})[0]) for name in ("a", "b", "a", "b", "a")]
  assert got == [11.0, 101.0, 11.0, 101.0, 11.0]
  assert float(h(x, b=x, a=x)[0]) == float(h(x, a=x, b=x)[0]) == 111.0
  assert len(h._wrapped._fast) == 3


def test_disable_jit_runs_jitted_functions_as_python_and_then_compiled_again():
  calls = []

  @minijax.jit
  def f(x):
    calls.append(type(x).__name__)
    return x * 2

  with minijax.disable_jit():
    assert float(f(2.0)) == 4.0 and float(f(2.0)) == 4.0
    assert float(minijax.grad(minijax.jit(lambda x: x * x))(3.0)) == 6.0
  assert calls == ["float", "float"]
  f(2.0), f(2.0)
  assert calls == ["float", "float", "DynamicJaxprTracer"]  # traced once, then cached
  minijax.config.update("jax_disable_jit", True)
  try:
    assert minijax.config.disable_jit and float(f(1.0)) == 2.0 and calls[-1] == "float"
  finally:
    minijax.config.update("jax_disable_jit", False)
  with pytest.raises(ValueError, match="disable_jit cannot be 'yes'"):
    minijax.config.update("disable_jit", "yes")


def _explained(caplog, fn) -> list[str]:
  caplog.clear()
  with caplog.at_level(logging.WARNING, logger="minijax"), minijax.explain_cache_misses(True):
    fn()
  return [r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]


def test_explain_cache_misses_says_why_a_function_is_traced_again(caplog):
  def f(x, y):
    return jnp.sin(x) + y
  jitted = minijax.jit(f)
  first = _explained(caplog, lambda: (jitted(np.float32(0), np.float32(1)),
                                      jitted(np.float32(0), np.float32(1))))
  assert len(first) == 1 and "never seen function" in first[0] and "f id=" in first[0]
  [types] = _explained(caplog, lambda: jitted(np.float32(0), np.int32(1)))
  assert "different input types:\n  * at y, now i32[] and before f32[]" in types
  [weak] = _explained(caplog, lambda: jitted(0.0, np.float32(1)))
  assert "at x, now f32[]{weak_type=True} and before f32[]{weak_type=False}" in weak
  [tree] = _explained(caplog, lambda: jitted(np.float32(0), y=np.float32(1)))
  assert "different input pytree" in tree

  def context():
    with minijax.numpy_rank_promotion("warn"), minijax.default_matmul_precision("high"):
      jitted(np.float32(0), np.float32(1))
  [changed] = _explained(caplog, context)
  assert "Tracing context doesn't match" in changed
  assert "numpy_rank_promotion differs: now warn and before allow" in changed
  assert _explained(caplog, lambda: jnp.sin(jnp.arange(3.0))) == []  # minijax's own
  assert _explained(caplog, lambda: jitted(np.float32(0), np.float32(1))) == []  # a hit


def test_numpy_rank_and_dtype_promotion_flags():
  x, y = jnp.ones(3), jnp.ones((2, 3))
  with minijax.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
      x + y
    assert (x + 1.0).shape == (3,)  # rank 0 operands broadcast freely
  with minijax.numpy_rank_promotion("warn"), pytest.warns(UserWarning, match="rank promotion"):
    x + y
  assert (x + y).shape == (2, 3)
  with minijax.numpy_dtype_promotion("strict"):
    for mixed in [lambda: jnp.ones(2, jnp.int32) + jnp.ones(2),
                  lambda: jnp.ones(2, jnp.int32) * 2.0, lambda: jnp.ones(2, bool) + 1]:
      with pytest.raises(minijax.dtypes.TypePromotionError, match="jax_numpy_dtype_promotion"):
        mixed()
    # Python scalars of a kind the array holds still promote (JAX's strict lattice)
    assert (jnp.ones(2) + 1).dtype == np.float32 and (jnp.ones(2, jnp.int32) + 1).dtype == np.int32
    assert (jnp.ones(2, np.complex64) * 1.5).dtype == np.complex64
    # minijax's own libraries promote as they need, as JAX's are written not to need it
    np.testing.assert_allclose(minijax.scipy.linalg.expm(jnp.zeros((2, 2))), np.eye(2))
  assert (jnp.ones(2, jnp.int32) + jnp.ones(2)).dtype == np.float32


def test_arguments_donated_by_keyword_are_the_ones_named():
  for options in ({"donate_argnames": ("z", "y")}, {"donate_argnums": (0, 1)}):
    f = minijax.jit(lambda z, y, x: minijax.tree_util.tree_map(lambda v: v * 2, (z, y, x)),
                    **options)
    _, by_name = f.lower(z={"c": 3.0}, y={"b": 2.0}, x={"a": 1.0}).args_info
    assert by_name["z"]["c"].donated and by_name["y"]["b"].donated
    assert not by_name["x"]["a"].donated  # (keyword leaves flatten in sorted key order)
    z, y, x = (minijax.device_put(np.ones(2, np.float32)) for _ in range(3))
    f(z=z, y=y, x=x)
    assert z.is_deleted() and y.is_deleted() and not x.is_deleted()


def test_log_compiles_reports_tracing_and_cache_size_counts_traces(caplog):
  @minijax.jit
  def add(x):
    return x * 2
  assert add._cache_size() == 0
  with caplog.at_level(logging.WARNING, logger="minijax"):
    minijax.config.update("jax_log_compiles", True)
    try:
      add(np.arange(8))
      add(np.arange(8))
      minijax.clear_caches()
      add(np.arange(8))
    finally:
      minijax.config.update("jax_log_compiles", False)
  traced = [r for r in caplog.records if "Finished tracing add for jit" in r.getMessage()]
  assert len(traced) == 2 and add._cache_size() == 1
  add(np.arange(3.0))
  assert add._cache_size() == 2


def test_results_are_committed_when_an_argument_is_on_every_path():
  """As in JAX: jnp.array and device_put without a device make uncommitted Arrays,
  device_put to a device committed ones, and a computation's results are committed when
  one of its arguments is; the fast path keeps the two apart (one entry each)."""
  x = jnp.arange(3.)
  c = minijax.device_put(x, minijax.devices()[0])
  assert not x.committed and c.committed and not minijax.device_put(np.ones(2)).committed
  one = minijax.jit(lambda a: a * 2)
  two = minijax.jit(lambda a, b: a + b)
  scalar = minijax.jit(lambda a, s: a * s)
  tree = minijax.jit(lambda d: d["a"] + d["b"])
  static = minijax.jit(lambda a, n: a * n, static_argnums=1)
  for _ in range(3):  # first calls, then the fast path
    assert [one(x).committed, one(c).committed] == [False, True]
    assert [two(x, x).committed, two(x, c).committed, two(c, x).committed] == [False, True, True]
    assert [scalar(x, 2.0).committed, scalar(c, 2.0).committed] == [False, True]
    assert [tree({"a": x, "b": x}).committed, tree({"a": x, "b": c}).committed] == [False, True]
    assert [static(x, 2).committed, static(c, 2).committed] == [False, True]
    assert [static(a=x, n=2).committed, static(a=c, n=2).committed] == [False, True]
    assert [(x + 1).committed, (c + 1).committed, (x + c).committed] == [False, True, True]
  assert len(one._wrapped._fast) == 2 and len(two._wrapped._fast) == 2
  assert minijax.jit(lambda a: a, device=0)(x).committed
