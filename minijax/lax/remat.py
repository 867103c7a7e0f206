"""`checkpoint` (remat) and `named_call`: call primitives over a staged jaxpr.

`named_call(f, name=)` is JAX's: `f` under a `named_scope`, so its operations carry the
name in their name stack (and lowered locations), with no equation of its own.
`named_call_p` is an inlined call that keeps a name in jaxprs and in the lowered module (a
`func.call` to a function of that name): `lax.composite` stages through it (`staged_call`).
`remat_p` marks a computation whose intermediate values reverse mode should recompute
rather than save.  Its partial-evaluation rule splits
its (jvp'd) jaxpr equation by equation under its policy (`pe.partial_eval_jaxpr_custom`, as
JAX's does): the known part runs now and returns the residuals the policy lets it save;
the staged part, one `remat_p` equation, recomputes the rest from the known inputs and
computes the unknown outputs.  The policy reaches inside the equations that hold jaxprs
(`cond`, `scan`, `while`, `jit`, a nested `checkpoint`, whose own policy the outer one
overrides): each splits by its rule in `pe.partial_eval_jaxpr_custom_rules`.  The
transpose of the staged equation splits its jaxpr again, by ordinary partial evaluation,
into the recomputation and the linear rest, as JAX's does, so that no non-linear equation
(a `sin` in the primal carry of a recomputed `scan`) reaches a transpose rule.  Both take
`jaxpr` (a ClosedJaxpr without constants, which are passed as leading arguments).

Lowered, a recomputation (a `remat_p` equation that partial evaluation staged, marked
`differentiated`) reads the operands its `prevent_cse` marks (a bool, or one per operand:
the residuals and cotangents always) through one `optimization_barrier`, so that XLA does
not merge it with the forward pass and save the values after all; the float residuals are
rounded to their dtype (`reduce_precision`) where the forward pass makes them, so that XLA's
excess precision cannot make the two passes see different bits.  Each partial evaluation
logs what it saves (logger `minijax.lax.remat`, DEBUG; WARNING under the
`log_checkpoint_residuals` flag), as JAX does.

`checkpoint(f)` traces `f` once per function, static arguments, argument types and tracing
flags (`_traces`, keyed weakly on `f`, as JAX does), so an eager loop over a remat-decorated
function does not retrace it; a trace that closed over another transformation's tracers is
not kept.
"""
from __future__ import annotations

import inspect
import logging
from typing import Callable

import ml_dtypes
import numpy as np

from minijax.api_util import debug_info, wraps
from minijax.config import config
from minijax.core import caches, dtypes, pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.effects import check_allowed, must_keep, no_effects
from minijax.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Var, eval_jaxpr, hoist_consts,
                                named_scope)
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer, set_current_trace
from minijax.tree_util import internal as tree_util
from minijax.interpreters import ad, batching, partial_eval as pe
from minijax.interpreters.discharge import jaxpr_has_state
from minijax.lax.call import (_memo, call_batching_rule, call_dce_rule, call_jvp_rule,
                              call_transpose_rule, register_call_rules)
from minijax.lax.misc import emit_optimization_barrier, reduce_precision_p
from minijax.lowering import mlir

logger = logging.getLogger(__name__)

__all__ = ["checkpoint", "remat", "named_call", "remat_p", "named_call_p", "checkpoint_policies",
           "checkpoint_name", "name_p"]


def _call_abstract_eval(*avals, jaxpr, **params):
  return jaxpr.out_avals, jaxpr.effects


def _call_impl(*args, jaxpr, **params):
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _pp_call(params, names, indent):
  lines = [f"{k}={v}" for k, v in params.items() if k != "jaxpr"]
  lines.append(pretty.pp_param("jaxpr", params["jaxpr"], names, indent))
  return lines


