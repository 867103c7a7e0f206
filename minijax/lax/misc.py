"""Primitives that neither compute elementwise math nor move data around: dtype conversion,
reinterpretation of bits, selection, iota, copy, stop_gradient, clamp, reduce_precision and
optimization_barrier.

`convert_element_type` carries the target dtype and weak type as params, so a weakly typed
constant can be converted without losing its weakness.  `bitcast_convert_type` reads the
same bits as another dtype: between dtypes of one width it keeps the shape; to a narrower
dtype it adds a trailing dimension (the ratio of the widths), to a wider one it consumes it.  `select_n(which, *cases)` picks
`cases[which]` elementwise (a bool `which` picks between two cases); it is linear in the
cases, so its transpose routes the cotangent to the case that was selected.
`reduce_precision` rounds to a float format with fewer exponent and mantissa bits (reverse
mode inserts it on saved residuals, so that the forward and backward passes see the same
bits); `optimization_barrier` is the identity on a pytree that the compiler may neither move
computations across nor merge with equal computations on the other side (how `checkpoint`
keeps XLA from reusing the forward pass's values in its recomputation).
"""
from __future__ import annotations

import operator

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray, canonicalize_shape, get_aval
from minijax.core.effects import Effect
from minijax.core.jaxpr import Literal
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import DynamicJaxprTracer
from minijax.lax import utils
from minijax.lax.structural import (broadcast_in_dim, check_sizes, convert_to_array, full,
                                    scalar_constant, _ct_rule, _unary_linear_jvp)
from minijax.lowering import mlir

__all__ = ["convert_element_type", "bitcast_convert_type", "select_n", "select", "iota", "broadcasted_iota", "copy",
           "stop_gradient", "clamp", "zeros_like_array", "full_like",
           "convert_element_type_p", "bitcast_convert_type_p", "select_n_p", "iota_p", "copy_p", "stop_gradient_p",
           "clamp_p", "reduce_precision", "reduce_precision_p", "optimization_barrier",
           "optimization_barrier_p", "dce_sink", "dce_sink_p", "stage", "stage_p"]


# ---- convert_element_type
convert_element_type_p = Primitive("convert_element_type")


def _convert_abstract_eval(x, *, new_dtype, weak_type):
  return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p.def_abstract_eval(_convert_abstract_eval)


def _convert_lowering(ctx, x, *, new_dtype, weak_type):
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if aval_in.dtype == aval_out.dtype:
    return x
  if new_dtype == dtypes.bool_ and aval_in.dtype != dtypes.bool_:
    from minijax.lax.elementwise import _compare_ir
    zero = mlir.ir_constant(np.zeros(aval_in.shape, aval_in.dtype))
    return _compare_ir(x, zero, "NE", aval_in.dtype)
  if (np.issubdtype(aval_in.dtype, np.complexfloating)
      and not np.issubdtype(new_dtype, np.complexfloating)):
    x = mhlo.RealOp(x).result
  return mhlo.ConvertOp(mlir.aval_to_ir_type(aval_out), x).result


mlir.register_lowering(convert_element_type_p, _convert_lowering)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
  (x,), (t,) = primals, tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
  if (type(t) is ad.Zero or not dtypes.is_differentiable(new_dtype)
      or not dtypes.is_differentiable(get_aval(x).dtype)):
    return out, ad.Zero.from_primal_value(out)
  return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


ad.primitive_jvps[convert_element_type_p] = _convert_jvp


def _convert_transpose(ct, aval, *, new_dtype, weak_type):
  # (the cotangent of a real value converted to complex is the real part of the complex
  # cotangent: no ComplexWarning for that)
  ct_aval = get_aval(ct)
  if ct_aval.dtype == aval.dtype and ct_aval.weak_type == aval.weak_type:
    return ct
  return convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)


ad.primitive_transposes[convert_element_type_p] = _ct_rule(_convert_transpose)
batching.defvectorized(convert_element_type_p)


