"""Reductions over sliding windows (pooling) and the select-and-scatter gradient of max
pooling.

A window of `window_dimensions` slides over the operand, `window_strides` apart, after the
operand is padded (explicit (low, high) pairs, or 'SAME' / 'VALID' / 'SAME_LOWER') and
base-dilated (`base_dilation - 1` holes between elements); `window_dilation` spreads the
window itself.  Padding and holes hold the reduction's identity.

`reduce_window_sum_p`, `reduce_window_max_p` and `reduce_window_min_p` are the monoids
pooling layers use; `reduce_window_p` reduces any number of operands with a user
function (traced once into a jaxpr on scalars and lowered into the region of one
`mhlo.reduce_window`).  `reduce_window` picks a monoid primitive when the function is
`lax.add`, `lax.max` or `lax.min` with that operation's identity as the initial value.

Derivatives follow XLA's operations.  A window sum is linear; its transpose spreads each
cotangent back over its window, which is a window sum of the cotangent padded and
dilated by the strides.  The tangent of a window max (min) is the tangent at the position
the window selected: `select_and_gather_add_p` reduces (operand, tangent) pairs keeping
the pair with the larger (smaller) operand.  It is linear in the tangent, and its
transpose is `select_and_scatter_add_p`, XLA's SelectAndScatter: each cotangent is added
at the position its window selected, which is the gradient of max pooling.  The two are
each other's transposes.  A generic reduction differentiates its function's jaxpr and
reduces (primal, tangent) pairs with it.  vmap gives every one of them a window of size 1
along the mapped axis.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.tree_util import internal as tree_util
from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer
from minijax.interpreters import ad, batching
from minijax.lax import elementwise
from minijax.lax.convolution import padtype_to_pads
from minijax.lax.reductions import _identity
from minijax.lax.structural import convert_to_array, full, pad
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet

__all__ = ["reduce_window", "reduce_window_shape_tuple", "reduce_window_p",
           "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p",
           "select_and_scatter_add_p", "select_and_gather_add_p"]

Window = tuple[int, ...]


def _dilate(sizes, dilation):
  return tuple(0 if n == 0 else 1 + d * (n - 1) for n, d in zip(sizes, dilation))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple[int, ...]:
  if base_dilation is not None:
    operand_shape = _dilate(operand_shape, base_dilation)
  if window_dilation is not None:
    window_dimensions = _dilate(window_dimensions, window_dilation)
  return tuple(max(n + lo + hi - k + s, 0) // s for n, (lo, hi), k, s in
               zip(operand_shape, padding, window_dimensions, window_strides))


def _window_shape(name, operand, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation) -> tuple[int, ...]:
  """The output shape, after JAX's checks of the window parameters."""
  for what, value, least in (("window_dimensions", window_dimensions, 1),
                             ("window_strides", window_strides, 1),
                             ("base_dilation", base_dilation, 1),
                             ("window_dilation", window_dilation, 1)):
    if any(v < least for v in value):
      raise TypeError(f"{name}: {what} must have every element >= {least}, got {value}.")
  if operand.ndim != len(window_dimensions):
    raise TypeError(f"{name} got the wrong number of window_dimensions for operand: got "
                    f"operand shape {operand.shape} with window_dimensions "
                    f"{window_dimensions}.")
  for what, value in (("window_strides", window_strides), ("padding", padding),
                      ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
    if len(value) != len(window_dimensions):
      raise TypeError(f"{name} got inconsistent {what} and window_dimensions: got {what} "
                      f"{value} and window_dimensions {window_dimensions}.")
  return reduce_window_shape_tuple(operand.shape, window_dimensions, window_strides, padding,
                                   base_dilation, window_dilation)


def _padding_attr(padding) -> ir.DenseIntElementsAttr:
  return ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(len(padding), 2))


def _scalar_type(dtype) -> ir.Type:
  return mlir.aval_to_ir_type(ShapedArray((), dtype))


def _reduce_window_ir(out_avals, operands, inits, dtypes_, reducer, *, window_dimensions,
                      window_strides, padding, base_dilation, window_dilation):
  """An `mhlo.reduce_window` whose region computes `reducer(*lefts, *rights)`."""
  op = mhlo.ReduceWindowOp([mlir.aval_to_ir_type(a) for a in out_avals], list(operands),
                           list(inits), list(window_dimensions),
                           window_strides=list(window_strides),
                           base_dilations=list(base_dilation),
                           window_dilations=list(window_dilation),
                           padding=_padding_attr(padding))
  types = [_scalar_type(d) for d in dtypes_]
  block = op.regions[0].blocks.append(*types, *types)
  with ir.InsertionPoint(block):
    mhlo.ReturnOp(list(reducer(*block.arguments)))
  return list(op.results)