def _stage_fun(fun, args, kwargs, debug=None):
  """`(closed jaxpr with constants as leading inputs, constants, flat args, out tree)`."""
  jaxpr, consts, flat, out_tree = pe.trace_pytree_fun(fun, args, kwargs, debug)
  closed, hoisted = hoist_consts(ClosedJaxpr(jaxpr, consts))
  return closed, hoisted, flat, out_tree


# ---- named_call
named_call_p = Primitive("named_call")
named_call_p.multiple_results = True
named_call_p.def_effectful_abstract_eval(_call_abstract_eval)
named_call_p.def_impl(_call_impl)
register_call_rules(named_call_p)
pretty.pp_rules[named_call_p] = _pp_call
mlir.register_lowering(named_call_p, lambda ctx, *args, jaxpr, name: mlir.call_lowered_function(
    ctx, name, jaxpr, *args))


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
  """`fun`, whose operations are named `name` in the name stack (JAX's `named_call`, a
  `named_scope` around each call: no equation, no separate trace, so Python side effects
  of `fun`, such as a module storing its parameters, behave as in `fun` itself)."""
  name = name or getattr(fun, "__name__", "named_call")

  @wraps(fun)
  def wrapped(*args, **kwargs):
    with named_scope(name):
      return fun(*args, **kwargs)
  return wrapped


def staged_call(fun: Callable, *, name: str) -> Callable:
  """`fun`, appearing as one `named_call` equation (and one named function when lowered)."""

  @wraps(fun)
  def wrapped(*args, **kwargs):
    # Python values stay Python values inside (JAX's named_call only names a scope), so
    # `if flag:` on a Python bool argument works; arrays and tracers are staged
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    dynamic = [isinstance(x, (Tracer, np.ndarray, np.generic)) or hasattr(x, "aval")
               for x in leaves]

    def dyn_fun(*dyn):
      it = iter(dyn)
      a, k = tree.unflatten([next(it) if d else x for x, d in zip(leaves, dynamic)])
      return fun(*a, **k)

    closed, consts, flat, out_tree = _stage_fun(
        dyn_fun, [x for x, d in zip(leaves, dynamic) if d], {})
    outs = named_call_p.bind(*consts, *flat, jaxpr=closed, name=name)
    return out_tree.unflatten(outs)
  return wrapped


# ---- checkpoint_name: the identity, naming a value for checkpoint policies
name_p = Primitive("name")
name_p.def_abstract_eval(lambda x, *, name: x)
mlir.register_lowering(name_p, lambda ctx, x, *, name: x)
ad.deflinear(name_p, lambda ct, *, name: [name_p.bind(ct, name=name)])
batching.defvectorized(name_p)


def checkpoint_name(x, name: str):
  """`x`, named `name` so that a `checkpoint` policy (`save_only_these_names`, ...) can choose
  to save it rather than recompute it."""
  return tree_util.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


# ---- checkpoint / remat
remat_p = Primitive("checkpoint")
remat_p.multiple_results = True
remat_p.def_effectful_abstract_eval(_call_abstract_eval)
remat_p.def_impl(_call_impl)
pretty.pp_rules[remat_p] = _pp_call


# `prevent_cse` is a bool, or one bool per operand; each rule below that changes the
# operands says which of the new ones the flags cover (hoisted constants never are).
def _cse_params(prevent_cse, flags):
  """`fix_params` for the call rules: `flags` are the new operands' flags after the
  hoisted constants that the rule puts first."""
  if isinstance(prevent_cse, bool):
    return lambda params, n: params
  return lambda params, n: dict(params, prevent_cse=(False,) * (n - len(flags)) + tuple(flags))


def _remat_jvp(primals, tangents, *, prevent_cse, **params):
  nonzeros = sum(type(t) is not ad.Zero and not ad.is_float0(t) for t in tangents)
  flags = () if isinstance(prevent_cse, bool) else (*prevent_cse, *(True,) * nonzeros)
  return call_jvp_rule(remat_p, _cse_params(prevent_cse, flags))(
      primals, tangents, prevent_cse=prevent_cse, **params)