def convert_element_type(operand, new_dtype, weak_type: bool = False):
  new_dtype = dtypes.canonicalize_explicit_dtype(new_dtype)
  folded = _fold_scalar_conversion(_literal_value(operand), new_dtype, weak_type)
  if folded is not None:
    return folded
  operand = convert_to_array(operand)
  aval = get_aval(operand)
  if aval.dtype == new_dtype and aval.weak_type == weak_type:
    return operand
  if (np.issubdtype(aval.dtype, np.complexfloating) and new_dtype != dtypes.bool_
      and not np.issubdtype(new_dtype, np.complexfloating)):
    import warnings
    warnings.warn("Casting complex values to real discards the imaginary part",
                  np.exceptions.ComplexWarning, stacklevel=2)
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def _literal_value(x):
  """The host value held by a staged literal (`jnp.array(2.0)` under `jit`), else `x`: its
  conversion is folded too, as JAX folds conversions of constants."""
  if type(x) is DynamicJaxprTracer and type(x._var) is Literal:
    return x._var.val
  return x


def _fold_scalar_conversion(x, new_dtype, weak_type):
  """A host scalar converted to a strong dtype is converted now, as JAX does: the result is
  a literal of the new dtype (an Array eagerly), not a `convert_element_type` equation.
  None where that does not apply (non-finite floats to integers, complex to real,
  out-of-range integers are left to the primitive)."""
  if weak_type:  # `2` to a weak float32 is the Python float 2.0: a weak literal, as JAX's
    value = dtypes.as_python_scalar_of(x, new_dtype)
    return None if value is None else scalar_constant(value)
  if not (isinstance(x, (*dtypes.PYTHON_SCALARS, np.generic))
          or (type(x) is np.ndarray and x.shape == ())):
    return None
  old_dtype, old_weak = dtypes.dtype_and_weak_type(x)
  if old_dtype == new_dtype and not old_weak:
    return None
  if new_dtype == dtypes.float0 or (np.iscomplexobj(x) and
                                    not np.issubdtype(new_dtype, np.complexfloating)):
    return None
  if (np.issubdtype(new_dtype, np.integer) and type(x) is not int  # (ints: finite, maybe
      and not np.all(np.isfinite(x))):                                # beyond int64)
    return None
  try:
    with np.errstate(all="ignore"):
      value = np.asarray(x, new_dtype)
  except (OverflowError, TypeError, ValueError):
    return None
  return scalar_constant(value)


# ---- bitcast_convert_type: the same bits read as another dtype (not differentiable)
bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_abstract_eval(x, *, new_dtype):
  old_bits, new_bits = x.dtype.itemsize * 8, np.dtype(new_dtype).itemsize * 8
  if x.dtype == new_dtype:  # (the identity, which JAX takes for every dtype)
    return ShapedArray(x.shape, new_dtype, False)
  for dt in (x.dtype, new_dtype):
    if dt == dtypes.bool_ or np.issubdtype(dt, np.complexfloating):
      raise TypeError(f"bitcast_convert_type does not convert {x.str_short()} to "
                      f"{np.dtype(new_dtype).name}: bool and complex dtypes are not supported")
  if old_bits == new_bits:
    shape = x.shape
  elif old_bits > new_bits:
    shape = (*x.shape, old_bits // new_bits)
  elif not x.shape or x.shape[-1] != new_bits // old_bits:
    raise ValueError(  # (JAX's words, then what to do)
        f"Attempting to convert array of shape {x.shape} from {x.dtype} of size {old_bits} "
        f"bits to {np.dtype(new_dtype).name} of size {new_bits}, bits but "
        f"{x.shape[-1] if x.shape else 1} * {old_bits} != {new_bits}: the operand needs a "
        f"trailing dimension of size {new_bits // old_bits}")
  else:
    shape = x.shape[:-1]
  return ShapedArray(shape, new_dtype, False)


bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract_eval)
mlir.register_lowering(bitcast_convert_type_p, lambda ctx, x, *, new_dtype: x
                       if ctx.avals_in[0].dtype == new_dtype else mhlo.BitcastConvertOp(
                           mlir.aval_to_ir_type(ctx.avals_out[0]), x).result)
ad.defjvp(bitcast_convert_type_p, None)


