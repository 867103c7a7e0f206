"""host_callback's two semantics on the same programs, under both tap mechanisms: `seed`
(the default: tangent and cotangent taps, one element per line) and `jax` (JAX 0.4.34's:
primals only under jvp/grad, one-line containers, TypeError for id_tap's extra keyword
arguments); and JAX 0.4.34's API in both (tap_with_device, device_index, callback_flavor,
CallbackException).  Tests wait for taps with `barrier_wait`, never with `sleep`."""
import io
import warnings

import numpy as np
import pytest

import minijax
from minijax.experimental import host_callback as hcb
from tests.conftest import using_tap_mechanism


@pytest.fixture(params=["native", "callback"])
def mechanism(request):
  yield from using_tap_mechanism(request.param, hcb.barrier_wait, hcb.CallbackException)


@pytest.fixture(params=["seed", "jax"])
def semantics(request, mechanism):
  previous = minijax.config.host_callback_semantics
  minijax.config.update("host_callback_semantics", request.param)
  yield request.param
  minijax.config.update("host_callback_semantics", previous)


STREAM = io.StringIO()


def printed(thunk) -> str:
  STREAM.seek(0)
  STREAM.truncate()
  thunk()
  hcb.barrier_wait()
  return STREAM.getvalue()


def power3(x):
  y = x * x
  _, y = hcb.id_print((x, y), what="x,x^2", output_stream=STREAM)
  return y * x


def pair(x, yint):
  x, yint = hcb.id_print((x, yint), what="pair", output_stream=STREAM)
  return x * yint


def containers(x):
  hcb.id_print({"b": [x, 2 * x], "a": (x, np.int32(3))}, output_stream=STREAM)
  return x


_FLOAT0 = np.zeros((), minijax.dtypes.float0)
PROGRAMS = {
    "jvp": lambda: minijax.jvp(power3, (3.0,), (0.1,)),
    "grad": lambda: minijax.grad(power3)(3.0),
    "grad_of_grad": lambda: minijax.grad(minijax.grad(power3))(3.0),
    "vmap": lambda: minijax.vmap(power3)(np.array([2.0, 3.0], np.float32)),
    "jit_of_grad": lambda: minijax.jit(minijax.grad(power3))(3.0),
    "tuples_and_dicts": lambda: minijax.jit(containers)(np.float32(1.5)),
    "jvp_with_an_int": lambda: minijax.jvp(pair, (np.float32(2), np.int32(3)),
                                           (np.float32(0.2), _FLOAT0)),
    "grad_with_an_int": lambda: minijax.grad(pair)(np.float32(5), np.int32(2)),
    "jit_of_grad_with_an_int": lambda: minijax.jit(minijax.grad(pair))(np.float32(5),
                                                                       np.int32(2)),
}

_SEED_GRAD = ("what: x,x^2\n[ 3.\n  9. ]\n"
              "transforms: ['jvp', 'transpose'] what: x,x^2\n[ 0.\n  3. ]\n")
