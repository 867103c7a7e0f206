"""`minijax.core`: avals, primitives, traces and jaxprs (see the modules).  The names JAX
users reach through `jax.core` are here too."""
from minijax.core.avals import AbstractValue, ShapedArray, get_aval, pytype_aval_mappings
from minijax.core.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, eval_jaxpr
from minijax.core.primitive import Primitive
from minijax.core.trace import Trace, Tracer, ensure_compile_time_eval

__all__ = ["AbstractValue", "Atom", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive",
           "ShapedArray", "Trace", "Tracer", "Var", "ensure_compile_time_eval", "eval_jaxpr",
           "get_aval", "pytype_aval_mappings"]
