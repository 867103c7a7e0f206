"""JAX's callback API: `debug.callback`, `debug.print`, `experimental.io_callback` and
`pure_callback`, under jit, vmap, jvp and grad, with JAX 0.10.2's semantics (the literal
facts below were recorded from jax 0.10.2).  Every test runs under both mechanisms (minijax's
native FFI handlers and jaxlib's Python callback); host calls are waited for with
`effects_barrier`, never with `sleep`."""
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.callbacks import DebugEffect, IOEffect, OrderedDebugEffect, OrderedIOEffect
from minijax.experimental import io_callback
from minijax.interpreters import partial_eval as pe
from tests.conftest import using_tap_mechanism

S = minijax.ShapeDtypeStruct
F32 = S((), np.float32)


@pytest.fixture(autouse=True, params=["native", "callback"])
def mechanism(request):
  yield from using_tap_mechanism(request.param, minijax.effects_barrier)


class Calls:
  """A host function that records its arguments (and returns `ret(*args)` if given)."""

  def __init__(self, ret=None):
    self.args, self.kwargs, self.ret = [], [], ret

  def __call__(self, *args, **kwargs):
    self.args.append(args)
    self.kwargs.append(kwargs)
    return self.ret(*args) if self.ret is not None else None

  def values(self):
    return [tuple(np.asarray(a).tolist() for a in args) for args in self.args]


# ----------------------------------------------------------------------------- debug.callback

def test_debug_callback_passes_non_array_leaves_through_and_makes_numbers_arrays():
  calls = Calls()

  def f(x):
    minijax.debug.callback(calls, x, "step", 3, 4.0, None, k=None, j="s", y=x * 2)
    return x

  minijax.jit(f)(np.float32(1.5))
  minijax.effects_barrier()
  (args,), (kwargs,) = calls.args, calls.kwargs
  # numbers arrive as Arrays, as JAX hands its callbacks jax.Arrays
  assert [isinstance(a, minijax.Array) for a in args] == [True, False, True, True, False]
  assert args[1] == "step" and args[4] is None
  assert args[0].tolist() == 1.5 and args[1] == "step" and args[2].tolist() == 3
  assert args[2].dtype == np.int32 and args[3].dtype == np.float32
  assert kwargs["k"] is None and kwargs["j"] == "s" and kwargs["y"].tolist() == 3.0


def test_debug_callback_outside_jit_runs_at_once_and_raises_its_exception():
  calls = Calls()
  minijax.debug.callback(calls, np.float32(2.0), "now")
  assert calls.values() == [(2.0, "now")]

  def bad(x):
    raise KeyError("eager")
  with pytest.raises(KeyError, match="eager"):
    minijax.debug.callback(bad, 1.0)


def test_the_two_call_forms_take_the_options_first():
  calls = Calls()
  minijax.jit(lambda x: minijax.debug.callback(ordered=True)(calls, x))(np.float32(1.0))
  minijax.effects_barrier()
  assert calls.values() == [(1.0,)]
  with pytest.raises(TypeError, match="unexpected arguments in the two-call form"):
    minijax.debug.callback(ordered=True, x=1)
  with pytest.raises(TypeError, match="unexpected arguments in the two-call form"):
    minijax.debug.print(ordered=True, x=1)
  with pytest.raises(TypeError, match="must be callable"):
    minijax.debug.callback(3, 1.0)


@pytest.mark.parametrize("ordered", [False, True])
def test_under_vmap_a_debug_callback_is_called_once_per_element_in_order(ordered):
  calls = Calls()

  def f(x, y):
    minijax.debug.callback(calls, x, y, ordered=ordered)
    return x + y

  xs = np.arange(4, dtype=np.float32)
  out = minijax.jit(minijax.vmap(f, in_axes=(0, None)))(xs, np.float32(10))
  minijax.effects_barrier()
  assert out.tolist() == [10, 11, 12, 13]
  assert calls.values() == [(0.0, 10.0), (1.0, 10.0), (2.0, 10.0), (3.0, 10.0)]
  calls.args.clear()
  minijax.vmap(minijax.vmap(lambda x: minijax.debug.callback(calls, x)))(
      np.arange(6, dtype=np.float32).reshape(2, 3))
  minijax.effects_barrier()
  assert sorted(v for (v,) in calls.values()) == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("transform", ["grad", "jit_grad", "jvp", "value_and_grad"])
