"""`minijax.experimental.compilation_cache`: JAX's module of that name (see
`minijax.runtime.compilation_cache` for the cache itself)."""
