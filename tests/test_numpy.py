"""minijax.numpy against numpy, eagerly and under jit: ufuncs, creation, reductions, shape
functions, products, indexing and `.at` updates, array operators and methods, and JAX's
dtype promotion.  Functions are rows of tables; jit reruns each row once.
"""
from __future__ import annotations

import operator

import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests.conftest import compiles

bf16 = np.dtype(ml_dtypes.bfloat16)
_rng = np.random.default_rng(1)


# These tables state 32-bit results; tests that want 64-bit types ask for `x64`.
pytestmark = pytest.mark.usefixtures("x64_off")


def _canonical(dtype):
  return {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
          np.dtype(np.uint64): np.dtype(np.uint32),
          np.dtype(np.complex128): np.dtype(np.complex64)}.get(np.dtype(dtype), np.dtype(dtype))


def assert_close(actual, expected, rtol=2e-5, atol=2e-6):
  if isinstance(actual, (list, tuple)):
    assert isinstance(expected, (list, tuple)) and len(actual) == len(expected)
    for a, e in zip(actual, expected):
      assert_close(a, e, rtol, atol)
    return
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  if actual.dtype.kind in "fc" or actual.dtype == bf16 or expected.dtype.kind in "fc":
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)
  else:
    np.testing.assert_array_equal(actual, expected)


def check(fn, np_fn, *args, jit=True, **tol):
  expected = np_fn(*args)
  out = fn(*args)
  assert_close(out, expected, **tol)
  if jit:
    assert_close(minijax.jit(fn)(*args), out, **tol)
  return out


F = _rng.standard_normal((3, 4)).astype(np.float32)
P = _rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
U = _rng.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)
I = _rng.integers(-6, 7, (3, 4)).astype(np.int32)
NZ = np.where(I == 0, 3, I).astype(np.int32)
B = _rng.random((3, 4)) < 0.5
ROW = _rng.standard_normal((4,)).astype(np.float32)
E = np.zeros((0, 4), np.float32)

UFUNCS = {
    # name: (args...) -- compared against numpy's function of the same name
    "add": (F, ROW), "add_bool": (B, B), "add_int_scalar": (I, 3), "subtract": (F, 2.5),
    "multiply": (I, NZ), "multiply_bool": (B, B), "true_divide": (F, P),
    "true_divide_ints": (I, NZ), "floor_divide": (I, NZ), "floor_divide_f": (F, P),
    "remainder": (I, NZ), "remainder_f": (F, P), "mod": (I, -4), "fmod": (I, NZ),
    "power": (P, U), "power_int": (I, np.abs(I) % 4), "power_scalar": (F, 3),
    "maximum": (F, ROW), "minimum": (I, 0), "fmax": (F, np.float32(np.nan)),
    "arctan2": (F, P), "logaddexp": (F, U), "hypot": (F, P),
    "equal": (I, NZ), "not_equal": (F, F), "less": (F, 0.0), "less_equal": (I, NZ),
    "greater": (F, ROW), "greater_equal": (I, 1),
    "logical_and": (B, I), "logical_or": (B, B), "logical_xor": (I, B), "logical_not": (F,),
    "bitwise_and": (I, NZ), "bitwise_or": (B, B), "bitwise_xor": (I, 5), "invert": (I,),
    "left_shift": (np.abs(I), 2), "right_shift": (I, 1),
    "negative": (F,), "positive": (I,), "absolute": (I,), "abs": (F,), "sign": (F,),
    "floor": (F,), "ceil": (F,), "trunc": (F * 3,), "rint": (F * 3,), "round": (F * 3,),
    "exp": (U,), "exp2": (F,), "log": (P,), "log2": (P,), "log10": (P,), "log1p": (P,),
    "expm1": (U,), "sin": (F,), "sin_int": (I,), "cos": (F,), "tan": (U,), "tanh": (F,),
    "sqrt": (P,), "sinh": (U,), "cosh": (U,), "arcsin": (U,), "arccos": (U,),
    "arctan": (F,), "arctanh": (U,), "arcsinh": (F,), "arccosh": (P + 1,), "cbrt": (F,),
    "deg2rad": (F,), "rad2deg": (F,), "square": (I,), "reciprocal": (P,),
    "isnan": (np.array([1.0, np.nan, np.inf], np.float32),),
    "isfinite": (np.array([1.0, np.nan, -np.inf], np.float32),),
    "isinf": (np.array([1.0, np.nan, -np.inf], np.float32),), "signbit": (F,),
    "isclose": (F, F + 1e-7), "clip": (F, -0.5, 0.5), "where": (B, F, I),
}


@pytest.mark.parametrize("name", list(UFUNCS))
def test_ufunc_matches_numpy(name):
  args = UFUNCS[name]
  base = name
  while not hasattr(np, base):
    base = base.rsplit("_", 1)[0]
  fn, np_fn = getattr(jnp, base), getattr(np, base)
  check(lambda *a: fn(*a), lambda *a: np_fn(*a), *args, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)])
def test_ufuncs_on_scalars_and_empty_arrays(shape):
  x = np.ones(shape, np.float32)
  for fn, np_fn in ((jnp.add, np.add), (jnp.multiply, np.multiply), (jnp.maximum, np.maximum)):
    assert_close(fn(x, x), np_fn(x, x))
  assert_close(jnp.sin(x), np.sin(x))
  assert_close(jnp.sum(x), np.sum(x))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, bf16, np.uint8, np.float16])
def test_binary_operators_across_dtypes(dtype):
  x = (np.arange(1, 7).reshape(2, 3) % 5 + 1).astype(dtype)
  y = (np.arange(6, 0, -1).reshape(2, 3) % 4 + 1).astype(dtype)
  ax, ay = jnp.asarray(x), jnp.asarray(y)
  tol = dict(rtol=2e-2, atol=2e-2) if dtype in (bf16, np.float16) else {}
  for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
             operator.mod, operator.lt, operator.eq, operator.ge):
    out = op(ax, ay)
    with np.errstate(all="ignore"):
      expected = op(x.astype(np.float64), y.astype(np.float64)) if dtype == bf16 else op(x, y)
    assert_close(out, expected, **tol)
    if op is operator.truediv:
      assert np.dtype(out.dtype).kind == "f" or out.dtype == bf16
    elif op not in (operator.lt, operator.eq, operator.ge):
      assert out.dtype == np.dtype(dtype)