def _remat_batch(args, dims, *, prevent_cse, **params):
  return call_batching_rule(remat_p, _cse_params(prevent_cse, prevent_cse))(
      args, dims, prevent_cse=prevent_cse, **params)


# (its transpose recomputes the primal part, split off by partial evaluation, then
# transposes the rest: the staged recomputation holds non-linear equations, loops included)
def _remat_transpose(cts, *args, jaxpr, prevent_cse, **params):
  nonzero = [type(ct) is not ad.Zero for ct in cts]
  if not all(nonzero):  # what only outputs without a cotangent need is dropped
    jaxpr = _memo(_outputs_only, jaxpr, nonzero)
    cts = [ct for ct, nz in zip(cts, nonzero) if nz]
  flags = () if isinstance(prevent_cse, bool) else (
      *(f for f, x in zip(prevent_cse, args) if not ad.is_undefined_primal(x)),
      *(True,) * len(cts))
  return call_transpose_rule(remat_p, _cse_params(prevent_cse, flags), split=True)(
      cts, *args, jaxpr=jaxpr, prevent_cse=prevent_cse, **params)


def _outputs_only(closed: ClosedJaxpr, used) -> ClosedJaxpr:
  return pe.dce_closed_jaxpr(closed, used, instantiate=True)[0]


ad.primitive_jvps[remat_p] = _remat_jvp
batching.primitive_batchers[remat_p] = _remat_batch
ad.primitive_transposes[remat_p] = _remat_transpose


def _remat_lowering(ctx, *args, jaxpr, prevent_cse=True, differentiated=False, **params):
  """The body inline; in a recomputation (`differentiated`), the operands that
  `prevent_cse` marks first go through one `optimization_barrier`, so that XLA cannot
  merge the recomputation with the forward pass's equal computations (as JAX lowers it)."""
  flags = _cse_flags(prevent_cse, len(args))
  if differentiated and any(flags):
    barred = iter(emit_optimization_barrier([a for a, f in zip(args, flags) if f]))
    args = [next(barred) if f else a for a, f in zip(args, flags)]
  return mlir.lower_call_inline(ctx, jaxpr, *args)


def _cse_flags(prevent_cse, n: int) -> tuple:
  if isinstance(prevent_cse, bool):
    return (prevent_cse,) * n
  if len(prevent_cse) != n:
    raise ValueError(f"checkpoint's prevent_cse has {len(prevent_cse)} flags for {n} "
                     "operands: a rule that changed its operands did not update it")
  return tuple(prevent_cse)


mlir.register_lowering(remat_p, _remat_lowering)

# How reverse mode treats a known equation with effects inside `checkpoint` (the debug
# callbacks and taps register one): see `pe.remat_effect_rules`.
remat_effect_rules = pe.remat_effect_rules


def _inline_checkpoints(jaxpr: Jaxpr) -> Jaxpr:
  """`jaxpr` with its `checkpoint` equations (a nested checkpoint's known part, which runs
  once, now) replaced by their bodies, as JAX's known jaxpr shows them."""
  if not any(e.primitive is remat_p for e in jaxpr.eqns):
    return jaxpr
  sub: dict = {}
  read = lambda a: sub.get(a, a) if type(a) is Var else a
  eqns = []

  def emit(eqn, inlined):
    invars = list(map(read, eqn.invars))
    if eqn.primitive is remat_p and not eqn.params["jaxpr"].consts:
      body = eqn.params["jaxpr"].jaxpr
      sub.update(zip(body.invars, invars))
      for e in body.eqns:
        emit(e, True)
      sub.update(zip(eqn.outvars, map(read, body.outvars)))
      return
    outvars = eqn.outvars
    if inlined:  # fresh variables: one body may be inlined twice
      outvars = [type(v)(v.aval) for v in eqn.outvars]
      sub.update(zip(eqn.outvars, outvars))
    eqns.append(eqn.replace(invars=invars, outvars=outvars))

  for eqn in jaxpr.eqns:
    emit(eqn, False)
  return Jaxpr(jaxpr.constvars, jaxpr.invars, list(map(read, jaxpr.outvars)), eqns)


