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

from minijax import api_util
from minijax.tree_util import internal as tree_util
from minijax.config import config
from minijax.core import dtypes, pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.effects import ordered_effects
from minijax.core.jaxpr import ClosedJaxpr, hoist_consts
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer
from minijax.interpreters.discharge import jaxpr_has_state
from minijax.lax import state as lax_state
from minijax.lax.control_flow import common, eager, refs, type_errors
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
  if config.disable_jit:
    done = eager.while_loop(cond_fun, body_fun, init_val)
    if done is not None:
      return done[0]
  flat, init_tree = tree_util.tree_flatten(init_val)
  in_tree = tree_util.treedef_tuple([init_tree])
  avals = [get_aval(x) for x in flat]
  # Traced once, as JAX does when the carry keeps its dtypes: a weakly typed initial carry
  # that the body makes strong is joined to the strong type (the functions may have side
  # effects in Python, such as popping from a list, that a second trace would repeat).
  cond_jaxpr, cond_consts, cond_tree = common.trace_fun(cond_fun, in_tree, avals, "cond_fun",
                                                             "while_cond")
  body_jaxpr, body_consts, body_tree = common.trace_fun(body_fun, in_tree, avals, "body_fun",
                                                             "while_body")
  flat, changed = common.promote_weak_carry(flat, avals, body_jaxpr.out_avals)
  if changed:
    avals = [get_aval(x) for x in flat]
    cond_jaxpr, cond_consts, cond_tree = common.trace_fun(cond_fun, in_tree, avals, "cond_fun",
                                                             "while_cond")
    body_jaxpr, body_consts, body_tree = common.trace_fun(body_fun, in_tree, avals, "body_fun",
                                                             "while_body")
  type_errors.check_predicate_type(cond_tree, cond_jaxpr.out_avals)
  type_errors.check_carry("while_loop body", body_fun, init_tree, avals, body_tree,
                          body_jaxpr.out_avals)
  if jaxpr_has_state(cond_jaxpr.jaxpr) or jaxpr_has_state(body_jaxpr.jaxpr):
    lax_state.check_no_returned_refs(body_fun, "while_body", body_jaxpr.jaxpr)
    outs = refs.while_with_refs(while_loop, cond_jaxpr, cond_consts, body_jaxpr, body_consts,
                                flat)
    return tree_util.tree_unflatten(body_tree, outs)
  cond_jaxpr, body_jaxpr, moved = _read_only_carries_to_consts(
      cond_jaxpr, len(cond_consts), body_jaxpr, len(body_consts))
  body_consts = [*(x for x, m in zip(flat, moved) if m), *body_consts]
  outs = while_p.bind(*cond_consts, *body_consts, *(x for x, m in zip(flat, moved) if not m),
                      cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                      cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
  outs = common.merge(moved, [x for x, m in zip(flat, moved) if m], outs)
  return tree_util.tree_unflatten(body_tree, outs)


def _read_only_carries_to_consts(cond_jaxpr, cond_nconsts: int, body_jaxpr, body_nconsts: int):
  """A carry the body returns unchanged and the condition does not read is only read by
  the body: as in JAX, it becomes a leading constant of the body (so `vmap` with a batched
  predicate leaves it unbatched), and the loop's result for it is its initial value.
  Returns both jaxprs and which carries moved."""
  cj, bj = cond_jaxpr.jaxpr, body_jaxpr.jaxpr
  carry = bj.invars[body_nconsts:]
  used = {v for e in cj.eqns for v in e.invars} | set(cj.outvars)
  moved = [bj.outvars[i] is v and cj.invars[cond_nconsts + i] not in used
           for i, v in enumerate(carry)]
  if not any(moved):
    return cond_jaxpr, body_jaxpr, moved
  keep = lambda vs: [v for v, m in zip(vs, moved) if not m]
  cond = cj.replace(invars=[*cj.invars[:cond_nconsts], *keep(cj.invars[cond_nconsts:])])
  body = bj.replace(invars=[*(v for v, m in zip(carry, moved) if m),
                            *bj.invars[:body_nconsts], *keep(carry)],
                    outvars=keep(bj.outvars))
  return (ClosedJaxpr(cond, cond_jaxpr.consts), ClosedJaxpr(body, body_jaxpr.consts), moved)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
  """`for i in range(lower, upper): val = body_fun(i, val)`.  Concrete bounds (even those of
  an eager jvp, or floats) lower to a `scan` whose index is a weakly typed Python int
  (reverse-differentiable; `unroll` as in `scan`); traced bounds to a `while_loop` over
  their common dtype (which cannot be unrolled)."""
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  dtype = _index_dtype(lower, upper)
  lower_c, upper_c = _concrete_int(lower), _concrete_int(upper)
  if lower_c is not None and upper_c is not None:
    from minijax.lax.control_flow.scan import scan
    length = max(upper_c - lower_c, 0)
    if length == 0 and config.disable_jit:  # an eager scan cannot run zero times
      return init_val

    def loop_body(loop_carry, _):
      i, x = loop_carry
      return (i + 1, body_fun(i, x)), None

    loop_body.__fun_debug_info__ = api_util.debug_info("fori_loop", body_fun,
                                                       (lower_c, init_val), {})
    (_, result), _ = scan(loop_body, (lower_c, init_val), None, length=length,
                          unroll=False if unroll is None else unroll)
    return result
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                     "statically known.")
  from minijax import lax
  lower, upper = [lax.convert_element_type(b, dtype) if get_aval(b).dtype != dtype
                  else b for b in (lower, upper)]

  def cond(carry):
    i, hi, _ = carry
    return lax.lt(i, hi)

  def body(carry):
    i, hi, x = carry
    return lax.add(i, np.asarray(1, dtype)), hi, body_fun(i, x)

  _, _, result = while_loop(cond, body, (lower, upper, init_val))
  return result


