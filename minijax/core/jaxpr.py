"""Jaxprs: the typed, first-order IR that tracing produces and every later stage reads.

A `Jaxpr` lists constant variables, input variables, equations and outputs.  Each
`JaxprEqn` applies one primitive to variables or literals, carries the primitive's params,
the effects it has and the user's source location.  A jaxpr's `effects` is the union of its
equations' effects.  `ClosedJaxpr` pairs a jaxpr with values for its constants.
`eval_jaxpr` interprets a jaxpr by binding each primitive on the current trace, so
evaluating a jaxpr under a transformation transforms it.  `typecheck_jaxpr` re-derives
every equation's types and effects and reports the equation that disagrees.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from typing import Any, NamedTuple, Sequence

from minijax.core import dtypes
from minijax.core import effects as effects_lib
from minijax.core.avals import AbstractValue, ShapedArray


class Var:
  __slots__ = ("aval", "suffix")

  def __init__(self, aval: AbstractValue, suffix: str = ""):
    self.aval = aval
    self.suffix = suffix

  def __repr__(self):
    return f"Var({id(self) % 10000}):{self.aval.str_short(short_dtypes=True)}"


class DropVar(Var):
  """An output that nothing reads (printed as `_`)."""
  __slots__ = ()


class Literal:
  __slots__ = ("val", "aval")

  def __init__(self, val: Any, aval: AbstractValue):
    self.val = val
    self.aval = aval

  def __repr__(self):
    return f"Literal({self.val})"


Atom = Var | Literal


class Transformation(NamedTuple):
  """A transformation's mark in a name stack (`jvp`, `transpose`, `vmap`)."""
  name: str


class NameStack(tuple):
  """The `named_scope`s (strings) and transformations (`Transformation`s) an operation was
  traced under, outermost first.  Printed as JAX prints it: a transformation wraps the
  scope that follows it, `outer/jvp(model)/layer` (`jvp()` when none follows)."""
  __slots__ = ()

  def __add__(self, other) -> NameStack:
    return NameStack(tuple.__add__(self, other))

  def relative_to(self, prefix: NameStack) -> NameStack:
    n = len(prefix)
    return NameStack(self[n:]) if n and self[:n] == prefix else self

  def __str__(self) -> str:
    return _render_name_stack(self)

  __repr__ = tuple.__repr__


@functools.lru_cache(maxsize=4096)
def _render_name_stack(stack: tuple) -> str:
  parts: list[str] = []
  for entry in reversed(stack):
    if type(entry) is Transformation:
      if parts:
        parts[-1] = f"{entry.name}({parts[-1]})"
      else:
        parts.append(f"{entry.name}()")
    else:
      parts.append(entry)
  return "/".join(reversed(parts))


NO_NAMES = NameStack()


class SourceInfo(NamedTuple):
  file: str
  line: int
  function: str
  name_stack: NameStack = NO_NAMES  # the enclosing scopes and transformations

  def __str__(self):
    return f"{os.path.basename(self.file)}:{self.line} ({self.function})"


class _NamingState(threading.local):
  stack = NO_NAMES
  # the source of the equation `eval_jaxpr` is binding: the equations a transformation
  # traces from it come from where it came from (as in JAX), not from where the
  # transformation was called
  evaluating: SourceInfo | None = None


_name_stack = _NamingState()


@contextlib.contextmanager
def named_scope(name: str):
  """Names the operations traced inside: their source information carries the scope
  (`outer/inner`), which the lowering puts in each MHLO operation's location."""
  if not isinstance(name, str):
    raise TypeError(f"named_scope name must be a string, got {type(name).__name__}: {name!r:.60}")
  previous = _name_stack.stack
  _name_stack.stack = previous + (name,)
  try:
    yield
  finally:
    _name_stack.stack = previous


@contextlib.contextmanager
def transformation_scope(name: str):
  """Marks the operations traced inside as made by the transformation `name` (JAX's
  `jvp(...)`, `transpose(...)` and `vmap(...)` in name stacks)."""
  previous = _name_stack.stack
  _name_stack.stack = previous + (Transformation(name),)
  try:
    yield
  finally:
    _name_stack.stack = previous


