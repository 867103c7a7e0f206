"""gather and the scatter family (scatter, scatter_add, scatter_mul, scatter_min, scatter_max).

Dimension numbers follow XLA's (with batching dimensions); the index vector is always the
last axis of `indices`.  The primitives do what XLA does with out-of-bounds indices: a gather
clamps its start indices, a scatter drops the windows.  JAX's `mode=` (`GatherScatterMode`)
is applied around them: CLIP clamps the indices first, a FILL_OR_DROP gather replaces the
out-of-bounds windows with `fill_value`; minijax.numpy normalizes negative indices first.

gather is linear in its operand and transposes to scatter_add; scatter_add is linear in
(operand, updates) and transposes to (identity, gather).  `scatter` (replace) assumes unique
indices for its derivative, as JAX does when it may.  Under vmap, batch axes become the
operand / index batching dimensions that XLA supports directly.
"""
from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.gather_checks import check_gather, check_scatter
from minijax.lax.structural import convert_to_array, full
from minijax.lowering import mlir

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather",
           "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max",
           "scatter_apply",
           "gather_p", "scatter_p", "scatter_add_p", "scatter_mul_p", "scatter_min_p",
           "scatter_max_p"]


class GatherDimensionNumbers(NamedTuple):
  offset_dims: tuple
  collapsed_slice_dims: tuple
  start_index_map: tuple
  operand_batching_dims: tuple = ()
  start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
  update_window_dims: tuple
  inserted_window_dims: tuple
  scatter_dims_to_operand_dims: tuple
  operand_batching_dims: tuple = ()
  scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
  """What a gather or scatter does with indices whose window leaves the operand.

  CLIP: clamp them so that the whole window is inside.  FILL_OR_DROP: a gather returns
  `fill_value` for the whole window, a scatter drops the window.  PROMISE_IN_BOUNDS: the
  caller promises there are none (XLA then clamps gathers and drops scatters).  ONE_HOT is
  JAX's name for numpy indexing by one-hot products, which lax does not implement."""
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()
  ONE_HOT = enum.auto()

  @staticmethod
  def from_any(mode) -> "GatherScatterMode":
    """`mode` as given to gather and scatter: a member, or 'clip', 'fill', 'drop',
    'promise_in_bounds', 'one_hot'; None is FILL_OR_DROP."""
    if isinstance(mode, GatherScatterMode):
      return mode
    names = {None: "FILL_OR_DROP", "clip": "CLIP", "fill": "FILL_OR_DROP",
             "drop": "FILL_OR_DROP", "promise_in_bounds": "PROMISE_IN_BOUNDS",
             "one_hot": "ONE_HOT"}
    if not isinstance(mode, (str, type(None))) or mode not in names:
      raise ValueError(f'Unknown gather mode "{mode}"')
    return GatherScatterMode[names[mode]]


def default_fill_value(dtype):
  """What an out-of-bounds FILL_OR_DROP gather reads (JAX's): NaN for inexact types, the
  lowest signed or the highest unsigned integer, True for booleans."""
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtype == dtypes.bool_:
    return True
  info = np.iinfo(dtype)
  return info.min if np.issubdtype(dtype, np.signedinteger) else info.max


def _index_bounds(indices, operand_shape, dims, window):
  """The largest in-bounds start of each index-vector entry (operand dim `dims[i]`, window
  extent `window[i]`), as an array of `indices`' dtype broadcast to its shape."""
  from minijax.lax.structural import broadcast_in_dim
  info = np.iinfo(indices.dtype)
  upper = np.array([min(operand_shape[d] - w, info.max) for d, w in zip(dims, window)])
  upper = convert_to_array(upper.astype(indices.dtype))
  return broadcast_in_dim(upper, indices.shape, (indices.ndim - 1,))


def _clamp_indices(indices, operand_shape, dims, window):
  from minijax.lax.elementwise import max as lax_max
  from minijax.lax.misc import clamp
  upper = _index_bounds(indices, operand_shape, dims, window)
  upper = lax_max(upper, full(upper.shape, 0, upper.dtype))  # (a window larger than its dim)
  return clamp(full((), 0, indices.dtype), indices, upper)


