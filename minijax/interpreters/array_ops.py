"""The few array operations the interpreters build on, provided by `minijax.lax`.

The interpreters sit below the primitive library and never import it, yet autodiff needs
zeros and the sum of two tangents, and batching must move and broadcast batch axes.
`minijax.lax` installs its functions here when it is imported (`install`); until then
calling one raises.
"""
from __future__ import annotations

from typing import Any, Callable


def _not_installed(*args, **kwargs):
  raise RuntimeError("the interpreters' array operations are not installed: import minijax "
                     "(minijax.lax installs them)")


zeros: Callable[[Any], Any] = _not_installed             # zeros(aval) -> array
add_any: Callable[[Any, Any], Any] = _not_installed      # add_any(x, y): tangent sum
broadcast_in_dim: Callable[..., Any] = _not_installed    # broadcast_in_dim(x, shape, dims)
transpose: Callable[[Any, tuple], Any] = _not_installed  # transpose(x, permutation)
reduce_sum: Callable[[Any, tuple], Any] = _not_installed  # reduce_sum(x, axes)
new_ref: Callable[[Any], Any] = _not_installed           # new_ref(x) -> a Ref holding x
freeze: Callable[[Any], Any] = _not_installed            # freeze(ref) -> the array it holds
addupdate: Callable[[Any, Any], Any] = _not_installed    # addupdate(ref, x): ref[...] += x


def install(**ops: Callable) -> None:
  """Installs `zeros`, `add_any`, `broadcast_in_dim`, `transpose`, `reduce_sum`, and the
  ref operations `new_ref`, `freeze`, `addupdate`."""
  unknown = set(ops) - {"zeros", "add_any", "broadcast_in_dim", "transpose", "reduce_sum",
                        "new_ref", "freeze", "addupdate"}
  if unknown:
    raise TypeError(f"unknown array operations {sorted(unknown)}")
  globals().update(ops)