def _concrete_int(x):
  """`int(x)` of a bound whose value is known now, else None."""
  if isinstance(x, Tracer):
    x = x.to_concrete_value()
    if x is None:
      return None
  try:
    return int(np.asarray(x))
  except (TypeError, ValueError):
    return None


def _index_dtype(lower, upper):
  """JAX's rule: the bounds' common dtype; of two signed integer dtypes, a weakly typed
  bound takes the other's; anything else must agree."""
  avals = [get_aval(x) for x in (lower, upper)]
  for a in avals:
    if a.shape != ():
      raise TypeError(f"fori_loop bounds must be scalars, got {a.str_short()}")
  lo, hi = avals
  if lo.dtype == hi.dtype:
    return dtypes.canonicalize_dtype(lo.dtype)
  signed = all(np.issubdtype(a.dtype, np.signedinteger) for a in avals)
  if signed and lo.weak_type and not hi.weak_type:
    return dtypes.canonicalize_dtype(hi.dtype)
  if signed and hi.weak_type and not lo.weak_type:
    return dtypes.canonicalize_dtype(lo.dtype)
  raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                  f"{lo.dtype.name} and {hi.dtype.name}")


# ----------------------------------------------------------------------------- abstract eval

def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  carry = avals[cond_nconsts + body_nconsts:]
  if not all(map(common.same_type, body_jaxpr.out_avals, carry)):
    raise TypeError(f"while body returns {[a.str_short() for a in body_jaxpr.out_avals]} "
                    f"but the carry is {[a.str_short() for a in carry]}")
  # the operands are [*cond consts, *body consts, *carry]
  nc, nb, n = cond_nconsts, body_nconsts, len(carry)
  where = [[*range(nc), *range(nc + nb, nc + nb + n)],
           [*range(nc, nc + nb), *range(nc + nb, nc + nb + n)]]
  return body_jaxpr.out_avals, \
      common.jaxprs_effects("`while`", cond_jaxpr, body_jaxpr, operands=where)


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
    with mlir.named_region(mctx, "cond"):
      (pred,), tokens = mlir.lower_closed_jaxpr(mctx, cond_jaxpr, tokens, *cond_consts, *init)
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
  with ir.InsertionPoint(cond_block), mlir.named_region(mctx, "cond"):
    if rotated:
      mhlo.ReturnOp([cond_block.arguments[ntok]])
    else:
      _, cconsts, _, carry = split(list(cond_block.arguments))
      (pred,), _ = mlir.lower_closed_jaxpr(mctx, cond_jaxpr, TokenSet(), *cconsts, *carry)
      mhlo.ReturnOp([pred])

  body_block = common.add_block(op.body, types)
  with ir.InsertionPoint(body_block):
    toks, cconsts, bconsts, carry = split(list(body_block.arguments))
    with mlir.named_region(mctx, "body"):
      new_carry, toks = mlir.lower_closed_jaxpr(mctx, body_jaxpr, toks, *bconsts, *carry,
                                                carried=carry)
    if rotated:
      with mlir.named_region(mctx, "cond"):
        (pred,), toks = mlir.lower_closed_jaxpr(mctx, cond_jaxpr, toks, *cconsts, *new_carry)
      mhlo.ReturnOp([*toks.tokens(), pred, *cconsts, *bconsts, *new_carry])
    else:
      mhlo.ReturnOp([*toks.tokens(), *cconsts, *bconsts, *new_carry])

  results = list(op.results)
  if ntok:
    ctx.set_tokens_out(common.tokens_like(tokens, results[:ntok]))
  return results[len(results) - len(carry_avals):]


