"""`minijax.errors`: the exceptions a user may want to catch, under JAX's names.

    try:
      minijax.jit(f)(x)
    except minijax.errors.TracerBoolConversionError:   # `if x > 0:` on a traced x
      ...

`JaxRuntimeError` is jaxlib's, raised when XLA fails at run time.
"""
from __future__ import annotations

from jaxlib._jax import JaxRuntimeError  # noqa: F401

from minijax.core.errors import (  # noqa: F401
    ConcretizationTypeError, InconclusiveDimensionOperation, JAXIndexError, JAXTypeError,
    KeyReuseError, NonConcreteBooleanIndexError, TracerArrayConversionError,
    TracerBoolConversionError, TracerIntegerConversionError, UnexpectedTracerError)
from minijax.core.jaxpr import JaxprTypeError  # noqa: F401

__all__ = ["ConcretizationTypeError", "InconclusiveDimensionOperation", "JAXIndexError",
           "JAXTypeError", "JaxRuntimeError", "JaxprTypeError", "KeyReuseError",
           "NonConcreteBooleanIndexError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]
