"""Reductions (sum, max, min, prod, and, or over `axes`), argmax / argmin, cumulative ops and
sort.

Reductions lower to `mhlo.reduce` with a one-op region.  reduce_sum is linear (its transpose
broadcasts the cotangent back); max / min send the tangent to the positions that attain the
extremum, shared evenly among ties; prod uses the product of the *other* elements, computed
with exclusive cumulative products so zeros are handled.  cumsum is a primitive (linear,
transposed by a reversed cumsum) lowered to `mhlo.reduce_window`; cumprod / cummax / cummin /
cumlogsumexp are primitives lowered as log2(n) doubling steps of pads and elementwise ops
and differentiated as JAX does, through an associative_scan of their combining function.
sort uses a comparator that orders NaNs last, like numpy; its jvp sorts an iota alongside
to permute the tangents.  top_k is `chlo.top_k` along the last axis (transposed there and
back for another axis), whose tangent gathers the operand's tangent at the selected
indices.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.config import config
from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.structural import (broadcast_in_dim, convert_to_array, full, pad, reshape,
                                    rev, transpose)
from minijax.lowering import mlir

__all__ = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
           "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "sort",
           "sort_key_val", "top_k", "top_k_p", "reduce_sum_p", "reduce_max_p", "reduce_min_p", "reduce_prod_p",
           "reduce_and_p", "reduce_or_p", "argmax_p", "argmin_p", "cumsum_p", "sort_p",
           "reduce_xor", "reduce_xor_p", "cumlogsumexp", "approx_max_k", "approx_min_k",
           "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p"]


def _reduced_shape(name, x, axes):
  if any(not 0 <= a < x.ndim for a in axes):  # (JAX's words)
    raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for {x.str_short()}.")
  if len(set(axes)) != len(axes):
    raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
  return tuple(s for i, s in enumerate(x.shape) if i not in axes)


def _scalar_type(dtype):
  return mlir.aval_to_ir_type(ShapedArray((), dtype))


def _reduce_ir(x, init, axes, dtype, combine):
  op = mhlo.ReduceOp([_result_type(x, axes, dtype)], [x], [init], list(axes))
  block = op.regions[0].blocks.append(_scalar_type(dtype), _scalar_type(dtype))
  with ir.InsertionPoint(block):
    mhlo.ReturnOp([combine(*block.arguments)])
  return op.results[0]


def _result_type(x, axes, dtype):
  shape = [s for i, s in enumerate(ir.RankedTensorType(x.type).shape) if i not in axes]
  return ir.RankedTensorType.get(shape, mlir.dtype_to_ir_type(dtype))


def _identity(kind, dtype):
  if kind in ("sum", "or", "xor"):
    return np.zeros((), dtype)
  if kind == "prod" or kind == "and":
    return np.ones((), dtype)
  if dtype == dtypes.bool_:
    return np.array(kind == "min")
  if dtypes.is_inexact(dtype):
    return np.array(-np.inf if kind == "max" else np.inf, dtype)
  info = np.iinfo(dtype)
  return np.array(info.min if kind == "max" else info.max, dtype)


_COMBINERS = {
    "sum": lambda dt: mhlo.OrOp if dt == dtypes.bool_ else mhlo.AddOp,
    "prod": lambda dt: mhlo.AndOp if dt == dtypes.bool_ else mhlo.MulOp,
    "max": lambda dt: mhlo.OrOp if dt == dtypes.bool_ else mhlo.MaxOp,
    "min": lambda dt: mhlo.AndOp if dt == dtypes.bool_ else mhlo.MinOp,
    "and": lambda dt: mhlo.AndOp,
    "or": lambda dt: mhlo.OrOp,
    "xor": lambda dt: mhlo.XorOp,
}


def _reduction(kind, accepted=utils.any_dtype, what=""):
  name = f"reduce_{kind}"
  prim = Primitive(name)

  def abstract_eval(x, *, axes):
    if not accepted(x.dtype):
      raise TypeError(f"{name} does not accept dtype {x.dtype} ({x.str_short()}); "
                      f"it accepts {what}")
    if (kind == "sum" and x.dtype in _HALF_FLOATS and not config.allow_f16_reductions
        and any(x.shape[a] != 1 for a in axes)):
      raise ValueError(f"reduce_sum on operand {x.str_short()} is not allowed when "
                       "jax_allow_f16_reductions=False.")
    return ShapedArray(_reduced_shape(name, x, axes), x.dtype, x.weak_type)

  def lowering(ctx, x, *, axes):
    dtype = ctx.avals_in[0].dtype
    init = mlir.ir_constant(_identity(kind, dtype))
    if kind in ("max", "min") and np.issubdtype(dtype, np.complexfloating):
      from minijax.lax.complex_ops import lexicographic_select
      return _reduce_ir(x, init, axes, dtype, lambda a, b: lexicographic_select(a, b, kind))
    op = _COMBINERS[kind](dtype)
    return _reduce_ir(x, init, axes, dtype, lambda a, b: op(a, b).result)

  def batch(args, dims, *, axes):
    (x,), (d,) = args, dims
    x = batching.moveaxis(x, d, 0)
    return prim.bind(x, axes=tuple(a + 1 for a in axes)), 0

  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, lowering)
  batching.primitive_batchers[prim] = batch
  return prim


def _check_axes(x, axes):
  x = convert_to_array(x)
  aval = get_aval(x)
  if any(not -aval.ndim <= a < aval.ndim for a in axes):
    raise ValueError(f"reduction axes {tuple(axes)} contains out-of-bounds indices for {aval}.")
  return x, tuple(sorted(a % aval.ndim for a in axes))


def _kept_dims(ndim, axes):
  return tuple(i for i in range(ndim) if i not in axes)


# ---- reduce_sum
_HALF_FLOATS = (np.dtype(np.float16), np.dtype(dtypes.bfloat16))
reduce_sum_p = _reduction("sum", utils.is_number, "numbers")


def _reduce_sum_jvp(primals, tangents, *, axes):
  out = reduce_sum_p.bind(*primals, axes=axes)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, reduce_sum_p.bind(tangents[0], axes=axes)


def _reduce_sum_transpose(ct, x, *, axes):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  shape = x.aval.shape
  return [broadcast_in_dim(ct, shape, _kept_dims(len(shape), axes))]


ad.primitive_jvps[reduce_sum_p] = _reduce_sum_jvp
ad.primitive_transposes[reduce_sum_p] = _reduce_sum_transpose


def reduce_sum(operand, axes):
  operand, axes = _check_axes(operand, axes)
  return reduce_sum_p.bind(operand, axes=axes) if axes else operand


# ---- reduce_max / reduce_min
reduce_max_p = _reduction("max")
reduce_min_p = _reduction("min")


def _extremum_jvp(prim):
  def jvp(primals, tangents, *, axes):
    from minijax.lax.elementwise import div, eq, mul
    from minijax.lax.misc import convert_element_type
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axes=axes)
    if type(t) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    kept = _kept_dims(x.ndim, axes)
    mask = convert_element_type(eq(x, broadcast_in_dim(out, x.shape, kept)), t.dtype)
    return out, div(reduce_sum_p.bind(mul(t, mask), axes=axes),
                    reduce_sum_p.bind(mask, axes=axes))
  return jvp


ad.primitive_jvps[reduce_max_p] = _extremum_jvp(reduce_max_p)
ad.primitive_jvps[reduce_min_p] = _extremum_jvp(reduce_min_p)


def reduce_max(operand, axes):
  operand, axes = _check_axes(operand, axes)
  return reduce_max_p.bind(operand, axes=axes) if axes else operand


def reduce_min(operand, axes):
  operand, axes = _check_axes(operand, axes)
  return reduce_min_p.bind(operand, axes=axes) if axes else operand


# ---- reduce_prod
reduce_prod_p = _reduction("prod", utils.is_number, "numbers")


def _reduce_prod_jvp(primals, tangents, *, axes):
  from minijax.lax.elementwise import mul
  (x,), (t,) = primals, tangents
  out = reduce_prod_p.bind(x, axes=axes)
  if type(t) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  kept = _kept_dims(x.ndim, axes)
  perm = kept + tuple(axes)
  n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
  flat_shape = tuple(x.shape[k] for k in kept) + (n,)
  xs = reshape(transpose(x, perm), flat_shape)
  ts = reshape(transpose(t, perm), flat_shape)
  last = len(flat_shape) - 1
  before = _exclusive(cumprod(xs, last), last, 1, forward=True)
  after = _exclusive(cumprod(xs, last, reverse=True), last, 1, forward=False)
  others = mul(before, after)
  return out, reduce_sum_p.bind(mul(ts, others), axes=(last,))


def _exclusive(c, axis, identity, forward):
  """Shifts a cumulative result by one along `axis`, filling with `identity`."""
  config = [(0, 0, 0)] * c.ndim
  config[axis] = (1, -1, 0) if forward else (-1, 1, 0)
  return pad(c, full((), identity, c.dtype), config)


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp


def reduce_prod(operand, axes):
  operand, axes = _check_axes(operand, axes)
  return reduce_prod_p.bind(operand, axes=axes) if axes else operand


# ---- reduce_and / reduce_or
reduce_and_p = _reduction("and", utils.is_int_or_bool, "bool or integers")
reduce_or_p = _reduction("or", utils.is_int_or_bool, "bool or integers")
reduce_xor_p = _reduction("xor", utils.is_int_or_bool, "bool or integers")
ad.defjvp(reduce_and_p, None)
ad.defjvp(reduce_or_p, None)
ad.defjvp(reduce_xor_p, None)


def reduce_and(operand, axes):
  operand, axes = _check_axes(operand, axes)
  return reduce_and_p.bind(operand, axes=axes) if axes else operand


def reduce_or(operand, axes):
  operand, axes = _check_axes(operand, axes)
  return reduce_or_p.bind(operand, axes=axes) if axes else operand


def reduce_xor(operand, axes):
  operand, axes = _check_axes(operand, axes)
  return reduce_xor_p.bind(operand, axes=axes) if axes else operand


# ---- argmax / argmin: first index of the extremum; NaN counts as the extremum, as in numpy
def _arg_reduction(kind):
  name = f"arg{kind}"
  prim = Primitive(name)

  def abstract_eval(x, *, axes, index_dtype):
    if np.issubdtype(x.dtype, np.complexfloating):
      raise TypeError(f"{name} does not accept dtype {x.dtype} ({x.str_short()}); it accepts "
                      "integers, floating point or bool (complex values have no order)")
    if len(axes) != 1:
      raise TypeError(f"{name} reduces exactly one axis, got axes={axes}")
    if not dtypes.is_integer(index_dtype):
      raise TypeError(f"index_dtype must be an integer type, but got {np.dtype(index_dtype).name}")
    if not 0 <= axes[0] < x.ndim:
      raise ValueError(f"Invalid axis {axes[0]} for operand shape {x.shape}")
    shape = _reduced_shape(name, x, axes)
    if x.shape[axes[0]] == 0:
      raise ValueError(f"{name} of an empty axis (axis {axes[0]} of {x.str_short()})")
    return ShapedArray(shape, index_dtype, False)

  def lowering(ctx, x, *, axes, index_dtype):
    from minijax.lax.elementwise import _compare_ir
    aval = ctx.avals_in[0]
    dtype, axis = aval.dtype, axes[0]
    idx_aval = ShapedArray(aval.shape, index_dtype)
    iota = mhlo.IotaOp(mlir.aval_to_ir_type(idx_aval), axis).result
    init_val = mlir.ir_constant(_identity("max" if kind == "max" else "min", dtype))
    init_idx = mlir.ir_constant(np.zeros((), index_dtype))
    op = mhlo.ReduceOp([_result_type(x, axes, dtype), _result_type(iota, axes, index_dtype)],
                       [x, iota], [init_val, init_idx], list(axes))
    st, it = _scalar_type(dtype), _scalar_type(index_dtype)
    block = op.regions[0].blocks.append(st, it, st, it)
    with ir.InsertionPoint(block):
      av, ai, bv, bi = block.arguments
      direction = "GT" if kind == "max" else "LT"
      better = _compare_ir(av, bv, direction, dtype)
      same = _compare_ir(av, bv, "EQ", dtype)
      if dtypes.is_inexact(dtype):
        a_nan = _compare_ir(av, av, "NE", dtype)
        b_nan = _compare_ir(bv, bv, "NE", dtype)
        better = mhlo.OrOp(better, mhlo.AndOp(a_nan, mhlo.NotOp(b_nan).result).result).result
        same = mhlo.OrOp(same, mhlo.AndOp(a_nan, b_nan).result).result
      first = _compare_ir(ai, bi, "LT", index_dtype)
      pick_a = mhlo.OrOp(better, mhlo.AndOp(same, first).result).result
      mhlo.ReturnOp([mhlo.SelectOp(pick_a, av, bv).result,
                     mhlo.SelectOp(pick_a, ai, bi).result])
    return op.results[1]

  def batch(args, dims, *, axes, index_dtype):
    (x,), (d,) = args, dims
    x = batching.moveaxis(x, d, 0)
    return prim.bind(x, axes=(axes[0] + 1,), index_dtype=index_dtype), 0

  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, lowering)
  batching.primitive_batchers[prim] = batch
  ad.defjvp(prim, None)
  return prim


def _arg_axis(operand, axis):
  shape = get_aval(operand).shape
  if not 0 <= axis < len(shape):
    raise ValueError(f"Invalid axis {axis} for operand shape {shape}")
  return int(axis)


argmax_p = _arg_reduction("max")
argmin_p = _arg_reduction("min")


def argmax(operand, axis: int, index_dtype=dtypes.int32):
  operand = convert_to_array(operand)
  axis = _arg_axis(operand, axis)
  return argmax_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize_explicit_dtype(index_dtype))


def argmin(operand, axis: int, index_dtype=dtypes.int32):
  operand = convert_to_array(operand)
  axis = _arg_axis(operand, axis)
  return argmin_p.bind(operand, axes=(axis,), index_dtype=dtypes.canonicalize_explicit_dtype(index_dtype))


# ---- cumsum
cumsum_p = Primitive("cumsum")


def _cumsum_abstract_eval(x, *, axis, reverse):
  if not 0 <= axis < x.ndim:
    raise TypeError(f"cumsum axis {axis} is out of range for {x.str_short()}")
  if x.dtype == dtypes.bool_:
    raise TypeError(f"cumsum does not accept bool ({x.str_short()}); convert it first")
  return x


def _cumsum_lowering(ctx, x, *, axis, reverse):
  aval = ctx.avals_in[0]
  n = aval.shape[axis]
  window = [1] * aval.ndim
  window[axis] = max(n, 1)
  padding = np.zeros((aval.ndim, 2), np.int64)
  padding[axis] = (0, max(n - 1, 0)) if reverse else (max(n - 1, 0), 0)
  init = mlir.ir_constant(np.zeros((), aval.dtype))
  op = mhlo.ReduceWindowOp([mlir.aval_to_ir_type(aval)], [x], [init], list(window),
                           padding=ir.DenseIntElementsAttr.get(padding))
  st = _scalar_type(aval.dtype)
  block = op.regions[0].blocks.append(st, st)
  with ir.InsertionPoint(block):
    mhlo.ReturnOp([mhlo.AddOp(*block.arguments).result])
  return op.results[0]


cumsum_p.def_abstract_eval(_cumsum_abstract_eval)
mlir.register_lowering(cumsum_p, _cumsum_lowering)


def _cumsum_jvp(primals, tangents, *, axis, reverse):
  out = cumsum_p.bind(*primals, axis=axis, reverse=reverse)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, cumsum_p.bind(tangents[0], axis=axis, reverse=reverse)


def _cumsum_transpose(ct, x, *, axis, reverse):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


def _cumsum_batch(args, dims, *, axis, reverse):
  (x,), (d,) = args, dims
  return cumsum_p.bind(x, axis=axis + (axis >= d), reverse=reverse), d


ad.primitive_jvps[cumsum_p] = _cumsum_jvp
ad.primitive_transposes[cumsum_p] = _cumsum_transpose
batching.primitive_batchers[cumsum_p] = _cumsum_batch


def _cumulative_axis(aval, axis):
  if not -aval.ndim <= axis < aval.ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of shape {aval.shape}")
  return int(axis) % aval.ndim


def cumsum(operand, axis: int = 0, reverse: bool = False):
  operand = convert_to_array(operand)
  axis = _cumulative_axis(get_aval(operand), axis)
  return cumsum_p.bind(operand, axis=axis, reverse=bool(reverse))


# ---- cumprod / cummax / cummin / cumlogsumexp: primitives (JAX's), lowered as doubling
# steps of pad + combine, differentiated as an associative_scan of the combining function
# (as JAX does: the derivatives, how ties share a tangent included, are the scan's)
def _cumulative_steps(x, *, axis, reverse, combine, identity):
  aval = get_aval(x)
  n = aval.shape[axis]
  if reverse:
    x = rev(x, (axis,))
  shift = 1
  fill = full((), identity(aval.dtype), aval.dtype)
  while shift < n:
    config = [(0, 0, 0)] * aval.ndim
    config[axis] = (shift, -shift, 0)
    x = combine(x, pad(x, fill, config))
    shift *= 2
  return rev(x, (axis,)) if reverse else x


def _cumulative_primitive(name, combine, identity, accepts, kinds):
  prim = Primitive(name)

  def abstract_eval(x, *, axis, reverse):
    if not 0 <= axis < x.ndim:
      raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
    if not accepts(x.dtype):
      raise TypeError(f"{name} does not accept dtype {x.dtype.name}. Accepted dtypes are "
                      f"subtypes of {kinds}.")
    return x

  def jvp(primals, tangents, *, axis, reverse):
    from minijax.lax.associative_scan import associative_scan
    scan = lambda x: [associative_scan(combine(), x, reverse=reverse, axis=axis)]
    (out,), (t_out,) = ad.jvp_flat(scan, primals, tangents)
    return out, t_out

  def batch(args, dims, *, axis, reverse):
    (x,), (d,) = args, dims
    return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d

  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, utils.lowering_from_function(
      lambda x, **p: _cumulative_steps(x, combine=combine(), identity=identity, **p)))
  ad.primitive_jvps[prim] = jvp
  batching.primitive_batchers[prim] = batch
  return prim


def _elementwise(name):
  def get():
    from minijax.lax import elementwise
    return getattr(elementwise, name)
  return get


_is_number = lambda dt: dt != dtypes.bool_ and not dtypes.is_extended(dt)
cumprod_p = _cumulative_primitive("cumprod", _elementwise("mul"),
                                  lambda dt: _identity("prod", dt), _is_number, "number")
cummax_p = _cumulative_primitive("cummax", _elementwise("max"),
                                 lambda dt: _identity("max", dt), _is_number, "number")
cummin_p = _cumulative_primitive("cummin", _elementwise("min"),
                                 lambda dt: _identity("min", dt), _is_number, "number")
cumlogsumexp_p = _cumulative_primitive("cumlogsumexp", lambda: _logaddexp,
                                       lambda dt: _identity("max", dt), dtypes.is_inexact,
                                       "inexact")


def _cumulative_bind(prim, operand, axis, reverse):
  operand = convert_to_array(operand)
  axis = _cumulative_axis(get_aval(operand), axis)
  return prim.bind(operand, axis=axis, reverse=bool(reverse))


def cumprod(operand, axis: int = 0, reverse: bool = False):
  return _cumulative_bind(cumprod_p, operand, axis, reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
  return _cumulative_bind(cummax_p, operand, axis, reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
  return _cumulative_bind(cummin_p, operand, axis, reverse)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
  """The running log-sum-exp along `axis` (floating point or complex `x`)."""
  return _cumulative_bind(cumlogsumexp_p, operand, axis, reverse)


def _logaddexp(a, b):
  """log(e^a + e^b) as big + log1p(e^(small - big)), exactly -inf for two -infs and
  NaN-propagating; complex numbers are ordered by real part first (lax.max's order), and
  their result's imaginary part is the principal one, in (-pi, pi]."""
  from minijax.lax.complex_ops import complex as make_complex, imag, real
  from minijax.lax.elementwise import (add, atan2, cos, exp, log1p, max as lax_max,
                                       min as lax_min, ne, sin, sub)
  from minijax.lax.misc import select
  big, small, delta = lax_max(a, b), lax_min(a, b), sub(a, b)
  out = select(ne(delta, delta), add(a, b), add(big, log1p(exp(sub(small, big)))))
  if not np.issubdtype(get_aval(out).dtype, np.complexfloating):
    return out
  angle = imag(out)
  return make_complex(real(out), atan2(sin(angle), cos(angle)))


# ---- sort
sort_p = Primitive("sort")
sort_p.multiple_results = True


def _sort_abstract_eval(*xs, dimension, is_stable, num_keys):
  shown = ", ".join(x.str_short() for x in xs)
  if not xs or any(x.shape != xs[0].shape for x in xs):
    raise TypeError(f"Arguments to sort must have equal shapes, got: "
                    f"{' '.join(str(x.shape) for x in xs)}")
  if not 0 <= dimension < xs[0].ndim:
    raise TypeError(f"sort dimension {dimension} is out of range for {shown}")
  if not 1 <= num_keys <= len(xs):
    raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(xs)}")
  return list(xs)


