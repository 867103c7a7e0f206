"""`jit_p`: a call to a staged jaxpr (what `jit` binds when it is traced or transformed).

Params: `jaxpr` (a ClosedJaxpr with no constants; they are passed as leading arguments),
`name`, `donated_invars` and `device`.  Evaluating it compiles the jaxpr once per device
(the impl is installed by `minijax.staging`, which owns compilation); lowering it emits a
`func.call` to one private function per jaxpr, with the tokens of its ordered effects
threaded through.
"""
from __future__ import annotations

from minijax.core import caches, pretty
from minijax.core.effects import must_keep
from minijax.core.jaxpr import Var, eval_jaxpr, hoist_consts
from minijax.core.primitive import Primitive
from minijax.core.trace import Tracer, set_current_trace
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.transpose import transpose_jaxpr
from minijax.lowering import mlir

jit_p = Primitive("jit")
jit_p.multiple_results = True


def _jit_abstract_eval(*avals, jaxpr, name, donated_invars, device):
  return jaxpr.out_avals, jaxpr.effects


jit_p.def_effectful_abstract_eval(_jit_abstract_eval)

def _jit_lowering(ctx, *args, jaxpr, name, donated_invars, device):
  return mlir.call_lowered_function(ctx, name, jaxpr, *args)


mlir.register_lowering(jit_p, _jit_lowering)


def _jit_pp(params, names, indent):
  lines = [f"name={params['name']}"]
  if any(params["donated_invars"]):
    lines.append(f"donated_invars={params['donated_invars']}")
  lines.append(pretty.pp_param("jaxpr", params["jaxpr"], names, indent))
  return lines


pretty.pp_rules[jit_p] = _jit_pp


# ----------------------------------------------------------------------------- transformation rules
# Shared by every call-like primitive whose params hold `jaxpr` (a ClosedJaxpr without
# constants): each transformation rewrites the inner jaxpr and binds the primitive again.
# `fix_params(params, num_args)` adjusts params that depend on the number of arguments.

_SAME = object()  # stands for the jaxpr a rewrite was given, when it returns that jaxpr


def _rewrite(closed, fn, flags):
  # A cached value must not refer to its key: a rewrite that hands back the jaxpr itself
  # (or a tuple holding it) is stored with `_SAME` in its place.
  result = fn(closed, *flags)
  if result is closed:
    return _SAME
  if type(result) is tuple and any(r is closed for r in result):
    return tuple(_SAME if r is closed else r for r in result)
  return result


def _restore(result, closed):
  if result is _SAME:
    return closed
  if type(result) is tuple and any(r is _SAME for r in result):
    return tuple(closed if r is _SAME else r for r in result)
  return result


# Keyed weakly on the jaxpr rewritten: an entry lives as long as that jaxpr (and so as long
# as the function it was traced from), and at most `config.transform_cache_size` entries.
_rewrites = caches.WeakLRU(_rewrite, "transform_cache_size")
_hoisted = caches.WeakLRU(hoist_consts, "transform_cache_size")


def _memo(fn, closed, *flags):
  """`fn(closed, *flags)`, cached per (jaxpr object, flags) when its constants are not
  tracers, so that an eager `grad(jit(f))` reuses the rewritten jaxprs (and thereby the
  compiled executables, which are keyed on them) from one call to the next."""
  if any(isinstance(c, Tracer) for c in closed.consts):
    return fn(closed, *flags)
  flags = tuple(tuple(f) if isinstance(f, list) else f for f in flags)
  return _restore(_rewrites(closed, fn, flags), closed)


def _hoist(closed):
  if not closed.jaxpr.constvars:  # nothing to hoist (and a value must not hold its key)
    return closed, list(closed.consts)
  if any(isinstance(c, Tracer) for c in closed.consts):
    return hoist_consts(closed)
  return _hoisted(closed)


def _bind_call(primitive, fix_params, closed, args, params):
  closed, consts = _hoist(closed)
  args = [*consts, *args]
  return primitive.bind(*args, **fix_params(dict(params, jaxpr=closed), len(args)))


def call_jvp_rule(primitive, fix_params):
  def rule(primals, tangents, *, jaxpr, **params):
    nonzeros = [type(t) is not ad.Zero and not ad.is_float0(t) for t in tangents]
    jvp_closed, out_nz = _memo(ad.jvp_jaxpr, jaxpr, nonzeros, False)
    outs = _bind_call(primitive, fix_params, jvp_closed,
                      [*primals, *(t for t, nz in zip(tangents, nonzeros) if nz)], params)
    n = len(jaxpr.out_avals)
    tangents_out = iter(outs[n:])
    return outs[:n], [next(tangents_out) if nz else ad.Zero(a.tangent_aval())
                      for a, nz in zip(jaxpr.out_avals, out_nz)]
  return rule