def _with_unit_window_at(axis: int, params: dict) -> dict:
  """Window params for an operand with a new axis at `axis` that the window leaves alone."""
  def insert(values, value):
    return values[:axis] + (value,) + values[axis:]
  return dict(params, window_dimensions=insert(params["window_dimensions"], 1),
              window_strides=insert(params["window_strides"], 1),
              padding=insert(params["padding"], (0, 0)),
              base_dilation=insert(params["base_dilation"], 1),
              window_dilation=insert(params["window_dilation"], 1))


# ----------------------------------------------------------------------------- the monoids

def _monoid(kind: str, accepted: Callable, what: str) -> Primitive:
  name = f"reduce_window_{kind}"
  prim = Primitive(name)

  def abstract_eval(x, **params):
    if not accepted(x.dtype):
      raise TypeError(f"operand to {name} must have {what} dtype, got {x.dtype}")
    return ShapedArray(_window_shape("reduce_window", x, **params), x.dtype, x.weak_type)

  def lowering(ctx, x, **params):
    dtype = ctx.avals_in[0].dtype
    init = mlir.ir_constant(_identity(kind, dtype))
    return _reduce_window_ir(ctx.avals_out, [x], [init], [dtype],
                             lambda a, b: [_combine(kind, dtype, a, b)], **params)[0]

  def batch(args, dims, **params):
    (x,), (d,) = args, dims
    return prim.bind(x, **_with_unit_window_at(d, params)), d

  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, lowering)
  batching.primitive_batchers[prim] = batch
  return prim


_COMBINE = {
    "sum": lambda dt: mhlo.OrOp if dt == dtypes.bool_ else mhlo.AddOp,
    "max": lambda dt: mhlo.OrOp if dt == dtypes.bool_ else mhlo.MaxOp,
    "min": lambda dt: mhlo.AndOp if dt == dtypes.bool_ else mhlo.MinOp,
}


def _combine(kind: str, dtype, a: ir.Value, b: ir.Value) -> ir.Value:
  """Two window elements combined by the monoid; complex max/min compare lexicographically,
  as `lax.max`/`lax.min` do (XLA's own compare real parts only)."""
  if kind != "sum" and np.issubdtype(dtype, np.complexfloating):
    from minijax.lax.complex_ops import lexicographic_select
    return lexicographic_select(a, b, kind)
  return _COMBINE[kind](dtype)(a, b).result


def _is_number(dtype):
  return dtype != dtypes.bool_


def _any(dtype):
  return True


# ---- reduce_window_sum
reduce_window_sum_p = _monoid("sum", _is_number, "a number")


def _reduce_window_sum_transpose(ct, x, **params):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  shape = x.aval.shape
  strides, window = params["window_strides"], params["window_dimensions"]
  in_dil = _dilate(shape, params["base_dilation"])
  win_dil = _dilate(window, params["window_dilation"])
  out_dil = _dilate(ct.shape, strides)
  config = []
  for n, k, o, (lo, _), s in zip(in_dil, win_dil, out_dil, params["padding"], strides):
    before = k - lo - 1
    config.append((before, n + k - 1 - o - before, s - 1))
  spread = pad(ct, full((), 0, ct.dtype), config)
  ones = (1,) * len(shape)
  return [reduce_window_sum_p.bind(
      spread, window_dimensions=window, window_strides=params["base_dilation"],
      padding=((0, 0),) * len(shape), base_dilation=ones,
      window_dilation=params["window_dilation"])]


def _reduce_window_sum_jvp(primals, tangents, **params):
  out = reduce_window_sum_p.bind(*primals, **params)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, reduce_window_sum_p.bind(tangents[0], **params)


ad.primitive_jvps[reduce_window_sum_p] = _reduce_window_sum_jvp
ad.primitive_transposes[reduce_window_sum_p] = _reduce_window_sum_transpose


# ---- reduce_window_max / reduce_window_min
reduce_window_max_p = _monoid("max", _any, "any")
reduce_window_min_p = _monoid("min", _any, "any")


def _chooser_jvp(select_prim):
  def jvp(t, x, **params):
    return select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)
  return jvp


