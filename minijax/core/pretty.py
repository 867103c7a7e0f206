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

`Jaxpr.pretty_print(...)` takes JAX's options: without shapes on binders, with each
equation's source location or name stack (`named_scope`s; a checkpoint's recomputation in
the backward pass adds `rematted_computation`) as a `# ...` note after its first line, with
each jaxpr's effects after its outputs, without the custom equation rules, at another width.
The options travel with the variable names (`_Names`) into nested jaxprs.
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
  """The names given to variables so far, and the printing options."""

  def __init__(self, *, print_shapes: bool = True, source_info: bool = False,
               name_stack: bool = False, print_effects: bool = False,
               custom_pp_eqn_rules: bool = True, width: int = _LINE_WIDTH):
    self.names: dict[Var, str] = {}
    self.unused: set[Var] = set()  # the top-level jaxpr's binders nothing reads: printed `_`
    self.print_shapes = print_shapes
    self.source_info = source_info
    self.name_stack = name_stack
    self.print_effects = print_effects
    self.custom_pp_eqn_rules = custom_pp_eqn_rules
    self.width = width

  def __call__(self, var) -> str:
    if type(var) is Literal:
      return _pp_literal(var)
    if self.dropped(var):
      return "_"
    name = self.names.get(var)
    if name is None:
      name = self.names[var] = _encode(len(self.names)) + var.suffix
    return name

  def dropped(self, var) -> bool:
    """Whether `var` prints as `_`."""
    return isinstance(var, DropVar) or var in self.unused

  def binder(self, var) -> str:
    if not self.print_shapes:
      return self(var)
    return f"{self(var)}:{var.aval.str_short(short_dtypes=True)}"


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
  return f"{text}:{lit.aval.str_short(short_dtypes=True)}"


def pp_param(key: str, value, names: _Names, indent: int) -> str:
  """`key=value` as a param prints at column `indent` (for `pp_rules`); a jaxpr stays on
  the line of its key when both fit in the width."""
  return f"{key}={_pp_param_value(value, names, indent, len(key) + 1)}"


def _pp_param_value(value, names: _Names, indent: int, key_width: int = 0) -> str:
  if isinstance(value, (Jaxpr, ClosedJaxpr)):
    return _pp_jaxpr_lines(value, names, indent, key_width)
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
  text = _pp_eqn(eqn, names, indent)
  notes = []
  if names.source_info:
    notes.append(str(eqn.source_info) if eqn.source_info else "unknown")
  if names.name_stack:
    notes.append(f"[{eqn.source_info.name_stack if eqn.source_info else ''}]")
  if notes:
    first, newline, rest = text.partition("\n")
    text = first + "".join(f"  # {note}" for note in notes) + newline + rest
  return text


def _pp_eqn(eqn: JaxprEqn, names: _Names, indent: int) -> str:
  eqn_rule = pp_eqn_rules.get(eqn.primitive) if names.custom_pp_eqn_rules else None
  if eqn_rule is not None:
    text = eqn_rule(eqn, names)
    if eqn.effects:
      text += "  # effects: " + ", ".join(map(repr, sorted(eqn.effects, key=effects_lib.sort_key)))
    return text
  outs = " ".join(names.binder(v) for v in eqn.outvars)
  rule = pp_rules.get(eqn.primitive)
  params = rule(eqn.params, names, indent + 2) if rule else [
      pp_param(k, v, names, indent + 2) for k, v in sorted(eqn.params.items())]
  ins = " ".join(names(v) for v in eqn.invars)
  # (as JAX's printer: the params' group breaks when it does not fit in the line)
  flat_width = indent + len(outs) + 3 + len(str(eqn.primitive)) + sum(len(p) + 1 for p in params)
  multiline = (any(_has_jaxpr(v) for v in eqn.params.values())
               or flat_width + 1 > names.width)
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


def _pp_jaxpr_lines(jaxpr, names: _Names, indent: int, key_width: int = 0) -> str:
  """`key_width`: the width of the `name=` the jaxpr follows on its first line."""
  if isinstance(jaxpr, ClosedJaxpr):
    jaxpr = jaxpr.jaxpr
  constvars = " ".join(names.binder(v) for v in jaxpr.constvars)
  invars = " ".join(names.binder(v) for v in jaxpr.invars)
  eqns = [pp_eqn(e, names, indent + 4) for e in jaxpr.eqns]
  outs = "(" + ", ".join(names(v) for v in jaxpr.outvars) + ("," if len(jaxpr.outvars) == 1 else "") + ")"
  if names.print_effects:
    outs += " : { " + ", ".join(map(repr, sorted(jaxpr.effects, key=effects_lib.sort_key))) + " }"
  header = f"{{ lambda {constvars}; {invars}. let"
  one_line = f"{header} {'; '.join(eqns)} in {outs} }}"  # (no equations: "let  in", as JAX)
  if (len(one_line) + indent + key_width <= names.width and len(eqns) <= 3
      and not any("\n" in e or "#" in e for e in eqns)):
    return one_line
  pad = " " * (indent + 4)
  body = "\n".join(pad + e for e in eqns)
  return f"{header}\n{body}\n{' ' * (indent + 2)}in {outs} }}"


def pp_jaxpr(jaxpr: Jaxpr, consts=None, **options) -> str:
  """`jaxpr` as text; `options`: those of `_Names` (see `Jaxpr.pretty_print`).  As in JAX,
  an equation's result that no later equation or output of `jaxpr` reads prints as `_`
  (in `jaxpr` itself, not in the jaxprs nested in its equations)."""
  names = _Names(**options)
  names.unused = _unused_binders(jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr)
  return _pp_jaxpr_lines(jaxpr, names, 0)


def _unused_binders(jaxpr: Jaxpr) -> set[Var]:
  read = {v for v in jaxpr.outvars if type(v) is not Literal}
  unused = set()
  for eqn in reversed(jaxpr.eqns):
    unused.update(v for v in eqn.outvars if v not in read)
    read.update(v for v in eqn.invars if type(v) is not Literal)
  return unused


def pretty_print(jaxpr: Jaxpr, *, source_info: bool = False, print_shapes: bool = True,
                 custom_pp_eqn_rules: bool = True, name_stack: bool = False,
                 print_effects: bool = False, **format_options) -> str:
  """JAX's `Jaxpr.pretty_print`.  Of its formatting options, `width` (the line width) is
  honoured and `use_color` accepted (minijax prints no colours)."""
  unknown = set(format_options) - {"width", "use_color"}
  if unknown:
    raise TypeError(f"pretty_print() got unexpected keyword arguments {sorted(unknown)}; it "
                    "takes source_info, print_shapes, custom_pp_eqn_rules, name_stack, "
                    "print_effects, width and use_color")
  width = format_options.get("width", _LINE_WIDTH)
  if not isinstance(width, int) or width < 1:
    raise ValueError(f"pretty_print's width must be a positive int, got {width!r}")
  return pp_jaxpr(jaxpr, source_info=source_info, print_shapes=print_shapes,
                  custom_pp_eqn_rules=custom_pp_eqn_rules, name_stack=name_stack,
                  print_effects=print_effects, width=width)