def current_name_stack() -> NameStack:
  return _name_stack.stack


@contextlib.contextmanager
def equation_context(eqn: JaxprEqn, base: NameStack | None = None):
  """Binds as `eval_jaxpr` binds `eqn`: what it traces comes from `eqn`'s source, under
  `base` (the current name stack by default) followed by `eqn`'s own name stack."""
  state = _name_stack
  outer, previous = state.evaluating, state.stack
  info = eqn.source_info
  if info is not None:
    state.evaluating = info
    state.stack = (previous if base is None else base) + info.name_stack
  try:
    yield
  finally:
    state.evaluating, state.stack = outer, previous


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_is_internal_code: dict = {}  # code object -> whether it is minijax's own
_MAX_CODE_OBJECTS = 4096  # then the memo starts afresh (code made by exec() is never reused)


def user_source_info(names_within: NameStack = NO_NAMES) -> SourceInfo | None:
  """The innermost stack frame outside the minijax package (while `eval_jaxpr` binds an
  equation, where that equation came from), with the current name stack: from
  `names_within` on, when it starts with that (a trace records the names entered since it
  began)."""
  stack = _name_stack.stack.relative_to(names_within) if names_within else _name_stack.stack
  evaluating = _name_stack.evaluating
  if evaluating is not None:
    return evaluating if evaluating.name_stack == stack else evaluating._replace(name_stack=stack)
  frame = sys._getframe(1)
  internal = _is_internal_code
  while frame is not None:
    code = frame.f_code
    is_internal = internal.get(code)
    if is_internal is None:
      if len(internal) >= _MAX_CODE_OBJECTS:
        internal.clear()
      is_internal = internal[code] = code.co_filename.startswith(_PACKAGE_DIR)
    if not is_internal:
      return SourceInfo(code.co_filename, frame.f_lineno, code.co_name, stack)
    frame = frame.f_back
  return None


class JaxprEqn(NamedTuple):
  invars: list[Atom]
  outvars: list[Var]
  primitive: Any
  params: dict[str, Any]
  effects: frozenset
  source_info: SourceInfo | None

  def replace(self, **kwargs) -> "JaxprEqn":
    return self._replace(**kwargs)


class Jaxpr:
  __slots__ = ("constvars", "invars", "outvars", "eqns", "effects", "debug_info")

  def __init__(self, constvars: Sequence[Var], invars: Sequence[Var],
               outvars: Sequence[Atom], eqns: Sequence[JaxprEqn],
               effects: frozenset | None = None, debug_info: Any = None):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self.effects = (jaxpr_effects(self.constvars, self.invars, self.eqns)
                    if effects is None else effects)
    self.debug_info = debug_info

  in_avals = property(lambda self: [v.aval for v in self.invars])
  out_avals = property(lambda self: [v.aval for v in self.outvars])

  def replace(self, **changes) -> Jaxpr:
    """A copy with some fields replaced (`invars=`, `outvars=`, `eqns=`, `effects=`...;
    `effects=None` recomputes them); its `debug_info`, unless given, follows its
    variables (`derived_debug_info`)."""
    fields = {k: getattr(self, k) for k in self.__slots__}
    fields.update(changes)
    if "debug_info" not in changes:
      fields["debug_info"] = derived_debug_info(self, fields["invars"], fields["outvars"])
    return Jaxpr(**fields)

  def __str__(self):
    from minijax.core.pretty import pp_jaxpr
    return pp_jaxpr(self)

  __repr__ = __str__

  def pretty_print(self, *, source_info: bool = False, print_shapes: bool = True,
                   custom_pp_eqn_rules: bool = True, name_stack: bool = False,
                   print_effects: bool = False, **format_options) -> str:
    """This jaxpr as text, with JAX's options (`minijax.core.pretty.pretty_print`)."""
    from minijax.core.pretty import pretty_print
    return pretty_print(self, source_info=source_info, print_shapes=print_shapes,
                        custom_pp_eqn_rules=custom_pp_eqn_rules, name_stack=name_stack,
                        print_effects=print_effects, **format_options)


