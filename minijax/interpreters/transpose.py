"""Transposition of linear jaxprs: the backward half of reverse mode.

`backward_pass` first evaluates (binding on the current trace) every equation whose inputs
are all known: residual computations and, inside `checkpoint`, the recomputed forward
pass.  It then walks the remaining equations, which are linear in the `UndefinedPrimal`
inputs, in reverse, calling each primitive's transpose rule with the cotangents of its
outputs and accumulating the cotangents of its linear inputs.  Cotangents are symbolic
`Zero`s until something contributes; an equation whose output cotangents are all zero is
skipped, unless one of its effects says `runs_with_zero_cotangents` (the default): those
always run with their zero cotangents instantiated, so a tap on tangents fires in the
backward pass.

Refs in a linear jaxpr (tangent refs, from `new_ref`'s jvp) have cotangent *refs*: the
first transpose rule that needs the cotangent of a ref variable creates it, holding zeros,
and every rule that touches the ref is handed it in the ref's place; `new_ref`'s transpose
freezes it into the cotangent of the initial value.  Creating a tangent ref
(`ad.creates_tangent_ref`) is linear even though its operand is known.
"""
from __future__ import annotations

from typing import Any, Sequence

from minijax.core.effects import run_with_zero_cotangents
from minijax.core.state import AbstractRef
from minijax.interpreters import array_ops
from minijax.core.errors import MissingRuleError
from minijax.core.jaxpr import (ClosedJaxpr, Jaxpr, Literal, Transformation,
                                current_name_stack, equation_context)
from minijax.interpreters.ad import (UndefinedPrimal, Zero, add_tangents, instantiate_zeros,
                                     creates_tangent_ref, is_undefined_primal,
                                     primitive_transposes)


def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                  cts_out: Sequence[Any], wanted: Sequence[bool] | None = None,
                  transform_stack: bool = False) -> list[Any]:
  """Transposes `jaxpr` with respect to its `UndefinedPrimal` arguments.

  `consts` are values of `jaxpr.constvars`, `args` one value or `UndefinedPrimal` per input,
  `cts_out` one cotangent (array or `Zero`) per output.  Returns one entry per input: the
  accumulated cotangent (possibly `Zero`) for undefined inputs, `None` for the others.
  With `wanted` (a flag per input), equations whose cotangents reach only unwanted inputs
  are not transposed, and those inputs' cotangents are `Zero`.  Each equation is bound from
  its own source; the transposed ones under `transpose(...)` in the name stack with
  `transform_stack` (for `grad`, `vjp` and `linear_transpose`, as in JAX).
  """
  primal_env: dict[Any, Any] = {}

  def read_primal(atom):
    if type(atom) is Literal:
      return atom.val
    return primal_env.get(atom) if atom in primal_env else UndefinedPrimal(atom.aval)

  primal_env.update(zip(jaxpr.constvars, consts))
  for v, a in zip(jaxpr.invars, args):
    if not is_undefined_primal(a):
      primal_env[v] = a

  # (with `wanted`: the linear values that depend on a wanted input; a linear equation
  # reading none of them sends cotangents only to unwanted inputs)
  reach = None if wanted is None else {
      v for v, a, w in zip(jaxpr.invars, args, wanted) if w and is_undefined_primal(a)}
  linear_eqns = []
  for eqn in jaxpr.eqns:
    ins = [read_primal(a) for a in eqn.invars]
    if any(is_undefined_primal(x) for x in ins) or creates_tangent_ref(eqn.params):
      if (reach is None or creates_tangent_ref(eqn.params)
          or run_with_zero_cotangents(eqn.effects)
          or any(type(a) is not Literal and a in reach for a in eqn.invars)):
        linear_eqns.append(eqn)
        if reach is not None:
          reach.update(eqn.outvars)
      continue
    with equation_context(eqn):
      out = eqn.primitive.bind(*ins, **eqn.params)
    primal_env.update(zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]))

  ct_env: dict[Any, Any] = {}

  def write_ct(v, ct):
    if type(v) is Literal or ct is None or type(ct) is Zero:
      return
    if type(v.aval) is AbstractRef:  # a value cotangent for a ref (a custom rule's)
      array_ops.addupdate(ct_ref(v), ct)
      return
    ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

  def ct_ref(v):
    ref = ct_env.get(v)
    if ref is None:
      ref = ct_env[v] = array_ops.new_ref(array_ops.zeros(v.aval.inner_aval))
    return ref

  for v, ct in zip(jaxpr.outvars, cts_out):
    write_ct(v, ct)

  base = current_name_stack()
  if transform_stack:
    base += (Transformation("transpose"),)
  for eqn in reversed(linear_eqns):
    cts = [ct_env.pop(v, None) for v in eqn.outvars]
    cts = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, cts)]
    runs_anyway = run_with_zero_cotangents(eqn.effects)
    if not runs_anyway and all(type(ct) is Zero for ct in cts):
      continue
    if runs_anyway:
      cts = [instantiate_zeros(ct) for ct in cts]
    rule = primitive_transposes.get(eqn.primitive)
    if rule is None:
      raise MissingRuleError(eqn.primitive, "transpose", "ad.primitive_transposes")
    ins = [read_primal(a) for a in eqn.invars]
    linear = [is_undefined_primal(x) for x in ins]
    ins = [ct_ref(a) if lin and type(x.aval) is AbstractRef else x
           for a, x, lin in zip(eqn.invars, ins, linear)]
    try:
      with equation_context(eqn, base):
        cts_in = rule(cts if eqn.primitive.multiple_results else cts[0], *ins, **eqn.params)
    except Exception as e:
      from minijax.core.jaxpr import _add_eqn_note
      _add_eqn_note(e, eqn)
      raise
    if not isinstance(cts_in, (list, tuple)):
      cts_in = [cts_in]
    for atom, lin, ct in zip(eqn.invars, linear, cts_in):
      if lin:
        write_ct(atom, ct)

  def input_ct(v):
    ct = ct_env.get(v, Zero(v.aval))
    if type(v.aval) is AbstractRef:  # a ref input's cotangent: its initial value's
      return Zero(v.aval.inner_aval) if type(ct) is Zero else array_ops.freeze(ct)
    return ct

  return [(input_ct(v) if is_undefined_primal(a) else None)
          for v, a in zip(jaxpr.invars, args)]


