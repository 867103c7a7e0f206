"""`jax._src.effects` for code written against JAX's effect API: the `Effect` base class and
the effect type sets (`ordered_effects.add_type(MyEffect)`, ...) that JAX programs and
libraries register their effects in.

minijax keeps an effect's policy on its class (`minijax.core.effects`); each type set here
is a view of one policy flag: `add_type(T)` sets the flag on `T`, `contains(e)` reads it
from `e`.  An effect defined on this `Effect` starts with JAX's defaults (not lowerable,
not ordered, not allowed in control flow) and JAX's identity equality; one defined on
minijax's own `Effect` keeps minijax's defaults, and the sets answer for it too."""
from __future__ import annotations

from typing import Any, Iterable, Set

from minijax.core import effects as _core


class Effect(_core.Effect):
  """The base of effects written against JAX's API: distinct instances are distinct
  effects (as in JAX), and a type does nothing until it is registered in the sets below."""
  ordered = False
  lowerable = False
  allowed_in_control_flow = False
  __eq__ = object.__eq__
  __hash__ = object.__hash__


class JaxprInputEffect(_core.InputEffect):
  """An effect on one input of a jaxpr (`input_index`), as JAX's: re-indexed through
  calls and control flow as minijax's input effects are, with JAX's defaults."""
  ordered = False
  lowerable = False
  allowed_in_control_flow = False

  def __init__(self, input_index: Any):
    self.input_index = input_index

  def replace(self, *, input_index: Any | None = None):
    return type(self)(self.input_index if input_index is None else input_index)

  def data(self) -> tuple:
    return (self.input_index,)

  def __repr__(self):
    return f"{type(self).__name__}({self.input_index})"


Effects = Set[Effect]
no_effects: frozenset = _core.no_effects


class EffectTypeSet:
  """The effect types with one policy flag set (see the module docstring)."""

  def __init__(self, flag: str):
    self._flag = flag

  def add_type(self, effect_type: type) -> None:
    if not (isinstance(effect_type, type) and issubclass(effect_type, _core.Effect)):
      raise TypeError(f"add_type takes a subclass of Effect, got {effect_type!r}")
    setattr(effect_type, self._flag, True)

  def contains(self, effect) -> bool:
    return bool(getattr(effect, self._flag, False))

  def filter_in(self, effects: Iterable) -> list:
    return [e for e in effects if self.contains(e)]

  def filter_not_in(self, effects: Iterable) -> list:
    return [e for e in effects if not self.contains(e)]

  def __repr__(self):
    return f"<effect types with {self._flag}>"


ordered_effects = EffectTypeSet("ordered")
lowerable_effects = EffectTypeSet("lowerable")
control_flow_allowed_effects = EffectTypeSet("allowed_in_control_flow")
custom_derivatives_allowed_effects = EffectTypeSet("allowed_in_custom_derivatives")
remat_allowed_effects = EffectTypeSet("allowed_in_remat")
partial_eval_jaxpr_custom_rule_allowed_effects = EffectTypeSet("allowed_in_remat")
shardable_ordered_effects = EffectTypeSet("ordered_across_devices")