def test_under_jvp_and_grad_the_primal_is_delivered_once_and_never_a_tangent(transform):
  calls = Calls()

  def f(x):
    minijax.debug.callback(calls, x)
    minijax.debug.print("x={}", x)
    return x * x

  x = np.float32(3.0)
  run = {"grad": lambda: minijax.grad(f)(x),
         "jit_grad": lambda: minijax.jit(minijax.grad(f))(x),
         "jvp": lambda: minijax.jvp(f, (x,), (np.float32(1.0),))[1],
         "value_and_grad": lambda: minijax.value_and_grad(f)(x)[1]}[transform]
  assert float(run()) == 6.0
  minijax.effects_barrier()
  assert calls.values() == [(3.0,)]


def test_debug_print_formats_like_str_format_with_0d_arrays_as_python_scalars(capsys):
  def f(x, v):
    minijax.debug.print("{} {y:.2f} {b} {v}", x, y=x, b=x > 0, v=v, ordered=True)
    minijax.debug.print("no placeholders", ordered=True)
    minijax.debug.print("joined", x, skip_format_check=True, ordered=True)
    return x

  with np.printoptions(precision=2):
    minijax.jit(f)(np.float32(1 / 3), np.array([1 / 3, 2 / 3], np.float32))
  minijax.effects_barrier()
  # jax 0.10.2: a 0-d float32 1/3 prints as the Python float 0.3333333432674408
  assert capsys.readouterr().out.splitlines() == [
      "0.3333333432674408 0.33 True [0.33 0.67]", "no placeholders",
      "joined 0.3333333432674408"]


def test_debug_print_checks_its_format_when_traced():
  with pytest.raises(ValueError, match=r"Unused positional arguments to `jax.debug.print`: \[1\]"):
    minijax.debug.print("x", 1)
  with pytest.raises(ValueError, match="Unused keyword arguments.*f-string"):
    minijax.debug.print("{x}", x=1, y=2)
  with pytest.raises(IndexError):
    minijax.debug.print("{} {}", 1)


@pytest.mark.usefixtures("immediate_taps")
def test_ordered_and_unordered_callbacks_have_separate_effects_and_tokens(
    runtime_token_lowering):
  def f(x):
    minijax.debug.callback(print, x)
    minijax.debug.callback(print, x, ordered=True)
    io_callback(print, None, x)
    io_callback(print, None, x, ordered=True)
    return minijax.pure_callback(np.sin, F32, x)

  closed = minijax.make_jaxpr(f)(np.float32(1.0))
  assert closed.effects == {DebugEffect(), OrderedDebugEffect(), IOEffect(), OrderedIOEffect()}
  text = minijax.jit(f).lower(np.float32(1.0)).as_text()
  main = next(line for line in text.splitlines() if "func.func public @main" in line)
  assert main.count("!mhlo.token") == 4  # two ordered effects: two tokens in, two out


# ----------------------------------------------------------------------------- pure_callback

def test_pure_callback_returns_a_pytree_of_any_dtype_from_numpy_inputs():
  seen = []

  def host(x, y, *, scale):
    seen.append((isinstance(x, minijax.Array), np.asarray(x).flags.writeable, y.dtype))
    return {"a": np.sin(x) * scale, "b": (y.astype(np.int8), np.array([True, False]))}

  spec = {"a": S((3,), np.float32), "b": (np.zeros((), np.int8), S((2,), np.bool_))}
  x = np.array([0.0, 1.0, 2.0], np.float32)
  for fn in (minijax.jit(lambda x, y: minijax.pure_callback(host, spec, x, y, scale=2.0)),
             lambda x, y: minijax.pure_callback(host, spec, x, y, scale=2.0)):
    out = fn(x, np.uint8(7))
    np.testing.assert_allclose(out["a"], np.sin(x) * 2, rtol=1e-6)
    assert out["b"][0].dtype == np.int8 and out["b"][0].tolist() == 7
    assert out["b"][1].tolist() == [True, False]
  # Arrays over read-only host copies, in compiled code and outside it (as in JAX)
  assert seen == [(True, False, np.uint8)] * 2