EXPECTED = {
    "seed": {
        "jvp": "what: x,x^2\n[ 3.\n  9. ]\ntransforms: ['jvp'] what: x,x^2\n[ 0.1\n  0.6 ]\n",
        "grad": _SEED_GRAD,
        "grad_of_grad": _SEED_GRAD + (
            "transforms: ['jvp', 'transpose', 'jvp', 'transpose'] what: x,x^2\n[ 1.\n  6. ]\n"
            "transforms: ['jvp', 'transpose'] what: x,x^2\n[ 0.\n  1. ]\n"),
        "vmap": "transforms: [('batch', {'batch_dims': (0, 0)})] what: x,x^2\n"
                "[ [2. 3.]\n  [4. 9.] ]\n",
        "jit_of_grad": _SEED_GRAD,
        "tuples_and_dicts": "{ a=[ 1.5\n      3 ]\n  b=[ 1.5\n      3. ] }\n",
        # float0 tangents and cotangents of integers show as False, as in JAX 0.4
        "jvp_with_an_int": "what: pair\n[ 2.\n  3 ]\n"
                           "transforms: ['jvp'] what: pair\n[ 0.2\n  False ]\n",
        "grad_with_an_int": "what: pair\n[ 5.\n  2 ]\n"
                            "transforms: ['jvp', 'transpose'] what: pair\n[ 2.\n  False ]\n",
        "jit_of_grad_with_an_int": "what: pair\n[ 5.\n  2 ]\n"
                                   "transforms: ['jvp', 'transpose'] what: pair\n"
                                   "[ 2.\n  False ]\n",
    },
    "jax": {  # JAX 0.4.34 handed taps jax.Arrays, printed with str(): a 0-d float as 3.0
        "jvp": "what: x,x^2\n( 3.0 9.0 )\n",
        "grad": "what: x,x^2\n( 3.0 9.0 )\n",
        "grad_of_grad": "what: x,x^2\n( 3.0 9.0 )\n",
        "vmap": "what: x,x^2\n( 2.0 4.0 )\nwhat: x,x^2\n( 3.0 9.0 )\n",  # once per element
        "jit_of_grad": "what: x,x^2\n( 3.0 9.0 )\n",
        "tuples_and_dicts": "{ a=( 1.5 3 ) b=[ 1.5 3.0 ] }\n",
        "jvp_with_an_int": "what: pair\n( 2.0 3 )\n",
        "grad_with_an_int": "what: pair\n( 5.0 2 )\n",
        "jit_of_grad_with_an_int": "what: pair\n( 5.0 2 )\n",
    },
}
RESULTS = {"jvp": (27.0, 2.7), "grad": 27.0, "grad_of_grad": 18.0, "jit_of_grad": 27.0,
           "jvp_with_an_int": (6.0, 0.6), "grad_with_an_int": 2.0,
           "jit_of_grad_with_an_int": 2.0}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_same_program_taps_as_each_semantics_says(semantics, program):
  results = []
  assert printed(lambda: results.append(PROGRAMS[program]())) == EXPECTED[semantics][program]
  if program in RESULTS:  # the semantics change what is tapped, never what is computed
    np.testing.assert_allclose(np.array(results[0], np.float32), RESULTS[program], rtol=1e-6)


def test_jit_caches_follow_the_semantics(mechanism):
  f = minijax.jit(minijax.grad(power3))
  for semantics in ["seed", "jax", "seed"]:
    minijax.config.update("host_callback_semantics", semantics)
    try:
      assert printed(lambda: f(3.0)) == EXPECTED[semantics]["jit_of_grad"]
    finally:
      minijax.config.update("host_callback_semantics", "seed")


def test_long_tuples_break_one_element_per_line_under_the_jax_semantics(semantics):
  text = printed(lambda: hcb.id_print((np.arange(12.0), np.arange(14.0)), output_stream=STREAM))
  opener = "( " if semantics == "jax" else "[ "
  assert text.splitlines()[0].startswith(opener + "[ 0.  1.")
  assert text.splitlines()[1].startswith("  [ 0.  1.") and len(text.splitlines()) == 2


def test_extra_keyword_arguments_of_id_tap(semantics):
  got = []
  def tap(arg, transforms, **kwargs):
    got.append(kwargs)
  if semantics == "seed":
    with pytest.warns(FutureWarning, match="functools.partial"):
      hcb.id_tap(tap, np.float32(1.0), what="x")
    hcb.barrier_wait()
    assert got == [{"what": "x"}]
  else:
    with pytest.raises(TypeError, match=r"\*\*kwargs in ``id_tap`` has been removed"):
      hcb.id_tap(tap, np.float32(1.0), what="x")
  # id_print's keyword arguments are printed under both
  assert printed(lambda: hcb.id_print(np.float32(1.0), what="x", output_stream=STREAM)) == (
      "what: x\n1.\n" if semantics == "seed" else "what: x\n1.0\n")


