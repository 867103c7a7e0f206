"""JAX 0.10.2's lax functions minijax lacked (found by JAX's harnesses and op records):
cbrt, exp2, clz, bessel_i0e/i1e, reduce_xor, cumlogsumexp, the generic lax.reduce,
approx_max_k/min_k, collapse, split, tile, stack, unstack, broadcast_like, index_take,
shape_as_value, dtype.  Integer results are JAX's literals; the rest are compared with
numpy and scipy within a few ulps."""
import numpy as np
import pytest

import minijax
from minijax import lax

X = np.linspace(-3, 3, 13).astype(np.float32)


def close(a, b, rtol=2e-6):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                             atol=1e-7)


def test_cbrt_exp2_clz():
  close(lax.cbrt(X), np.cbrt(X))
  close(lax.exp2(X), np.exp2(X))
  close(lax.exp2(X.astype(np.complex64)), np.exp2(X.astype(np.complex128)))
  close(minijax.numpy.cbrt(X), np.cbrt(X))
  close(minijax.grad(lax.cbrt)(np.float32(2.0)), 2.0 ** (-2 / 3) / 3)
  close(minijax.grad(lax.exp2)(np.float32(2.0)), 4 * np.log(2))
  assert lax.clz(np.array([0, 1, 255, -1, 2**20], np.int32)).tolist() == [32, 31, 24, 0, 11]
  assert lax.clz(np.array([1, 3], np.uint8)).tolist() == [7, 6]
  with pytest.raises(TypeError, match="cbrt does not accept dtype int32"):
    lax.cbrt(np.array([8], np.int32))


def test_bessel_i0e_i1e():
  special = pytest.importorskip("scipy.special")
  x = np.linspace(-40, 40, 801).astype(np.float32)
  close(lax.bessel_i0e(x), special.i0e(x.astype(np.float64)), rtol=1e-6)
  close(lax.bessel_i1e(x), special.i1e(x.astype(np.float64)), rtol=1e-6)
  # JAX's derivatives at 2 and at 0
  close(minijax.grad(lax.bessel_i0e)(np.float32(2.0)), -0.093239024)
  close(minijax.grad(lax.bessel_i1e)(np.float32(0.0)), 0.5)
  close(minijax.grad(lax.bessel_i1e)(np.float32(2.0)), -0.014395624, rtol=1e-5)


XI = (np.arange(24, dtype=np.int32).reshape(2, 3, 4) * 37) % 11
XF = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


def test_reduce_xor_and_cumlogsumexp():
  assert lax.reduce_xor(XI, (1,)).tolist() == np.bitwise_xor.reduce(XI, axis=1).tolist()
  a = XF[0]
  close(lax.cumlogsumexp(a, axis=1), np.logaddexp.accumulate(a, axis=1))
  close(lax.cumlogsumexp(a, axis=0, reverse=True),
        np.logaddexp.accumulate(a[::-1], axis=0)[::-1])
  close(lax.cumlogsumexp(np.array([-np.inf, -np.inf, 0.0], np.float32)), [-np.inf, -np.inf, 0.0])
  close(minijax.grad(lambda a: lax.cumlogsumexp(a, axis=1).sum())(a)[2],
        [1.3910305, 1.0629313, 0.9021237, 0.6439142], rtol=1e-6)
  # complex: the log of the running sum of exponentials (it raised mixing dtypes)
  z = np.array([1 + 1j, 2, 3j, -1 - 3j, 2 + 3j], np.complex64)
  np.testing.assert_allclose(np.exp(lax.cumlogsumexp(z)),
                             np.cumsum(np.exp(z.astype(np.complex128))), rtol=1e-5)
  assert (np.abs(np.imag(lax.cumlogsumexp(z * 3))) <= np.pi).all()  # the principal logs