def test_reflected_and_unary_operators():
  x = jnp.asarray(I)
  assert_close(3 - x, 3 - I)
  assert_close(2 ** jnp.asarray(np.abs(I) % 5), 2 ** (np.abs(I) % 5))
  assert_close(10 // jnp.asarray(NZ), 10 // NZ)
  assert_close(7 % jnp.asarray(NZ), 7 % NZ)
  assert_close(-x, -I)
  assert_close(+x, I)
  assert_close(abs(x), np.abs(I))
  assert_close(~x, ~I)
  assert_close(x & 3, I & 3)
  assert_close(1 | x, 1 | I)
  assert_close(x ^ x, I ^ I)
  assert_close(x << 1, I << 1)
  assert_close(x >> 1, I >> 1)
  assert_close(np.ones(4, np.float32) + jnp.asarray(F), 1 + F)
  assert_close(F @ jnp.asarray(F.T), F @ F.T)
  assert_close(jnp.asarray(F) @ F.T, F @ F.T)
  assert isinstance(np.float32(2) * jnp.asarray(F), minijax.Array)


def test_operators_under_jit_bind_onto_the_trace():
  def f(x, y):
    return ((x + y) * 2 - x / y) ** 2 @ (x.T > 0).astype(jnp.float32) // 3 % 5
  x, y = F, P
  expected = ((x + y) * 2 - x / y) ** 2 @ (x.T > 0).astype(np.float32) // 3 % 5
  assert_close(f(jnp.asarray(x), jnp.asarray(y)), expected, rtol=1e-4, atol=1e-4)
  assert_close(minijax.jit(f)(x, y), expected, rtol=1e-4, atol=1e-4)
  jaxpr = str(minijax.make_jaxpr(f)(x, y))
  assert "dot_general" in jaxpr and "div" in jaxpr


# ---- promotion
@pytest.mark.parametrize("a,b,expected", [
    (np.float32(1), 1.0, np.float32), (np.int32(1), 1.0, np.float32),
    (np.int8(1), 1, np.int8), (np.uint8(1), np.int8(1), np.int16),
    (bf16.type(1), np.float16(1), np.float32), (bf16.type(1), 2, bf16),
    (np.bool_(True), 1, np.int32), (np.int32(1), np.float16(1), np.float16),
    (np.bool_(True), np.bool_(False), np.bool_), (np.uint32(1), np.int32(1), np.int64),
])
def test_binary_ops_promote_like_jax(a, b, expected):
  out = jnp.add(jnp.asarray(a), b)
  assert out.dtype == _canonical(expected)
  assert jnp.result_type(jnp.asarray(a), b) == _canonical(expected)


def test_python_scalars_are_weak_and_arrays_are_not():
  x = jnp.asarray(np.ones(3, np.float16))
  assert (x + 1.0).dtype == np.float16
  assert (x * 2).dtype == np.float16
  assert jnp.asarray(1.0).dtype == np.float32
  assert (jnp.asarray(np.int32(1)) + 1.5).dtype == np.float32
  assert jnp.promote_types(np.int32, np.float32) == np.float32
  s = jnp.add(1.0, 2.0)
  assert s.dtype == np.float32 and s.weak_type


def test_eager_ops_follow_the_x64_flag_when_it_changes():
  a = np.arange(3, dtype=np.int64)
  assert jnp.true_divide(a, a + 1).dtype == np.float32
  previous = minijax.config.enable_x64
  minijax.config.update("enable_x64", True)
  try:
    assert jnp.true_divide(a, a + 1).dtype == np.float64
    # as JAX 0.10.2: integers of up to 32 bits divide (and take sin, mean...) in float32
    b = a.astype(np.int32)
    assert jnp.true_divide(b, b + 1).dtype == np.float32 and jnp.mean(b).dtype == np.float32
    assert jnp.sin(a.astype(bool)).dtype == np.float32 and jnp.sum(b.astype(np.uint32)).dtype == np.uint64
  finally:
    minijax.config.update("enable_x64", previous)
  assert jnp.true_divide(a, a + 1).dtype == np.float32


def test_eager_numpy_functions_run_as_one_compiled_call_per_static_arguments(caplog):
  # a shape no other test uses, so that nothing is compiled for it yet
  x = jnp.asarray(np.arange(12.0, dtype=np.float32).reshape(3, 4)) * jnp.ones((5, 3, 4))
  xt = jnp.swapaxes(x, 1, 2)
  for fn in (lambda: jnp.var(x, axis=1, ddof=1), lambda: jnp.clip(x, 2.0, 9.0),
             lambda: jnp.dot(x, xt), lambda: x + 1.0):
    first = compiles(caplog, fn)
    assert len(first) == 1, first  # the whole function, not one executable per lax op
    assert compiles(caplog, fn) == []
  assert_close(jnp.var(x, axis=1, ddof=1), np.var(np.asarray(x), axis=1, ddof=1))
  assert len(compiles(caplog, lambda: jnp.var(x, axis=0))) == 1  # new static arguments
  # unhashable static values still work, op by op; lists as arrays are refused (as by JAX)
  assert_close(jnp.sum(x, axis=[0, 1, 2]), 330.0)
  with pytest.raises(TypeError, match="argument of type list is not a valid array"):
    jnp.sum([1.0, 2.0, 3.0])
  assert_close(jnp.mean(x, where=x > 5), np.mean(np.arange(6.0, 12.0)))
  # under a trace the functions run inline: the jaxpr shows their primitives
  jaxpr = str(minijax.make_jaxpr(lambda v: jnp.var(v, axis=1))(x))
  assert "reduce_sum" in jaxpr and "jit" not in jaxpr and "call" not in jaxpr


def test_x64_promotion(x64):
  x = jnp.asarray(np.ones(3, np.float64))
  assert x.dtype == np.float64
  assert (x + 1).dtype == np.float64
  assert jnp.arange(3).dtype == np.int64
  assert (jnp.asarray(np.int32(1)) + 1.5).dtype == np.float64
  assert jnp.sum(jnp.ones(3, jnp.int32)).dtype == np.int64
  assert_close(jnp.dot(x, x), 3.0)
  assert_close(minijax.jit(lambda v: jnp.cumsum(v * 2))(np.arange(4.0)), [0, 2, 6, 12])


# ---- creation
def test_creation_functions():
  assert_close(jnp.zeros((2, 3)), np.zeros((2, 3), np.float32))
  assert jnp.zeros(3, jnp.int32).dtype == np.int32
  assert_close(jnp.ones(4, jnp.bool_), np.ones(4, bool))
  assert_close(jnp.full((2, 2), 7), np.full((2, 2), 7))
  assert_close(jnp.full((2, 3), ROW[:3]), np.full((2, 3), ROW[:3]))
  assert_close(jnp.zeros_like(I), np.zeros_like(I))
  assert_close(jnp.ones_like(F, dtype=jnp.int32), np.ones_like(F, dtype=np.int32))
  assert_close(jnp.full_like(F, 2.5), np.full_like(F, 2.5))
  assert_close(jnp.arange(5), np.arange(5))
  assert_close(jnp.arange(2, 11, 3), np.arange(2, 11, 3))
  assert_close(jnp.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25))
  assert_close(jnp.arange(0), np.arange(0))
  assert jnp.arange(5).dtype == np.int32 and jnp.arange(5.0).dtype == np.float32
  assert_close(jnp.linspace(0, 1, 7), np.linspace(0, 1, 7))
  assert_close(jnp.linspace(2, 3, 4, endpoint=False), np.linspace(2, 3, 4, endpoint=False))
  assert_close(jnp.eye(3), np.eye(3))
  assert_close(jnp.eye(3, 4, k=-1, dtype=jnp.int32), np.eye(3, 4, k=-1, dtype=np.int32))
  assert_close(jnp.identity(2), np.identity(2))
  assert_close(jnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
  assert jnp.array([1.0, 2.0]).dtype == np.float32
  assert_close(jnp.array(3), np.array(3))
  assert_close(jnp.array(F, dtype=jnp.int32), F.astype(np.int32))
  assert_close(jnp.asarray([True, False]), np.array([True, False]))
  assert_close(jnp.tril(F), np.tril(F))
  assert_close(jnp.triu(F, 1), np.triu(F, 1))
  assert_close(jnp.meshgrid(np.arange(3), np.arange(2)), np.meshgrid(np.arange(3), np.arange(2)))
  assert jnp.array(np.ones(2, bf16)).dtype == bf16


def test_array_of_traced_values_stacks_them():
  f = minijax.jit(lambda x, y: jnp.array([x, y, x * y]))
  assert_close(f(2.0, 3.0), [2.0, 3.0, 6.0])
  g = minijax.jit(lambda x: jnp.linspace(x, x + 1, 3))
  assert_close(g(np.float32(1)), [1.0, 1.5, 2.0])


def test_array_of_a_python_scalar_is_an_array_under_every_transformation():
  seen = []

  def f(x):
    made = [jnp.array(1.5), jnp.asarray(2), jnp.asarray(np.float32(3)), jnp.zeros(()),
            jnp.full((), 4)]
    seen.append([(m.shape, m.dtype, m.weak_type) for m in made])
    return x * made[0].astype(jnp.float32) + made[1] + made[2].at[()].set(1) + made[4]

  for transform in (lambda g: g, minijax.jit, minijax.grad, minijax.vmap):
    arg = np.ones(2, np.float32) if transform is minijax.vmap else np.float32(1)
    transform(f)(arg)
    assert seen.pop() == [((), np.float32, True), ((), np.int32, True), ((), np.float32, False),
                          ((), np.float32, False), ((), np.int32, True)]
  assert float(minijax.jit(f)(np.float32(2))) == 10.0
  # under jit the scalars are literals of the jaxpr, not constants it closes over
  jaxpr = minijax.make_jaxpr(lambda x: x + jnp.array(1.0))(1.0)
  assert not jaxpr.jaxpr.constvars and "add a 1.0" in str(jaxpr)


# ---- reductions
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax",
              "argmin", "cumsum", "cumprod", "ptp", "count_nonzero"]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_matches_numpy_for_each_axis_form(name):
  fn, np_fn = getattr(jnp, name), getattr(np, name)
  x = _rng.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
  if name in ("all", "any", "count_nonzero"):
    x = x > 1.0
  axes = [None, 0, -1, 1]
  if name not in ("argmax", "argmin", "cumsum", "cumprod"):
    axes += [(0, 2), (-1, -2)]
  for k, axis in enumerate(axes):
    kw = {} if name in ("cumsum", "cumprod") else {"keepdims": k % 2 == 1}
    check(lambda v: fn(v, axis=axis, **kw), lambda v: np_fn(v, axis=axis, **kw), x,
          jit=(k < 2), rtol=1e-5, atol=1e-5)


