"""`debug_nans` and `debug_infs`: every result checked for NaNs (infinities), and the
operation that made one named.

A primitive applied eagerly is checked at once: `invalid value (nan) encountered in div`.
A jitted function's results are checked after the compiled call; when one is invalid the
function is run again without `jit` (its de-optimized version, on the same arguments), so
that the eager check names the operation, as JAX does.  When that run is clean (`jit`'s
optimizations made the value, or it is a literal or came in as an input), the error says
so.  Where the de-optimized function is not at hand (a `jit_p` equation evaluated by a
transformation, such as the backward pass) its jaxpr is evaluated op by op instead.  A
computation over a mesh (`shard_map`, `pmap`) reports `Invalid value (nan) encountered in
sharded computation`.  While a check is on, `jit` donates no buffer (the de-optimized run
reads the arguments again).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from minijax.config import LOCAL_BLOCKS, config
from minijax.core import dtypes
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr
from minijax.runtime.array import is_concrete_array

__all__ = ["checking", "check_primitive", "check_jit", "check_jaxpr", "check_sharded"]


class _State:
  on = False  # debug_nans or debug_infs: read on every eager op, so kept as one flag


def checking() -> bool:
  if LOCAL_BLOCKS[0]:  # (a block may set them in this thread only)
    return bool(config.debug_nans or config.debug_infs)
  return _State.on


def _on_change(name, value):
  if name in ("debug_nans", "debug_infs"):
    _State.on = bool(config.get_global("debug_nans") or config.get_global("debug_infs"))


config.on_change(_on_change)
_on_change("debug_nans", None)


def invalid_kind(outs: Sequence[Any]) -> str | None:
  """"nan" or "inf" when a result is one the flags ask to catch, else None."""
  for out in outs:
    if not (is_concrete_array(out) and dtypes.is_inexact(out.dtype)):  # (bfloat16 too)
      continue
    value = np.asarray(out)
    if config.debug_nans and np.isnan(value).any():
      return "nan"
    if config.debug_infs and np.isinf(value).any():
      return "inf"
  return None


def check_primitive(primitive, outs) -> None:
  kind = invalid_kind(outs)
  if kind:
    raise FloatingPointError(f"invalid value ({kind}) encountered in {primitive}")


def _not_reproduced(kind: str, name: str) -> FloatingPointError:
  return FloatingPointError(
      f"invalid value ({kind}) encountered in jit({name}). minijax.config.debug_nans or "
      "debug_infs is set, so the de-optimized function (the function without `jit`) was run "
      "on the same arguments to name the operation that made it, but the de-optimized "
      "function did not produce invalid values: `jit`'s optimizations may have made it, or "
      "it is a nan/inf literal among the results, or it came in as an input. Removing `jit` "
      "may avoid it.")


def check_jit(outs, name: str, deoptimized: Callable[[], Any]) -> None:
  """After `jit(fun)` returned `outs`: on an invalid value, runs `deoptimized()` (`fun`
  without jit) so that the eager checks raise naming the operation."""
  kind = invalid_kind(outs)
  if kind:
    # (said on stdout, as JAX says it: the function's effects, taps included, run again)
    print("Invalid nan value encountered in the output of a minijax.jit function. Calling "
          "the de-optimized version.")
    try:
      deoptimized()
    except (FloatingPointError, ZeroDivisionError) as e:
      raise e from None
    raise _not_reproduced(kind, name)


def check_jaxpr(closed_jaxpr: ClosedJaxpr, args, outs, name: str) -> None:
  """After a compiled `jit_p` equation returned `outs`: on an invalid value, evaluates its
  jaxpr op by op to name the operation."""
  check_jit(outs, name, lambda: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args))


def check_sharded(outs) -> None:
  kind = invalid_kind(outs)
  if kind:
    raise FloatingPointError(f"Invalid value ({kind}) encountered in sharded computation.")
