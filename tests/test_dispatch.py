"""jit's fast path (`staging/jit.py` `_jitted`, and `csrc/fast_path.cc` for calls on
Arrays only): every shape of call it serves in its own frame (Arrays, Python scalars among them,
pytrees, constants, several outputs) gives the slow path's answer, and the errors raised
from it are the clear ones."""
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.core.avals import python_scalar_aval
from minijax.staging import jit as jit_module
from tests.conftest import run_python


def _put(x):
  return minijax.device_put(np.asarray(x, np.float32))


def test_calls_with_and_without_python_scalars_alternate_at_one_arity():
  f = minijax.jit(lambda x, y: x * 2 + y)
  x, y = _put([1.0, 2.0]), _put(3.0)
  for _ in range(3):
    np.testing.assert_array_equal(f(x, y), [5.0, 7.0])
    np.testing.assert_array_equal(f(x, 1), [3.0, 5.0])
    np.testing.assert_array_equal(f(x, 1.5), [3.5, 5.5])
    np.testing.assert_array_equal(f(x, True), [3.0, 5.0])
  # Arrays; an int, a float and a bool: each scalar type is a key of its own.
  assert len(f._wrapped._fast) == 4
  assert f(x, 2).dtype == np.float32 and f(x, 2).weak_type is False


def test_python_scalar_avals_follow_enable_x64():
  assert python_scalar_aval(1).dtype == np.int32
  f = minijax.jit(lambda a, b: a + b)
  assert f(1, 2).dtype == np.int32
  minijax.config.update("enable_x64", True)
  try:
    assert python_scalar_aval(1).dtype == np.int64
    assert python_scalar_aval(1.0).dtype == np.float64
    out = f(1, 2)
    assert out.dtype == np.int64 and int(out) == 3
  finally:
    minijax.config.update("enable_x64", False)
  assert python_scalar_aval(1).dtype == np.int32 and f(1, 2).dtype == np.int32


def test_pytrees_of_arrays_and_scalars_constants_and_several_outputs():
  c = _put([10.0, 20.0])
  f = minijax.jit(lambda d: ({"s": d["a"] + c, "t": d["b"] * d["k"]}, d["a"]))
  d = {"a": _put([1.0, 2.0]), "b": _put(3.0), "k": 2}
  for _ in range(3):
    out, a = f(d)
    np.testing.assert_array_equal(out["s"], [11.0, 22.0])
    assert float(out["t"]) == 6.0 and a is not d["a"]
    np.testing.assert_array_equal(a, [1.0, 2.0])
  d["k"] = _put(4.0)  # the same structure with an Array where the scalar was
  assert float(f(d)[0]["t"]) == 12.0


@pytest.mark.parametrize("n", [3, 300])  # unrolled key code, and `map` beyond 256 leaves
def test_many_arguments_and_leaves(n):
  xs = [_put(float(i)) for i in range(n)]
  f = minijax.jit(lambda *xs: sum(xs[1:], xs[0]))
  g = minijax.jit(lambda xs: sum(xs[1:], xs[0]))
  want = n * (n - 1) / 2
  for _ in range(2):
    assert float(f(*xs)) == want and float(g(xs)) == want
  assert float(f(*xs[:-1], 1.0)) == want - (n - 1) + 1


def test_a_deleted_argument_raises_the_clear_error_from_the_fast_path():
  f = minijax.jit(lambda x, y: x + y)
  x, y = _put([1.0]), _put([2.0])
  f(x, y), f(x, y)
  y.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    f(x, y)
  g = minijax.jit(lambda x: x + 1)
  g(x)
  x.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    g(x)


def test_a_tracer_reaching_the_fast_path_takes_the_slow_one():
  f = minijax.jit(lambda x, y: x * y)
  x = _put([1.0, 2.0])
  f(x, x)
  grads = minijax.grad(lambda x: f(x, x).sum())(x)
  np.testing.assert_array_equal(grads, [2.0, 4.0])


def test_eager_operators_with_python_scalars_and_unsupported_operands():
  x = jnp.arange(4.0)
  np.testing.assert_array_equal(x + 1, [1.0, 2.0, 3.0, 4.0])
  np.testing.assert_array_equal(2 * x, [0.0, 2.0, 4.0, 6.0])
  np.testing.assert_array_equal(x - True, [-1.0, 0.0, 1.0, 2.0])
  assert (x + 1).dtype == np.float32 and (jnp.arange(3) + 1.5).dtype == np.float32
  with pytest.raises(TypeError):
    x + "a"
  with pytest.raises(TypeError):
    jnp.add(x, "a")


