"""Forward and reverse mode automatic differentiation.

Rule tables (filled in each primitive's block in minijax/lax/):
  primitive_jvps[p](primals, tangents, **params) -> (primal_out, tangent_out)
  primitive_transposes[p](cotangents_out, *args, **params) -> cotangents_in
where tangents may be the symbolic `Zero(aval)` and transpose args that are linear inputs
are `UndefinedPrimal(aval)`.  `defjvp`, `defjvp2` and `deflinear` build the common rules.
"""
from __future__ import annotations

from typing import Any, Callable

from minijax.core.avals import ShapedArray

JvpRule = Callable[..., tuple[Any, Any]]
TransposeRule = Callable[..., Any]

primitive_jvps: dict[Any, JvpRule] = {}
primitive_transposes: dict[Any, TransposeRule] = {}


class Zero:
  """A symbolic zero tangent or cotangent of a given aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"Zero({self.aval.str_short()})"

  @staticmethod
  def from_primal_value(x) -> "Zero":
    from minijax.core.avals import shaped_abstractify
    return Zero(shaped_abstractify(x).tangent_aval())


class UndefinedPrimal:
  """A linear input of a transpose rule: its value is unknown, only its aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
  return type(x) is UndefinedPrimal


def instantiate_zeros(tangent):
  """A concrete zeros array in place of a symbolic `Zero`."""
  if type(tangent) is Zero:
    from minijax import lax
    aval = tangent.aval
    return lax.full(aval.shape, 0, aval.dtype)
  return tangent


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  from minijax import lax
  return lax.add(x, y)


def defjvp(primitive, *jvp_fns: Callable | None) -> None:
  """One function per argument: `fn(tangent, *primals, **params)` gives that argument's
  contribution to the output tangent; `None` marks a non-differentiable argument."""
  def rule(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    total = Zero.from_primal_value(out) if not primitive.multiple_results else None
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        total = add_tangents(total, fn(t, *primals, **params))
    return out, total
  primitive_jvps[primitive] = rule


def defjvp2(primitive, *jvp_fns: Callable | None) -> None:
  """Like `defjvp`, with the primal output: `fn(tangent, out, *primals, **params)`."""
  def rule(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    total = Zero.from_primal_value(out)
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        total = add_tangents(total, fn(t, out, *primals, **params))
    return out, total
  primitive_jvps[primitive] = rule


def deflinear(primitive, transpose_rule: Callable) -> None:
  """A primitive linear in all its arguments: its jvp applies it to the tangents.
  `transpose_rule(cotangent, **params)` returns one cotangent per argument."""
  def jvp(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      return out, Zero.from_primal_value(out)
    return out, primitive.bind(*map(instantiate_zeros, tangents), **params)

  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, **params)

  primitive_jvps[primitive] = jvp
  primitive_transposes[primitive] = transpose
