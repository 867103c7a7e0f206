"""`scan`: the primitive `scan_p`.

`scan_p.bind(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse, unroll)`
runs `carry, y = jaxpr(*consts, *carry, *x)` for each leading slice `x` of `xs` (from the
end when `reverse`), and returns the final carry and the `y`s stacked along a new leading
axis of size `length`.  `jaxpr` is a const-free ClosedJaxpr; `unroll` is how many
iterations each lowered loop step runs.  The equation's effects are the jaxpr's.

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

from minijax import api_util
from minijax.tree_util import internal as tree_util
from minijax.core import pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.effects import must_keep
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, hoist_consts
from minijax.core.primitive import Primitive
from minijax.core.state import AbstractRef
from minijax.interpreters.discharge import jaxpr_has_state
from minijax.lax import state as lax_state
from minijax.config import config
from minijax.lax.control_flow import common, eager, refs, type_errors
from minijax.lowering import mlir

__all__ = ["scan", "scan_map", "scan_p"]

scan_p = Primitive("scan")
scan_p.multiple_results = True


# ----------------------------------------------------------------------------- API

def _concrete(value, what: str, kinds: str):
  from minijax.core.errors import ConcretizationTypeError
  from minijax.core.trace import Tracer
  if not isinstance(value, Tracer):
    return value
  concrete = value.to_concrete_value()
  if concrete is None:
    err = ConcretizationTypeError(value, f"lax.scan's `{what}`")
    err.args = (f"The `{what}` argument to `scan` expects a concrete {kinds} value. "
                + err.args[0],)
    raise err
  return concrete.item() if hasattr(concrete, "item") else concrete


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False):
  """`carry, y = f(carry, x)` over the leading axis of `xs`; returns `(carry, stacked ys)`.
  `unroll` iterations run in each trip of the compiled loop (`True` or 0: all of them, and
  no loop); the results are the same."""
  if not callable(f):
    raise TypeError("lax.scan: f argument should be callable.")
  if length is not None:
    length = _concrete(length, "length", "`int`")
  unroll = _concrete(unroll, "unroll", "`int` or `bool`")
  x_flat, x_tree = tree_util.tree_flatten(xs)
  x_avals = [get_aval(x) for x in x_flat]
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
    shown = ", ".join(str(a.shape[0]) for a in x_avals)  # (JAX's words)
    raise ValueError(f"scan got values with different leading axis sizes: {shown}.")
  elif not sizes:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  else:
    length = sizes.pop()
  if config.disable_jit:
    return eager.scan(f, init, x_flat, x_tree, length, reverse)
  if any(type(a) is AbstractRef for a in x_avals):  # scanning over a ref's rows
    return refs.scan_over_refs(scan, f, init, x_flat, x_tree, length=length, reverse=reverse)

  if isinstance(unroll, (bool, np.bool_)):
    unroll = max(length, 1) if unroll else 1
  if int(unroll) < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  unroll = int(unroll)
  init_flat, init_tree = tree_util.tree_flatten(init)
  carry_avals = [get_aval(x) for x in init_flat]
  ref_names = None
  if any(type(a) is AbstractRef for a in carry_avals):
    ref_names = api_util.flat_arg_names(f, (init, xs), {})
    lax_state.check_ref_arguments(f, "scan", [*init_flat, *x_flat], ref_names)
  slice_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in x_avals]
  in_tree = tree_util.treedef_tuple([init_tree, x_tree])
  # Traced once (as JAX does when the carry keeps its dtypes; a weakly typed initial carry
  # is joined to the body's strong type): the body may have Python side effects.
  jaxpr, consts, out_tree = common.trace_fun(f, in_tree, [*carry_avals, *slice_avals],
                                             "scan body", "scan")
  init_flat, changed = common.promote_weak_carry(init_flat, carry_avals, jaxpr.out_avals)
  if changed:
    carry_avals = [get_aval(x) for x in init_flat]
    jaxpr, consts, out_tree = common.trace_fun(f, in_tree, [*carry_avals, *slice_avals],
                                               "scan body", "scan")
  children = out_tree.children() if out_tree.num_nodes > 1 else []
  if len(children) != 2 or out_tree != tree_util.treedef_tuple(children):
    shown = tree_util.tree_unflatten(out_tree, [type_errors.type_str(a)
                                                for a in jaxpr.out_avals])
    raise TypeError(f"scan body output must be a pair, got {shown}.")
  carry_tree, y_tree = children
  num_carry = len(init_flat)
  if ref_names:
    lax_state.check_ref_arguments(f, "scan", [*init_flat, *x_flat], ref_names, consts)
  type_errors.check_carry("scan body", f, init_tree, carry_avals, carry_tree,
                          jaxpr.out_avals[:carry_tree.num_leaves])
  if jaxpr_has_state(jaxpr.jaxpr):  # refs: discharged now (control_flow/refs.py)
    lax_state.check_no_returned_refs(f, "scan", jaxpr.jaxpr)
    carry, ys = refs.scan_with_refs(scan, jaxpr, consts, init_flat, x_flat, length=length,
                                    reverse=reverse, num_carry=num_carry)
    return (tree_util.tree_unflatten(carry_tree, carry), tree_util.tree_unflatten(y_tree, ys))
  jaxpr, consts, carry_in, invariant = _invariant_carries_to_consts(jaxpr, consts, init_flat)
  jaxpr, forwarded = _forwarded_xs(jaxpr, len(consts), len(carry_in))
  operands = [*consts, *carry_in, *x_flat]
  outs = scan_p.bind(*operands, jaxpr=jaxpr, num_consts=len(consts), num_carry=len(carry_in),
                     length=length, reverse=bool(reverse),
                     unroll=unroll)
  carry = common.merge(invariant, [x for x, inv in zip(init_flat, invariant) if inv],
                       outs[:len(carry_in)])
  carry_out = tree_util.tree_unflatten(carry_tree, carry)
  from minijax.lax.structural import convert_to_array
  ys = iter(outs[len(carry_in):])
  ys = [next(ys) if k is None else convert_to_array(x_flat[k]) for k in forwarded]
  return carry_out, tree_util.tree_unflatten(y_tree, ys)


def _forwarded_xs(jaxpr: ClosedJaxpr, num_consts: int, num_carry: int):
  """A `y` the body returns as its `x` is the `xs` array itself: as in JAX, it leaves the
  loop (no copy), and the scan returns that operand.  Returns the body and, per `y`, the
  index of the `xs` it forwards (None for those the loop computes)."""
  j = jaxpr.jaxpr
  xs_vars = j.invars[num_consts + num_carry:]
  ys = j.outvars[num_carry:]
  forwarded = [next((k for k, x in enumerate(xs_vars) if y is x), None) for y in ys]
  if all(k is None for k in forwarded):
    return jaxpr, forwarded
  outvars = [*j.outvars[:num_carry], *(y for y, k in zip(ys, forwarded) if k is None)]
  body = j.replace(outvars=outvars)
  return ClosedJaxpr(body, jaxpr.consts), forwarded


def _invariant_carries_to_consts(jaxpr: ClosedJaxpr, consts, init_flat):
  """A carry the body returns unchanged is only read: as in JAX, it becomes a leading
  constant of the loop, and the scan's result for it is its initial value.  Returns the
  body, the constants, the remaining carries and which carries were invariant."""
  j, n = jaxpr.jaxpr, len(consts)
  carry_vars = j.invars[n:n + len(init_flat)]
  invariant = [j.outvars[i] is v for i, v in enumerate(carry_vars)]
  if not any(invariant):
    return jaxpr, consts, list(init_flat), invariant
  moved = [v for v, inv in zip(carry_vars, invariant) if inv]
  kept = [v for v, inv in zip(carry_vars, invariant) if not inv]
  body = j.replace(
      invars=[*moved, *j.invars[:n], *kept, *j.invars[n + len(init_flat):]],
      outvars=[v for v, inv in zip(j.outvars, invariant + [False] * len(j.outvars)) if not inv],
      effects=None)
  return (ClosedJaxpr(body, jaxpr.consts),
          [*(x for x, inv in zip(init_flat, invariant) if inv), *consts],
          [x for x, inv in zip(init_flat, invariant) if not inv], invariant)


def scan_map(f: Callable, xs, *, batch_size: int | None = None):
  """`f` applied to each leading slice of `xs`, results stacked (a scan without a carry).
  With `batch_size`, `f` is vmapped over batches of that many slices, the scan running over
  the batches (and the remainder, when the length is not a multiple, vmapped once more)."""
  if batch_size is None:
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys
  if type(batch_size) is not int or batch_size < 1:
    raise ValueError(f"lax.map: batch_size must be a positive int, got {batch_size!r}")
  from minijax.interpreters import batching
  from minijax.lax.structural import concatenate, reshape
  leaves, tree = tree_util.tree_flatten(xs)
  if not leaves:
    raise ValueError("lax.map: xs must have at least one array to map over")
  n = get_aval(leaves[0]).shape[0]
  batches, rest = divmod(n, batch_size)
  out_tree = []

  def vmapped(size, parts):
    def flat_f(*xs_flat):
      out, tree_out = tree_util.tree_flatten(f(tree.unflatten(xs_flat)))
      out_tree[:] = [tree_out]
      return out
    return batching.vmap_flat(flat_f, [0] * len(parts), lambda k: [0] * k, size, parts)

  pieces = []
  if batches:
    grouped = [reshape(x[:batches * batch_size], (batches, batch_size, *get_aval(x).shape[1:]))
               for x in leaves]
    _, ys = scan(lambda _, xs_b: ((), vmapped(batch_size, xs_b)), (), grouped)
    pieces.append([reshape(y, (batches * batch_size, *get_aval(y).shape[2:])) for y in ys])
  if rest:
    pieces.append(vmapped(rest, [x[batches * batch_size:] for x in leaves]))
  outs = pieces[0] if len(pieces) == 1 else [concatenate(list(ys), 0) for ys in zip(*pieces)]
  return out_tree[0].unflatten(outs)


# ----------------------------------------------------------------------------- abstract eval

def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse,
                 unroll=1):
  nonneg_int = lambda n: type(n) is int and n >= 0
  common.check_param("scan", "reverse", reverse, "bool", type(reverse) is bool)
  common.check_param("scan", "num_consts", num_consts, "non-negative int", nonneg_int(num_consts))
  common.check_param("scan", "num_carry", num_carry, "non-negative int", nonneg_int(num_carry))
  common.check_param("scan", "jaxpr", jaxpr, "ClosedJaxpr", type(jaxpr) is ClosedJaxpr)
  common.check_param("scan", "unroll", unroll, "non-negative int", nonneg_int(unroll))
  common.check_param("scan", "length", length, "non-negative int",
                     isinstance(length, (int, np.integer)) and length >= 0)
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
  return [*carry_out, *ys], common.jaxprs_effects("`scan`", jaxpr)


def _split(values, num_consts, num_carry):
  values = list(values)
  return (values[:num_consts], values[num_consts:num_consts + num_carry],
          values[num_consts + num_carry:])


scan_p.def_effectful_abstract_eval(_scan_abstract_eval)


# ----------------------------------------------------------------------------- lowering

def _scan_lowering(ctx, *args, jaxpr, num_consts, num_carry, length, reverse,
                   unroll=1):
  """An `mhlo.while` of `length // unroll` trips, each running `unroll` iterations, then the
  remaining `length % unroll` iterations inline (all of them inline when `unroll` is 0 or
  at least `length`, so that no loop is left)."""
  mctx = ctx.module_context
  tokens = ctx.tokens_in
  ntok = len(tokens)
  consts, init, xs = _split(args, num_consts, num_carry)
  const_avals, carry_avals, x_avals = _split(ctx.avals_in, num_consts, num_carry)
  y_avals = ctx.avals_out[num_carry:]
  ys_init = [mlir.ir_constant(np.broadcast_to(np.zeros((), a.dtype), a.shape)) for a in y_avals]

  def step(toks, i, carry, ys):
    """One iteration at counter `i`: (tokens, i + 1, new carry, updated ys)."""
    index = (mhlo.SubtractOp(common.scalar_i32(length - 1), i).result if reverse else i)
    x_slices = [_index_leading(x, a, index) for x, a in zip(xs_now, x_avals)]
    outs, toks = mlir.lower_closed_jaxpr(mctx, jaxpr, toks, *consts_now, *carry, *x_slices,
                                         carried=carry)
    new_carry, y_slices = outs[:num_carry], outs[num_carry:]
    ys = [_update_leading(y_all, y, a, index) for y_all, y, a in zip(ys, y_slices, y_avals)]
    return toks, mhlo.AddOp(i, common.scalar_i32(1)).result, new_carry, ys

  per_trip = length if unroll == 0 else min(unroll, length)
  trips = length // per_trip if per_trip else 0
  if unroll != 1 and trips == 1 and length % per_trip == 0:
    trips = 0  # (one trip of everything: no loop)
  toks, i, carry, ys = tokens, common.scalar_i32(0), list(init), ys_init
  consts_now, xs_now = consts, xs
  if trips:
    i32 = ShapedArray((), np.int32)
    avals = [i32, *const_avals, *carry_avals, *x_avals, *y_avals]
    types = [mlir.token_type()] * ntok + common.ir_types(avals)
    op = mhlo.WhileOp(types, [*toks.tokens(), i, *consts, *carry, *xs, *ys])
    cond_block = common.add_block(op.cond, types)
    with ir.InsertionPoint(cond_block):
      mhlo.ReturnOp([common.compare(cond_block.arguments[ntok],
                                    common.scalar_i32(trips * per_trip), "LT")])
    body_block = common.add_block(op.body, types)
    with ir.InsertionPoint(body_block):
      values = list(body_block.arguments)
      b_toks, b_i = common.tokens_like(tokens, values[:ntok]), values[ntok]
      consts_now, b_carry, rest = _split(values[ntok + 1:], num_consts, num_carry)
      xs_now, b_ys = rest[:len(xs)], rest[len(xs):]
      for _ in range(per_trip):
        b_toks, b_i, b_carry, b_ys = step(b_toks, b_i, b_carry, b_ys)
      mhlo.ReturnOp([*b_toks.tokens(), b_i, *consts_now, *b_carry, *xs_now, *b_ys])
    results = list(op.results)
    toks, i = common.tokens_like(tokens, results[:ntok]), results[ntok]
    _, carry, rest = _split(results[ntok + 1:], num_consts, num_carry)
    ys = rest[len(xs):]
    consts_now, xs_now = consts, xs
  for _ in range(length - trips * per_trip):
    toks, i, carry, ys = step(toks, i, carry, ys)
  if ntok:
    ctx.set_tokens_out(toks)
  return [*carry, *ys]


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
  lines = [pretty.pp_param("jaxpr", params["jaxpr"], names, indent)]
  lines += [f"{k}={params[k]}" for k in ("length", "num_carry", "num_consts",
                                          "reverse", "unroll") if k in params]
  return lines


pretty.pp_rules[scan_p] = _scan_pp


# ----------------------------------------------------------------------------- jvp

def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse,
                 unroll=1):
  """A scan of the jvp of the body over primals and nonzero tangents.  The set of carries
  with nonzero tangents is grown to a fixed point, so the carry types are stable."""
  from minijax.interpreters import ad
  nz = [common.nonzero_tangent(t) for t in tangents]
  const_nz, carry_nz, xs_nz = _split(nz, num_consts, num_carry)
  num_ys = len(jaxpr.out_avals) - num_carry
  for _ in range(num_carry + 1):
    jvp, out_nz = ad.jvp_jaxpr(jaxpr, [*const_nz, *carry_nz, *xs_nz],
                               [*carry_nz, *[False] * num_ys])
    carry_out_nz = out_nz[:num_carry]
    if carry_out_nz == carry_nz:
      break
    carry_nz = [a or b for a, b in zip(carry_nz, carry_out_nz)]
  ys_nz = out_nz[num_carry:]
  jvp, jvp_consts = hoist_consts(jvp)
  # jvp inputs: [jconsts, consts, carry, xs, consts_t, carry_t, xs_t]; scan wants
  # [jconsts, consts, consts_t, carry, carry_t, xs, xs_t] (and the same for outputs).
  n_in = [len(jvp_consts), num_consts, num_carry, len(xs_nz), sum(const_nz), sum(carry_nz),
          sum(xs_nz)]
  n_out = [num_carry, num_ys, sum(carry_nz), sum(ys_nz)]
  jvp = common.reorder(jvp, common.groups_order(n_in, [0, 1, 4, 2, 5, 3, 6]),
                       common.groups_order(n_out, [0, 2, 1, 3]))
  consts, init, xs = _split(primals, num_consts, num_carry)
  consts_t, init_t, xs_t = _split(tangents, num_consts, num_carry)
  pick = lambda ts, flags: [ad.instantiate_zeros(t) for t, f in zip(ts, flags) if f]
  operands = [*jvp_consts, *consts, *pick(consts_t, const_nz), *init, *pick(init_t, carry_nz),
              *xs, *pick(xs_t, xs_nz)]
  outs = scan_p.bind(*operands, jaxpr=jvp, num_consts=len(jvp_consts) + num_consts + sum(const_nz),
                     num_carry=num_carry + sum(carry_nz), length=length, reverse=reverse, unroll=unroll)
  carry_out, carry_t, ys, ys_t = common.split_sizes(outs, [n_out[i] for i in (0, 2, 1, 3)])
  zeros = lambda avals, flags: [ad.Zero(a.tangent_aval()) for a, f in zip(avals, flags) if not f]
  out_avals = jaxpr.out_avals
  tangents_out = [*common.merge(carry_nz, list(carry_t), zeros(out_avals[:num_carry], carry_nz)),
                  *common.merge(ys_nz, list(ys_t),
                                zeros([ShapedArray((length, *a.shape), a.dtype)
                                       for a in out_avals[num_carry:]], ys_nz))]
  return [*carry_out, *ys], tangents_out


# ----------------------------------------------------------------------------- partial eval

def _scan_partial_eval(trace, args, *, jaxpr, num_consts, num_carry, length, reverse,
                 unroll=1):
  """Splits the body into a known scan that runs now and also stacks the residuals as
  extra outputs, and an unknown scan that is staged and reads them as extra `xs`
  (loop-invariant residuals are computed once and read as constants).
  Effectful equations on known values (a tap on primals) stay in the known scan, so they
  run in the forward pass, once per iteration."""
  from minijax.core.jaxpr import eval_jaxpr
  from minijax.core.trace import set_current_trace
  from minijax.interpreters import partial_eval as pe
  uk = [not trace.is_known(x) for x in args]
  const_uk, carry_uk, xs_uk = _split(uk, num_consts, num_carry)
  num_ys = len(jaxpr.out_avals) - num_carry
  for _ in range(num_carry + 1):
    known, unknown, out_uk, res_avals = pe.partial_eval_jaxpr_nounits(
        jaxpr, [*const_uk, *carry_uk, *xs_uk], [*carry_uk, *[False] * num_ys])
    if out_uk[:num_carry] == carry_uk:
      break
    carry_uk = [a or b for a, b in zip(carry_uk, out_uk[:num_carry])]
  uk = [*const_uk, *carry_uk, *xs_uk]
  ys_uk = out_uk[num_carry:]
  consts, init, xs = _split(args, num_consts, num_carry)
  pick = lambda vals, flags, want: [v for v, f in zip(vals, flags) if f == want]
  known, k_consts = hoist_consts(known)
  n_res = len(res_avals)
  k_operands = [*k_consts, *pick(consts, const_uk, False), *pick(init, carry_uk, False),
                *pick(xs, xs_uk, False)]
  n_kconsts = len(k_consts) + const_uk.count(False)
  # Residuals computed from constants alone are computed once, outside the loop, and read
  # by the unknown scan as constants instead of being stacked `length` times.
  invariant = _loop_invariant_outputs(known.jaxpr, n_kconsts)[len(known.out_avals) - n_res:]
  res_vars = known.jaxpr.outvars[len(known.out_avals) - n_res:]
  hoisted = _slice(known.jaxpr, n_kconsts, [v for v, i in zip(res_vars, invariant) if i])
  n_kcarry = carry_uk.count(False)
  # A stacked residual that is a known `x` is that `xs` operand, not a copy the loop makes
  # (as in JAX: the backward pass reads the primal itself; a numpy array is copied to the
  # device once instead, as a residual).
  k_xs, k_xs_vars = pick(xs, xs_uk, False), known.jaxpr.invars[n_kconsts + n_kcarry:]
  stacked_vars = [v for v, i in zip(res_vars, invariant) if not i]
  from_xs = [k_xs_vars.index(v) if v in k_xs_vars else None for v in stacked_vars]
  from_xs = [None if k is None or isinstance(k_xs[k], np.ndarray) else k for k in from_xs]
  known = ClosedJaxpr(Jaxpr(
      [], known.jaxpr.invars, [*known.jaxpr.outvars[:len(known.out_avals) - n_res],
                               *(v for v, k in zip(stacked_vars, from_xs) if k is None)],
      known.jaxpr.eqns, known.jaxpr.effects), [])
  with set_current_trace(trace.parent):
    invariant_res = eval_jaxpr(hoisted, [], *k_operands[:n_kconsts])
    k_outs = scan_p.bind(*k_operands, jaxpr=known, num_consts=n_kconsts, num_carry=n_kcarry,
                         length=length, reverse=reverse,
                         unroll=unroll)
  n_var = from_xs.count(None)
  k_carry, k_ys, computed = (k_outs[:n_kcarry], k_outs[n_kcarry:len(k_outs) - n_var],
                             iter(k_outs[len(k_outs) - n_var:]))
  stacked_res = [next(computed) if k is None else k_xs[k] for k in from_xs]
  # unknown inputs: [res, consts_uk, carry_uk, xs_uk]; scan order:
  # [consts_uk, invariant res, carry_uk, stacked res, xs_uk]
  n_cu, n_ku = sum(const_uk), sum(carry_uk)
  res_idx = list(range(n_res))
  in_order = [*range(n_res, n_res + n_cu), *(i for i in res_idx if invariant[i]),
              *range(n_res + n_cu, n_res + n_cu + n_ku), *(i for i in res_idx if not invariant[i]),
              *range(n_res + n_cu + n_ku, len(unknown.in_avals))]
  unknown = common.reorder(unknown, in_order)
  u_operands = [*pick(consts, const_uk, True), *invariant_res, *pick(init, carry_uk, True),
                *stacked_res, *pick(xs, xs_uk, True)]
  if any(out_uk) or must_keep(unknown.effects):
    u_outs = trace.stage(scan_p, u_operands, dict(
        jaxpr=unknown, num_consts=n_cu + len(invariant_res), num_carry=n_ku, length=length,
        reverse=reverse, unroll=unroll))
  else:
    u_outs = []
  return [*common.merge(carry_uk, u_outs[:sum(carry_uk)], k_carry),
          *common.merge(ys_uk, u_outs[sum(carry_uk):], k_ys)]


def _scan_partial_eval_custom(saveable, unks_in, inst_in, eqn):
  """Under a policy (`checkpoint`): the body splits by it (to a fixed point of the unknown
  carry), into a known scan that runs now and stacks its residuals, and a staged scan that
  reads them, with every operand, to recompute what the policy did not save and compute
  the unknown outputs.  Residuals computed from known constants alone are computed once,
  before the known scan, and read by the staged one as constants."""
  from minijax.core.jaxpr import Var
  from minijax.interpreters import partial_eval as pe
  params = eqn.params
  jaxpr, nc, nk = params["jaxpr"], params["num_consts"], params["num_carry"]
  num_ys = len(jaxpr.out_avals) - nk
  const_uk, carry_uk, xs_uk = _split(unks_in, nc, nk)
  for _ in range(nk + 1):
    known, staged, out_uk, _, n_res = pe.partial_eval_jaxpr_custom(
        jaxpr.jaxpr, [*const_uk, *carry_uk, *xs_uk], True, [*carry_uk, *[False] * num_ys],
        True, saveable)
    if out_uk[:nk] == carry_uk:
      break
    carry_uk = [a or b for a, b in zip(carry_uk, out_uk[:nk])]
  unks_in = [*const_uk, *carry_uk, *xs_uk]
  new_inst = [a for a, inst in zip(eqn.invars, inst_in) if type(a) is Var and not inst]
  n_kc, n_kout = const_uk.count(False), out_uk.count(False)
  res = known.outvars[n_kout:]
  invariant = _loop_invariant_outputs(known, n_kc)[n_kout:]
  # the loop-invariant residuals, computed once from the known constants
  known_ins = [a for a, uk in zip(eqn.invars, unks_in) if not uk]
  sub = dict(zip(known.invars[:n_kc], known_ins[:n_kc]))
  hoisted_eqns = []
  for e in _slice(known, n_kc, [v for v, i in zip(res, invariant) if i]).eqns:
    outvars = [Var(v.aval) for v in e.outvars]
    hoisted_eqns.append(e.replace(invars=[sub.get(a, a) if type(a) is not Literal else a
                                          for a in e.invars], outvars=outvars))
    sub.update(zip(e.outvars, outvars))
  intensive = [sub.get(v, v) for v, i in zip(res, invariant) if i]
  new_res = [v for v in intensive if v not in set(eqn.invars)]
  body = Jaxpr(known.constvars, known.invars,
               [*known.outvars[:n_kout], *(v for v, i in zip(res, invariant) if not i)],
               known.eqns)
  body, _ = pe.dce_jaxpr(body, [True] * len(body.outvars), instantiate=True)
  length = params["length"]
  extensive = [Var(ShapedArray((length, *v.aval.shape), v.aval.dtype))
               for v, i in zip(res, invariant) if not i]
  known_eqn = eqn.replace(
      invars=known_ins,
      outvars=[*(v for v, uk in zip(eqn.outvars, out_uk) if not uk), *extensive],
      params=dict(params, jaxpr=ClosedJaxpr(body, jaxpr.consts), num_consts=n_kc,
                  num_carry=carry_uk.count(False)),
      effects=body.effects)
  # staged body inputs: [intensive residuals, consts, carry, xs, extensive residuals]
  res_in, ins = staged.invars[:n_res], staged.invars[n_res:]
  staged = Jaxpr(staged.constvars,
                 [*(v for v, i in zip(res_in, invariant) if i), *ins,
                  *(v for v, i in zip(res_in, invariant) if not i)],
                 staged.outvars, staged.eqns)
  staged_ins = [*intensive, *eqn.invars, *extensive]
  staged_eqn = eqn.replace(
      invars=staged_ins,
      params=dict(params, jaxpr=ClosedJaxpr(staged, jaxpr.consts), num_consts=nc + len(intensive)),
      effects=staged.effects)
  return ([*hoisted_eqns, known_eqn], [staged_eqn], out_uk, [True] * len(eqn.outvars),
          [*new_inst, *new_res, *extensive])


def _loop_invariant_outputs(jaxpr: Jaxpr, n_invariant_inputs: int) -> list[bool]:
  """Which outputs depend only on the first inputs, through equations without effects."""
  inv = set(jaxpr.invars[:n_invariant_inputs])
  for eqn in jaxpr.eqns:
    if not eqn.effects and all(type(a) is Literal or a in inv for a in eqn.invars):
      inv.update(eqn.outvars)
  return [type(v) is Literal or v in inv for v in jaxpr.outvars]


def _slice(jaxpr: Jaxpr, n_inputs: int, outvars) -> Jaxpr:
  """The equations of `jaxpr` that `outvars` need, as a jaxpr of its first inputs."""
  needed = {v for v in outvars if type(v) is not Literal}
  eqns = []
  for eqn in reversed(jaxpr.eqns):
    if any(v in needed for v in eqn.outvars):
      eqns.append(eqn)
      needed.update(a for a in eqn.invars if type(a) is not Literal)
  return Jaxpr([], jaxpr.invars[:n_inputs], list(outvars), eqns[::-1])


# ----------------------------------------------------------------------------- transpose

def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse,
                 unroll=1):
  """The transposed scan runs in the other direction.  Its carry holds the cotangents of the
  linear constants (accumulated) and of the carry; its `xs` are the non-linear `xs`
  (residuals) and the cotangents of the `ys`; its `ys` are the cotangents of the linear
  `xs`.  The body is the transpose of the original body."""
  from minijax.core.jaxpr import eval_jaxpr
  from minijax.interpreters import ad
  from minijax.interpreters import partial_eval as pe
  from minijax.interpreters.transpose import transpose_jaxpr
  const_lin, carry_lin, xs_lin = _split([ad.is_undefined_primal(x) for x in args],
                                        num_consts, num_carry)
  # The carry is transposed as linear even where its initial value is a known zero tangent.
  is_lin = [*const_lin, *[True] * num_carry, *xs_lin]
  consts, _, xs = _split(args, num_consts, num_carry)
  ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
  lin_const_avals = [a for a, lin in zip(jaxpr.in_avals[:num_consts], const_lin) if lin]
  t_body = transpose_jaxpr(jaxpr, is_lin)
  res_consts = [c for c, lin in zip(consts, const_lin) if not lin]
  res_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
  n_rc, n_lc, n_rx = len(res_consts), len(lin_const_avals), len(res_xs)
  ys_avals = jaxpr.out_avals[num_carry:]

  def body(*vals):
    rc, acc, ct_c, rx, ct_y = (vals[:n_rc], vals[n_rc:n_rc + n_lc],
                               vals[n_rc + n_lc:n_rc + n_lc + num_carry],
                               vals[n_rc + n_lc + num_carry:n_rc + n_lc + num_carry + n_rx],
                               vals[n_rc + n_lc + num_carry + n_rx:])
    outs = eval_jaxpr(t_body.jaxpr, t_body.consts, *rc, *rx, *ct_c, *ct_y)
    ct_consts, ct_carry_new, ct_x = (outs[:n_lc], outs[n_lc:n_lc + num_carry],
                                     outs[n_lc + num_carry:])
    acc = [ad.add_tangents(a, c) for a, c in zip(acc, ct_consts)]
    return [*acc, *ct_carry_new, *ct_x]

  carry_avals = jaxpr.in_avals[num_consts:num_consts + num_carry]
  in_avals = [*(ad.get_aval(c) for c in res_consts), *lin_const_avals, *carry_avals,
              *(ShapedArray(ad.get_aval(x).shape[1:], ad.get_aval(x).dtype) for x in res_xs),
              *ys_avals]
  t_jaxpr, t_consts = hoist_consts(pe.trace_to_closed_jaxpr(body, in_avals))
  ct_ys = [ad.zeros_like_aval(ShapedArray((length, *a.shape), a.dtype)) if type(ct) is ad.Zero
           else ct for ct, a in zip(ct_ys, ys_avals)]
  operands = [*t_consts, *res_consts, *(ad.zeros_like_aval(a) for a in lin_const_avals),
              *map(ad.instantiate_zeros, ct_carry), *res_xs, *ct_ys]
  outs = scan_p.bind(*operands, jaxpr=t_jaxpr, num_consts=len(t_consts) + n_rc,
                     num_carry=n_lc + num_carry, length=length, reverse=not reverse, unroll=unroll)
  ct_consts, ct_init, ct_xs = outs[:n_lc], outs[n_lc:n_lc + num_carry], outs[n_lc + num_carry:]
  return [*common.merge(const_lin, ct_consts, [None] * const_lin.count(False)),
          *(ct if lin else None for ct, lin in zip(ct_init, carry_lin)),
          *common.merge(xs_lin, ct_xs, [None] * xs_lin.count(False))]


# ----------------------------------------------------------------------------- dead code

def _scan_dce(used_outputs, eqn):
  """Prunes the body to the used outputs.  A carry is needed when its output is used or
  when the body needs it to compute a needed one, so the set of needed carries grows to a
  fixed point; the body then takes and returns exactly those."""
  from minijax.interpreters import partial_eval as pe
  p = eqn.params
  body, num_consts, num_carry = p["jaxpr"], p["num_consts"], p["num_carry"]
  if not any(used_outputs) and not must_keep(eqn.effects):
    return [False] * len(eqn.invars), None
  used_carry, used_ys = list(used_outputs[:num_carry]), list(used_outputs[num_carry:])
  for _ in range(num_carry + 1):
    _, used_in = pe.dce_closed_jaxpr(body, [*used_carry, *used_ys])
    carry_in = used_in[num_consts:num_consts + num_carry]
    if all(u or not c for u, c in zip(used_carry, carry_in)):
      break
    used_carry = [u or c for u, c in zip(used_carry, carry_in)]
  num_xs = len(eqn.invars) - num_consts - num_carry
  new_body, used_in = pe.dce_closed_jaxpr(
      body, [*used_carry, *used_ys],
      instantiate=[False] * num_consts + used_carry + [False] * num_xs)
  used_consts = used_in[:num_consts]
  used_outs = [*used_carry, *used_ys]
  new_eqn = eqn.replace(
      invars=[x for x, u in zip(eqn.invars, used_in) if u],
      outvars=[v for v, u in zip(eqn.outvars, used_outs) if u],
      params=dict(p, jaxpr=new_body, num_consts=sum(used_consts), num_carry=sum(used_carry)),
      effects=new_body.effects)
  return used_in, new_eqn


def _register_transformations():
  from minijax.interpreters import ad
  from minijax.interpreters import partial_eval as pe
  ad.primitive_jvps[scan_p] = _scan_jvp
  ad.primitive_transposes[scan_p] = _scan_transpose
  pe.partial_eval_rules[scan_p] = _scan_partial_eval
  pe.partial_eval_jaxpr_custom_rules[scan_p] = _scan_partial_eval_custom
  pe.dce_rules[scan_p] = _scan_dce


_register_transformations()


# ----------------------------------------------------------------------------- batching

def _scan_batch(args, dims, *, jaxpr, num_consts, num_carry, length, reverse,
                 unroll=1):
  """A scan of the batched body.  Batched constants and carries get their batch dim first;
  batched `xs` get it second (the first is the scanned axis), and so do the `ys`.  The set
  of batched carries is grown to a fixed point."""
  from minijax.interpreters import batching
  size = batching.batch_size(args, dims)
  const_b, carry_b, xs_b = _split([d is not None for d in dims], num_consts, num_carry)
  num_ys = len(jaxpr.out_avals) - num_carry
  for _ in range(num_carry + 1):
    body, consts_extra, out_b = common.batch_jaxpr_const_free(
        jaxpr, size, [*const_b, *carry_b, *xs_b], [*carry_b, *[False] * num_ys])
    if out_b[:num_carry] == carry_b:
      break
    carry_b = [a or b for a, b in zip(carry_b, out_b[:num_carry])]
  consts, init, xs = _split(args, num_consts, num_carry)
  const_d, init_d, xs_d = _split(dims, num_consts, num_carry)
  operands = [*consts_extra, *common.moved(consts, const_d, const_b, size),
              *common.moved(init, init_d, carry_b, size),
              *common.moved(xs, xs_d, xs_b, size, to=1)]
  outs = scan_p.bind(*operands, jaxpr=body, num_consts=len(consts_extra) + num_consts,
                     num_carry=num_carry, length=length, reverse=reverse, unroll=unroll)
  out_dims = [*(0 if b else None for b in carry_b), *(1 if b else None for b in out_b[num_carry:])]
  return outs, out_dims


def _register_batching():
  from minijax.interpreters import batching
  batching.primitive_batchers[scan_p] = _scan_batch


_register_batching()
