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

from minijax import api_util
from minijax.tree_util import internal as tree_util
from minijax.core import dtypes, pretty
from minijax.core.avals import get_aval
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.effects import must_keep
from minijax.core.primitive import Primitive
from minijax.core.state import AbstractRef
from minijax.interpreters.discharge import jaxpr_has_state
from minijax.lax import state as lax_state
from minijax.config import config
from minijax.lax.control_flow import common, eager, refs, type_errors
from minijax.lowering import mlir

__all__ = ["cond", "switch", "cond_p"]

cond_p = Primitive("cond")
cond_p.multiple_results = True


# ----------------------------------------------------------------------------- API

_NO_OPERAND = object()


def _operands(operand, operands):
  if operand is _NO_OPERAND:
    return operands
  if operands:
    raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                    f"passed, got operand={operand!r} and positional operands {operands}")
  return (operand,)


def _dtype_of(value):
  try:
    return get_aval(value).dtype
  except TypeError:
    return None


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
  """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, staged so both are traced.
  `operand=x` passes one operand by keyword; JAX's older five-argument form
  `cond(pred, true_operand, true_fun, false_operand, false_fun)` is accepted too."""
  if not callable(true_fun) or not callable(false_fun):
    if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
      x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
      return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  operands = _operands(operand, operands)
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, Sequence) or np.ndim(pred) != 0:
    raise TypeError(f"Pred must be a scalar, got {pred} of " + (
        f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {np.shape(pred)}."))
  pred_dtype = _dtype_of(pred)
  if pred_dtype is None:
    raise TypeError(f"Pred type must be either boolean or number, got {pred}.")
  if pred_dtype != dtypes.bool_:
    if not (dtypes.is_integer(pred_dtype) or dtypes.is_float(pred_dtype)):
      raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
    from minijax import lax
    pred = lax.ne(pred, lax.full((), 0, pred_dtype))
  if config.disable_jit and eager.is_concrete(pred):
    return true_fun(*operands) if pred else false_fun(*operands)
  return _bind_cond(pred, [false_fun, true_fun], operands, "cond", ["false_fun", "true_fun"])


def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
  """`branches[clamp(index, 0, len(branches) - 1)](*operands)`."""
  branches = list(branches)
  if not all(callable(b) for b in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  operands = _operands(operand, operands)
  if np.ndim(index) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  index_dtype = _dtype_of(index)
  if index_dtype is None:
    raise TypeError(f"Index type must be an integer, got {index}.")
  if not dtypes.is_integer(index_dtype):
    raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
  if not branches:
    raise ValueError("Empty branch sequence")
  if len(branches) == 1:
    return branches[0](*operands)
  if config.disable_jit and eager.is_concrete(index):
    return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
  if index_dtype != np.int32:
    from minijax import lax
    index = lax.convert_element_type(index, np.int32)
  return _bind_cond(index, branches, operands, "switch",
                    ["branch 0", *(f"branch{i}" for i in range(1, len(branches)))])


def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
  """`per_platform[platform](*args)` for the platform the computation is lowered for, or
  `default(*args)` for a platform not named.  minijax lowers for the CPU only, so this is
  the `cpu` branch (else `default`), and only that branch is traced: the others never
  reach a jaxpr or the compiler."""
  for name, branch in per_platform.items():
    if not callable(branch):
      raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
    if name == "gpu":
      raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
  if default is not None and not callable(default):
    raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
  branch = per_platform.get("cpu", default)
  if branch is None:
    raise NotImplementedError(
        "lax.platform_dependent: translation rule for platform_index not found for platform "
        f"cpu: there are branches for {sorted(per_platform)} and no default; add a `cpu=` "
        "or a `default=` branch")
  return branch(*args)


def _bind_cond(index, funs, operands, api_name, names):
  flat, in_tree = tree_util.tree_flatten(operands)
  avals = [get_aval(x) for x in flat]
  ref_names = _ref_arg_names(funs[-1], operands, avals)
  if ref_names:
    lax_state.check_ref_arguments(funs[-1], "cond", flat, ref_names)
  traced = [common.trace_fun_closed(f, in_tree, avals, n, api_name)
            for f, n in zip(funs, names)]
  # (JAX compares true_fun with false_fun, and branch 0 with each other branch)
  first = 1 if api_name == "cond" else 0
  (jaxpr0, tree0), f0, name0 = traced[first], funs[first], names[first]
  for (jaxpr, tree), f, name in zip(traced, funs, names):
    if f is not f0:
      type_errors.check_branch_outputs(api_name, name0, name, f0, f, tree0, jaxpr0.out_avals,
                                       tree, jaxpr.out_avals)
  if ref_names or any(jaxpr_has_state(t[0].jaxpr) for t in traced):
    for (b, _), f in zip(traced, funs):
      lax_state.check_no_returned_refs(f, "cond", b.jaxpr)
  # An output every branch passes through from one operand is that operand, outside the
  # cond (as in JAX: under vmap it stays unbatched, and it is the very same object, a Python
  # scalar made an array).
  forwarded = _forwarded_outputs([t[0] for t in traced], len(flat))
  kept = [k for k, p in enumerate(forwarded) if p is None]
  jaxprs = [_keep_outputs(t[0], kept) for t in traced]
  branches, all_consts = common.join_consts(jaxprs)
  if ref_names:
    lax_state.check_ref_arguments(funs[-1], "cond", flat, ref_names, all_consts)
  outs = []
  if api_name == "cond":  # (as in JAX, the cond's index is the predicate as an int32)
    from minijax import lax
    index = lax.convert_element_type(index, np.int32)
  if any(jaxpr_has_state(b.jaxpr) for b in branches):  # refs: discharged now (refs.py)
    outs = refs.call_with_refs(
        branches, [*all_consts, *flat], "cond",
        lambda pure, ops: cond_p.bind(index, *ops, branches=tuple(pure)))
  elif kept or must_keep(frozenset().union(*(b.effects for b in branches))):
    outs = cond_p.bind(index, *all_consts, *flat, branches=tuple(branches))
  outs = iter(outs)
  from minijax.lax.structural import convert_to_array
  return tree_util.tree_unflatten(tree0, [next(outs) if p is None else convert_to_array(flat[p])
                                          for p in forwarded])


def _forwarded_outputs(closed_jaxprs, num_operands: int) -> list:
  """For each output, the operand position every branch returns unchanged, else None."""
  forwarded = []
  for k in range(len(closed_jaxprs[0].out_avals)):
    positions = set()
    for closed in closed_jaxprs:
      v = closed.jaxpr.outvars[k]
      invars = closed.jaxpr.invars
      positions.add(invars.index(v) if v in invars else None)
    p = positions.pop() if len(positions) == 1 else None
    forwarded.append(p if p is not None and p < num_operands else None)
  return forwarded


def _keep_outputs(closed, kept):
  from minijax.core.jaxpr import ClosedJaxpr
  j = closed.jaxpr
  if len(kept) == len(j.outvars):
    return closed
  return ClosedJaxpr(j.replace(outvars=[j.outvars[k] for k in kept]), closed.consts)


def _ref_arg_names(fun, args, avals):
  """The names of `fun`'s flat arguments when some are refs (for JAX's aliasing errors)."""
  if not any(type(a) is AbstractRef for a in avals):
    return None
  return api_util.flat_arg_names(fun, args, {})


# ----------------------------------------------------------------------------- abstract eval

def _cond_abstract_eval(index, *avals, branches):
  common.check_param("cond", "branches", branches, "tuple of ClosedJaxpr",
                     type(branches) is tuple and all(type(b) is ClosedJaxpr for b in branches))
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
  return branches[0].out_avals, _branches_effects(branches)  # (weak types: branch 0's, as JAX's)


def _branches_effects(branches) -> frozenset:
  """The branches' effects, an effect on branch input i being on operand i + 1 (after the
  index)."""
  shifted = [range(1, 1 + len(b.in_avals)) for b in branches]
  return common.jaxprs_effects("`cond`", *branches, operands=shifted)


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
    order = [1, 0]
  else:
    clamped = mhlo.ClampOp(common.scalar_i32(0), index,
                           common.scalar_i32(len(branches) - 1)).result
    op = mhlo.CaseOp(result_types, clamped, len(branches))
    regions = list(op.regions)
    order = range(len(branches))
  for region, i in zip(regions, order):
    block = region.blocks.append()
    with ir.InsertionPoint(block), mlir.named_region(mctx, f"branch_{i}_fun"):
      outs, tokens_out = mlir.lower_closed_jaxpr(mctx, branches[i], tokens, *args)
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


# ----------------------------------------------------------------------------- jvp

def _cond_jvp(primals, tangents, *, branches):
  from minijax.interpreters import ad
  index, *ops = primals
  nz = [common.nonzero_tangent(t) for t in tangents[1:]]
  out_nz = [False] * len(branches[0].out_avals)
  for b in branches:
    out_nz = [a or b_ for a, b_ in zip(out_nz, ad.jvp_jaxpr(b, nz, False)[1])]
  jvps, consts = common.join_consts([ad.jvp_jaxpr(b, nz, out_nz)[0] for b in branches])
  ops_t = [t for t, n in zip(tangents[1:], nz) if n]
  outs = cond_p.bind(index, *consts, *ops, *ops_t, branches=tuple(jvps))
  n = len(out_nz)
  zeros = [ad.Zero(a.tangent_aval()) for a, z in zip(branches[0].out_avals, out_nz) if not z]
  return outs[:n], common.merge(out_nz, outs[n:], zeros)


# ----------------------------------------------------------------------------- partial eval

def _cond_partial_eval(trace, args, *, branches):
  """Known index: a cond of the known parts runs now and returns the residuals of the
  branch it took (zeros for the others' slots); a cond of the unknown parts is staged.
  Effectful equations on known values stay in the known cond."""
  from minijax.core.jaxpr import eval_jaxpr
  from minijax.core.trace import set_current_trace
  from minijax.interpreters import ad
  from minijax.interpreters import partial_eval as pe
  index, *ops = args
  if not trace.is_known(index):
    return trace.stage(cond_p, args, dict(branches=branches))
  uk = [not trace.is_known(x) for x in ops]
  out_uk = [False] * len(branches[0].out_avals)
  for b in branches:
    out_uk = [a or b_ for a, b_ in zip(out_uk, pe.partial_eval_jaxpr_nounits(b, uk, False)[2])]
  splits = [pe.partial_eval_jaxpr_nounits(b, uk, out_uk) for b in branches]
  slots, res_avals = _residual_slots([s[3] for s in splits])
  n_known_out = out_uk.count(False)

  def known_branch(known, mine):
    def fun(*xs):
      outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
      return [*outs[:n_known_out], *_fill_slots(outs[n_known_out:], mine, res_avals)]
    return pe.trace_to_closed_jaxpr(fun, known.in_avals)

  known_ops = [x for x, u in zip(ops, uk) if not u]
  known, k_consts = common.join_consts([known_branch(s[0], mine)
                                        for s, mine in zip(splits, slots)])
  with set_current_trace(trace.parent):
    k_outs = cond_p.bind(index, *k_consts, *known_ops, branches=tuple(known))
  residuals = k_outs[n_known_out:]
  unknown = [_read_slots(s[1], mine, res_avals) for s, mine in zip(splits, slots)]
  uk_ops = [x for x, u in zip(ops, uk) if u]
  if any(out_uk) or any(must_keep(j.effects) for j in unknown):
    uk_outs = trace.stage(cond_p, [index, *residuals, *uk_ops], dict(branches=tuple(unknown)))
  else:
    uk_outs = []
  return common.merge(out_uk, uk_outs, k_outs[:n_known_out])


def _residual_slots(res_avals_per_branch):
  """Residual slots the branches share, as JAX merges them: the k-th residual of a type in
  a branch takes the k-th slot of that type.  Returns each branch's slots and the slots'
  avals."""
  keys: list = []
  slots = []
  for avals in res_avals_per_branch:
    seen: dict = {}
    mine = []
    for a in avals:
      key = (a, seen.get(a, 0))
      seen[a] = key[1] + 1
      if key not in keys:
        keys.append(key)
      mine.append(keys.index(key))
    slots.append(mine)
  return slots, [a for a, _ in keys]


def _fill_slots(residuals, mine, res_avals):
  """A known branch's residuals placed in their slots, zeros in the others."""
  from minijax.interpreters import ad
  res = [ad.zeros_like_aval(a) for a in res_avals]
  for slot, r in zip(mine, residuals):
    res[slot] = r
  return res


def _read_slots(closed, mine, res_avals):
  """`closed`, whose leading inputs are its branch's residuals, reading every slot instead
  (its own in theirs, the others unused)."""
  from minijax.core.jaxpr import Var
  j = closed.jaxpr
  invars = [Var(a) for a in res_avals]
  for slot, v in zip(mine, j.invars[:len(mine)]):
    invars[slot] = v
  return ClosedJaxpr(j.replace(invars=[*invars, *j.invars[len(mine):]]), closed.consts)


def _cond_partial_eval_custom(saveable, unks_in, inst_in, eqn):
  """Under a policy (`checkpoint`), each branch splits by it: a known cond runs the
  branches' known parts and returns their residuals (in slots merged by type across
  branches, zeros where a branch has none), and a staged cond reads them, with every
  operand, to recompute what the policy did not save and compute the unknown outputs."""
  from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Var
  from minijax.interpreters import ad
  from minijax.interpreters import partial_eval as pe
  from minijax.core.jaxpr import eval_jaxpr
  index_uk, *ops_uk = unks_in
  branches = eqn.params["branches"]
  new_inst = [a for a, inst in zip(eqn.invars, inst_in) if type(a) is Var and not inst]
  n_out = len(eqn.outvars)
  if index_uk:
    return [], [eqn], [True] * n_out, [True] * n_out, new_inst
  out_uk = [False] * n_out
  for b in branches:
    uk = pe.partial_eval_jaxpr_custom(b.jaxpr, ops_uk, True, False, True, saveable)[2]
    out_uk = [x or y for x, y in zip(out_uk, uk)]
  splits = [pe.partial_eval_jaxpr_custom(b.jaxpr, ops_uk, True, out_uk, True, saveable)
            for b in branches]
  slots, res_avals = _residual_slots([[v.aval for v in staged.invars[:n_res]]
                                      for _, staged, _, _, n_res in splits])
  n_known_out = out_uk.count(False)

  def known_branch(known, consts, mine):
    def fun(*xs):
      outs = eval_jaxpr(known, consts, *xs)
      return [*outs[:n_known_out], *_fill_slots(outs[n_known_out:], mine, res_avals)]
    return pe.trace_to_closed_jaxpr(fun, known.in_avals)

  res_vars = [Var(a) for a in res_avals]
  known_branches, staged_branches = [], []
  for b, (known, staged, _, _, n_res), mine in zip(branches, splits, slots):
    known_branches.append(known_branch(known, b.consts, mine))
    staged = Jaxpr(staged.constvars, staged.invars, staged.outvars, staged.eqns)
    staged_branches.append(_read_slots(ClosedJaxpr(staged, b.consts), mine, res_avals))
  index, *ops = eqn.invars
  known_eqn = eqn.replace(
      invars=[index, *(a for a, uk in zip(ops, ops_uk) if not uk)],
      outvars=[*(v for v, uk in zip(eqn.outvars, out_uk) if not uk), *res_vars],
      params=dict(eqn.params, branches=tuple(known_branches)),
      effects=_branches_effects(known_branches))
  staged_eqn = eqn.replace(
      invars=[index, *res_vars, *ops],
      params=dict(eqn.params, branches=tuple(staged_branches)),
      effects=_branches_effects(staged_branches))
  return [known_eqn], [staged_eqn], out_uk, [True] * n_out, [*new_inst, *res_vars]


# ----------------------------------------------------------------------------- transpose

def _cond_transpose(cts, index, *ops, branches):
  from minijax.interpreters import ad
  from minijax.interpreters.transpose import transpose_jaxpr
  if ad.is_undefined_primal(index):
    raise TypeError("cond: cannot transpose with respect to the branch index")
  linear = [ad.is_undefined_primal(x) for x in ops]
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  transposed, consts = common.join_consts([transpose_jaxpr(b, linear) for b in branches])
  res = [x for x, lin in zip(ops, linear) if not lin]
  outs = cond_p.bind(index, *consts, *res, *cts, branches=tuple(transposed))
  return [None, *common.merge(linear, outs, [None] * linear.count(False))]


# ----------------------------------------------------------------------------- dead code

def _cond_dce(used_outputs, eqn):
  """Prunes every branch to the used outputs; the cond keeps the operands any branch
  reads (every branch then takes them all), and the index."""
  from minijax.interpreters import partial_eval as pe
  branches = eqn.params["branches"]
  if not any(used_outputs) and not must_keep(eqn.effects):
    return [False] * len(eqn.invars), None
  used_ops = [False] * (len(eqn.invars) - 1)
  for b in branches:
    used_ops = [u or v for u, v in zip(used_ops, pe.dce_closed_jaxpr(b, used_outputs)[1])]
  new_branches = tuple(pe.dce_closed_jaxpr(b, used_outputs, instantiate=used_ops)[0]
                       for b in branches)
  ops = [x for x, u in zip(eqn.invars[1:], used_ops) if u]
  new_eqn = eqn.replace(
      invars=[eqn.invars[0], *ops],
      outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
      params=dict(eqn.params, branches=new_branches),
      effects=frozenset().union(*(b.effects for b in new_branches)))
  return [True, *used_ops], new_eqn


def _register_transformations():
  from minijax.interpreters import ad
  from minijax.interpreters import partial_eval as pe
  ad.primitive_jvps[cond_p] = _cond_jvp
  ad.primitive_transposes[cond_p] = _cond_transpose
  pe.partial_eval_rules[cond_p] = _cond_partial_eval
  pe.partial_eval_jaxpr_custom_rules[cond_p] = _cond_partial_eval_custom
  pe.dce_rules[cond_p] = _cond_dce


_register_transformations()


# ----------------------------------------------------------------------------- batching

def _cond_batch(args, dims, *, branches):
  """An unbatched index keeps the cond, over batched branches.  A batched index runs every
  branch on the whole batch, in branch order, and selects per lane, as JAX does: the
  effects of every branch then happen for every lane (a `debug.print` in a branch prints
  each lane once per branch).  Effects that may not run for lanes that did not ask for
  them (`allowed_with_batched_predicate`: io_callback's) are refused with JAX's error."""
  from minijax import lax
  from minijax.core.jaxpr import eval_jaxpr
  from minijax.interpreters import batching
  size = batching.batch_size(args, dims)
  index, *ops = args
  index_dim, *op_dims = dims
  ops_b = [d is not None for d in op_dims]
  n_out = len(branches[0].out_avals)
  if index_dim is None:
    out_b = [False] * n_out
    for b in branches:
      b_out = common.batch_jaxpr_const_free(b, size, ops_b, False)[2]
      out_b = [x or y for x, y in zip(out_b, b_out)]
    batched, consts = common.join_consts(
        [common.batch_jaxpr_const_free(b, size, ops_b, out_b)[0] for b in branches])
    outs = cond_p.bind(index, *consts, *common.moved(ops, op_dims, ops_b, size),
                       branches=tuple(batched))
    return outs, [0 if b else None for b in out_b]
  branch_effects = frozenset().union(*(b.effects for b in branches))
  if any(e.must_be_discharged for e in branch_effects):
    raise NotImplementedError("State effect not supported in vmap-of-cond.")
  if not all(e.allowed_with_batched_predicate for e in branch_effects):
    raise NotImplementedError("IO effect not supported in vmap-of-cond.")
  index = lax.convert_element_type(index, np.int32) if index.dtype != np.int32 else index
  index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
  index = common.moved([index], [index_dim], [True], size)[0]
  ops = common.moved(ops, op_dims, [True] * len(ops), size)
  results = []
  for i, b in enumerate(branches):
    # (each branch differentiates only the lanes that select it: elsewhere its operands
    # are gradient-stopped, so a branch not taken, say sqrt at 0, adds no 0 * inf = nan)
    chosen = lax.eq(index, np.int32(i))
    ops_i = [lax.select_n(common.bcast_lanes(chosen, x.shape), lax.stop_gradient(x), x)
             if dtypes.is_inexact(x.dtype) else x for x in ops]
    jaxpr, consts, _ = common.batch_jaxpr_const_free(b, size, [True] * len(ops), True)
    results.append(eval_jaxpr(jaxpr.jaxpr, [], *consts, *ops_i))
  outs = [lax.select_n(common.bcast_lanes(index, cases[0].shape), *cases)
          for cases in zip(*results)]
  return outs, [0] * n_out


def _register_batching():
  from minijax.interpreters import batching
  batching.primitive_batchers[cond_p] = _cond_batch


_register_batching()
