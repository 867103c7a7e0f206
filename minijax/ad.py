"""`minijax.ad`: the placeholders of `vjp(...)`'s `.with_refs(...)` (JAX's `jax.ad`).

`with_refs` takes one entry per primal: a `Ref` (the cotangent is accumulated into it,
and `GradRef()` takes its place in the result), `GradValue()` (the cotangent is returned)
or `DontWant()` (`DidntWant()` is returned)."""
from minijax.api import DidntWant, DontWant, GradRef, GradValue

__all__ = ["GradRef", "GradValue", "DontWant", "DidntWant"]
