"""Runtime flags, read from the environment once and changeable with `config.update`.

Each flag has one place to read it (`config.<name>`), so hot paths pay an attribute
load and nothing more.  Observers registered with `on_change` let caches that depend
on a flag (the x64 dtype rules, the tap mechanism) reset themselves.
"""
from __future__ import annotations

import os
from typing import Any, Callable


def _env_bool(name: str, default: bool = False) -> bool:
  value = os.environ.get(name)
  if value is None:
    return default
  return value.strip().lower() in ("1", "true", "yes", "on")


class Config:
  _defaults: dict[str, Callable[[], Any]] = {
      "enable_x64": lambda: _env_bool("MINIJAX_ENABLE_X64"),
      "debug_nans": lambda: _env_bool("MINIJAX_DEBUG_NANS"),
      "log_compiles": lambda: _env_bool("MINIJAX_LOG_COMPILES"),
      "tap_mechanism": lambda: os.environ.get("MINIJAX_TAP_MECHANISM", "native"),
      "tap_queue_bytes": lambda: int(os.environ.get("MINIJAX_TAP_QUEUE_BYTES", 256 * 1024 * 1024)),
      # CPU collectives across processes (minijax.distributed); gloo, as in JAX
      "cpu_collectives_implementation": lambda: "gloo",
  }
  _aliases = {"jax_cpu_collectives_implementation": "cpu_collectives_implementation"}

  def __init__(self):
    for name, default in self._defaults.items():
      object.__setattr__(self, name, default())
    object.__setattr__(self, "_observers", [])

  def update(self, name: str, value: Any) -> None:
    name = self._aliases.get(name, name)
    if name not in self._defaults:
      known = ", ".join(sorted(self._defaults))
      raise AttributeError(f"minijax.config has no flag {name!r}; known flags: {known}")
    object.__setattr__(self, name, value)
    for observer in self._observers:
      observer(name, value)

  def on_change(self, observer: Callable[[str, Any], None]) -> None:
    self._observers.append(observer)

  def __setattr__(self, name, value):
    raise AttributeError("use minijax.config.update(name, value) to change a flag")


config = Config()