def _windows_in_bounds(indices, operand_shape, dims, window):
  """Booleans of `indices`' batch shape: whether each window lies inside the operand."""
  from minijax.lax.elementwise import bitwise_and, ge, le
  from minijax.lax.reductions import reduce_and
  upper = _index_bounds(indices, operand_shape, dims, window)
  inside = bitwise_and(ge(indices, full(indices.shape, 0, indices.dtype)), le(indices, upper))
  return reduce_and(inside, (indices.ndim - 1,))


def _check_integer_indices(indices):
  if not dtypes.is_integer(indices.dtype):
    raise ValueError(f"indices must have an integer type, got {indices.dtype}")


def _shift(dims, k=1):
  return tuple(d + k for d in dims)


# ---- gather
gather_p = Primitive("gather")


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, mode):
  dn = dimension_numbers
  if indices.ndim < 1:
    raise TypeError(f"gather indices must have the index vector as their last axis, got "
                    f"{indices.str_short()}")
  check_gather(operand, indices, dn, slice_sizes)
  _check_integer_indices(indices)
  dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  offset_sizes = [s for d, s in enumerate(slice_sizes) if d not in dropped]
  batch_shape = list(indices.shape[:-1])
  shape, oi, bi = [], 0, 0
  for d in range(len(batch_shape) + len(offset_sizes)):
    if d in dn.offset_dims:
      shape.append(offset_sizes[oi])
      oi += 1
    else:
      shape.append(batch_shape[bi])
      bi += 1
  return ShapedArray(shape, operand.dtype, operand.weak_type)


gather_p.def_abstract_eval(_gather_abstract_eval)


def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes, mode):
  # (XLA's Gather clamps every window into the operand: CLIP's reading, and the one a
  # window PROMISE_IN_BOUNDS keeps its promise for)
  out_aval = ctx.avals_out[0]
  if out_aval.size == 0:  # XLA rejects slices larger than an (empty) operand
    return mlir.splat_constant(0, out_aval.shape, out_aval.dtype)
  dn = dimension_numbers
  attr = mhlo.GatherDimensionNumbers.get(
      offset_dims=list(dn.offset_dims), collapsed_slice_dims=list(dn.collapsed_slice_dims),
      operand_batching_dims=list(dn.operand_batching_dims),
      start_indices_batching_dims=list(dn.start_indices_batching_dims),
      start_index_map=list(dn.start_index_map), index_vector_dim=ctx.avals_in[1].ndim - 1)
  return mhlo.GatherOp(operand, indices, attr, list(slice_sizes),
                       results=[mlir.aval_to_ir_type(ctx.avals_out[0])]).result


mlir.register_lowering(gather_p, _gather_lowering)


def _gather_jvp(primals, tangents, **params):
  operand, indices = primals
  out = gather_p.bind(operand, indices, **params)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, gather_p.bind(tangents[0], indices, **params)


def _scatter_dnums_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
  return ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                 dn.operand_batching_dims, dn.start_indices_batching_dims)


def _gather_dnums_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
  return GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                dn.scatter_indices_batching_dims)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, mode):
  """A scatter-add of the cotangent at the gather's windows: under CLIP at the starts as
  clamped, where it read; under PROMISE_IN_BOUNDS at the starts as given (a window out of
  bounds, a broken promise, is dropped), as JAX's."""
  if ad.is_undefined_primal(indices):
    raise ValueError("gather is not linear in its indices")
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval), None]
  zeros = full(operand.aval.shape, 0, ct.dtype)
  if mode is GatherScatterMode.CLIP:
    starts = dimension_numbers.start_index_map
    indices = _clamp_indices(indices, operand.aval.shape, starts,
                             [slice_sizes[d] for d in starts])
  return [scatter_add_p.bind(zeros, indices, ct,
                             dimension_numbers=_scatter_dnums_of(dimension_numbers),
                             indices_are_sorted=False, unique_indices=False), None]