def test_reductions_of_ints_bools_scalars_and_empty_arrays():
  assert jnp.sum(B).dtype == np.int32 and int(jnp.sum(B)) == int(B.sum())
  assert jnp.sum(np.ones(3, np.int8)).dtype == np.int32
  assert jnp.mean(I).dtype == np.float32
  h = np.full(4096, 0.1, bf16)
  assert jnp.sum(h).dtype == bf16 and abs(float(jnp.sum(h)) - 409.6) < 2
  assert jnp.mean(h).dtype == bf16 and abs(float(jnp.mean(h)) - 0.1) < 1e-3
  assert_close(jnp.mean(I, axis=0), I.mean(0))
  assert_close(jnp.var(I, ddof=1), I.var(ddof=1))
  assert_close(jnp.sum(E), 0.0)
  assert_close(jnp.sum(E, axis=0), np.zeros(4))
  assert_close(jnp.prod(E, axis=1), np.ones(0))
  assert_close(jnp.max(np.float32(3)), 3.0)
  assert_close(jnp.all(E), True)
  assert_close(jnp.any(E, axis=0), np.zeros(4, bool))
  assert_close(jnp.max(F, initial=10.0), 10.0)
  assert_close(jnp.argmax(np.array([1.0, np.nan, 3.0])), 1)
  w = F > 0
  assert_close(jnp.sum(F, where=w), np.sum(F, where=w), rtol=1e-5)
  assert_close(jnp.mean(F, axis=1, where=w), np.mean(F, axis=1, where=w), rtol=1e-5)
  assert_close(jnp.max(F, axis=0, where=w, initial=-9.0), np.max(F, axis=0, where=w,
                                                                 initial=-9.0))
  assert_close(jnp.all(F > -1, where=w), np.all(F > -1, where=w))
  with pytest.raises(ValueError, match="zero-size array"):
    jnp.max(E, axis=0)
  with pytest.raises(ValueError, match="empty sequence"):
    jnp.argmax(E)
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.sum(F, axis=2)


# ---- shape functions: name -> (function, numpy function, args)
SHAPE_FUNCS = {
    "reshape": (lambda x: jnp.reshape(x, (2, -1)), lambda x: np.reshape(x, (2, -1)), (F,)),
    "ravel": (jnp.ravel, np.ravel, (F,)),
    "transpose": (jnp.transpose, np.transpose, (F,)),
    "transpose_axes": (lambda x: jnp.transpose(x, (1, 2, 0)),
                       lambda x: np.transpose(x, (1, 2, 0)), (F.reshape(3, 2, 2),)),
    "swapaxes": (lambda x: jnp.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1),
                 (F.reshape(3, 2, 2),)),
    "moveaxis": (lambda x: jnp.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1),
                 (F.reshape(3, 2, 2),)),
    "moveaxis_multi": (lambda x: jnp.moveaxis(x, (0, 1), (2, 0)),
                       lambda x: np.moveaxis(x, (0, 1), (2, 0)), (F.reshape(3, 2, 2),)),
    "squeeze": (jnp.squeeze, np.squeeze, (F.reshape(1, 3, 1, 4),)),
    "squeeze_axis": (lambda x: jnp.squeeze(x, 2), lambda x: np.squeeze(x, 2),
                     (F.reshape(1, 3, 1, 4),)),
    "expand_dims": (lambda x: jnp.expand_dims(x, (0, -1)),
                    lambda x: np.expand_dims(x, (0, -1)), (F,)),
    "broadcast_to": (lambda x: jnp.broadcast_to(x, (2, 3, 4)),
                     lambda x: np.broadcast_to(x, (2, 3, 4)), (F,)),
    "broadcast_arrays": (lambda x, y: jnp.broadcast_arrays(x, y),
                         lambda x, y: list(np.broadcast_arrays(x, y)), (F, ROW)),
    "concatenate": (lambda x, y: jnp.concatenate([x, y, x], axis=0),
                    lambda x, y: np.concatenate([x, y, x], axis=0), (F, E)),
    "concatenate_promotes": (lambda x, y: jnp.concatenate([x, y], axis=-1),
                             lambda x, y: np.concatenate([x, y], axis=-1), (F, I)),
    "concatenate_none": (lambda x, y: jnp.concatenate([x, y], axis=None),
                         lambda x, y: np.concatenate([x, y], axis=None), (F, ROW)),
    "stack": (lambda x, y: jnp.stack([x, y], axis=1), lambda x, y: np.stack([x, y], axis=1),
              (F, P)),
    "hstack": (lambda x, y: jnp.hstack([x, y]), lambda x, y: np.hstack([x, y]), (F, P)),
    "vstack": (lambda x, y: jnp.vstack([x, y]), lambda x, y: np.vstack([x, y]), (ROW, F)),
    "split": (lambda x: jnp.split(x, 2, axis=1), lambda x: np.split(x, 2, axis=1), (F,)),
    "split_indices": (lambda x: jnp.split(x, [1, 3], axis=1),
                      lambda x: np.split(x, [1, 3], axis=1), (F,)),
    "array_split": (lambda x: jnp.array_split(x, 3, axis=1),
                    lambda x: np.array_split(x, 3, axis=1), (F,)),
    "tile": (lambda x: jnp.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), (F,)),
    "repeat": (lambda x: jnp.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, axis=1), (F,)),
    "repeat_flat": (lambda x: jnp.repeat(x, 3), lambda x: np.repeat(x, 3), (I,)),
    "repeat_counts": (lambda x: jnp.repeat(x, [1, 0, 2], axis=0),
                      lambda x: np.repeat(x, [1, 0, 2], axis=0), (F,)),
    "flip": (jnp.flip, np.flip, (F,)),
    "flip_axis": (lambda x: jnp.flip(x, 1), lambda x: np.flip(x, 1), (F,)),
    "roll": (lambda x: jnp.roll(x, 2, axis=1), lambda x: np.roll(x, 2, axis=1), (F,)),
    "roll_flat": (lambda x: jnp.roll(x, -5), lambda x: np.roll(x, -5), (F,)),
    "rot90": (jnp.rot90, np.rot90, (F,)),
    "sort": (jnp.sort, np.sort, (F,)),
    "sort_axis0": (lambda x: jnp.sort(x, axis=0), lambda x: np.sort(x, axis=0), (I,)),
    "argsort": (lambda x: jnp.argsort(x, axis=1), lambda x: np.argsort(x, axis=1,
                                                                        kind="stable"), (I,)),
    "take": (lambda x: jnp.take(x, np.array([2, 0, -1]), axis=1),
             lambda x: np.take(x, np.array([2, 0, -1]), axis=1), (F,)),
    "take_along_axis": (lambda x: jnp.take_along_axis(x, np.argsort(F, 1), 1),
                        lambda x: np.take_along_axis(x, np.argsort(F, 1), 1), (F,)),
    "pad": (lambda x: jnp.pad(x, ((1, 0), (2, 1))), lambda x: np.pad(x, ((1, 0), (2, 1))),
            (F,)),
    "diagonal": (jnp.diagonal, np.diagonal, (F,)),
    "diagonal_offset": (lambda x: jnp.diagonal(x, -1), lambda x: np.diagonal(x, -1), (F,)),
    "trace": (jnp.trace, np.trace, (F,)),
    "diag": (lambda x: jnp.diag(x, 1), lambda x: np.diag(x, 1), (ROW,)),
    "atleast_2d": (jnp.atleast_2d, np.atleast_2d, (ROW,)),
    "dot": (jnp.dot, np.dot, (F, F.T.copy())),
    "dot_vec": (jnp.dot, np.dot, (F, ROW)),
    "dot_nd": (jnp.dot, np.dot, (F.reshape(3, 2, 2), F.reshape(2, 2, 3))),
    "dot_scalar": (jnp.dot, np.dot, (F, np.float32(2))),
    "matmul": (jnp.matmul, np.matmul, (F, F.T.copy())),
    "matmul_batched": (jnp.matmul, np.matmul, (F.reshape(3, 1, 4), P.reshape(3, 4, 1))),
    "matmul_broadcast": (jnp.matmul, np.matmul, (F.reshape(1, 3, 4), ROW)),
    "matmul_vec_mat": (jnp.matmul, np.matmul, (ROW[:3], F)),
    "vdot": (jnp.vdot, np.vdot, (F, P)),
    "inner": (jnp.inner, np.inner, (F, P)),
    "outer": (jnp.outer, np.outer, (ROW, ROW[:3])),
    "tensordot": (lambda x, y: jnp.tensordot(x, y, ((0, 1), (1, 0))),
                  lambda x, y: np.tensordot(x, y, ((0, 1), (1, 0))), (F, P.T.copy())),
    "einsum_matmul": (lambda x, y: jnp.einsum("ij,jk->ik", x, y),
                      lambda x, y: np.einsum("ij,jk->ik", x, y), (F, P.T.copy())),
    "einsum_batch": (lambda x, y: jnp.einsum("bij,bkj->bki", x, y),
                     lambda x, y: np.einsum("bij,bkj->bki", x, y),
                     (F.reshape(3, 2, 2), P.reshape(3, 2, 2))),
    "einsum_implicit": (lambda x, y: jnp.einsum("ij,ij", x, y),
                        lambda x, y: np.einsum("ij,ij", x, y), (F, P)),
    "einsum_sum_private": (lambda x, y: jnp.einsum("ij,k->j", x, y),
                           lambda x, y: np.einsum("ij,k->j", x, y), (F, ROW)),
    "einsum_transpose": (lambda x: jnp.einsum("ij->ji", x), lambda x: np.einsum("ij->ji", x),
                         (F,)),
    "einsum_outer": (lambda x, y: jnp.einsum("i,j->ij", x, y),
                     lambda x, y: np.einsum("i,j->ij", x, y), (ROW, ROW)),
    "einsum_three": (lambda x, y, z: jnp.einsum("ij,jk,kl->il", x, y, z),
                     lambda x, y, z: np.einsum("ij,jk,kl->il", x, y, z),
                     (F, P.T.copy(), F)),
    "einsum_trace": (lambda x: jnp.einsum("ii", x), lambda x: np.einsum("ii", x), (F[:, :3],)),
    "einsum_diag": (lambda x: jnp.einsum("ii->i", x), lambda x: np.einsum("ii->i", x),
                    (F[:, :3],)),
    "norm": (jnp.linalg.norm, np.linalg.norm, (ROW,)),
    "allclose": (jnp.allclose, np.allclose, (F, F)),
}