def _remat_partial_eval(trace, args, *, jaxpr, policy, **params):
  check_allowed(jaxpr.effects, "remat", "partial-eval of `checkpoint`/`remat`")
  closed, consts = hoist_consts(jaxpr)
  args = [*consts, *args]
  unknowns = [trace.owns(x) for x in args]
  # The policy reaches into the equations holding jaxprs (a `cond`, `scan`, `jit` or a
  # nested `checkpoint`, whose own policy the outer one overrides, as in JAX): their rules
  # in `pe.partial_eval_jaxpr_custom_rules` split them under it.
  known, staged, out_uk, out_inst, n_res = pe.partial_eval_jaxpr_custom(
      closed.jaxpr, unknowns, True, False, False, policy or nothing_saveable)
  staged, used_staged = pe.dce_jaxpr(
      staged, [uk for uk, inst in zip(out_uk, out_inst) if inst])
  used_res, used_ins = used_staged[:n_res], used_staged[n_res:]
  n_known_outs = out_uk.count(False)
  known, used_known = pe.dce_jaxpr(known, [True] * n_known_outs + used_res)
  n_res = sum(used_res)
  staged_known = [uk for uk, u in zip(unknowns, used_ins) if u]
  _log_residuals(known, n_res, staged,
                 [v for v, uk in zip(staged.invars[n_res:], staged_known) if not uk])
  known = _round_residuals(known, n_res)
  known_args = [x for x, uk in zip(args, unknowns) if not uk]
  with set_current_trace(trace.parent):
    known_outs = eval_jaxpr(_inline_checkpoints(known), [],
                            *(x for x, u in zip(known_args, used_known) if u))
  residuals = known_outs[n_known_outs:]
  known_outs = iter(known_outs[:n_known_outs])
  if not any(out_uk) and not must_keep(staged.effects):
    return list(known_outs)
  cse = params.get("prevent_cse", True)
  if not isinstance(cse, bool):  # the constants are not marked, the residuals are
    cse = (False,) * len(consts) + tuple(cse)
    params = dict(params, prevent_cse=(*(True,) * n_res,
                                       *(f for f, u in zip(cse, used_ins) if u)))
  # `differentiated` marks the recomputation (as JAX does): effect handlers replay it.
  staged_args = [*residuals, *(x for x, u in zip(args, used_ins) if u)]
  unknown_outs = iter(trace.stage(remat_p, staged_args,
                                  dict(params, policy=policy, jaxpr=ClosedJaxpr(staged, []),
                                       differentiated=True)))
  return [next(unknown_outs) if uk else next(known_outs) for uk in out_uk]


pe.partial_eval_rules[remat_p] = _remat_partial_eval
# Inside another `checkpoint`'s partial evaluation: split under the outer policy, the known
# part one `checkpoint` equation of the known jaxpr, the staged part the recomputation.
def _remat_custom_params(known, staged, unks_in, inst_in, num_res):
  cse = known.get("prevent_cse", True)
  if not isinstance(cse, bool):  # one flag per operand: the residuals are marked
    known = dict(known, prevent_cse=tuple(f for f, uk in zip(cse, unks_in) if not uk))
    staged = dict(staged, prevent_cse=(*(True,) * num_res,
                                       *(f for f, i in zip(cse, inst_in) if i)))
  return known, dict(staged, differentiated=True)


def _remat_dce(used_outputs, eqn):
  used_inputs, new = call_dce_rule(used_outputs, eqn)
  cse = eqn.params.get("prevent_cse", True)
  if new is not None and not isinstance(cse, bool):
    new = new.replace(params=dict(new.params, prevent_cse=tuple(
        f for f, u in zip(cse, used_inputs) if u)))
  return used_inputs, new


