"""Staging Python functions into jaxprs, and splitting jaxprs into known and unknown parts.

`DynamicJaxprTrace` records every primitive applied to its tracers as an equation, in
program order, so effects keep their order.  A value that is not one of its tracers is a
constant: Python scalars and 0-d numpy values become inline literals, anything else (an
Array, a numpy array, a tracer of an enclosing transformation) becomes a constant variable
of the jaxpr, with the value returned alongside so the caller can close over it.

Partial evaluation (`JaxprTrace`, a staging trace) splits a computation into the part that
can run now, from known values, and the part that must wait for unknown ones.  It is how
`linearize`/`vjp` separate the primal computation from the linear tangent computation, and
`partial_eval_jaxpr` applies it to a whole jaxpr (for `jit_p` and control flow).

`partial_eval_jaxpr_custom` splits a jaxpr equation by equation under a policy, as
`checkpoint` needs: known equations the policy does not let save are staged again, to be
recomputed from the known inputs; equations holding jaxprs (`cond`, `scan`, calls) split
themselves by their rules in `partial_eval_jaxpr_custom_rules`, so the policy reaches
inside them.  `dce_jaxpr` removes unused equations, keeping every equation that has
effects; the rules in `dce_rules` prune the unused outputs inside calls and control flow.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from minijax.tree_util import internal as tree_util
from minijax.api_util import DebugInfo, fun_sourceinfo
from minijax.config import config
from minijax.core import avals as avals_lib
from minijax.core import dtypes
from minijax.core.effects import must_keep
from minijax.interpreters.ad import creates_tangent_ref
from minijax.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var,
                                literalable, user_source_info,
                                current_name_stack)
from minijax.core.jaxpr import eval_jaxpr, typecheck_jaxpr
from minijax.core.trace import Trace, Tracer, check_no_leaks, new_trace, set_current_trace
from minijax.core import trace as trace_lib


class DynamicJaxprTracer(Tracer):
  __slots__ = ("_aval", "_var", "_debug_name")

  def __init__(self, trace, aval, var, debug_name=None):
    self._trace = trace
    self._aval = aval
    self._var = var
    self._debug_name = debug_name

  def __repr__(self):  # (JAX's name)
    return f"JitTracer({self.aval})"

  @property
  def aval(self):
    return self._aval

  @property
  def _debug_info(self):
    """The `DebugInfo` of the function being traced (JAX's tracers carry it too)."""
    return getattr(self._trace, "debug_info", None)

  def _origin_msg(self) -> str:
    """JAX's words for where this value came from: the function being traced, and the
    arguments it depends on (or, when it depends on none, the lines that made it)."""
    debug = self._debug_info
    if debug is None or not hasattr(self._trace, "eqns"):
      return ""
    positions, made_by = self._trace.progenitors(self._var)
    origin = (f"The error occurred while tracing the function {debug.func_src_info} for "
              f"{debug.traced_for}. ")
    if positions:
      names = debug.arg_names
      if names is None or len(names) != len(self._trace.invars):
        return ""
      named = [names[i] or f"flat argument {i}" for i in positions]
      listed = (named[0] if len(named) == 1 else " and ".join(named) if len(named) == 2
                else f"{', '.join(named[:-1])}, and {named[-1]}")
      origin += ("This concrete value was not available in Python because it depends on the "
                 f"value{'s' if len(named) > 1 else ''} of the argument"
                 f"{'s' if len(named) > 1 else ''} {listed}.")
    elif made_by:
      lines = [f"  operation {eqn.primitive.name} from line {eqn.source_info.file}:"
               f"{eqn.source_info.line} ({eqn.source_info.function})"
               for eqn in made_by[:5] if eqn.source_info is not None]
      origin += ("This value became a tracer due to JAX operations on these lines:\n\n"
                 + "\n\n".join(lines))
      if len(made_by) > 5:
        origin += "\n\n(Additional originating lines are not shown.)"
    return "\n" + origin


def _check_value(x) -> None:
  if isinstance(x, (Tracer, bool, int, float, complex, np.ndarray, np.generic)):
    return
  if hasattr(x, "aval") or (hasattr(x, "shape") and hasattr(x, "dtype")):
    return
  if type(x) in avals_lib.pytype_aval_mappings:  # a Token, or a type a library registered
    return
  raise TypeError(
      f"Argument '{x!s:.60}' of type {type(x)} is not a valid JAX type; "
      "arguments and results must be arrays, numpy arrays or Python scalars (or pytrees "
      "of them). Mark non-array arguments static with `static_argnums`.")


class InvalidOutputError(TypeError):
  """A traced function returned something that is not an array (a function, an enum, ...).
  `named(debug_info, out_tree)` words it as JAX does, with the function's source, what it
  was traced for and the output's key path."""

  def __init__(self, index: int, value, fun_src: str | None = None, path: str | None = None,
               traced_for: str | None = None):
    self.index, self.value = index, value
    where = (f" at output component {path}" if path else "" if path == ""
             else f" at flat output {index}")
    traced = f" traced for {traced_for}" if traced_for else ""
    super().__init__(
        f"function {fun_src or 'being traced'}{traced} returned a value of type "
        f"{type(value)}{where}, which is not a valid JAX type\nFunctions must return arrays, "
        "numpy arrays or Python scalars (or pytrees of them).")

  def named(self, debug_info, out_tree, fun=None, traced_for: str = "") -> "InvalidOutputError":
    """Named after `debug_info`, or without one after `fun` (traced for `traced_for`)."""
    if debug_info is None:
      debug_info = DebugInfo(traced_for, fun_sourceinfo(fun), None, None)
    try:
      paths = tree_util.tree_flatten_with_path(out_tree.unflatten(range(out_tree.num_leaves)))[0]
      path = tree_util.keystr(paths[self.index][0])
    except Exception:  # a pytree node that cannot be rebuilt from placeholders
      path = None
    return InvalidOutputError(self.index, self.value, debug_info.func_src_info, path,
                              debug_info.traced_for)


def _invalid_output(outs) -> InvalidOutputError | None:
  for i, x in enumerate(outs):
    try:
      _check_value(x)
    except TypeError:
      return InvalidOutputError(i, x)
  return None


class DynamicJaxprTrace(Trace):
  def __init__(self):
    super().__init__()
    self.invars: list[Var] = []
    self.eqns: list[JaxprEqn] = []
    self.constvars: list[Var] = []
    self.consts: list[Any] = []
    self._const_var_by_id: dict[int, Var] = {}
    self._names_within = current_name_stack()  # equations record the names entered since
    self.debug_info = None  # the traced function's (`trace_to_jaxpr_dynamic` sets it)

  def progenitors(self, var) -> tuple[list[int], list[JaxprEqn]]:
    """The positions of the inputs `var` depends on, and the equations it came through."""
    needed, made_by = {var}, []
    for eqn in reversed(self.eqns):
      if any(v in needed for v in eqn.outvars):
        made_by.append(eqn)
        needed.update(v for v in eqn.invars if type(v) is Var)
    return [i for i, v in enumerate(self.invars) if v in needed], made_by[::-1]

  def new_arg(self, aval, debug_name=None) -> DynamicJaxprTracer:
    var = Var(aval)
    self.invars.append(var)
    return DynamicJaxprTracer(self, aval, var, debug_name)

  def new_literal(self, x) -> DynamicJaxprTracer:
    """A tracer of a 0-d host constant (`jnp.array(1.0)` under `jit`): traced like any
    other value, but inlined into the jaxpr as a literal (a numpy array of higher rank is
    a constant variable, the same one for the same array)."""
    atom = self.to_atom(x)
    return DynamicJaxprTracer(self, atom.aval, atom)

  def to_atom(self, x) -> Var | Literal:
    if self.owns(x):
      return x._var
    var = self._const_var_by_id.get(id(x))
    if var is not None:
      return var
    _check_value(x)
    if not isinstance(x, Tracer) and literalable(x):
      dtype, weak = dtypes.dtype_and_weak_type(x)
      return Literal(np.asarray(x, dtype) if not weak else x,
                     avals_lib.ShapedArray((), dtype, weak))
    if type(x) is np.ndarray and config.use_simplified_jaxpr_constants:
      x = np.asarray(x, dtypes.canonicalize_dtype(x.dtype))  # (JAX's transitional flag)
      return Literal(x, avals_lib.get_aval(x))
    aval = x.aval if isinstance(x, Tracer) else avals_lib.get_aval(x)
    var = Var(aval)
    self._const_var_by_id[id(x)] = var
    self.constvars.append(var)
    self.consts.append(x)
    return var

  def process_primitive(self, primitive, args, params):
    if trace_lib._context.eager_constant_folding and not any(isinstance(x, Tracer) for x in args):
      with set_current_trace(trace_lib.eval_trace()):
        return primitive.bind(*args, **params)
    in_atoms = [self.to_atom(x) for x in args]
    out_avals, effects = primitive.abstract_eval(*(a.aval for a in in_atoms), **params)
    if isinstance(out_avals, (tuple, list)) != primitive.multiple_results:
      raise ValueError(f"{primitive}.abstract_eval() method should return a tuple or a list "
                       f"of avals when {primitive}.multiple_results is set, and one aval when "
                       f"it is not; it returned {out_avals!r:.100}")
    if primitive.multiple_results:
      out_tracers = [DynamicJaxprTracer(self, a, Var(a)) for a in out_avals]
    else:
      out_tracers = [DynamicJaxprTracer(self, out_avals, Var(out_avals))]
    self.eqns.append(JaxprEqn(in_atoms, [t._var for t in out_tracers], primitive, params,
                              effects, user_source_info(self._names_within)))
    return out_tracers if primitive.multiple_results else out_tracers[0]

  def to_jaxpr(self, outs: Sequence[Any], debug_info=None) -> tuple[Jaxpr, list[Any]]:
    out_atoms = [self.to_atom(x) for x in outs]
    jaxpr = Jaxpr(self.constvars, self.invars, out_atoms, self.eqns, debug_info=debug_info)
    return jaxpr, list(self.consts)


def trace_to_jaxpr_dynamic(fun: Callable, in_avals: Sequence[Any],
                           debug_info=None) -> tuple[Jaxpr, list[Any]]:
  """Stages `fun(*flat_args) -> flat_outs` into a jaxpr and its constants."""
  trace = DynamicJaxprTrace()
  trace.debug_info = debug_info
  with new_trace(trace):
    names = getattr(debug_info, "arg_names", None)
    if names is None or len(names) != len(in_avals):  # (a library's names of another count)
      names = [None] * len(in_avals)
    in_tracers = [trace.new_arg(a, n) for a, n in zip(in_avals, names)]
    outs = fun(*in_tracers)
    try:
      jaxpr, consts = trace.to_jaxpr(list(outs), debug_info)
    except TypeError:
      error = _invalid_output(outs)
      if error is None:
        raise
      raise error from None
  del in_tracers, outs
  check_no_leaks(trace)
  if config.enable_checks:
    typecheck_jaxpr(jaxpr)
  return jaxpr, consts


def trace_pytree_fun(fun: Callable, args: Sequence[Any], kwargs: dict | None = None,
                     debug_info=None):
  """Stages `fun(*args, **kwargs)`, whose arguments and result are pytrees.  Returns the
  jaxpr over the flat leaves, its constants, the flat arguments and the output tree; a
  `debug_info` given gets the result paths."""
  flat, in_tree = tree_util.tree_flatten((tuple(args), kwargs or {}))
  flat_fun, out_tree = tree_util.flatten_fun(fun, in_tree)
  try:
    jaxpr, consts = trace_to_jaxpr_dynamic(flat_fun, [avals_lib.get_aval(x) for x in flat],
                                           debug_info)
  except InvalidOutputError as e:
    raise e.named(debug_info, out_tree(), fun) from None
  if debug_info is not None:
    jaxpr.debug_info = debug_info.set_result_paths(out_tree())
  return jaxpr, consts, flat, out_tree()


def trace_to_closed_jaxpr(fun: Callable, in_avals: Sequence[Any], debug_info=None) -> ClosedJaxpr:
  jaxpr, consts = trace_to_jaxpr_dynamic(fun, in_avals, debug_info)
  return ClosedJaxpr(jaxpr, consts)


# ----------------------------------------------------------------------------- partial evaluation

PartialEvalRule = Callable[..., Any]
# partial_eval_rules[p](trace, args, **params) -> outputs: for primitives (call-like ones)
# that can split themselves into a known part, bound on trace.parent, and an unknown part,
# staged with trace.stage(...).  Without a rule an operation with an unknown input is
# staged whole.
partial_eval_rules: dict[Any, PartialEvalRule] = {}


class JaxprTrace(DynamicJaxprTrace):
  """Partial evaluation.  Known values are ordinary values of the parent trace (not this
  trace's tracers); unknown values are this trace's tracers.  An operation whose inputs are
  all known is bound on the parent at once, effects included (so a tap on primals fires
  in the forward pass); one with an unknown input is recorded into the jaxpr of the
  unknown part, whose constants (the known values it reads) are the residuals."""

  def process_primitive(self, primitive, args, params):
    if not any(self.owns(x) for x in args) and not creates_tangent_ref(params):
      with set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    rule = partial_eval_rules.get(primitive)
    if rule is not None:
      return rule(self, args, **params)
    return self.stage(primitive, args, params)

  def stage(self, primitive, args, params):
    return DynamicJaxprTrace.process_primitive(self, primitive, args, params)

  def is_known(self, x) -> bool:
    return not self.owns(x)


def _broadcast(flags, n):
  return [bool(flags)] * n if isinstance(flags, bool) else list(flags)


def partial_eval_jaxpr_nounits(closed: ClosedJaxpr, unknowns: Sequence[bool],
                               instantiate: bool | Sequence[bool]):
  """Splits `closed` into the part computable from the known inputs and the rest.

  Returns `(jaxpr_known, jaxpr_unknown, out_unknowns, res_avals)`:
    jaxpr_known:   [*known inputs]              -> [*known outputs, *residuals]
    jaxpr_unknown: [*residuals, *unknown inputs] -> [*unknown outputs]
  both ClosedJaxprs.  An output is unknown when it depends on an unknown input or
  `instantiate` (bool or one per output) forces it.  Effectful equations whose inputs are
  all known stay in `jaxpr_known`; the others go to `jaxpr_unknown`.
  """
  instantiate = _broadcast(instantiate, len(closed.out_avals))
  box = {}

  def known_fun(*known_ins):
    trace = JaxprTrace()
    with new_trace(trace):
      it = iter(known_ins)
      ins = [trace.new_arg(a) if uk else next(it) for a, uk in zip(closed.in_avals, unknowns)]
      outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
      out_uk = [trace.owns(o) or inst for o, inst in zip(outs, instantiate)]
      jaxpr_uk, residuals = trace.to_jaxpr([o for o, uk in zip(outs, out_uk) if uk])
    box["uk"], box["out_uk"] = jaxpr_uk, out_uk
    return [*(o for o, uk in zip(outs, out_uk) if not uk), *residuals]

  known_avals = [a for a, uk in zip(closed.in_avals, unknowns) if not uk]
  jaxpr_k, consts_k = trace_to_jaxpr_dynamic(known_fun, known_avals)
  jaxpr_uk = box["uk"]
  res_avals = [v.aval for v in jaxpr_uk.constvars]
  jaxpr_uk = Jaxpr([], [*jaxpr_uk.constvars, *jaxpr_uk.invars], jaxpr_uk.outvars,
                   jaxpr_uk.eqns, jaxpr_uk.effects)
  return (ClosedJaxpr(jaxpr_k, consts_k), ClosedJaxpr(jaxpr_uk, []), box["out_uk"], res_avals)


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False):
  """Like `partial_eval_jaxpr_nounits`, returning the number of residuals last:
  `(jaxpr_known, jaxpr_unknown, out_unknowns, num_res)`."""
  known, unknown, out_uk, res_avals = partial_eval_jaxpr_nounits(closed, unknowns, instantiate)
  return known, unknown, out_uk, len(res_avals)