ad.defjvp(reduce_window_max_p, _chooser_jvp(elementwise.ge_p))
ad.defjvp(reduce_window_min_p, _chooser_jvp(elementwise.le_p))


# ----------------------------------------------------------------------------- select_and_gather_add

select_and_gather_add_p = Primitive("select_and_gather_add")


def _chooses_max(select_prim) -> bool:
  if select_prim not in (elementwise.ge_p, elementwise.le_p):
    raise TypeError(f"select_prim must be lax.ge_p or lax.le_p, got {select_prim}")
  return select_prim is elementwise.ge_p


def _reject_complex_selection(name, operand):
  """The selecting comparison of max/min pooling's gradient is an order: complex operands
  have none that XLA's comparisons implement (JAX raises too)."""
  if np.issubdtype(operand.dtype, np.complexfloating):
    raise TypeError(f"{name} does not accept dtype {operand.dtype} ({operand.str_short()}): the "
                    "gradient of max/min pooling compares operands, which complex numbers "
                    "do not support")


def _sga_abstract_eval(tangents, operand, *, select_prim, **params):
  _chooses_max(select_prim)
  _reject_complex_selection("select_and_gather_add", operand)
  if tangents.shape != operand.shape:
    raise TypeError("select_and_gather_add tangents and operand shapes must match, got "
                    f"{tangents.shape} and {operand.shape}.")
  shape = _window_shape("select_and_gather_add", operand, **params)
  return ShapedArray(shape, tangents.dtype, tangents.weak_type)


def _sga_lowering(ctx, tangents, operand, *, select_prim, **params):
  from minijax.lax.elementwise import _compare_ir
  t_dtype, x_dtype = ctx.avals_in[0].dtype, ctx.avals_in[1].dtype
  kind = "max" if _chooses_max(select_prim) else "min"
  direction = "GE" if kind == "max" else "LE"
  inits = [mlir.ir_constant(_identity(kind, x_dtype)), mlir.ir_constant(np.zeros((), t_dtype))]
  out_avals = [ctx.avals_out[0].update(dtype=x_dtype), ctx.avals_out[0]]

  def reducer(kx, vx, ky, vy):
    keep_x = _compare_ir(kx, ky, direction, x_dtype)
    return [mhlo.SelectOp(keep_x, kx, ky).result, mhlo.SelectOp(keep_x, vx, vy).result]
  return _reduce_window_ir(out_avals, [operand, tangents], inits, [x_dtype, t_dtype], reducer,
                           **params)[1]


def _sga_transpose(ct, tangents, operand, *, select_prim, **params):
  from minijax.lax.slicing import slice as lax_slice
  if type(ct) is ad.Zero:
    return [ad.Zero(tangents.aval), None]
  if any(d != 1 for d in params["window_dilation"]):
    raise NotImplementedError(
        "the transpose of select_and_gather_add (the gradient of max or min pooling) with "
        f"window_dilation={params['window_dilation']} is not implemented, as in JAX: XLA's "
        "SelectAndScatter has no window dilation")
  base = params["base_dilation"]
  if any(d != 1 for d in base):
    kind = "max" if _chooses_max(select_prim) else "min"
    fill = full((), _identity(kind, operand.dtype), operand.dtype)
    operand = pad(operand, fill, [(0, 0, d - 1) for d in base])
  out = select_and_scatter_add_p.bind(
      ct, operand, select_prim=select_prim, window_dimensions=params["window_dimensions"],
      window_strides=params["window_strides"], padding=params["padding"])
  if any(d != 1 for d in base):
    out = lax_slice(out, (0,) * out.ndim, out.shape, base)
  return [out, None]


def _sga_batch(args, dims, **params):
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  t, x = (batching.bdim_at_front(a, d, size) for a, d in zip(args, dims))
  return select_and_gather_add_p.bind(t, x, **_with_unit_window_at(0, params)), 0


select_and_gather_add_p.def_abstract_eval(_sga_abstract_eval)
mlir.register_lowering(select_and_gather_add_p, _sga_lowering)
ad.defjvp(select_and_gather_add_p,
          lambda t, tangents, operand, **params: select_and_gather_add_p.bind(
              t, operand, **params), None)
ad.primitive_transposes[select_and_gather_add_p] = _sga_transpose
batching.primitive_batchers[select_and_gather_add_p] = _sga_batch


# ----------------------------------------------------------------------------- select_and_scatter_add

select_and_scatter_add_p = Primitive("select_and_scatter_add")


