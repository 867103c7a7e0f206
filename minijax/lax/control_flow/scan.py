"""`scan`: the primitive `scan_p`.

`scan_p.bind(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse, linear)`
runs `carry, y = jaxpr(*consts, *carry, *x)` for each leading slice `x` of `xs` (from the
end when `reverse`), and returns the final carry and the `y`s stacked along a new leading
axis of size `length`.  `jaxpr` is a const-free ClosedJaxpr; `linear` flags the operands
known to be linear (informational, as in JAX).  The equation's effects are the jaxpr's.

Lowering is an `mhlo.while` whose carried values are, in order: one token per ordered
effect, the iteration counter (int32), the constants, the carry, the `xs` and the stacked
`ys`.  The body reads slice `i` of each `x` with `dynamic_slice`, lowers the jaxpr inline
with the tokens, and writes the `y`s with `dynamic_update_slice`, so every effect of the
body happens once per iteration, in order.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax import tree_util
from minijax.core import pretty
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.lax.control_flow import common
from minijax.lowering import mlir

__all__ = ["scan", "scan_p"]

scan_p = Primitive("scan")
scan_p.multiple_results = True


# ----------------------------------------------------------------------------- API

def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int = 1):
  """`carry, y = f(carry, x)` over the leading axis of `xs`; returns `(carry, stacked ys)`.
  (`unroll` is accepted for compatibility and ignored.)"""
  if not callable(f):
    raise TypeError("lax.scan: f argument should be callable.")
  x_flat, x_tree = tree_util.tree_flatten(xs)
  x_avals = [common.abstractify(x) for x in x_flat]
  for a in x_avals:
    if a.ndim == 0:
      raise ValueError("scan got value with no leading axis to scan over: "
                       f"{a.str_short()}.")
  sizes = {a.shape[0] for a in x_avals}
  if length is not None:
    length = int(length)
    if sizes and sizes != {length}:
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading "
                       f"axis sizes {sorted(sizes)}.")
  elif len(sizes) > 1:
    shown = ", ".join(a.str_short() for a in x_avals)
    raise ValueError(f"scan got values with different leading axis sizes: {shown}.")
  elif not sizes:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  else:
    length = sizes.pop()

  init_flat, init_tree = tree_util.tree_flatten(init)
  carry_avals = [common.abstractify(x) for x in init_flat]
  slice_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in x_avals]
  in_tree = tree_util.treedef_tuple([init_tree, x_tree])
  for _ in range(2):
    jaxpr, consts, out_tree = common.trace_fun(f, in_tree, [*carry_avals, *slice_avals],
                                               "scan body")
    children = out_tree.children() if out_tree.num_nodes > 1 else []
    if len(children) != 2 or out_tree != tree_util.treedef_tuple(children):
      raise TypeError("scan body output must be a pair, got "
                      f"{tree_util.tree_unflatten(out_tree, [a.str_short() for a in jaxpr.out_avals])}.")
    carry_tree, y_tree = children
    num_carry = len(init_flat)
    weak_only = common.check_carry(
        "scan body function carry input and carry output", init_tree, carry_avals, carry_tree,
        jaxpr.out_avals[:carry_tree.num_leaves])
    if not weak_only:
      break
    carry_avals = common.strong(carry_avals)
  operands = [*consts, *init_flat, *x_flat]
  outs = scan_p.bind(*operands, jaxpr=jaxpr, num_consts=len(consts), num_carry=num_carry,
                     length=length, reverse=bool(reverse), linear=(False,) * len(operands))
  carry_out = tree_util.tree_unflatten(carry_tree, outs[:num_carry])
  ys = tree_util.tree_unflatten(y_tree, outs[num_carry:])
  return carry_out, ys


# ----------------------------------------------------------------------------- abstract eval

def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, linear):
  consts, carry, xs = _split(avals, num_consts, num_carry)
  if len(avals) != len(jaxpr.in_avals):
    raise TypeError(f"scan jaxpr takes {len(jaxpr.in_avals)} inputs, got {len(avals)}")
  for x, a in zip(xs, jaxpr.in_avals[num_consts + num_carry:]):
    if x.shape != (length, *a.shape) or x.dtype != a.dtype:
      raise TypeError(f"scan of length {length} got xs of type {x.str_short()} for a body "
                      f"input of type {a.str_short()}")
  carry_out = jaxpr.out_avals[:num_carry]
  if not all(map(common.same_type, carry_out, carry)):
    raise TypeError(f"scan body returns carry {[a.str_short() for a in carry_out]} for an "
                    f"input carry {[a.str_short() for a in carry]}")
  ys = [ShapedArray((length, *a.shape), a.dtype, a.weak_type)
        for a in jaxpr.out_avals[num_carry:]]
  return [*common.join_weak([carry, carry_out]), *ys], jaxpr.effects


def _split(values, num_consts, num_carry):
  values = list(values)
  return (values[:num_consts], values[num_consts:num_consts + num_carry],
          values[num_consts + num_carry:])


scan_p.def_effectful_abstract_eval(_scan_abstract_eval)


# ----------------------------------------------------------------------------- lowering

def _scan_lowering(ctx, *args, jaxpr, num_consts, num_carry, length, reverse, linear):
  mctx = ctx.module_context
  tokens = ctx.tokens_in
  ntok = len(tokens)
  consts, init, xs = _split(args, num_consts, num_carry)
  const_avals, carry_avals, x_avals = _split(ctx.avals_in, num_consts, num_carry)
  y_avals = ctx.avals_out[num_carry:]
  ys_init = [mlir.ir_constant(np.broadcast_to(np.zeros((), a.dtype), a.shape)) for a in y_avals]
  i32 = ShapedArray((), np.int32)
  avals = [i32, *const_avals, *carry_avals, *x_avals, *y_avals]
  types = [mlir.token_type()] * ntok + common.ir_types(avals)
  operands = [*tokens.tokens(), common.scalar_i32(0), *consts, *init, *xs, *ys_init]
  op = mhlo.WhileOp(types, operands)

  cond_block = common.add_block(op.cond, types)
  with ir.InsertionPoint(cond_block):
    i = cond_block.arguments[ntok]
    mhlo.ReturnOp([common.compare(i, common.scalar_i32(length), "LT")])

  body_block = common.add_block(op.body, types)
  with ir.InsertionPoint(body_block):
    values = list(body_block.arguments)
    toks = common.tokens_like(tokens, values[:ntok])
    i = values[ntok]
    b_consts, carry, rest = _split(values[ntok + 1:], num_consts, num_carry)
    b_xs, b_ys = rest[:len(xs)], rest[len(xs):]
    index = (mhlo.SubtractOp(common.scalar_i32(length - 1), i).result if reverse else i)
    x_slices = [_index_leading(x, a, index) for x, a in zip(b_xs, x_avals)]
    outs, toks = common.lower_jaxpr_inline(mctx, jaxpr, toks, *b_consts, *carry, *x_slices)
    new_carry, y_slices = outs[:num_carry], outs[num_carry:]
    new_ys = [_update_leading(ys, y, a, index) for ys, y, a in zip(b_ys, y_slices, y_avals)]
    i_next = mhlo.AddOp(i, common.scalar_i32(1)).result
    mhlo.ReturnOp([*toks.tokens(), i_next, *b_consts, *new_carry, *b_xs, *new_ys])

  results = list(op.results)
  if ntok:
    ctx.set_tokens_out(common.tokens_like(tokens, results[:ntok]))
  _, final_carry, rest = _split(results[ntok + 1:], num_consts, num_carry)
  return [*final_carry, *rest[len(xs):]]


def _index_leading(x, aval, index):
  zero = common.scalar_i32(0)
  sizes = [1, *aval.shape[1:]]
  row = mhlo.DynamicSliceOp(x, [index] + [zero] * (aval.ndim - 1), sizes).result
  return mhlo.ReshapeOp(mlir.aval_to_ir_type(ShapedArray(aval.shape[1:], aval.dtype)), row).result


def _update_leading(ys, y, aval, index):
  zero = common.scalar_i32(0)
  row_type = mlir.aval_to_ir_type(ShapedArray((1, *aval.shape[1:]), aval.dtype))
  row = mhlo.ReshapeOp(row_type, y).result
  return mhlo.DynamicUpdateSliceOp(ys, row, [index] + [zero] * (aval.ndim - 1)).result


mlir.register_lowering(scan_p, _scan_lowering)


# ----------------------------------------------------------------------------- printing

def _scan_pp(params, names, indent):
  lines = [f"jaxpr=" + pretty._pp_jaxpr_lines(params["jaxpr"], names, indent)]
  lines += [f"{k}={params[k]}" for k in ("length", "linear", "num_carry", "num_consts",
                                          "reverse")]
  return lines


pretty.pp_rules[scan_p] = _scan_pp
