"""Why `jit` traces a function again: the log of the flag `explain_cache_misses`.

With the flag on (JAX's `jax_explain_cache_misses`), every trace-cache miss of a jitted
function of the user's logs a WARNING on the "minijax" logger that starts with
`TRACING CACHE MISS at <the user's call site>` and says, as JAX does, either that the
function was never seen, or how the closest key traced before differs: the tracing
context (a flag that keys the caches changed: `now X and before Y`), the input pytree,
the values of static arguments, or the input types (per argument, by name; a weak-type
difference is spelled out).  Functions defined inside minijax (the jitted kernels of
`minijax.numpy`) are never explained.
"""
from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger("minijax")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_internal(filename: str | None) -> bool:
  return bool(filename) and os.path.abspath(filename).startswith(_PACKAGE + os.sep)


def _callsite() -> str:
  frame = sys._getframe(1)
  while frame is not None and _is_internal(frame.f_code.co_filename):
    frame = frame.f_back
  return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def explain(fun, name: str, key, states: dict, state: tuple, state_flags, arg_names) -> None:
  """Logs why `key` = (in_tree, avals, static, axis frames) missed the trace cache of `fun` in flag state
  `state`; `states` maps each flag state (values of `state_flags`) to its trace cache."""
  code = getattr(fun, "__code__", None)
  filename = code.co_filename if code is not None else None
  if _is_internal(filename):
    return
  where = f" defined at {filename}:{code.co_firstlineno}" if code is not None else ""
  lines = [f"TRACING CACHE MISS at {_callsite()}:"]
  seen = {s: list(cache) for s, cache in states.items() if cache}
  if not seen:
    lines.append(f"  never seen function:\n    {name} id={id(fun)}{where}")
  else:
    lines.append(f"  for {name}{where}")
    lines.append("  all previously seen cache keys differ. For the closest previous key:")
    if seen.get(state):
      diffs = [_diff_keys(key, old, arg_names) for old in seen[state]]
      lines.append("  " + min(diffs)[-1])
    else:
      other = next(iter(seen))
      changed = [f"  * {flag} differs: now {new} and before {old}"
                 for flag, new, old in zip(state_flags, state, other) if new != old]
      lines.append("  Tracing context doesn't match, e.g. due to config or context manager.\n"
                   + "\n".join(changed))
  logger.warning("\n".join(lines))


def _diff_keys(new, old, arg_names) -> tuple[int, int, str]:
  """(severity, number of differences, explanation) of the difference of two keys."""
  (new_tree, new_avals, new_static, new_axes), (old_tree, old_avals, old_static, old_axes) = \
      new, old
  if new_axes != old_axes:
    return 0, 1, (f"different axis environment (names bound by vmap, pmap or shard_map):\n"
                  f"  * now {list(new_axes)} and before {list(old_axes)}")
  if new_tree != old_tree:
    return 0, 1, f"different input pytree:\n  * now {new_tree} and before {old_tree}"
  if new_static != old_static:
    now = ", ".join(repr(v) for _, v, *_ in new_static)
    before = ", ".join(repr(v) for _, v, *_ in old_static)
    return 1, 1, f"different value of static args: now {now} and before {before}"
  names = arg_names if arg_names and len(arg_names) == len(new_avals) else [
      f"flat argument {i}" for i in range(len(new_avals))]
  diffs, weak_hint = [], False
  for name, a, b in zip(names, new_avals, old_avals):
    if a != b:
      now, before = a.str_short(True), b.str_short(True)
      if a.weak_type != b.weak_type:
        weak_hint = True
        now += f"{{weak_type={a.weak_type}}}"
        before += f"{{weak_type={b.weak_type}}}"
      diffs.append(f"  * at {name}, now {now} and before {before}")
  text = "different input types:\n" + "\n".join(diffs)
  if weak_hint:
    text += ("\n  (weakly typed values come from Python scalars: "
             "https://docs.jax.dev/en/latest/type_promotion.html#weak-types)")
  return 2, len(diffs), text
