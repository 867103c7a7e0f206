"""Errors raised by tracing, with messages that say what went wrong and how to fix it."""
from __future__ import annotations


class JAXTypeError(TypeError):
  """The base of minijax's (and JAX's) TypeErrors about traced values."""


class JAXIndexError(IndexError):
  """The base of minijax's (and JAX's) IndexErrors about traced values."""


class ConcretizationTypeError(JAXTypeError):
  """A traced value was used where a concrete Python value is needed."""

  # the first line, JAX's (its subclasses word theirs after the conversion they name)
  lead = "Abstract tracer value encountered where concrete value is expected: traced array " \
         "with shape {aval}"

  def __init__(self, tracer, context: str, hint: str = ""):
    aval = tracer.aval.str_short()
    name = getattr(tracer, "_debug_name", None)
    what = f"the traced value {name} ({aval})" if name else f"a traced value of type {aval}"
    super().__init__(
        f"{self.lead.format(aval=aval)}\n{context} was called on {what}, whose concrete value "
        f"is not known while tracing.{_origin(tracer)}{hint}If the value depends only on "
        "Python constants or shapes, mark the argument static with `jit(f, "
        "static_argnums=...)` / `static_argnames=...`; for data-dependent control flow use "
        "`lax.cond`, `lax.switch`, `lax.while_loop` or `minijax.numpy.where`.")


def _origin(tracer) -> str:
  """The tracer's account of where it came from (`Tracer._origin_msg`) on lines of its own,
  else a space: what goes between two sentences of a message."""
  origin = getattr(tracer, "_origin_msg", lambda: "")()
  return f"{origin}\n" if origin else " "


class UnexpectedTracerError(RuntimeError):
  """A tracer was used after the transformation that created it had finished."""

  def __init__(self, tracer):
    if isinstance(tracer, str):  # a message, as JAX's takes (libraries raise it so)
      super().__init__(tracer)
      return
    super().__init__(
        f"Encountered an unexpected tracer: a leaked tracer ({type(tracer).__name__} with "
        f"aval {tracer.aval.str_short()}) from a {tracer._trace!r} that has already finished. A "
        "function transformed by minijax (jit, grad, vmap, ...) had a side effect that let an "
        "intermediate value escape the transformation. Transformations require that "
        "functions explicitly return their outputs, and disallow saving intermediate values "
        "to global state (a global variable, a closure, an attribute); return it as an "
        f"output instead.{_created_on(tracer)}")


def _created_on(tracer) -> str:
  """Where a staged tracer was made: the user's line of the equation that produced it."""
  var = getattr(tracer, "_var", None)
  for eqn in getattr(tracer._trace, "eqns", ()):
    if var in eqn.outvars and eqn.source_info is not None:
      info = eqn.source_info
      return (f"\nThe leaked intermediate value was created on line "
              f"{info.file}:{info.line} ({info.function}).")
  return ""


class MissingRuleError(NotImplementedError):
  """A transformation met a primitive it has no rule for."""

  # JAX's first words for each transformation
  LEADS = {"jvp": "Differentiation rule", "batching": "Batching rule",
           "transpose": "Transpose rule (for reverse-mode differentiation)"}

  def __init__(self, primitive, transformation: str, registry: str):
    lead = self.LEADS.get(transformation, f"{transformation.capitalize()} rule")
    super().__init__(
        f"{lead} for '{primitive}' not implemented: primitive '{primitive}' has no "
        f"{transformation} rule; register one with `{registry}[{primitive.name}_p] = rule` in "
        "the primitive's block in minijax/lax/")


class TracerBoolConversionError(ConcretizationTypeError):
  """`bool()` (an `if`, `and`, `or`, `not`) of a traced value."""
  lead = "Attempted boolean conversion of traced array with shape {aval}."


class TracerIntegerConversionError(ConcretizationTypeError):
  """`int()` or `__index__` of a traced value (`range(x)`, `list[x]`)."""

  def __init__(self, tracer, context: str, hint: str = ""):
    if context == "__index__()":
      self.lead = "The __index__() method was called on traced array with shape {aval}"
    super().__init__(tracer, context, hint)


class TracerArrayConversionError(JAXTypeError):
  """A traced value handed to numpy (`np.asarray(x)` inside a transformation)."""

  def __init__(self, tracer):
    super().__init__(
        "The numpy.ndarray conversion method __array__() was called on traced array with "
        f"shape {tracer.aval.str_short()}\n{_origin(tracer).lstrip()}A traced value cannot "
        "become a numpy array inside a transformation; use minijax.numpy functions on it "
        "instead, or return it from the transformed function first.")


class NonConcreteBooleanIndexError(JAXIndexError):
  """Boolean-mask indexing with a traced mask: the result's shape would depend on data."""


class KeyReuseError(JAXTypeError):
  """A PRNG key used twice (raised only where key-reuse checking is on)."""


class InconclusiveDimensionOperation(Exception):
  """A shape computation that symbolic dimensions cannot decide."""