@pytest.mark.parametrize("name", list(SHAPE_FUNCS))
def test_shape_and_product_functions_match_numpy(name):
  fn, np_fn, args = SHAPE_FUNCS[name]
  check(fn, np_fn, *args, rtol=1e-5, atol=1e-5)


def test_method_forms():
  x = jnp.asarray(F)
  assert_close(x.T, F.T)
  assert_close(x.reshape(2, 6), F.reshape(2, 6))
  assert_close(x.reshape((4, 3)), F.reshape(4, 3))
  assert_close(x.astype(jnp.int32), F.astype(np.int32))
  assert_close(x.transpose(), F.T)
  assert_close(x.transpose(1, 0), F.T)
  assert_close(x.ravel(), F.ravel())
  assert_close(x.flatten(), F.flatten())
  assert_close(x.reshape(1, 12).squeeze(), F.ravel())
  assert_close(x.sum(), F.sum(), rtol=1e-5)
  assert_close(x.sum(axis=0), F.sum(0), rtol=1e-5)
  assert_close(x.mean(1), F.mean(1), rtol=1e-5)
  assert_close(x.max(), F.max())
  assert_close(x.min(0), F.min(0))
  assert_close(x.prod(), F.prod(), rtol=1e-4)
  assert_close((x > 0).any(), (F > 0).any())
  assert_close((x > 0).all(1), (F > 0).all(1))
  assert_close(x.argmax(), F.argmax())
  assert_close(x.argmin(1), F.argmin(1))
  assert_close(x.std(), F.std(), rtol=1e-5)
  assert_close(x.var(0), F.var(0), rtol=1e-5)
  assert_close(x.cumsum(1), F.cumsum(1), rtol=1e-5)
  assert_close(x.dot(F.T), F @ F.T, rtol=1e-5)
  assert_close(x.clip(0, 1), F.clip(0, 1))
  assert_close(round(x), np.round(F))
  assert_close(x.round(1), np.round(F, 1), rtol=1e-5)
  ints = np.array([15, 25, -15, 149, 151], np.int32)
  assert_close(jnp.round(ints, -1), np.round(ints, -1))
  assert x.shape == (3, 4) and x.ndim == 2 and x.size == 12 and x.dtype == np.float32
  assert jnp.ndim(F) == 2 and jnp.shape(x) == (3, 4) and jnp.size(x) == 12
  y = minijax.jit(lambda v: v.T.reshape(-1).sum() + v.mean(axis=0).max())(F)
  assert_close(y, F.sum() + F.mean(0).max(), rtol=1e-5)


# ---- indexing
M = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
INDEXES = [
    0, -1, (1, 2), (1, 2, 3), (-1, -2, -3), slice(None), slice(1, None), slice(None, None, -1),
    (slice(None), slice(None, None, 2)), (slice(None), slice(3, 0, -2)),
    (slice(5, -10, -1),), (Ellipsis, 1), (0, Ellipsis), (None,), (None, 0, None, Ellipsis),
    (slice(None), None, 1), (Ellipsis, None), True, (False,), (0, True), (slice(1, 1),),
    np.array([0, 2]), np.array([[0, 1], [2, -1]]), (np.array([0, 2]), np.array([1, 3])),
    (slice(None), np.array([0, 3, 1])), (np.array([0, 1]), slice(None), np.array([4, 0])),
    (1, slice(None), np.array([1, 2])), (Ellipsis, np.array([0, -1])),
    (np.array([[0], [2]]), np.array([1, 2, 3])), ([0, 1], [1, 2]),
    (None, np.array([1, 2])), (slice(None, None, -1), np.array([0, 1]), 2),
    np.array([True, False, True]), (slice(None), np.array([True, False, True, True])),
    np.array(1), (np.int32(2), np.int64(1)), np.array([], np.int32),
]


@pytest.mark.parametrize("index", INDEXES, ids=[repr(i)[:40] for i in INDEXES])
def test_getitem_matches_numpy(index):
  x = jnp.asarray(M)
  assert_close(x[index], M[index])


def test_getitem_refuses_what_jax_refuses():
  x = jnp.asarray(M)
  with pytest.raises(TypeError, match="non-tuple sequence for multidimensional indexing"):
    x[[0, 2]]  # (numpy reads it as x[np.array([0, 2])]; JAX, and so minijax, refuse)
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
    x[np.array([1.0])]