# ----------------------------------------------------------------------------- by a policy

Saveable = Callable[..., bool]
# partial_eval_jaxpr_custom_rules[p](saveable, unks_in, inst_in, eqn) ->
#   (known_eqns, staged_eqns, unks_out, inst_out, residuals): how an equation holding
# jaxprs (a call, a `cond`, a `scan`) splits, letting `saveable` reach inside it.
# `residuals` are the known variables the staged equations read that were not yet
# instantiated (available to the staged side); they become outputs of the known jaxpr.
PartialEvalCustomRule = Callable[..., tuple[list, list, list, list, list]]
partial_eval_jaxpr_custom_rules: dict[Any, PartialEvalCustomRule] = {}
# How a known equation with effects that must be kept is split (the debug callbacks register
# one; without a rule it runs once, now): `rule(saveable, inputs_recomputed, params) ->
# (run now, run again in the staged part)`, where `saveable` is the policy's answer for the
# equation, `inputs_recomputed` says whether the staged part has all its inputs anyway
# (instantiated) and `params` are the equation's.
remat_effect_rules: dict[Any, Callable[[bool, bool, dict], tuple[bool, bool]]] = {}


def partial_eval_jaxpr_custom(jaxpr: Jaxpr, in_unknowns: Sequence[bool],
                              in_inst: bool | Sequence[bool],
                              ensure_out_unknowns: bool | Sequence[bool],
                              ensure_out_inst: bool | Sequence[bool], saveable: Saveable):
  """Splits `jaxpr` equation by equation, under a policy (how `checkpoint` is
  differentiated).  A value is *unknown* when it depends on an unknown input, and
  *instantiated* when the staged jaxpr has it (an instantiated input; a value it computes).

  An equation with an unknown input is staged; its known, not instantiated inputs become
  residuals.  One whose inputs are all known runs in the known jaxpr; when
  `saveable(prim, *in_avals, **params)` allows (or it has effects that must be kept) its
  outputs are saved (residuals, if the staged side reads them), else it is staged too, to
  be recomputed.  Equations with a rule in `partial_eval_jaxpr_custom_rules` split
  themselves, so the policy reaches into them.

  Returns `(jaxpr_known, jaxpr_staged, out_unknowns, out_inst, num_res)`:
    jaxpr_known:  [*known inputs] -> [*known outputs, *residuals]
    jaxpr_staged: [*residuals, *instantiated inputs] -> [*instantiated outputs]
  Both keep `jaxpr`'s constvars.
  """
  in_inst = _broadcast(in_inst, len(jaxpr.invars))
  ensure_out_unknowns = _broadcast(ensure_out_unknowns, len(jaxpr.outvars))
  ensure_out_inst = _broadcast(ensure_out_inst, len(jaxpr.outvars))
  env: dict[Var, tuple[bool, bool]] = {}
  residuals: dict[Var, None] = {}  # an ordered set

  def read(a) -> tuple[bool, bool]:
    return env[a] if type(a) is not Literal else (False, True)

  def instantiate(inst, a) -> None:
    if type(a) is not Literal and not inst:
      residuals[a] = None

  env.update(zip(jaxpr.invars, zip(in_unknowns, in_inst)))
  env.update((v, (False, True)) for v in jaxpr.constvars)
  known_eqns, staged_eqns = [], []
  renamed: dict[Var, Any] = {}  # outputs of equations split by `_split_by_trace_rule`
  rename = lambda a: renamed.get(a, a) if type(a) is Var else a
  for eqn in jaxpr.eqns:
    if renamed:
      eqn = eqn.replace(invars=list(map(rename, eqn.invars)))
    unks_in = [read(a)[0] for a in eqn.invars]
    inst_in = [read(a)[1] for a in eqn.invars]
    rule = partial_eval_jaxpr_custom_rules.get(eqn.primitive)
    if rule is not None:
      known, staged, unks_out, inst_out, res = rule(saveable, unks_in, inst_in, eqn)
      known_eqns.extend(known)
      staged_eqns.extend(staged)
      residuals.update(dict.fromkeys(res))
      env.update(zip(eqn.outvars, zip(unks_out, inst_out)))
    elif any(unks_in) and eqn.primitive in partial_eval_rules:
      known, staged, res, outs = _split_by_trace_rule(eqn, unks_in)
      known_eqns.extend(known)
      staged_eqns.extend(staged)
      for r in res:
        if r in env:
          instantiate(env[r][1], r)
        else:
          residuals[r] = None
      for outvar, (out, uk) in zip(eqn.outvars, outs):
        renamed[outvar] = out
        if type(out) is Var and out not in env:
          env[out] = (True, True) if uk else (False, False)
    elif any(unks_in):
      for inst, a in zip(inst_in, eqn.invars):
        instantiate(inst, a)
      staged_eqns.append(eqn)
      env.update((v, (True, True)) for v in eqn.outvars)
    else:
      saved = saveable(eqn.primitive, *(a.aval for a in eqn.invars), **eqn.params)
      run_now, run_again = True, not saved
      if must_keep(eqn.effects):
        effect_rule = remat_effect_rules.get(eqn.primitive)
        run_now, run_again = (effect_rule(bool(saved), all(inst_in), eqn.params)
                              if effect_rule else (True, False))
      if run_now:
        known_eqns.append(eqn)
      if not run_again:
        env.update((v, (False, False)) for v in eqn.outvars)
      else:  # recomputed, or run again
        for inst, a in zip(inst_in, eqn.invars):
          instantiate(inst, a)
        staged_eqns.append(eqn)
        env.update((v, (False, True)) for v in eqn.outvars)
  outvars = list(map(rename, jaxpr.outvars))
  out_unknowns = [read(v)[0] or e for v, e in zip(outvars, ensure_out_unknowns)]
  out_inst = []
  for v, e in zip(outvars, ensure_out_inst):
    if e:
      instantiate(read(v)[1], v)
    out_inst.append(read(v)[1] or e)
  res = list(residuals)
  known = jaxpr.replace(invars=[v for v, uk in zip(jaxpr.invars, in_unknowns) if not uk],
                        outvars=[*(v for v, uk in zip(outvars, out_unknowns) if not uk), *res],
                        eqns=known_eqns, effects=None)
  staged = jaxpr.replace(invars=[*res, *(v for v, i in zip(jaxpr.invars, in_inst) if i)],
                         outvars=[v for v, i in zip(outvars, out_inst) if i],
                         eqns=staged_eqns, effects=None)
  return known, staged, out_unknowns, out_inst, len(res)


