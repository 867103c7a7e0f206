"""Collectives over named axes: psum, pmax, pmin, pmean, all_gather, psum_scatter,
ppermute (and pshuffle), all_to_all (and pswapaxes) and axis_index.

A collective names the axes it works over (`psum(x, 'i')`, `psum(x, ('i', 'j'))`).  Its
abstract evaluation looks each name up in the axis environment (`core.axes`): an unbound
name is JAX's `NameError`, and sizes come from there (`all_gather` adds an axis of the
group's size).  Names are bound by `pmap`/`shard_map`, whose bodies run on every device of
a mesh, and by `vmap(..., axis_name=...)`.

Over device axes a collective lowers to the MHLO op of the same meaning inside the manual
region of a `shard_map` (`lowering/spmd.py` computes its replica groups of device
positions).  Over a vmapped axis it never reaches the lowering: its batching rule, in
`batching.collective_batchers`, rewrites it into operations on the batch dimension (a
`psum` over the batch is a sum over the batch dimension, an `all_gather` over it moves the
batch dimension into place, `axis_index` is an iota).  Over other names those rules batch
it like any primitive.

Autodiff follows JAX: the linear collectives (psum, all_gather, psum_scatter, ppermute,
all_to_all) are their own jvp, and transpose to their adjoint: psum to psum (so that
`pmap(grad(lambda v: psum(v**2, 'i')))` gives `2 * v * axis_size`), all_gather to
psum_scatter and back, ppermute to the inverse permutation, all_to_all to the swapped
one.  pmax and pmin send the tangent to the devices that attain the extremum, shared
evenly among ties; across devices they reject complex operands (XLA has no complex max
reduction), over a vmapped axis they order them lexicographically, as JAX does.
`axis_index_groups` (lists of axis indices, each index in one group) splits a collective
over the members of each group: the replica groups of the lowering list those members, in
the group's order (so a member's position in its group is its index for all_gather,
psum_scatter and all_to_all, whose groups must have one size; psum, pmax and pmin take
groups of unequal sizes, padded with -1 as XLA reads them).  The transposes carry the
groups; over a vmapped axis they are not supported (NotImplementedError, as in JAX).
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.tree_util import internal as tree_util
from minijax.core import axes as axes_lib
from minijax.core import dtypes
from minijax.core import pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.elementwise import add, div, eq, mul
from minijax.lax.misc import convert_element_type, iota
from minijax.lax.reductions import reduce_max, reduce_min, reduce_or, reduce_sum
from minijax.lax.slicing import index_in_dim
from minijax.lax.structural import (broadcast_in_dim, concatenate, convert_to_array, full,
                                    reshape, transpose)
from minijax.lowering import mlir, spmd

__all__ = ["psum", "pmax", "pmin", "pmean", "pbroadcast", "pcast", "all_gather", "psum_scatter", "ppermute",
           "pshuffle", "pswapaxes", "all_to_all", "axis_index", "axis_size", "psum_p", "pmax_p",
           "pmin_p", "all_gather_p", "reduce_scatter_p", "ppermute_p", "all_to_all_p", "axis_index_p"]


def _names(axis_name) -> tuple:
  names = axes_lib.as_axis_names(axis_name)
  if not names:
    raise ValueError("a collective needs at least one axis name")
  return names


def _index_groups(axis_index_groups, size: int, what: str) -> tuple | None:
  """`axis_index_groups` as a tuple of tuples of ints, checked to cover every index of an
  axis of `size` once."""
  if axis_index_groups is None:
    return None
  groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
  if sorted(i for g in groups for i in g) != list(range(size)):
    raise ValueError(f"{what}: axis_index_groups must cover all indices of the axis (of size "
                     f"{size}) exactly once, got {[list(g) for g in groups]}")
  return groups


def grouped_replica_groups(rows: list[list[int]], groups) -> list[list[int]]:
  """Each row of device positions (in axis-index order) split by `groups` of indices, the
  groups padded with -1 to one length."""
  if groups is None:
    return rows
  width = max(len(g) for g in groups)
  return [[row[i] for i in g] + [-1] * (width - len(g)) for row in rows for g in groups]


def _even_groups(names, axis_index_groups, what: str) -> tuple[tuple | None, int]:
  """`axis_index_groups` checked (see `_index_groups`) to have one size, and the number of
  members a collective over `names` exchanges with: that size, else the axes' size."""
  groups = _index_groups(axis_index_groups, _group_size(names), what)
  if groups is None:
    return None, _group_size(names)
  if len({len(g) for g in groups}) > 1:
    raise ValueError(f"{what}: the groups of axis_index_groups must have one size, got "
                     f"{[list(g) for g in groups]}")
  return groups, len(groups[0])