def test_generic_reduce():
  assert lax.reduce(XF, 0.0, lax.add, (0, 2)).tolist() == XF.sum((0, 2)).tolist()
  assert lax.reduce(XI, 0, lax.bitwise_xor, (0,)).tolist() == np.bitwise_xor.reduce(
      XI, axis=0).tolist()
  assert lax.reduce(XI, -1, lax.bitwise_and, (2,)).tolist() == np.bitwise_and.reduce(
      XI, axis=2).tolist()
  # a computation that is no monoid: the generic primitive, under jit, jvp and vmap
  halving = lambda a, b: a * 0.5 + b
  assert "reduce[" in str(minijax.make_jaxpr(lambda x: lax.reduce(x, 0.0, halving, (0,)))(XF))
  expected = np.zeros((3, 4), np.float32)
  for row in XF:
    expected = expected * 0.5 + row
  close(minijax.jit(lambda x: lax.reduce(x, 0.0, halving, (0,)))(XF), expected)
  out, tangent = minijax.jvp(lambda x: lax.reduce(x, 2.0, lax.mul, (1,)), (XF,),
                             (np.ones_like(XF),))
  close(out, 2 * XF.prod(1))
  close(tangent, np.reshape([2 * sum(np.prod(np.delete(col, i)) for i in range(3))
                             for col in XF.transpose(0, 2, 1).reshape(-1, 3)], (2, 4)),
        rtol=1e-5)
  close(minijax.vmap(lambda x: lax.reduce(x, 0.0, lambda a, b: a + 2 * b, (1,)))(XF),
        2 * XF.sum(2))
  pair = lax.reduce((XF, XI), (0.0, 0), lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])), (1,))
  close(pair[0], XF.sum(1))
  assert pair[1].tolist() == XI.max(1).tolist()
  # reverse mode too, through the tree of elementwise applications (as JAX)
  grad = minijax.grad(lambda x: lax.reduce(x, 0.0, halving, (0,)).sum())(XF)
  close(grad, np.stack([np.full((3, 4), 0.5), np.ones((3, 4))]))
  close(minijax.grad(lambda x: lax.reduce(x, 3.0, lax.add, (0, 1, 2)))(XF), np.ones_like(XF))


def test_approx_max_and_min_k():
  x = np.array([[3., 1, 4, 1, 5, 9, 2, 6]], np.float32)
  values, index = lax.approx_max_k(x, 3)
  assert values.tolist() == [[9, 6, 5]] and index.tolist() == [[5, 7, 4]]
  values, index = lax.approx_min_k(x, 3, reduction_dimension=1)
  assert values.tolist() == [[1, 1, 2]] and index.tolist() == [[1, 3, 6]]
  grid = np.array([[3, 1, 4], [1, 5, 9], [2, 6, 0]], np.float32)
  values, index = lax.approx_min_k(grid, 2, reduction_dimension=0)
  assert values.tolist() == [[1, 1, 0], [2, 5, 4]] and index.tolist() == [[1, 0, 2], [2, 1, 0]]
  assert minijax.grad(lambda v: lax.approx_max_k(v, 2)[0].sum())(x[0]).tolist() == \
      [0, 0, 0, 0, 0, 1, 0, 1]
  with pytest.raises(ValueError, match="operand must be a floating type"):
    lax.approx_max_k(np.array([1, 2], np.int32), 1)


