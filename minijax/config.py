"""Runtime flags, read from the environment once and changeable with `config.update`.

Each flag has one place to read it (`config.<name>`), so hot paths pay an attribute
load and nothing more.  Observers registered with `on_change` let caches that depend
on a flag (the x64 dtype rules, the tap mechanism) reset themselves.

As in JAX, a flag's `with` block (`with minijax.enable_x64():`) holds in its own thread
only, while `config.update` sets the global value for every thread: `config` is a
`threading.local` whose class holds the global values and whose per-thread instance holds
the blocks' values.  Caches selected by the global values (jit's, Python scalars' avals,
the NaN checks' switch) consult the thread's own values while any block is open anywhere
(`LOCAL_BLOCKS`).

Every flag is a row of `FLAGS`: its name, default, environment variables and validator.
A validator turns an accepted value into the value stored (`True` for `1`) and raises
`ValueError` naming what is allowed for anything else, so a bad value is refused before
it is stored or seen by any observer.  The environment is read, and every variable of
the table checked, when this module is imported: a bad one fails the import with an error
that names the variable, its value and what is allowed (an empty variable counts as
unset).  The device count is read again when the backend starts (`read_env_again`), as JAX
reads `XLA_FLAGS` then: a variable set after the import and before the first computation
counts, unless `config.update` set the flag.

Code ported from JAX keeps working: every flag also answers to JAX's name for it, the
flag's name with a `jax_` prefix (`config.update("jax_enable_x64", True)`,
`config.jax_enable_x64`), and the environment variables JAX reads are read too
(`JAX_ENABLE_X64`, `JAX_DEBUG_NANS`, `JAX_DISABLE_JIT`, `JAX_LOG_COMPILES`, `JAX_TRACEBACK_FILTERING`,
`JAX_PLATFORMS`, and the device count of `XLA_FLAGS=--xla_force_host_platform_device_count=N`);
when both a `MINIJAX_*` variable and JAX's are set, minijax's wins.  An alias is only a
second name for a row: it goes through the same validator.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import sys
import threading
from typing import Any, Callable, Mapping

# The native tap queues have one slot per local device (`csrc/tap_queue.cc`: ids modulo 2048).
MAX_DEVICES = 2048
MAX_QUEUE_BYTES = 2**63 - 1  # the native queues count bytes in signed 64-bit integers


@dataclasses.dataclass(frozen=True)
class Flag:
  """One flag: `validate(value)` returns what to store or raises ValueError; `parse(text)`
  reads an environment variable (then `validate` checks the result); `allowed` says, in
  words, what `validate` accepts, and `env_allowed` what the variable may hold (when that
  reads differently).  The variables read are `env`, else JAX's `env_aliases`, else the
  option `xla_flag` of `XLA_FLAGS`."""
  name: str
  default: Any
  env: str | None
  validate: Callable[[Any], Any]
  parse: Callable[[str], Any]
  allowed: str
  help: str
  env_allowed: str | None = None
  env_aliases: tuple[str, ...] = ()
  xla_flag: str | None = None

  def check(self, value: Any, where: str | None = None) -> Any:
    """`value`, validated for this flag; the error names `where` (the flag by default)."""
    try:
      return self.validate(value)
    except (TypeError, ValueError):
      where = where or f"minijax.config.{self.name}"
      raise ValueError(f"{where} cannot be {value!r}: expected {self.allowed}") from None

  def env_value(self, environ: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
    """`(where, text)`: the first of the flag's variables that is set and not empty."""
    for variable in (self.env, *self.env_aliases):
      raw = environ.get(variable) if variable else None
      if raw is not None and raw.strip():
        return f"the environment variable {variable}={raw!r}", raw
    if self.xla_flag:
      raw = _xla_flag(environ.get("XLA_FLAGS", ""), self.xla_flag)
      if raw is not None:
        return f"XLA_FLAGS' --{self.xla_flag}={raw}", raw
    return None

  def from_env(self, environ: Mapping[str, str] = os.environ) -> Any:
    """The flag's value from the environment (the default when none of its variables is
    set); a bad value raises ValueError naming the variable, the value and what is
    allowed."""
    found = self.env_value(environ)
    if found is None:
      return self.default
    where, raw = found
    try:
      return self.validate(self.parse(raw.strip()))
    except (TypeError, ValueError, OverflowError):
      raise ValueError(f"{where} is not valid for minijax.config.{self.name}: expected "
                       f"{self.env_allowed or self.allowed}") from None


