"""`minijax.core`: avals, primitives, traces and jaxprs (see the modules).  The names JAX
users reach through `jax.core` are here too."""
import numpy as _np

from minijax.core import dtypes as _dtypes
from minijax.core.avals import AbstractValue, ShapedArray, get_aval, pytype_aval_mappings
from minijax.core.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, eval_jaxpr
from minijax.core.primitive import Primitive
from minijax.core.trace import Trace, Tracer, ensure_compile_time_eval


def primal_dtype_to_tangent_dtype(primal_dtype):
  """The dtype of tangents of `primal_dtype` values: itself when inexact, else float0."""
  return _dtypes.tangent_dtype(_np.dtype(primal_dtype))


__all__ = ["AbstractValue", "Atom", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive",
           "ShapedArray", "Trace", "Tracer", "Var", "ensure_compile_time_eval", "eval_jaxpr",
           "get_aval", "primal_dtype_to_tangent_dtype", "pytype_aval_mappings"]
