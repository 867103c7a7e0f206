"""lax.reduce_window (the sum/max/min monoids and a generic reduction) eagerly against a
numpy window reduction written here and under jit against eager; forward-mode derivatives
of a generic reduction against finite differences; bad input.  Gradients of the monoids and
of select_and_scatter_add (to second order) and vmap are rows of test_transform_ops.py."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax

pytestmark = pytest.mark.usefixtures("x64_off")
_rng = np.random.default_rng(11)


def _dilate(x, dilation, fill):
  for axis, d in enumerate(dilation):
    if d == 1 or x.shape[axis] == 0:
      continue
    shape = list(x.shape)
    shape[axis] = 1 + d * (shape[axis] - 1)
    out = np.full(shape, fill, x.dtype)
    index = [slice(None)] * x.ndim
    index[axis] = slice(None, None, d)
    out[tuple(index)] = x
    x = out
  return x


def np_reduce_window(x, init, reduce, window, strides=None, padding=None, base_dilation=None,
                     window_dilation=None):
  """Dilate and pad with `init`, take the (dilated) windows, reduce each with `reduce`."""
  n = x.ndim
  strides = strides or (1,) * n
  window_dilation = window_dilation or (1,) * n
  x = _dilate(x, base_dilation or (1,) * n, init)
  padding = padding or [(0, 0)] * n
  x = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in padding], constant_values=init)
  x = x[tuple(slice(max(-lo, 0), x.shape[k] - max(-hi, 0)) for k, (lo, hi) in enumerate(padding))]
  span = [1 + d * (k - 1) for k, d in zip(window, window_dilation)]
  if any(k > m for k, m in zip(span, x.shape)):
    return np.zeros([max(m - k + s, 0) // s for m, k, s in zip(x.shape, span, strides)], x.dtype)
  view = np.lib.stride_tricks.sliding_window_view(x, span)
  view = view[tuple(slice(None, None, s) for s in strides)
              + tuple(slice(None, None, d) for d in window_dilation)]
  axes = tuple(range(n, 2 * n))
  return reduce(view, axis=axes, initial=init)


def distinct(*shape, dtype=np.float32):
  return (_rng.permutation(int(np.prod(shape))).reshape(shape) * 0.5 - 3).astype(dtype)


X = distinct(2, 7, 6)
# name -> (operand, window_dimensions, keyword arguments)
WINDOWS = {
    "pool_2x2": (X, (1, 2, 2), dict(window_strides=(1, 2, 2))),
    "same_3x3": (X, (1, 3, 3), dict(window_strides=(1, 2, 1), padding="SAME")),
    "same_lower": (X, (1, 2, 3), dict(window_strides=(1, 1, 2), padding="SAME_LOWER")),
    "explicit_padding": (X, (2, 2, 2), dict(padding=[(0, 1), (2, 0), (1, 1)])),
    "negative_padding": (X, (1, 2, 3), dict(window_strides=(1, 2, 1),
                                            padding=[(0, 0), (-1, 1), (1, -2)])),
    "base_dilation": (X[0], (3, 2), dict(window_strides=(2, 1), padding=[(1, 1), (0, 0)],
                                         base_dilation=(2, 1))),
    "window_dilation": (X[0], (2, 2), dict(window_strides=(1, 2), window_dilation=(3, 2))),
    "1d_full_window": (X[0, 0], (6,), {}),
    "empty_output": (X[0], (8, 1), {}),
}
MONOIDS = {
    "sum": (lax.add, 0.0, np.add.reduce),
    "max": (lax.max, -np.inf, np.maximum.reduce),
    "min": (lax.min, np.inf, np.minimum.reduce),
    "prod": (lax.mul, 1.0, np.multiply.reduce),  # the generic reduce_window primitive
}


def _ref(x, kind, window, kw):
  _, init, reduce = MONOIDS[kind]
  padding = kw.get("padding")
  if isinstance(padding, str):
    span = [1 + d * (k - 1) for k, d in zip(window, kw.get("window_dilation", (1,) * x.ndim))]
    padding = lax.padtype_to_pads(x.shape, span, kw.get("window_strides", (1,) * x.ndim),
                                  padding)
  return np_reduce_window(x, np.asarray(init, x.dtype), reduce, window, kw.get("window_strides"),
                          padding, kw.get("base_dilation"), kw.get("window_dilation"))


@pytest.mark.parametrize("kind", list(MONOIDS))
@pytest.mark.parametrize("name", list(WINDOWS))
def test_reduce_window_matches_numpy_eagerly_and_under_jit(name, kind):
  x, window, kw = WINDOWS[name]
  computation, init, _ = MONOIDS[kind]
  f = lambda v: lax.reduce_window(v, init, computation, window, **kw)
  expected = _ref(x, kind, window, kw)
  out = f(x)
  assert out.dtype == np.float32 and out.shape == expected.shape
  np.testing.assert_allclose(out, expected, rtol=1e-5)
  if kind == "max" or name == "pool_2x2":
    np.testing.assert_allclose(minijax.jit(f)(x), out, rtol=1e-6)


def test_the_monoids_bind_their_own_primitives_and_lower_to_one_reduce_window():
  x = np.ones((4, 4), np.float32)
  for computation, init, prim in ((lax.add, 0.0, "reduce_window_sum"),
                                  (lax.max, -np.inf, "reduce_window_max"),
                                  (lax.min, np.inf, "reduce_window_min"),
                                  (lax.add, 1.0, "reduce_window["),
                                  (lax.mul, 1.0, "reduce_window[")):
    f = lambda v: lax.reduce_window(v, init, computation, (2, 2), (2, 2))
    assert prim in str(minijax.make_jaxpr(f)(x))
    assert minijax.jit(f).lower(x).as_text().count("mhlo.reduce_window") == 1
  np.testing.assert_allclose(lax.reduce_window(x, 1.0, lax.add, (2, 2), (2, 2)),
                             np.full((2, 2), 5.0))


def test_integer_and_boolean_windows():
  i = np.arange(12, dtype=np.int32).reshape(3, 4)
  out = lax.reduce_window(i, 0, lax.add, (2, 2), (1, 1), "SAME")
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, np_reduce_window(i, 0, np.add.reduce, (2, 2),
                                                      padding=[(0, 1), (0, 1)]))
  imin = np.iinfo(np.int32).min
  np.testing.assert_array_equal(lax.reduce_window(i, imin, lax.max, (3, 1)), i[2:])
  b = i % 3 == 0
  np.testing.assert_array_equal(lax.reduce_window(b, False, lax.max, (1, 2)),
                                b[:, :-1] | b[:, 1:])


def test_a_pytree_of_operands_reduces_with_one_function():
  """Max pooling that also returns where each maximum was (a variadic reduce_window)."""
  x = np.array([[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]], np.float32)
  where = np.broadcast_to(np.arange(5, dtype=np.int32), x.shape)

  def argmax_pool(v, i):
    def pick(a, b):
      keep = lax.ge(a[0], b[0])
      return lax.select(keep, a[0], b[0]), lax.select(keep, a[1], b[1])
    return lax.reduce_window((v, i), (-np.inf, np.int32(0)), pick, (1, 2), (1, 1), "SAME")

  values, positions = argmax_pool(x, where)
  np.testing.assert_array_equal(values, [[3, 4, 4, 5, 5], [9, 6, 6, 5, 3]])
  np.testing.assert_array_equal(positions, [[0, 2, 2, 4, 4], [0, 2, 2, 3, 4]])
  vv, vp = minijax.vmap(argmax_pool)(np.stack([x, -x]), np.stack([where, where]))
  np.testing.assert_array_equal(vv[1], [[-1, -1, -1, -1, -5], [-2, -2, -5, -3, -3]])
  np.testing.assert_array_equal(vp[1], [[1, 1, 3, 3, 4], [1, 1, 3, 4, 4]])
  jv, jp = minijax.jit(argmax_pool)(x, where)
  np.testing.assert_array_equal(jp, positions)


def test_a_generic_reduction_has_forward_derivatives_and_refuses_reverse_mode(x64):
  x = np.linspace(0.5, 2.0, 7)
  f = lambda v: lax.reduce_window(v, 1.0, lax.mul, (3,), (2,), [(1, 1)])
  t = np.cos(np.arange(7.0))
  _, tangent = minijax.jvp(f, (x,), (t,))
  eps = 1e-6
  np.testing.assert_allclose(tangent, (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t)))
                             / (2 * eps), rtol=1e-7)
  _, second = minijax.jvp(lambda v: minijax.jvp(f, (v,), (t,))[1], (x,), (t,))
  np.testing.assert_allclose(second, (np.asarray(minijax.jvp(f, (x + eps * t,), (t,))[1])
                                      - np.asarray(minijax.jvp(f, (x - eps * t,), (t,))[1]))
                             / (2 * eps), rtol=1e-6, atol=1e-8)
  with pytest.raises(NotImplementedError, match="reverse-mode differentiation of reduce_window"):
    minijax.grad(lambda v: f(v).sum())(x)


def test_max_pooling_gradient_is_a_select_and_scatter():
  x = distinct(1, 6, 6)
  f = lambda v: lax.reduce_window(v, -np.inf, lax.max, (1, 2, 2), (1, 2, 2), "VALID").sum()
  assert "select_and_scatter_add" in str(minijax.make_jaxpr(minijax.grad(f))(x))
  assert "mhlo.select_and_scatter" in minijax.jit(minijax.grad(f)).lower(x).as_text()
  g = np.asarray(minijax.grad(f)(x))
  # one 1 per 2x2 window, at its maximum
  blocks = x.reshape(1, 3, 2, 3, 2).transpose(0, 1, 3, 2, 4).reshape(1, 3, 3, 4)
  expected = (blocks == blocks.max(-1, keepdims=True)).astype(np.float32)
  np.testing.assert_array_equal(g, expected.reshape(1, 3, 3, 2, 2).transpose(0, 1, 3, 2, 4)
                                .reshape(1, 6, 6))


def test_max_pooling_gradient_with_window_dilation_raises_as_in_jax():
  f = lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), window_dilation=(2,)).sum()
  with pytest.raises(NotImplementedError, match="window_dilation"):
    minijax.grad(f)(np.arange(5.0, dtype=np.float32))


def test_reduce_window_shape_tuple():
  assert lax.reduce_window_shape_tuple((7, 6), (2, 3), (2, 1), ((1, 0), (0, 2))) == (4, 6)
  assert lax.reduce_window_shape_tuple((5,), (2,), (1,), ((0, 0),), (2,), (3,)) == (6,)


BAD = [
    (dict(window_dimensions=(2,)), TypeError, "wrong number of window_dimensions"),
    (dict(window_strides=(1,)), TypeError, "inconsistent window_strides and window_dimensions"),
    (dict(window_dimensions=(0, 2)), TypeError, "window_dimensions must have every element"),
    (dict(padding="FULL"), RuntimeError, "Unrecognized padding type"),
    (dict(padding=[(1, 1)]), TypeError, "inconsistent padding and window_dimensions"),
    (dict(padding=[1, 2]), ValueError, "should be a string or a sequence of"),
]


@pytest.mark.parametrize("kw,exc,msg", BAD)
def test_bad_window_arguments_raise(kw, exc, msg):
  args = dict(window_dimensions=(2, 2), window_strides=(1, 1), padding="VALID")
  args.update(kw)
  with pytest.raises(exc, match=msg):
    lax.reduce_window(np.ones((3, 3), np.float32), 0.0, lax.add, **args)


def test_bad_init_values_and_functions_raise():
  x = np.ones((3, 3), np.float32)
  with pytest.raises(ValueError, match="same tree structure as init_values"):
    lax.reduce_window((x, x), 0.0, lambda a, b: a, (2, 2))
  with pytest.raises(TypeError, match="inconsistent dtypes for operands and init_values"):
    lax.reduce_window(x, np.int32(1), lax.mul, (2, 2))
  with pytest.raises(TypeError, match="must return scalars of the operands' dtypes"):
    lax.reduce_window(x, 1.0, lambda a, b: lax.broadcast(a, (2,)), (2, 2))
