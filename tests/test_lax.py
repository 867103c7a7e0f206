"""Every lax primitive eagerly against numpy and under jit against eager, across dtypes and
shapes (scalars and zero-size arrays included).  Adding a primitive adds a row to a table.

To keep compiles (the dominant cost) down, each row runs jit once, on its first dtype and
shape; the other dtypes and shapes run eagerly.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import minijax
from minijax import lax
import minijax.numpy as jnp

bf16 = np.dtype(ml_dtypes.bfloat16)
f32, i32, u8, b = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(bool)
_rng = np.random.default_rng(0)


# These tables state 32-bit results; tests that want 64-bit types ask for `x64`.
pytestmark = pytest.mark.usefixtures("x64_off")


def sample(shape, dtype, domain="any"):
  dtype = np.dtype(dtype)
  if dtype == b:
    return _rng.random(shape) < 0.5
  if np.issubdtype(dtype, np.integer):
    lo = 1 if domain in ("pos", "nonzero") else (0 if np.issubdtype(dtype, np.unsignedinteger)
                                                 else -5)
    x = _rng.integers(lo, 6, shape).astype(dtype)
    return x
  if domain == "pos":
    x = _rng.uniform(0.5, 3.0, shape)
  elif domain == "nonzero":
    x = _rng.uniform(0.5, 3.0, shape) * _rng.choice([-1, 1], shape)
  elif domain == "unit":
    x = _rng.uniform(-0.9, 0.9, shape)
  else:
    x = _rng.standard_normal(shape) * 2
  return np.asarray(x).astype(dtype)


def tolerance(dtype):
  dtype = np.dtype(dtype)
  if dtype == bf16:
    return dict(rtol=2e-2, atol=2e-2)
  if dtype == np.float16:
    return dict(rtol=2e-3, atol=2e-3)
  if dtype == np.float64:
    return dict(rtol=1e-12, atol=1e-12)
  return dict(rtol=2e-5, atol=2e-6)


def assert_close(actual, expected, dtype=None):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  if dtype is not None:
    assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
  if actual.dtype.kind in "fcV" or actual.dtype == bf16:
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               **tolerance(actual.dtype), equal_nan=True)
  else:
    np.testing.assert_array_equal(actual, expected)


def check(fn, args, expected, out_dtype=None, jit=True):
  out = fn(*args)
  assert_close(out, expected, out_dtype)
  if jit:
    assert_close(minijax.jit(fn)(*args), np.asarray(out))
  return out


def _round_away(x):
  return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _trunc_div(x, y):
  if np.issubdtype(x.dtype, np.integer):
    return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)
  return x / y


FLOATS = (f32, bf16)
NUMBERS = (f32, i32, bf16)
INTS = (i32, u8, b)
SHAPES = ((2, 3), (), (0, 3))

# name -> (lax function, numpy reference, dtypes, domain)
UNARY = {
    "neg": (lax.neg, np.negative, (f32, i32), "any"),
    "abs": (lax.abs, np.abs, NUMBERS, "any"),
    "sign": (lax.sign, np.sign, (f32, i32, u8), "any"),
    "floor": (lax.floor, np.floor, FLOATS, "any"),
    "ceil": (lax.ceil, np.ceil, FLOATS, "any"),
    "round": (lax.round, _round_away, FLOATS, "any"),
    "round_even": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.round,
                   (f32,), "any"),
    "exp": (lax.exp, np.exp, FLOATS, "any"),
    "log": (lax.log, np.log, FLOATS, "pos"),
    "log1p": (lax.log1p, np.log1p, FLOATS, "pos"),
    "expm1": (lax.expm1, np.expm1, FLOATS, "any"),
    "sin": (lax.sin, np.sin, FLOATS, "any"),
    "cos": (lax.cos, np.cos, FLOATS, "any"),
    "tan": (lax.tan, np.tan, FLOATS, "unit"),
    "tanh": (lax.tanh, np.tanh, FLOATS, "any"),
    "sqrt": (lax.sqrt, np.sqrt, FLOATS, "pos"),
    "rsqrt": (lax.rsqrt, lambda x: 1 / np.sqrt(x), FLOATS, "pos"),
    "logistic": (lax.logistic, lambda x: 1 / (1 + np.exp(-x)), FLOATS, "any"),
    "is_finite": (lax.is_finite, np.isfinite, FLOATS, "any"),
    "erf": (lax.erf, np.vectorize(__import__("math").erf, otypes=[np.float64]), FLOATS, "any"),
    "not": (lax.bitwise_not, np.invert, INTS, "any"),
    "integer_pow_3": (lambda x: lax.integer_pow(x, 3), lambda x: x ** 3, (f32, i32), "any"),
    "integer_pow_0": (lambda x: lax.integer_pow(x, 0), lambda x: x ** 0, (f32,), "any"),
    "integer_pow_-2": (lambda x: lax.integer_pow(x, -2), lambda x: 1 / x ** 2, (f32,), "pos"),
    "copy": (lax.copy, lambda x: x, (f32, i32, b), "any"),
    "stop_gradient": (lax.stop_gradient, lambda x: x, (f32,), "any"),
}

BINARY = {
    "add": (lax.add, np.add, NUMBERS, "any"),
    "sub": (lax.sub, np.subtract, NUMBERS, "any"),
    "mul": (lax.mul, np.multiply, NUMBERS, "any"),
    "div": (lax.div, _trunc_div, (f32, i32), "nonzero"),
    "rem": (lax.rem, np.fmod, (f32, i32), "nonzero"),
    "max": (lax.max, np.maximum, (f32, i32, b), "any"),
    "min": (lax.min, np.minimum, (f32, i32, b), "any"),
    "pow": (lax.pow, np.power, (f32,), "pos"),
    "atan2": (lax.atan2, np.arctan2, (f32,), "nonzero"),
    "eq": (lax.eq, np.equal, (f32, i32, b), "any"),
    "ne": (lax.ne, np.not_equal, (f32, i32, b), "any"),
    "lt": (lax.lt, np.less, (f32, i32, u8), "any"),
    "le": (lax.le, np.less_equal, (f32, i32), "any"),
    "gt": (lax.gt, np.greater, (f32, i32), "any"),
    "ge": (lax.ge, np.greater_equal, (f32, bf16), "any"),
    "and": (lax.bitwise_and, np.bitwise_and, INTS, "any"),
    "or": (lax.bitwise_or, np.bitwise_or, INTS, "any"),
    "xor": (lax.bitwise_xor, np.bitwise_xor, INTS, "any"),
    "shift_left": (lax.shift_left, lambda x, y: np.left_shift(x, y % 8), (i32,), "pos"),
    "shift_right_arithmetic": (lax.shift_right_arithmetic,
                               lambda x, y: np.right_shift(x, y % 8), (i32,), "pos"),
    "shift_right_logical": (lax.shift_right_logical,
                            lambda x, y: np.right_shift(x.astype(np.uint32),
                                                        (y % 8).astype(np.uint32)).astype(x.dtype),
                            (i32,), "pos"),
}


def _cases(table):
  return [pytest.param(name, id=name) for name in table]


def _ref(np_fn, *args):
  with np.errstate(all="ignore"):
    wide = [a.astype(np.float32) if a.dtype == bf16 else a for a in args]
    return np.asarray(np_fn(*wide))


@pytest.mark.parametrize("name", _cases(UNARY))
def test_unary_primitive_matches_numpy_eagerly_and_under_jit(name):
  fn, np_fn, dts, domain = UNARY[name]
  for k, dtype in enumerate(dts):
    for j, shape in enumerate(SHAPES):
      if k and j:
        continue
      x = sample(shape, dtype, domain)
      expected = _ref(np_fn, x)
      out = fn(x)
      if expected.dtype != np.dtype(bool):
        expected = expected.astype(np.asarray(out).dtype)
      check(fn, (x,), expected, jit=(k == 0 and j == 0))


@pytest.mark.parametrize("name", _cases(BINARY))
def test_binary_primitive_matches_numpy_eagerly_and_under_jit(name):
  fn, np_fn, dts, domain = BINARY[name]
  for k, dtype in enumerate(dts):
    for j, shape in enumerate(SHAPES):
      if k and j:
        continue
      x, y = sample(shape, dtype, "any" if name != "pow" else "pos"), sample(shape, dtype,
                                                                             domain)
      if name.startswith("shift"):
        y = (y % 8).astype(dtype)
      expected = _ref(np_fn, x, y)
      out = fn(x, y)
      expected = expected.astype(np.asarray(out).dtype)
      check(fn, (x, y), expected, jit=(k == 0 and j == 0))


@pytest.mark.parametrize("side", ["rank0_x", "rank0_y"])
@pytest.mark.parametrize("name", _cases(BINARY))
def test_binary_primitive_takes_a_rank0_operand_on_either_side(name, side):
  fn, np_fn, dts, domain = BINARY[name]
  for dtype in dts[:2]:
    x, y = sample((2, 3), dtype, "any" if name != "pow" else "pos"), sample((2, 3), dtype,
                                                                           domain)
    if name.startswith("shift"):
      y = (y % 8).astype(dtype)
    if side == "rank0_x":
      x = np.asarray(x[1, 2])
    else:
      y = np.asarray(y[1, 2])
    expected = _ref(np_fn, x, y)
    out = check(fn, (x, y), expected.astype(np.asarray(fn(x, y)).dtype))
    assert out.shape == (2, 3)


def test_binary_ops_broadcast_rank0_operands_and_size1_axes():
  """JAX 0.10.2's lax: rank-0 operands and size-1 axes (at one rank) broadcast, in one
  equation; values, gradients and batching as JAX gives them."""
  x3 = np.ones(3, np.float32)
  assert lax.add(x3, np.float32(2)).shape == (3,)
  assert lax.eq(np.float32(1), x3).shape == (3,)
  assert lax.add(x3, np.ones(1, np.float32)).shape == (3,)
  a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  b = np.arange(1.0, 4.0, dtype=np.float32).reshape(3, 1)
  c = np.arange(1.0, 5.0, dtype=np.float32).reshape(1, 4)
  np.testing.assert_array_equal(lax.sub(a, b), a - b)
  np.testing.assert_array_equal(minijax.jit(lax.mul)(b, c), b * c)
  np.testing.assert_array_equal(lax.shift_left(np.ones((3, 4), np.int32), np.ones((3, 1), np.int32)),
                                np.full((3, 4), 2))
  assert "add a b" in str(minijax.make_jaxpr(lax.add)(a, b))
  np.testing.assert_array_equal(minijax.grad(lambda b: lax.mul(a, b).sum())(b), [[6], [22], [38]])
  np.testing.assert_allclose(minijax.grad(lambda c: lax.pow(b, c).sum())(c),
                             [[4.682131, 12.6601, 35.20771, 100.07795]], rtol=1e-6)
  np.testing.assert_array_equal(minijax.linear_transpose(lambda x: lax.add(x, a), b)(a)[0],
                                [[6], [22], [38]])
  assert minijax.vmap(lambda x: lax.add(x, a))(np.ones((2, 3, 1), np.float32)).shape == (2, 3, 4)
  assert minijax.vmap(lax.mul, in_axes=(0, 1))(np.ones((2, 3, 1), np.float32),
                                               np.ones((1, 2, 4), np.float32)).shape == (2, 3, 4)
  np.testing.assert_allclose(lax.igamma(np.ones((3, 4), np.float32), b[:, :1] * 0 + 1),
                             np.full((3, 4), 0.63212019), rtol=1e-6)
  with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: "
                                      r"\(3,\), \(2,\). Rank-0 operands and size-1 axes"):
    lax.add(x3, np.ones(2, np.float32))
  with pytest.raises(TypeError, match=r"mul: arrays must have the same number of dimensions, "
                                      r"got \{1, 2\} \(float32\[\], float32\[2,3\], "
                                      r"float32\[3\]\)"):
    minijax.make_jaxpr(lambda a, b, c: lax.mul_p.bind(a, b, c))(
        np.float32(1), np.ones((2, 3), np.float32), x3)


def test_rank0_operands_lower_to_a_splat_constant_or_a_broadcast():
  x = np.ones(3, np.float32)
  text = minijax.jit(lambda v: lax.mul(v, 2.0)).lower(x).as_text()
  assert "mhlo.constant dense<2.000000e+00> : tensor<3xf32>" in text
  assert "broadcast_in_dim" not in text
  assert_close(minijax.jit(lambda v: lax.mul(v, 2.0))(x), 2 * x)
  c = minijax.device_put(np.float32(3.0))  # one rank-0 constant, used twice
  assert_close(minijax.jit(lambda v: lax.add(lax.mul(v, c), c))(x), np.full(3, 6.0))
  text = minijax.jit(lax.lt).lower(np.float32(0), x).as_text()
  assert "mhlo.broadcast_in_dim" in text and "mhlo.compare" in text
  assert_close(minijax.jit(lax.lt)(np.float32(0.5), np.arange(3, dtype=np.float32)),
               np.array([False, True, True]))


def test_binary_ops_take_python_scalars_in_the_arrays_dtype():
  x = np.arange(4, dtype=np.float32)
  out = lax.add(x, 1)
  assert out.dtype == np.float32 and not out.weak_type
  assert_close(out, x + 1)
  xb = x.astype(bf16)
  assert lax.mul(2.0, xb).dtype == bf16
  assert lax.sub(np.int32(3), 1).dtype == np.int32


def test_binary_ops_reject_mismatched_shapes_and_dtypes():
  with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)"):
    lax.add(np.ones(3, np.float32), np.ones(4, np.float32))
  with pytest.raises(TypeError, match=r"lax.mul requires arguments to have the same dtypes, got"):
    lax.mul(np.ones(3, np.float32), np.ones(3, np.int32))
  with pytest.raises(TypeError, match="sin does not accept dtype int32"):
    lax.sin(np.ones(3, np.int32))


# ---- structural primitives: name -> (function, arguments, numpy reference)
A23 = sample((2, 3), f32)
A234 = sample((2, 3, 4), f32)
I23 = sample((2, 3), i32)
B23 = sample((2, 3), b)
E03 = np.zeros((0, 3), np.float32)


def _np_pad(x, config, value=0):
  out = x
  for axis, (lo, hi, interior) in enumerate(config):
    n = out.shape[axis]
    if interior and n:
      idx = np.repeat(np.arange(1, n), interior)
      out = np.insert(out, idx, value, axis=axis)
    pads = [(0, 0)] * out.ndim
    pads[axis] = (max(lo, 0), max(hi, 0))
    out = np.pad(out, pads, constant_values=value)
    sl = [slice(None)] * out.ndim
    sl[axis] = slice(max(-lo, 0), out.shape[axis] - max(-hi, 0))
    out = out[tuple(sl)]
  return out


def _np_dus(x, u, starts):
  out = x.copy()
  starts = [min(max(s, 0), n - m) for s, n, m in zip(starts, x.shape, u.shape)]
  out[tuple(slice(s, s + m) for s, m in zip(starts, u.shape))] = u
  return out


IDX = np.array([[1], [0], [1], [1]], np.int32)
GATHER_DN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                       start_index_map=(0,))
SCATTER_DN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
UPD = sample((4, 3), f32)


def _np_scatter(op, x, idx, upd):
  out = x.copy()
  for i, row in zip(idx[:, 0], upd):
    out[i] = op(out[i], row)
  return out


NAN_ROW = np.array([[1.0, np.nan, 3.0, 3.0], [2.0, 2.0, -1.0, 0.5]], np.float32)

STRUCTURAL = {
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)), (A23,),
                         lambda x: np.broadcast_to(x, (4, 2, 3))),
    "broadcast_in_dim_size1": (lambda x: lax.broadcast_in_dim(x[:1], (2, 5, 3), (0, 2)),
                               (A23,), lambda x: np.broadcast_to(x[:1, None, :], (2, 5, 3))),
    "broadcast_scalar": (lambda x: lax.broadcast(x, (2, 2)), (np.float32(3),),
                         lambda x: np.full((2, 2), x)),
    "reshape": (lambda x: lax.reshape(x, (4, 6)), (A234,), lambda x: x.reshape(4, 6)),
    "reshape_dims": (lambda x: lax.reshape(x, (3, 2), (1, 0)), (A23,),
                     lambda x: x.T.reshape(3, 2)),
    "reshape_empty": (lambda x: lax.reshape(x, (3, 0)), (E03,), lambda x: x.reshape(3, 0)),
    "transpose": (lambda x: lax.transpose(x, (2, 0, 1)), (A234,),
                  lambda x: x.transpose(2, 0, 1)),
    "squeeze": (lambda x: lax.squeeze(x, (0, 2)), (A23.reshape(1, 6, 1),),
                lambda x: x.reshape(6)),
    "expand_dims": (lambda x: lax.expand_dims(x, (0, 3)), (A23,),
                    lambda x: x[None, :, :, None]),
    "rev": (lambda x: lax.rev(x, (0, 2)), (A234,), lambda x: x[::-1, :, ::-1]),
    "concatenate": (lambda x, y: lax.concatenate([x, y, x], 1), (A23, A23[:, :2]),
                    lambda x, y: np.concatenate([x, y, x], 1)),
    "concatenate_empty": (lambda x, y: lax.concatenate([x, y], 0), (E03, A23),
                          lambda x, y: np.concatenate([x, y], 0)),
    "pad": (lambda x: lax.pad(x, 0.5, [(1, 2, 0), (0, 1, 2)]), (A23,),
            lambda x: _np_pad(x, [(1, 2, 0), (0, 1, 2)], 0.5)),
    "pad_negative": (lambda x: lax.pad(x, -1.0, [(-1, 1, 1), (-2, -1, 0)]), (A234[0],),
                     lambda x: _np_pad(x, [(-1, 1, 1), (-2, -1, 0)], -1.0)),
    "pad_int": (lambda x: lax.pad(x, 7, [(1, 0, 1), (0, 0, 0)]), (I23,),
                lambda x: _np_pad(x, [(1, 0, 1), (0, 0, 0)], 7)),
    "slice": (lambda x: lax.slice(x, (0, 1, 0), (2, 3, 4), (1, 1, 2)), (A234,),
              lambda x: x[0:2, 1:3, 0:4:2]),
    "slice_strided_empty": (lambda x: lax.slice(x, (1, 2), (1, 3), (2, 2)), (A23,),
                            lambda x: x[1:1:2, 2:3:2]),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 1), (1, 2)), (A23, np.int32(1)),
                      lambda x, i: x[1:2, 1:3]),
    "dynamic_slice_clamps": (lambda x, i: lax.dynamic_slice(x, (i, i), (2, 2)),
                             (A23, np.int32(5)), lambda x, i: x[0:2, 1:3]),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)),
                             (A23, A23[:1, :2] + 10, np.int32(1)),
                             lambda x, u, i: _np_dus(x, u, (1, 0))),
    "dynamic_update_slice_clamps": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, i)),
                                    (A23, A23[:1, :2] + 10, np.int32(-3)),
                                    lambda x, u, i: _np_dus(x, u, (-3, -3))),
    "gather_rows": (lambda x, i: lax.gather(x, i, GATHER_DN, (1, 3)), (A23, IDX),
                    lambda x, i: x[i[:, 0]]),
    "gather_clamps": (lambda x, i: lax.gather(x, i, GATHER_DN, (1, 3)),
                      (A23, np.array([[7], [-4]], np.int32)), lambda x, i: x[[1, 0]]),
    "take_along_axis": (lambda x, i: lax.take_along_axis(x, i, 1),
                        (A23, np.array([[2, 0, 0], [1, 1, 2]], np.int32)),
                        lambda x, i: np.take_along_axis(x, i, 1)),
    "scatter": (lambda x, i, u: lax.scatter(x, i[:2], u[:2], SCATTER_DN), (A23, IDX, UPD),
                lambda x, i, u: _np_scatter(lambda a, c: c, x, i[:2], u[:2])),
    "scatter_add": (lambda x, i, u: lax.scatter_add(x, i, u, SCATTER_DN), (A23, IDX, UPD),
                    lambda x, i, u: _np_scatter(np.add, x, i, u)),
    "scatter_add_bool": (lambda x, i, u: lax.scatter_add(x, i, u, SCATTER_DN),
                         (B23, IDX, sample((4, 3), b)),
                         lambda x, i, u: _np_scatter(np.logical_or, x, i, u)),
    "scatter_mul": (lambda x, i, u: lax.scatter_mul(x, i, u, SCATTER_DN), (A23, IDX, UPD),
                    lambda x, i, u: _np_scatter(np.multiply, x, i, u)),
    "scatter_min": (lambda x, i, u: lax.scatter_min(x, i, u, SCATTER_DN), (I23, IDX,
                                                                           UPD.astype(i32)),
                    lambda x, i, u: _np_scatter(np.minimum, x, i, u)),
    "scatter_max": (lambda x, i, u: lax.scatter_max(x, i, u, SCATTER_DN), (A23, IDX, UPD),
                    lambda x, i, u: _np_scatter(np.maximum, x, i, u)),
    "scatter_drops_out_of_bounds": (lambda x, i, u: lax.scatter_add(x, i, u, SCATTER_DN),
                                    (A23, np.array([[5], [1]], np.int32), UPD[:2]),
                                    lambda x, i, u: _np_scatter(np.add, x, i[1:], u[1:])),
    "iota": (lambda: lax.iota(np.int32, 5), (), lambda: np.arange(5, dtype=np.int32)),
    "broadcasted_iota": (lambda: lax.broadcasted_iota(np.float32, (2, 3), 1), (),
                         lambda: np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3))),
    "reduce_sum": (lambda x: lax.reduce_sum(x, (0, 2)), (A234,), lambda x: x.sum((0, 2))),
    "reduce_sum_int": (lambda x: lax.reduce_sum(x, (1,)), (I23,), lambda x: x.sum(1)),
    "reduce_sum_empty": (lambda x: lax.reduce_sum(x, (0,)), (E03,), lambda x: x.sum(0)),
    "reduce_max": (lambda x: lax.reduce_max(x, (1,)), (A234,), lambda x: x.max(1)),
    "reduce_max_empty": (lambda x: lax.reduce_max(x, (0,)), (E03,),
                         lambda x: np.full(3, -np.inf, np.float32)),
    "reduce_min": (lambda x: lax.reduce_min(x, (0, 1, 2)), (A234,), lambda x: x.min()),
    "reduce_min_int": (lambda x: lax.reduce_min(x, (0,)), (I23,), lambda x: x.min(0)),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (1,)), (A234,), lambda x: x.prod(1)),
    "reduce_and": (lambda x: lax.reduce_and(x, (1,)), (B23,), lambda x: x.all(1)),
    "reduce_or": (lambda x: lax.reduce_or(x, (0,)), (B23,), lambda x: x.any(0)),
    "argmax": (lambda x: lax.argmax(x, 1), (A234,), lambda x: x.argmax(1).astype(np.int32)),
    "argmax_nan_and_ties": (lambda x: lax.argmax(x, 1), (NAN_ROW,),
                            lambda x: np.argmax(x, 1).astype(np.int32)),
    "argmin": (lambda x: lax.argmin(x, 0), (I23,), lambda x: x.argmin(0).astype(np.int32)),
    "argmin_nan_and_ties": (lambda x: lax.argmin(x, 1), (NAN_ROW,),
                            lambda x: np.argmin(x, 1).astype(np.int32)),
    "cumsum": (lambda x: lax.cumsum(x, 1), (A234,), lambda x: np.cumsum(x, 1)),
    "cumsum_reverse": (lambda x: lax.cumsum(x, 0, reverse=True), (I23,),
                       lambda x: np.cumsum(x[::-1], 0)[::-1]),
    "cumprod": (lambda x: lax.cumprod(x, 2), (A234,), lambda x: np.cumprod(x, 2)),
    "cummax": (lambda x: lax.cummax(x, 1), (A23,), lambda x: np.maximum.accumulate(x, 1)),
    "cummin": (lambda x: lax.cummin(x, 0, reverse=True), (I23,),
               lambda x: np.minimum.accumulate(x[::-1], 0)[::-1]),
    "sort": (lambda x: lax.sort(x, 1), (A234,), lambda x: np.sort(x, 1)),
    "sort_nan_last": (lambda x: lax.sort(x), (NAN_ROW,), lambda x: np.sort(x)),
    "top_k_values": (lambda x: lax.top_k(x, 2)[0], (A234,), lambda x: -np.sort(-x, -1)[..., :2]),
    "top_k_indices": (lambda x: lax.top_k(x, 2)[1], (I23,),
                      lambda x: np.argsort(-x, -1, kind="stable")[..., :2].astype(np.int32)),
    "top_k_axis": (lambda x: lax.top_k(x, 2, axis=1)[1], (A234,),
                   lambda x: np.argsort(-x, 1, kind="stable")[:, :2].astype(np.int32)),
    # NaN ranks above everything and 0.0 above -0.0 (values from jax 0.10.2)
    "top_k_nan_and_signed_zero": (
        lambda x: lax.top_k(x, 5)[1], (np.array([1, np.nan, 3, 3, -np.inf, -0.0, 0.0],
                                                np.float32),),
        lambda x: np.array([1, 2, 3, 0, 6], np.int32)),
    "top_k_bool": (lambda x: lax.top_k(x, 2)[0], (np.array([True, False, True]),),
                   lambda x: np.array([True, True])),
    "sort_key_val": (lambda k, v: lax.sort_key_val(k, v)[1], (I23, A23),
                     lambda k, v: np.take_along_axis(v, np.argsort(k, 1, kind="stable"), 1)),
    "dot_general_matmul": (lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
                           (A23, A23.T.copy()), lambda x, y: x @ y),
    "dot_general_batch": (lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                          (A234, sample((2, 4, 5), f32)), lambda x, y: np.einsum("bij,bjk->bik", x, y)),
    "dot_general_lhs_free_after_contract": (
        lambda x, y: lax.dot_general(x, y, (((0,), (1,)), ((), ()))), (A23, A23.T.copy()),
        lambda x, y: np.einsum("ij,ki->jk", x, y)),
    "dot_general_int": (lambda x, y: lax.dot_general(x, y, (((1,), (1,)), ((), ()))),
                        (I23, I23), lambda x, y: x @ y.T),
    "dot_general_bool": (lambda x, y: lax.dot_general(x, y, (((1,), (1,)), ((), ()))),
                         (B23, B23), lambda x, y: (x.astype(int) @ y.T.astype(int)) > 0),
    "dot_general_empty_contraction": (
        lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ()))), (E03, E03),
        lambda x, y: np.zeros((3, 3), np.float32)),
    "dot": (lax.dot, (A23, A23[0]), lambda x, y: x @ y),
    "convert_f32_i32": (lambda x: lax.convert_element_type(x, np.int32), (A23 * 3,),
                        lambda x: x.astype(np.int32)),
    "convert_f32_bool": (lambda x: lax.convert_element_type(x, np.bool_),
                         (np.array([0.0, -0.0, 0.5, np.nan], np.float32),),
                         lambda x: x.astype(bool)),
    "convert_i32_bf16": (lambda x: lax.convert_element_type(x, bf16), (I23,),
                         lambda x: x.astype(bf16)),
    "convert_bool_f32": (lambda x: lax.convert_element_type(x, np.float32), (B23,),
                         lambda x: x.astype(np.float32)),
    "select_n_bool": (lambda p, x, y: lax.select_n(p, x, y), (B23, A23, A23 + 1),
                      lambda p, x, y: np.where(p, y, x)),
    "select_n_scalar_pred": (lambda p, x, y: lax.select_n(p, x, y), (np.bool_(True), A23,
                                                                     A23 + 1),
                             lambda p, x, y: y),
    "select_n_int": (lambda w, x, y, z: lax.select_n(w, x, y, z),
                     (np.array([[0, 1, 2], [2, 1, 0]], np.int32), A23, A23 + 1, A23 + 2),
                     lambda w, x, y, z: np.choose(w, [x, y, z])),
    # any integer type picks (JAX's), out-of-range values the first or the last case
    "select_n_uint8": (lambda w, x, y, z: lax.select_n(w, x, y, z),
                       (np.array([[0, 1, 2], [7, 1, 0]], np.uint8), A23, A23 + 1, A23 + 2),
                       lambda w, x, y, z: np.choose(np.minimum(w, 2), [x, y, z])),
    "select_int8": (lambda p, x, y: lax.select(p, x, y),
                    (np.array([[1, 0, 2], [-1, 0, 3]], np.int8), A23, A23 + 1),
                    lambda p, x, y: np.where(p > 0, x, y)),
    "clamp": (lambda x: lax.clamp(-0.5, x, 0.5), (A23,), lambda x: np.clip(x, -0.5, 0.5)),
    "clamp_array_bounds": (lambda lo, x, hi: lax.clamp(lo, x, hi), (A23 - 1, A23 * 2, A23 + 1),
                           lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi)),
    "full": (lambda: lax.full((2, 2), 3, np.int32), (), lambda: np.full((2, 2), 3, np.int32)),
    "full_like": (lambda x: lax.full_like(x, 2), (I23,), lambda x: np.full_like(x, 2)),
    "dot_general_preferred": (lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())),
                                                           preferred_element_type=np.float32),
                              (I23, I23.T.copy()), lambda x, y: (x @ y).astype(np.float32)),
    "batch_matmul": (lax.batch_matmul, (A234, sample((2, 4, 5), f32)),
                     lambda x, y: x @ y),
    "dynamic_update_index_in_dim": (
        lambda x, u, i: lax.dynamic_update_index_in_dim(x, u, i, 1), (A23, A23[:, 0] + 5,
                                                                      np.int32(2)),
        lambda x, u, i: np.concatenate([x[:, :2], (u + 0)[:, None]], 1)),
}


@pytest.mark.parametrize("name", _cases(STRUCTURAL))
def test_structural_primitive_matches_numpy_eagerly_and_under_jit(name):
  fn, args, ref = STRUCTURAL[name]
  expected = np.asarray(ref(*args))
  out = fn(*args)
  assert np.asarray(out).dtype.kind == expected.dtype.kind or expected.dtype == np.float64
  check(fn, args, expected.astype(np.asarray(out).dtype))


def test_sort_of_several_operands_uses_the_first_as_key():
  keys = np.array([3, 1, 2, 1], np.int32)
  vals = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
  k, v = lax.sort((keys, vals), 0, num_keys=1)
  assert_close(k, [1, 1, 2, 3])
  assert_close(v, [1.0, 3.0, 2.0, 0.0])
  k2, v2 = lax.sort((keys, -vals), 0, num_keys=2)
  assert_close(v2, [-3.0, -1.0, -2.0, 0.0])


def test_convert_element_type_keeps_or_sets_the_weak_type():
  x = lax.convert_element_type(np.float32(1), np.float32, weak_type=True)
  assert x.weak_type
  y = lax.convert_element_type(x, np.float32)
  assert not y.weak_type
  jaxpr = minijax.make_jaxpr(lambda v: lax.convert_element_type(v, np.int32))(np.ones(2))
  assert "convert_element_type[new_dtype=int32 weak_type=False]" in str(jaxpr)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_64_bit_types_with_x64_enabled(x64, dtype):
  x = sample((2, 3), dtype, "pos")
  fns = [
      (lambda x: lax.add(x, x), lambda x: x + x),
      (lambda x: lax.reduce_sum(x, (1,)), lambda x: x.sum(1)),
      (lambda x: lax.dot_general(x, x, (((1,), (1,)), ((), ()))), lambda x: x @ x.T),
      (lambda x: lax.cumsum(x, 1), lambda x: np.cumsum(x, 1)),
      (lambda x: lax.sort(x, 1), lambda x: np.sort(x, 1)),
      (lambda x: lax.argmax(x, 1, np.int64), lambda x: x.argmax(1)),
      (lambda x: lax.gather(x, IDX, GATHER_DN, (1, 3)), lambda x: x[IDX[:, 0]]),
      (lambda x: lax.convert_element_type(x, np.float64), lambda x: x.astype(np.float64)),
  ]
  if dtype == np.float64:
    fns.append((lax.sin, np.sin))
  for fn, ref in fns:
    out = fn(x)
    expected = np.asarray(ref(x))
    assert np.asarray(out).dtype == expected.dtype, (np.asarray(out).dtype, expected.dtype)
    check(fn, (x,), expected)


def test_x64_off_canonicalizes_64_bit_inputs():
  out = lax.add(np.ones(3, np.float64), np.ones(3, np.float64))
  assert out.dtype == np.float32
  assert lax.iota(np.int64, 3).dtype == np.int32


def test_lowered_text_names_the_mhlo_ops():
  x = np.ones((2, 3), np.float32)
  text = minijax.jit(lambda x: lax.reduce_max(lax.cumsum(lax.sort(x, 1), 1), (0,))).lower(
      x).as_text()
  for op in ("mhlo.sort", "mhlo.reduce_window", "mhlo.reduce"):
    assert op in text
  text = minijax.jit(lambda x: lax.gather(x, IDX, GATHER_DN, (1, 3))).lower(x).as_text()
  assert "gather" in text


def _fd(f, args, tans, eps=1e-6):
  plus = f(*[a + eps * t for a, t in zip(args, tans)])
  minus = f(*[a - eps * t for a, t in zip(args, tans)])
  return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


@pytest.mark.parametrize("op", ["set", "add", "mul", "min", "max"])
def test_scatter_family_jvp_vjp_and_vmap(x64, op):
  import minijax.numpy as jnp
  rng = np.random.default_rng(3)
  x, u = rng.standard_normal(5), rng.standard_normal(3)
  idx = np.array([0, 2, 4]) if op == "set" else np.array([0, 2, 2])
  if op == "mul":
    f, args = (lambda x: jnp.asarray(x).at[idx].mul(u)), (x,)
  else:
    f, args = (lambda x, u: getattr(jnp.asarray(x).at[idx], op)(u)), (x, u)
  tans = tuple(rng.standard_normal(a.shape) for a in args)
  out, t = minijax.jvp(f, args, tans)
  np.testing.assert_allclose(t, _fd(f, args, tans), atol=1e-6)
  if op in ("set", "add", "mul"):
    _, vjp = minijax.vjp(f, *args)
    ct = rng.standard_normal(np.shape(out))
    lhs = sum(np.vdot(c, tt) for c, tt in zip(vjp(ct), tans))
    np.testing.assert_allclose(lhs, np.vdot(ct, t), rtol=1e-10)
  xs, us = rng.standard_normal((4, 5)), rng.standard_normal((4, 3))
  idxs = np.array([[0, 1, 2], [4, 3, 0], [1, 2, 3], [3, 2, 1]])
  g = lambda x, i, u: getattr(jnp.asarray(x).at[i], op)(u)
  expected = np.stack([np.asarray(g(a, i, c)) for a, i, c in zip(xs, idxs, us)])
  np.testing.assert_allclose(minijax.vmap(g)(xs, idxs, us), expected)
  np.testing.assert_allclose(minijax.vmap(g, (0, None, 0))(xs, idxs[0], us),
                             np.stack([np.asarray(g(a, idxs[0], c)) for a, c in zip(xs, us)]))


def test_top_k_is_one_primitive_with_jax_errors():
  x = np.arange(6.0, dtype=np.float32)
  assert "top_k[axis=0 k=2]" in str(minijax.make_jaxpr(lambda v: lax.top_k(v, 2))(x))
  assert "mhlo.topk" in minijax.jit(lambda v: lax.top_k(v, 2)).lower(x).as_text()
  with pytest.raises(ValueError, match="k argument to top_k must be nonnegative"):
    lax.top_k(x, -1)
  with pytest.raises(ValueError, match="must be no larger than size along axis"):
    lax.top_k(x, 7)
  with pytest.raises(TypeError, match="top_k operand must have >= 1 dimension"):
    lax.top_k(np.float32(1), 1)


def test_associative_scan_matches_numpy_for_every_length_and_order():
  rng = np.random.default_rng(5)
  xs = [rng.standard_normal(n).astype(np.float32) for n in range(10)]
  mats = rng.standard_normal((7, 2, 2)).astype(np.float32)

  def scans(xs, mats):
    sums = [lax.associative_scan(lax.add, x) for x in xs]
    reversed_maxes = [lax.associative_scan(lax.max, x, reverse=True) for x in xs]
    products = lax.associative_scan(lambda a, b: lax.batch_matmul(a, b), mats)
    pytree = lax.associative_scan(lambda a, b: {"s": a["s"] + b["s"], "m": a["m"] * b["m"]},
                                  {"s": xs[5], "m": xs[5]})
    along = lax.associative_scan(lax.add, mats, axis=2)
    return sums, reversed_maxes, products, pytree, along

  sums, reversed_maxes, products, pytree, along = minijax.jit(scans)(xs, mats)
  for x, s, m in zip(xs, sums, reversed_maxes):
    assert_close(s, np.cumsum(x))
    assert_close(m, np.maximum.accumulate(x[::-1])[::-1])
  expected = [mats[0]]
  for m in mats[1:]:
    expected.append(expected[-1] @ m)  # the order matters: fn need not commute
  assert_close(products, np.stack(expected))
  assert_close(pytree["s"], np.cumsum(xs[5]))
  assert_close(pytree["m"], np.cumprod(xs[5]))
  assert_close(along, np.cumsum(mats, 2))
  with pytest.raises(ValueError, match="must have the same first dimension"):
    lax.associative_scan(lambda a, b: a, (xs[2], xs[3]))


def test_dot_general_takes_a_precision_and_lowers_it_to_precision_config():
  x = sample((2, 3), f32)
  f = lambda a: lax.dot(a, a.T, precision=lax.Precision.HIGH)
  assert "precision_config = [#mhlo<precision HIGH>, #mhlo<precision HIGH>]" in (
      minijax.jit(f).lower(x).as_text())
  assert "precision=(Precision.HIGH, Precision.HIGH)" in str(minijax.make_jaxpr(f)(x))
  assert_close(f(x), x @ x.T)
  assert_close(minijax.grad(lambda a: f(a).sum())(x), 2 * np.ones((2, 2)) @ x)
  g = lambda a: lax.dot_general(a, a, (((1,), (1,)), ((), ())), precision=("float32", "default"))
  assert "[#mhlo<precision HIGHEST>, #mhlo<precision DEFAULT>]" in minijax.jit(g).lower(x).as_text()
  assert lax.Precision("tensorfloat32") is lax.Precision.HIGH and str(lax.Precision.HIGHEST) == "HIGHEST"
  with pytest.raises(ValueError, match="Precision argument must be one of"):
    lax.dot(x, x.T, precision=3)


def test_gather_with_no_indices_from_an_empty_operand():
  # JAX accepts slices larger than an empty operand when there are no indices (nothing is
  # read): optax's Hungarian algorithm indexes empty arrays with empty index arrays.
  x, i = jnp.zeros((0,), jnp.int32), jnp.zeros((0,), jnp.int32)
  for got in (x[i], minijax.jit(lambda x, i: x[i])(x, i)):
    assert got.shape == (0,) and got.dtype == np.int32
  assert jnp.zeros((0, 3))[i].shape == (0, 3)
  with pytest.raises(TypeError, match=r"Slice size at index 0 in gather op is out of range, "
                                      r"must be within \[0, 0 \+ 1\), got 1."):
    lax.gather(x, jnp.zeros((1, 1), jnp.int32),
               lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                          start_index_map=(0,)), slice_sizes=(1,))


def test_dynamic_slice_counts_negative_starts_from_the_end():
  """JAX 0.10.2's values: a negative start counts from the end once, then XLA clamps
  (minijax clamped -1 to 0 before: a silently different slice)."""
  x = np.arange(5.0, dtype=np.float32)
  for start, sliced, updated in [
      (-1, [3, 4], [0, 1, 2, 9, 9]), (-3, [2, 3], [0, 1, 9, 9, 4]),
      (-7, [0, 1], [9, 9, 2, 3, 4]), (9, [3, 4], [0, 1, 2, 9, 9])]:
    np.testing.assert_array_equal(lax.dynamic_slice(x, (start,), (2,)), sliced)
    np.testing.assert_array_equal(
        minijax.jit(lambda x, s: lax.dynamic_slice(x, (s,), (2,)))(x, start), sliced)
    np.testing.assert_array_equal(
        lax.dynamic_update_slice(x, np.full(2, 9, np.float32), (start,)), updated)
  assert lax.dynamic_index_in_dim(x, -1, keepdims=False) == 4
  np.testing.assert_array_equal(
      minijax.grad(lambda x: lax.dynamic_slice(x, (-2,), (2,)).sum())(x), [0, 0, 0, 1, 1])
  np.testing.assert_array_equal(
      minijax.vmap(lambda s: lax.dynamic_slice(x, (s,), (2,)))(np.array([-1, 1, -4])),
      [[3, 4], [1, 2], [1, 2]])


def test_dot_general_of_two_dtypes_computes_in_the_higher_precision_one():
  """JAX 0.10.2 (XLA's HigherPrecisionType): the result dtypes of mixed operands, and its
  laxer preferred_element_type rule for dots (only a non-float result may not narrow)."""
  dn = (((1,), (0,)), ((), ()))
  x = np.arange(6).reshape(2, 3)
  with minijax.enable_x64():
    for a, b, expected in [(np.int8, np.int16, np.int16), (np.int8, np.uint8, np.int8),
                           (np.int8, np.float32, np.float32), (np.bool_, np.int8, np.int8),
                           (np.uint32, np.int32, np.int32), (np.float32, np.float64, np.float64),
                           (minijax.numpy.bfloat16, np.float16, minijax.numpy.bfloat16),
                           (np.int64, np.float16, np.float16),
                           (np.int8, np.complex64, np.complex64)]:
      out = lax.dot_general(x.astype(a), x.T.astype(b), dn)
      assert out.dtype == expected, (a, b, out.dtype)
      np.testing.assert_array_equal(out, [[3, 9], [3, 12]] if a is np.bool_ else [[5, 14], [14, 50]])
    for a, preferred, value in [(np.float64, np.float32, 50), (np.complex64, np.float32, 50),
                                (np.float32, np.int32, 50), (np.bool_, np.int32, 3),
                                (np.int32, np.uint32, 50)]:
      out = lax.dot_general(x.astype(a), x.T.astype(a), dn, preferred_element_type=preferred)
      assert out.dtype == preferred and out[1, 1] == value, (a, preferred, out)
    with pytest.raises(TypeError, match="must not be narrower than the original type"):
      lax.dot_general(x.astype(np.int32), x.T.astype(np.int32), dn, preferred_element_type=np.int8)
    grad = minijax.grad(lambda y: lax.dot_general(x.astype(np.float16), y, dn).sum())(
        x.T.astype(np.float32))
    assert grad.dtype == np.float32


def test_rng_bit_generator_takes_a_uint64_pair_key():
  """JAX 0.10.2's bits: the uint64[2] key is XLA's state itself (the uint32[4] key is the
  same state word by word)."""
  algorithm = lax.RandomAlgorithm.RNG_THREE_FRY
  with minijax.enable_x64():
    key, bits = lax.rng_bit_generator(np.array([1, 2], np.uint64), (3,), np.uint32,
                                      algorithm=algorithm)
    assert key.dtype == np.uint64 and key.tolist() == [1, 4]
    assert bits.tolist() == [43444564, 2150618427, 3979645651]
  key, bits = lax.rng_bit_generator(np.array([1, 0, 2, 0], np.uint32), (3,), np.uint32,
                                    algorithm=algorithm)
  assert key.tolist() == [1, 0, 4, 0] and bits.tolist() == [43444564, 2150618427, 3979645651]
  with pytest.raises(TypeError, match=r"uint32\[4\] or uint64\[2\] key, got uint32\[2\]"):
    lax.rng_bit_generator(np.array([1, 2], np.uint32), (3,))


def test_scatter_mul_differentiates_in_its_updates_with_unique_indices():
  x = np.arange(1.0, 6.0, dtype=np.float32)
  dn = lax.ScatterDimensionNumbers((), (0,), (0,))
  idx = np.array([[1], [3], [7]])  # (7 is dropped)
  u = np.array([2.0, 3.0, 4.0], np.float32)
  f = lambda x, u: lax.scatter_mul(x, idx, u, dn, unique_indices=True)
  np.testing.assert_array_equal(f(x, u), [1, 4, 3, 12, 5])
  _, tangent = minijax.jvp(f, (x, u), (np.ones_like(x), np.ones_like(u)))
  np.testing.assert_array_equal(tangent, [1, 2 + 2, 1, 3 + 4, 1])
  np.testing.assert_array_equal(minijax.grad(lambda u: f(x, u).sum())(u), [2, 4, 0])
  with pytest.raises(NotImplementedError, match="only implemented if `unique_indices=True`"):
    minijax.grad(lambda u: lax.scatter_mul(x, idx, u, dn).sum())(u)


def test_pow_takes_an_integer_exponent_array():
  """JAX 0.10.2's pow: an inexact base with an integer exponent of any dtype."""
  x = np.array([2.0, 3.0, 0.5, 0.0], np.float32)
  n = np.array([3, -2, 0, 0], np.int32)
  out = minijax.jit(lax.pow)(x, n)
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, [8.0, 1 / 9, 1.0, 1.0], rtol=1e-6)
  grads = minijax.vmap(minijax.grad(lax.pow))(x, n)
  np.testing.assert_allclose(grads, [12.0, -2 / 27, 0.0, 0.0], rtol=1e-6)
  np.testing.assert_allclose(lax.pow(np.complex64(1 + 1j), np.int8(2)), 2j, atol=1e-6)
  with pytest.raises(TypeError, match="first argument to pow must have an inexact dtype"):
    lax.pow(np.array([2], np.int32), np.array([2.0], np.float32))