def _split_by_trace_rule(eqn: JaxprEqn, unks_in: Sequence[bool]):
  """An equation with unknown inputs whose primitive has a `partial_eval_rules` entry but
  no `partial_eval_jaxpr_custom_rules` one (a `custom_jvp_call`), split by that rule: the policy
  does not reach inside it, and its known part's residuals are saved.  Returns
  `(known_eqns, staged_eqns, residuals, outs)`, `outs` holding per output of `eqn` the atom
  that now carries it and whether it is unknown.  Constants the rule made travel as
  literals."""
  ins = [Var(a.aval) for a in eqn.invars]
  closed = ClosedJaxpr(Jaxpr([], ins, eqn.outvars, [eqn.replace(invars=ins)]), [])
  known, unknown, out_uk, num_res = partial_eval_jaxpr(closed, unks_in)
  sub: dict[Any, Any] = dict(zip(known.jaxpr.constvars,
                                 (Literal(c, v.aval) for v, c in zip(known.jaxpr.constvars,
                                                                     known.consts))))
  sub.update(zip(known.jaxpr.invars, (a for a, uk in zip(eqn.invars, unks_in) if not uk)))

  def splice(jaxpr: Jaxpr, eqns: list) -> list:
    read = lambda a: sub.get(a, a) if type(a) is Var else a
    for e in jaxpr.eqns:
      outvars = [Var(v.aval) for v in e.outvars]
      eqns.append(e.replace(invars=list(map(read, e.invars)), outvars=outvars))
      sub.update(zip(e.outvars, outvars))
    return list(map(read, jaxpr.outvars))

  known_eqns, staged_eqns = [], []
  known_outs = splice(known.jaxpr, known_eqns)
  n_known = len(known_outs) - num_res
  residuals = known_outs[n_known:]
  sub.update(zip(unknown.jaxpr.invars, [*residuals,
                                        *(a for a, uk in zip(eqn.invars, unks_in) if uk)]))
  unknown_outs = iter(splice(unknown.jaxpr, staged_eqns))
  known_outs = iter(known_outs[:n_known])
  outs = [(next(unknown_outs) if uk else next(known_outs), uk) for uk in out_uk]
  return known_eqns, staged_eqns, [r for r in residuals if type(r) is Var], outs