def _forwards_only(closed) -> bool:
  """Whether `closed` has no equations and returns only its inputs and constants."""
  return not closed.jaxpr.eqns and all(type(v) is Var for v in closed.jaxpr.outvars)


def call_partial_eval_rule(primitive, fix_params):
  def rule(trace, args, *, jaxpr, **params):
    unknowns = [trace.owns(x) for x in args]
    known, unknown, out_uk, num_res = _memo(pe.partial_eval_jaxpr, jaxpr, unknowns, False)
    known_args = [x for x, uk in zip(args, unknowns) if not uk]
    if _forwards_only(known):  # (as JAX does, no call that only hands its inputs back)
      known_outs = eval_jaxpr(known.jaxpr, known.consts, *known_args)
    else:
      with set_current_trace(trace.parent):
        known_outs = _bind_call(primitive, fix_params, known, known_args, params)
    res = known_outs[len(known_outs) - num_res:]
    known_outs = iter(known_outs[:len(known_outs) - num_res])
    if not any(out_uk) and not must_keep(unknown.effects):
      return list(known_outs)
    unknown_args = [*res, *(x for x, uk in zip(args, unknowns) if uk)]
    unknown_closed, consts = _hoist(unknown)
    unknown_args = [*consts, *unknown_args]
    unknown_outs = iter(trace.stage(primitive, unknown_args,
                                    fix_params(dict(params, jaxpr=unknown_closed),
                                               len(unknown_args))))
    return [next(unknown_outs) if uk else next(known_outs) for uk in out_uk]
  return rule


def call_transpose_rule(primitive, fix_params, split: bool = False):
  def rule(cts, *args, jaxpr, **params):
    linear = [ad.is_undefined_primal(x) for x in args]
    nonzero = [type(ct) is not ad.Zero for ct in cts]
    if not all(nonzero):  # what only zero cotangents reach (say a comparison) is dropped
      jaxpr, _ = _memo(pe.dce_closed_jaxpr, jaxpr, nonzero, True)
      cts = [ct for ct, nz in zip(cts, nonzero) if nz]
    transposed = _memo(transpose_jaxpr, jaxpr, linear, split)
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    outs = iter(_bind_call(primitive, fix_params, transposed,
                           [*(x for x, lin in zip(args, linear) if not lin), *cts], params))
    return [next(outs) if lin else None for lin in linear]
  return rule


def call_batching_rule(primitive, fix_params):
  def rule(args, dims, *, jaxpr, **params):
    size = batching.batch_size(args, dims)
    args = [batching.moveaxis(x, d, 0) if d is not None else x for x, d in zip(args, dims)]
    batched, out_batched = _memo(batching.batch_jaxpr, jaxpr, size,
                                 [d is not None for d in dims], False)
    outs = _bind_call(primitive, fix_params, batched, args, params)
    return outs, [0 if b else None for b in out_batched]
  return rule


def call_dce_rule(used_outputs, eqn):
  """Prunes the called jaxpr to the used outputs, and the call to the inputs it reads."""
  if not any(used_outputs) and not must_keep(eqn.effects):
    return [False] * len(eqn.invars), None
  closed = eqn.params["jaxpr"]
  pruned, used_inputs = _memo(pe.dce_closed_jaxpr, closed, used_outputs)
  params = dict(eqn.params, jaxpr=pruned)
  if "donated_invars" in params:
    params["donated_invars"] = tuple(d for d, u in zip(params["donated_invars"], used_inputs)
                                     if u)
  return used_inputs, eqn.replace(
      invars=[x for x, u in zip(eqn.invars, used_inputs) if u],
      outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
      params=params, effects=pruned.effects)


def register_call_rules(primitive, fix_params=lambda params, n: params, *,
                        partial_eval: bool = True) -> None:
  ad.primitive_jvps[primitive] = call_jvp_rule(primitive, fix_params)
  ad.primitive_transposes[primitive] = call_transpose_rule(primitive, fix_params)
  batching.primitive_batchers[primitive] = call_batching_rule(primitive, fix_params)
  pe.dce_rules[primitive] = call_dce_rule
  if partial_eval:
    pe.partial_eval_rules[primitive] = call_partial_eval_rule(primitive, fix_params)


def _jit_fix_params(params, num_args):
  donated = params["donated_invars"]
  if len(donated) != num_args:
    params = dict(params, donated_invars=(False,) * num_args)
  return params


register_call_rules(jit_p, _jit_fix_params)
pe.partial_eval_jaxpr_custom_rules[jit_p] = pe.call_partial_eval_custom_rule(
    lambda known, staged, *_: (_jit_fix_params(known, len(known["jaxpr"].in_avals)),
                           _jit_fix_params(staged, len(staged["jaxpr"].in_avals))))