def transpose_jaxpr(closed_jaxpr: ClosedJaxpr, linear: Sequence[bool],
                    split: bool = False) -> ClosedJaxpr:
  """The transpose of a jaxpr that is linear in the inputs marked by `linear`.

  The result takes `[*non-linear inputs, *one cotangent per output]` and returns one
  cotangent per linear input (zeros instantiated), in input order.

  With `split`, the jaxpr is first split by partial evaluation into the part computable
  from the non-linear inputs, which the result computes, and the part linear in the others
  given its residuals, which it transposes (JAX's transpose of `checkpoint`).  This takes
  the non-linear computation out of every equation, also from inside loops: a `scan` whose
  carry holds a primal beside its tangent (as a `checkpoint`'s recomputation of a loop
  leaves it) has a transpose only once its primal part is split off (its equations are
  named `rematted_computation` in their name stacks, as JAX names them).  Without it,
  `backward_pass` evaluates only whole equations whose inputs are all known.
  """
  from minijax.interpreters import partial_eval as pe
  in_avals = closed_jaxpr.in_avals
  lin_avals = [a for a, lin in zip(in_avals, linear) if lin]
  num_nonlin = len(in_avals) - len(lin_avals)
  if split:
    known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(closed_jaxpr, linear)

  def fun(*args):
    nonlin, cts = args[:num_nonlin], args[num_nonlin:]
    if not split:
      it = iter(nonlin)
      primals = [UndefinedPrimal(a) if lin else next(it) for a, lin in zip(in_avals, linear)]
      cts_in = backward_pass(closed_jaxpr.jaxpr, closed_jaxpr.consts, primals, cts)
      return [instantiate_zeros(ct) for ct, lin in zip(cts_in, linear) if lin]
    from minijax.core.jaxpr import eval_jaxpr, named_scope
    with named_scope("rematted_computation"):  # JAX's name for the recomputation
      known_outs = eval_jaxpr(known.jaxpr, known.consts, *nonlin)
    residuals = known_outs[len(known_outs) - num_res:]
    cts_in = backward_pass(unknown.jaxpr, unknown.consts,
                           [*residuals, *map(UndefinedPrimal, lin_avals)],
                           [ct for ct, uk in zip(cts, out_uk) if uk])
    return [instantiate_zeros(ct) for ct in cts_in[num_res:]]

  avals = [*(a for a, lin in zip(in_avals, linear) if not lin), *closed_jaxpr.out_avals]
  jaxpr, consts = pe.trace_to_jaxpr_dynamic(fun, avals)
  return ClosedJaxpr(jaxpr, consts)