def call_partial_eval_custom_rule(update_params: Callable[..., tuple[dict, dict]]
                                  = lambda known, staged, *_: (known, staged)):
  """The `partial_eval_jaxpr_custom_rules` entry of a call primitive whose `jaxpr` param
  is a ClosedJaxpr: a call of the known part and a call of the staged part, which takes
  the residuals first.  `update_params(known_params, staged_params, unks_in, inst_in,
  num_res)` adjusts the rest (the known call takes the inputs not in `unks_in`, the staged
  one `num_res` residuals then those in `inst_in`)."""
  def rule(saveable, unks_in, inst_in, eqn):
    closed = eqn.params["jaxpr"]
    known, staged, unks_out, inst_out, num_res = partial_eval_jaxpr_custom(
        closed.jaxpr, unks_in, inst_in, False, False, saveable)
    res = [Var(v.aval) for v in staged.invars[:num_res]]
    known_params, staged_params = update_params(
        dict(eqn.params, jaxpr=ClosedJaxpr(known, closed.consts)),
        dict(eqn.params, jaxpr=ClosedJaxpr(staged, closed.consts)), unks_in, inst_in, num_res)
    known_ins = [a for a, uk in zip(eqn.invars, unks_in) if not uk]
    staged_ins = [*res, *(a for a, i in zip(eqn.invars, inst_in) if i)]
    known_eqn = eqn.replace(invars=known_ins,
                            outvars=[*(v for v, uk in zip(eqn.outvars, unks_out) if not uk),
                                     *res],
                            params=known_params, effects=known.effects)
    staged_eqn = eqn.replace(invars=staged_ins,
                             outvars=[v for v, i in zip(eqn.outvars, inst_out) if i],
                             params=staged_params, effects=staged.effects)
    return [known_eqn], [staged_eqn], unks_out, inst_out, res
  return rule


