"""`minijax.stages`: the stages of a jitted function, as `jax.stages` names them.

`jit(f).trace(*args)` is a `Traced`, `.lower()` a `Lowered`, `.compile()` a `Compiled`;
`Wrapped` is what `jit` returns.  The classes live in `minijax.staging.jit`; this module
only gives them JAX's public home."""
from __future__ import annotations

from typing import Any

from minijax.staging.jit import Compiled, JitWrapped as Wrapped, Lowered, Traced

CompilerOptions = dict[str, Any]
"""Options handed to XLA's compiler (`compile(compiler_options=...)`)."""

__all__ = ["Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