def _bitcast_batch(args, dims, *, new_dtype):
  (x,), (d,) = args, dims
  if d == np.ndim(x) - 1:  # keep the trailing dimension free for a change of width
    x, d = batching.moveaxis(x, d, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_batch


def bitcast_convert_type(operand, new_dtype):
  """`operand`'s bits read as `new_dtype` (see the module docstring for the shapes)."""
  new_dtype = dtypes.canonicalize_explicit_dtype(new_dtype)
  x = convert_to_array(operand)
  if get_aval(x).dtype == new_dtype:
    return x
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype)


# ---- select_n
select_n_p = Primitive("select_n")


def _select_n_abstract_eval(which, *cases):
  if not cases:
    raise ValueError("select_n() must have at least one case")
  if any(c.shape != cases[0].shape for c in cases):
    raise TypeError(f"select cases must have the same shapes, got "
                    f"[{', '.join(str(c.shape) for c in cases)}].")
  if which.shape not in ((), cases[0].shape):
    raise TypeError(f"select `which` must be scalar or have the same shape as cases, got "
                    f"`which` shape {which.shape} but case shape {cases[0].shape}.")
  utils.check_same_dtypes("select", *cases)
  if which.dtype == dtypes.bool_:
    if len(cases) > 2:
      raise TypeError("select with boolean `which` cannot have > 2 cases.")
  elif not np.issubdtype(which.dtype, np.integer):
    raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype}.")
  return ShapedArray(cases[0].shape, cases[0].dtype, all(c.weak_type for c in cases))


select_n_p.def_abstract_eval(_select_n_abstract_eval)


def _select_n_lowering(ctx, which, *cases):
  which_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
  if which_aval.shape != out_aval.shape:
    which_type = mlir.aval_to_ir_type(which_aval.update(shape=out_aval.shape))
    which = mhlo.BroadcastInDimOp(which_type, which, []).result
  if len(cases) == 1:
    return cases[0]
  if which_aval.dtype == dtypes.bool_:
    return mhlo.SelectOp(which, cases[1], cases[0]).result
  return _select_tree(which, which_aval.dtype, cases, 0, out_aval.shape)


def _select_tree(which, dtype, cases, offset, shape):
  """`cases[which - offset]` by a balanced tree of selects on `which < midpoint` (below 0
  the first case, past the end the last)."""
  from minijax.lax.elementwise import _compare_ir
  if len(cases) == 1:
    return cases[0]
  mid = len(cases) // 2
  bound = mlir.ir_constant(np.full(shape, offset + mid, dtype))
  lower = _compare_ir(which, bound, "LT", dtype)
  return mhlo.SelectOp(lower, _select_tree(which, dtype, cases[:mid], offset, shape),
                       _select_tree(which, dtype, cases[mid:], offset + mid, shape)).result


mlir.register_lowering(select_n_p, _select_n_lowering)


def _select_n_jvp(primals, tangents):
  which, *cases = primals
  out = select_n_p.bind(*primals)
  case_tangents = tangents[1:]
  if all(type(t) is ad.Zero for t in case_tangents):
    return out, ad.Zero.from_primal_value(out)
  return out, select_n_p.bind(which, *map(ad.instantiate_zeros, case_tangents))


def _select_n_transpose(ct, which, *cases):
  if ad.is_undefined_primal(which):
    raise ValueError("select_n is not linear in its predicate")
  outs = [None]
  for i, c in enumerate(cases):
    if not ad.is_undefined_primal(c):
      outs.append(None)
    elif type(ct) is ad.Zero:
      outs.append(ad.Zero(c.aval))
    else:
      zeros = full(ct.shape, 0, ct.dtype)
      outs.append(select_n_p.bind(which, *[ct if j == i else zeros
                                           for j in range(len(cases))]))
  return outs


