"""`minijax.experimental.pjit.pjit`: JAX's older name of `jit` (in_shardings/out_shardings
included), kept so ported code runs."""
from minijax.staging.jit import jit as pjit

__all__ = ["pjit"]
