"""`jax.experimental.hijax` names, for libraries that define "hi" types at import time.

minijax has no hijax (user-defined high-level types lowered to several low-level arrays).
Libraries such as flax.nnx subclass and register these names when their modules load but use
them only when asked to (nnx: `flax_hijax_variable`, off by default).  So the names exist and
loading works; using hijax raises `NotImplementedError` naming what is missing, rather than
computing anything wrong.
"""
from __future__ import annotations

from minijax.core.avals import AbstractValue
from minijax.interpreters.ad import Zero, instantiate_zeros  # noqa: F401  (re-exported names)

__all__ = ["AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiType",
           "MutableHiType", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "instantiate_zeros", "is_undefined_primal",
           "register_hitype"]

_MISSING = ("jax.experimental.hijax is not implemented by minijax; for flax.nnx, keep "
            "`flax_hijax_variable` off (its default)")


def _unsupported(*_args, **_kwargs):
  raise NotImplementedError(_MISSING)


class HiPrimitive:
  """Base of a hijax primitive: subclassing works, binding raises."""

  def __init__(self, name: str, *_args, **_kwargs):
    self.name = name

  bind = _unsupported


class HiType(AbstractValue):
  """Base of a hijax type: subclassing works, creating one raises."""

  def __new__(cls, *_args, **_kwargs):
    raise NotImplementedError(_MISSING)


class MutableHiType(HiType):
  pass


class AvalQDD:
  def __init__(self, *_args, **_kwargs):
    raise NotImplementedError(_MISSING)


class AvalMutableQDD(AvalQDD):
  pass


class aval_method:
  """Marks a method of a hi type as callable on its tracers; kept as the plain method."""

  def __init__(self, fun):
    self.fun = fun

  def __get__(self, obj, objtype=None):
    return self.fun.__get__(obj, objtype) if obj is not None else self.fun


class aval_property(property):
  pass


class _EffectTypeSet:
  """The effect types control flow admits; hijax effects never arise in minijax."""

  def __init__(self):
    self.types: set[type] = set()

  def add_type(self, effect_type: type) -> None:
    self.types.add(effect_type)

  def contains(self, effect) -> bool:
    return isinstance(effect, tuple(self.types))


control_flow_allowed_effects = _EffectTypeSet()


def is_undefined_primal(_x) -> bool:
  return False


def register_hitype(_python_type, _to_aval) -> None:
  """Recorded by libraries at import; minijax creates no hi types, so nothing to do."""
