"""`minijax.interpreters`: the transformations' interpreters (`ad`, `batching`,
`partial_eval`; see each module).  `xla` holds JAX's table of that name, which libraries
reach as `jax.interpreters.xla` without importing it."""
from minijax.interpreters import xla  # noqa: F401
