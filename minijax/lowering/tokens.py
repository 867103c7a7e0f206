"""`TokenSet`: the current token of each ordered effect while a function is lowered.

Tokens are kept in one fixed order (`effects.ordered_effects`), which is also the order of
the leading token arguments and results of every lowered function.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from minijax.core.effects import Effect, ordered_effects


class TokenSet:
  __slots__ = ("_tokens",)

  def __init__(self, tokens: dict | None = None):
    self._tokens = dict(tokens or {})

  @classmethod
  def from_lists(cls, effects: Sequence[Effect], tokens: Sequence) -> "TokenSet":
    assert len(effects) == len(tokens), (effects, tokens)
    return cls(dict(zip(effects, tokens)))

  def effects(self) -> tuple[Effect, ...]:
    return tuple(self._tokens)

  def tokens(self) -> list:
    return list(self._tokens.values())

  def get(self, effect: Effect):
    try:
      return self._tokens[effect]
    except KeyError:
      raise KeyError(f"no token for effect {effect!r}; tokens exist for "
                     f"{list(self._tokens)}") from None

  def subset(self, effects: Iterable[Effect]) -> "TokenSet":
    return TokenSet({e: self.get(e) for e in ordered_effects(effects)})

  def update_tokens(self, other: "TokenSet") -> "TokenSet":
    return TokenSet({**self._tokens, **other._tokens})

  def __len__(self):
    return len(self._tokens)

  def __repr__(self):
    return f"TokenSet({list(self._tokens)})"