def test_shape_ops():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  assert lax.tile(x, (1, 2)).tolist() == np.tile(x, (1, 2)).tolist()
  with pytest.raises(ValueError, match=r"reps length must be equal to the ndim of x"):
    lax.tile(x, (2,))
  assert lax.stack([x, x], 1).tolist() == np.stack([x, x], 1).tolist()
  assert [a.tolist() for a in lax.unstack(x, 1)] == [list(c) for c in x.T]
  assert lax.collapse(np.ones((2, 3, 4, 5)), 1, 3).shape == (2, 12, 5)
  assert lax.collapse(np.ones((2, 3, 4, 5)), 1).shape == (2, 60)
  assert [a.tolist() for a in lax.split(np.arange(6), (1, 2, 3))] == [[0], [1, 2], [3, 4, 5]]
  with pytest.raises(ValueError, match="Sum of sizes 5 must be equal to dimension 0"):
    lax.split(np.arange(6), (2, 3))
  taken = lax.index_take(np.arange(24).reshape(2, 3, 4), (np.array([0, 1]), np.array([2, 3])),
                         (0, 2))
  assert taken.tolist() == [[2, 6, 10], [15, 19, 23]]
  assert lax.shape_as_value((2, 3)).tolist() == [2, 3]
  assert lax.broadcast_like(np.float32(1), x).shape == (2, 3)
  assert lax.dtype(1.0) == np.float32 and lax.dtype(np.int8(1)) == np.int8
  assert lax.dtype(int) == np.int32 and lax.dtype(x) == np.float32
  grad = minijax.grad(lambda x: (lax.tile(x, (2, 2)) * 2).sum() + lax.unstack(x)[1].sum())(x)
  assert grad.tolist() == [[8, 8, 8], [9, 9, 9]]


def _np_patches(x, window):
  """NCHW patches, feature index c * prod(window) + p, VALID, stride 1."""
  n, c, h, w = x.shape
  kh, kw = window
  out = np.zeros((n, c * kh * kw, h - kh + 1, w - kw + 1), x.dtype)
  for i in range(h - kh + 1):
    for j in range(w - kw + 1):
      out[:, :, i, j] = x[:, :, i:i + kh, j:j + kw].reshape(n, c * kh * kw)
  return out


def test_conv_general_dilated_patches_and_local():
  rng = np.random.RandomState(0)
  x = rng.randn(2, 3, 5, 4).astype(np.float32)
  patches = _np_patches(x, (2, 3))
  close(lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID"), patches)
  nhwc = lax.conv_general_dilated_patches(x.transpose(0, 2, 3, 1), (2, 3), (1, 1), "VALID",
                                          dimension_numbers=("NHWC", "OIHW", "NHWC"))
  close(nhwc, patches.transpose(0, 2, 3, 1))
  w = rng.randn(6, 18, 4, 2).astype(np.float32)
  close(lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 3)),
        np.einsum("nihw,oihw->nohw", patches, w), rtol=1e-5)
  close(lax.conv_general_dilated_local(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0),
                                       (1, 1), "VALID", (2, 3),
                                       dimension_numbers=("NHWC", "HWIO", "NCHW")),
        np.einsum("nihw,oihw->nohw", patches, w), rtol=1e-5)
  grad = minijax.grad(lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1),
                                                                 "VALID").sum())(x)
  assert grad[0, 0].tolist() == [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [2, 4, 4, 2],
                                 [1, 2, 2, 1]]


def test_ragged_dot():
  rng = np.random.RandomState(0)
  a = rng.randn(7, 3).astype(np.float32)
  b = rng.randn(3, 3, 2).astype(np.float32)
  sizes = np.array([2, 0, 4], np.int32)
  expected = np.zeros((7, 2), np.float32)
  start = 0
  for g, size in enumerate(sizes):
    expected[start:start + size] = a[start:start + size] @ b[g]
    start += size
  close(lax.ragged_dot(a, b, sizes), expected, rtol=1e-5)
  close(minijax.jit(lax.ragged_dot)(a, b, sizes), expected, rtol=1e-5)
  grad = minijax.grad(lambda b: lax.ragged_dot(a, b, sizes).sum())(b)
  close(grad[1], np.zeros((3, 2)))
  close(grad[2], np.repeat(a[2:6].sum(0)[:, None], 2, 1), rtol=1e-5)