mlir.register_lowering(while_p, _while_lowering)


# ----------------------------------------------------------------------------- jvp

def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """A while over primals and nonzero tangents: the body is the body's jvp (nonzero carries
  grown to a fixed point) and the condition ignores the tangents."""
  from minijax.interpreters import ad
  nz = [common.nonzero_tangent(t) for t in tangents]
  bconst_nz = nz[cond_nconsts:cond_nconsts + body_nconsts]
  carry_nz = nz[cond_nconsts + body_nconsts:]
  n = len(carry_nz)
  for _ in range(n + 1):
    jvp, out_nz = ad.jvp_jaxpr(body_jaxpr, [*bconst_nz, *carry_nz], carry_nz)
    if out_nz == carry_nz:
      break
    carry_nz = [a or b for a, b in zip(carry_nz, out_nz)]
  jvp, jconsts = hoist_consts(jvp)
  sizes = [len(jconsts), body_nconsts, n, sum(bconst_nz), sum(carry_nz)]
  jvp = common.reorder(jvp, common.groups_order(sizes, [0, 1, 3, 2, 4]))
  carry_t_avals = [a.tangent_aval() for a, z in zip(body_jaxpr.out_avals, carry_nz) if z]
  cond = common.prepend_unused_invars(cond_jaxpr, carry_t_avals, len(cond_jaxpr.in_avals))
  cconsts, bconsts, init = common.split_sizes(primals, [cond_nconsts, body_nconsts, n])
  _, bconsts_t, init_t = common.split_sizes(tangents, [cond_nconsts, body_nconsts, n])
  pick = lambda ts, flags: [ad.instantiate_zeros(t) for t, f in zip(ts, flags) if f]
  outs = while_p.bind(*cconsts, *jconsts, *bconsts, *pick(bconsts_t, bconst_nz), *init,
                      *pick(init_t, carry_nz), cond_jaxpr=cond, body_jaxpr=jvp,
                      cond_nconsts=cond_nconsts,
                      body_nconsts=len(jconsts) + body_nconsts + sum(bconst_nz))
  zeros = [ad.Zero(a.tangent_aval()) for a, z in zip(body_jaxpr.out_avals, carry_nz) if not z]
  return outs[:n], common.merge(carry_nz, outs[n:], zeros)


# ----------------------------------------------------------------------------- partial eval

_REVERSE_MODE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
    "start/stop.")