def test_getitem_under_jit_with_traced_indices():
  x = jnp.asarray(M)
  f = minijax.jit(lambda v, i: v[i])
  assert_close(f(M, 1), M[1])
  assert_close(f(M, -1), M[-1])
  assert_close(f(M, np.array([2, 0])), M[[2, 0]])
  g = minijax.jit(lambda v, i, j: v[i, :, j])
  assert_close(g(M, 2, np.array([1, 4])), M[2, :, [1, 4]])
  h = minijax.jit(lambda v, i: v[1:, i, ::-1])
  assert_close(h(M, 3), M[1:, 3, ::-1])
  # out-of-bounds array indices clamp (JAX's semantics)
  assert_close(x[np.array([7])], M[[2]])
  assert_close(minijax.jit(lambda v: v[:, 1, 2])(M), M[:, 1, 2])


def test_getitem_on_scalars_and_empty_arrays():
  s = jnp.asarray(np.float32(3))
  assert_close(s[()], 3.0)
  assert_close(s[None], [3.0])
  assert_close(s[...], 3.0)
  e = jnp.asarray(E)
  assert_close(e[:, 1], E[:, 1])
  assert_close(e[::-1], E[::-1])


def test_at_updates_match_numpy():
  x = jnp.asarray(M)
  def np_at(op, idx, v):
    out = M.copy()
    getattr(np, op).at(out, idx, v) if op != "set" else out.__setitem__(idx, v)
    return out
  cases = [(0, 1.0), ((1, 2, 3), -5.0), ((slice(None), 1), np.arange(5, dtype=np.float32)),
           ((Ellipsis, np.array([0, 0, 4])), 2.0), (np.array([2, 0]), 7.0),
           ((slice(None, None, -1), 0, slice(1, 3)), 3.0)]
  for idx, v in cases:
    assert_close(x.at[idx].set(v), np_at("set", idx, v))
    assert_close(x.at[idx].add(v), np_at("add", idx, v))
    assert_close(x.at[idx].mul(v), np_at("multiply", idx, v))
    assert_close(x.at[idx].min(v), np_at("minimum", idx, v))
    assert_close(x.at[idx].max(v), np_at("maximum", idx, v))
    assert_close(x.at[idx].get(), M[idx])
  repeated = jnp.zeros(3).at[np.array([0, 0, 2])].add(1.0)
  assert_close(repeated, [2.0, 0.0, 1.0])
  f = minijax.jit(lambda v, i, u: v.at[i, 1:].set(u))
  assert_close(f(M[0], 2, np.float32(9)), np_at("set", (0, 2, slice(1, None)), 9.0)[0])
  # out-of-bounds array indices are dropped by updates (and clamped by reads), as in JAX
  assert_close(jnp.arange(5.0).at[np.array([1, 7, -9, -1])].set(-1.0), [0, -1, 2, 3, -1])
  assert_close(minijax.jit(lambda v, i: v.at[i].add(1.0))(np.zeros(3, np.float32), 5), [0, 0, 0])
  assert_close(jnp.zeros((3, 2)).at[np.array([0, 4]), 1].set(1.0), [[0, 1], [0, 0], [0, 0]])
  assert_close(jnp.arange(5.0).at[np.array([1, 7])].set(-1.0, mode="clip"), [0, -1, 2, 3, -1])
  assert_close(jnp.arange(5.0).at[np.array([1, 7])].get(mode="fill"), [1.0, np.nan])
  assert_close(jnp.arange(3).at[np.array([5])].get(mode="fill", fill_value=-1), [-1])
  assert_close(jnp.arange(5.0).at[2].apply(lambda v: v * 10), [0, 1, 20, 3, 4])
  assert_close(jnp.arange(5.0).at[1:3].subtract(1.0), [0, 0, 1, 3, 4])
  ints = jnp.asarray(I).at[0].set(2.7)
  assert ints.dtype == np.int32 and int(ints[0, 0]) == 2


EXTRAS = {
    "diff": (lambda x: jnp.diff(x, axis=0), lambda x: np.diff(x, axis=0), (F,)),
    "diff_n2": (lambda x: jnp.diff(x, n=2), lambda x: np.diff(x, n=2), (F,)),
    "nan_to_num": (jnp.nan_to_num, np.nan_to_num, (np.array([1.0, np.nan, np.inf], np.float32),)),
    "nansum": (lambda x: jnp.nansum(x, 0), lambda x: np.nansum(x, 0),
               (np.where(F > 1, np.nan, F).astype(np.float32),)),
    "nanmax": (jnp.nanmax, np.nanmax, (np.where(F > 1, np.nan, F).astype(np.float32),)),
    "nanmean": (lambda x: jnp.nanmean(x, 1), lambda x: np.nanmean(x, 1),
                (np.where(F > 1, np.nan, F).astype(np.float32),)),
    "median": (lambda x: jnp.median(x, axis=1), lambda x: np.median(x, axis=1), (F,)),
    "quantile": (lambda x: jnp.quantile(x, np.array([0.1, 0.5])),
                 lambda x: np.quantile(x, [0.1, 0.5]), (F,)),
    "percentile": (lambda x: jnp.percentile(x, 30, axis=0), lambda x: np.percentile(x, 30, axis=0),
                   (F,)),
    "append": (lambda x: jnp.append(x, ROW), lambda x: np.append(x, ROW), (F,)),
    "searchsorted": (lambda v: jnp.searchsorted(np.sort(ROW), v),
                     lambda v: np.searchsorted(np.sort(ROW), v), (F,)),
    "cross": (jnp.cross, np.cross, (F[:, :3], P[:, :3])),
    "kron": (jnp.kron, np.kron, (F[:2, :2], I[:2, :3])),
    "isin": (lambda x: jnp.isin(x, [1, 2, 3]), lambda x: np.isin(x, [1, 2, 3]), (I,)),
    "indices": (lambda: jnp.indices((2, 3)), lambda: np.indices((2, 3)), ()),
    "logspace": (lambda: jnp.logspace(0, 2, 5), lambda: np.logspace(0, 2, 5), ()),
    "select": (lambda x: jnp.select([x < -0.5, x > 0.5], [x, 2 * x], -1.0),
               lambda x: np.select([x < -0.5, x > 0.5], [x, 2 * x], -1.0), (F,)),
    "heaviside": (lambda x: jnp.heaviside(x, 0.5), lambda x: np.heaviside(x, 0.5),
                  (np.array([-1.0, 0.0, 2.0], np.float32),)),
    "float_power": (jnp.float_power, np.float_power, (P, U)),
    "sinc": (jnp.sinc, np.sinc, (np.array([0.0, 0.5, 1.5], np.float32),)),
    "interp": (lambda x: jnp.interp(x, np.array([-1.0, 0.0, 2.0]), np.array([0.0, 1.0, 5.0])),
               lambda x: np.interp(x, np.array([-1.0, 0.0, 2.0]), np.array([0.0, 1.0, 5.0])),
               (F * 2,)),
    "digitize": (lambda x: jnp.digitize(x, np.array([-1.0, 0.0, 1.0])),
                 lambda x: np.digitize(x, np.array([-1.0, 0.0, 1.0])), (F,)),
    "bincount": (lambda x: jnp.bincount(x, length=7), lambda x: np.bincount(x, minlength=7),
                 (np.array([0, 2, 2, 6], np.int32),)),
    "cov": (jnp.cov, np.cov, (F,)),
    "corrcoef": (jnp.corrcoef, np.corrcoef, (F,)),
    "nanargmax": (lambda x: jnp.nanargmax(x, 1), lambda x: np.nanargmax(x, 1),
                  (np.where(F > 1, np.nan, F).astype(np.float32),)),
    "nanstd": (lambda x: jnp.nanstd(x, 0), lambda x: np.nanstd(x, 0),
               (np.where(F > 1, np.nan, F).astype(np.float32),)),
    "delete": (lambda x: jnp.delete(x, np.array([0, 2]), axis=1),
               lambda x: np.delete(x, [0, 2], axis=1),
               (F,)),
    "insert": (lambda x: jnp.insert(x, 1, 9.0, axis=0), lambda x: np.insert(x, 1, 9.0, axis=0),
               (F,)),
    "insert_indices": (lambda x: jnp.insert(x, np.array([3, 0, 3]), x[0, :3], axis=1),
                       lambda x: np.insert(x, [3, 0, 3], x[0, :3], axis=1), (F,)),
    "insert_column": (lambda x: jnp.insert(x, -1, x[:, 0], axis=1),
                      lambda x: np.insert(x, -1, x[:, 0], axis=1), (F,)),
    "insert_slice": (lambda x: jnp.insert(x, slice(0, 2), 7.0, axis=0),
                     lambda x: np.insert(x, slice(0, 2), 7.0, axis=0), (F,)),
    "choose": (lambda i: jnp.choose(i, [F, P, U], mode="wrap"),  # ('raise' needs no jit)
               lambda i: np.choose(i, [F, P, U], mode="wrap"), (np.abs(I) % 5,)),
    "convolve": (jnp.convolve, np.convolve, (ROW, ROW[:3])),
    "convolve_same": (lambda a, v: jnp.convolve(a, v, "same"),
                      lambda a, v: np.convolve(a, v, "same"), (ROW, ROW[:3])),
    "convolve_valid": (lambda a, v: jnp.convolve(a, v, "valid"),
                       lambda a, v: np.convolve(a, v, "valid"), (ROW, ROW[:3])),
    "correlate": (jnp.correlate, np.correlate, (ROW, ROW[:3])),
    "correlate_full_short_first": (lambda a, v: jnp.correlate(a, v, "full"),
                                   lambda a, v: np.correlate(a, v, "full"), (ROW[:2], ROW)),
    "correlate_same_short_first": (lambda a, v: jnp.correlate(a, v, "same"),
                                   lambda a, v: np.correlate(a, v, "same"), (ROW[:2], ROW)),
    "correlate_same": (lambda a, v: jnp.correlate(a, v, "same"),
                       lambda a, v: np.correlate(a, v, "same"), (ROW, ROW[:2])),
    "polyval": (lambda x: jnp.polyval(np.array([1.0, -2.0, 3.0], np.float32), x),
                lambda x: np.polyval(np.array([1.0, -2.0, 3.0], np.float32), x), (F,)),
    "ediff1d": (jnp.ediff1d, np.ediff1d, (F,)),
    "vectorize": (lambda x, y: jnp.vectorize(lambda a, b: jnp.where(a > b, a - b, a * b))(x, y),
                  lambda x, y: np.where(x > y, x - y, x * y), (F, ROW)),
    "apply_along_axis": (lambda x: jnp.apply_along_axis(lambda v: v[::-1].cumsum(), 0, x),
                         lambda x: np.apply_along_axis(lambda v: v[::-1].cumsum(), 0, x), (F,)),
    "apply_along_axis_scalar": (lambda x: jnp.apply_along_axis(jnp.max, 1, x),
                                lambda x: np.apply_along_axis(np.max, 1, x), (F,)),
}