# ----------------------------------------------------------------------------- dead code

# A DCE rule: `rule(used_outputs, eqn) -> (used_inputs, new_eqn or None)`.  A primitive
# without one is kept whole when any output is used (or its effects must be kept) and
# dropped otherwise; primitives holding jaxprs (calls, cond, scan) prune inside them.
DceRule = Callable[[list, JaxprEqn], "tuple[list[bool], JaxprEqn | None]"]
dce_rules: dict[Any, DceRule] = {}


def _default_dce_rule(used_outputs, eqn):
  if not any(used_outputs) and not must_keep(eqn.effects):
    return [False] * len(eqn.invars), None
  return [True] * len(eqn.invars), eqn


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: bool | Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[Jaxpr, list[bool]]:
  """Removes what the used outputs do not need.  Returns `(new_jaxpr, used_inputs)`;
  `new_jaxpr` keeps the used outputs, its constvars, and only the inputs in `used_inputs`
  (or every input where `instantiate` says so).  Equations whose effects must be kept
  (`effects.must_keep`) are never removed; `dce_rules` prune inside those holding jaxprs."""
  used_outputs = _broadcast(used_outputs, len(jaxpr.outvars))
  instantiate = _broadcast(instantiate, len(jaxpr.invars))
  live = {v for v, used in zip(jaxpr.outvars, used_outputs) if used and type(v) is Var}
  new_eqns = []
  for eqn in reversed(jaxpr.eqns):
    used_outs = [v in live for v in eqn.outvars]
    rule = dce_rules.get(eqn.primitive, _default_dce_rule)
    used_ins, new_eqn = rule(used_outs, eqn)
    if new_eqn is not None:
      new_eqns.append(new_eqn)
    live.update(a for a, u in zip(eqn.invars, used_ins) if u and type(a) is not Literal)
  used_inputs = [v in live or inst for v, inst in zip(jaxpr.invars, instantiate)]
  new = jaxpr.replace(invars=[v for v, u in zip(jaxpr.invars, used_inputs) if u],
                      outvars=[v for v, used in zip(jaxpr.outvars, used_outputs) if used],
                      eqns=new_eqns[::-1], effects=None)
  return new, used_inputs