def test_tap_with_device_passes_the_device(semantics):
  got = []
  def tap(arg, transforms, *, device=None):
    got.append(device)
  f = minijax.jit(lambda x: hcb.id_tap(tap, x, tap_with_device=True))
  g = minijax.jit(lambda x: hcb.id_tap(tap, x))
  f(np.float32(1.0))
  g(np.float32(1.0))
  hcb.barrier_wait()
  # Without tap_with_device, the seed semantics still passes it to a function that takes it
  assert got == [minijax.devices()[0], minijax.devices()[0] if semantics == "seed" else None]
  text = printed(lambda: hcb.id_print(np.float32(2.0), tap_with_device=True, what="w",
                                      output_stream=STREAM))
  value = "2." if semantics == "seed" else "2.0"
  assert text == f"device: {minijax.devices()[0]} what: w\n{value}\n"


def test_device_index_and_callback_flavor(semantics):
  with pytest.raises(ValueError, match="device_index=5 is out of range"):
    hcb.id_tap(lambda a, t: None, np.float32(1.0), device_index=5)
  with pytest.raises(TypeError, match="device_index must be an int"):
    hcb.id_tap(lambda a, t: None, np.float32(1.0), device_index="0")
  with pytest.raises(TypeError, match="callback_flavor must be a CallbackFlavor"):
    hcb.id_tap(lambda a, t: None, np.float32(1.0), callback_flavor="debug")

  def effects(**kw):
    jaxpr = minijax.make_jaxpr(lambda x: hcb.id_tap(lambda a, t: None, x, **kw))(1.0)
    return sorted(type(e).__name__ for e in jaxpr.effects)
  assert effects() == effects(callback_flavor=hcb.CallbackFlavor.IO_CALLBACK) == ["OrderedTap"]
  assert effects(callback_flavor=hcb.CallbackFlavor.DEBUG) == ["UnorderedTap"]
  assert effects(callback_flavor=hcb.CallbackFlavor.PURE) == ["UnorderedTap"]
  assert effects(callback_flavor=hcb.CallbackFlavor.PURE, ordered=True) == ["OrderedTap"]
  got = []
  minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(float(a)), x, device_index=0,
                                   callback_flavor=hcb.CallbackFlavor.DEBUG))(np.float32(4.0))
  hcb.barrier_wait(logging_name="after the debug tap")
  assert got == [4.0]


def test_callback_exception_carries_the_last_failure(semantics):
  assert hcb.CallbackException is hcb.TapFunctionException
  def boom(arg, transforms):
    raise ValueError(f"bad tap {float(arg)}")
  f = minijax.jit(lambda x: hcb.id_tap(boom, x))
  f(np.float32(1.0))
  f(np.float32(2.0))
  with pytest.raises(hcb.CallbackException) as info:
    hcb.barrier_wait("failing taps")
  text = str(info.value)
  if semantics == "jax":  # JAX 0.4.34's words
    assert text.startswith("There were exceptions during callback processing. Last one was: ")
    assert "ValueError: bad tap 2.0" in text and "in boom" in text
  else:
    assert text.startswith("2 exception(s) were raised in tap functions")
    assert "The last one, ValueError: bad tap 2.0" in text and "in boom" in text
  assert isinstance(info.value.__cause__, ValueError) and str(info.value.__cause__) == "bad tap 2.0"
  hcb.barrier_wait()  # reported once


def test_the_print_tangents_example_taps_tangents_under_both(semantics):
  @minijax.custom_jvp
  def print_tangents(arg):
    return None

  @print_tangents.defjvp
  def print_tangents_jvp(primals, tangents):
    hcb.id_print(tangents[0], what="tangents", output_stream=STREAM)
    return primals, tangents

  def f(x):
    y = x * x
    print_tangents((x, y))
    return y * x
  text = printed(lambda: minijax.jvp(f, (3.0,), (0.1,)))
  lines = text.splitlines()
  assert lines[0] == "what: tangents"
  assert lines[1:] == (["( 0.1 0.6 )"] if semantics == "jax" else ["[ 0.1", "  0.6 ]"])


