"""`minijax.ref`: mutable array references (JAX's `jax.ref`).

`new_ref(x)` makes a `Ref` holding a copy of `x`; `r[idx]` reads it (`get`), `r[idx] = v`
writes it (`set`; `swap` also returns the old value), `addupdate(r, idx, v)` (or
`r.addupdate(v, idx)`) adds into it, and `freeze(r)` returns the array it holds.  Inside
traced functions these are equations with `Read`/`Write`/`Accum` effects, discharged into
pure dataflow before lowering (`minijax.effects.discharge_state`); `docs/effects.md`
explains how."""
from minijax.core.state import AbstractRef, Ref
from minijax.lax.state import addupdate, empty_ref, free_ref, freeze, get, new_ref, set, swap  # noqa: A004

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]
