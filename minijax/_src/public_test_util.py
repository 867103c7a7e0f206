"""`jax._src.public_test_util` for libraries whose test helpers import JAX's checks from it
(tinygp's `check_close`): minijax's `test_util`."""
from minijax.test_util import check_close, check_grads, check_jvp, check_vjp, numerical_jvp

__all__ = ["check_close", "check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
