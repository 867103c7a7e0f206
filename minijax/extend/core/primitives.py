"""minijax's primitives under the names `jax.extend.core.primitives` gives JAX's
(`add_p`, `jit_p`, `custom_jvp_call_p`, ...), looked up where they are defined.

JAX's `call_p` and `closed_call_p` (a call to a jaxpr, inlined when lowered) are minijax's
`jit_p`, the one call primitive it has."""
from __future__ import annotations

import importlib

from minijax.core.primitive import Primitive

# Modules that define primitives beyond those `minijax.lax` re-exports.
_HOMES = ("minijax.lax", "minijax.custom_derivatives", "minijax.lax.misc",
          "minijax.lax.control_flow", "minijax.lax.remat", "minijax.lax.linalg")
_ALIASES = {"call_p": "jit_p", "closed_call_p": "jit_p", "pjit_p": "jit_p"}


def __getattr__(name: str) -> Primitive:
  target = _ALIASES.get(name, name)
  if target.endswith("_p"):
    for home in _HOMES:
      value = getattr(importlib.import_module(home), target, None)
      if isinstance(value, Primitive):
        return value
  raise AttributeError(f"module 'minijax.extend.core.primitives' has no primitive {name!r}")