def _gather_batch(args, dims, *, dimension_numbers, slice_sizes, mode):
  (operand, indices), (do, di) = args, dims
  dn = dimension_numbers
  size = operand.shape[do] if do is not None else indices.shape[di]
  if di is None:
    operand = batching.moveaxis(operand, do, 0)
    new = GatherDimensionNumbers(
        offset_dims=(0,) + _shift(dn.offset_dims), collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
        start_index_map=_shift(dn.start_index_map),
        operand_batching_dims=_shift(dn.operand_batching_dims),
        start_indices_batching_dims=dn.start_indices_batching_dims)
    return gather(operand, indices, new, (size,) + tuple(slice_sizes), mode=mode), 0
  indices = batching.moveaxis(indices, di, 0)
  if do is None:
    new = dn._replace(offset_dims=_shift(dn.offset_dims),
                      start_indices_batching_dims=_shift(dn.start_indices_batching_dims))
    return gather(operand, indices, new, slice_sizes, mode=mode), 0
  operand = batching.moveaxis(operand, do, 0)
  new = GatherDimensionNumbers(
      offset_dims=_shift(dn.offset_dims), collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
      start_index_map=_shift(dn.start_index_map),
      operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
      start_indices_batching_dims=(0,) + _shift(dn.start_indices_batching_dims))
  return gather(operand, indices, new, (1,) + tuple(slice_sizes), mode=mode), 0


ad.primitive_jvps[gather_p] = _gather_jvp
ad.primitive_transposes[gather_p] = _gather_transpose
batching.primitive_batchers[gather_p] = _gather_batch


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes, *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None,
           fill_value=None):
  """XLA's Gather.  `mode` (a `GatherScatterMode` or its name; by default
  PROMISE_IN_BOUNDS) says what out-of-bounds windows read: clamped ones, or `fill_value`
  (`default_fill_value` of the dtype when None).  `unique_indices` and
  `indices_are_sorted` are promises that do not change the result."""
  operand, indices = convert_to_array(operand), convert_to_array(start_indices)
  dn = GatherDimensionNumbers(*(tuple(int(d) for d in f) for f in dimension_numbers))
  sizes = tuple(int(s) for s in slice_sizes)
  mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
  if mode is GatherScatterMode.ONE_HOT:
    raise NotImplementedError("lax.gather does not implement mode=ONE_HOT (JAX uses it inside "
                              "jax.numpy indexing only); use 'clip', 'fill' or "
                              "'promise_in_bounds'")
  window = [sizes[d] if d < len(sizes) else 1 for d in dn.start_index_map]
  primitive_mode = (GatherScatterMode.CLIP if mode is GatherScatterMode.CLIP
                    else GatherScatterMode.PROMISE_IN_BOUNDS)  # (FILL_OR_DROP: masked below)
  out = gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=sizes,
                      mode=primitive_mode)
  if mode is not GatherScatterMode.FILL_OR_DROP or not indices.ndim:
    return out
  from minijax.lax.misc import select
  from minijax.lax.structural import broadcast_in_dim
  fill = default_fill_value(out.dtype) if fill_value is None else fill_value
  inside = _windows_in_bounds(indices, operand.shape, dn.start_index_map, window)
  batch = [d for d in range(out.ndim) if d not in dn.offset_dims]
  return select(broadcast_in_dim(inside, out.shape, batch), out,
                full(out.shape, fill, out.dtype))


# ---- scatter family

def _scatter_abstract_eval(name):
  def rule(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices):
    dn = dimension_numbers
    if indices.ndim < 1:
      raise TypeError(f"{name} indices must have the index vector as their last axis, got "
                      f"{indices.str_short()}")
    check_scatter(operand, indices, updates, dn)
    _check_integer_indices(indices)
    utils.check_same_dtypes("scatter", operand, updates)
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)
  return rule


def _scatter_lowering(combine):
  def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices):
    dn = dimension_numbers
    attr = mhlo.ScatterDimensionNumbers.get(
        update_window_dims=list(dn.update_window_dims),
        inserted_window_dims=list(dn.inserted_window_dims),
        input_batching_dims=list(dn.operand_batching_dims),
        scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
        scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),  # (MHLO spelling)
        index_vector_dim=ctx.avals_in[1].ndim - 1)
    out_type = mlir.aval_to_ir_type(ctx.avals_out[0])
    op = mhlo.ScatterOp([out_type], [operand], indices, [updates], attr,
                        indices_are_sorted=bool(indices_are_sorted),
                        unique_indices=bool(unique_indices))
    scalar = mlir.aval_to_ir_type(ShapedArray((), ctx.avals_in[0].dtype))
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
      mhlo.ReturnOp([combine(*block.arguments, ctx.avals_in[0].dtype)])
    return op.results[0]
  return rule


