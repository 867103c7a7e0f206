"""`minijax.scipy`: the parts of scipy that JAX provides, on minijax arrays."""
from minijax.scipy import linalg  # noqa: F401
