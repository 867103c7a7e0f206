"""`jax._src.state.types`: the abstract value of a mutable array ref, minijax's `AbstractRef`."""
from minijax.core.state import AbstractRef  # noqa: F401

__all__ = ["AbstractRef"]