@pytest.mark.parametrize("name", list(EXTRAS))
def test_extra_functions_match_numpy(name):
  fn, np_fn, args = EXTRAS[name]
  check(fn, np_fn, *args, rtol=1e-5, atol=1e-5)


def test_where_nonzero_and_friends():
  assert_close(jnp.where(F > 0, 1.0, -1.0), np.where(F > 0, 1.0, -1.0))
  assert_close(jnp.nonzero(B), np.nonzero(B))
  assert_close(jnp.where(B), np.where(B))
  assert_close(jnp.argwhere(I > 2), np.argwhere(I > 2))
  assert_close(jnp.flatnonzero(B), np.flatnonzero(B))
  assert_close(jnp.nonzero(np.array([0, 3, 0, 4]), size=3), (np.array([1, 3, 0]),))
  assert jnp.isscalar(jnp.asarray(1.0)) and not jnp.isscalar(jnp.asarray(F))
  assert jnp.pi == np.pi and np.isnan(jnp.nan) and jnp.inf == np.inf
  assert np.dtype(jnp.float32) == np.float32 and jnp.dtype(jnp.bfloat16) == bf16
  assert isinstance(jnp.ones(2), jnp.ndarray)
  assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and not jnp.issubdtype(bf16, jnp.integer)
  assert jnp.issubdtype(np.int8, jnp.signedinteger) and jnp.finfo(jnp.bfloat16).bits == 16
  out = minijax.jit(lambda v: (jnp.float32(v) * 2, isinstance(v, jnp.ndarray)))(3)
  assert out[0].dtype == np.float32 and float(out[0]) == 6.0 and out[1]


@pytest.mark.parametrize("axis, weights", [(0, [1.0, 2.0]), (1, [1.0, 2.0, 3.0]), (-1, [3.0, 2.0, 1.0])])
def test_average_with_1d_weights_along_an_axis_matches_numpy(axis, weights):
  a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(jnp.average(a, axis=axis, weights=weights),
                             np.average(a, axis=axis, weights=weights), rtol=1e-6)
  with pytest.raises(ValueError, match="weights do not match axis"):
    jnp.average(a, axis=axis, weights=[1.0] * 5)


def test_piecewise_takes_the_last_true_condition_casts_to_x_and_differentiates():
  x = np.linspace(-2.5, 2.5, 6, dtype=np.float32)
  cases = [([x < 0, x >= 0], [-1, 1]),
           ([x < 0, x > 0], [lambda v: -v, lambda v: v ** 2, 7.0]),
           ([x < 1, x < 0], [lambda v: v * 10, lambda v: v * 100])]
  for conds, funcs in cases:
    got = jnp.piecewise(x, conds, funcs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.piecewise(x, conds, funcs), rtol=1e-6)
  i = np.arange(5)
  np.testing.assert_array_equal(jnp.piecewise(i, i > 2, [lambda v: v * 2]), [0, 0, 0, 6, 8])
  jitted = minijax.jit(lambda v: jnp.piecewise(v, [v < 0], [jnp.sin, jnp.cos]))(x)
  np.testing.assert_allclose(jitted, np.piecewise(x, [x < 0], [np.sin, np.cos]), rtol=1e-6)
  g = minijax.grad(lambda v: jnp.piecewise(v, [v < 0], [jnp.sin, lambda u: u * u]).sum())(x)
  np.testing.assert_allclose(g, np.where(x < 0, np.cos(x), 2 * x), rtol=1e-6)
  with pytest.raises(ValueError, match="either 1 or 2 functions are expected; got 3"):
    jnp.piecewise(x, [x < 0], [1, 2, 3])


def test_reshape_in_column_major_order_as_numpy():
  """`order='F'` reads and places elements column-major (optax's microbatching reshapes
  so); other orders raise rather than reshape row-major."""
  x = np.arange(24.).reshape(2, 3, 4)
  for shape in [(4, 6), (-1,), (3, -1, 2), 24]:
    np.testing.assert_array_equal(jnp.reshape(x, shape, order="F"), x.reshape(shape, order="F"))
    np.testing.assert_array_equal(jnp.asarray(x).reshape(shape, order="F"),
                                  x.reshape(shape, order="F"))
  got = minijax.jit(lambda a: a.reshape(-1, 4, order="F", out_sharding=None))(x)
  np.testing.assert_array_equal(got, x.reshape(-1, 4, order="F"))
  with pytest.raises(NotImplementedError, match="order='A'"):
    jnp.reshape(x, (24,), order="A")