pe.partial_eval_jaxpr_custom_rules[remat_p] = pe.call_partial_eval_custom_rule(
    _remat_custom_params)
pe.dce_rules[remat_p] = _remat_dce
pe.partial_eval_jaxpr_custom_rules[named_call_p] = pe.call_partial_eval_custom_rule()


def _round_residuals(known: Jaxpr, n_res: int) -> Jaxpr:
  """`known` with each float residual that it also reads itself rounded to its dtype
  (`reduce_precision`) where it is made: XLA may keep such a value in higher precision
  inside the forward pass, and the backward pass must see the bits the forward pass used."""
  res = known.outvars[len(known.outvars) - n_res:]
  read = {a for e in known.eqns for a in e.invars if type(a) is Var}
  todo = [v for v in dict.fromkeys(res) if type(v) is Var and v in read
          and isinstance(v.aval, ShapedArray) and dtypes.is_float(v.aval.dtype)]
  if not todo:
    return known
  invars, eqns = list(known.invars), list(known.eqns)
  for v in todo:
    info = ml_dtypes.finfo(v.aval.dtype)
    params = dict(exponent_bits=info.nexp, mantissa_bits=info.nmant)
    unrounded = Var(v.aval)
    if v in invars:
      invars[invars.index(v)] = unrounded
      at = 0
    else:
      at = next(i for i, e in enumerate(eqns) if v in e.outvars)
      eqn = eqns[at]
      if eqn.primitive is reduce_precision_p and eqn.params == params:
        continue
      eqns[at] = eqn.replace(outvars=[unrounded if o is v else o for o in eqn.outvars])
      at += 1
    eqns.insert(at, JaxprEqn([unrounded], [v], reduce_precision_p, params,
                             no_effects, None))
  return Jaxpr(known.constvars, invars, known.outvars, eqns)


def _log_residuals(known: Jaxpr, n_res: int, staged: Jaxpr, known_inputs) -> None:
  """Logs what a checkpoint saves: those of `known_inputs` (inputs of `staged`) that the
  recomputation `staged` reads, and the `n_res` residuals that `known` computes (logger
  `minijax.lax.remat`: DEBUG, or WARNING under config `log_checkpoint_residuals`)."""
  level = logging.WARNING if config.log_checkpoint_residuals else logging.DEBUG
  if not logger.isEnabledFor(level):
    return
  read = {a for e in staged.eqns for a in e.invars if type(a) is Var}
  inputs = [v.aval.str_short() for v in known_inputs if v in read]
  residuals = [(aval.str_short(), source) for aval, source in
               saved_residuals_of(known, known.outvars[len(known.outvars) - n_res:])]
  message = ("remat-decorated function " + "saving inputs with shapes:\n" * bool(inputs)
             + "  %s\n" * len(inputs) + "and " * bool(inputs and residuals)
             + "saving these intermediates:\n" * bool(residuals)
             + "  %s from %s\n" * len(residuals))
  logger.log(level, message, *inputs, *(x for pair in residuals for x in pair))


def saved_residuals_of(jaxpr: Jaxpr, values, arg_names=None) -> list[tuple]:
  """`(aval, where it comes from)` for each of `values` (outputs of `jaxpr`), in JAX's
  words and order: literals, constants, arguments (named by `arg_names`), then outputs of
  equations in order ("output of sin from f.py:3 (f)", "named 'h' from ...").  A value
  rounded by `reduce_precision` (as residuals are) counts as the value rounded."""
  rounded = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns if e.primitive is reduce_precision_p}
  wanted = {rounded.get(v, v) for v in values if type(v) is Var}
  found = [(v.aval, "from a literal") for v in values if type(v) is not Var]
  found += [(v.aval, "from a constant") for v in jaxpr.constvars if v in wanted]
  for i, v in enumerate(jaxpr.invars):
    if v in wanted:
      name = arg_names[i] if arg_names else None
      found.append((v.aval, f"from the argument {name}" if name else
                    f"from the argument at flattened index {i}"))
  for eqn in jaxpr.eqns:
    where = eqn.source_info or "an unknown location"
    for v in eqn.outvars:
      if v not in wanted:
        continue
      if eqn.primitive is name_p:
        found.append((v.aval, f"named '{eqn.params['name']}' from {where}"))
      elif eqn.primitive.name == "jit":
        found.append((v.aval, f"output of jitted function '{eqn.params['name']}' from {where}"))
      else:
        found.append((v.aval, f"output of {eqn.primitive.name} from {where}"))
  return found