def _select_n_batch(args, dims):
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  which, *cases = args
  wdim, *cdims = dims
  shape, d0 = tuple(np.shape(cases[0])), cdims[0]
  case_shape = shape[:d0] + shape[d0 + 1:] if d0 is not None else shape
  cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, cdims)]
  which_shape = tuple(np.shape(which)) if wdim is None else (
      tuple(which.shape[:wdim]) + tuple(which.shape[wdim + 1:]))
  if wdim is None and which_shape == ():
    return select_n_p.bind(which, *cases), 0
  which = batching.bdim_at_front(which, wdim, size)
  if which_shape == () and case_shape != ():
    which = broadcast_in_dim(which, (size,) + case_shape, (0,))
  return select_n_p.bind(which, *cases), 0


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _select_n_batch


def select_n(which, *cases):
  """`cases[which]` elementwise; `which` is bool (two cases) or int32."""
  which = convert_to_array(which)
  cases = [convert_to_array(c) for c in cases]
  return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
  return select_n(pred, on_false, on_true)


# ---- iota
iota_p = Primitive("iota")


def _iota_abstract_eval(*, dtype, shape, dimension):
  if not (dtypes.is_integer(dtype) or dtypes.is_inexact(dtype)):  # (bfloat16 and float8s too)
    raise TypeError(f"iota does not accept dtype {np.dtype(dtype).name}. Accepted dtypes are "
                    "subtypes of integer, floating, complexfloating.")
  check_sizes("iota", shape)
  if not 0 <= dimension < len(shape):
    raise ValueError("iota dimension must be between 0 and len(shape), got "
                     f"dimension={dimension} for shape={shape}")
  return ShapedArray(shape, dtype, False)


iota_p.def_abstract_eval(_iota_abstract_eval)
mlir.register_lowering(iota_p, lambda ctx, *, dtype, shape, dimension: mhlo.IotaOp(
    mlir.aval_to_ir_type(ctx.avals_out[0]), dimension).result)


def iota(dtype, size: int):
  return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension: int):
  return iota_p.bind(dtype=dtypes.canonicalize_explicit_dtype(dtype),
                     shape=canonicalize_shape(shape), dimension=operator.index(dimension))


# ---- copy
copy_p = Primitive("copy")
copy_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(copy_p, lambda ctx, x: x)
_unary_linear_jvp(copy_p)
ad.primitive_transposes[copy_p] = _ct_rule(lambda ct, aval: copy(ct))
batching.defvectorized(copy_p)


def copy(x):
  return copy_p.bind(convert_to_array(x))


# ---- stage: the identity that lifts a value into the current trace (an equation of its own)
stage_p = Primitive("stage")
stage_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(stage_p, lambda ctx, x: x)
_unary_linear_jvp(stage_p)
ad.primitive_transposes[stage_p] = _ct_rule(lambda ct, aval: ct)
batching.defvectorized(stage_p)


def stage(x, /):
  """`x` lifted into the active trace (a minijax Array outside any)."""
  return stage_p.bind(convert_to_array(x))


# ---- stop_gradient: the identity with a zero derivative
stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(stop_gradient_p, lambda ctx, x: x)
batching.defvectorized(stop_gradient_p)


def _stop_gradient_jvp(primals, tangents):
  out = stop_gradient_p.bind(*primals)
  return out, ad.Zero.from_primal_value(out)


ad.primitive_jvps[stop_gradient_p] = _stop_gradient_jvp


def stop_gradient(x):
  """The identity on values; derivatives through it are zero."""
  from minijax.tree_util import internal as tree_util
  from minijax.core.trace import is_eval_context

  def stop(leaf):
    if is_eval_context():
      return convert_to_array(leaf)
    aval = get_aval(leaf)
    if not dtypes.is_inexact(aval.dtype):
      return leaf
    return stop_gradient_p.bind(convert_to_array(leaf))
  return tree_util.tree_map(stop, x)


# ---- clamp(lo, x, hi)
clamp_p = Primitive("clamp")


def _clamp_abstract_eval(lo, x, hi):
  for name, bound in (("min", lo), ("max", hi)):
    if bound.shape not in ((), x.shape):
      raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == (), "
                      f"got {name}.shape={bound.shape}, operand.shape={x.shape}.")
  utils.check_same_dtypes("clamp", lo, x, hi)
  return ShapedArray(x.shape, x.dtype, x.weak_type)


clamp_p.def_abstract_eval(_clamp_abstract_eval)


