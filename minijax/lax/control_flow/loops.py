"""`while_loop` and `fori_loop`: the primitive `while_p`.

`while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr, cond_nconsts,
body_nconsts)` repeats `carry = body(*body_consts, *carry)` while
`cond(*cond_consts, *carry)` is true.  Both jaxprs are const-free ClosedJaxprs; the
equation's effects are the union of theirs.

Lowering to `mhlo.while` carries, in order: one token per ordered effect, then the
constants, then the carry (constants are carried rather than captured, since a while
region is lowered as a closed computation).  When the condition has no ordered effect its
region computes the predicate and the tokens flow through the body only.  When it has
one (a tap in the predicate), a condition region could not hand its new tokens back, so
the loop is rotated as in the seed's `_rewrite_while_outfeed_cond`: the condition runs
once before the loop, the predicate becomes a carried value, the condition region just
reads it, and the body runs the body and then the condition, threading the tokens through
both.  Each evaluation of the predicate thus happens exactly once and in program order.

`fori_loop` with concrete bounds is a `scan` (so it can be reverse-differentiated); with
traced bounds it is a `while_loop` over `(i, upper, carry)`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax import tree_util
from minijax.core import dtypes, pretty
from minijax.core.avals import ShapedArray
from minijax.core.effects import ordered_effects
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer
from minijax.lax.control_flow import common
from minijax.lowering import mlir
from minijax.lowering.tokens import TokenSet

__all__ = ["while_loop", "fori_loop", "while_p"]

while_p = Primitive("while")
while_p.multiple_results = True


# ----------------------------------------------------------------------------- API

def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
  """`while cond_fun(val): val = body_fun(val)`, staged; returns the final `val`."""
  if not callable(cond_fun) or not callable(body_fun):
    raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
  flat, init_tree = tree_util.tree_flatten(init_val)
  in_tree = tree_util.treedef_tuple([init_tree])
  avals = [common.abstractify(x) for x in flat]
  for _ in range(2):
    cond_jaxpr, cond_consts, cond_tree = common.trace_fun(cond_fun, in_tree, avals, "cond_fun")
    body_jaxpr, body_consts, body_tree = common.trace_fun(body_fun, in_tree, avals, "body_fun")
    _check_pred(cond_tree, cond_jaxpr)
    weak_only = common.check_carry(
        "body_fun output and input", init_tree, avals, body_tree, body_jaxpr.out_avals)
    if not weak_only:
      break
    avals = common.strong(avals)
  outs = while_p.bind(*cond_consts, *body_consts, *flat, cond_jaxpr=cond_jaxpr,
                      body_jaxpr=body_jaxpr, cond_nconsts=len(cond_consts),
                      body_nconsts=len(body_consts))
  return tree_util.tree_unflatten(body_tree, outs)


def _check_pred(tree, jaxpr) -> None:
  avals = jaxpr.out_avals
  if len(avals) != 1 or avals[0].shape != () or avals[0].dtype != dtypes.bool_:
    shown = tree_util.tree_unflatten(tree, [a.str_short() for a in avals])
    raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) {shown}.")


def fori_loop(lower, upper, body_fun: Callable, init_val):
  """`for i in range(lower, upper): val = body_fun(i, val)`.  Concrete bounds lower to a
  `scan` (reverse-differentiable); traced bounds to a `while_loop`."""
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  lower_c, upper_c = _concrete_int(lower), _concrete_int(upper)
  if lower_c is not None and upper_c is not None:
    from minijax.lax.control_flow.scan import scan
    dtype = _index_dtype(lower, upper)
    if upper_c <= lower_c:
      return init_val
    start = np.asarray(lower_c, dtype)

    def step(carry, _):
      i, x = carry
      from minijax import lax
      return (lax.add(i, np.asarray(1, dtype)), body_fun(i, x)), None

    (_, result), _ = scan(step, (start, init_val), None, length=upper_c - lower_c)
    return result
  from minijax import lax
  dtype = _index_dtype(lower, upper)
  lower = lax.convert_element_type(lower, dtype) if common.abstractify(lower).dtype != dtype else lower
  upper = lax.convert_element_type(upper, dtype) if common.abstractify(upper).dtype != dtype else upper

  def cond(carry):
    i, hi, _ = carry
    return lax.lt(i, hi)

  def body(carry):
    i, hi, x = carry
    return lax.add(i, np.asarray(1, dtype)), hi, body_fun(i, x)

  _, _, result = while_loop(cond, body, (lower, upper, init_val))
  return result


def _concrete_int(x):
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    return None if value is None else int(value)
  aval = common.abstractify(x)
  if aval.shape != () or not dtypes.is_integer(aval.dtype):
    raise TypeError(f"fori_loop bounds must be integer scalars, got {aval.str_short()}")
  return int(np.asarray(x))


def _index_dtype(lower, upper):
  avals = [common.abstractify(x) for x in (lower, upper)]
  for a in avals:
    if a.shape != () or not dtypes.is_integer(a.dtype):
      raise TypeError(f"fori_loop bounds must be integer scalars, got {a.str_short()}")
  strong = [a.dtype for a in avals if not a.weak_type]
  return np.dtype(strong[0]) if strong else dtypes.canonicalize_dtype(dtypes.default_int_dtype())


# ----------------------------------------------------------------------------- abstract eval

def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  carry = avals[cond_nconsts + body_nconsts:]
  if not all(map(common.same_type, body_jaxpr.out_avals, carry)):
    raise TypeError(f"while body returns {[a.str_short() for a in body_jaxpr.out_avals]} "
                    f"but the carry is {[a.str_short() for a in carry]}")
  return common.join_weak([carry, body_jaxpr.out_avals]), \
      common.jaxprs_effects(cond_jaxpr, body_jaxpr)


while_p.def_effectful_abstract_eval(_while_abstract_eval)


# ----------------------------------------------------------------------------- lowering

def _while_lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  mctx = ctx.module_context
  tokens = ctx.tokens_in
  ntok = len(tokens)
  cond_consts = list(args[:cond_nconsts])
  body_consts = list(args[cond_nconsts:cond_nconsts + body_nconsts])
  init = list(args[cond_nconsts + body_nconsts:])
  const_avals = ctx.avals_in[:cond_nconsts + body_nconsts]
  carry_avals = ctx.avals_out
  rotated = bool(ordered_effects(cond_jaxpr.effects))
  pred_aval = ShapedArray((), dtypes.bool_)

  if rotated:
    (pred,), tokens = common.lower_jaxpr_inline(mctx, cond_jaxpr, tokens, *cond_consts, *init)
    operands = [*tokens.tokens(), pred, *cond_consts, *body_consts, *init]
    avals = [pred_aval, *const_avals, *carry_avals]
  else:
    operands = [*tokens.tokens(), *cond_consts, *body_consts, *init]
    avals = [*const_avals, *carry_avals]
  types = [mlir.token_type()] * ntok + common.ir_types(avals)
  op = mhlo.WhileOp(types, operands)

  def split(values):
    toks = common.tokens_like(tokens, values[:ntok])
    rest = list(values[ntok + (1 if rotated else 0):])
    return toks, rest[:cond_nconsts], rest[cond_nconsts:cond_nconsts + body_nconsts], \
        rest[cond_nconsts + body_nconsts:]

  cond_block = common.add_block(op.cond, types)
  with ir.InsertionPoint(cond_block):
    if rotated:
      mhlo.ReturnOp([cond_block.arguments[ntok]])
    else:
      _, cconsts, _, carry = split(list(cond_block.arguments))
      (pred,), _ = common.lower_jaxpr_inline(mctx, cond_jaxpr, TokenSet(), *cconsts, *carry)
      mhlo.ReturnOp([pred])

  body_block = common.add_block(op.body, types)
  with ir.InsertionPoint(body_block):
    toks, cconsts, bconsts, carry = split(list(body_block.arguments))
    new_carry, toks = common.lower_jaxpr_inline(mctx, body_jaxpr, toks, *bconsts, *carry)
    if rotated:
      (pred,), toks = common.lower_jaxpr_inline(mctx, cond_jaxpr, toks, *cconsts, *new_carry)
      mhlo.ReturnOp([*toks.tokens(), pred, *cconsts, *bconsts, *new_carry])
    else:
      mhlo.ReturnOp([*toks.tokens(), *cconsts, *bconsts, *new_carry])

  results = list(op.results)
  if ntok:
    ctx.set_tokens_out(common.tokens_like(tokens, results[:ntok]))
  return results[len(results) - len(carry_avals):]


mlir.register_lowering(while_p, _while_lowering)


# ----------------------------------------------------------------------------- printing

def _while_pp(params, names, indent):
  return [f"body_jaxpr=" + pretty._pp_jaxpr_lines(params["body_jaxpr"], names, indent),
          f"body_nconsts={params['body_nconsts']}",
          f"cond_jaxpr=" + pretty._pp_jaxpr_lines(params["cond_jaxpr"], names, indent),
          f"cond_nconsts={params['cond_nconsts']}"]


pretty.pp_rules[while_p] = _while_pp