def _check_traced_size(what: str, axis_name, groups, axis_size: int) -> None:
  want = _group_size(axis_name) if groups is None else len(groups[0])
  if want != axis_size:
    raise ValueError(f"{what} over {axis_name} was traced for axis size {axis_size}, "
                     f"but the {'groups' if groups else 'axes'} have size {want}")


def _no_groups_over_frame(what: str, axis_index_groups) -> None:
  if axis_index_groups is not None:
    raise NotImplementedError(f"{what} with axis_index_groups over a vmapped axis")


def _group_size(names) -> int:
  return axes_lib.axes_size(names)


def axis_size(axis_name) -> int:
  """The size of the named axis (or the product for a tuple of names)."""
  return _group_size(_names(axis_name))


def _moveaxis(x, src: int, dst: int):
  return batching.moveaxis(x, src, dst)


def _front(x, d, size: int):
  """`x` with its batch dim first (broadcast when `d` is None)."""
  return batching.bdim_at_front(x, d, size)


def _scalar(value, dtype):
  return full((), value, dtype)


def _map_outside_frame(primitive, x, d, params: dict, *dimension_params: str):
  """A collective over named axes other than the vmapped one runs on the whole batch: with
  the batch dimension first, and its `dimension_params` shifted past it."""
  if d is None:
    return primitive.bind(x, **params), None
  shifted = {k: params[k] + 1 for k in dimension_params}
  return primitive.bind(_moveaxis(x, d, 0), **dict(params, **shifted)), 0


def _only_the_frame(what: str, axis_name: tuple, frame_name) -> None:
  if axis_name != (frame_name,):
    raise NotImplementedError(f"{what} over a vmapped axis together with other axes")


def _region_op(kind: str, dtype):
  if dtype == dtypes.bool_:
    return {"sum": mhlo.OrOp, "max": mhlo.OrOp, "min": mhlo.AndOp}[kind]
  return {"sum": mhlo.AddOp, "max": mhlo.MaxOp, "min": mhlo.MinOp}[kind]


def _fill_region(op, kind: str, dtype) -> None:
  scalar = mlir.aval_to_ir_type(ShapedArray((), dtype))
  block = op.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    mhlo.ReturnOp([_region_op(kind, dtype)(*block.arguments).result])


# ----------------------------------------------------------------------------- psum, pmax, pmin

def _allreduce_primitive(kind: str) -> Primitive:
  prim = Primitive(f"p{kind}")
  prim.multiple_results = True

  def abstract_eval(*avals, axes, axis_index_groups):
    for name in axes:
      axes_lib.frame(name)
    _check_not_complex(kind, avals)
    return list(avals)

  def lowering(ctx, *args, axes, axis_index_groups):
    mctx = ctx.module_context
    groups = spmd.groups_attr(grouped_replica_groups(spmd.replica_groups(mctx, axes),
                                                     axis_index_groups))
    outs = []
    for x, aval in zip(args, ctx.avals_in):
      op = mhlo.AllReduceOp([mctx.ir_type(aval)], [x], groups,
                            channel_handle=spmd.channel_handle(mctx),
                            use_global_device_ids=True)
      _fill_region(op, kind, aval.dtype)
      outs.append(op.results[0])
    return outs

  prim.def_abstract_eval(abstract_eval)
  mlir.register_lowering(prim, lowering)
  return prim


def _check_not_complex(kind: str, avals) -> None:
  if kind == "sum":
    return
  for a in avals:
    if np.issubdtype(a.dtype, np.complexfloating):
      raise TypeError(f"p{kind} does not accept dtype {a.dtype} ({a.str_short()}): XLA has no "
                      "maximum or minimum reduction of complex numbers")


psum_p = _allreduce_primitive("sum")
pmax_p = _allreduce_primitive("max")
pmin_p = _allreduce_primitive("min")