def dce_closed_jaxpr(closed: ClosedJaxpr, used_outputs: Sequence[bool],
                     instantiate: bool | Sequence[bool] = False):
  jaxpr, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs, instantiate)
  return ClosedJaxpr(jaxpr, closed.consts), used_inputs


class PartialVal(tuple):
  """JAX's partial value, for libraries: `(None, value)` is known, `(aval, None)` unknown."""

  def __new__(cls, xs):
    return tuple.__new__(cls, xs)

  @classmethod
  def known(cls, const) -> "PartialVal":
    return PartialVal((None, const))

  @classmethod
  def unknown(cls, aval) -> "PartialVal":
    return PartialVal((aval, None))

  def is_known(self) -> bool:
    return self[0] is None

  def get_known(self):
    return self[1] if self[0] is None else None

  def get_aval(self):
    return avals_lib.get_aval(self[1]) if self[0] is None else self[0]


def _new_arg(trace, aval):
  """An unknown input: of an extended dtype (a key type), a value of that type over a
  tracer of its data, which is what the jaxpr takes (as `jit` traces keys)."""
  if not dtypes.is_extended(aval.dtype):
    return trace.new_arg(aval, None)
  data = avals_lib.ShapedArray((*aval.shape, *aval.dtype.physical_shape), dtypes.uint32)
  return aval.dtype.wrap(trace.new_arg(data, None))


def _traced_key_data(trace, x):
  """An output: a key over a tracer of this trace as that tracer (its data), else `x`."""
  if dtypes.is_extended(getattr(x, "dtype", None)):
    data = x.dtype.physical(x)
    if trace.owns(data):
      return data
  return x


def trace_to_jaxpr_nounits(fun: Callable, pvals: Sequence[PartialVal],
                           instantiate: bool = False):
  """Partially evaluates `fun(*flat_args)` on known and unknown inputs: the known part runs
  now; returns `(jaxpr of the unknown part, one PartialVal per output, its constants)`."""
  trace = JaxprTrace()
  with new_trace(trace):
    args = [pv.get_known() if pv.is_known() else _new_arg(trace, pv[0]) for pv in pvals]
    outs = [_traced_key_data(trace, x) for x in fun(*args)]
    flags = _broadcast(instantiate, len(outs))
    out_pvals, unknown = [], []
    for x, inst in zip(outs, flags):
      if trace.owns(x) or inst:
        unknown.append(x)
        out_pvals.append(PartialVal.unknown(avals_lib.get_aval(x)))
      else:
        out_pvals.append(PartialVal.known(x))
    jaxpr, consts = trace.to_jaxpr(unknown)
  return jaxpr, out_pvals, consts
