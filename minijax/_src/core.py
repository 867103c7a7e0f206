"""`jax._src.core` for libraries: minijax's core names (see `minijax.core`,
`minijax.extend.core`)."""
from minijax.core import *  # noqa: F401,F403
from minijax.extend.core import *  # noqa: F401,F403
from minijax.extend.core import OpaqueTraceState  # noqa: F401
from minijax.core.trace import is_eval_context as trace_state_clean  # noqa: F401,E402