def checkpoint(fun: Callable, *, prevent_cse: bool | tuple = True, policy=None,
               static_argnums=(), static_argnames=(), concrete: bool = False) -> Callable:
  """`fun`, whose intermediate values reverse-mode differentiation recomputes in the
  backward pass instead of saving, except those `policy(prim, *avals, **params)` allows
  to be saved (`checkpoint_policies`; by default nothing is saved).

  `prevent_cse` (a bool, or a tuple of them: a pytree prefix of the arguments) says which
  inputs of the recomputation go through an `optimization_barrier` when it is compiled,
  so that XLA cannot merge it with the forward pass (the residuals always do)."""
  if policy is not None and not callable(policy):
    raise TypeError(f"checkpoint's policy must be a callable such as "
                    f"checkpoint_policies.nothing_saveable, got {policy!r}")
  if isinstance(prevent_cse, (list, tuple)):
    prevent_cse = tuple(prevent_cse)
  elif not isinstance(prevent_cse, (bool, np.bool_)):
    raise TypeError(f"prevent_cse must be a bool or tuple of bools, got "
                    f"type(prevent_cse)={type(prevent_cse)}")
  else:
    prevent_cse = bool(prevent_cse)
  if concrete:
    raise TypeError("The `concrete` option to checkpoint has been removed (as in JAX); "
                    "mark the arguments that Python control flow reads as static_argnums")
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
  static_argnames = ((static_argnames,) if isinstance(static_argnames, str)
                     else tuple(static_argnames))
  if static_argnames:
    signature = inspect.signature(fun)
    names = list(signature.parameters)
    static_argnums += tuple(names.index(n) for n in static_argnames if n in names)

  @wraps(fun)
  def wrapped(*args, **kwargs):
    if static_argnames and kwargs:
      bound = inspect.signature(fun).bind(*args, **kwargs)
      args, kwargs = bound.args, bound.kwargs
    static = {i: args[i] for i in static_argnums if i < len(args)}
    dyn = [a for i, a in enumerate(args) if i not in static]

    def dyn_fun(*dyn_args, **kw):
      it = iter(dyn_args)
      return fun(*(static[i] if i in static else next(it) for i in range(len(args))), **kw)

    closed, consts, flat, out_tree = _stage_cached(fun, dyn_fun, static, dyn, kwargs)
    cse = prevent_cse
    if isinstance(cse, tuple):
      cse = (False,) * len(consts) + _cse_of_args(cse, tuple(dyn), kwargs)
    if jaxpr_has_state(closed.jaxpr):  # refs: read before, written once after, never replayed
      from minijax.lax.control_flow import refs
      cse = cse if isinstance(cse, bool) else any(cse)  # (refs change the operands)
      outs = refs.call_with_refs([closed], [*consts, *flat], "checkpoint", lambda pure, ops:
                                 remat_p.bind(*ops, jaxpr=pure[0], prevent_cse=cse,
                                              differentiated=False, policy=policy))
      return out_tree.unflatten(outs)
    outs = remat_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=cse, differentiated=False,
                        policy=policy)
    return out_tree.unflatten(outs)
  return wrapped


remat = checkpoint


