"""Convolutions: `conv_general_dilated` and the conveniences built on it.

`conv_general_dilated_p` is XLA's convolution: an lhs (batch, feature, spatial axes) slid
over by an rhs kernel (out feature, in feature, spatial axes), with window strides, explicit
(low, high) padding of each spatial axis, lhs dilation (zeros inserted between input
elements: a transposed convolution), rhs dilation (an atrous kernel), feature groups
(grouped or depthwise convolution) and batch groups.  `ConvDimensionNumbers` says where
each of those axes sits in lhs, rhs and output as three permutations ("specs"), each
listing the batch-like axis, the feature-like axis, then the spatial axes in the order of
the kernel's; string specs such as ('NHWC', 'HWIO', 'NHWC') are turned into them.

The primitive is bilinear, so its jvp is the sum of two convolutions and its transposes
are convolutions too.  With the other operand fixed, the cotangent of the lhs is the
cotangent convolved with the spatially reversed kernel (in and out features swapped),
window strides and lhs dilation trading places and the padding chosen so that every input
position gets its share; the cotangent of the rhs is the lhs convolved with the cotangent
used as a kernel, batch and feature axes swapping roles, window strides becoming rhs
dilation.  Feature grouping and batch grouping map onto each other under transposition,
so each transpose reshapes a group axis between kernel features (or output features and
batch) before and after.  vmap folds the mapped axis into a batch, feature or group axis
of the same primitive and splits it out of the result, so a vmapped convolution stays
one convolution.
"""
from __future__ import annotations

from typing import Union, NamedTuple, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax.dot import (canonicalize_precision, canonicalize_preferred,
                             check_preferred_element_type, precision_attr)
from minijax.lax.structural import convert_to_array, full, reshape, rev, transpose
from minijax.lowering import mlir

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations",
           "conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
           "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "padtype_to_pads", "conv_general_dilated_p", "conv_general_dilated_patches",
           "ConvGeneralDilatedDimensionNumbers", "conv_general_dilated_local"]


class ConvDimensionNumbers(NamedTuple):
  """Where the axes of a convolution sit: `lhs_spec` is (batch axis, feature axis, spatial
  axes...), `rhs_spec` (out feature axis, in feature axis, spatial axes...), `out_spec`
  (batch axis, feature axis, spatial axes...)."""
  lhs_spec: Sequence[int]
  rhs_spec: Sequence[int]
  out_spec: Sequence[int]


# what `dimension_numbers` may be: None, three layout strings, or a ConvDimensionNumbers
ConvGeneralDilatedDimensionNumbers = Union[None, ConvDimensionNumbers, tuple[str, str, str]]