def _clamp_lowering(ctx, lo, x, hi):
  aval = ctx.avals_in[1]
  if not np.issubdtype(aval.dtype, np.complexfloating):
    return mhlo.ClampOp(lo, x, hi).result
  # XLA's clamp compares real parts only; numpy's order is lexicographic
  from minijax.lax.complex_ops import lexicographic_select
  lo, hi = [b if a.shape == aval.shape else mlir.broadcast_scalar(b, aval)
            for b, a in ((lo, ctx.avals_in[0]), (hi, ctx.avals_in[2]))]
  return lexicographic_select(lexicographic_select(x, lo, "max"), hi, "min")


mlir.register_lowering(clamp_p, _clamp_lowering)


def _clamp_tangent(picks):
  """An argument's share of clamp's tangent, where `picks(lo, x, hi)` holds (JAX's rule: x's
  strictly inside (min, max), min's where it exceeds x and is below max, max's where it is
  below x; at a tie nobody's)."""
  def fn(g, lo, x, hi):
    shape = np.shape(x)
    lo, hi, g = (broadcast_in_dim(v, shape, ()) if np.ndim(v) < len(shape) else v
                 for v in (lo, hi, g))
    return select_n(picks(lo, x, hi), full(shape, 0, get_aval(g).dtype), g)
  return fn


def _lo_binds(lo, x, hi):
  from minijax.lax.elementwise import bitwise_and, gt, lt
  return bitwise_and(gt(lo, x), lt(lo, hi))


def _x_inside(lo, x, hi):
  from minijax.lax.elementwise import bitwise_and, gt, lt
  return bitwise_and(gt(x, lo), lt(x, hi))


def _hi_binds(lo, x, hi):
  from minijax.lax.elementwise import lt
  return lt(hi, x)


def _clamp_batch(args, dims):
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  lo, x, hi = args
  dlo, dx, dhi = dims
  x = batching.bdim_at_front(x, dx, size)
  bounds = []
  for b, d in ((lo, dlo), (hi, dhi)):
    if d is None and np.ndim(b) == 0:
      bounds.append(b)
    else:
      b = batching.bdim_at_front(b, d, size)
      bounds.append(broadcast_in_dim(b, x.shape, (0,)) if b.ndim == 1 and x.ndim > 1 else b)
  return clamp_p.bind(bounds[0], x, bounds[1]), 0


ad.defjvp(clamp_p, _clamp_tangent(_lo_binds), _clamp_tangent(_x_inside),
          _clamp_tangent(_hi_binds))
batching.primitive_batchers[clamp_p] = _clamp_batch


def clamp(min, x, max):
  from minijax.lax.elementwise import _coerce_scalars
  x = convert_to_array(x)
  min, x, max = _coerce_scalars(min, x, max)
  return clamp_p.bind(min, x, max)


def full_like(x, fill_value, dtype=None, shape=None):
  """An array of `x`'s shape (or `shape`) and dtype (or `dtype`) filled with `fill_value`;
  weakly typed when `x` is and no dtype is given, as JAX's."""
  aval = get_aval(x)
  return full(aval.shape if shape is None else shape, fill_value,
              aval.dtype if dtype is None else dtype,
              weak_type=dtype is None and getattr(aval, "weak_type", False))


def zeros_like_array(x):
  aval = get_aval(x)
  return full(aval.shape, 0, aval.dtype)


# ---- reduce_precision: rounding to a float format of `exponent_bits` and `mantissa_bits`
reduce_precision_p = Primitive("reduce_precision")


def _reduce_precision_abstract_eval(x, *, exponent_bits, mantissa_bits):
  if not dtypes.is_float(x.dtype):
    raise TypeError(f"reduce_precision does not accept dtype {x.dtype}. Accepted dtypes are "
                    "subtypes of floating.")
  if exponent_bits < 1:
    raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
  if mantissa_bits < 0:
    raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


reduce_precision_p.def_abstract_eval(_reduce_precision_abstract_eval)
mlir.register_lowering(reduce_precision_p, lambda ctx, x, *, exponent_bits, mantissa_bits:
                       mhlo.ReducePrecisionOp(x, exponent_bits, mantissa_bits).result)