def _cse_of_args(prevent_cse: tuple, args: tuple, kwargs: dict) -> tuple:
  """One flag per flattened argument: `prevent_cse` is a pytree prefix of `args` (of
  `(args, kwargs)` when there are keyword arguments), as in JAX."""
  full = (args, kwargs) if kwargs else args
  try:
    subtrees = tree_util.tree_structure(prevent_cse).flatten_up_to(full)
  except (ValueError, TypeError) as e:
    raise ValueError(f"checkpoint's prevent_cse={prevent_cse!r} must be a pytree prefix of "
                     f"the arguments{' (args, kwargs)' if kwargs else ''}: {e}") from None
  return tuple(bool(f) for f, sub in zip(tree_util.tree_leaves(prevent_cse), subtrees)
               for _ in range(tree_util.tree_structure(sub).num_leaves))

# the flags that change what tracing produces
_TRACE_FLAGS = ("enable_x64", "numpy_dtype_promotion", "numpy_rank_promotion",
                "default_matmul_precision")
# (fun, key) -> a box holding that trace once made (see the module docstring)
_traces = caches.WeakLRU(lambda fun, key: {}, "transform_cache_size")


def _debug_info(fun, static, dyn, kwargs):
  positions = iter(dyn)
  named = [None if i in static else next(positions) for i in range(len(dyn) + len(static))]
  return debug_info("checkpoint / remat", fun, named, kwargs)


def _stage_cached(fun, dyn_fun, static, dyn, kwargs):
  flat, in_tree = tree_util.tree_flatten((tuple(dyn), kwargs))
  try:
    key = (tuple(sorted(static.items())), in_tree,
           tuple((a, getattr(a, "weak_type", False)) for a in map(get_aval, flat)),
           tuple(getattr(config, name) for name in _TRACE_FLAGS))
    box = _traces(fun, key)
  except TypeError:  # not weakly referenceable, or a static argument that cannot be hashed
    return _stage_fun(dyn_fun, dyn, kwargs, _debug_info(fun, static, dyn, kwargs))
  if "trace" in box:
    closed, consts, out_tree = box["trace"]
    return closed, consts, flat, out_tree
  closed, consts, flat, out_tree = _stage_fun(dyn_fun, dyn, kwargs,
                                              _debug_info(fun, static, dyn, kwargs))
  if not any(isinstance(c, Tracer) for c in consts):
    box["trace"] = (closed, consts, out_tree)
  return closed, consts, flat, out_tree


# ---- policies: `policy(prim, *avals, **params)` says whether an output may be saved
def everything_saveable(prim, *avals, **params) -> bool:
  return True


def nothing_saveable(prim, *avals, **params) -> bool:
  return False


def dots_saveable(prim, *avals, **params) -> bool:
  return prim.name == "dot_general"


def dots_with_no_batch_dims_saveable(prim, *avals, **params) -> bool:
  if prim.name != "dot_general":
    return False
  (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
  return not lhs_batch and not rhs_batch


def save_only_these_names(*names: str):
  names = frozenset(names)
  return lambda prim, *avals, **params: prim is name_p and params["name"] in names


def save_any_names_but_these(*names: str):
  names = frozenset(names)
  return lambda prim, *avals, **params: prim is name_p and params["name"] not in names


def save_from_both_policies(policy_1, policy_2):
  return lambda prim, *avals, **params: (policy_1(prim, *avals, **params)
                                         or policy_2(prim, *avals, **params))


class checkpoint_policies:
  """JAX's checkpoint policies, for `checkpoint(policy=...)`."""
  everything_saveable = staticmethod(everything_saveable)
  nothing_saveable = staticmethod(nothing_saveable)
  dots_saveable = checkpoint_dots = staticmethod(dots_saveable)
  dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = staticmethod(
      dots_with_no_batch_dims_saveable)
  save_only_these_names = staticmethod(save_only_these_names)
  save_any_names_but_these = staticmethod(save_any_names_but_these)
  save_from_both_policies = staticmethod(save_from_both_policies)