def test_repeat_with_traced_repeats_under_jit_takes_the_static_total_length():
  # gradbench's GMM objective: repeats computed inside jit, the total length static
  d = 5
  tri = minijax.jit(lambda: jnp.repeat(jnp.arange(d - 1), jnp.arange(d - 1, 0, -1),
                                       total_repeat_length=d * (d - 1) // 2))
  np.testing.assert_array_equal(tri(), np.repeat(np.arange(d - 1), np.arange(d - 1, 0, -1)))
  rows = minijax.jit(lambda r: jnp.repeat(jnp.array([[1, 2], [3, 4]]), r, axis=1,
                                          total_repeat_length=5))
  # JAX's rule: cut to the total length, or filled out with the last element
  np.testing.assert_array_equal(rows(jnp.array([1, 3])), [[1, 2, 2, 2, 2], [3, 4, 4, 4, 4]])
  np.testing.assert_array_equal(rows(jnp.array([4, 4])), [[1, 1, 1, 1, 2], [3, 3, 3, 3, 4]])
  np.testing.assert_array_equal(rows(jnp.array([0, 2])), [[2, 2, 2, 2, 2], [4, 4, 4, 4, 4]])
  np.testing.assert_array_equal(jnp.repeat(jnp.arange(3), 2, total_repeat_length=4), [0, 0, 1, 1])
  grad = minijax.grad(lambda x: jnp.repeat(x, jnp.array([1, 2, 0]), total_repeat_length=3).sum())
  np.testing.assert_array_equal(grad(jnp.arange(3.0)), [1.0, 2.0, 0.0])
  batched = minijax.vmap(lambda r: jnp.repeat(jnp.arange(3), r, total_repeat_length=4))
  np.testing.assert_array_equal(batched(jnp.array([[1, 2, 1], [0, 0, 4]])),
                                [[0, 1, 1, 2], [2, 2, 2, 2]])
  with pytest.raises(minijax.errors.ConcretizationTypeError, match="total_repeat_length"):
    minijax.jit(lambda r: jnp.repeat(jnp.arange(3), r))(jnp.array([1, 1, 1]))
  with pytest.raises(ValueError, match="one repeat per element"):
    jnp.repeat(jnp.arange(3), jnp.array([1, 2]), total_repeat_length=3)


# Issue 31: functions that computed something else than asked (JAX's answers, recorded).
def test_take_honours_its_mode_and_fill_value_as_jax():
  a = np.arange(5.0, dtype=np.float32)
  idx = np.array([-1, -5, -6, 4, 5, 7])
  nan = np.nan
  np.testing.assert_array_equal(jnp.take(a, idx), [4, 0, nan, 4, nan, nan])
  np.testing.assert_array_equal(jnp.take(a, idx, mode="fill"), [4, 0, nan, 4, nan, nan])
  np.testing.assert_array_equal(jnp.take(a, idx, mode="clip"), [0, 0, 0, 4, 4, 4])
  np.testing.assert_array_equal(jnp.take(a, idx, mode="wrap"), [4, 0, 4, 4, 0, 2])
  np.testing.assert_array_equal(jnp.take(a, idx, fill_value=-3.0), [4, 0, -3, 4, -3, -3])
  assert np.asarray(jnp.take(np.arange(5), np.array([-6, 7]))).tolist() == [-2**31, -2**31]
  assert np.asarray(jnp.take(np.arange(5, dtype=np.uint8), np.array([9]))).tolist() == [255]
  assert np.asarray(jnp.take(np.array([False]), np.array([3]))).tolist() == [True]
  x = np.arange(12.0, dtype=np.float16).reshape(3, 4)
  np.testing.assert_array_equal(jnp.take(x, np.array([[0, 5], [-1, 2]]), axis=1),
                                [[[0, nan], [3, 2]], [[4, nan], [7, 6]], [[8, nan], [11, 10]]])
  i = np.array([[3, -4], [7, 1]])
  for mode in ("clip", "wrap"):  # as numpy's (whose "clip" also clamps -4 to 0)
    for axis in (None, 0, 1):
      np.testing.assert_array_equal(jnp.take(x, i, axis=axis, mode=mode),
                                    np.take(x, i, axis=axis, mode=mode))
  with pytest.raises(NotImplementedError, match="'raise' mode"):
    jnp.take(a, idx, mode="raise")
  with pytest.raises(ValueError, match="Invalid mode 'bad'"):
    jnp.take(a, idx, mode="bad")
  np.testing.assert_array_equal(minijax.jit(lambda a, i: jnp.take(a, i))(a, idx),
                                [4, 0, nan, 4, nan, nan])


def test_take_along_axis_fills_or_clips_out_of_bounds_indices_as_jax():
  a = np.arange(5.0, dtype=np.float32)
  idx = np.array([-1, -5, -6, 4, 5, 7])
  np.testing.assert_array_equal(jnp.take_along_axis(a, idx, 0), [4, 0, np.nan, 4, np.nan,
                                                                  np.nan])
  np.testing.assert_array_equal(jnp.take_along_axis(a, idx, 0, mode="clip"), [4, 0, 0, 4, 4, 4])
  assert np.asarray(jnp.take_along_axis(np.arange(5), np.array([-6, 7]), 0)).tolist() == [
      -2**31, -2**31]
  with pytest.raises(ValueError, match='Unknown gather mode "wrap"'):
    jnp.take_along_axis(a, idx, 0, mode="wrap")


def test_delete_takes_a_boolean_mask_and_checks_its_indices():
  a = np.arange(8)
  mask = np.array([True, False, True, True, False, False, True, False])
  np.testing.assert_array_equal(jnp.delete(a, mask), np.delete(a, mask))
  np.testing.assert_array_equal(jnp.delete(a.reshape(2, 4), mask[:4], axis=1),
                                np.delete(a.reshape(2, 4), mask[:4], axis=1))
  np.testing.assert_array_equal(jnp.delete(a, np.array([1, 1, -1])), [0, 2, 3, 4, 5, 6])
  np.testing.assert_array_equal(jnp.delete(a, slice(1, 5, 2)), [0, 2, 4, 5, 6, 7])
  with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 8"):
    jnp.delete(a, 9)
  with pytest.raises(ValueError, match="for boolean indices, obj must be one-dimensional"):
    jnp.delete(a, np.array([True]))
  with pytest.raises(TypeError, match="delete requires ndarray or scalar arguments"):
    jnp.delete(a, [1, 2])  # as JAX: a list is not an array
  deleted = minijax.jit(lambda a, o: jnp.delete(a, o, assume_unique_indices=True))
  np.testing.assert_array_equal(deleted(a, np.array([1, 3])), [0, 2, 4, 5, 6, 7])
  with pytest.raises(minijax.errors.ConcretizationTypeError, match="assume_unique_indices"):
    minijax.jit(lambda a, o: jnp.delete(a, o))(a, np.array([1, 3]))


def test_bincount_gives_exactly_length_bins():
  x = np.array([1, 3, 3, 7, 2])
  assert np.asarray(jnp.bincount(x, length=5)).tolist() == [0, 1, 1, 2, 0]
  assert np.asarray(jnp.bincount(x, minlength=10, length=4)).tolist() == [0, 1, 1, 2]
  assert np.asarray(jnp.bincount(x, minlength=3)).tolist() == [0, 1, 1, 2, 0, 0, 0, 1]
  assert np.asarray(jnp.bincount(np.array([-1, 2]), length=4)).tolist() == [1, 0, 1, 0]
  assert np.asarray(minijax.jit(lambda x: jnp.bincount(x, length=3))(x)).tolist() == [0, 1, 1]
  with pytest.raises(TypeError, match="integer type"):
    jnp.bincount(np.array([1.0]))


@pytest.mark.parametrize("jit", [False, True])
def test_nonzero_and_argwhere_with_size_cut_or_fill_even_under_jit(jit):
  x = np.array([[0, 1, 0], [2, 0, 3]])
  run = minijax.jit if jit else (lambda f: f)
  rows, cols = run(lambda x: jnp.nonzero(x, size=5, fill_value=(-1, -2)))(x)
  assert np.asarray(rows).tolist() == [0, 1, 1, -1, -1]
  assert np.asarray(cols).tolist() == [1, 0, 2, -2, -2]
  assert np.asarray(run(lambda x: jnp.argwhere(x, size=2))(x)).tolist() == [[0, 1], [1, 0]]
  assert np.asarray(run(lambda x: jnp.argwhere(x, size=4, fill_value=7))(x)).tolist() == [
      [0, 1], [1, 0], [1, 2], [7, 7]]
  assert np.asarray(run(lambda x: jnp.flatnonzero(x, size=4, fill_value=9))(x)).tolist() == [
      1, 3, 5, 9]
  assert jnp.argwhere(np.array(3), size=2).shape == (2, 0)
  # the fill promotes the indices as `where` would (pgx's backgammon fills with NaN)
  (filled,) = run(lambda x: jnp.nonzero(x[1], size=4, fill_value=jnp.nan))(x)
  assert filled.dtype == np.float32 and np.asarray(filled)[:2].tolist() == [0, 2]
  assert np.isnan(np.asarray(filled)[2:]).all()
  with pytest.raises(ValueError, match="fill_value must be a scalar or a tuple of length 2"):
    run(lambda x: jnp.nonzero(x, size=5, fill_value=[1, 2]))(x)


@pytest.mark.parametrize("jit", [False, True])
def test_roll_by_traced_shifts_and_shifts_broadcast_against_axes(jit):
  # pgx's othello rolls by a shift it reads from an array inside a loop
  x = np.arange(12).reshape(3, 4)
  run = minijax.jit if jit else (lambda f: f)
  for shift, axis in [(5, 1), (-7, 0), ((1, -2), (0, 1)), ((1, 2), 1), (2, (0, 1)), (3, None)]:
    out = run(lambda x, s: jnp.roll(x, s, axis=axis))(x, np.array(shift))
    np.testing.assert_array_equal(out, np.roll(x, shift, axis=axis))
  rolled = minijax.vmap(lambda s: jnp.roll(x[0], s))(np.arange(-2, 3))
  np.testing.assert_array_equal(rolled, [np.roll(x[0], s) for s in range(-2, 3)])
  with pytest.raises(ValueError, match="got 3 shifts for 2 axes"):
    jnp.roll(x, (1, 2, 3), axis=(0, 1))


def test_promote_types_does_not_narrow_and_result_type_narrows_its_operands_first():
  # JAX 0.10.2 without x64: promote_types keeps what its operands ask for ...
  assert jnp.promote_types(np.int8, np.int64) == np.int64
  assert jnp.promote_types(np.float64, np.complex64) == np.complex128
  assert jnp.promote_types(np.uint64, np.int8) == np.float64
  assert jnp.promote_types(np.uint32, np.int8) == np.int32
  # ... while result_type narrows 64-bit operands first: int8 and uint32 meet at int64 -> int32
  assert jnp.result_type(np.int8, np.uint64) == np.int32
  assert jnp.result_type(np.complex128, np.float32) == np.complex64
  # Python's types int, float and complex are weak, as their values are (float32 and float
  # met at float64, and int8 and int at int64)
  assert jnp.result_type(np.float32, float) == jnp.result_type(np.float32, 1.0) == np.float32
  assert jnp.result_type(np.int8, int) == np.int8 and jnp.result_type(np.float16, int) == np.float16
  assert jnp.result_type(complex, np.float32) == np.complex64
  assert jnp.result_type(np.float16, np.dtype(np.float32)) == np.float32  # (a dtype is strong)
  assert jnp.result_type(int, float) == jnp.result_type(float) == jnp.array(1.0).dtype


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, on its empty rows
def test_reductions_honour_where_keepdims_and_initial_as_jax():
  a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  w = a > 4
  # var/std over the `where` positions only (they ignored `where`); numpy agrees
  np.testing.assert_allclose(jnp.var(a, where=w), np.var(a, where=w), rtol=1e-6)
  np.testing.assert_allclose(jnp.std(a, axis=1, where=w, keepdims=True),
                             np.std(a, axis=1, where=w, keepdims=True), rtol=1e-6)
  got = np.asarray(jnp.var(a, axis=0, where=w, ddof=1))
  assert np.isnan(got[0]) and np.allclose(got[1:], 8.0)  # one element, ddof 1: NaN
  # median keeps every reduced axis with keepdims, and takes a tuple of axes
  assert jnp.median(a, keepdims=True).shape == (1, 1)
  np.testing.assert_allclose(jnp.median(a, axis=(0, 1)), np.median(a), rtol=1e-6)
  np.testing.assert_allclose(jnp.quantile(a, np.array([0.25, 0.5]), axis=0, keepdims=True),
                             np.quantile(a, [0.25, 0.5], axis=0, keepdims=True), rtol=1e-6)
  # max/min with an initial keep the array's dtype (JAX's), bools and ints alike
  i = np.arange(6, dtype=np.int32).reshape(2, 3) - 3
  assert jnp.max(i, initial=1.0).dtype == np.int32 and int(jnp.max(i, initial=1.0)) == 2
  assert jnp.min(i > 0, initial=True).dtype == np.bool_
  # trapezoid integrates booleans as numbers, unravel_index clips as JAX does
  np.testing.assert_allclose(jnp.trapezoid(np.array([True, False, True]), axis=0), 1.0)
  assert [np.asarray(c).tolist() for c in jnp.unravel_index(np.array([5, -1, 13]), (3, 4))] == [
      [1, 2, 2], [1, 3, 3]]


def test_integer_division_cumulative_dtypes_and_promotions_are_jaxs():
  # JAX 0.10.2's answers, division by zero included (x % 0 is 0; x // 0 follows its rule)
  a, b = np.array([3, -3, 0, 5, -5, 7], np.int32), np.array([0, 0, 0, -2, 2, 3], np.int32)
  assert np.asarray(jnp.floor_divide(a, b)).tolist() == [-2, -2, -1, -3, -3, 2]
  assert np.asarray(jnp.remainder(a, b)).tolist() == [0, 0, 0, -1, 1, 1]
  assert np.asarray(jnp.fmod(a, b)).tolist() == [0, 0, 0, 1, -1, 1]
  u = np.array([3, 5, 0], np.uint32)
  assert np.asarray(jnp.floor_divide(u, np.array([0, 2, 0], np.uint32))).tolist() == [
      2**32 - 1, 2, 2**32 - 1]
  # cumulative sums and products keep narrow integers (and wrap), booleans count as int32
  assert np.asarray(jnp.cumsum(np.array([200, 100], np.uint8))).tolist() == [200, 44]
  assert jnp.cumprod(np.ones(2, np.int8)).dtype == np.int8
  assert jnp.cumsum(np.ones(2, bool)).dtype == np.int32
  # integers become floats where numpy's function is a float one
  np.testing.assert_array_equal(jnp.reciprocal(np.array([1, 2, -1])), [1.0, 0.5, -1.0])
  assert jnp.rint(np.array([1, 2])).dtype == np.float32
  assert jnp.square(np.array([True])).dtype == np.int32
  # ediff1d puts to_begin/to_end around the differences
  assert np.asarray(jnp.ediff1d(np.array([1, 4, 9]), 2)).tolist() == [3, 5, 2]
  assert np.asarray(jnp.ediff1d(np.array([1, 4, 9]), to_begin=np.array([7, 8]))).tolist() == [
      7, 8, 3, 5]
  # both operands promote together before any arithmetic
  h, f = np.array([0.5, 1.0], np.float16), np.array([0.25, 3.0], np.float32)
  assert jnp.cov(h, f).dtype == np.float32
  np.testing.assert_allclose(jnp.logaddexp2(h, f), np.logaddexp2(h.astype(np.float32), f),
                             rtol=1e-6)
  np.testing.assert_allclose(jnp.nanvar(np.array([1 + 1j, 2], np.complex64)), 0.5, rtol=1e-6)


def test_insert_takes_traced_indices_and_refuses_what_numpy_refuses():
  f = minijax.jit(lambda i, v: jnp.insert(jnp.arange(4), i, v))
  np.testing.assert_array_equal(f(2, 9), [0, 1, 9, 2, 3])
  np.testing.assert_array_equal(f(np.array([0, 4]), np.array([7, 8])), [7, 0, 1, 2, 3, 8])
  with pytest.raises(ValueError, match="obj must be a slice, a one-dimensional array"):
    jnp.insert(np.arange(3), np.array([[1]]), 0)
  with pytest.raises(ValueError, match="index array must be integer typed"):
    jnp.insert(np.arange(3), np.array([1.5]), 0)
  with pytest.raises(TypeError, match="insert: argument of type list"):
    jnp.insert(np.arange(3), [1], 0)
