"""`cond` and `switch`: the primitive `cond_p`.

`cond_p.bind(index, *operands, branches)` runs `branches[index]` on the operands.  The
index is a bool scalar (only with two branches: False picks `branches[0]`, True
`branches[1]`) or an int32 scalar clamped into range, as `lax.switch` promises.  Every
branch is a const-free ClosedJaxpr with the same inputs (the constants of all branches are
joined into leading operands, each branch ignoring the ones it does not use) and outputs
of the same types.  The equation's effects are the union of its branches' effects.

Lowering: two branches become `mhlo.if`, more become `mhlo.case` on the clamped index.
Every ordered effect of the equation is threaded through every branch: the tokens enter
each region from the enclosing scope and leave it as the leading results of the op, so a
branch without a given effect just returns the token it was given.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax import tree_util
from minijax.core import dtypes, pretty
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.lax.control_flow import common
from minijax.lowering import mlir

__all__ = ["cond", "switch", "cond_p"]

cond_p = Primitive("cond")
cond_p.multiple_results = True


# ----------------------------------------------------------------------------- API

def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
  """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, staged so both are traced."""
  if not callable(true_fun) or not callable(false_fun):
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  pred_aval = common.abstractify(pred)
  if pred_aval.shape != ():
    raise TypeError(f"Pred must be a scalar, got {pred} of shape {pred_aval.shape}.")
  if pred_aval.dtype != dtypes.bool_:
    if not (dtypes.is_integer(pred_aval.dtype) or dtypes.is_float(pred_aval.dtype)):
      raise TypeError(f"Pred type must be either boolean or number, got {pred_aval.dtype}.")
    from minijax import lax
    pred = lax.ne(pred, lax.full((), 0, pred_aval.dtype))
  return _bind_cond(pred, [false_fun, true_fun], operands,
                    ["false_fun", "true_fun"], "true_fun and false_fun output")


def switch(index, branches: Sequence[Callable], *operands):
  """`branches[clamp(index, 0, len(branches) - 1)](*operands)`."""
  branches = list(branches)
  if not branches:
    raise ValueError("Empty branch sequence")
  if not all(callable(b) for b in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  index_aval = common.abstractify(index)
  if index_aval.shape != ():
    raise TypeError(f"Branch index must be scalar, got {index} of shape {index_aval.shape}.")
  if not dtypes.is_integer(index_aval.dtype):
    raise TypeError(f"Index type must be an integer, got {index_aval.dtype}.")
  if len(branches) == 1:
    return branches[0](*operands)
  if index_aval.dtype != np.int32:
    from minijax import lax
    index = lax.convert_element_type(index, np.int32)
  names = [f"branch {i}" for i in range(len(branches))]
  return _bind_cond(index, branches, operands, names, "branch 0 and other branches' outputs")


def _bind_cond(index, funs, operands, names, what):
  flat, in_tree = tree_util.tree_flatten(operands)
  avals = [common.abstractify(x) for x in flat]
  traced = [common.trace_fun(f, in_tree, avals, n) for f, n in zip(funs, names)]
  jaxprs = [t[0] for t in traced]
  out_tree = traced[0][2]
  for (jaxpr, _, tree), name in zip(traced[1:], names[1:]):
    common.check_tree_and_avals(what, out_tree, jaxprs[0].out_avals, tree, jaxpr.out_avals)
  branches, all_consts = _join_consts(jaxprs, [t[1] for t in traced])
  outs = cond_p.bind(index, *all_consts, *flat, branches=tuple(branches))
  return tree_util.tree_unflatten(out_tree, outs)


def _join_consts(jaxprs, consts_lists):
  """Every branch takes the constants of every branch (in branch order) as leading inputs."""
  all_avals = [[v.aval for v in j.jaxpr.invars[:len(c)]] for j, c in zip(jaxprs, consts_lists)]
  out = []
  for i, j in enumerate(jaxprs):
    before = [a for avals in all_avals[:i] for a in avals]
    after = [a for avals in all_avals[i + 1:] for a in avals]
    j = common.prepend_unused_invars(j, before, 0)
    j = common.prepend_unused_invars(j, after, len(before) + len(consts_lists[i]))
    out.append(j)
  return out, [c for consts in consts_lists for c in consts]


# ----------------------------------------------------------------------------- abstract eval

def _cond_abstract_eval(index, *avals, branches):
  if index.shape != () or not (index.dtype == dtypes.bool_ or index.dtype == np.int32):
    raise TypeError(f"cond index must be a bool or int32 scalar, got {index.str_short()}")
  if index.dtype == dtypes.bool_ and len(branches) != 2:
    raise TypeError(f"cond with a bool index needs 2 branches, got {len(branches)}")
  for i, b in enumerate(branches):
    if len(b.in_avals) != len(avals) or not all(map(common.same_type, b.in_avals, avals)):
      raise TypeError(f"cond branch {i} takes {[a.str_short() for a in b.in_avals]} but the "
                      f"operands are {[a.str_short() for a in avals]}")
    if not all(map(common.same_type, b.out_avals, branches[0].out_avals)):
      raise TypeError(f"cond branch {i} returns {[a.str_short() for a in b.out_avals]} but "
                      f"branch 0 returns {[a.str_short() for a in branches[0].out_avals]}")
  out_avals = common.join_weak([b.out_avals for b in branches])
  return out_avals, common.jaxprs_effects(*branches)


cond_p.def_effectful_abstract_eval(_cond_abstract_eval)


# ----------------------------------------------------------------------------- lowering

def _cond_lowering(ctx, index, *args, branches):
  mctx = ctx.module_context
  tokens = ctx.tokens_in
  result_types = [mlir.token_type()] * len(tokens) + common.ir_types(ctx.avals_out)
  index_aval = ctx.avals_in[0]
  if len(branches) == 2:
    if index_aval.dtype == dtypes.bool_:
      pred = index
    else:
      pred = common.compare(index, common.scalar_i32(0), "GT")
    op = mhlo.IfOp(result_types, pred)
    regions = [op.true_branch, op.false_branch]
    ordered = [branches[1], branches[0]]
  else:
    clamped = mhlo.ClampOp(common.scalar_i32(0), index,
                           common.scalar_i32(len(branches) - 1)).result
    op = mhlo.CaseOp(result_types, clamped, len(branches))
    regions = list(op.regions)
    ordered = list(branches)
  for region, branch in zip(regions, ordered):
    block = region.blocks.append()
    with ir.InsertionPoint(block):
      outs, tokens_out = common.lower_jaxpr_inline(mctx, branch, tokens, *args)
      mhlo.ReturnOp([*tokens_out.tokens(), *outs])
  results = list(op.results)
  if len(tokens):
    ctx.set_tokens_out(common.tokens_like(tokens, results[:len(tokens)]))
  return results[len(tokens):]


mlir.register_lowering(cond_p, _cond_lowering)


# ----------------------------------------------------------------------------- printing

def _cond_pp(params, names, indent):
  pad = " " * (indent + 2)
  inner = "\n".join(pad + pretty._pp_jaxpr_lines(b, names, indent + 2)
                    for b in params["branches"])
  lines = [f"branches=(\n{inner}\n{' ' * indent})"]
  lines += [f"{k}={v}" for k, v in params.items() if k != "branches"]
  return lines


pretty.pp_rules[cond_p] = _cond_pp
