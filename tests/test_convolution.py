"""lax.conv_general_dilated and its wrappers eagerly against a numpy convolution written
here, under jit against eager, and their bad-input errors; conv_transpose against values
recorded from JAX 0.10.2.  Gradients (to second order) and vmap are rows of the tables in
test_transform_ops.py."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax

pytestmark = pytest.mark.usefixtures("x64_off")
_rng = np.random.default_rng(7)


def _dilate(x, dilation, first_axis=2):
  for k, d in enumerate(dilation):
    axis = first_axis + k
    if d == 1 or x.shape[axis] == 0:
      continue
    shape = list(x.shape)
    shape[axis] = 1 + d * (shape[axis] - 1)
    out = np.zeros(shape, x.dtype)
    index = [slice(None)] * x.ndim
    index[axis] = slice(None, None, d)
    out[tuple(index)] = x
    x = out
  return x


def _pad(x, pads, value=0, first_axis=2):
  """Pads (low, high) per axis from `first_axis`; negative pads crop."""
  widths = [(0, 0)] * first_axis + [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
  x = np.pad(x, widths, constant_values=value)
  index = [slice(None)] * first_axis + [slice(max(-lo, 0), x.shape[first_axis + k] - max(-hi, 0))
                                        for k, (lo, hi) in enumerate(pads)]
  return x[tuple(index)]


def _windows(x, window, strides, first_axis=2):
  """(..., out positions..., window...) views of `x` over its axes from `first_axis`."""
  axes = tuple(range(first_axis, x.ndim))
  view = np.lib.stride_tricks.sliding_window_view(x, window, axis=axes)
  index = [slice(None)] * first_axis + [slice(None, None, s) for s in strides]
  return view[tuple(index)]


def np_conv(lhs, rhs, strides, padding, lhs_dilation=None, rhs_dilation=None,
            dimension_numbers=None, feature_group_count=1, batch_group_count=1):
  """A direct convolution: dilate, pad, take windows, contract; groups by splitting."""
  dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
  n = lhs.ndim - 2
  x = np.transpose(lhs, dn.lhs_spec).astype(np.float64)
  w = np.transpose(rhs, dn.rhs_spec).astype(np.float64)
  if isinstance(padding, str):
    window = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dilation or (1,) * n)]
    padding = lax.padtype_to_pads(x.shape[2:], window, strides, padding)
  x = _pad(_dilate(x, lhs_dilation or (1,) * n), padding)
  w = _dilate(w, rhs_dilation or (1,) * n)
  if batch_group_count > 1:
    pairs = zip(np.split(x, batch_group_count, 0), np.split(w, batch_group_count, 0))
  else:
    pairs = zip(np.split(x, feature_group_count, 1), np.split(w, feature_group_count, 0))
  outs = []
  for xg, wg in pairs:
    win = _windows(xg, wg.shape[2:], strides)
    spatial = win.shape[2:2 + n]
    flat = win.reshape(win.shape[:2] + (int(np.prod(spatial)), int(np.prod(wg.shape[2:]))))
    out = np.einsum("ncpk,ock->nop", flat, wg.reshape(wg.shape[:2] + (-1,)))
    outs.append(out.reshape(out.shape[:2] + spatial))
  out = np.concatenate(outs, 1)
  return np.transpose(out, np.argsort(dn.out_spec))


def sample(*shape, dtype=np.float32):
  if np.dtype(dtype).kind == "i":
    return _rng.integers(-3, 4, shape).astype(dtype)
  return _rng.standard_normal(shape).astype(dtype)


NHWC = ("NHWC", "HWIO", "NHWC")
# name -> (lhs shape, rhs shape, keyword arguments of conv_general_dilated)
CONVS = {
    "1d_same": ((2, 3, 7), (4, 3, 3), dict(window_strides=(1,), padding="SAME")),
    "2d_valid": ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    "2d_strided_same": ((1, 2, 7, 8), (3, 2, 3, 3), dict(window_strides=(2, 3),
                                                         padding="SAME")),
    "same_lower": ((1, 2, 6, 5), (2, 2, 2, 4), dict(window_strides=(1, 2),
                                                    padding="SAME_LOWER")),
    "explicit_negative_padding": ((2, 1, 6, 6), (2, 1, 3, 3),
                                  dict(window_strides=(1, 2), padding=[(2, -1), (0, 3)])),
    "lhs_dilation": ((1, 2, 4, 3), (2, 2, 3, 2),
                     dict(window_strides=(1, 1), padding=[(2, 2), (1, 1)], lhs_dilation=(2, 3))),
    "rhs_dilation": ((2, 2, 8, 7), (3, 2, 3, 2),
                     dict(window_strides=(1, 2), padding="SAME", rhs_dilation=(2, 3))),
    "nhwc": ((2, 6, 5, 3), (3, 2, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                                               dimension_numbers=NHWC)),
    "mixed_layouts": ((5, 2, 6, 3), (3, 2, 3, 4), dict(window_strides=(2, 1), padding="VALID",
                                                        dimension_numbers=("HNWC", "HWIO",
                                                                           "WHCN"))),
    "spec_tuples": ((2, 6, 5, 3), (4, 3, 3, 2), dict(
        window_strides=(1, 1), padding="SAME",
        dimension_numbers=lax.ConvDimensionNumbers((0, 3, 1, 2), (0, 1, 2, 3), (0, 3, 1, 2)))),
    "feature_groups": ((2, 6, 5, 5), (4, 3, 2, 2), dict(window_strides=(1, 1), padding="SAME",
                                                         feature_group_count=2)),
    "depthwise": ((1, 3, 5, 4), (6, 1, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                                    feature_group_count=3)),
    "batch_groups": ((4, 3, 5), (6, 3, 2), dict(window_strides=(2,), padding=[(1, 1)],
                                                batch_group_count=2)),
    "3d": ((1, 2, 4, 3, 5), (2, 2, 2, 2, 3), dict(window_strides=(1, 1, 2), padding="SAME")),
    "empty_batch": ((0, 2, 4, 4), (3, 2, 2, 2), dict(window_strides=(1, 1), padding="VALID")),
}


@pytest.mark.parametrize("name", list(CONVS))
def test_conv_general_dilated_matches_numpy_eagerly_and_under_jit(name):
  lhs_shape, rhs_shape, kw = CONVS[name]
  lhs, rhs = sample(*lhs_shape), sample(*rhs_shape)
  expected = np_conv(lhs, rhs, kw["window_strides"], kw["padding"], kw.get("lhs_dilation"),
                     kw.get("rhs_dilation"), kw.get("dimension_numbers"),
                     kw.get("feature_group_count", 1), kw.get("batch_group_count", 1))
  out = lax.conv_general_dilated(lhs, rhs, **kw)
  assert out.dtype == np.float32 and out.shape == expected.shape
  np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
  jitted = minijax.jit(lambda a, b: lax.conv_general_dilated(a, b, **kw))(lhs, rhs)
  np.testing.assert_allclose(jitted, out, rtol=1e-6, atol=1e-6)


def test_integer_convolution_and_preferred_element_type():
  lhs, rhs = sample(2, 3, 5, dtype=np.int32), sample(4, 3, 2, dtype=np.int32)
  expected = np_conv(lhs, rhs, (1,), "VALID")
  out = lax.conv_general_dilated(lhs, rhs, (1,), "VALID")
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, expected)
  wide = lax.conv_general_dilated(lhs, rhs, (1,), "VALID", preferred_element_type=np.float32)
  assert wide.dtype == np.float32
  np.testing.assert_array_equal(wide, expected)
  x = sample(1, 2, 4).astype(np.float16)
  out = lax.conv_general_dilated(x, x[:, :, :2], (1,), "VALID",
                                 preferred_element_type=np.float32)
  assert out.dtype == np.float32
  with pytest.raises(TypeError, match="must not be narrower"):
    lax.conv_general_dilated(lhs.astype(np.float32), rhs.astype(np.float32), (1,), "VALID",
                             preferred_element_type=np.float16)
  with pytest.raises(TypeError, match="incompatible with `preferred_element_type`"):
    lax.conv_general_dilated(lhs.astype(np.float32), rhs.astype(np.float32), (1,), "VALID",
                             preferred_element_type=np.int32)


def test_conv_and_conv_with_general_padding_are_conv_general_dilated():
  lhs, rhs = sample(2, 3, 6, 5), sample(4, 3, 3, 2)
  np.testing.assert_allclose(lax.conv(lhs, rhs, (2, 1), "SAME"),
                             np_conv(lhs, rhs, (2, 1), "SAME"), rtol=1e-5, atol=1e-5)
  out = lax.conv_with_general_padding(lhs, rhs, (1, 1), [(1, 0), (2, 1)], (2, 1), (1, 2))
  np.testing.assert_allclose(out, np_conv(lhs, rhs, (1, 1), [(1, 0), (2, 1)], (2, 1), (1, 2)),
                             rtol=1e-5, atol=1e-5)


def test_precision_reaches_the_convolution_and_changes_nothing_on_cpu():
  lhs, rhs = sample(1, 2, 5), sample(3, 2, 2)
  f = lambda a, b: lax.conv(a, b, (1,), "SAME", precision=lax.Precision.HIGHEST)
  text = minijax.jit(f).lower(lhs, rhs).as_text()
  assert "mhlo.convolution" in text and "precision_config = [#mhlo<precision HIGHEST>" in text
  np.testing.assert_allclose(f(lhs, rhs), lax.conv(lhs, rhs, (1,), "SAME"), rtol=1e-6)
  g = lambda a, b: lax.conv(a, b, (1,), "SAME", precision=("bfloat16", "float32"))
  text = minijax.jit(g).lower(lhs, rhs).as_text()
  assert "[#mhlo<precision DEFAULT>, #mhlo<precision HIGHEST>]" in text
  grads = minijax.grad(lambda a, b: lax.conv(a, b, (1,), "SAME", precision="high").sum(),
                       (0, 1))(lhs, rhs)
  assert [g.shape for g in grads] == [lhs.shape, rhs.shape]
  with pytest.raises(ValueError, match="Precision argument must be one of"):
    lax.conv(lhs, rhs, (1,), "SAME", precision="very")


def test_string_dimension_numbers_become_the_specs_of_the_kernel_order():
  dn = lax.conv_dimension_numbers((2, 5, 6, 3), (3, 2, 3, 4), NHWC)
  assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  dn = lax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), ("NCHW", "OIWH", "NWHC"))
  assert dn == lax.ConvDimensionNumbers((0, 1, 3, 2), (0, 1, 2, 3), (0, 3, 1, 2))
  assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == ((0, 1, 2),) * 3
  assert lax.padtype_to_pads((5, 6), (3, 4), (2, 1), "SAME") == [(1, 1), (1, 2)]
  assert lax.padtype_to_pads((5, 6), (3, 4), (2, 1), "same_lower") == [(1, 1), (2, 1)]
  assert lax.conv_shape_tuple((2, 3, 7, 8), (4, 3, 3, 3), (2, 2), "VALID") == (2, 4, 3, 3)
  assert lax.conv_general_shape_tuple((2, 5, 6, 3), (3, 2, 3, 4), (2, 1), "SAME",
                                      NHWC) == (2, 3, 6, 4)


# conv_transpose of x (NHWC) with w (HWIO), values from jax 0.10.2:
# (padding, use_consistent_padding, strides) -> (shape, sum, sum of out * cos(arange(size)))
_X = np.arange(2 * 5 * 4 * 3, dtype=np.float32).reshape(2, 5, 4, 3) / 10
_W = (np.arange(3 * 2 * 3 * 2, dtype=np.float32).reshape(3, 2, 3, 2) % 5 - 2) / 4
CONV_TRANSPOSE_FACTS = [
    ("SAME", False, (1, 1), (2, 5, 4, 2), -72.79999542236328, -2.7840311527252197),
    ("SAME", True, (2, 3), (2, 10, 12, 2), -66.10000610351562, 7.2559003829956055),
    ("VALID", False, (1, 1), (2, 7, 5, 2), -115.99998474121094, 2.5599894523620605),
    ("VALID", False, (2, 3), (2, 11, 12, 2), -116.0, -5.8694844245910645),
    (((1, 2), (0, 1)), False, (1, 1), (2, 6, 4, 2), -92.4000015258789, -7.799182891845703),
    (((1, 2), (0, 1)), False, (2, 3), (2, 10, 10, 2), -92.40001678466797, 30.23466682434082),
    (((1, 2), (0, 1)), True, (1, 1), (2, 4, 4, 2), -53.54999542236328, 2.412045478820801),
    (((1, 2), (0, 1)), True, (2, 3), (2, 8, 10, 2), -88.80000305175781, 2.6080288887023926),
]


@pytest.mark.parametrize("padding,consistent,strides,shape,total,weighted",
                         CONV_TRANSPOSE_FACTS)
def test_conv_transpose_matches_values_recorded_from_jax(padding, consistent, strides, shape,
                                                         total, weighted):
  out = np.asarray(lax.conv_transpose(_X, _W, strides, padding,
                                      use_consistent_padding=consistent))
  assert out.shape == shape
  np.testing.assert_allclose(out.sum(), total, rtol=1e-5)
  np.testing.assert_allclose((out * np.cos(np.arange(out.size)).reshape(shape)).sum(),
                             weighted, rtol=1e-4, atol=1e-4)
  if isinstance(padding, str):
    assert lax.conv_transpose_shape_tuple(_X.shape, _W.shape, strides, padding, NHWC) == shape


def test_conv_transpose_with_a_transposed_kernel_is_the_gradient_of_conv():
  x, w = sample(2, 4, 4, 3), sample(3, 3, 2, 3)  # the forward conv maps 2 -> 3 channels
  y_shape = lax.conv_general_dilated(np.zeros((2, 8, 8, 2), np.float32), w, (2, 2), "SAME",
                                     dimension_numbers=NHWC).shape
  assert y_shape == x.shape
  _, vjp = minijax.vjp(lambda z: lax.conv_general_dilated(z, w, (2, 2), "SAME",
                                                          dimension_numbers=NHWC),
                       np.zeros((2, 8, 8, 2), np.float32))
  np.testing.assert_allclose(lax.conv_transpose(x, w, (2, 2), "SAME", transpose_kernel=True),
                             vjp(x)[0], rtol=1e-5, atol=1e-5)


BAD = [
    (dict(dimension_numbers=("NCHW", "OIHW")), TypeError, "must be length 3, got 2"),
    (dict(dimension_numbers=("NCHW", "OIHW", "NCHX")), TypeError,
     "must each have the same set of spatial characters"),
    (dict(dimension_numbers=("NCCW", "OIHW", "NCHW")), TypeError,
     r"dimension_numbers\[0\] must contain the characters 'N' and 'C' exactly once"),
    (dict(dimension_numbers=("NCH", "OIH", "NCH")), TypeError,
     r"dimension_numbers\[0\] must have len equal to the ndim of lhs and rhs"),
    (dict(dimension_numbers=["NCHW", 1, 2]), TypeError, "elements must be strings"),
    (dict(dimension_numbers="NCHW"), TypeError, "must be tuple/list or None"),
    (dict(padding="FULL"), RuntimeError, "Unrecognized padding type: expected 'VALID', 'SAME'"),
    (dict(padding=[(1,)]), ValueError, "should be a string or a sequence of"),
    (dict(padding=[(1, 1)]), ValueError, "must have the same number of dimensions"),
    (dict(window_strides=(1,)), ValueError, "must have the same number of dimensions"),
    (dict(feature_group_count=2), ValueError,
     r"feature_group_count must equal the rhs input feature dimension size, but 4 // 2 != 3"),
    (dict(feature_group_count=0), ValueError, "feature_group_count must be a positive integer"),
    (dict(batch_group_count=3), ValueError,
     "batch_group_count must divide lhs batch dimension size"),
    (dict(lhs_dilation=(2, 2)), ValueError, "String padding is not implemented for transposed"),
]


@pytest.mark.parametrize("kw,exc,msg", BAD)
def test_bad_convolution_arguments_raise_jax_errors(kw, exc, msg):
  lhs, rhs = np.ones((2, 4, 5, 5), np.float32), np.ones((3, 4, 2, 2), np.float32)
  args = dict(window_strides=(1, 1), padding="SAME")
  args.update(kw)
  if "feature_group_count" in kw:
    rhs = np.ones((3, 3, 2, 2), np.float32)
  with pytest.raises(exc, match=msg):
    lax.conv_general_dilated(lhs, rhs, **args)


def test_mismatched_operands_raise():
  with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
    lax.conv(np.ones((1, 2, 4), np.float32), np.ones((1, 2, 2), np.int32), (1,), "SAME")
  with pytest.raises(TypeError, match="lhs and rhs ndim to be equal"):
    lax.conv(np.ones((1, 2, 4), np.float32), np.ones((1, 2), np.float32), (1,), "SAME")
  with pytest.raises(ValueError, match="Negative padding is larger than the size"):
    lax.conv_general_dilated(np.ones((1, 1, 2), np.float32), np.ones((1, 1, 1), np.float32),
                             (1,), [(-2, -1)])


def test_the_gradient_of_a_strided_convolution_is_two_convolutions():
  lhs, rhs = sample(2, 3, 7, 6), sample(4, 3, 3, 2)
  f = lambda a, b: lax.conv_general_dilated(a, b, (2, 1), "SAME").sum()
  text = minijax.jit(minijax.grad(f, (0, 1))).lower(lhs, rhs).compile().as_text()
  assert text.count(" convolution(") == 2
