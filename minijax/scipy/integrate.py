"""`minijax.scipy.integrate`: the trapezoidal rule (`numpy.trapezoid` under scipy's name)."""
from minijax.numpy import trapezoid  # noqa: F401

__all__ = ["trapezoid"]
