"""`jax.core` as JAX 0.10.2 has it, when minijax stands in for JAX: `minijax.core`'s names,
and those JAX moved to `jax.extend.core` but still answers here with a warning that they
moved (kfac-jax reads `jax.core.Effects`, `gensym`, `new_jaxpr_eqn`, `DebugInfo`)."""
import warnings

import minijax.core as _core
from minijax.core import *  # noqa: F401,F403
from minijax.extend import core as _extend_core

_MOVED_TO_EXTEND_CORE = frozenset({
    "DebugInfo", "DropVar", "Effect", "Effects", "JaxprTypeError", "check_jaxpr",
    "find_top_trace", "gensym", "get_opaque_trace_state", "jaxprs_in_params",
    "new_jaxpr_eqn", "no_effects", "valid_jaxtype", "nonempty_axis_env_DO_NOT_USE",
    "unsafe_am_i_under_a_jit_DO_NOT_USE", "unsafe_am_i_under_a_vmap_DO_NOT_USE",
    "unsafe_get_axis_names_DO_NOT_USE"})


def __getattr__(name: str):
  if name in _MOVED_TO_EXTEND_CORE:
    warnings.warn(f"jax.core.{name} is deprecated. Use jax.extend.core.{name}.",
                  DeprecationWarning, stacklevel=2)
    return getattr(_extend_core, name)
  try:
    return getattr(_core, name)
  except AttributeError:
    raise AttributeError(f"module 'jax.core' (minijax) has no attribute {name!r}") from None