@pytest.mark.parametrize("spec, ret, ok", [
    # (spec, what the function returns, the result or the error): jax 0.10.2's behaviour
    (F32, np.float64(2.5), 2.5),
    (F32, 2.5, 2.5),
    (S((2,), np.int32), np.arange(2, dtype=np.int64), [0, 1]),
    (S((2, 3), np.float32), np.zeros((3, 2), np.float32),
     "Incorrect output shape for return value #0: Expected: (2, 3), Actual: (3, 2)"),
    (F32, 3, "Incorrect output dtype for return value #0: Expected: float32, Actual: int32"),
    (S((2,), np.float16), np.zeros(2, np.float32),
     "Incorrect output dtype for return value #0: Expected: float16, Actual: float32"),
    (S((2,), np.float32), [1.0, 2.0],
     "Mismatched number of outputs from callback. Expected: 1, Actual: 2"),
])
def test_results_are_converted_to_the_declared_types_or_raise_jax_errors(spec, ret, ok):
  f = minijax.jit(lambda x: minijax.pure_callback(lambda _: ret, spec, x))
  if isinstance(ok, str):
    with pytest.raises(minijax.errors.JaxRuntimeError) as info:
      f(np.float32(0))
    assert str(info.value).startswith("INTERNAL: CpuCallback error calling callback: ")
    assert str(info.value).endswith(ok)
    with pytest.raises(RuntimeError):  # and outside jit
      minijax.pure_callback(lambda _: ret, spec, np.float32(0))
  else:
    assert f(np.float32(0)).tolist() == ok


def test_a_64_bit_result_type_needs_x64(x64_off):
  with pytest.raises(ValueError, match="cannot specify 64-bit types when `jax_enable_x64` is "
                                       "disabled"):
    minijax.pure_callback(lambda x: x, S((), np.float64), 1.0)


def test_with_x64_a_callback_returns_64_bit_values(x64):
  f = minijax.jit(lambda x: minijax.pure_callback(lambda v: v * 2, S((), np.float64), x))
  out = f(np.float64(1 / 3))
  assert out.dtype == np.float64 and out.tolist() == 2 / 3


def test_an_unused_pure_callback_is_dropped_and_an_unused_io_callback_is_not():
  pure, io = Calls(lambda x: x), Calls(lambda x: x)

  def f(x):
    minijax.pure_callback(pure, F32, x)
    io_callback(io, F32, x)
    return x + 1

  assert minijax.jit(f)(np.float32(1)).tolist() == 2.0
  assert (len(pure.args), len(io.args)) == (0, 1)
  closed = minijax.make_jaxpr(f)(np.float32(1))
  kept, _ = pe.dce_jaxpr(closed.jaxpr, [True])
  assert [e.primitive.name for e in kept.eqns] == ["io_callback", "add"]


@pytest.mark.parametrize("method, calls, shapes", [
    # jax 0.10.2: vmap(f, in_axes=(0, None)) over 4 elements, f(x, y) a pure_callback
    ("sequential", 4, [((), ())] * 4),
    ("sequential_unrolled", 4, [((), ())] * 4),
    ("expand_dims", 1, [((4,), (1,))]),
    ("broadcast_all", 1, [((4,), (4,))]),
    ("legacy_vectorized", 1, [((4,), ())]),
])
def test_each_vmap_method_makes_jaxs_calls_with_jaxs_shapes(method, calls, shapes):
  seen = []

  def host(x, y):
    seen.append((x.shape, y.shape))
    return x + y

  f = minijax.vmap(lambda x, y: minijax.pure_callback(host, F32, x, y, vmap_method=method),
                   in_axes=(0, None))
  out = minijax.jit(f)(np.arange(4, dtype=np.float32), np.float32(10))
  assert out.tolist() == [10, 11, 12, 13]
  assert len(seen) == calls and seen == shapes