def _while_partial_eval(trace, args, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """The carries that depend only on known values (and a known predicate) are computed now
  by a while over the known part of the body; the unknown outputs come from the whole loop,
  staged (which reverse mode cannot transpose: JAX's error).  A loop with effects and
  unknown carries is not split, since its effects would run twice: that raises at once."""
  from minijax.core.trace import set_current_trace
  from minijax.interpreters import partial_eval as pe
  params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                body_nconsts=body_nconsts)
  uk = [not trace.is_known(x) for x in args]
  cconst_uk, bconst_uk, carry_uk = common.split_sizes(
      uk, [cond_nconsts, body_nconsts, len(args) - cond_nconsts - body_nconsts])
  n = len(carry_uk)
  for _ in range(n + 1):
    body_known, body_unknown, out_uk, _ = pe.partial_eval_jaxpr_nounits(
        body_jaxpr, [*bconst_uk, *carry_uk], carry_uk)
    if out_uk == carry_uk:
      break
    carry_uk = [a or b for a, b in zip(carry_uk, out_uk)]
  cond_known, cond_unknown, pred_uk, _ = pe.partial_eval_jaxpr_nounits(
      cond_jaxpr, [*cconst_uk, *carry_uk], False)
  if pred_uk[0] or all(carry_uk):
    return trace.stage(while_p, args, params)
  effects = cond_jaxpr.effects or body_jaxpr.effects
  if effects and (any(carry_uk) or body_unknown.effects or cond_unknown.effects):
    raise NotImplementedError(
        "linearize/grad of a lax.while_loop with effects (e.g. taps) whose carry depends on "
        "the differentiated inputs is not supported (the effects would run twice). "
        + _REVERSE_MODE_ERROR)
  n_known = carry_uk.count(False)
  body_known = hoist_consts(pe.dce_closed_jaxpr(
      body_known, [True] * n_known + [False] * (len(body_known.out_avals) - n_known), True)[0])
  cond_known = hoist_consts(pe.dce_closed_jaxpr(
      cond_known, [True] + [False] * (len(cond_known.out_avals) - 1), True)[0])
  cconsts, bconsts, init = common.split_sizes(args, [cond_nconsts, body_nconsts, n])
  pick = lambda vals, flags: [v for v, f in zip(vals, flags) if not f]
  operands = [*cond_known[1], *pick(cconsts, cconst_uk), *body_known[1],
              *pick(bconsts, bconst_uk), *pick(init, carry_uk)]
  with set_current_trace(trace.parent):
    known_outs = while_p.bind(
        *operands, cond_jaxpr=cond_known[0], body_jaxpr=body_known[0],
        cond_nconsts=len(cond_known[1]) + cconst_uk.count(False),
        body_nconsts=len(body_known[1]) + bconst_uk.count(False))
  if not any(carry_uk):
    return known_outs
  all_outs = trace.stage(while_p, args, params)
  return common.merge(carry_uk, [o for o, u in zip(all_outs, carry_uk) if u], known_outs)


def _while_partial_eval_custom(saveable, unks_in, inst_in, eqn):
  """Under a policy (`checkpoint`): a loop saves nothing (the number of iterations is not
  known when staging), so the known carries come from a while over the known part of the
  body, and the whole loop is staged for the unknown ones, as in JAX."""
  from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Var
  from minijax.interpreters import partial_eval as pe
  params = eqn.params
  cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
  cond_nconsts, body_nconsts = params["cond_nconsts"], params["body_nconsts"]
  cconst_uk, bconst_uk, carry_uk = common.split_sizes(
      unks_in, [cond_nconsts, body_nconsts, len(unks_in) - cond_nconsts - body_nconsts])
  never = lambda *_, **__: False
  for _ in range(len(carry_uk) + 1):
    body_known, _, out_uk, _, _ = pe.partial_eval_jaxpr_custom(
        body_jaxpr.jaxpr, [*bconst_uk, *carry_uk], True, carry_uk, True, never)
    if out_uk == carry_uk:
      break
    carry_uk = [a or b for a, b in zip(carry_uk, out_uk)]
  cond_known, _, (pred_uk,), _, _ = pe.partial_eval_jaxpr_custom(
      cond_jaxpr.jaxpr, [*cconst_uk, *carry_uk], True, False, True, never)
  new_inst = [a for a, inst in zip(eqn.invars, inst_in) if type(a) is Var and not inst]
  n = len(carry_uk)
  if pred_uk or all(carry_uk):
    return [], [eqn], [True] * n, [True] * n, new_inst
  if any(carry_uk) and (cond_jaxpr.effects or body_jaxpr.effects):
    raise NotImplementedError(
        "linearize/grad of a lax.while_loop with effects (e.g. taps) whose carry depends on "
        "the differentiated inputs is not supported (the effects would run twice). "
        + _REVERSE_MODE_ERROR)
  n_known = carry_uk.count(False)
  prune = lambda j, k: Jaxpr(j.constvars, j.invars, j.outvars[:k], j.eqns)
  body_known = ClosedJaxpr(pe.dce_jaxpr(prune(body_known, n_known), [True] * n_known,
                                        True)[0], body_jaxpr.consts)
  cond_known = ClosedJaxpr(pe.dce_jaxpr(prune(cond_known, 1), [True], True)[0],
                           cond_jaxpr.consts)
  uk = [*cconst_uk, *bconst_uk, *carry_uk]
  known_eqn = eqn.replace(
      invars=[a for a, u in zip(eqn.invars, uk) if not u],
      outvars=[v for v, u in zip(eqn.outvars, carry_uk) if not u],
      params=dict(params, cond_jaxpr=cond_known, body_jaxpr=body_known,
                  cond_nconsts=cconst_uk.count(False), body_nconsts=bconst_uk.count(False)))
  return [known_eqn], [eqn], carry_uk, [True] * n, new_inst


