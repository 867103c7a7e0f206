"""pytest plugin (registered as `pytest11`): pytest-xdist's workers are fresh interpreters,
so `python -m minijax.run -m pytest -n 2` would run its tests on the real JAX; `minijax.run`
sets MINIJAX_AS_JAX=1, and every pytest process that sees it (the workers too) answers
`import jax` with minijax before any test module is imported.  Without the variable this
module does nothing (and imports nothing)."""
import os

if os.environ.get("MINIJAX_AS_JAX") == "1":
  from minijax.as_jax import install_as_jax

  install_as_jax()