def jaxpr_effects(constvars, invars, eqns) -> frozenset:
  """The effects of a jaxpr: its equations' effects, where an effect on an operand
  (`InputEffect`, a ref's say) names the jaxpr input it is (constvars counted first) and
  is dropped when the value was made inside."""
  effects = effects_lib.union(e.effects for e in eqns)
  if not any(isinstance(e, effects_lib.InputEffect) for e in effects):
    return effects
  position = {v: i for i, v in enumerate([*constvars, *invars])}
  out = set()
  for eqn in eqns:
    out.update(_eqn_input_effects(eqn, position))
  return frozenset(out)


def _eqn_input_effects(eqn, position: dict):
  for e in eqn.effects:
    if not isinstance(e, effects_lib.InputEffect):
      yield e
    elif e.input_index < len(eqn.invars):
      k = position.get(eqn.invars[e.input_index])
      if k is not None:
        yield e.with_index(k)


class ClosedJaxpr:
  # Weakly referenceable: compiled executables and transformed jaxprs are cached while the
  # jaxpr they come from lives (`core.caches.WeakLRU`).
  __slots__ = ("jaxpr", "consts", "__weakref__")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
    assert len(jaxpr.constvars) == len(consts), (len(jaxpr.constvars), len(consts))
    self.jaxpr = jaxpr
    self.consts = list(consts)

  in_avals = property(lambda self: self.jaxpr.in_avals)
  out_avals = property(lambda self: self.jaxpr.out_avals)
  effects = property(lambda self: self.jaxpr.effects)
  eqns = property(lambda self: self.jaxpr.eqns)
  constvars = property(lambda self: self.jaxpr.constvars)
  invars = property(lambda self: self.jaxpr.invars)
  outvars = property(lambda self: self.jaxpr.outvars)
  literals = property(lambda self: self.consts)  # JAX's other name for them

  def __str__(self):
    from minijax.core.pretty import pp_jaxpr
    return pp_jaxpr(self.jaxpr, self.consts)

  __repr__ = __str__

  def pretty_print(self, **options) -> str:
    """Its jaxpr as text (`Jaxpr.pretty_print`)."""
    return self.jaxpr.pretty_print(**options)


def derived_debug_info(jaxpr: Jaxpr, invars: Sequence[Any], outvars: Sequence[Any]) -> Any:
  """`jaxpr.debug_info` for a jaxpr made from `jaxpr` with these inputs and outputs (a
  pruned, reordered or extended copy): a variable keeps its argument name or result path,
  a new one is unnamed (`""`)."""
  debug = jaxpr.debug_info
  if not hasattr(debug, "_replace"):  # None, or an object of a library's own
    return debug
  names, paths = debug.arg_names, debug.result_paths
  if names is not None and len(names) == len(jaxpr.invars):
    named = {id(v): n for v, n in zip(jaxpr.invars, names)}
    names = tuple(named.get(id(v), "") for v in invars)
  else:
    names = None
  if isinstance(paths, tuple) and len(paths) == len(jaxpr.outvars):
    pathed: dict = {}
    for v, p in zip(jaxpr.outvars, paths):
      pathed.setdefault(id(v), p)
    paths = tuple(pathed.get(id(v), "") for v in outvars)
  else:
    paths = None
  return debug._replace(arg_names=names, result_paths=paths)


