"""`jax._src.api_util` for libraries (e3nn-jax completes its decorators' argnums and
argnames with `infer_argnums_and_argnames`)."""
from minijax.api_util import infer_argnums_and_argnames

__all__ = ["infer_argnums_and_argnames"]
