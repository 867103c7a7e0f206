"""Errors raised by tracing, with messages that say what went wrong and how to fix it."""
from __future__ import annotations


class ConcretizationTypeError(TypeError):
  """A traced value was used where a concrete Python value is needed."""

  def __init__(self, tracer, context: str):
    aval = tracer.aval.str_short()
    name = getattr(tracer, "_debug_name", None)
    what = f"the traced value {name} ({aval})" if name else f"a traced value of type {aval}"
    super().__init__(
        f"{context} was called on {what}, whose concrete value is not known while tracing. "
        "If the value depends only on Python constants or shapes, mark the argument static "
        "with `jit(f, static_argnums=...)` / `static_argnames=...`; for data-dependent "
        "control flow use `lax.cond`, `lax.switch`, `lax.while_loop` or `minijax.numpy.where`.")


class UnexpectedTracerError(RuntimeError):
  """A tracer was used after the transformation that created it had finished."""

  def __init__(self, tracer):
    super().__init__(
        f"Encountered a leaked tracer ({type(tracer).__name__} with aval "
        f"{tracer.aval.str_short()}) from a {tracer._trace!r} that has already finished. "
        "A value created inside a transformed function (jit, grad, vmap, ...) escaped it, "
        "for example through a global variable or a closure; return it as an output instead.")


class MissingRuleError(NotImplementedError):
  """A transformation met a primitive it has no rule for."""

  def __init__(self, primitive, transformation: str, registry: str):
    super().__init__(
        f"primitive '{primitive}' has no {transformation} rule; register one with "
        f"`{registry}[{primitive.name}_p] = rule` in the primitive's block in minijax/lax/")
