"""Effects as data.

An effect is any hashable object; equations and jaxprs carry a frozenset of them.  Whether
an effect must keep program order is a class attribute (`ordered`), read by the lowering,
which threads one token per ordered effect, and by the runtime, which keeps the last token
of each ordered effect per device.  Partial evaluation and dead-code elimination keep every
equation that has an effect.
"""
from __future__ import annotations

import functools
from typing import ClassVar, Iterable


class Effect:
  """Base class of effects.  Subclasses set `ordered = True` to get a token."""
  ordered: ClassVar[bool] = False

  def __repr__(self):
    return type(self).__name__

  def __eq__(self, other):
    return type(self) is type(other)

  def __hash__(self):
    return hash(type(self))


Effects = frozenset
no_effects: frozenset = frozenset()


def ordered_effects(effects: Iterable[Effect]) -> tuple[Effect, ...]:
  """The ordered effects among `effects`, in the one fixed order tokens use."""
  if isinstance(effects, frozenset):
    return _ordered_effects_of_set(effects)
  return tuple(sorted((e for e in effects if e.ordered), key=repr))


@functools.lru_cache(maxsize=1024)
def _ordered_effects_of_set(effects: frozenset) -> tuple[Effect, ...]:
  return tuple(sorted((e for e in effects if e.ordered), key=repr))


def union(effect_sets: Iterable[frozenset]) -> frozenset:
  result = no_effects
  for effects in effect_sets:
    if effects:
      result = result | effects
  return result
