"""Pretty printing of jaxprs in JAX's textual form.

    { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }

Short jaxprs print on one line; longer ones put one equation per line.  Variables are
named a, b, ..., z, ba, bb, ... in order of appearance, one counter shared with nested
jaxprs so every name is unique.  Jaxpr-valued params (the bodies of jit, cond, while, scan)
print indented inside the equation.  An equation with effects is followed by
`# effects: ...`, so effect propagation can be read off the text.  A primitive can
override how its params print with `pp_rules[prim] = rule(params, names, indent) -> [str]`
(`indent`: the column the params start at, for nested jaxprs), or how its whole equation
prints (before the effects) with `pp_eqn_rules[prim] = rule(eqn, names) -> str` (the state
primitives print as `d:f32[] <- c[1]`, `c[...] += a`).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from minijax.core import effects as effects_lib
from minijax.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var

PpRule = Callable[[dict, "_Names", int], list]
pp_rules: dict[Any, PpRule] = {}
pp_eqn_rules: dict[Any, Callable[[JaxprEqn, "_Names"], str]] = {}

_LINE_WIDTH = 80


class _Names:
  def __init__(self):
    self.names: dict[Var, str] = {}

  def __call__(self, var) -> str:
    if type(var) is Literal:
      return _pp_literal(var)
    if isinstance(var, DropVar):
      return "_"
    name = self.names.get(var)
    if name is None:
      name = self.names[var] = _encode(len(self.names)) + var.suffix
    return name

  def binder(self, var) -> str:
    return f"{self(var)}:{var.aval.str_short()}"


def _encode(n: int) -> str:
  letters = "abcdefghijklmnopqrstuvwxyz"
  s = letters[n % 26]
  n //= 26
  while n:
    s = letters[n % 26] + s
    n //= 26
  return s


def _pp_literal(lit: Literal) -> str:
  val = lit.val
  if isinstance(val, (np.ndarray, np.generic)):
    val = val.item() if np.shape(val) == () else val
  text = repr(val) if not isinstance(val, np.ndarray) else "[...]"  # (as JAX elides them)
  return f"{text}:{lit.aval.str_short()}"


def _pp_param_value(value, names: _Names, indent: int) -> str:
  if isinstance(value, (Jaxpr, ClosedJaxpr)):
    return _pp_jaxpr_lines(value, names, indent)
  if isinstance(value, tuple) and value and all(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
    pad = " " * (indent + 2)
    inner = "\n".join(pad + _pp_jaxpr_lines(v, names, indent + 2) for v in value)
    return f"(\n{inner}\n{' ' * indent})"
  if callable(value) and hasattr(value, "__name__"):
    return value.__name__
  if isinstance(value, np.dtype):
    return str(value)
  return str(value)


def _has_jaxpr(value) -> bool:
  if isinstance(value, (Jaxpr, ClosedJaxpr)):
    return True
  return isinstance(value, tuple) and any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value)


def pp_eqn(eqn: JaxprEqn, names: _Names | None = None, indent: int = 0) -> str:
  names = names or _Names()
  eqn_rule = pp_eqn_rules.get(eqn.primitive)
  if eqn_rule is not None:
    text = eqn_rule(eqn, names)
    if eqn.effects:
      text += "  # effects: " + ", ".join(map(repr, sorted(eqn.effects, key=effects_lib.sort_key)))
    return text
  outs = " ".join(names.binder(v) for v in eqn.outvars)
  rule = pp_rules.get(eqn.primitive)
  params = rule(eqn.params, names, indent + 2) if rule else [
      f"{k}={_pp_param_value(v, names, indent + 2)}" for k, v in eqn.params.items()]
  ins = " ".join(names(v) for v in eqn.invars)
  multiline = (any(_has_jaxpr(v) for v in eqn.params.values())
               or sum(len(p) + 1 for p in params) > _LINE_WIDTH)
  if not params:
    head = str(eqn.primitive)
  elif multiline:
    pad = " " * (indent + 2)
    head = f"{eqn.primitive}[\n" + "\n".join(pad + p for p in params) + f"\n{' ' * indent}]"
  else:
    head = f"{eqn.primitive}[{' '.join(params)}]"
  text = f"{outs} = {head} {ins}".rstrip() if outs else f"{head} {ins}".rstrip()
  if eqn.effects:
    text += "  # effects: " + ", ".join(map(repr, sorted(eqn.effects, key=effects_lib.sort_key)))
  return text


def _pp_jaxpr_lines(jaxpr, names: _Names, indent: int, consts=None) -> str:
  if isinstance(jaxpr, ClosedJaxpr):
    jaxpr = jaxpr.jaxpr
  constvars = " ".join(names.binder(v) for v in jaxpr.constvars)
  invars = " ".join(names.binder(v) for v in jaxpr.invars)
  eqns = [pp_eqn(e, names, indent + 4) for e in jaxpr.eqns]
  outs = "(" + ", ".join(names(v) for v in jaxpr.outvars) + ("," if len(jaxpr.outvars) == 1 else "") + ")"
  header = f"{{ lambda {constvars}; {invars}. let"
  one_line = f"{header} {'; '.join(eqns)} in {outs} }}"  # (no equations: "let  in", as JAX)
  if (len(one_line) + indent <= _LINE_WIDTH and len(eqns) <= 3
      and not any("\n" in e or "#" in e for e in eqns)):
    return one_line
  pad = " " * (indent + 4)
  body = "\n".join(pad + e for e in eqns)
  return f"{header}\n{body}\n{' ' * (indent + 2)}in {outs} }}"


def pp_jaxpr(jaxpr: Jaxpr, consts=None) -> str:
  return _pp_jaxpr_lines(jaxpr, _Names(), 0)
