"""`minijax.core`: avals, primitives, traces and jaxprs (see the modules).  The names JAX
users reach through `jax.core` are here too."""
from minijax.core.avals import AbstractValue, ShapedArray, get_aval
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, eval_jaxpr
from minijax.core.primitive import Primitive

__all__ = ["AbstractValue", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive",
           "ShapedArray", "Var", "eval_jaxpr", "get_aval"]