def _while_transpose(cts, *args, **params):
  raise ValueError(_REVERSE_MODE_ERROR)


def _register_transformations():
  from minijax.interpreters import ad
  from minijax.interpreters import partial_eval as pe
  ad.primitive_jvps[while_p] = _while_jvp
  ad.primitive_transposes[while_p] = _while_transpose
  pe.partial_eval_rules[while_p] = _while_partial_eval
  pe.partial_eval_jaxpr_custom_rules[while_p] = _while_partial_eval_custom


_register_transformations()


# ----------------------------------------------------------------------------- batching

def _while_batch(args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """With an unbatched predicate the loop runs over batched jaxprs.  With a batched one
  every carry is batched and the loop runs until no lane wants to go on; finished lanes
  keep their carry through a select.  How often the condition runs matters only for its
  effects, and follows JAX: with ordered ones (or none) the per-lane predicate is carried,
  computed before the loop and once per iteration on what the body made, before the
  select; with unordered ones the condition is evaluated as a loop test and again in the
  body, on the carry the body started from, for the select.  Effects that a batched
  predicate may not run for every lane (`allowed_with_batched_predicate`, io_callback's)
  are refused with JAX's errors."""
  from minijax import lax
  from minijax.core.jaxpr import eval_jaxpr
  from minijax.interpreters import partial_eval as pe
  loop_effects = cond_jaxpr.effects | body_jaxpr.effects
  if any(e.ordered and not e.allowed_with_batched_predicate for e in loop_effects):
    raise Exception("Ordered IO effects not supported in vmap.")
  from minijax.interpreters import batching
  size = batching.batch_size(args, dims)
  n = len(args) - cond_nconsts - body_nconsts
  cconst_b, bconst_b, carry_b = common.split_sizes([d is not None for d in dims],
                                                   [cond_nconsts, body_nconsts, n])
  for _ in range(n + 1):
    _, _, out_b = common.batch_jaxpr_const_free(body_jaxpr, size, [*bconst_b, *carry_b],
                                                carry_b)
    _, _, (pred_b,) = common.batch_jaxpr_const_free(cond_jaxpr, size, [*cconst_b, *carry_b],
                                                    False)
    if pred_b:
      out_b = [True] * n
    if out_b == carry_b:
      break
    carry_b = [a or b for a, b in zip(carry_b, out_b)]
  body, bconsts_extra, _ = common.batch_jaxpr_const_free(body_jaxpr, size, [*bconst_b, *carry_b],
                                                         carry_b)
  cond, cconsts_extra, _ = common.batch_jaxpr_const_free(cond_jaxpr, size, [*cconst_b, *carry_b],
                                                         False)
  args = common.moved(args, dims, [*cconst_b, *bconst_b, *carry_b], size)
  cconsts, bconsts, init = common.split_sizes(args, [cond_nconsts, body_nconsts, n])
  carry_dims = [0 if b else None for b in carry_b]
  if not pred_b:
    outs = while_p.bind(*cconsts_extra, *cconsts, *bconsts_extra, *bconsts, *init,
                        cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=len(cconsts_extra) + cond_nconsts,
                        body_nconsts=len(bconsts_extra) + body_nconsts)
    return outs, carry_dims
  if not all(e.allowed_with_batched_predicate for e in loop_effects):
    raise Exception("Unordered IO effects not supported in while_loop with batched predicate")
  nc, nb = len(cconsts_extra) + cond_nconsts, len(bconsts_extra) + body_nconsts
  run_cond = lambda cc, carry: eval_jaxpr(cond.jaxpr, [], *cc, *carry)[0]
  select = lambda pred, old, new: [lax.select_n(common.bcast_lanes(pred, x.shape), x, y)
                                   for x, y in zip(old, new)]
  cc_vals, bc_vals = [*cconsts_extra, *cconsts], [*bconsts_extra, *bconsts]
  carry_avals = [*cond.in_avals[nc:]]
  cond_effects = cond.effects
  if cond_effects and not any(e.ordered for e in cond_effects):
    def test(*vals):
      cc, _, carry = common.split_sizes(vals, [nc, nb, n])
      return [lax.reduce_or(run_cond(cc, carry), (0,))]

    def step(*vals):
      cc, bc, carry = common.split_sizes(vals, [nc, nb, n])
      new = eval_jaxpr(body.jaxpr, [], *bc, *carry)
      return [*cc, *bc, *select(run_cond(cc, carry), carry, new)]

    in_avals = [*cond.in_avals[:nc], *body.in_avals[:nb], *carry_avals]
    test_jaxpr, c1 = hoist_consts(pe.trace_to_closed_jaxpr(test, in_avals))
    step_jaxpr, c2 = hoist_consts(pe.trace_to_closed_jaxpr(step, in_avals))
    outs = while_p.bind(*c1, *c2, *cc_vals, *bc_vals, *init, cond_jaxpr=test_jaxpr,
                        body_jaxpr=step_jaxpr, cond_nconsts=len(c1), body_nconsts=len(c2))
    return outs[nc + nb:], carry_dims

  def new_cond(pred, *carry):
    return [lax.reduce_or(pred, (0,))]

  def new_body(*vals):
    cc, bc, (pred, *carry) = common.split_sizes(vals, [nc, nb, n + 1])
    new = eval_jaxpr(body.jaxpr, [], *bc, *carry)
    again = lax.bitwise_and(pred, run_cond(cc, new))  # a finished lane stays finished
    return [again, *select(pred, carry, new)]

  pred0 = run_cond(cc_vals, init)
  pred_aval = ShapedArray((size,), dtypes.bool_)
  new_cond_jaxpr = pe.trace_to_closed_jaxpr(new_cond, [pred_aval, *carry_avals])
  new_body_jaxpr = pe.trace_to_closed_jaxpr(
      new_body, [*cond.in_avals[:nc], *body.in_avals[:nb], pred_aval, *carry_avals])
  new_cond_jaxpr, c1 = hoist_consts(new_cond_jaxpr)
  new_body_jaxpr, c2 = hoist_consts(new_body_jaxpr)
  outs = while_p.bind(*c1, *c2, *cc_vals, *bc_vals, pred0, *init,
                      cond_jaxpr=new_cond_jaxpr, body_jaxpr=new_body_jaxpr,
                      cond_nconsts=len(c1), body_nconsts=len(c2) + nc + nb)
  return outs[1:], carry_dims


def _register_batching():
  from minijax.interpreters import batching
  batching.primitive_batchers[while_p] = _while_batch


_register_batching()


# ----------------------------------------------------------------------------- printing

def _while_pp(params, names, indent):
  return [pretty.pp_param("body_jaxpr", params["body_jaxpr"], names, indent),
          f"body_nconsts={params['body_nconsts']}",
          pretty.pp_param("cond_jaxpr", params["cond_jaxpr"], names, indent),
          f"cond_nconsts={params['cond_nconsts']}"]


pretty.pp_rules[while_p] = _while_pp