def _sort_lowering(ctx, *xs, dimension, is_stable, num_keys):
  avals = ctx.avals_in
  op = mhlo.SortOp([mlir.aval_to_ir_type(a) for a in avals], list(xs), dimension=dimension,
                   is_stable=bool(is_stable))
  types = [t for a in avals for t in (_scalar_type(a.dtype),) * 2]
  block = op.regions[0].blocks.append(*types)
  with ir.InsertionPoint(block):
    args = list(block.arguments)
    result = None
    for k in reversed(range(num_keys)):
      a, b, dtype = args[2 * k], args[2 * k + 1], avals[k].dtype
      if np.issubdtype(dtype, np.complexfloating):  # real parts, then imaginary parts
        dtype = dtypes.float64 if dtype == dtypes.complex128 else dtypes.float32
        keys = [(mhlo.ImagOp(a).result, mhlo.ImagOp(b).result),
                (mhlo.RealOp(a).result, mhlo.RealOp(b).result)]
      else:
        keys = [(a, b)]
      for a, b in keys:
        lt, eq = _nan_last_lt_eq(a, b, dtype)
        result = lt if result is None else mhlo.OrOp(lt, mhlo.AndOp(eq, result).result).result
    mhlo.ReturnOp([result])
  return list(op.results)


def _nan_last_lt_eq(a, b, dtype):
  """`a < b` and `a == b` in the order that puts NaNs last (numpy's)."""
  from minijax.lax.elementwise import _compare_ir
  lt = _compare_ir(a, b, "LT", dtype)
  eq = _compare_ir(a, b, "EQ", dtype)
  if dtypes.is_inexact(dtype):
    a_nan = _compare_ir(a, a, "NE", dtype)
    b_nan = _compare_ir(b, b, "NE", dtype)
    lt = mhlo.OrOp(lt, mhlo.AndOp(b_nan, mhlo.NotOp(a_nan).result).result).result
    eq = mhlo.OrOp(eq, mhlo.AndOp(a_nan, b_nan).result).result
  return lt, eq


