"""`jax.version` when minijax stands in for JAX (`install_as_jax`): the JAX release whose API
minijax implements, which `jax.__version__` also reports."""
__version__ = "0.10.2"
__version_info__ = tuple(int(part) for part in __version__.split("."))
_version = __version__