def _ssa_abstract_eval(source, operand, *, select_prim, window_dimensions, window_strides,
                       padding):
  _chooses_max(select_prim)
  _reject_complex_selection("select_and_scatter_add", operand)
  ones = (1,) * len(window_dimensions)
  expected = _window_shape("select_and_scatter_add", operand, window_dimensions,
                           window_strides, padding, ones, ones)
  if source.shape != expected:
    raise TypeError(f"select_and_scatter_add source has shape {source.shape}, but windows "
                    f"of {operand.str_short()} give {expected}")
  return ShapedArray(operand.shape, source.dtype, source.weak_type)


def _ssa_lowering(ctx, source, operand, *, select_prim, window_dimensions, window_strides,
                  padding):
  from minijax.lax.elementwise import _compare_ir
  s_aval, x_aval = ctx.avals_in
  kind = "max" if _chooses_max(select_prim) else "min"
  padded = any(lo or hi for lo, hi in padding)
  if padded:
    # XLA's CPU select-and-scatter with padding is slow: pad with the identity instead
    # (it never wins a selection) and cut the result back
    lows, highs = [max(lo, 0) for lo, _ in padding], [max(hi, 0) for _, hi in padding]
    fill = mlir.ir_constant(_identity(kind, x_aval.dtype))
    operand = mhlo.PadOp(operand, fill, lows, highs, [0] * len(padding)).result
    crops = [(max(-lo, 0), max(-hi, 0)) for lo, hi in padding]
    if any(a or b for a, b in crops):
      shape = ir.RankedTensorType(operand.type).shape
      operand = mhlo.SliceOp(operand, [a for a, _ in crops],
                             [n - b for n, (_, b) in zip(shape, crops)],
                             [1] * len(shape)).result
  work_shape = ir.RankedTensorType(operand.type).shape
  result_type = ir.RankedTensorType.get(work_shape, mlir.dtype_to_ir_type(s_aval.dtype))
  zero = mlir.ir_constant(np.zeros((), s_aval.dtype))
  op = mhlo.SelectAndScatterOp(result_type, operand, source, zero,
                               window_dimensions=list(window_dimensions),
                               window_strides=list(window_strides),
                               padding=_padding_attr([(0, 0)] * len(padding)))
  x_type, s_type = _scalar_type(x_aval.dtype), _scalar_type(s_aval.dtype)
  select = op.select.blocks.append(x_type, x_type)
  with ir.InsertionPoint(select):
    a, b = select.arguments
    mhlo.ReturnOp([_compare_ir(a, b, "GE" if kind == "max" else "LE", x_aval.dtype)])
  scatter = op.scatter.blocks.append(s_type, s_type)
  with ir.InsertionPoint(scatter):
    add = mhlo.OrOp if s_aval.dtype == dtypes.bool_ else mhlo.AddOp
    mhlo.ReturnOp([add(*scatter.arguments).result])
  out = op.result
  if padded:
    # positions of the negative pads were cropped away: their cotangent is zero
    starts = [max(lo, 0) for lo, _ in padding]
    limits = [min(n + lo, w) for n, (lo, _), w in zip(x_aval.shape, padding, work_shape)]
    out = mhlo.SliceOp(out, starts, limits, [1] * len(starts)).result
    crops = [(max(-lo, 0), max(-hi, 0)) for lo, hi in padding]
    if any(a or b for a, b in crops):
      out = mhlo.PadOp(out, zero, [a for a, _ in crops], [b for _, b in crops],
                       [0] * len(crops)).result
  return out


def _ssa_transpose(ct, source, operand, *, select_prim, window_dimensions, window_strides,
                   padding):
  if type(ct) is ad.Zero:
    return [ad.Zero(source.aval), None]
  ones = (1,) * len(window_dimensions)
  return [select_and_gather_add_p.bind(
      ct, operand, select_prim=select_prim, window_dimensions=window_dimensions,
      window_strides=window_strides, padding=padding, base_dilation=ones,
      window_dilation=ones), None]


def _ssa_batch(args, dims, *, select_prim, window_dimensions, window_strides, padding):
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  source, operand = (batching.bdim_at_front(a, d, size) for a, d in zip(args, dims))
  return select_and_scatter_add_p.bind(
      source, operand, select_prim=select_prim, window_dimensions=(1,) + window_dimensions,
      window_strides=(1,) + window_strides, padding=((0, 0),) + padding), 0


