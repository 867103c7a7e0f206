"""`minijax.experimental.layout`: JAX's public home of `Layout` and `Format`, which live
with the runtime (`minijax.runtime.layout`)."""
from minijax.runtime.layout import Format, Layout

__all__ = ["Format", "Layout"]
