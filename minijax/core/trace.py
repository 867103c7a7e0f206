"""Traces, tracers, and the current-trace context.

There is no stack of levels compared on every operation.  A thread has one *current trace*
(an `EvalTrace` at the bottom), and `Primitive.bind` hands every operation to it.  A
transformation creates a trace that remembers the trace that was current when it began
(its `parent`); to process an operation it unwraps its own tracers and binds the rule's
operations on the parent, by making the parent current for the duration.  A value that is
not one of the trace's own tracers belongs to an enclosing computation and is treated as a
constant (zero tangent, unbatched, a captured constant of the jaxpr being built).  When a
transformation ends its trace is marked dead; meeting a tracer of a dead trace is the
"leaked tracer" error.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from typing import Any, Sequence

import numpy as np

from minijax.config import config
from minijax.core import avals as avals_lib
from minijax.core.errors import (ConcretizationTypeError, TracerArrayConversionError,
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)


class Trace:
  """One interpreter of primitives.  Subclasses implement `process_primitive`."""

  def __init__(self):
    self.parent = current_trace()
    self.live = True

  def process_primitive(self, primitive, args: Sequence[Any], params: dict):
    raise NotImplementedError

  def owns(self, x) -> bool:
    """Whether `x` is one of this trace's tracers (a leaked tracer raises here)."""
    if isinstance(x, Tracer):
      if x._trace is self:
        return True
      if not x._trace.live:
        raise UnexpectedTracerError(x)
    return False

  @property
  def main(self):
    """This trace's identity, as libraries written for JAX's (deprecated) `Trace.main`
    compare it: its `tag` where it has one, else itself."""
    return getattr(self, "tag", self)

  def __repr__(self):
    return type(self).__name__


class EvalTrace(Trace):
  """The bottom trace: runs each primitive on concrete values."""

  def __init__(self):
    self.parent = None
    self.live = True

  def process_primitive(self, primitive, args, params):
    for x in args:
      if isinstance(x, Tracer):
        raise UnexpectedTracerError(x)
    return primitive.impl(*args, **params)

  def __repr__(self):
    return "EvalTrace"


class _TraceContext(threading.local):
  def __init__(self):
    self.trace = EvalTrace()
    self.bottom = self.trace
    # Under `ensure_compile_time_eval`, staging traces evaluate operations on concrete
    # values at once instead of recording them.
    self.eager_constant_folding = False


_context = _TraceContext()


def current_trace() -> Trace:
  return _context.trace


@contextlib.contextmanager
def set_current_trace(trace: Trace):
  previous = _context.trace
  _context.trace = trace
  try:
    yield trace
  finally:
    _context.trace = previous


@contextlib.contextmanager
def new_trace(trace: Trace):
  """Makes `trace` current while a transformation runs, and kills it afterwards."""
  try:
    with set_current_trace(trace):
      yield trace
  finally:
    trace.live = False


def check_no_leaks(trace: Trace) -> None:
  """With the flag `check_tracer_leaks` (`checking_leaks()`), raises if tracers of `trace`,
  which has ended, are still referenced from anywhere (a global list, a closure, an
  object's attribute): using one later would raise `UnexpectedTracerError` far from where
  it escaped.  Called by the transformations once their own references are gone."""
  if not config.check_tracer_leaks:
    return
  gc.collect()  # unreachable cycles do not count: user code cannot reach them
  leaked = [r for r in gc.get_referrers(trace) if isinstance(r, Tracer) and r._trace is trace]
  if not leaked:
    return
  lines = []
  for tracer in leaked:
    holders = [h for h in gc.get_referrers(tracer) if h is not leaked]
    held = ", ".join(sorted({f"<{type(h).__name__} {id(h)}>" for h in holders})) or "nothing"
    kind = type(tracer).__name__
    lines.append(f"This {kind} with object id {id(tracer)} was created on line:\n  (not "
                 f"recorded by minijax; its aval is {getattr(tracer, 'aval', '?')})\n"
                 f"<{kind} {id(tracer)}> is referred to by {held}")
  raise Exception(
      f"Leaked trace {trace}. Leaked tracer(s):\n\n" + "\n".join(lines) + "\n\nA value "
      "traced inside a transformation outlived it (stored in a list, a global or an "
      "attribute): return it from the function instead of storing it.")