select_and_scatter_add_p.def_abstract_eval(_ssa_abstract_eval)
mlir.register_lowering(select_and_scatter_add_p, _ssa_lowering)
ad.defjvp(select_and_scatter_add_p,
          lambda t, source, operand, **params: select_and_scatter_add_p.bind(
              t, operand, **params), None)
ad.primitive_transposes[select_and_scatter_add_p] = _ssa_transpose
batching.primitive_batchers[select_and_scatter_add_p] = _ssa_batch


# ----------------------------------------------------------------------------- reduce_window_p

reduce_window_p = Primitive("reduce_window")
reduce_window_p.multiple_results = True


def _generic_abstract_eval(*avals, jaxpr, **params):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
    raise TypeError("reduce_window got inconsistent dtypes for operands and init_values: got "
                    f"operand dtypes {[str(o.dtype) for o in operands]} and init_value dtypes "
                    f"{[str(i.dtype) for i in inits]}.")
  if any(i.shape for i in inits):
    raise TypeError("reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[i.shape for i in inits]}.")
  if any(o.shape != operands[0].shape for o in operands):
    raise TypeError("reduce_window operands must have one shape, got "
                    f"{[o.shape for o in operands]}")
  shape = _window_shape("reduce_window", operands[0], **params)
  return [ShapedArray(shape, o.dtype, o.weak_type) for o in operands]


def _generic_lowering(ctx, *args, jaxpr, **params):
  n = len(args) // 2
  if jaxpr.effects:
    raise NotImplementedError("reduce_window cannot lower a computation with effects "
                              f"{set(jaxpr.effects)}")
  mctx = ctx.module_context
  consts = [mlir.ir_constant(np.asarray(c)) for c in jaxpr.consts]

  def reducer(*scalars):
    outs, _ = mlir.jaxpr_subcomp(mctx, jaxpr.jaxpr, TokenSet(), consts, *scalars)
    return outs
  return _reduce_window_ir(ctx.avals_out, args[:n], args[n:],
                           [a.dtype for a in ctx.avals_in[:n]], reducer, **params)


def _generic_jvp(primals, tangents, *, jaxpr, **params):
  n = len(primals) // 2
  operands, inits = primals[:n], primals[n:]
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
  jvp_jaxpr, _ = ad.jvp_jaxpr(jaxpr, [True] * (2 * n), instantiate=True)
  consts = list(jvp_jaxpr.consts)

  def paired(*scalars):  # (x primals, x tangents, y primals, y tangents)
    xp, xt, yp, yt = (scalars[k * n:(k + 1) * n] for k in range(4))
    from minijax.core.jaxpr import eval_jaxpr
    return eval_jaxpr(jvp_jaxpr.jaxpr, consts, *xp, *yp, *xt, *yt)

  op_tangents = [ad.instantiate_zeros(t) for t in tangents[:n]]
  zero_inits = [full((), 0, get_aval(t).dtype) for t in op_tangents]
  # the primal outputs come from a reduction of their own, so they never depend on tangents
  outs = reduce_window_p.bind(*primals, jaxpr=jaxpr, **params)
  joint = _bind_generic(paired, [*operands, *op_tangents], [*inits, *zero_inits], params)
  return outs, joint[n:]


def _generic_transpose(ct, *args, jaxpr, **params):
  raise NotImplementedError(
      "reverse-mode differentiation of reduce_window with a generic computation is not "
      "supported (as in JAX, only forward mode is); reduce with lax.add, lax.max or lax.min "
      "and their identities, whose window reductions have gradients")


def _generic_batch(args, dims, *, jaxpr, **params):
  n = len(args) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("reduce_window batching is not implemented for initial values")
  size = next(x.shape[d] for x, d in zip(args[:n], dims[:n]) if d is not None)
  operands = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
  outs = reduce_window_p.bind(*operands, *args[n:], jaxpr=jaxpr,
                              **_with_unit_window_at(0, params))
  return outs, [0] * n


reduce_window_p.def_abstract_eval(_generic_abstract_eval)
mlir.register_lowering(reduce_window_p, _generic_lowering)
ad.primitive_jvps[reduce_window_p] = _generic_jvp
ad.primitive_transposes[reduce_window_p] = _generic_transpose
batching.primitive_batchers[reduce_window_p] = _generic_batch