def test_the_semantics_flag_is_checked():
  with pytest.raises(ValueError, match="'seed', 'jax'"):
    minijax.config.update("host_callback_semantics", "legacy")
  assert minijax.config.host_callback_semantics == "seed"  # the default
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    minijax.jit(lambda x: hcb.id_tap(lambda a, t: None, x))(np.float32(0.0))
    hcb.barrier_wait()


def test_call_runs_on_jaxs_callbacks(semantics):
  calls = []

  def host(arg):
    calls.append(isinstance(arg["x"], minijax.Array))  # Arrays, as JAX 0.10.2's callbacks
    return np.asarray(arg["x"]) * 2 + arg["y"]

  f = minijax.jit(lambda x: hcb.call(host, dict(x=x, y=1.0), result_shape=x))
  np.testing.assert_array_equal(f(np.arange(3.0, dtype=np.float32)), [1.0, 3.0, 5.0])
  jaxpr = str(minijax.make_jaxpr(f)(np.ones(3, np.float32)))
  assert "io_callback" in jaxpr and "ordered=True" in jaxpr
  def pure(x):
    return hcb.call(host, dict(x=x, y=0.5), result_shape=minijax.ShapeDtypeStruct(
        x.shape, x.dtype), callback_flavor=hcb.CallbackFlavor.PURE)
  assert "pure_callback" in str(minijax.make_jaxpr(pure)(np.ones(2, np.float32)))
  np.testing.assert_array_equal(minijax.jit(pure)(np.ones(2, np.float32)), [2.5, 2.5])
  np.testing.assert_array_equal(minijax.vmap(pure)(np.ones((3, 2), np.float32)),
                                np.full((3, 2), 2.5))  # once per batch element
  # A number gives the shape and (canonical) dtype; None means no result.
  assert hcb.call(lambda a: np.float32(7), 0, result_shape=1.0) == 7.0
  assert hcb.call(lambda a: calls.append("none"), 0) is None
  assert hcb.call(lambda a: calls.append("debug"), 0,
                  callback_flavor=hcb.CallbackFlavor.DEBUG) is None
  minijax.effects_barrier()
  assert calls[0] is True and calls[-2:] == ["none", "debug"]


def test_call_refuses_what_jaxs_refuses(semantics):
  with pytest.raises(ValueError, match="result_shape should be a pytree of values"):
    hcb.call(lambda a: a, 0, result_shape=object())
  with pytest.raises(NotImplementedError, match="DEBUG"):
    hcb.call(lambda a: a, 0, result_shape=1.0, callback_flavor=hcb.CallbackFlavor.DEBUG)
  with pytest.raises(NotImplementedError, match="call_with_device"):
    hcb.call(lambda a: a, 0, result_shape=1.0, call_with_device=True)
  with pytest.raises(TypeError, match="must be callable"):
    hcb.call(3, 0)
  assert hcb._HOST_CALLBACK_LEGACY.value is False and hcb._use_outfeed("cpu") is False


def test_jax_semantics_vmap_taps_each_element_in_order(mechanism):
  previous = minijax.config.host_callback_semantics
  minijax.config.update("host_callback_semantics", "jax")
  try:
    flavor = hcb.CallbackFlavor.DEBUG
    def tap_sum(x, y):
      return hcb.id_print(x + y, output_stream=STREAM, callback_flavor=flavor)
    inner = lambda xv, y: minijax.vmap(tap_sum, in_axes=(0, None))(xv, y)  # noqa: E731
    outer = minijax.vmap(inner, in_axes=(None, 0))
    out = []
    text = printed(lambda: out.append(outer(np.arange(3, dtype=np.int32),
                                            np.arange(2, dtype=np.int32))))
    assert text.split() == ["0", "1", "1", "2", "2", "3"]  # the inner vmap's axis outermost
    np.testing.assert_array_equal(out[0], np.arange(3)[None, :] + np.arange(2)[:, None])
    # An unbatched part of the tapped value is the same in every call.
    f = minijax.vmap(lambda y: hcb.id_print((3.0, y), output_stream=STREAM,
                                            callback_flavor=flavor)[1] + 3.0)
    assert printed(lambda: f(np.array([4.0, 5.0], np.float32))) == "( 3.0 4.0 )\n( 3.0 5.0 )\n"
  finally:
    minijax.config.update("host_callback_semantics", previous)