def _xla_flag(xla_flags: str, name: str) -> str | None:
  """The value of `--name=value` in `XLA_FLAGS` (the last one wins)."""
  found = None
  for option in xla_flags.split():
    key, _, value = option.partition("=")
    if key.lstrip("-") == name:
      found = value
  return found


_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f")


def _parse_bool(text: str) -> bool:
  lowered = text.lower()
  if lowered in _TRUE:
    return True
  if lowered in _FALSE:
    return False
  raise ValueError(text)


def _validate_bool(value) -> bool:
  if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
    return bool(value)
  if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
    return bool(value)  # numpy's bool scalar
  raise ValueError(value)


def bool_flag(name: str, env: str | None, default: bool, help: str, **kwargs) -> Flag:
  return Flag(name, default, env, _validate_bool, _parse_bool, "True or False", help,
              env_allowed="one of " + ", ".join(_TRUE + _FALSE), **kwargs)


def int_flag(name: str, env: str | None, default: int, low: int, high: int, help: str,
             unit: str = "", **kwargs) -> Flag:
  def validate(value) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
      raise ValueError(value)
    value = value.__index__()
    if not low <= value <= high:
      raise ValueError(value)
    return value
  unit = f" {unit}" if unit else ""
  return Flag(name, default, env, validate, int, f"an integer from {low} to {high}{unit}", help,
              **kwargs)


def float_flag(name: str, env: str | None, default: float, low: float, high: float,
               help: str, unit: str = "", **kwargs) -> Flag:
  def validate(value) -> float:
    if isinstance(value, (bool, str, bytes)):
      raise ValueError(value)
    value = float(value)
    if math.isnan(value) or not low <= value <= high:
      raise ValueError(value)
    return value
  unit = f" {unit}" if unit else ""
  return Flag(name, default, env, validate, float, f"a number from {low:g} to {high:g}{unit}",
              help, **kwargs)


def choice_flag(name: str, env: str | None, default: str, choices: tuple[str, ...],
                help: str, **kwargs) -> Flag:
  def validate(value) -> str:
    if not isinstance(value, str) or value not in choices:
      raise ValueError(value)
    return value
  return Flag(name, default, env, validate, str,
              "one of " + ", ".join(repr(c) for c in choices), help, **kwargs)


def _validate_platforms(value):
  """minijax runs on CPU: JAX's `jax_platforms` is accepted when it allows the CPU."""
  if value is None or value == "":
    return value
  if not isinstance(value, str) or "cpu" not in [p.strip() for p in value.split(",")]:
    raise ValueError(value)
  return value


def _validate_only(allowed: Any):
  def validate(value):
    if value != allowed or isinstance(value, str) != isinstance(allowed, str):
      raise ValueError(value)
    return allowed
  return validate


def _validate_path(value):
  if value is None:
    return None
  if isinstance(value, os.PathLike):
    value = os.fspath(value)
  if not isinstance(value, str) or not value:
    raise ValueError(value)
  return value


def _validate_default_device(value):
  """None, the platform name 'cpu', or a device (checked by what it has: this floor knows
  no device class)."""
  if value is None or value == "cpu":
    return value
  if isinstance(value, str) or getattr(value, "platform", None) != "cpu" or not hasattr(
      value, "id"):
    raise ValueError(value)
  return value


PRNG_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32", "threefry4x32")


def _validate_true(value) -> bool:
  if _validate_bool(value) is not True:
    raise ValueError(value)
  return True


MATMUL_PRECISIONS = ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
                     "bfloat16_3x", "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM",
                     "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16", "BF16_BF16_F32",
                     "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "TF32_TF32_F32",
                     "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")


def _validate_precision(value):
  if value is not None and value not in MATMUL_PRECISIONS:
    raise ValueError(value)
  return value


TAP_MECHANISMS = ("native", "callback")
TAP_DELIVERIES = ("auto", "immediate", "deferred")
HOST_CALLBACK_SEMANTICS = ("seed", "jax")
TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
TRANSFER_DIRECTIONS = ("host_to_device", "device_to_device", "device_to_host")


def _validate_transfer_guard(value):
  if value is not None and value not in TRANSFER_GUARD_LEVELS:
    raise ValueError(value)
  return value


