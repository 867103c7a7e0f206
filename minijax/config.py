"""Runtime flags, read from the environment once and changeable with `config.update`.

Each flag has one place to read it (`config.<name>`), so hot paths pay an attribute
load and nothing more.  Observers registered with `on_change` let caches that depend
on a flag (the x64 dtype rules, the tap mechanism) reset themselves.

Code ported from JAX keeps working: every flag also answers to JAX's name for it, the
flag's name with a `jax_` prefix (`config.update("jax_enable_x64", True)`,
`config.jax_enable_x64`), and the environment variables JAX reads are read too
(`JAX_ENABLE_X64`, `JAX_DEBUG_NANS`, `JAX_LOG_COMPILES`, `JAX_TRACEBACK_FILTERING`,
`JAX_PLATFORMS`); when both a `MINIJAX_*` variable and JAX's are set, minijax's wins.
An alias is only a second name: `update` resolves it first, so it goes through the
same checks as the flag itself.
"""
from __future__ import annotations

import os
from typing import Any, Callable

# The environment variables JAX reads for a flag minijax also has, read when minijax's
# own variable is not set.
ENV_ALIASES: dict[str, tuple[str, ...]] = {
    "MINIJAX_ENABLE_X64": ("JAX_ENABLE_X64",),
    "MINIJAX_DEBUG_NANS": ("JAX_DEBUG_NANS",),
    "MINIJAX_LOG_COMPILES": ("JAX_LOG_COMPILES",),
    "MINIJAX_TRACEBACK_FILTERING": ("JAX_TRACEBACK_FILTERING",),
    "MINIJAX_PLATFORMS": ("JAX_PLATFORMS",),
}

HOST_CALLBACK_SEMANTICS = ("seed", "jax")
TRACEBACK_FILTERING = ("auto", "off", "tracebackhide", "remove_frames", "quiet_remove_frames")


def getenv(name: str, default: str | None = None) -> str | None:
  """The value of minijax's environment variable `name`, else of JAX's name for it."""
  value = os.environ.get(name)
  if value is not None:
    return value
  for alias in ENV_ALIASES.get(name, ()):
    value = os.environ.get(alias)
    if value is not None:
      return value
  return default


def _env_bool(name: str, default: bool = False) -> bool:
  value = getenv(name)
  if value is None:
    return default
  return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")


def _choice(flag: str, choices: tuple[str, ...]) -> Callable[[Any], str]:
  def check(value):
    if value not in choices:
      raise ValueError(f"minijax.config.{flag} must be one of {choices}, got {value!r}")
    return value
  return check


def _platforms(value):
  """minijax runs on CPU: JAX's `jax_platforms` is accepted when it allows the CPU."""
  if value in (None, ""):
    return value
  names = [p.strip() for p in str(value).split(",")]
  if "cpu" not in names:
    raise ValueError(f"jax_platforms={value!r}: minijax runs on the CPU only; use 'cpu' "
                     "(or leave it unset)")
  return value


class Config:
  _defaults: dict[str, Callable[[], Any]] = {
      "enable_x64": lambda: _env_bool("MINIJAX_ENABLE_X64"),
      "debug_nans": lambda: _env_bool("MINIJAX_DEBUG_NANS"),
      "log_compiles": lambda: _env_bool("MINIJAX_LOG_COMPILES"),
      "tap_mechanism": lambda: getenv("MINIJAX_TAP_MECHANISM", "native"),
      "tap_queue_bytes": lambda: int(getenv("MINIJAX_TAP_QUEUE_BYTES", 256 * 1024 * 1024)),
      "host_callback_semantics": lambda: _HOST_CALLBACK_SEMANTICS(
          getenv("MINIJAX_HOST_CALLBACK_SEMANTICS", "seed")),
      "traceback_filtering": lambda: _TRACEBACK_FILTERING(
          getenv("MINIJAX_TRACEBACK_FILTERING", "auto")),
      "platforms": lambda: _platforms(getenv("MINIJAX_PLATFORMS")),
  }
  # Checks that `update` applies to a new value (the value it returns is stored).
  _checks: dict[str, Callable[[Any], Any]] = {}

  def __init__(self):
    for name, default in self._defaults.items():
      object.__setattr__(self, name, default())
    object.__setattr__(self, "_observers", [])

  @classmethod
  def canonical_name(cls, name: str) -> str:
    """The flag `name` stands for: itself, or the flag of a JAX name (`jax_enable_x64`)."""
    if name not in cls._defaults and name.startswith("jax_") and name[4:] in cls._defaults:
      return name[4:]
    return name

  def update(self, name: str, value: Any) -> None:
    name = self.canonical_name(name)
    if name not in self._defaults:
      known = ", ".join(sorted(self._defaults))
      raise AttributeError(f"minijax.config has no flag {name!r}; known flags: {known} "
                           "(each also as JAX's name, with a jax_ prefix)")
    check = self._checks.get(name)
    if check is not None:
      value = check(value)
    object.__setattr__(self, name, value)
    for observer in self._observers:
      observer(name, value)

  def on_change(self, observer: Callable[[str, Any], None]) -> None:
    self._observers.append(observer)

  def __getattr__(self, name: str):
    # Only called for names that are not attributes: JAX's names of minijax's flags.
    canonical = type(self).canonical_name(name)
    if canonical != name:
      return getattr(self, canonical)
    raise AttributeError(f"minijax.config has no flag {name!r}")

  def __setattr__(self, name, value):
    raise AttributeError("use minijax.config.update(name, value) to change a flag")


_HOST_CALLBACK_SEMANTICS = _choice("host_callback_semantics", HOST_CALLBACK_SEMANTICS)
_TRACEBACK_FILTERING = _choice("traceback_filtering", TRACEBACK_FILTERING)
Config._checks.update(host_callback_semantics=_HOST_CALLBACK_SEMANTICS,
                      traceback_filtering=_TRACEBACK_FILTERING, platforms=_platforms)

config = Config()