def _allreduce(prim, x, axis_name, axis_index_groups, what):
  names = _names(axis_name)
  groups = _index_groups(axis_index_groups, _group_size(names), what)
  leaves, tree = tree_util.tree_flatten(x)
  if prim is psum_p and leaves and not any(isinstance(l, Tracer) or hasattr(l, "aval")
                                           for l in leaves):
    # A Python or numpy constant is the same on every device: JAX multiplies it by the
    # group size at once (`psum(1, 'i')` is the axis size; with groups, the first's).
    size = _group_size(names) if groups is None else len(groups[0])
    return tree.unflatten([leaf * size for leaf in leaves])
  for name in names:
    axes_lib.frame(name)
  leaves = [convert_to_array(leaf) for leaf in leaves]
  if prim is psum_p:  # as in JAX, booleans are counted: summed as int32
    leaves = [convert_element_type(leaf, np.int32) if get_aval(leaf).dtype == dtypes.bool_
              else leaf for leaf in leaves]
  return tree.unflatten(prim.bind(*leaves, axes=names, axis_index_groups=groups))


def psum(x, axis_name, *, axis_index_groups=None):
  """The sum of `x` (a pytree) over the named axis (or axes), on every member (booleans
  are counted, as int32)."""
  return _allreduce(psum_p, x, axis_name, axis_index_groups, "psum")


def pbroadcast(x, axis_name, source):
  """`x` of the member at index `source` along the named axis, on every member."""
  from minijax.lax.misc import select
  index = axis_index(axis_name)
  mine = eq(index, full((), source, get_aval(index).dtype))

  def one(v):
    v = convert_to_array(v)
    zero = full(get_aval(v).shape, 0, get_aval(v).dtype)
    return psum(select(broadcast_in_dim(mine, get_aval(v).shape, ()), v, zero), axis_name)

  return tree_util.tree_map(one, x)


def pcast(x, axis_name, *, to: str):
  """`x` retyped as varying or invariant along the named axis.  minijax does not track
  which values vary across an axis, so this is the identity; `to` is checked."""
  if to not in ("varying", "invariant", "unreduced", "reduced"):
    raise ValueError(f"pcast: to must be 'varying', 'invariant', 'unreduced' or 'reduced', "
                     f"got {to!r}")
  return x


def pmax(x, axis_name, *, axis_index_groups=None):
  """The maximum of `x` over the named axis (or axes)."""
  return _allreduce(pmax_p, x, axis_name, axis_index_groups, "pmax")


def pmin(x, axis_name, *, axis_index_groups=None):
  """The minimum of `x` over the named axis (or axes)."""
  return _allreduce(pmin_p, x, axis_name, axis_index_groups, "pmin")


def pmean(x, axis_name, *, axis_index_groups=None):
  """The mean of `x` over the named axis (or axes); integers give floats, as in JAX."""
  names = _names(axis_name)
  groups = _index_groups(axis_index_groups, _group_size(names), "pmean")
  if groups is not None and len({len(g) for g in groups}) > 1:
    raise ValueError("pmean: the groups of axis_index_groups must have one size")
  size = len(groups[0]) if groups is not None else _group_size(names)
  leaves, tree = tree_util.tree_flatten(psum(x, names, axis_index_groups=groups))
  out = []
  for leaf in leaves:
    leaf = convert_to_array(leaf)
    dtype = get_aval(leaf).dtype
    if not dtypes.is_inexact(dtype):
      leaf = convert_element_type(leaf, dtypes.canonicalize_dtype(np.float64))
      dtype = get_aval(leaf).dtype
    out.append(div(leaf, _scalar(size, dtype)))
  return tree.unflatten(out)


def _instantiate(tangents, primals):
  return [ad.instantiate_zeros(t) if type(t) is not ad.Zero
          else ad.zeros_like_aval(get_aval(p).tangent_aval()) for t, p in zip(tangents, primals)]


def _psum_jvp(primals, tangents, *, axes, axis_index_groups):
  outs = psum_p.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
  nonzero = [type(t) is not ad.Zero for t in tangents]
  if not any(nonzero):
    return outs, [ad.Zero.from_primal_value(o) for o in outs]
  tangent_outs = psum_p.bind(*_instantiate(tangents, primals), axes=axes,
                             axis_index_groups=axis_index_groups)
  return outs, tangent_outs


def _psum_transpose(cts, *args, axes, axis_index_groups):
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  outs = psum_p.bind(*cts, axes=axes, axis_index_groups=axis_index_groups)
  return [o if ad.is_undefined_primal(a) else None for a, o in zip(args, outs)]