def _transfer_guard_flag(direction: str | None) -> Flag:
  name = "transfer_guard" + (f"_{direction}" if direction else "")
  what = (f"{direction.replace('_', '-')} transfers" if direction else
          "every transfer (set-only: it sets the three per direction)")
  return Flag(name, None, f"MINIJAX_{name.upper()}", _validate_transfer_guard, str,
              "None or one of " + ", ".join(map(repr, TRANSFER_GUARD_LEVELS)),
              f"the transfer guard level of {what} (None: 'allow'); implicit transfers "
              "(not device_put/device_get) are logged or refused at 'log' or 'disallow', "
              "all at 'log_explicit' or 'disallow_explicit'",
              env_aliases=(f"JAX_{name.upper()}",))
EFFECTS_ORDERINGS = ("runtime_token", "stream")
TRACEBACK_FILTERING = ("auto", "off", "tracebackhide", "remove_frames", "quiet_remove_frames")

FLAGS: dict[str, Flag] = {f.name: f for f in [
    bool_flag("enable_x64", "MINIJAX_ENABLE_X64", False,
              "64-bit types (float64, int64, ...) instead of their 32-bit counterparts",
              env_aliases=("JAX_ENABLE_X64",)),
    bool_flag("threefry_partitionable", "MINIJAX_THREEFRY_PARTITIONABLE", True,
              "threefry2x32 draws element i from counter i (JAX 0.10.2's default); False: "
              "JAX's original scheme, which splits and draws from one block of counters",
              env_aliases=("JAX_THREEFRY_PARTITIONABLE",)),
    Flag("use_shardy_partitioner", False, None, _validate_only(False), _parse_bool,
         "False (minijax partitions computations over several devices with GSPMD: shardings "
         "are mhlo.sharding attributes)", "which partitioner XLA runs",
         env_aliases=("JAX_USE_SHARDY_PARTITIONER",)),
    bool_flag("debug_nans", "MINIJAX_DEBUG_NANS", False,
              "check every result for NaNs and name the primitive that made one",
              env_aliases=("JAX_DEBUG_NANS",)),
    bool_flag("debug_infs", "MINIJAX_DEBUG_INFS", False,
              "check every result for infinities and name the primitive that made one",
              env_aliases=("JAX_DEBUG_INFS",)),
    bool_flag("disable_jit", "MINIJAX_DISABLE_JIT", False,
              "run jit- and pmap-decorated functions as plain Python, operation by "
              "operation (for debugging)", env_aliases=("JAX_DISABLE_JIT",)),
    bool_flag("check_tracer_leaks", "MINIJAX_CHECK_TRACER_LEAKS", False,
              "after jit, pmap, scan and vmap trace a function, raise if a tracer of theirs "
              "is still referenced (slow: runs the garbage collector)",
              env_aliases=("JAX_CHECK_TRACER_LEAKS",)),
    bool_flag("enable_checks", "MINIJAX_ENABLE_CHECKS", False,
              "typecheck every jaxpr that tracing produces (slow; for debugging minijax)",
              env_aliases=("JAX_ENABLE_CHECKS",)),
    bool_flag("explain_cache_misses", "MINIJAX_EXPLAIN_CACHE_MISSES", False,
              "log (WARNING) why a jitted function of the user's is traced again",
              env_aliases=("JAX_EXPLAIN_CACHE_MISSES",)),
    bool_flag("use_simplified_jaxpr_constants", "MINIJAX_USE_SIMPLIFIED_JAXPR_CONSTANTS",
              False, "JAX's transitional handling of constants: a numpy array a traced "
              "function closes over is a literal of the jaxpr (printed [...]) instead of "
              "a constant variable", env_aliases=("JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS",)),
    Flag("default_matmul_precision", None, "MINIJAX_DEFAULT_MATMUL_PRECISION",
         _validate_precision, str, f"None or one of {', '.join(MATMUL_PRECISIONS)}",
         "the precision of matrix products given none (on the CPU every one computes "
         "float32 products in float32)", env_aliases=("JAX_DEFAULT_MATMUL_PRECISION",)),
    choice_flag("numpy_rank_promotion", "MINIJAX_NUMPY_RANK_PROMOTION", "allow",
                ("allow", "warn", "raise"),
                "what minijax.numpy does when it broadcasts operands of different ranks",
                env_aliases=("JAX_NUMPY_RANK_PROMOTION",)),
    choice_flag("numpy_dtype_promotion", "MINIJAX_NUMPY_DTYPE_PROMOTION", "standard",
                ("standard", "strict"),
                "whether minijax.numpy promotes operands of different dtypes (strict: only "
                "weakly typed Python scalars)", env_aliases=("JAX_NUMPY_DTYPE_PROMOTION",)),
    bool_flag("log_compiles", "MINIJAX_LOG_COMPILES", False,
              "log every compilation on the 'minijax' logger at WARNING level",
              env_aliases=("JAX_LOG_COMPILES",)),
    bool_flag("log_checkpoint_residuals", "MINIJAX_LOG_CHECKPOINT_RESIDUALS", False,
              "log (WARNING, else DEBUG) what each checkpoint saves for the backward pass "
              "when it is partially evaluated", env_aliases=("JAX_LOG_CHECKPOINT_RESIDUALS",)),
    choice_flag("tap_mechanism", "MINIJAX_TAP_MECHANISM", "native", TAP_MECHANISMS,
                "how compiled code hands tapped values to the host"),
    choice_flag("tap_delivery", "MINIJAX_TAP_DELIVERY", "auto", TAP_DELIVERIES,
                "when taps reach the host: 'immediate' (during the computation), "
                "'deferred' (their values become outputs, delivered in program order when "
                "the computation ends) or 'auto' (the platform's best: immediate on the "
                "CPU; see docs/effects.md)"),
    choice_flag("effects_ordering", "MINIJAX_EFFECTS_ORDERING", "stream",
                EFFECTS_ORDERINGS,
                "how single-device programs with ordered effects are ordered across calls: "
                "'stream' (the default: one shared XLA execution stream, the token made "
                "inside the program) or 'runtime_token' (a token passed in and out of every "
                "execution, the seed's design; see docs/effects.md)"),
    choice_flag("host_callback_semantics", "MINIJAX_HOST_CALLBACK_SEMANTICS", "seed",
                HOST_CALLBACK_SEMANTICS,
                "host_callback's API and behaviour: the seed's, or JAX 0.4.34's"),
    choice_flag("traceback_filtering", "MINIJAX_TRACEBACK_FILTERING", "auto",
                TRACEBACK_FILTERING, "which frames of minijax errors' tracebacks are shown",
                env_aliases=("JAX_TRACEBACK_FILTERING",)),
    Flag("platforms", None, "MINIJAX_PLATFORMS", _validate_platforms, str,
         "None, or a comma-separated list of platforms that includes 'cpu' (minijax runs "
         "on the CPU only)", "JAX's jax_platforms", env_aliases=("JAX_PLATFORMS",)),
    choice_flag("cpu_collectives_implementation", None, "gloo", ("gloo",),
                "CPU collectives across processes (minijax.distributed): gloo, JAX's default"),
    choice_flag("default_prng_impl", "MINIJAX_DEFAULT_PRNG_IMPL", "threefry2x32", PRNG_IMPLS,
                "the PRNG implementation of keys made without impl=",
                env_aliases=("JAX_DEFAULT_PRNG_IMPL",)),
    choice_flag("explicit_x64_dtypes", "MINIJAX_EXPLICIT_X64_DTYPES", "warn",
                ("warn", "error", "allow"),
                "what asking for a 64-bit dtype without x64 does: warn and use the 32-bit "
                "one, raise, or ('allow') honour it while defaults and values stay 32-bit", env_aliases=("JAX_EXPLICIT_X64_DTYPES",)),
    Flag("default_device", None, None, _validate_default_device, str,
         "None, 'cpu' or a CPU device (minijax runs on the CPU only)",
         "where values without a device and computations on them go (None: device 0)"),
    bool_flag("allow_f16_reductions", "MINIJAX_ALLOW_F16_REDUCTIONS", True,
              "whether reduce_sum may sum float16 or bfloat16 operands over axes longer "
              "than 1 (False: ValueError)", env_aliases=("JAX_ALLOW_F16_REDUCTIONS",)),
    bool_flag("no_tracing", "MINIJAX_NO_TRACING", False,
              "raise RuntimeError when a jitted function would be traced (again)",
              env_aliases=("JAX_NO_TRACING",)),
    bool_flag("no_execution", "MINIJAX_NO_EXECUTION", False,
              "raise RuntimeError when a jitted function would run", env_aliases=("JAX_NO_EXECUTION",)),
    choice_flag("legacy_prng_key", "MINIJAX_LEGACY_PRNG_KEY", "allow",
                ("allow", "warn", "error"),
                "what random functions do with raw uint32 keys (random.PRNGKey's)",
                env_aliases=("JAX_LEGACY_PRNG_KEY",)),
    bool_flag("enable_custom_prng", "MINIJAX_ENABLE_CUSTOM_PRNG", False,
              "random.PRNGKey returns typed key arrays (as random.key does)",
              env_aliases=("JAX_ENABLE_CUSTOM_PRNG",)),
    int_flag("random_seed_offset", "MINIJAX_RANDOM_SEED_OFFSET", 0, -2**63, 2**63 - 1,
             "added to every seed a PRNG key is made from",
             env_aliases=("JAX_RANDOM_SEED_OFFSET",)),
    bool_flag("softmax_custom_jvp", "MINIJAX_SOFTMAX_CUSTOM_JVP", False,
              "nn.softmax differentiates by its own tangent rule (y * (t - sum(y t))) "
              "rather than through exp, sum and divide (JAX 0.10.2's default)",
              env_aliases=("JAX_SOFTMAX_CUSTOM_JVP",)),
    Flag("debug_key_reuse", False, None, _validate_only(False), _parse_bool,
         "False (minijax does not check PRNG keys for reuse)",
         "checking that PRNG keys are used once"),
    int_flag("tap_loop_buffer", "MINIJAX_TAP_LOOP_BUFFER", 1024, 1, 2**24,
             "how many iterations of a while_loop's deferred taps one buffer holds before "
             "it is sent to the host during the computation (tap_delivery='deferred')",
             "iterations"),
    int_flag("tap_queue_bytes", "MINIJAX_TAP_QUEUE_BYTES", 256 * 1024 * 1024, 1,
             MAX_QUEUE_BYTES, "the bound of each device's tap queue", "bytes"),
    float_flag("tap_exit_timeout", "MINIJAX_TAP_EXIT_TIMEOUT", 5.0, 0.0, 1e9,
               "how long the exit handler waits for pending taps before it reports those "
               "not delivered and lets the interpreter exit", "seconds"),
    int_flag("num_cpu_devices", "MINIJAX_NUM_CPU_DEVICES", 1, 1, MAX_DEVICES,
             "the number of CPU devices (read when the XLA client is created)",
             "devices (the native tap queues' limit)",
             xla_flag="xla_force_host_platform_device_count"),
    *[_transfer_guard_flag(d) for d in (None, *TRANSFER_DIRECTIONS)],
    Flag("compilation_cache_dir", None, "MINIJAX_COMPILATION_CACHE_DIR", _validate_path, str,
         "None, or a directory path", "where compiled programs are kept across processes "
         "(the persistent compilation cache; None: off)",
         env_aliases=("JAX_COMPILATION_CACHE_DIR",)),
    bool_flag("enable_compilation_cache", "MINIJAX_ENABLE_COMPILATION_CACHE", True,
              "whether the persistent compilation cache is used when a directory is set",
              env_aliases=("JAX_ENABLE_COMPILATION_CACHE",)),
    float_flag("persistent_cache_min_compile_time_secs",
               "MINIJAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", 1.0, 0.0, 1e9,
               "how long a compilation must take for its program to be kept in the "
               "persistent compilation cache", "seconds",
               env_aliases=("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",)),
    int_flag("persistent_cache_min_entry_size_bytes",
             "MINIJAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", 0, 0, 2**63 - 1,
             "how large a compiled program must be to be kept in the persistent compilation "
             "cache", "bytes", env_aliases=("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES",)),
    int_flag("eager_cache_size", "MINIJAX_EAGER_CACHE_SIZE", 4096, 1, 2**31 - 1,
             "executables of primitives applied outside jit (least recently used "
             "evicted)", "entries"),
    int_flag("jit_cache_size", "MINIJAX_JIT_CACHE_SIZE", 4096, 1, 2**31 - 1,
             "traces and executables each jitted function keeps (oldest evicted), and "
             "executables of staged jaxprs kept while their jaxpr lives (least recently "
             "used evicted)", "entries"),
    int_flag("transform_cache_size", "MINIJAX_TRANSFORM_CACHE_SIZE", 4096, 1, 2**31 - 1,
             "jaxprs rewritten by transformations of call primitives, kept while the "
             "jaxpr they came from lives (least recently used evicted)", "entries"),
]}


