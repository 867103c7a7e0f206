"""`jax.experimental.pallas.triton` names (GPU kernels): each raises when called, as
`minijax.experimental.pallas`'s do."""
from __future__ import annotations

from minijax.experimental.pallas import unsupported

__all__ = ["CompilerParams", "atomic_add", "load", "store"]

CompilerParams = unsupported("triton.CompilerParams")
atomic_add = unsupported("triton.atomic_add")
load = unsupported("triton.load")
store = unsupported("triton.store")