def _pminmax_jvp(prim):
  def rule(primals, tangents, *, axes, axis_index_groups):
    outs = prim.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
    tangent_outs = []
    for x, t, y in zip(primals, tangents, outs):
      if type(t) is ad.Zero:
        tangent_outs.append(ad.Zero.from_primal_value(y))
        continue
      dtype = get_aval(t).dtype
      hit = convert_element_type(eq(x, y), dtype)
      # (two binds: the count of ties must not depend on the tangent)
      den, = psum_p.bind(hit, axes=axes, axis_index_groups=axis_index_groups)
      num, = psum_p.bind(mul(t, hit), axes=axes, axis_index_groups=axis_index_groups)
      tangent_outs.append(div(num, den))
    return outs, tangent_outs
  return rule


def _allreduce_batcher(prim, kind: str):
  local = {"sum": reduce_sum, "max": reduce_max, "min": reduce_min}[kind]

  def rule(axis_name, size, vals, dims, *, axes, axis_index_groups):
    # (over a vmapped axis complex values reduce lexicographically, as numpy orders them
    # and JAX computes them; across devices the primitive refuses them)
    if axis_name not in axes:
      return prim.bind(*vals, axes=axes, axis_index_groups=axis_index_groups), dims
    _no_groups_over_frame(f"p{kind}", axis_index_groups)
    outs = []
    for x, d in zip(vals, dims):
      if d is not None:
        bool_sum = kind == "sum" and get_aval(x).dtype == dtypes.bool_
        outs.append((reduce_or if bool_sum else local)(x, (d,)))
      elif kind == "sum" and get_aval(x).dtype != dtypes.bool_:
        outs.append(mul(x, _scalar(size, get_aval(x).dtype)))
      else:
        outs.append(x)
    rest = tuple(a for a in axes if a != axis_name)
    if rest:
      outs = prim.bind(*outs, axes=rest, axis_index_groups=axis_index_groups)
    return outs, [None] * len(outs)
  return rule


ad.primitive_jvps[psum_p] = _psum_jvp
ad.primitive_transposes[psum_p] = _psum_transpose
ad.primitive_jvps[pmax_p] = _pminmax_jvp(pmax_p)
ad.primitive_jvps[pmin_p] = _pminmax_jvp(pmin_p)
batching.collective_batchers[psum_p] = _allreduce_batcher(psum_p, "sum")
batching.collective_batchers[pmax_p] = _allreduce_batcher(pmax_p, "max")
batching.collective_batchers[pmin_p] = _allreduce_batcher(pmin_p, "min")


# ----------------------------------------------------------------------------- all_gather

all_gather_p = Primitive("all_gather")


def _gathered_shape(shape, dim, size, tiled):
  if tiled:
    return shape[:dim] + (shape[dim] * size,) + shape[dim + 1:]
  return shape[:dim] + (size,) + shape[dim:]


def _all_gather_abstract_eval(x, *, axis_name, all_gather_dimension, axis_index_groups,
                              axis_size, tiled, to):
  _check_traced_size("all_gather", axis_name, axis_index_groups, axis_size)
  return x.update(shape=_gathered_shape(x.shape, all_gather_dimension, axis_size, tiled))


def _all_gather_lowering(ctx, x, *, axis_name, all_gather_dimension, axis_index_groups,
                         axis_size, tiled, to):
  mctx = ctx.module_context
  aval = ctx.avals_in[0]
  if not tiled:
    shape = aval.shape[:all_gather_dimension] + (1,) + aval.shape[all_gather_dimension:]
    x = mhlo.ReshapeOp(mctx.ir_type(aval.update(shape=shape)), x).result
  groups = spmd.groups_attr(grouped_replica_groups(spmd.replica_groups(mctx, axis_name),
                                                   axis_index_groups))
  return mhlo.AllGatherOp([mctx.ir_type(ctx.avals_out[0])], [x], all_gather_dimension, groups,
                          channel_handle=spmd.channel_handle(mctx),
                          use_global_device_ids=True).results[0]


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False,
               to: str = "varying"):
  """Gathers `x` from every member of the named axis: stacked along a new axis `axis`, or
  concatenated along `axis` when `tiled`.  The result is the same on every member, but
  shard_map's replication check counts it as varying along the axis, as JAX's does, unless
  `to="invarying"`."""
  if to not in ("varying", "reduced", "invarying"):
    raise ValueError("Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` "
                     "values are: {'varying', 'reduced', 'invarying'}")
  if to == "reduced":
    raise NotImplementedError("all_gather(to='reduced'): minijax has no reduced or unreduced "
                              "array types")
  if to == "invarying" and axis_index_groups is not None:
    raise NotImplementedError("all_gather(to='invarying') with axis_index_groups")
  names = _names(axis_name)
  groups, size = _even_groups(names, axis_index_groups, "all_gather")

  def one(leaf):
    leaf = convert_to_array(leaf)
    ndim = get_aval(leaf).ndim
    dim = utils.canonicalize_axis(axis, ndim + (0 if tiled else 1), "all_gather axis")
    return all_gather_p.bind(leaf, axis_name=names, all_gather_dimension=dim,
                             axis_index_groups=groups, axis_size=size, tiled=tiled, to=to)
  return tree_util.tree_map(one, x)