def _trace_reducer(computation: Callable, scalar_avals) -> ClosedJaxpr:
  """`computation(lefts..., rights...)` (flat) as a jaxpr on scalars."""
  from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic
  jaxpr, consts = trace_to_jaxpr_dynamic(computation, [*scalar_avals, *scalar_avals])
  if any(isinstance(c, Tracer) for c in consts):
    raise TypeError("reduce_window's computation closes over a traced value; the reduction "
                    "must depend only on its two arguments and constants")
  out_avals = [v.aval for v in jaxpr.outvars]
  if [(a.shape, a.dtype) for a in out_avals] != [(a.shape, a.dtype) for a in scalar_avals]:
    raise TypeError("reduce_window's computation must return scalars of the operands' dtypes "
                    f"{[a.str_short() for a in scalar_avals]}, got "
                    f"{[a.str_short() for a in out_avals]}")
  return ClosedJaxpr(jaxpr, consts)


def _bind_generic(flat_computation, operands, inits, params) -> list:
  inits = [convert_to_array(i) for i in inits]
  scalar_avals = [get_aval(i).strip_weak_type() for i in inits]
  jaxpr = _trace_reducer(lambda *xs: list(flat_computation(*xs)), scalar_avals)
  return reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr, **params)


# ----------------------------------------------------------------------------- the API

def _window_params(shape, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation) -> dict:
  n = len(window_dimensions)
  window_dimensions = tuple(int(k) for k in window_dimensions)
  ones = (1,) * n
  strides = ones if window_strides is None else tuple(int(s) for s in window_strides)
  base = ones if base_dilation is None else tuple(int(d) for d in base_dilation)
  wdil = ones if window_dilation is None else tuple(int(d) for d in window_dilation)
  if isinstance(padding, str):
    padding = padtype_to_pads(shape, _dilate(window_dimensions, wdil), strides, padding)
  try:
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
  except (TypeError, ValueError):
    raise ValueError("reduce_window padding should be a string or a sequence of (low, high) "
                     f"pairs, got {padding}") from None
  return dict(window_dimensions=window_dimensions, window_strides=strides, padding=padding,
              base_dilation=base, window_dilation=wdil)


def _concrete_scalar(x) -> Any:
  if isinstance(x, Tracer):
    return None
  value = np.asarray(x)
  return value if value.shape == () else None


def _monoid_for(computation, init, dtype) -> Primitive | None:
  value = _concrete_scalar(init)
  if value is None:
    return None
  if computation is elementwise.add and value == 0:
    return reduce_window_sum_p
  if computation is elementwise.max and value == _identity("max", dtype):
    return reduce_window_max_p
  if computation is elementwise.min and value == _identity("min", dtype):
    return reduce_window_min_p
  return None


def reduce_window(operand, init_value, computation: Callable, window_dimensions,
                  window_strides: Sequence[int] | None = None, padding="VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None):
  """Reduces each window of `operand` (an array or a pytree of arrays of one shape) with
  `computation(left, right)`, starting from `init_value` (a scalar or a matching pytree of
  scalars)."""
  flat_operands, tree = tree_util.tree_flatten(operand)
  flat_inits, init_tree = tree_util.tree_flatten(init_value)
  if tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{tree} vs. {init_tree}")
  if not flat_operands:
    raise ValueError("reduce_window must have at least one operand.")
  flat_operands = [convert_to_array(x) for x in flat_operands]
  shape = get_aval(flat_operands[0]).shape
  params = _window_params(shape, window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)
  if len(flat_operands) == 1:
    dtype = get_aval(flat_operands[0]).dtype
    monoid = _monoid_for(computation, flat_inits[0], dtype)
    if monoid is not None:
      return tree_util.tree_unflatten(tree, [monoid.bind(flat_operands[0], **params)])
  n = len(flat_operands)
  out_tree_box = []

  def flat_computation(*scalars):
    left = tree_util.tree_unflatten(tree, list(scalars[:n]))
    right = tree_util.tree_unflatten(tree, list(scalars[n:]))
    leaves, out_tree = tree_util.tree_flatten(computation(left, right))
    out_tree_box.append(out_tree)
    return leaves

  dtypes_ = [get_aval(x).dtype for x in flat_operands]
  inits = [full((), i, d) if isinstance(i, (bool, int, float)) else i
           for i, d in zip(flat_inits, dtypes_)]
  outs = _bind_generic(flat_computation, flat_operands, inits, params)
  if out_tree_box[0] != tree:
    raise ValueError("reduce_window output must have the same tree structure as the operands "
                     f"{tree} vs. {out_tree_box[0]}")
  return tree_util.tree_unflatten(tree, outs)