def test_ragged_dot_general_in_its_three_modes():
  rng = np.random.RandomState(1)
  sizes = np.array([2, 0, 3], np.int32)  # (5 of 6 entries: the last one is in no group)
  groups = [(0, 2), (2, 2), (2, 5)]
  numbers = lax.RaggedDotDimensionNumbers
  # 1. ragged free dimension m, rhs group dimension first: [b, m, k] x [g, b, k, n]
  lhs, rhs = rng.randn(2, 6, 4).astype(np.float32), rng.randn(3, 2, 4, 5).astype(np.float32)
  want = np.zeros((2, 6, 5), np.float32)
  for j, (lo, hi) in enumerate(groups):
    want[:, lo:hi] = np.einsum("bmk,bkn->bmn", lhs[:, lo:hi], rhs[j])
  dims = numbers((((2,), (2,)), ((0,), (1,))), (1,), (0,))
  close(lax.ragged_dot_general(lhs, rhs, sizes, dims), want, rtol=1e-5)
  close(minijax.jit(lambda l, r: lax.ragged_dot_general(l, r, sizes, dims))(lhs, rhs), want,
        rtol=1e-5)
  # 2. ragged contracting dimension k: one product per group, stacked first
  lhs, rhs = rng.randn(2, 3, 6).astype(np.float32), rng.randn(2, 6, 5).astype(np.float32)
  want = np.stack([np.einsum("bmk,bkn->bmn", lhs[..., lo:hi], rhs[:, lo:hi])
                   for lo, hi in groups])
  dims = numbers((((2,), (1,)), ((0,), (0,))), (2,), ())
  close(lax.ragged_dot_general(lhs, rhs, sizes, dims), want, rtol=1e-5)
  # 3. ragged batch dimension: the plain batched product (JAX's: group_sizes unused)
  lhs, rhs = rng.randn(6, 3, 4).astype(np.float32), rng.randn(6, 4, 5).astype(np.float32)
  dims = numbers((((2,), (1,)), ((0,), (0,))), (0,), ())
  close(lax.ragged_dot_general(lhs, rhs, sizes, dims), lhs @ rhs, rtol=1e-5)
  with pytest.raises(ValueError, match="rhs has one group dimension when"):
    lax.ragged_dot_general(lhs, rhs, sizes, numbers((((2,), (1,)), ((), ())), (1,), ()))


def test_mulhi_of_64_bit_integers():
  rng = np.random.RandomState(0)
  with minijax.enable_x64():
    for dtype in (np.int64, np.uint64):
      info = np.iinfo(dtype)
      x = rng.randint(info.min, info.max, size=200, dtype=dtype)
      y = rng.randint(info.min, info.max, size=200, dtype=dtype)
      x[:3], y[:3] = [info.min, info.max, info.max], [info.min, info.max, info.min]
      expected = np.array([((int(a) * int(b)) >> 64) % 2**64 for a, b in zip(x, y)],
                          np.uint64).view(dtype)
      np.testing.assert_array_equal(lax.mulhi(x, y), expected)
      np.testing.assert_array_equal(lax.mulhi(x[:3, None], y[None, :4]),
                                    np.array([[((int(a) * int(b)) >> 64) % 2**64 for b in y[:4]]
                                              for a in x[:3]], np.uint64).view(dtype))


def test_special_functions_of_half_floats_compute_in_float32():
  # (bessel_i0e's series overflowed float16: inf where JAX gives 0.1179; betainc's fraction
  # lost its way in bfloat16, even to a negative value)
  x = np.array([1.0, 8.0, 14.0], np.float32)
  for half in (np.float16, minijax.numpy.bfloat16):
    close(lax.bessel_i0e(x.astype(half)).astype(np.float32),
          np.asarray(lax.bessel_i0e(x.astype(half).astype(np.float32))).astype(half), rtol=0)
    a, b, p = (np.array(v, np.float32) for v in ([0.5, 2.0, 7.0], [3.0, 0.7, 2.0], [0.1, 0.5, 0.9]))
    close(lax.betainc(a.astype(half), b.astype(half), p.astype(half)).astype(np.float32),
          np.asarray(lax.betainc(*(v.astype(half).astype(np.float32) for v in (a, b, p))))
          .astype(half), rtol=0)
    assert lax.igamma(half(2.0), half(1.5)).dtype == half