def _all_gather_collective_batcher(frame_name, frame_size, vals, dims, *, axis_name,
                                   all_gather_dimension, axis_index_groups, axis_size, tiled,
                                   to):
  (x,), (d,) = vals, dims
  params = dict(axis_name=axis_name, all_gather_dimension=all_gather_dimension,
                axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled, to=to)
  if frame_name not in axis_name:
    return _map_outside_frame(all_gather_p, x, d, params, "all_gather_dimension")
  _only_the_frame("all_gather", axis_name, frame_name)
  _no_groups_over_frame("all_gather", axis_index_groups)
  x = _front(x, d, frame_size)
  out = _moveaxis(x, 0, all_gather_dimension)
  if tiled:
    shape = get_aval(out).shape
    dim = all_gather_dimension
    out = reshape(out, shape[:dim] + (shape[dim] * shape[dim + 1],) + shape[dim + 2:])
  return out, None


def _all_gather_transpose(ct, *, axis_name, all_gather_dimension, axis_index_groups,
                          axis_size, tiled, to):
  return [reduce_scatter_p.bind(ct, axis_name=axis_name,
                                scatter_dimension=all_gather_dimension,
                                axis_index_groups=axis_index_groups, axis_size=axis_size,
                                tiled=tiled)]


def _pp_all_gather(params, names, indent):
  """JAX's params: `to` shows only when it is not the default (JAX's invariant gather is a
  primitive of its own)."""
  return [pretty.pp_param(k, v, names, indent) for k, v in sorted(params.items())
          if (k, v) != ("to", "varying")]


all_gather_p.def_abstract_eval(_all_gather_abstract_eval)
pretty.pp_rules[all_gather_p] = _pp_all_gather
mlir.register_lowering(all_gather_p, _all_gather_lowering)
ad.deflinear(all_gather_p, _all_gather_transpose)
batching.collective_batchers[all_gather_p] = _all_gather_collective_batcher


# ----------------------------------------------------------------------------- psum_scatter

reduce_scatter_p = Primitive("reduce_scatter")