# Calls on Arrays only, which the native fast path (csrc/fast_path.cc) serves in C when
# it is built; the same cases run in a child without it, all in Python.
ARRAY_CASES = """
import os, traceback
import numpy as np
import minijax
from minijax.staging import jit as jit_module

x = minijax.device_put(np.arange(3, dtype=np.float32))
f = minijax.jit(lambda v: v * 2.0)
for _ in range(3):
  out = f(x)
assert type(out) is minijax.Array and out.aval == x.aval and out.device == x.device
assert not out.committed and np.array_equal(out, [0.0, 2.0, 4.0])
assert len(f._wrapped._fast) == 1

committed = minijax.device_put(x, minijax.devices()[0])
assert f(committed).committed and not f(x).committed  # committed calls have entries of their own

minijax.config.update("enable_x64", True)  # another flag state: other caches
try:
  assert np.array_equal(f(x), [0.0, 2.0, 4.0]) and f(x).dtype == np.float32
finally:
  minijax.config.update("enable_x64", False)

w = minijax.device_put(np.ones(3, np.float32))
const = minijax.device_put(np.full(3, 10.0, np.float32))
g = minijax.jit(lambda a, b: (a + b + const, {"d": a - b}))  # a constant, a pytree of outputs
for _ in range(3):
  s, d = g(x, w)
assert np.array_equal(s, [11.0, 12.0, 13.0]) and np.array_equal(d["d"], [-1.0, 0.0, 1.0])
h = minijax.jit(lambda *vs: sum(vs[1:], vs[0]))
for _ in range(3):
  assert float(h(*[w[:1]] * 12)[0]) == 12.0
w.delete()
try:
  g(x, w)
except RuntimeError as e:
  assert "deleted" in str(e), e
else:
  raise AssertionError("a deleted argument was used without an error")

scaled = minijax.jit(lambda v, k, shift=0.0: v * k + shift, static_argnums=(1, -1))
for _ in range(3):
  assert np.array_equal(scaled(x, 3, 1.0), [1.0, 4.0, 7.0])  # statics 3 and 1.0 (-1)
  assert np.array_equal(scaled(x, 2, 0.0), [0.0, 2.0, 4.0])
assert np.array_equal(scaled(x, 3.0, 1.0), [1.0, 4.0, 7.0])  # 3.0 is not 3: another entry
assert len(scaled._wrapped._fast) == 3
try:
  scaled(x, [3], 1.0)
except ValueError as e:
  assert "Non-hashable static arguments are not supported" in str(e), e
else:
  raise AssertionError("an unhashable static argument was accepted")

inner = minijax.jit(lambda v: v + 1.0)
inner(x)
jaxpr = minijax.make_jaxpr(lambda y: inner(x) * y)(2.0)  # staged, not run, under a trace
assert "pjit" in str(jaxpr) or "jit" in str(jaxpr), jaxpr

bump = minijax.jit(lambda v: v + 1.0, donate_argnums=0)
y = minijax.device_put(np.ones(3, np.float32))
z = bump(y)
z = bump(z)
try:
  bump(y)
except RuntimeError as e:
  assert "deleted" in str(e) or "donated" in str(e), e
  internal = os.path.dirname(minijax.__file__) + os.sep
  frames = [fr.filename for fr in traceback.extract_tb(e.__traceback__)]
  assert not any(name.startswith(internal) for name in frames), frames
else:
  raise AssertionError("a donated argument was used again without an error")
if jit_module._fast_native is not None:  # the C keys are the Python ones: no call misses
  import sys
  calls = lambda: (f(x), g(x, x), h(*[x] * 12), scaled(x, 2, 0.0))  # noqa: E731
  calls()  # (h's first call on f32[3] compiles)
  entered = []
  sys.setprofile(lambda frame, event, arg: event == "call"
                 and frame.f_code.co_name == "jitted" and entered.append(1))
  for _ in range(3):
    calls()
  sys.setprofile(None)
  assert not entered, len(entered)
print("native" if jit_module._fast_native is not None else "python", "ok")
"""


def test_calls_on_arrays_in_c_and_in_python():
  for hide, want in (("", None), ('import sys; sys.modules["minijax.staging._native"] = None\n',
                                  "python ok")):
    proc = run_python(hide + ARRAY_CASES)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if want is not None:
      assert want in proc.stdout
    else:
      assert ("native ok" if jit_module._fast_native is not None else "python ok") in proc.stdout