sort_p.def_abstract_eval(_sort_abstract_eval)
mlir.register_lowering(sort_p, _sort_lowering)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  from minijax.lax.misc import broadcasted_iota
  shape = primals[0].shape
  iota = broadcasted_iota(dtypes.int32, shape, dimension)
  *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                            num_keys=num_keys)
  out_tangents = [ad.Zero.from_primal_value(o) if type(t) is ad.Zero
                  else take_along_axis(t, perm, dimension) for o, t in zip(outs, tangents)]
  return outs, out_tangents


def take_along_axis(x, indices, axis, mode=None, fill_value=None):
  """`x` indexed along `axis` by `indices` of the same shape (a gather with batching axes,
  whose `mode` treats out-of-bounds indices)."""
  from minijax.lax.gather import GatherDimensionNumbers, gather
  shape = tuple(x.shape)
  others = tuple(d for d in range(len(shape)) if d != axis)
  dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                 start_index_map=(axis,), operand_batching_dims=others,
                                 start_indices_batching_dims=others)
  index = reshape(indices, tuple(indices.shape) + (1,))
  return gather(x, index, dnums, (1,) * len(shape), mode=mode, fill_value=fill_value)


def _sort_batch(args, dims, *, dimension, is_stable, num_keys):
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  xs = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  outs = sort_p.bind(*xs, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
  return outs, [0] * len(outs)


ad.primitive_jvps[sort_p] = _sort_jvp
batching.primitive_batchers[sort_p] = _sort_batch


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
  """Sorts an array, or a tuple of arrays by their first `num_keys` (lexicographically)."""
  single = not isinstance(operand, (tuple, list))
  xs = [convert_to_array(x) for x in ([operand] if single else operand)]
  dimension = utils.canonicalize_axis(dimension, get_aval(xs[0]).ndim)
  outs = sort_p.bind(*xs, dimension=dimension, is_stable=bool(is_stable),
                     num_keys=int(num_keys))
  return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
  return sort((keys, values), dimension, is_stable, 1)


# ---- top_k
top_k_p = Primitive("top_k")
top_k_p.multiple_results = True


def _top_k_abstract_eval(x, *, k, axis):
  if np.issubdtype(x.dtype, np.complexfloating):
    raise ValueError("top_k is not compatible with complex inputs.")
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  if x.ndim == 0:
    raise TypeError(f"top_k operand must have >= 1 dimension, got {x.shape}")
  if not 0 <= axis < x.ndim:
    raise ValueError(f"axis argument out of range: axis={axis} for operand.shape={x.shape}")
  if x.shape[axis] < k:
    raise ValueError("k argument to top_k must be no larger than size along axis; got "
                     f"k={k} with shape={list(x.shape)} and axis={axis}")
  shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
  return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, dtypes.int32)]


