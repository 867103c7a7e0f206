"""`jax._src.ad_util` for libraries (lineax registers a transpose for `stop_gradient_p`):
minijax's primitive and autodiff zeros."""
from minijax.custom_derivatives import SymbolicZero  # noqa: F401
from minijax.interpreters.ad import Zero, instantiate_zeros as instantiate  # noqa: F401
from minijax.interpreters.ad import zeros_like_aval  # noqa: F401
from minijax.lax.misc import stop_gradient_p  # noqa: F401
