"""Staging: trace → lower → compile → cache, the one layer that joins the floors below it.

`compiler` compiles jaxprs for a device (through `lowering` and `runtime`) and installs the
two ways concrete values meet compiled code: the eager impl of every primitive and the impl
of `jit_p`.  `jit` holds `jit` itself: its caches and its dispatch fast path; `stages` its
ahead-of-time stages (`Traced`, `Lowered`, `Compiled`).  Importing this package installs the impls.
"""
from minijax.staging import compiler  # noqa: F401  (installs the eager and jit_p impls)