def _scattered_shape(shape, dim, size, tiled, name="psum_scatter"):
  if tiled:
    if shape[dim] % size:
      raise ValueError(f"{name}: the size of dimension {dim} of an operand of shape {shape} "
                       f"must be divisible by the axis size {size}")
    return shape[:dim] + (shape[dim] // size,) + shape[dim + 1:]
  if shape[dim] != size:
    raise ValueError(f"{name}: dimension {dim} of an operand of shape {shape} must equal "
                     f"the axis size {size} (or pass tiled=True)")
  return shape[:dim] + shape[dim + 1:]


def _reduce_scatter_abstract_eval(x, *, axis_name, scatter_dimension, axis_index_groups,
                                  axis_size, tiled):
  _check_traced_size("psum_scatter", axis_name, axis_index_groups, axis_size)
  return x.update(shape=_scattered_shape(x.shape, scatter_dimension, axis_size, tiled))


def _reduce_scatter_lowering(ctx, x, *, axis_name, scatter_dimension, axis_index_groups,
                             axis_size, tiled):
  mctx = ctx.module_context
  aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
  shape = list(aval.shape)
  shape[scatter_dimension] //= axis_size
  scattered = aval.update(shape=tuple(shape))
  groups = spmd.groups_attr(grouped_replica_groups(spmd.replica_groups(mctx, axis_name),
                                                   axis_index_groups))
  op = mhlo.ReduceScatterOp(mctx.ir_type(scattered), x, scatter_dimension, groups,
                            channel_handle=spmd.channel_handle(mctx),
                            use_global_device_ids=True)
  _fill_region(op, "sum", aval.dtype)
  out = op.result
  if not tiled:
    out = mhlo.ReshapeOp(mctx.ir_type(out_aval), out).result
  return out


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """Sums `x` over the named axis and leaves member i with block i of dimension
  `scatter_dimension` (whose size must be the axis size, or divisible by it when
  `tiled`)."""
  names = _names(axis_name)
  groups, size = _even_groups(names, axis_index_groups, "psum_scatter")

  def one(leaf):
    leaf = convert_to_array(leaf)
    dim = utils.canonicalize_axis(scatter_dimension, get_aval(leaf).ndim, "scatter_dimension")
    return reduce_scatter_p.bind(leaf, axis_name=names, scatter_dimension=dim,
                                 axis_index_groups=groups, axis_size=size, tiled=tiled)
  return tree_util.tree_map(one, x)


def _reduce_scatter_batcher(frame_name, frame_size, vals, dims, *, axis_name,
                            scatter_dimension, axis_index_groups, axis_size, tiled):
  (x,), (d,) = vals, dims
  params = dict(axis_name=axis_name, scatter_dimension=scatter_dimension,
                axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  if frame_name not in axis_name:
    return _map_outside_frame(reduce_scatter_p, x, d, params, "scatter_dimension")
  _only_the_frame("psum_scatter", axis_name, frame_name)
  _no_groups_over_frame("psum_scatter", axis_index_groups)
  if d is None:
    total = x if get_aval(x).dtype == dtypes.bool_ else mul(x, _scalar(frame_size, get_aval(x).dtype))
  else:
    total = reduce_sum(x, (d,))
  shape = get_aval(total).shape
  _scattered_shape(shape, scatter_dimension, frame_size, tiled)
  if tiled:
    dim = scatter_dimension
    total = reshape(total, shape[:dim] + (frame_size, shape[dim] // frame_size) + shape[dim + 1:])
  return total, scatter_dimension


def _reduce_scatter_transpose(ct, *, axis_name, scatter_dimension, axis_index_groups,
                              axis_size, tiled):
  return [all_gather_p.bind(ct, axis_name=axis_name, all_gather_dimension=scatter_dimension,
                            axis_index_groups=axis_index_groups, axis_size=axis_size,
                            tiled=tiled, to="varying")]


reduce_scatter_p.def_abstract_eval(_reduce_scatter_abstract_eval)
mlir.register_lowering(reduce_scatter_p, _reduce_scatter_lowering)
ad.deflinear(reduce_scatter_p, _reduce_scatter_transpose)
batching.collective_batchers[reduce_scatter_p] = _reduce_scatter_batcher


# ----------------------------------------------------------------------------- ppermute

ppermute_p = Primitive("ppermute")


def _ppermute_abstract_eval(x, *, axis_name, perm):
  size = _group_size(axis_name)
  sources = [s for s, _ in perm]
  targets = [t for _, t in perm]
  if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
  for s, t in perm:
    if not (0 <= s < size and 0 <= t < size):
      raise ValueError(f"ppermute permutation {perm} refers to members outside the axis "
                       f"{axis_name} of size {size}")
  return x


def _ppermute_lowering(ctx, x, *, axis_name, perm):
  mctx = ctx.module_context
  groups = spmd.replica_groups(mctx, axis_name)
  pairs = np.array([[g[s], g[t]] for g in groups for s, t in perm], np.int64).reshape(-1, 2)
  return mhlo.CollectivePermuteOp(x, ir.DenseElementsAttr.get(pairs),
                                  channel_handle=spmd.channel_handle(mctx)).result


def ppermute(x, axis_name, perm):
  """Sends member `src`'s `x` to member `dst` for each `(src, dst)` of `perm`; members that
  receive nothing get zeros."""
  names = _names(axis_name)
  perm = tuple((int(s), int(t)) for s, t in perm)
  return tree_util.tree_map(
      lambda leaf: ppermute_p.bind(convert_to_array(leaf), axis_name=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
  """Member i receives member `perm[i]`'s `x`."""
  perm = list(perm)
  if sorted(perm) != list(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm} (it must hold each of "
                     f"0..{len(perm) - 1} once)")
  return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swaps the named axis with dimension `axis` of `x` (whose size must be the axis
  size): `all_to_all(x, axis_name, axis, axis)`."""
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def _ppermute_batcher(frame_name, frame_size, vals, dims, *, axis_name, perm):
  (x,), (d,) = vals, dims
  if frame_name not in axis_name:
    return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
  _only_the_frame("ppermute", axis_name, frame_name)
  x = _front(x, d, frame_size)
  source_of = {t: s for s, t in perm}
  zeros = None
  rows = []
  for member in range(frame_size):
    if member in source_of:
      rows.append(index_in_dim(x, source_of[member], 0, keepdims=True))
    else:
      if zeros is None:
        aval = get_aval(x)
        zeros = full((1, *aval.shape[1:]), 0, aval.dtype)
      rows.append(zeros)
  return concatenate(rows, 0), 0


def _ppermute_transpose(ct, *, axis_name, perm):
  return [ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((t, s) for s, t in perm))]


ppermute_p.def_abstract_eval(_ppermute_abstract_eval)
mlir.register_lowering(ppermute_p, _ppermute_lowering)
ad.deflinear(ppermute_p, _ppermute_transpose)
batching.collective_batchers[ppermute_p] = _ppermute_batcher


# ----------------------------------------------------------------------------- all_to_all
# The primitive has the tiled meaning (dimension `split_axis` divided by the group size,
# `concat_axis` multiplied by it); `all_to_all(tiled=False)` adds and removes the axis.

all_to_all_p = Primitive("all_to_all")


def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                              axis_size):
  _check_traced_size("all_to_all", axis_name, axis_index_groups, axis_size)
  shape = list(x.shape)
  if shape[split_axis] % axis_size:
    raise ValueError(f"The size of all_to_all split_axis ({shape[split_axis]}) has to be "
                     f"divisible by the size of the named axis {axis_name} ({axis_size})")
  shape[split_axis] //= axis_size
  shape[concat_axis] *= axis_size
  return x.update(shape=tuple(shape))


def _all_to_all_lowering(ctx, x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                         axis_size):
  mctx = ctx.module_context
  if mctx.axis_context is not None and mctx.axis_context.partial:
    # (XLA's partitioner aborts the process on one, JAX's too)
    raise NotImplementedError(
        "all_to_all in a shard_map manual over only some mesh axes (axis_names=) is not "
        "supported: XLA's GSPMD partitioner cannot partition it; make the shard_map manual "
        "over every mesh axis")
  groups = grouped_replica_groups(spmd.replica_groups(mctx, axis_name), axis_index_groups)
  return mhlo.AllToAllOp([x], spmd.groups_attr(groups), split_dimension=split_axis,
                         concat_dimension=concat_axis, split_count=axis_size,
                         channel_handle=spmd.channel_handle(mctx),
                         results=[mctx.ir_type(ctx.avals_out[0])]).results[0]


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Splits dimension `split_axis` into one block per member, sends block j to member j,
  and stacks (or, `tiled`, concatenates) what it receives along `concat_axis`."""
  names = _names(axis_name)
  groups, size = _even_groups(names, axis_index_groups, "all_to_all")

  def one(leaf):
    leaf = convert_to_array(leaf)
    ndim = get_aval(leaf).ndim
    split = utils.canonicalize_axis(split_axis, ndim, "split_axis")
    concat = utils.canonicalize_axis(concat_axis, ndim, "concat_axis")
    if tiled:
      return all_to_all_p.bind(leaf, axis_name=names, split_axis=split, concat_axis=concat,
                               axis_index_groups=groups, axis_size=size)
    shape = get_aval(leaf).shape
    if shape[split] != size:
      raise ValueError(f"all_to_all requires the size of the mapped axis axis_name to equal "
                       f"x.shape[split_axis], but they are {size} and {shape[split]} "
                       "respectively.")
    if split < concat:
      concat += 1
      leaf = reshape(leaf, shape[:concat] + (1,) + shape[concat:])
    elif split > concat:
      leaf = reshape(leaf, shape[:concat] + (1,) + shape[concat:])
      split += 1
    out = all_to_all_p.bind(leaf, axis_name=names, split_axis=split, concat_axis=concat,
                            axis_index_groups=groups, axis_size=size)
    if split != concat:
      out_shape = get_aval(out).shape
      out = reshape(out, out_shape[:split] + out_shape[split + 1:])
    return out
  return tree_util.tree_map(one, x)


def _all_to_all_batcher(frame_name, frame_size, vals, dims, *, axis_name, split_axis,
                        concat_axis, axis_index_groups, axis_size):
  (x,), (d,) = vals, dims
  params = dict(axis_name=axis_name, split_axis=split_axis, concat_axis=concat_axis,
                axis_index_groups=axis_index_groups, axis_size=axis_size)
  if frame_name not in axis_name:
    return _map_outside_frame(all_to_all_p, x, d, params, "split_axis", "concat_axis")
  _only_the_frame("all_to_all", axis_name, frame_name)
  _no_groups_over_frame("all_to_all", axis_index_groups)
  x = _front(x, d, frame_size)
  shape = get_aval(x).shape  # (members, *block shape)
  if split_axis != concat_axis:
    # Member j's result: the j-th block (of dimension split) of every member's value,
    # concatenated in member order along dimension concat.
    y = _moveaxis(x, 0, concat_axis)
    ys = get_aval(y).shape
    y = reshape(y, ys[:concat_axis] + (ys[concat_axis] * ys[concat_axis + 1],)
                + ys[concat_axis + 2:])
    ys = get_aval(y).shape
    y = reshape(y, ys[:split_axis] + (frame_size, ys[split_axis] // frame_size)
                + ys[split_axis + 1:])
    return y, split_axis
  axis = split_axis + 1
  y = reshape(x, shape[:axis] + (frame_size, shape[axis] // frame_size) + shape[axis + 1:])
  perm = list(range(get_aval(y).ndim))
  perm[0], perm[axis] = perm[axis], perm[0]
  y = transpose(y, tuple(perm))
  ys = get_aval(y).shape
  y = reshape(y, ys[:axis] + (ys[axis] * ys[axis + 1],) + ys[axis + 2:])
  return y, 0


def _all_to_all_transpose(ct, *, axis_name, split_axis, concat_axis, axis_index_groups,
                          axis_size):
  return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                            concat_axis=split_axis, axis_index_groups=axis_index_groups,
                            axis_size=axis_size)]


all_to_all_p.def_abstract_eval(_all_to_all_abstract_eval)
mlir.register_lowering(all_to_all_p, _all_to_all_lowering)
ad.deflinear(all_to_all_p, _all_to_all_transpose)
batching.collective_batchers[all_to_all_p] = _all_to_all_batcher


# ----------------------------------------------------------------------------- axis_index

axis_index_p = Primitive("axis_index")


def _axis_index_abstract_eval(*, axis_name):
  for name in axis_name:
    axes_lib.frame(name)
  return ShapedArray((), dtypes.int32)


def _axis_index_lowering(ctx, *, axis_name):
  mctx = ctx.module_context
  table = spmd.axis_coordinates(mctx, axis_name)
  i32 = ir.IntegerType.get_signless(32)
  ops = [mhlo.PartitionIdOp()]
  ops.append(mhlo.ConvertOp(ir.RankedTensorType.get([], i32), ops[-1].result))
  ops.append(mhlo.ConstantOp(mlir.ir_attribute(table)))
  ops.append(mhlo.DynamicSliceOp(ops[-1].result, [ops[-2].result], [1]))
  ops.append(mhlo.ReshapeOp(ir.RankedTensorType.get([], i32), ops[-1].result))
  index = ops[-1].result
  # (the device's own: the partitioner needs to be told, in a body with no results to infer
  # it from; it takes a device's id only where every axis is manual, so in a region manual
  # over some the index is computed as in one and handed over, as JAX lowers it)
  for op in ops:
    op.attributes["mhlo.sharding"] = spmd.sharding_attr(spmd.MANUAL)
  if mctx.axis_context.partial:
    index = spmd.shard_to_full(index, index.type, spmd.manual_sharding(mctx, 0))
  return index


def axis_index(axis_name):
  """This member's index along the named axis (row-major over a tuple of names), int32."""
  return axis_index_p.bind(axis_name=_names(axis_name))


def _axis_index_batcher(frame_name, frame_size, vals, dims, *, axis_name):
  if frame_name not in axis_name:
    return axis_index_p.bind(axis_name=axis_name), None
  index = None
  for name in axis_name:
    if name == frame_name:
      part = iota(dtypes.int32, frame_size)
      size = frame_size
    else:
      part = axis_index_p.bind(axis_name=(name,))
      size = axes_lib.axis_size(name)
    index = part if index is None else add(mul(index, _scalar(size, dtypes.int32)), part)
  if get_aval(index).shape == ():
    index = broadcast_in_dim(index, (frame_size,), ())
  return index, 0


axis_index_p.def_abstract_eval(_axis_index_abstract_eval)
mlir.register_lowering(axis_index_p, _axis_index_lowering)
batching.collective_batchers[axis_index_p] = _axis_index_batcher