def test_id_tap_of_a_typed_random_key_under_jit(semantics):
  seen = []
  with minijax.enable_custom_prng():
    key = minijax.random.PRNGKey(123)
    out = minijax.jit(lambda k: hcb.id_tap(lambda a, _: seen.append(a), k, result=k))(key)
  hcb.barrier_wait()
  assert len(seen) == 1 and out.shape == () and minijax.numpy.array_equal(
      minijax.random.key_data(out), minijax.random.key_data(key))


def test_jax_semantics_prints_eager_and_rematerialized_taps_as_jax_0_4_34(mechanism):
  """The lines of JAX 0.4.34's test_tap_transforms_doc: an eager tap prints as under jit
  (`3.0`, a jax.Array's str), and a DEBUG-flavor tap inside `checkpoint` under `grad`
  runs again in the backward pass, as a debug.callback does."""
  previous = minijax.config.host_callback_semantics
  minijax.config.update("host_callback_semantics", "jax")
  try:
    def cube(x):
      y = x * x
      hcb.id_print((x, y), what="x,x^2", output_stream=STREAM,
                   callback_flavor=hcb.CallbackFlavor.DEBUG)
      return y * x
    assert printed(lambda: cube(3.0)) == "what: x,x^2\n( 3.0 9.0 )\n"
    assert printed(lambda: minijax.jit(cube)(3.0)) == "what: x,x^2\n( 3.0 9.0 )\n"
    remat = lambda x: cube(minijax.checkpoint(cube)(x))  # noqa: E731
    assert printed(lambda: minijax.grad(remat)(3.0)) == (
        "what: x,x^2\n( 3.0 9.0 )\nwhat: x,x^2\n( 27.0 729.0 )\nwhat: x,x^2\n( 3.0 9.0 )\n")
    # an ordered (IO_CALLBACK) tap is not replayed
    ordered = lambda x: hcb.id_print(x, output_stream=STREAM) * x  # noqa: E731
    assert printed(lambda: minijax.grad(minijax.checkpoint(ordered))(3.0)) == "3.0\n"
  finally:
    minijax.config.update("host_callback_semantics", previous)


def test_call_compiles_once_across_repeated_calls(semantics, caplog):
  """JAX 0.4.34's test_primitive_compilation counts its private primitive-compile cache;
  the behaviour behind it, checked on minijax's compile log: of three calls of `call`,
  eager or jitted, only the first compiles (the jitted function, and `2 * x` on the host)."""
  import logging
  f_outside = lambda x: 2 * x  # noqa: E731
  fun = lambda x: hcb.call(f_outside, x, result_shape=x)  # noqa: E731
  for shape, run in [((5, 7, 3), fun), ((5, 7, 2), minijax.jit(fun))]:
    arg = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    compiles = []
    for _ in range(3):
      caplog.clear()
      with caplog.at_level(logging.DEBUG, logger="minijax"):
        np.testing.assert_array_equal(run(arg), 2 * arg)
      compiles.append([r.getMessage() for r in caplog.records
                       if r.getMessage().startswith("Compiling")])
    assert compiles[1:] == [[], []]
    if run is not fun:
      assert any("for cpu:0" in m and "int32[5,7,2]" in m for m in compiles[0])