def test_nested_vmaps_with_expand_dims_make_one_call():
  seen = []

  def host(x, y):
    seen.append((x.shape, y.shape))
    return x + y

  f = lambda x, y: minijax.pure_callback(host, F32, x, y, vmap_method="expand_dims")
  out = minijax.vmap(minijax.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(
      np.arange(4, dtype=np.float32), np.arange(3, dtype=np.float32))
  assert seen == [((1, 4), (3, 1))]  # jax 0.10.2
  np.testing.assert_array_equal(out, np.arange(3)[:, None] + np.arange(4)[None, :])


def test_vmap_needs_a_vmap_method_and_rejects_unknown_ones():
  with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
    minijax.vmap(lambda x: minijax.pure_callback(np.sin, F32, x))(np.zeros(2, np.float32))
  with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
    minijax.pure_callback(np.sin, F32, 1.0, vmap_method="parallel")


@pytest.mark.parametrize("transform", ["jvp", "grad", "linear_transpose"])
def test_pure_callbacks_reject_jvp_and_transpose_with_jaxs_errors(transform):
  f = lambda x: minijax.pure_callback(np.sin, F32, x)
  one = np.float32(1.0)
  run = {"jvp": lambda: minijax.jvp(f, (one,), (one,)),
         "grad": lambda: minijax.grad(f)(one),
         "linear_transpose": lambda: minijax.linear_transpose(f, one)(one)}[transform]
  what = "transpose" if transform == "linear_transpose" else "JVP"
  with pytest.raises(ValueError, match=f"Pure callbacks do not support {what}. Please use "
                                       "`minijax.custom_"):
    run()


def _host_sin(x):
  return np.sin(x).astype(x.dtype)


def _host_cos(x):
  return np.cos(x).astype(x.dtype)


def _callback_sin(x):
  return minijax.pure_callback(_host_sin, S(x.shape, x.dtype), x, vmap_method="expand_dims")


def test_a_pure_callback_wrapped_in_custom_jvp_has_gradients_and_batches():
  @minijax.custom_jvp
  def sin(x):
    return _callback_sin(x)

  @sin.defjvp
  def sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return sin(x), minijax.pure_callback(_host_cos, S(x.shape, x.dtype), x,
                                         vmap_method="expand_dims") * t

  xs = np.linspace(0, 2, 5, dtype=np.float32)
  np.testing.assert_allclose(minijax.jit(minijax.vmap(minijax.grad(sin)))(xs), np.cos(xs),
                             rtol=1e-6)
  eps = np.float32(1e-3)
  fd = (_host_sin(xs + eps) - _host_sin(xs - eps)) / (2 * eps)
  np.testing.assert_allclose(minijax.vmap(minijax.grad(sin))(xs), fd, rtol=2e-3, atol=1e-3)


def test_a_pure_callback_wrapped_in_custom_vjp_has_gradients():
  @minijax.custom_vjp
  def sin(x):
    return _callback_sin(x)

  sin.defvjp(lambda x: (sin(x), x),
             lambda x, g: (minijax.pure_callback(_host_cos, S(x.shape, x.dtype), x) * g,))
  x = np.float32(0.7)
  assert float(minijax.jit(minijax.grad(sin))(x)) == pytest.approx(np.cos(0.7), rel=1e-6)
  assert float(minijax.grad(lambda v: sin(v) * 2)(x)) == pytest.approx(2 * np.cos(0.7), rel=1e-6)


# ----------------------------------------------------------------------------- io_callback

@pytest.mark.parametrize("transform, error", [
    ("jvp", "IO callbacks do not support JVP."),
    ("grad", "IO callbacks do not support JVP."),
    ("vmap_ordered", "Cannot `vmap` ordered IO callback."),
])
def test_io_callback_transformations_raise_jaxs_errors(transform, error):
  f = lambda x, ordered=False: io_callback(_host_sin, F32, x, ordered=ordered)
  one = np.float32(1.0)
  run = {"jvp": lambda: minijax.jvp(f, (one,), (one,)),
         "grad": lambda: minijax.grad(f)(one),
         "vmap_ordered": lambda: minijax.vmap(lambda x: f(x, True))(np.zeros(2, np.float32))
         }[transform]
  with pytest.raises(ValueError, match=error.replace(".", r"\.")):
    run()


def test_an_unordered_io_callback_maps_element_by_element_under_vmap():
  calls = Calls(lambda x: x * 2)
  out = minijax.jit(minijax.vmap(lambda x: io_callback(calls, F32, x)))(
      np.arange(3, dtype=np.float32))
  assert out.tolist() == [0, 2, 4] and calls.values() == [(0.0,), (1.0,), (2.0,)]


def test_io_callback_results_flow_back_and_eager_calls_run_directly():
  state = {"n": 0}

  def counter(step):
    state["n"] += int(step)
    return np.int32(state["n"])

  f = minijax.jit(lambda s: io_callback(counter, S((), np.int32), s, ordered=True) * 10)
  assert [int(f(np.int32(2))) for _ in range(3)] == [20, 40, 60]
  assert int(io_callback(counter, S((), np.int32), 1)) == 7


@pytest.mark.parametrize("kind", ["io", "pure"])
def test_a_callback_in_a_while_loop_condition_decides_when_the_loop_ends(kind):
  state = {"asked": 0}

  def keep_going(i):
    state["asked"] += 1
    return np.bool_(i * i < 30)

  callback = io_callback if kind == "io" else minijax.pure_callback
  f = minijax.jit(lambda i: lax.while_loop(
      lambda c: callback(keep_going, S((), np.bool_), c), lambda c: c + 1, i))
  assert int(f(np.int32(0))) == 6
  assert state["asked"] == 7


def test_debug_print_of_a_typed_key_array_prints_instead_of_crashing(capsys):
  """Key arrays count as Arrays (as in JAX); formatting a 0-d one must not ask it for
  `.item()`, which key arrays do not have (JAX's test_debug_print_extended_dtype)."""
  from minijax import random
  minijax.jit(lambda k: minijax.debug.print("{}", k))(random.key(0))
  minijax.effects_barrier()
  assert "0 0" in capsys.readouterr().out
