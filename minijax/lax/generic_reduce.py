"""`lax.reduce`: XLA's Reduce of one or more operands with a user's computation.

A single operand reduced by `lax.add`, `mul`, `max`, `min`, `bitwise_and`, `bitwise_or` or
`bitwise_xor` from that monoid's identity is the matching `reduce_*` primitive (which
differentiates and batches as such).  Anything else is `reduce_p`, whose `jaxpr` param is
the computation traced on scalars (`(lefts..., rights...) -> outs`), lowered into the
region of an `mhlo.reduce`.  Like JAX, it has a forward-mode derivative (the computation's
JVP reduced over (primal, tangent) pairs) and no reverse mode.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.tree_util import internal as tree_util
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer
from minijax.interpreters import ad, batching
from minijax.lax import elementwise, reductions, utils
from minijax.lax.structural import convert_to_array, full
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet

__all__ = ["reduce", "reduce_p"]

reduce_p = Primitive("reduce")
reduce_p.multiple_results = True


def _abstract_eval(*avals, jaxpr, dimensions):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
    raise TypeError("reduce got inconsistent dtypes for operands and init_values: got "
                    f"{[str(o.dtype) for o in operands]} and {[str(i.dtype) for i in inits]}")
  if any(i.shape for i in inits):
    raise TypeError(f"reduce expects scalar init_values, got shapes {[i.shape for i in inits]}")
  if any(o.shape != operands[0].shape for o in operands):
    raise TypeError(f"reduce operands must have one shape, got {[o.shape for o in operands]}")
  shape = reductions._reduced_shape("reduce", operands[0], dimensions)
  return [ShapedArray(shape, o.dtype, o.weak_type) for o in operands]


def _lowering(ctx, *args, jaxpr, dimensions):
  n = len(args) // 2
  if jaxpr.effects:
    raise NotImplementedError(f"reduce cannot lower a computation with effects "
                              f"{set(jaxpr.effects)}")
  scalar = [mlir.aval_to_ir_type(ShapedArray((), a.dtype)) for a in ctx.avals_in[:n]]
  op = mhlo.ReduceOp([mlir.aval_to_ir_type(a) for a in ctx.avals_out], list(args[:n]),
                     list(args[n:]), list(dimensions))
  block = op.regions[0].blocks.append(*scalar, *scalar)
  with ir.InsertionPoint(block):
    outs, _ = mlir.lower_closed_jaxpr(ctx.module_context, jaxpr, TokenSet(), *block.arguments)
    mhlo.ReturnOp(list(outs))
  return list(op.results)


def _tree_reduce(jaxpr, operands, inits, dimensions):
  """The reduction as a tree of the computation applied elementwise to halves (the reduced
  axes flattened in front; an odd half padded with the init values), as JAX differentiates
  it (the init values enter only through that padding)."""
  from minijax.core.jaxpr import eval_jaxpr
  from minijax.lax.slicing import slice_in_dim
  from minijax.lax.structural import pad, reshape, transpose
  shape = get_aval(operands[0]).shape
  kept = [d for d in range(len(shape)) if d not in dimensions]
  size = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
  rest = tuple(shape[d] for d in kept)
  xs = [reshape(transpose(x, (*dimensions, *kept)), (size, *rest)) for x in operands]
  apply = lambda *args: eval_jaxpr(jaxpr.jaxpr, list(jaxpr.consts), *args)
  while get_aval(xs[0]).shape[0] > 1:
    n = get_aval(xs[0]).shape[0]
    half = (n + 1) // 2
    lefts = [slice_in_dim(x, 0, half) for x in xs]
    rights = [slice_in_dim(x, half, n) for x in xs]
    if n % 2:
      config = [(0, 1, 0)] + [(0, 0, 0)] * len(rest)
      rights = [pad(x, i, config) for x, i in zip(rights, inits)]
    xs = apply(*lefts, *rights)
  if size == 0:
    return [full(rest, i, get_aval(x).dtype) for i, x in zip(inits, operands)]
  return [reshape(x, rest) for x in xs]


def _jvp(primals, tangents, *, jaxpr, dimensions):
  # as JAX: the JVP of the tree of elementwise applications (linear in the tangents, so
  # reverse mode follows)
  n = len(primals) // 2
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                              "initial values to reduction not implemented")
  op_tangents = [ad.instantiate_zeros(t) for t in tangents[:n]]
  outs, out_tangents = ad.jvp_flat(
      lambda *xs: _tree_reduce(jaxpr, xs, primals[n:], dimensions), list(primals[:n]),
      op_tangents)
  return outs, [ad.instantiate_zeros(t) for t in out_tangents]


def _batch(args, dims, *, jaxpr, dimensions):
  n = len(args) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("batching lax.reduce over its init_values is not implemented")
  size = next(x.shape[d] for x, d in zip(args[:n], dims[:n]) if d is not None)
  operands = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
  outs = reduce_p.bind(*operands, *args[n:], jaxpr=jaxpr,
                       dimensions=tuple(d + 1 for d in dimensions))
  return outs, [0] * n


reduce_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(reduce_p, _lowering)
ad.primitive_jvps[reduce_p] = _jvp
batching.primitive_batchers[reduce_p] = _batch


def _bind(flat_computation: Callable, operands, inits, dimensions) -> list:
  from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic
  inits = [convert_to_array(i) for i in inits]
  scalar_avals = [get_aval(i).strip_weak_type() for i in inits]
  jaxpr, consts = trace_to_jaxpr_dynamic(lambda *xs: list(flat_computation(*xs)),
                                         [*scalar_avals, *scalar_avals])
  if any(isinstance(c, Tracer) for c in consts):
    raise TypeError("lax.reduce's computation closes over a traced value; it must depend "
                    "only on its two arguments and constants")
  outs = [v.aval for v in jaxpr.outvars]
  if [(a.shape, a.dtype) for a in outs] != [(a.shape, a.dtype) for a in scalar_avals]:
    raise TypeError("lax.reduce's computation must return scalars of the operands' dtypes "
                    f"{[a.str_short() for a in scalar_avals]}, got "
                    f"{[a.str_short() for a in outs]}")
  return reduce_p.bind(*operands, *inits, jaxpr=ClosedJaxpr(jaxpr, consts),
                       dimensions=dimensions)


_MONOIDS = {  # computation -> (reduction, kind of its identity)
    elementwise.add: (reductions.reduce_sum, "sum"),
    elementwise.mul: (reductions.reduce_prod, "prod"),
    elementwise.max: (reductions.reduce_max, "max"),
    elementwise.min: (reductions.reduce_min, "min"),
    elementwise.bitwise_and: (reductions.reduce_and, "and"),
    elementwise.bitwise_or: (reductions.reduce_or, "or"),
    elementwise.bitwise_xor: (reductions.reduce_xor, "xor"),
}


def _monoid_reduction(computation, init, dtype):
  found = _MONOIDS.get(computation)
  if found is None or isinstance(init, Tracer):
    return None
  reduction, kind = found
  value = np.asarray(init)
  identity = (np.array(-1).astype(dtype) if kind == "and" and dtype != np.bool_
              else reductions._identity(kind, dtype))
  return reduction if value.shape == () and value == identity else None


def reduce(operands, init_values, computation: Callable, dimensions, out_sharding=None):
  """Reduces `operands` (an array or a pytree of arrays of one shape) over `dimensions`
  with `computation(left, right)`, starting from `init_values` (matching scalars)."""
  if out_sharding is not None:
    raise NotImplementedError("lax.reduce: out_sharding is not supported by minijax")
  flat_operands, tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{tree} vs. {init_tree}")
  if not flat_operands:
    raise ValueError("lax.reduce needs at least one operand")
  flat_operands = [convert_to_array(x) for x in flat_operands]
  ndim = get_aval(flat_operands[0]).ndim
  dims = tuple(utils.canonicalize_axis(d, ndim, "dimension") for d in dimensions)
  dtypes_ = [get_aval(x).dtype for x in flat_operands]
  if len(flat_operands) == 1:
    reduction = _monoid_reduction(computation, flat_inits[0], dtypes_[0])
    if reduction is not None:
      return tree_util.tree_unflatten(tree, [reduction(flat_operands[0], dims)])
  n = len(flat_operands)
  out_trees = []

  def flat_computation(*scalars):
    left = tree_util.tree_unflatten(tree, list(scalars[:n]))
    right = tree_util.tree_unflatten(tree, list(scalars[n:]))
    leaves, out_tree = tree_util.tree_flatten(computation(left, right))
    out_trees.append(out_tree)
    return leaves

  inits = [full((), i, d) if isinstance(i, (bool, int, float)) else i
           for i, d in zip(flat_inits, dtypes_)]
  outs = _bind(flat_computation, flat_operands, inits, dims)
  if out_trees[0] != tree:
    raise ValueError("lax.reduce's computation must return the operands' tree structure "
                     f"{tree}, got {out_trees[0]}")
  return tree_util.tree_unflatten(tree, outs)