def _combine(op, bool_op, extremum=None):
  """The scatter region's combiner; XLA's pred type has no add or mul, so bools use or/and,
  and complex values take the larger or smaller (`extremum`) in numpy's lexicographic order."""
  def combine(a, b, dtype):
    if extremum is not None and np.issubdtype(dtype, np.complexfloating):
      from minijax.lax.complex_ops import lexicographic_select
      return lexicographic_select(a, b, extremum)
    return (bool_op if dtype == dtypes.bool_ else op)(a, b).result
  return combine


def _scatter_primitive(name, combine):
  prim = Primitive(name)
  prim.def_abstract_eval(_scatter_abstract_eval(name))
  mlir.register_lowering(prim, _scatter_lowering(combine))
  batching.primitive_batchers[prim] = _scatter_batch_rule(prim)
  return prim


def _scatter_batch_rule(prim):
  def rule(args, dims, *, dimension_numbers, indices_are_sorted, unique_indices):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    operand, indices, updates = [batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
    dn = dimension_numbers
    new = ScatterDimensionNumbers(
        update_window_dims=_shift(dn.update_window_dims),
        inserted_window_dims=_shift(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
        scatter_indices_batching_dims=(0,) + _shift(dn.scatter_indices_batching_dims))
    return prim.bind(operand, indices, updates, dimension_numbers=new,
                     indices_are_sorted=indices_are_sorted, unique_indices=unique_indices), 0
  return rule


scatter_p = _scatter_primitive("scatter", lambda a, b, dtype: b)
scatter_add_p = _scatter_primitive("scatter-add", _combine(mhlo.AddOp, mhlo.OrOp))
scatter_mul_p = _scatter_primitive("scatter-mul", _combine(mhlo.MulOp, mhlo.AndOp))
scatter_min_p = _scatter_primitive("scatter-min", _combine(mhlo.MinOp, mhlo.AndOp, "min"))
scatter_max_p = _scatter_primitive("scatter-max", _combine(mhlo.MaxOp, mhlo.OrOp, "max"))


def _scatter_window(operand_shape, updates_shape, dn):
  """The extent of the scattered window in each operand dimension."""
  sizes = [1] * len(operand_shape)
  window = [d for d in range(len(operand_shape))
            if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
  for u, o in zip(dn.update_window_dims, window):
    sizes[o] = updates_shape[u]
  return sizes


def _gather_updates_like(ct, indices, updates_aval, dn):
  """The updates-shaped cotangent of a scatter: `ct` gathered at the scattered windows (the
  windows a scatter dropped, out of bounds, get none)."""
  sizes = _scatter_window(get_aval(ct).shape, updates_aval.shape, dn)
  return gather(ct, indices, _gather_dnums_of(dn), sizes, mode=GatherScatterMode.FILL_OR_DROP,
                fill_value=0)


def _scatter_linear_jvp(prim):
  def jvp(primals, tangents, **params):
    operand, indices, updates = primals
    out = prim.bind(*primals, **params)
    t_op, _, t_up = tangents
    if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    return out, prim.bind(ad.instantiate_zeros(t_op), indices, ad.instantiate_zeros(t_up),
                          **params)
  return jvp


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers, **_):
  u_aval = updates.aval if ad.is_undefined_primal(updates) else get_aval(updates)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None, None,
            ad.Zero(u_aval) if ad.is_undefined_primal(updates) else None]
  t_op = ct if ad.is_undefined_primal(operand) else None
  t_up = (_gather_updates_like(ct, indices, u_aval, dimension_numbers)
          if ad.is_undefined_primal(updates) else None)
  return [t_op, None, t_up]


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers,
                       indices_are_sorted, unique_indices):
  u_aval = updates.aval if ad.is_undefined_primal(updates) else get_aval(updates)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None, None,
            ad.Zero(u_aval) if ad.is_undefined_primal(updates) else None]
  t_op = t_up = None
  if ad.is_undefined_primal(operand):
    t_op = scatter_p.bind(ct, indices, full(u_aval.shape, 0, ct.dtype),
                          dimension_numbers=dimension_numbers,
                          indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
  if ad.is_undefined_primal(updates):
    t_up = _gather_updates_like(ct, indices, u_aval, dimension_numbers)
  return [t_op, None, t_up]


_scatter_unique_jvp = _scatter_linear_jvp(scatter_p)


def _scatter_jvp(primals, tangents, **params):
  """With unique indices a scatter is linear.  Otherwise where windows overlap one update
  wins each element (the last, on XLA's CPU), and only its tangent may pass: each window
  scatters its own id, the ids read back say which window won where, and the tangent is a
  scatter_add of the winners' tangents onto the operand's tangent where no window wrote
  (JAX's construction), whose transpose gives a losing update no cotangent."""
  if params["unique_indices"]:
    return _scatter_unique_jvp(primals, tangents, **params)
  from minijax.lax.elementwise import add, eq
  from minijax.lax.misc import iota, select_n
  from minijax.lax.structural import broadcast_in_dim, reshape
  operand, indices, updates = primals
  out = scatter_p.bind(*primals, **params)
  t_op, _, t_up = tangents
  if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  dn = params["dimension_numbers"]
  u_shape, o_shape = get_aval(updates).shape, get_aval(operand).shape
  ids_shape = tuple(1 if d in dn.update_window_dims else n for d, n in enumerate(u_shape))
  ids = add(reshape(iota(np.int32, int(np.prod(ids_shape, dtype=int))), ids_shape),
            full(ids_shape, 1, np.int32))
  ids = broadcast_in_dim(ids, u_shape, tuple(range(len(u_shape))))
  written = scatter_p.bind(full(o_shape, 0, np.int32), indices, ids, **params)
  won = eq(ids, _gather_updates_like(written, indices, get_aval(updates), dn))
  untouched = eq(written, full(o_shape, 0, np.int32))
  t_op, t_up = map(ad.instantiate_zeros, (t_op, t_up))
  dtype = get_aval(out).dtype
  kept = select_n(untouched, full(o_shape, 0, dtype), t_op)
  landed = select_n(won, full(u_shape, 0, dtype), t_up)
  return out, scatter_add_p.bind(kept, indices, landed, **params)


ad.primitive_jvps[scatter_add_p] = _scatter_linear_jvp(scatter_add_p)
ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose
ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.primitive_transposes[scatter_p] = _scatter_transpose


def _scatter_mul_jvp(primals, tangents, **params):
  operand, indices, updates = primals
  out = scatter_mul_p.bind(*primals, **params)
  t_op, _, t_up = tangents
  if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  t_out = scatter_mul_p.bind(ad.instantiate_zeros(t_op), indices, updates, **params)
  if type(t_up) is not ad.Zero:
    # with each element scaled once, out = x * u there: d out = dx * u + x * du
    if not params["unique_indices"]:
      raise NotImplementedError("scatter_mul gradients are only implemented if "
                                "`unique_indices=True`")
    from minijax.lax.elementwise import add, mul
    dn = params["dimension_numbers"]
    scaled = mul(t_up, _gather_updates_like(operand, indices, get_aval(updates), dn))
    t_out = add(t_out, scatter_add_p.bind(full(get_aval(out).shape, 0, get_aval(out).dtype),
                                          indices, scaled, **params))
  return out, t_out


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
  if ad.is_undefined_primal(updates):
    raise NotImplementedError("scatter_mul is not linear in its updates")
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval), None, None]
  return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


