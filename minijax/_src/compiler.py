"""`jax._src.compiler` for libraries (chex's `restrict_backends` patches functions here).
minijax compiles in `minijax.staging.compiler`; patching this module does not reach it."""