def is_eval_context() -> bool:
  return type(_context.trace) is EvalTrace


def eval_trace() -> EvalTrace:
  """This thread's bottom trace, which runs primitives on concrete values."""
  return _context.bottom


@contextlib.contextmanager
def ensure_compile_time_eval():
  """Operations on concrete values run now, even inside `jit` or a control-flow body:
  their results are concrete (usable in Python `if`s) rather than staged.  Operations on
  traced values are staged as usual."""
  with constant_folding(True):
    yield


@contextlib.contextmanager
def constant_folding(enabled: bool):
  """Sets whether staging traces run operations on concrete values at once (see above)."""
  previous = _context.eager_constant_folding
  _context.eager_constant_folding = enabled
  try:
    yield
  finally:
    _context.eager_constant_folding = previous


_ASTYPE_HINT = ("To convert the data type of a traced value, try using `x.astype({t})` or "
                "`minijax.numpy.array(x, {t})` instead. ")


class Tracer:
  """A value inside a transformation.  Operators come from the numpy layer."""
  __slots__ = ("_trace", "__weakref__")
  __array_priority__ = 1000

  def __init__(self, trace: Trace, aval: avals_lib.AbstractValue | None = None):
    self._trace = trace
    if aval is not None:  # a library's tracer class, made as JAX's are (with a __dict__)
      self.__dict__["_aval"] = aval

  @property
  def aval(self) -> avals_lib.ShapedArray:
    try:
      return self.__dict__["_aval"]
    except (AttributeError, KeyError):
      raise NotImplementedError(f"{type(self).__name__} defines no aval") from None

  def to_concrete_value(self):
    """The concrete value, when the transformation knows it (e.g. eager jvp primals)."""
    return None

  def _origin_msg(self) -> str:
    """Where the value came from, for errors about using it as a concrete one (a staging
    tracer names the arguments it depends on); empty when unknown."""
    return ""

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)

  @property
  def sharding(self):
    # an Array's attribute; an AttributeError (as in JAX) keeps hasattr() and getattr() working
    raise AttributeError(f"The 'sharding' attribute is not available on traced array with shape "
                         f"{self.aval.str_short()}. To query sharding information on a traced "
                         "value, use `typeof(x).sharding`.")
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def _concrete(self, context: str, error=ConcretizationTypeError, hint: str = ""):
    value = self.to_concrete_value()
    if value is None:
      raise error(self, context, hint)
    return value

  def _check_conversion(self, kind: str) -> None:
    aval = self.aval
    if isinstance(aval, avals_lib.ShapedArray):
      avals_lib.check_conversion(kind, aval.shape, aval.dtype)

  def __bool__(self):
    self._check_conversion("bool")
    return bool(self._concrete("bool()", TracerBoolConversionError))

  def __int__(self):
    self._check_conversion("scalar")
    return int(self._concrete("int()", hint=_ASTYPE_HINT.format(t="int")))

  def __float__(self):
    self._check_conversion("scalar")
    return float(self._concrete("float()", hint=_ASTYPE_HINT.format(t="float")))

  def __complex__(self):
    self._check_conversion("scalar")
    return complex(self._concrete("complex()", hint=_ASTYPE_HINT.format(t="complex")))

  def __index__(self):
    self._check_conversion("index")
    return np.asarray(self._concrete("__index__()", TracerIntegerConversionError)).__index__()

  def __array__(self, dtype=None, copy=None):
    # As in JAX, even where the value is known (eager jvp primals): numpy would drop the
    # tangent, a silently wrong derivative
    raise TracerArrayConversionError(self)

  def __hash__(self):
    raise TypeError(f"unhashable type: {type(self).__name__}")

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    return iter([self[i] for i in range(self.shape[0])])

  def __repr__(self):  # (as JAX's: `JitTracer(float32[3])`, `VmapTracer(aval=..., batched=...)`)
    return f"{type(self).__name__}<{self.aval}>"