ad.primitive_jvps[scatter_mul_p] = _scatter_mul_jvp
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose


def _scatter_extremum_jvp(prim):
  """Tangents flow from whichever of operand and updates produced the result; ties share
  it evenly."""
  def jvp(primals, tangents, *, dimension_numbers, **params):
    from minijax.lax.elementwise import add, div, eq
    from minijax.lax.misc import convert_element_type, select_n
    operand, indices, updates = primals
    out = prim.bind(*primals, dimension_numbers=dimension_numbers, **params)
    t_op, _, t_up = map(ad.instantiate_zeros, tangents)
    dn = dimension_numbers
    u_aval = get_aval(updates)
    won_op = eq(operand, out)
    won_up = eq(updates, _gather_updates_like(out, indices, u_aval, dn))
    zeros_out, zeros_up = full(out.shape, 0, out.dtype), full(u_aval.shape, 0, out.dtype)
    kw = dict(dimension_numbers=dn, indices_are_sorted=False, unique_indices=False)
    num = add(select_n(won_op, zeros_out, t_op),
              scatter_add_p.bind(zeros_out, indices, select_n(won_up, zeros_up, t_up), **kw))
    count = add(convert_element_type(won_op, out.dtype),
                scatter_add_p.bind(zeros_out, indices, convert_element_type(won_up, out.dtype),
                                   **kw))
    return out, div(num, count)
  return jvp


