"""`minijax.core`: avals, primitives, traces and jaxprs (see the modules).  The names JAX
users reach through `jax.core` are here too."""
from minijax.core.avals import AbstractValue, ShapedArray, get_aval
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, eval_jaxpr
from minijax.core.primitive import Primitive


def primal_dtype_to_tangent_dtype(primal_dtype):
  """The dtype of tangents of `primal_dtype` values: itself when inexact, else float0."""
  import numpy as np
  from minijax.core import dtypes
  return dtypes.tangent_dtype(np.dtype(primal_dtype))


__all__ = ["AbstractValue", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive",
           "ShapedArray", "Var", "eval_jaxpr", "get_aval", "primal_dtype_to_tangent_dtype"]
