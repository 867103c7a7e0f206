"""`jax._src.checkify` for libraries: minijax's `checkify` (see `minijax.experimental.checkify`)."""
from typing import TypeVar

from minijax.experimental.checkify import *  # noqa: F401,F403
from minijax.experimental.checkify import JaxException, user_checks  # noqa: F401

Out = TypeVar("Out")