def conv_general_permutations(dimension_numbers):
  """The three specs of string dimension numbers like ('NCHW', 'OIHW', 'NCHW')."""
  lhs, rhs, out = dimension_numbers
  pairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, (spec, (a, b)) in enumerate(zip(dimension_numbers, pairs)):
    if not spec.count(a) == spec.count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{a}' and '{b}' exactly once, got {spec}.")
    if len(set(spec)) != len(spec):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                      f"characters, got {spec}.")
  spatial = [set(spec) - set(pair) for spec, pair in zip(dimension_numbers, pairs)]
  if not spatial[0] == spatial[1] == spatial[2]:
    raise TypeError("convolution dimension_numbers elements must each have the same set "
                    f"of spatial characters, got {tuple(dimension_numbers)}.")
  kernel_order = [c for c in rhs if c not in "OI"]

  def spec_of(spec, pair):
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(
        spec.index(c) for c in kernel_order)
  return tuple(spec_of(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
  """`dimension_numbers` (None, three strings, or a ConvDimensionNumbers) as a
  ConvDimensionNumbers of integer tuples."""
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                    f"{len(lhs_shape)} and {len(rhs_shape)}.")
  if dimension_numbers is None:
    identity = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(identity, identity, identity)
  if not isinstance(dimension_numbers, (list, tuple)):
    raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")
  if len(dimension_numbers) != 3:
    raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                    f"{len(dimension_numbers)}.")
  if not all(isinstance(s, str) for s in dimension_numbers):
    raise TypeError("convolution dimension_numbers elements must be strings, got "
                    f"{tuple(type(s) for s in dimension_numbers)}.")
  for i, spec in enumerate(dimension_numbers):
    if len(spec) != len(lhs_shape):
      raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim "
                      f"of lhs and rhs, got {len(spec)} for lhs and rhs shapes "
                      f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
  return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> list[tuple[int, int]]:
  """(low, high) pads per axis for 'VALID', 'SAME' (an odd total pads one more at the end)
  or 'SAME_LOWER' (one more at the start)."""
  kind = padding.upper() if isinstance(padding, str) else padding
  if kind not in ("VALID", "SAME", "SAME_LOWER"):
    raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                       f"'SAME_LOWER', got {padding}.")
  if kind == "VALID":
    return [(0, 0)] * len(in_shape)
  pads = []
  for n, k, s in zip(in_shape, window_shape, window_strides):
    out = -(-int(n) // int(s))
    total = max((out - 1) * int(s) + int(k) - int(n), 0)
    small, large = total // 2, total - total // 2
    pads.append((small, large) if kind == "SAME" else (large, small))
  return pads


def _dilate(sizes, dilation):
  return tuple(0 if n == 0 else 1 + d * (n - 1) for n, d in zip(sizes, dilation))


def _strided_size(padded: int, window: int, stride: int) -> int:
  return max(padded - window + stride, 0) // stride


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The output shape of a convolution of shapes in canonical order (lhs: N, C, spatial;
  rhs: O, I, spatial; output: N, C, spatial)."""
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError("Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  padded = [n + lo + hi for n, (lo, hi) in zip(lhs_shape[2:], pads)]
  if any(p < 0 for p in padded):
    raise ValueError("Negative padding is larger than the size of the corresponding "
                     f"dimension: got padding={tuple(pads)} for "
                     f"lhs_shape[2:]={tuple(lhs_shape[2:])}")
  spatial = tuple(_strided_size(p, k, s) for p, k, s in zip(padded, rhs_shape[2:], strides))
  return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + spatial


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  out = conv_shape_tuple(np.take(lhs_shape, lhs_perm).tolist(),
                         np.take(rhs_shape, rhs_perm).tolist(), window_strides, padding)
  return tuple(np.take(out, np.argsort(out_perm)).tolist())


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  lhs_t = np.take(lhs_shape, lhs_perm).tolist()
  rhs_t = np.take(rhs_shape, rhs_perm).tolist()
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(k, s, padding)
               for k, s in zip(rhs_t[2:], window_strides)]
  spatial = [(n - 1) * s - k + 2 + lo + hi
             for n, k, s, (lo, hi) in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
  out = (lhs_t[0], rhs_t[0], *spatial)
  return tuple(np.take(out, np.argsort(out_perm)).tolist())


# ----------------------------------------------------------------------------- the primitive

conv_general_dilated_p = Primitive("conv_general_dilated")


def _conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
  name = "conv_general_dilated"
  if lhs.ndim != rhs.ndim:
    raise ValueError(f"{name} lhs and rhs must have the same number of dimensions, but got "
                     f"{lhs.shape} and {rhs.shape}.")
  if lhs.ndim < 2:
    raise ValueError(f"{name} needs operands of rank 2 or more (batch and feature axes), "
                     f"got {lhs.str_short()} and {rhs.str_short()}")
  for spec, what in zip(dimension_numbers, ("lhs", "rhs", "out")):
    if sorted(spec) != list(range(lhs.ndim)):
      raise TypeError(f"{name} dimension_numbers {what}_spec {tuple(spec)} is not a "
                      f"permutation of the axes of a rank-{lhs.ndim} operand")
  if lhs.dtype != rhs.dtype:
    raise TypeError(f"{name} requires arguments to have the same dtypes, got "
                    f"{lhs.dtype}, {rhs.dtype}.")
  if lhs.dtype == dtypes.bool_:
    raise TypeError(f"{name} does not accept dtype bool; convert the operands to a number "
                    "type first")
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  g, b = feature_group_count, batch_group_count
  if not g > 0:
    raise ValueError(f"{name} feature_group_count must be a positive integer, got {g}.")
  features = lhs.shape[lhs_spec[1]]
  if features % g:
    raise ValueError(f"{name} feature_group_count must divide lhs feature dimension size, "
                     f"but {g} does not divide {features}.")
  if features // g != rhs.shape[rhs_spec[1]]:
    raise ValueError(f"{name} lhs feature dimension size divided by feature_group_count "
                     "must equal the rhs input feature dimension size, but "
                     f"{features} // {g} != {rhs.shape[rhs_spec[1]]}.")
  out_features = rhs.shape[rhs_spec[0]]
  if out_features % g:
    raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                     f"feature_group_count, but {out_features} is not a multiple of {g}.")
  if not b > 0:
    raise ValueError(f"{name} batch_group_count must be a positive integer, got {b}.")
  if b > 1 and lhs.shape[lhs_spec[0]] % b:
    raise ValueError(f"{name} batch_group_count must divide lhs batch dimension size, but "
                     f"{b} does not divide {lhs.shape[lhs_spec[0]]}.")
  if out_features % b:
    raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                     f"batch_group_count, but {out_features} is not a multiple of {b}.")
  if b > 1 and g > 1:
    raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, "
                     f"got batch_group_count={b} and feature_group_count={g}")
  n = lhs.ndim - 2
  for what, value in (("window_strides", window_strides), ("padding", padding),
                      ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
    if len(value) != n:
      raise ValueError(f"{name} window and {what} must have the same number of dimensions, "
                       f"but got {n} and {len(value)}")
  for what, value in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                      ("rhs_dilation", rhs_dilation)):
    if any(v < 1 for v in value):
      raise ValueError(f"{name} {what} must be positive integers, got {tuple(value)}")
  lhs_t = np.take(lhs.shape, lhs_spec).tolist()
  rhs_t = np.take(rhs.shape, rhs_spec).tolist()
  lhs_t[2:] = _dilate(lhs_t[2:], lhs_dilation)
  rhs_t[2:] = _dilate(rhs_t[2:], rhs_dilation)
  out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, b)
  shape = tuple(int(d) for d in np.take(out_t, np.argsort(out_spec)))
  dtype = lhs.dtype
  if preferred_element_type is not None:
    check_preferred_element_type(name, dtype, preferred_element_type)
    dtype = preferred_element_type
  return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


conv_general_dilated_p.def_abstract_eval(_conv_abstract_eval)


def _i64(value: int) -> ir.IntegerAttr:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def _conv_lowering(ctx, lhs, rhs, **params):
  """XLA's Convolution; a complex one as three real ones (Gauss's product, as JAX lowers it
  on the CPU, where XLA's complex convolution is a slow loop): with x = a + bi and
  w = c + di, k1 = (a + b) * c, k2 = a * (d - c), k3 = b * (c + d), and x * w is
  (k1 - k3) + (k1 + k2) i."""
  out_aval = ctx.avals_out[0]
  if not np.issubdtype(ctx.avals_in[0].dtype, np.complexfloating):
    return _real_conv_ir(mlir.aval_to_ir_type(out_aval), lhs, rhs, **params)
  part = np.finfo(out_aval.dtype).dtype
  out_type = mlir.aval_to_ir_type(out_aval.update(dtype=part))
  parts = lambda x: (mhlo.RealOp(x).result, mhlo.ImagOp(x).result)
  (a, b), (c, d) = parts(lhs), parts(rhs)
  conv = lambda x, w: _real_conv_ir(out_type, x, w, **params)
  k1 = conv(mhlo.AddOp(a, b).result, c)
  k2 = conv(a, mhlo.SubtractOp(d, c).result)
  k3 = conv(b, mhlo.AddOp(c, d).result)
  return mhlo.ComplexOp(mhlo.SubtractOp(k1, k3).result, mhlo.AddOp(k1, k2).result).result


def _real_conv_ir(out_type, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                  dimension_numbers, feature_group_count, batch_group_count, precision,
                  preferred_element_type):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  dnums = mhlo.ConvDimensionNumbers.get(
      input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
      input_spatial_dimensions=list(lhs_spec[2:]),
      kernel_output_feature_dimension=rhs_spec[0],
      kernel_input_feature_dimension=rhs_spec[1],
      kernel_spatial_dimensions=list(rhs_spec[2:]),
      output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
      output_spatial_dimensions=list(out_spec[2:]))
  pads = np.asarray(padding, np.int64).reshape(len(padding), 2)
  return mhlo.ConvolutionOp(
      out_type, lhs, rhs, dnums, _i64(feature_group_count),
      _i64(batch_group_count), window_strides=list(window_strides),
      padding=ir.DenseIntElementsAttr.get(pads), lhs_dilation=list(lhs_dilation),
      rhs_dilation=list(rhs_dilation), precision_config=precision_attr(precision)).result


mlir.register_lowering(conv_general_dilated_p, _conv_lowering)


def _bind(lhs, rhs, **params):
  return conv_general_dilated_p.bind(lhs, rhs, **params)


def _conv_jvp(primals, tangents, **params):
  lhs, rhs = primals
  t_lhs, t_rhs = tangents
  out = _bind(lhs, rhs, **params)
  tangent = ad.Zero.from_primal_value(out)
  if type(t_lhs) is not ad.Zero:
    tangent = ad.add_tangents(tangent, _bind(t_lhs, rhs, **params))
  if type(t_rhs) is not ad.Zero:
    tangent = ad.add_tangents(tangent, _bind(lhs, t_rhs, **params))
  return out, tangent


def _split_axis(x, axis: int, major: int):
  """`x` with axis `axis` split into (major, rest)."""
  shape = list(x.shape)
  shape[axis:axis + 1] = [major, shape[axis] // major]
  return reshape(x, tuple(shape))


def _merge_axis(x, src: int, dst: int):
  """`x` with axis `src` folded into axis `dst` (numbered once `src` is gone) as its major
  part."""
  perm = [i for i in range(x.ndim) if i != src]
  perm.insert(dst, src)
  shape = [s for i, s in enumerate(x.shape) if i != src]
  shape[dst] *= x.shape[src]
  return reshape(x, tuple(shape), perm)


def _swap_first_two(spec):
  return (spec[1], spec[0]) + tuple(spec[2:])


def _transpose_lhs(ct, rhs, lhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  groups = max(feature_group_count, batch_group_count)
  if groups > 1:
    # the kernel's out-feature groups become in-feature groups of the transposed kernel
    rhs = _merge_axis(_split_axis(rhs, rhs_spec[0], groups), rhs_spec[0], rhs_spec[1])
  in_sizes = [lhs_aval.shape[d] for d in lhs_spec[2:]]
  window = [rhs.shape[d] for d in rhs_spec[2:]]
  out_sizes = [ct.shape[d] for d in out_spec[2:]]
  in_dil, win_dil = _dilate(in_sizes, lhs_dilation), _dilate(window, rhs_dilation)
  out_dil = _dilate(out_sizes, window_strides)
  pads = []
  for n, k, o, (lo, _) in zip(in_dil, win_dil, out_dil, padding):
    before = k - lo - 1
    pads.append((before, n + k - 1 - o - before))
  dnums = ConvDimensionNumbers(out_spec, _swap_first_two(rhs_spec), lhs_spec)
  kernel = rev(rhs, tuple(rhs_spec[2:]))
  out = _bind(ct, kernel, window_strides=tuple(lhs_dilation), padding=tuple(pads),
              lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
              dimension_numbers=dnums, feature_group_count=groups, batch_group_count=1,
              precision=precision, preferred_element_type=preferred_element_type)
  if batch_group_count > 1:
    # the result's feature groups are the lhs batch groups
    out = _merge_axis(_split_axis(out, lhs_spec[1], batch_group_count), lhs_spec[1],
                      lhs_spec[0])
  return out


def _transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  if 0 in ct.shape:
    return full(rhs_aval.shape, 0, rhs_aval.dtype)
  in_sizes = [lhs.shape[d] for d in lhs_spec[2:]]
  window = [rhs_aval.shape[d] for d in rhs_spec[2:]]
  out_sizes = [ct.shape[d] for d in out_spec[2:]]
  in_dil, win_dil = _dilate(in_sizes, lhs_dilation), _dilate(window, rhs_dilation)
  out_dil = _dilate(out_sizes, window_strides)
  pads = [(lo, o - n + k - lo - 1)
          for n, k, o, (lo, _) in zip(in_dil, win_dil, out_dil, padding)]
  dnums = ConvDimensionNumbers(_swap_first_two(lhs_spec), _swap_first_two(out_spec),
                               _swap_first_two(rhs_spec))
  return _bind(lhs, ct, window_strides=tuple(rhs_dilation), padding=tuple(pads),
               lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
               dimension_numbers=dnums, feature_group_count=batch_group_count,
               batch_group_count=feature_group_count, precision=precision,
               preferred_element_type=preferred_element_type)


def _conv_transpose_rule(ct, lhs, rhs, **params):
  from minijax.lax.misc import convert_element_type
  lhs_undefined, rhs_undefined = ad.is_undefined_primal(lhs), ad.is_undefined_primal(rhs)
  lhs_aval = lhs.aval if lhs_undefined else get_aval(lhs)
  rhs_aval = rhs.aval if rhs_undefined else get_aval(rhs)
  if type(ct) is ad.Zero:
    return [ad.Zero(lhs_aval) if lhs_undefined else None,
            ad.Zero(rhs_aval) if rhs_undefined else None]
  params = dict(params, preferred_element_type=None)
  ct = convert_element_type(ct, lhs_aval.dtype)
  t_lhs = t_rhs = None
  if lhs_undefined:
    t_lhs = _transpose_lhs(ct, rhs, lhs_aval, **params)
  if rhs_undefined:
    t_rhs = _transpose_rhs(ct, lhs, rhs_aval, **params)
  return [t_lhs, t_rhs]


ad.primitive_jvps[conv_general_dilated_p] = _conv_jvp
ad.primitive_transposes[conv_general_dilated_p] = _conv_transpose_rule


def _conv_batch(args, dims, **params):
  (lhs, rhs), (dl, dr) = args, dims
  lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
  g, b = params["feature_group_count"], params["batch_group_count"]
  size = lhs.shape[dl] if dl is not None else rhs.shape[dr]
  if size == 0:
    lhs_aval, rhs_aval = map(get_aval, (lhs, rhs))
    unbatched = [ShapedArray(tuple(s for i, s in enumerate(a.shape) if i != d), a.dtype)
                 if d is not None else a for a, d in ((lhs_aval, dl), (rhs_aval, dr))]
    out = _conv_abstract_eval(*unbatched, **params)
    return full((0,) + out.shape, 0, out.dtype), 0
  if dl is not None and dr is not None:
    # each batch element is a group of its own: fold the vmapped axis into the groups
    if b > 1:
      lhs = _merge_axis(lhs, dl, lhs_spec[0])
      params = dict(params, batch_group_count=b * size)
    else:
      lhs = _merge_axis(lhs, dl, lhs_spec[1])
      params = dict(params, feature_group_count=g * size)
    rhs = _merge_axis(rhs, dr, rhs_spec[0])
    return _split_axis(_bind(lhs, rhs, **params), out_spec[1], size), out_spec[1]
  if dl is not None:
    if b == 1:
      out = _bind(_merge_axis(lhs, dl, lhs_spec[0]), rhs, **params)
      return _split_axis(out, out_spec[0], size), out_spec[0]
    # keep the batch groups outermost: (groups, vmapped, per-group batch)
    lhs = batching.moveaxis(lhs, dl, 0)
    spec0 = lhs_spec[0] + 1
    lhs = _split_axis(lhs, spec0, b)  # (vmapped, ..., groups, per-group batch, ...)
    lhs = _merge_axis(lhs, 0, spec0)  # (..., groups, vmapped * per-group batch, ...)
    lhs = _merge_axis(lhs, lhs_spec[0], lhs_spec[0])
    out = _bind(lhs, rhs, **params)
    return _split_axis(out, out_spec[0], size), out_spec[0]
  if g == 1 and b == 1:
    out = _bind(lhs, _merge_axis(rhs, dr, rhs_spec[0]), **params)
    return _split_axis(out, out_spec[1], size), out_spec[1]
  # the kernel's out features hold the groups outermost: (groups, vmapped, per group)
  groups = max(g, b)
  rhs = batching.moveaxis(rhs, dr, 0)
  spec0 = rhs_spec[0] + 1
  rhs = _split_axis(rhs, spec0, groups)
  rhs = _merge_axis(rhs, 0, spec0)
  rhs = _merge_axis(rhs, rhs_spec[0], rhs_spec[0])
  out = _bind(lhs, rhs, **params)
  out = _split_axis(out, out_spec[1], groups)  # (groups, vmapped * per group)
  out = _split_axis(out, out_spec[1] + 1, size)  # (groups, vmapped, per group)
  out = _merge_axis(out, out_spec[1], out_spec[1] + 1)  # (vmapped, groups * per group)
  return out, out_spec[1]


batching.primitive_batchers[conv_general_dilated_p] = _conv_batch


# ----------------------------------------------------------------------------- the API

def _int_tuple(name: str, values, n: int, default: int = 1) -> tuple[int, ...]:
  if values is None:
    return (default,) * n
  try:
    return tuple(int(v) for v in values)
  except TypeError:
    raise TypeError(f"conv_general_dilated {name} must be a sequence of {n} integers, got "
                    f"{values!r}") from None


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
  """General n-dimensional convolution with dilations, padding and groups (XLA's Conv).

  `padding` is 'SAME', 'SAME_LOWER', 'VALID' or a sequence of n (low, high) pairs;
  `dimension_numbers` is None (('NCHW', 'OIHW', 'NCHW') and its n-d analogues), three
  strings, or a `ConvDimensionNumbers`."""
  if out_sharding is not None:
    raise NotImplementedError("conv_general_dilated: out_sharding is not supported by "
                              "minijax (one device per computation)")
  lhs, rhs = convert_to_array(lhs), convert_to_array(rhs)
  lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
  dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  n = len(lhs_shape) - 2
  window_strides = _int_tuple("window_strides", window_strides, n)
  lhs_dilation = _int_tuple("lhs_dilation", lhs_dilation, n)
  rhs_dilation = _int_tuple("rhs_dilation", rhs_dilation, n)
  if isinstance(padding, str):
    if any(d != 1 for d in lhs_dilation):
      raise ValueError("String padding is not implemented for transposed convolution using "
                       "this op. Please either exactly specify the required padding or use "
                       "conv_transpose.")
    if len(dnums.rhs_spec) != len(rhs_shape) or len(window_strides) != n:
      raise ValueError(f"conv_general_dilated window and window_strides must have the same "
                       f"number of dimensions, but got {n} and {len(window_strides)}")
    window = _dilate([rhs_shape[d] for d in dnums.rhs_spec[2:]], rhs_dilation)
    padding = padtype_to_pads([lhs_shape[d] for d in dnums.lhs_spec[2:]], window,
                              window_strides, padding)
  else:
    try:
      padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
      raise ValueError("padding argument to conv_general_dilated should be a string or a "
                       f"sequence of (low, high) pairs, got {padding}") from None
  return conv_general_dilated_p.bind(
      lhs, rhs, window_strides=window_strides, padding=tuple(map(tuple, padding)),
      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dnums,
      feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
      precision=canonicalize_precision(precision),
      preferred_element_type=canonicalize_preferred("conv_general_dilated",
                                                    preferred_element_type))


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """`conv_general_dilated` with the default ('NCHW', 'OIHW', 'NCHW') layout."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
  """(before, after) padding of one axis of a transposed convolution whose forward
  convolution had kernel size `k`, stride `s` and `padding`."""
  if padding == "SAME":
    total = k + s - 2
    before = k - 1 if s > k - 1 else -(-total // 2)
  elif padding == "VALID":
    total = k + s - 2 + max(k - s, 0)
    before = k - 1
  elif isinstance(padding, tuple):
    before, after = (k - p - 1 for p in padding)
    total = before + after
  else:
    raise ValueError(f"Invalid padding mode: {padding}")
  return before, total - before


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
  """A fractionally strided convolution (the "deconvolution" of a forward convolution
  with these `strides` and `padding`); layouts default to TensorFlow's ('NHWC', 'HWIO',
  'NHWC').  `transpose_kernel=True` flips the kernel's spatial axes and swaps its feature
  axes, giving the gradient of the forward convolution with that kernel."""
  lhs, rhs = convert_to_array(lhs), convert_to_array(rhs)
  lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
  ndim = len(lhs_shape)
  if ndim != len(rhs_shape) or ndim < 2:
    raise TypeError("conv_transpose needs lhs and rhs of one rank, at least 2; got shapes "
                    f"{lhs_shape} and {rhs_shape}")
  if dimension_numbers is None:
    if ndim not in _TRANSPOSE_LAYOUTS:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  kernel_sizes = [rhs_shape[d] for d in dn.rhs_spec[2:]]
  rhs_dilation = (1,) * (ndim - 2) if rhs_dilation is None else tuple(rhs_dilation)
  if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
    per_axis = [padding] * len(strides) if isinstance(padding, str) else [
        tuple(p) for p in padding]
    pads = tuple(_conv_transpose_padding(k, s, p) for k, s, p in
                 zip(_dilate(kernel_sizes, rhs_dilation), strides, per_axis))
  else:
    pads = padding
  if transpose_kernel:
    rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
    perm = list(range(ndim))
    perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
    rhs = transpose(rhs, perm)
  return conv_general_dilated(lhs, rhs, (1,) * (ndim - 2), pads, strides, rhs_dilation, dn,
                              precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
  """The patches a convolution with a window of `filter_shape` would see: the output's
  feature axis holds, for each input feature c and window position p (row-major), the
  input at that position, at index c * prod(filter_shape) + p.  It is a grouped
  convolution with a one-hot kernel, as in JAX."""
  lhs = convert_to_array(lhs)
  lhs_shape = get_aval(lhs).shape
  n = len(lhs_shape) - 2
  filter_shape = tuple(int(k) for k in filter_shape)
  if len(filter_shape) != n:
    raise ValueError(f"filter_shape {filter_shape} must have {n} spatial sizes for an input "
                     f"of rank {len(lhs_shape)}")
  dnums = conv_dimension_numbers(lhs_shape, (1, 1) + filter_shape, dimension_numbers)
  channels = lhs_shape[dnums.lhs_spec[1]]
  positions = int(np.prod(filter_shape, dtype=np.int64))
  one_hot = np.eye(positions, dtype=get_aval(lhs).dtype).reshape(
      (positions, 1) + filter_shape)
  kernel = np.tile(one_hot, (channels,) + (1,) * (n + 1))
  canonical = tuple(range(n + 2))
  return conv_general_dilated(
      lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation,
      ConvDimensionNumbers(dnums.lhs_spec, canonical, dnums.out_spec),
      feature_group_count=channels, precision=precision,
      preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """A locally connected (unshared) convolution: each output position has its own kernel.
  `rhs`'s in-feature axis has size C * prod(filter_shape) (the patches' order, see
  `conv_general_dilated_patches`) and its spatial axes are the output's."""
  from minijax.lax.dot import dot_general
  from minijax.lax.structural import transpose
  lhs, rhs = convert_to_array(lhs), convert_to_array(rhs)
  lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
  dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  n = len(lhs_shape) - 2
  canonical = tuple(range(n + 2))
  patches = conv_general_dilated_patches(
      lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
      ConvDimensionNumbers(dnums.lhs_spec, canonical, canonical), precision)   # (N, I, *S)
  kernel = transpose(rhs, dnums.rhs_spec)                                      # (O, I, *S)
  spatial = tuple(range(2, n + 2))
  out = dot_general(patches, kernel, (((1,), (1,)), (spatial, spatial)),
                    precision=precision)                                       # (*S, N, O)
  out = transpose(out, (n, n + 1) + tuple(range(n)))                           # (N, O, *S)
  return transpose(out, tuple(int(k) for k in np.argsort(dnums.out_spec)))