ad.primitive_jvps[scatter_min_p] = _scatter_extremum_jvp(scatter_min_p)
ad.primitive_jvps[scatter_max_p] = _scatter_extremum_jvp(scatter_max_p)


def _scatter_bind(prim, operand, indices, updates, dimension_numbers, indices_are_sorted,
                  unique_indices, mode):
  operand, indices, updates = map(convert_to_array, (operand, indices, updates))
  dn = ScatterDimensionNumbers(*(tuple(int(d) for d in f) for f in dimension_numbers))
  mode = GatherScatterMode.from_any(mode)
  if mode is GatherScatterMode.ONE_HOT:
    raise NotImplementedError(f"lax.{prim.name.replace('-', '_')} does not implement "
                              "mode=ONE_HOT; use 'clip', 'drop' or 'promise_in_bounds'")
  if mode is GatherScatterMode.CLIP and indices.ndim and dtypes.is_integer(indices.dtype):
    sizes = _scatter_window(operand.shape, updates.shape, dn)
    indices = _clamp_indices(indices, operand.shape, dn.scatter_dims_to_operand_dims,
                             [sizes[d] for d in dn.scatter_dims_to_operand_dims])
  return prim.bind(operand, indices, updates, dimension_numbers=dn,
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices))


def _scatter_fn(name: str, prim, doc: str):
  def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
         unique_indices=False, mode=None):
    return _scatter_bind(prim, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = doc + (" `mode` (a `GatherScatterMode` or its name) treats out-of-bounds "
                      "windows: dropped by default, or their indices clamped ('clip').")
  return fn


scatter = _scatter_fn("scatter", scatter_p, "Writes `updates` into `operand` at `indices`.")
scatter_add = _scatter_fn("scatter_add", scatter_add_p, "Adds `updates` at `indices`.")
scatter_mul = _scatter_fn("scatter_mul", scatter_mul_p, "Multiplies by `updates` at `indices`.")
scatter_min = _scatter_fn("scatter_min", scatter_min_p, "Takes the minimum at `indices`.")
scatter_max = _scatter_fn("scatter_max", scatter_max_p, "Takes the maximum at `indices`.")


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  """Subtracts `updates` at `indices` (a scatter_add of their negation)."""
  from minijax.lax.elementwise import neg
  return scatter_add(operand, scatter_indices, neg(convert_to_array(updates)),
                     dimension_numbers, indices_are_sorted=indices_are_sorted,
                     unique_indices=unique_indices, mode=mode)


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
  """`func` (elementwise) applied to the elements of `operand` under the scatter's windows
  (`update_shape` is the shape the updates would have), as often as windows cover them, as
  XLA's scatter with `func` as its combiner does."""
  from minijax.lax.control_flow import while_loop
  from minijax.lax.misc import select
  from minijax.lax.reductions import reduce_max
  operand = convert_to_array(operand)
  counts = scatter_add(full(operand.shape, 0, np.int32), scatter_indices,
                       full(tuple(update_shape), 1, np.int32), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)
  most = reduce_max(counts, tuple(range(counts.ndim)))

  def apply_once(state):
    i, x = state
    return i + 1, select(counts > i, convert_to_array(func(x)).astype(x.dtype), x)
  return while_loop(lambda state: state[0] < most, apply_once, (np.int32(0), operand))[1]
