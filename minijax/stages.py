"""`minijax.stages`: the stages of a jitted function, as `jax.stages` names them.

`jit(f).trace(*args)` is a `Traced`, `.lower()` a `Lowered`, `.compile()` a `Compiled`;
`Wrapped` is what `jit` returns.  The classes live in `minijax.staging`; this module
only gives them JAX's public home."""
from __future__ import annotations

from typing import Any

from minijax.staging.jit import JitWrapped as Wrapped
from minijax.staging.stages import ArgInfo, Compiled, Lowered, Traced

CompilerOptions = dict[str, Any]
"""Options handed to XLA's compiler (`compile(compiler_options=...)`)."""

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
