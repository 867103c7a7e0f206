"""Caches keyed weakly on the object they derive from, bounded by a flag, clearable at once.

Transformed jaxprs and compiled executables derive from a jaxpr, which lives as long as the
function it was traced from (jit keeps it in its own caches).  A `WeakLRU` keys its
entries on a weak reference to that object (plus the other, hashable, arguments), so an
entry goes when the object does, and keeps at most `config.<size_flag>` entries, evicting
the least recently used.  It is jaxlib's `weakref_lru_cache` (the one JAX uses), which
compares keys by equality and hash (identity, for jaxprs), shares entries between threads
and lets the cached function call the cache again.  A value must not refer to its own key
object, or the entry would keep the key alive.

`clear_all()` empties every `WeakLRU` (`minijax.clear_caches()` calls it).  Changing a
size flag starts its caches afresh at the new size.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

from jaxlib import weakref_lru_cache as _weakref_lru_cache

from minijax.config import config

_instances: "weakref.WeakSet[WeakLRU]" = weakref.WeakSet()


def _no_context():
  return None


class WeakLRU:
  """`cache(key, *args)` is `fn(key, *args)`, remembered while `key` lives (see the module
  docstring)."""

  def __init__(self, fn: Callable[..., Any], size_flag: str):
    self._fn = fn
    self._size_flag = size_flag
    self._cache = self._make()
    _instances.add(self)

  def _make(self):
    return _weakref_lru_cache.weakref_lru_cache(_no_context, self._fn,
                                                getattr(config, self._size_flag))

  def __call__(self, key, *args):
    return self._cache(key, *args)

  def clear(self) -> None:
    self._cache.cache_clear()

  def __len__(self) -> int:
    return self._cache.cache_info().currsize

  def _resize(self) -> None:
    self._cache = self._make()


def clear_all() -> None:
  """Empties every `WeakLRU`."""
  for cache in list(_instances):
    cache.clear()


def _on_config_change(name: str, value: Any) -> None:
  for cache in list(_instances):
    if cache._size_flag == name:
      cache._resize()


config.on_change(_on_config_change)
