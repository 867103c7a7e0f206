"""`minijax.extend`: the API JAX offers libraries that define their own primitives and
transformations (`jax.extend`), mapped onto minijax's own core.

`extend.core` names minijax's `Primitive`, `Jaxpr`, `Var`, ... and its primitives;
`extend.linear_util` wraps functions as JAX's `lu.wrap_init` does; `extend.random` defines
PRNG implementations (`define_prng_impl`); `extend.backend` gives the XLA client
(`get_backend().platform`).  The rule tables a library fills are minijax's own
(`minijax.interpreters.ad.primitive_jvps`, `batching.primitive_batchers`,
`lowering.mlir.register_lowering`), reached as `jax.interpreters.ad`, `.batching` and
`.mlir` (this package's `mlir`: JAX's signatures for lowering rules); their rule
signatures are JAX's."""
from minijax.extend import backend, core, linear_util, mlir, random, source_info_util

__all__ = ["backend", "core", "linear_util", "mlir", "random", "source_info_util"]
