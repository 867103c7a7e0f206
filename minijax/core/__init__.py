"""`minijax.core`: avals, primitives, traces and jaxprs (see the modules).  The names JAX
users reach through `jax.core` are here too."""
import numpy as _np

from minijax.core import dtypes as _dtypes
from minijax.core.avals import AbstractValue, ShapedArray, get_aval, pytype_aval_mappings
from minijax.core.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, eval_jaxpr
from minijax.core.primitive import Primitive
from minijax.core.trace import Trace, Tracer, ensure_compile_time_eval
from minijax.core import trace as _trace


def primal_dtype_to_tangent_dtype(primal_dtype):
  """The dtype of tangents of `primal_dtype` values: itself when inexact, else float0."""
  return _dtypes.tangent_dtype(_np.dtype(primal_dtype))


def eval_context():
  """A block in which operations run on concrete values at once (the bottom trace), even
  inside a transformation; a traced value used there raises."""
  return _trace.set_current_trace(_trace.eval_trace())


def max_dim(d1, d2):
  """The larger of two dimension sizes."""
  return max(d1, d2)


def min_dim(d1, d2):
  """The smaller of two dimension sizes."""
  return min(d1, d2)


__all__ = ["eval_context", "max_dim", "min_dim", "AbstractValue", "Atom", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive",
           "ShapedArray", "Trace", "Tracer", "Var", "ensure_compile_time_eval", "eval_jaxpr",
           "get_aval", "primal_dtype_to_tangent_dtype", "pytype_aval_mappings"]