def test_complex_convolution_is_three_real_ones():
  """As JAX lowers it on the CPU (Gauss's product); the values are the complex product's."""
  rng = np.random.RandomState(0)
  x = (rng.randn(1, 1, 9) + 1j * rng.randn(1, 1, 9)).astype(np.complex64)
  w = (rng.randn(1, 1, 3) + 1j * rng.randn(1, 1, 3)).astype(np.complex64)
  out = lax.conv_general_dilated(x, w, (1,), "VALID")
  close(out[0, 0], np.convolve(x[0, 0], w[0, 0, ::-1], "valid"), rtol=1e-5)
  hlo = minijax.jit(lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID")).lower(
      x, w).as_text()
  assert hlo.count("mhlo.convolution") == 3 and "complex" in hlo


def test_composite_is_a_named_call():
  scale = lax.composite(lambda x, *, n: x * n, name="my.scale")
  assert scale(np.float32(2.0), n=3) == 6.0
  assert "name=my.scale" in str(minijax.make_jaxpr(lambda x: scale(x, n=3))(1.0))
  assert minijax.grad(lambda x: scale(x, n=3))(1.0) == 3.0


def test_dot_algorithm_presets_lower_as_jax_does_on_the_cpu():
  import ml_dtypes
  rng = np.random.RandomState(0)
  x, y = rng.randn(3, 3).astype(np.float32), rng.randn(3, 3).astype(np.float32)
  P = lax.DotAlgorithmPreset
  for preset in (P.DEFAULT, P.BF16_BF16_F32, P.BF16_BF16_F32_X3, P.F32_F32_F32, P.F64_F64_F64):
    out = minijax.jit(lambda a, b: lax.dot(a, b, precision=preset))(x, y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x @ y, rtol=1e-6)
  halves = minijax.jit(lambda a, b: lax.dot(a, b, precision="F16_F16_F16"))(x, y)
  assert halves.dtype == np.float32  # computed in float16, converted back
  np.testing.assert_allclose(halves, (x.astype(np.float16) @ y.astype(np.float16)), rtol=2e-3)
  text = minijax.jit(lambda a, b: lax.dot(a, b, precision=P.F16_F16_F16)).lower(x, y).as_text()
  assert "accumulation_type = f16" in text and "f16" in text
  b = x.astype(ml_dtypes.bfloat16)
  assert minijax.jit(lambda a: lax.dot(a, a, precision=P.BF16_BF16_F32))(b).dtype == ml_dtypes.bfloat16
  h = x.astype(np.float16)  # float16 operands are converted to bfloat16, accumulated in float32
  assert minijax.jit(lambda a: lax.dot(a, a, precision=P.BF16_BF16_F32))(h).dtype == np.float16
  for unsupported in (P.TF32_TF32_F32, P.ANY_F8_ANY_F8_F32,
                      lax.DotAlgorithm(np.float32, np.float32, np.float32)):
    with pytest.raises(ValueError, match="is not supported by dot_general on CPU"):
      minijax.jit(lambda a: lax.dot(a, a, precision=unsupported))(x)
  np.testing.assert_allclose(minijax.grad(lambda a: lax.dot(a, y, precision="F32_F32_F32").sum())(x),
                             np.ones((3, 3)) @ y.T, rtol=1e-6)
  assert "precision=F16_F16_F16" in str(minijax.make_jaxpr(
      lambda a: lax.dot(a, a, precision=P.F16_F16_F16))(x))