# The environment variables JAX reads for a flag minijax also has, read when minijax's own
# variable is not set.
ENV_ALIASES: dict[str, tuple[str, ...]] = {
    f.env: f.env_aliases for f in FLAGS.values() if f.env and f.env_aliases}


def getenv(name: str, default: str | None = None) -> str | None:
  """The value of minijax's environment variable `name`, else of JAX's name for it."""
  for variable in (name, *ENV_ALIASES.get(name, ())):
    value = os.environ.get(variable)
    if value is not None:
      return value
  return default


def read_environ(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
  """Every flag's value as the environment `environ` sets it (ValueError naming a bad
  variable)."""
  return {name: flag.from_env(environ) for name, flag in FLAGS.items()}


# What a `with` block (a `FlagContext`, a user context) sets is in force in its own thread
# only, as JAX's blocks are: `LOCAL_BLOCKS[0]` counts the blocks open in every thread, so
# that the caches keyed by the flags' global values (jit's selected state, Python scalars'
# avals) know when a thread may see other values: while it is 0, every thread sees the
# global values.
LOCAL_BLOCKS = [0]
_lock = threading.Lock()
_generation = [0]  # bumped by each global change of a JIT_KEY_FLAGS flag


class Config(threading.local):
  """The flags' values, as attributes; `update` changes one for every thread.

  Each flag's global value is an attribute of the class; a `with` block's value is an
  attribute of the instance, which `threading.local` keeps per thread, so in the block's
  thread it shadows the global value and elsewhere it does not exist."""

  def __init__(self):  # (runs in each thread that reads the flags: nothing to set)
    pass

  @staticmethod
  def canonical_name(name: str) -> str:
    """The flag `name` stands for: itself, or the flag of a JAX name (`jax_enable_x64`)."""
    if name not in FLAGS and name.startswith("jax_") and name[4:] in FLAGS:
      return name[4:]
    return name

  def update(self, name: str, value: Any) -> None:
    """Sets the flag's global value (a `with` block of this thread keeps its own value in
    force here until it ends)."""
    name = self.canonical_name(name)
    flag = FLAGS.get(name)
    if flag is None:
      known = ", ".join(sorted(FLAGS))
      raise AttributeError(f"minijax.config has no flag {name!r}; known flags: {known} "
                           "(each also as JAX's name, with a jax_ prefix)")
    value = flag.check(value)
    if name == "transfer_guard":  # as in JAX, set-only: it sets each direction's
      for direction in TRANSFER_DIRECTIONS:
        self.update(f"transfer_guard_{direction}", value)
    self._set_global(name, value)
    _updated.add(name)

  def _set_global(self, name: str, value: Any) -> None:
    """Makes `value` (valid) the global value and tells the observers."""
    guard = _guards.get(name)
    if guard is not None:
      guard(value)
    setattr(Config, name, value)
    if name in JIT_KEY_FLAGS:
      _generation[0] += 1
    for observer in _observers:
      observer(name, value)

  def get_global(self, name: str) -> Any:
    """The flag's value outside every `with` block of its context manager (JAX's
    `State.get_global()`)."""
    return getattr(Config, self.canonical_name(name))

  def _read(self, name: str) -> Any:
    return getattr(self, self.canonical_name(name))

  def _enter(self, name: str, value: Any) -> None:
    """A `with` block sets the flag to `value` in this thread until `_exit`; `update`
    inside it changes the global value, in force here again once every block has ended."""
    name = self.canonical_name(name)
    if name != "user_contexts":
      value = FLAGS[name].check(value)
      guard = _guards.get(name)
      if guard is not None:
        guard(value)
    self.__dict__.setdefault("_stacks", {}).setdefault(name, []).append(value)
    self._set_local(name, value)
    with _lock:
      LOCAL_BLOCKS[0] += 1

  def _exit(self, name: str) -> None:
    name = self.canonical_name(name)
    stack = self.__dict__["_stacks"][name]
    stack.pop()
    self._set_local(name, stack[-1] if stack else None, ended=not stack)
    with _lock:
      LOCAL_BLOCKS[0] -= 1

  def _set_local(self, name: str, value: Any, ended: bool = False) -> None:
    if ended:
      threading.local.__delattr__(self, name)
    else:
      threading.local.__setattr__(self, name, value)
    self.__dict__.pop("_key_state", None)
    for observer in _local_observers:
      observer(name, value)

  def read_env_again(self, name: str, environ: Mapping[str, str] = os.environ) -> Any:
    """Reads flag `name` from the environment once more, unless `update` has set it: for
    settings read when what they configure starts (the device count, when the backend
    starts), so that a script may set the variable after importing minijax.  A bad value
    raises ValueError naming the variable, as at import."""
    if name not in _updated:
      setattr(Config, name, FLAGS[name].from_env(environ))
    return getattr(self, name)

  def parse_flags_with_absl(self) -> None:
    """JAX's test programs call this at import to read `--jax_*` command-line flags; minijax
    reads its flags from environment variables (JAX's names too).  What it keeps of JAX's is
    the side effect tests rely on: absl's flags (when absl is installed) are parsed, so
    absltest's `create_tempdir` works under pytest."""
    try:
      from absl import flags as absl_flags
    except ImportError:
      return
    if not absl_flags.FLAGS.is_parsed():
      absl_flags.FLAGS([sys.argv[0] if sys.argv else ""], known_only=True)

  def on_change(self, observer: Callable[[str, Any], None]) -> None:
    """`observer(name, value)` is called after each change of a global value."""
    _observers.append(observer)

  def on_local_change(self, observer: Callable[[str, Any], None]) -> None:
    """`observer(name, value)` is called, in the thread, when a `with` block of that
    thread starts or ends: `value` is the innermost open block's value, None once no block
    of the flag is open there (its global value is in force again)."""
    _local_observers.append(observer)

  def guard(self, name: str, check: Callable[[Any], None]) -> None:
    """`check(value)` runs before a valid new value of `name` is stored and may refuse it
    by raising (a flag read once, such as the device count, refuses changes after use)."""
    _guards[name] = check

  @property
  def _observers(self) -> list:
    return _observers

  def read(self, name: str) -> Any:
    """The value of the flag `name` (minijax's name or JAX's), as JAX's `config.read`."""
    canonical = self.canonical_name(name)
    if canonical not in FLAGS:
      raise AttributeError(f"Unrecognized config option: {name}")
    return getattr(self, canonical)

  @property
  def values(self) -> dict[str, Any]:
    """Every flag's value in force here, by JAX's name (`jax_enable_x64`), as JAX's
    `config.values` (libraries test `"jax_<flag>" in config.values`)."""
    return {f"jax_{name}": getattr(self, name) for name in FLAGS}

  @property
  def x64_enabled(self) -> bool:
    """Whether 64-bit types are on (JAX's name for `enable_x64`'s value)."""
    return self.enable_x64

  def __getattr__(self, name: str):
    # Only called for names that are not attributes: JAX's names of minijax's flags.
    canonical = self.canonical_name(name)
    if canonical != name:
      return getattr(self, canonical)
    raise AttributeError(f"minijax.config has no flag {name!r}")

  def __setattr__(self, name, value):
    raise AttributeError("use minijax.config.update(name, value) to change a flag")


_observers: list = []
_local_observers: list = []
_guards: dict = {}
_updated: set = set()  # flags set with `update`
for _name, _value in read_environ().items():
  setattr(Config, _name, _value)
# make_user_context's values: one per context made, a jit cache key like the flags.
Config.user_contexts = ()
_user_globals: list = []
config = Config()


def compile_log_level() -> int:
  """The level of the records tracing, lowering and compiling log on the "minijax" logger
  (JAX's wording): WARNING under `log_compiles`, DEBUG when that logger shows debug
  records, else 0 (no record)."""
  if config.log_compiles:
    return logging.WARNING
  return logging.DEBUG if logging.getLogger("minijax").isEnabledFor(logging.DEBUG) else 0


# Flags that change what tracing or lowering produces, whether the fast path may skip NaN
# checks, or whether compiled code runs at all (and make_user_context's values).  Like
# JAX's trace context, they key jit's caches and the traces of control-flow bodies:
# switching a flag back and forth reuses what was traced and compiled before.
JIT_KEY_FLAGS = ("enable_x64", "threefry_partitionable", "tap_mechanism", "tap_delivery", "tap_loop_buffer", "debug_nans", "debug_infs",
                 "host_callback_semantics", "effects_ordering", "disable_jit",
                 "numpy_rank_promotion", "numpy_dtype_promotion", "default_matmul_precision",
                 "no_execution", "allow_f16_reductions", "default_device", "user_contexts",
                 "explicit_x64_dtypes")


def jit_key_state() -> tuple:
  """The values of `JIT_KEY_FLAGS` in force in this thread now."""
  return tuple(getattr(config, name) for name in JIT_KEY_FLAGS)


def global_key_state() -> tuple:
  """The global values of `JIT_KEY_FLAGS` (those of every thread outside `with` blocks)."""
  return tuple(getattr(Config, name) for name in JIT_KEY_FLAGS)


def thread_key_state() -> tuple:
  """`jit_key_state()`, kept for this thread until one of its blocks starts or ends or a
  global value changes: the key of caches that are selected per call while blocks are
  open (`LOCAL_BLOCKS`)."""
  local = config.__dict__
  cached = local.get("_key_state")
  if cached is not None and cached[0] == _generation[0]:
    return cached[1]
  state = jit_key_state()
  local["_key_state"] = (_generation[0], state)
  return state


class FlagContext:
  """`with flag_context(name, value):` (or as a decorator) sets a flag for a block and
  restores it after, in the block's thread only, as JAX's `jax.default_prng_impl(...)`
  and its kin do.  As in JAX, a `config.update` inside the block changes the flag's global
  value, in force once the block ends."""

  def __init__(self, name: str, value: Any):
    name = Config.canonical_name(name)
    if name not in FLAGS:
      raise AttributeError(f"minijax.config has no flag {name!r}")
    self.name, self.value = name, FLAGS[name].check(value)

  def __enter__(self):
    config._enter(self.name, self.value)
    return self

  def __exit__(self, *exc):
    config._exit(self.name)
    return False

  def __call__(self, fun: Callable) -> Callable:
    import functools

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
      with self:
        return fun(*args, **kwargs)
    return wrapped


_unset = object()


class State:
  """A flag's context manager, as JAX's `jax.<flag>` objects are: `state(value)` sets it for
  a `with` block or a decorated function (a boolean one without a value: True), `.value`
  is the value in force, `get_global()`/`set_global()` the value outside every block."""
  def __init__(self, name: str):
    self._name = Config.canonical_name(name)
    if self._name not in FLAGS:
      raise AttributeError(f"minijax.config has no flag {name!r}")
    self.__name__ = self._name
    self.__doc__ = (f"Context manager for the flag {self._name!r} (JAX's 'jax_{self._name}')"
                    f": {FLAGS[self._name].help}.")

  @property
  def name(self) -> str:
    return "jax_" + self._name

  def __call__(self, value=_unset) -> FlagContext:
    if value is _unset:
      if FLAGS[self._name].validate is not _validate_bool:
        raise TypeError(f"Context manager for {self._name} config option requires an "
                        "argument representing the new value for the config option.")
      value = True
    return FlagContext(self._name, value)

  @property
  def value(self) -> Any:
    return getattr(config, self._name)

  def get_global(self) -> Any:
    return config.get_global(self._name)

  def set_global(self, value: Any) -> None:
    config.update(self._name, value)

  _set = set_global

  def __bool__(self):
    raise TypeError(f"bool() not supported for the context manager of flag {self._name!r} "
                    "(did you mean to use its .value?)")

  def __repr__(self):
    return f"<minijax flag {self._name}={self.value!r}>"


@contextlib.contextmanager
def transfer_guard(level: str):
  """`with transfer_guard(level):` guards the transfers of every direction at `level`
  ('allow', 'log', 'disallow', 'log_explicit', 'disallow_explicit') for the block."""
  with contextlib.ExitStack() as stack:
    for name in ("transfer_guard", *(f"transfer_guard_{d}" for d in TRANSFER_DIRECTIONS)):
      stack.enter_context(FlagContext(name, level))
    yield


def flag_context(name: str) -> State:
  """The context manager of flag `name` (`minijax.default_prng_impl`): a `State`."""
  return State(name)


class UserContext:
  """What `make_user_context` returns: a value of the user's that keys jit's caches as the
  flags do, set for a block (in its thread) with `with ctx(value):` or globally with
  `set_global`."""
  __slots__ = ("_index",)

  def __init__(self, default_value=None):
    self._index = len(Config.user_contexts)
    _user_globals.append(default_value)
    config._set_global("user_contexts", (*Config.user_contexts, default_value))

  def _replaced(self, values: tuple, value) -> tuple:
    values = list(values)
    values[self._index] = value
    return tuple(values)

  @property
  def value(self):
    return config.user_contexts[self._index]

  def get_global(self):
    return _user_globals[self._index]

  def set_global(self, value) -> None:
    _user_globals[self._index] = value
    config._set_global("user_contexts", self._replaced(Config.user_contexts, value))

  @contextlib.contextmanager
  def __call__(self, value):
    config._enter("user_contexts", self._replaced(config.user_contexts, value))
    try:
      yield
    finally:
      config._exit("user_contexts")


def make_user_context(default_value=None) -> UserContext:
  """A context whose value keys the caches of every jitted function, as JAX's
  `jax.make_user_context` does: a function traced under one value is traced again under
  another (`with ctx(2): f(x)`)."""
  return UserContext(default_value)