ad.deflinear(reduce_precision_p, lambda ct, **params: [reduce_precision_p.bind(ct, **params)])
batching.defvectorized(reduce_precision_p)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  """`operand` rounded to the float format with `exponent_bits` exponent bits and
  `mantissa_bits` mantissa bits (XLA's ReducePrecision), in its own dtype."""
  import operator
  bits = []
  for name, value in (("exponent_bits", exponent_bits), ("mantissa_bits", mantissa_bits)):
    try:
      bits.append(operator.index(value))
    except TypeError:
      raise TypeError(f"the {name} argument of lax.reduce_precision must be a concrete "
                      f"integer, got {value!r:.60}") from None
  return reduce_precision_p.bind(convert_to_array(operand), exponent_bits=bits[0],
                                 mantissa_bits=bits[1])


# ---- optimization_barrier: the identity, a wall for the compiler's optimizations
optimization_barrier_p = Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))


def emit_optimization_barrier(values):
  """The MHLO `optimization_barrier` of `values` (its results, one per value)."""
  return list(mhlo.OptimizationBarrierOp(list(values)).results) if values else []


mlir.register_lowering(optimization_barrier_p, lambda ctx, *args: emit_optimization_barrier(args))
batching.primitive_batchers[optimization_barrier_p] = lambda args, dims: (
    optimization_barrier_p.bind(*args), list(dims))


def _optimization_barrier_jvp(primals, tangents):
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  return optimization_barrier_p.bind(*primals), optimization_barrier_p.bind(*tangents)


ad.primitive_jvps[optimization_barrier_p] = _optimization_barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = lambda cts, *args: optimization_barrier_p.bind(
    *(ad.instantiate_zeros(ct) for ct in cts))


def optimization_barrier(operand, /):
  """`operand` (a pytree of arrays) unchanged, behind a barrier: the compiler neither moves
  computations across it nor merges computations before it with equal ones after it (so
  `optimization_barrier(sin(x)) + sin(x)` computes `sin` twice).  It does nothing outside a
  compiled function."""
  from minijax.tree_util import internal as tree_util
  leaves, tree = tree_util.tree_flatten(operand)
  return tree.unflatten(optimization_barrier_p.bind(*map(convert_to_array, leaves)))


# ---- dce_sink: marks values as used, so that dead-code elimination keeps what computes them

class NoDCEEffect(Effect):
  """The effect of `dce_sink`: its equation is never removed (and so neither is what
  computes its operand); nothing happens at runtime or on zero cotangents."""
  kept_when_unused = True
  runs_with_zero_cotangents = False
  tracked_at_runtime = False

  def __repr__(self):
    return "NoDCEEffect"


no_dce_effect = NoDCEEffect()
dce_sink_p = Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_impl(lambda x, **_: [])
dce_sink_p.def_effectful_abstract_eval(lambda x, **_: ([], {no_dce_effect}))


def _dce_sink_lowering(ctx, x, *, prevent_mlir_dce):
  if prevent_mlir_dce:
    raise NotImplementedError("dce_sink(prevent_mlir_dce=True): minijax keeps the value from "
                              "its own dead-code elimination only, not from XLA's")
  return []


mlir.register_lowering(dce_sink_p, _dce_sink_lowering)
ad.primitive_jvps[dce_sink_p] = lambda primals, tangents, **params: (
    dce_sink_p.bind(*primals, **params), [])
ad.primitive_transposes[dce_sink_p] = lambda cts, x, **params: [None]
batching.primitive_batchers[dce_sink_p] = lambda args, dims, **params: (
    dce_sink_p.bind(*args, **params), [])


def dce_sink(val, *, prevent_mlir_dce: bool = False) -> None:
  """Marks every array of the pytree `val` as used: dead-code elimination of the jaxpr it is
  traced into keeps the computations that produce them."""
  from minijax.tree_util import internal as tree_util
  for leaf in tree_util.tree_leaves(val):
    dce_sink_p.bind(convert_to_array(leaf), prevent_mlir_dce=bool(prevent_mlir_dce))