def test_after_all_rng_uniform_pbroadcast_and_pcast():
  token = minijax.jit(lambda t: lax.after_all(t, lax.create_token()))(lax.create_token())
  assert "after_all" in str(minijax.make_jaxpr(lambda t: lax.after_all(t, t))(lax.create_token()))
  assert token is not None
  with pytest.raises(TypeError, match="every operand must be a token"):
    lax.after_all(np.float32(1.0))
  draws = np.asarray(minijax.jit(lambda: lax.rng_uniform(np.float32(2.0), np.float32(3.0), (1000,)))())
  assert draws.shape == (1000,) and draws.dtype == np.float32
  assert draws.min() >= 2.0 and draws.max() < 3.0 and 2.4 < draws.mean() < 2.6
  x = np.arange(4.0, dtype=np.float32)
  out = minijax.vmap(lambda v: lax.pbroadcast({"a": v, "b": 2 * v}, "i", 2), axis_name="i")(x)
  assert np.asarray(out["a"]).tolist() == [2.0] * 4 and np.asarray(out["b"]).tolist() == [4.0] * 4
  assert np.asarray(minijax.vmap(lambda v: lax.pcast(v, "i", to="varying"), axis_name="i")(x)).tolist() == x.tolist()
  with pytest.raises(ValueError, match="to must be"):
    lax.pcast(x, "i", to="sideways")


def test_mul_out_dtype_multiplies_in_the_wider_type():
  x = np.array([100, -100], np.int8)
  out = lax.mul(x, x, out_dtype=np.int16)
  assert out.dtype == np.int16 and np.asarray(out).tolist() == [10000, 10000]
  assert np.asarray(lax.mul(x, x)).tolist() == [16, 16]  # int8 wraps


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "tanh", "exp", "exp2", "expm1", "log",
                                  "log1p", "logistic", "sqrt", "rsqrt", "cbrt"])
def test_accuracy_is_an_equation_parameter_lowered_to_result_accuracy(name):
  fn = getattr(lax, name)
  x = np.linspace(0.1, 0.9, 5).astype(np.float32)
  tolerance = lax.Tolerance(atol=1e-3, rtol=1e-4)
  jaxpr = str(minijax.make_jaxpr(lambda v: fn(v, accuracy=tolerance))(x))
  assert f"{name}[accuracy=Tolerance(atol=0.001, rtol=0.0001, ulps=0)]" in jaxpr
  assert "accuracy" not in str(minijax.make_jaxpr(fn)(x))  # (only when given)
  text = minijax.jit(lambda v: fn(v, accuracy=lax.AccuracyMode.HIGHEST)).lower(x).as_text()
  assert "result_accuracy = #mhlo.result_accuracy<mode = #mhlo.result_accuracy_mode<HIGHEST>>" in text
  assert "result_accuracy" not in minijax.jit(
      lambda v: fn(v, accuracy=lax.AccuracyMode.DEFAULT)).lower(x).as_text()
  # XLA's CPU has one implementation of each: the same values, jitted, batched, differentiated
  np.testing.assert_array_equal(minijax.jit(lambda v: fn(v, accuracy=tolerance))(x), fn(x))
  np.testing.assert_array_equal(minijax.vmap(lambda v: fn(v, accuracy=tolerance))(x), fn(x))
  np.testing.assert_array_equal(minijax.grad(lambda v: fn(v, accuracy=tolerance).sum())(x),
                                minijax.grad(lambda v: fn(v).sum())(x))


def test_accuracy_arguments_are_checked_as_jax_checks_them():
  with pytest.raises(NotImplementedError, match="Accuracy 3 not supported"):
    lax.sin(np.float32(1.0), accuracy=3)
  with pytest.raises(ValueError, match="non-negative"):
    lax.Tolerance(atol=-1.0)
  with pytest.raises(ValueError, match="At least one of atol, rtol, or ulps"):
    lax.Tolerance()
  cos_under_sin = minijax.make_jaxpr(minijax.grad(
      lambda v: lax.sin(v, accuracy=lax.AccuracyMode.HIGHEST)))(np.float32(1.0))
  assert "cos[accuracy=AccuracyMode.HIGHEST]" in str(cos_under_sin)