def hoist_consts(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
  """`(closed with its constants turned into leading inputs, the constants)`: the form that
  call primitives (`jit_p`, control flow, remat, custom derivatives) take, so that their
  constants travel as operands, visible to every transformation (they may be tracers)."""
  jaxpr = closed.jaxpr
  if not jaxpr.constvars:
    return closed, list(closed.consts)
  hoisted = jaxpr.replace(constvars=[], invars=[*jaxpr.constvars, *jaxpr.invars])
  return ClosedJaxpr(hoisted, []), list(closed.consts)


# ----------------------------------------------------------------------------- evaluation

def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
  """Interprets `jaxpr` by binding each equation's primitive on the current trace."""
  env: dict[Var, Any] = {}

  def read(atom):
    return atom.val if type(atom) is Literal else env[atom]

  if len(args) != len(jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  state = _name_stack
  outer, base = state.evaluating, state.stack
  for eqn in jaxpr.eqns:  # (equation_context's work, inline: this loop is a hot path)
    info = eqn.source_info
    if info is not None:
      state.evaluating = info
      state.stack = base + info.name_stack if info.name_stack else base
    try:
      out = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
    except Exception as e:
      _add_eqn_note(e, eqn)
      raise
    finally:
      state.evaluating, state.stack = outer, base
    if eqn.primitive.multiple_results:
      env.update(zip(eqn.outvars, out))
    else:
      env[eqn.outvars[0]] = out
  return [read(v) for v in jaxpr.outvars]


def eval_closed_jaxpr(closed: ClosedJaxpr, *args) -> list[Any]:
  return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _add_eqn_note(e: Exception, eqn: JaxprEqn) -> None:
  if getattr(e, "_minijax_noted", False):
    return
  where = f" from {eqn.source_info}" if eqn.source_info else ""
  e.add_note(f"while evaluating the equation '{eqn.primitive}'{where}")
  try:
    e._minijax_noted = True
  except AttributeError:
    pass


# ----------------------------------------------------------------------------- typechecking

class JaxprTypeError(TypeError):
  pass


def typecheck_jaxpr(jaxpr: Jaxpr) -> None:
  """Checks variable scoping, every equation's output types and effects."""
  from minijax.core.pretty import pp_eqn
  defined: set[Var] = set()

  def check_atom(atom, eqn=None):
    if type(atom) is Literal:
      return
    if atom not in defined:
      where = f" in equation:\n  {pp_eqn(eqn)}" if eqn is not None else " as an output"
      raise JaxprTypeError(f"variable {atom} is used before it is defined{where}")

  positions = {v: i for i, v in enumerate([*jaxpr.constvars, *jaxpr.invars])}
  for v in [*jaxpr.constvars, *jaxpr.invars]:
    if v in defined:
      raise JaxprTypeError(f"variable {v} is bound twice")
    defined.add(v)
  for eqn in jaxpr.eqns:
    for atom in eqn.invars:
      check_atom(atom, eqn)
    in_avals = [atom.aval for atom in eqn.invars]
    try:
      out_avals, effects = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
    except JaxprTypeError:  # a bad param, named by the rule
      raise
    except Exception as e:
      raise JaxprTypeError(f"equation fails abstract evaluation ({e}):\n  {pp_eqn(eqn)}") from e
    if not eqn.primitive.multiple_results:
      out_avals = [out_avals]
    declared = [v.aval for v in eqn.outvars]
    if [_strip(a) for a in out_avals] != [_strip(a) for a in declared]:
      raise JaxprTypeError(
          f"equation declares outputs {[a.str_short() for a in declared]} but its primitive "
          f"produces {[a.str_short() for a in out_avals]}:\n  {pp_eqn(eqn)}")
    if not effects <= eqn.effects:
      raise JaxprTypeError(f"equation has effects {set(effects)} but declares "
                           f"{set(eqn.effects)}:\n  {pp_eqn(eqn)}")
    if not set(_eqn_input_effects(eqn, positions)) <= jaxpr.effects:
      raise JaxprTypeError(f"equation effects {set(eqn.effects)} are not within the jaxpr's "
                           f"effects {set(jaxpr.effects)}:\n  {pp_eqn(eqn)}")
    for v in eqn.outvars:
      if v in defined:
        raise JaxprTypeError(f"variable {v} is bound twice, in:\n  {pp_eqn(eqn)}")
      defined.add(v)
  for atom in jaxpr.outvars:
    check_atom(atom)


def _strip(aval):
  return aval.strip_weak_type() if isinstance(aval, ShapedArray) else aval


def literalable(x) -> bool:
  """Python scalars and 0-d numpy values appear inline in jaxprs."""
  import numpy as np
  return isinstance(x, dtypes.PYTHON_SCALARS) or (
      isinstance(x, (np.ndarray, np.generic)) and np.shape(x) == ())
