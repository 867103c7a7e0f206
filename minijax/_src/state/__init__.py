"""`jax._src.state` for libraries: minijax's mutable-array (Ref) types (see `minijax.core.state`)."""
from minijax._src.state import types  # noqa: F401