def _top_k_lowering(ctx, x, *, k, axis):
  aval = ctx.avals_in[0]
  last = aval.ndim - 1
  perm = list(range(aval.ndim))
  perm[axis], perm[last] = last, axis
  if axis != last:
    x = mhlo.TransposeOp(x, perm).result
  shape = [aval.shape[p] for p in perm[:-1]] + [k]
  types = [ir.RankedTensorType.get(shape, mlir.dtype_to_ir_type(d))
           for d in (aval.dtype, dtypes.int32)]
  results = list(mhlo.TopKOp(x, k, results=types).results)
  if axis != last:
    results = [mhlo.TransposeOp(r, perm).result for r in results]
  return results


def _top_k_jvp(primals, tangents, *, k, axis):
  (x,), (t,) = primals, tangents
  values, indices = top_k_p.bind(x, k=k, axis=axis)
  if type(t) is ad.Zero:
    return [values, indices], [ad.Zero.from_primal_value(values),
                               ad.Zero.from_primal_value(indices)]
  return [values, indices], [take_along_axis(t, indices, axis),
                             ad.Zero.from_primal_value(indices)]


def _top_k_batch(args, dims, *, k, axis):
  (x,), (d,) = args, dims
  outs = top_k_p.bind(x, k=k, axis=axis + (d <= axis))
  return outs, [d, d]


