"""`minijax.experimental.layout`: JAX's public home of `Layout` and `Format`, which live in
the core beside shardings (`minijax.core.layout`)."""
from minijax.core.layout import Format, Layout

__all__ = ["Format", "Layout"]
