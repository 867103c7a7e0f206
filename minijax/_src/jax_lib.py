"""`jax.lib` when minijax stands in for JAX (`install_as_jax`): in JAX 0.10.2 it holds only
the version of the jaxlib in use (libraries read it, or probe it for the `xla_bridge` and
`xla_extension` modules that older JAX releases kept there)."""
import jaxlib

__version__ = jaxlib.__version__
