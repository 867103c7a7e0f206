"""Discharging state: turning a jaxpr that uses refs into a pure one.

A jaxpr with mutable array references (inputs of type `Ref{...}`, or refs it creates with
`new_ref`) cannot be lowered: XLA has values, not cells.  `eval_discharged` interprets such
a jaxpr in an environment where every ref variable holds the ref's *current value*: a read
(`get`) returns part of it, a write (`swap`) or an accumulation (`addupdate`) replaces it
with an updated value, `new_ref` binds it and `freeze` reads it.  Every other equation is
bound unchanged.  Run under a staging trace, the interpretation stages the pure program;
`discharge_state` does exactly that: the result takes a value for each ref input and
returns, after the original outputs, each ref input's final value.

Program order survives as data dependence: each write produces the value the next read
sees, so refs need no tokens.  An equation that touches refs without being one of the
state primitives (a loop closing over a ref, a nested `jit`, a branch) is handled by its
primitive's rule in `discharge_rules`, which discharges its inner jaxprs recursively and
threads the refs' values through (as loop carries, extra branch outputs, extra call
results).  Rules live with their primitives in `minijax/lax/`:

  discharge_rules[p](eqn, in_vals) -> (new_ref_vals, outs)

where `in_vals` holds the current value of each ref operand and the value of every other
operand, `new_ref_vals` has one entry per operand (the ref's new value, or None when the
equation leaves it, or when the operand is not a ref) and `outs` is the list of outputs
(a ref output, from `new_ref`, is its initial value).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from minijax.core import caches
from minijax.core.effects import internal_mutable_array_effect, needs_discharge
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, _add_eqn_note
from minijax.core.state import AbstractRef

DischargeRule = Callable[[JaxprEqn, list], tuple[list, list]]
discharge_rules: dict[Any, DischargeRule] = {}


def is_ref(aval) -> bool:
  return type(aval) is AbstractRef


def value_aval(aval):
  """The aval of what a ref of type `aval` holds (other avals unchanged)."""
  return aval.inner_aval if type(aval) is AbstractRef else aval


def jaxpr_has_state(jaxpr: Jaxpr) -> bool:
  """Whether `jaxpr` takes refs or uses them inside."""
  return (needs_discharge(jaxpr.effects)
          or any(type(v.aval) is AbstractRef for v in (*jaxpr.constvars, *jaxpr.invars)))


def eqn_has_state(eqn: JaxprEqn) -> bool:
  return needs_discharge(eqn.effects) or any(type(a.aval) is AbstractRef for a in eqn.invars)


def eval_discharged(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]):
  """Interprets `jaxpr` with each ref input given as its value (see the module docstring).
  Returns `(outs, finals)`: the outputs, and the final value of every ref among
  `[*constvars, *invars]`, in that order."""
  env: dict[Any, Any] = {}

  def read(atom):
    return atom.val if type(atom) is Literal else env[atom]

  if len(args) != len(jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  inputs = {*jaxpr.constvars, *jaxpr.invars}
  frozen: set = set()
  for eqn in jaxpr.eqns:
    ins = [read(a) for a in eqn.invars]
    try:
      if eqn_has_state(eqn):
        _check_lifetime(eqn, inputs, frozen)
        rule = discharge_rules.get(eqn.primitive)
        if rule is None:
          raise NotImplementedError(
              f"No state discharge rule implemented for primitive: {eqn.primitive} (register "
              "one in minijax.interpreters.discharge.discharge_rules, in the primitive's "
              "block in minijax/lax/)")
        new_vals, outs = rule(eqn, ins)
        for atom, new in zip(eqn.invars, new_vals):
          if new is not None:
            env[atom] = new
      else:
        outs = eqn.primitive.bind(*ins, **eqn.params)
        if not eqn.primitive.multiple_results:
          outs = [outs]
    except Exception as e:
      _add_eqn_note(e, eqn)
      raise
    env.update(zip(eqn.outvars, outs))
  outs = [read(v) for v in jaxpr.outvars]
  finals = [env[v] for v in (*jaxpr.constvars, *jaxpr.invars) if type(v.aval) is AbstractRef]
  return outs, finals


def inline_call_rule(param: str) -> DischargeRule:
  """The discharge rule of a call-like primitive whose operands are the inputs of the
  ClosedJaxpr in `params[param]`: its body is discharged in place (inlined)."""
  def rule(eqn, ins):
    closed = eqn.params[param]
    outs, finals = eval_discharged(closed.jaxpr, closed.consts, ins)
    it = iter(finals)
    new = [next(it) if type(v.aval) is AbstractRef else None for v in closed.jaxpr.invars]
    return new, outs
  return rule


def _check_lifetime(eqn: JaxprEqn, inputs: set, frozen: set) -> None:
  """A ref ends at `freeze`, which only the scope that created it may call (the equation
  that freezes is the one with `InternalMutableArrayEffect` and a ref operand)."""
  refs = [a for a in eqn.invars if type(a.aval) is AbstractRef]
  for a in refs:
    if a in frozen:
      raise ValueError(f"a ref of type {a.aval} is used by `{eqn.primitive}` after it was "
                       "frozen (or freed): `freeze` and `free_ref` end a ref's life; read it "
                       "with `r[...]` instead to keep using it")
  if refs and internal_mutable_array_effect in eqn.effects:
    if refs[0] in inputs:
      raise ValueError(
          f"`freeze` of a ref of type {refs[0].aval} that the traced function did not create: "
          "a ref can only be frozen in the scope that created it (pass or return its value, "
          "`r[...]`, instead)")
    frozen.add(refs[0])


class _Mode(threading.local):
  lowering = False


_mode = _Mode()


def discharging_for_lowering() -> bool:
  """Whether the discharge under way is the last step before lowering (nothing will
  transform the result), rather than one that transformations may follow."""
  return _mode.lowering


def _discharge(closed: ClosedJaxpr, lowering: bool) -> ClosedJaxpr:
  previous, _mode.lowering = _mode.lowering, lowering
  try:
    return _discharge_now(closed)
  finally:
    _mode.lowering = previous


def _discharge_now(closed: ClosedJaxpr) -> ClosedJaxpr:
  from minijax.interpreters import partial_eval as pe
  jaxpr = closed.jaxpr
  if any(type(v.aval) is AbstractRef for v in jaxpr.constvars):
    raise ValueError("discharge_state: the jaxpr closes over refs as constants; make them "
                     "inputs first (core.jaxpr.hoist_consts)")

  def pure(*args):
    outs, finals = eval_discharged(jaxpr, closed.consts, args)
    return [*outs, *finals]

  in_avals = [value_aval(v.aval) for v in jaxpr.invars]
  new, consts = pe.trace_to_jaxpr_dynamic(pure, in_avals)
  # what only fed refs that nothing reads afterwards (a local ref's last writes) goes
  new, _ = pe.dce_jaxpr(new, [True] * len(new.outvars), instantiate=True)
  return ClosedJaxpr(new, consts)


_discharged = caches.WeakLRU(_discharge, "jit_cache_size")


def discharge_state(closed: ClosedJaxpr, *, lowering: bool = False) -> ClosedJaxpr:
  """The pure version of `closed`: each ref input becomes an input of the value it holds,
  and the final value of each ref input (in input order) is appended to the outputs.
  `lowering` says nothing will transform the result (rules that must otherwise refuse,
  such as a custom_vjp given a ref, may then inline).  Cached while `closed` lives."""
  if not isinstance(closed, ClosedJaxpr):
    raise TypeError(f"discharge_state takes a ClosedJaxpr, got {type(closed).__name__}")
  return _discharged(closed, bool(lowering))