top_k_p.def_abstract_eval(_top_k_abstract_eval)
mlir.register_lowering(top_k_p, _top_k_lowering)
ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch


def top_k(operand, k: int, *, axis: int = -1):
  """The `k` largest entries along `axis` in descending order (NaN above everything, 0.0
  above -0.0) and their int32 indices; equal entries keep index order."""
  x = convert_to_array(operand)
  k = int(k)
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  axis = utils.canonicalize_axis(axis, max(get_aval(x).ndim, 1))
  return tuple(top_k_p.bind(x, k=k, axis=axis))


# ---- approx_max_k / approx_min_k: exact on the CPU (as XLA's fallback there is)
def _extreme_k(name, operand, k, reduction_dimension, pick_max):
  from minijax.lax.elementwise import neg
  from minijax.lax.structural import transpose
  operand = convert_to_array(operand)
  aval = get_aval(operand)
  if not dtypes.is_float(aval.dtype):
    raise ValueError(f"{name}: operand must be a floating type, got {aval.str_short()}")
  axis = utils.canonicalize_axis(reduction_dimension, aval.ndim, "reduction_dimension")
  if not 0 <= int(k) <= aval.shape[axis]:
    raise ValueError(f"{name}: k={k} is not in [0, {aval.shape[axis]}] (the size of "
                     f"reduction_dimension {reduction_dimension})")
  perm = [d for d in range(aval.ndim) if d != axis] + [axis]
  moved = transpose(operand, perm) if axis != aval.ndim - 1 else operand
  key = moved if pick_max else neg(moved)
  _, index = top_k(key, int(k))
  values = take_along_axis(moved, index, aval.ndim - 1)
  back = list(np.argsort(perm))
  if axis != aval.ndim - 1:
    values, index = transpose(values, back), transpose(index, back)
  return values, index


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
  """The `k` largest values of `operand` along `reduction_dimension` and their indices
  (exact on the CPU, where XLA's approximate search falls back to a sort)."""
  return _extreme_k("approx_max_k", operand, k, reduction_dimension, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
  """The `k` smallest values of `operand` along `reduction_dimension` and their indices."""
  return _extreme_k("approx_min_k", operand, k, reduction_dimension, False)
