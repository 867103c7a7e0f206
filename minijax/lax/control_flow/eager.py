"""Eager evaluation of control-flow primitives, cached by the structure of their jaxprs.

Applied to concrete arrays, a primitive runs as a compiled one-equation program.  The
shared dispatch cache keys on params, and a control-flow equation's params hold jaxprs
traced afresh at every call of `lax.scan` & co., so each eager call would compile again
(and the cache would keep every one).  Here the key is a structural fingerprint of the
params instead: jaxprs with variables numbered canonically, literals by their bytes,
other params by value (callables such as tap functions, and constants, by identity).  The jaxprs in
these params hold no constants (they are operands), so equal fingerprints mean equal
programs.  The cache is a bounded LRU.
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from minijax.config import config
from minijax.core.avals import shaped_abstractify
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal

_CACHE_SIZE = 256
_cache: collections.OrderedDict = collections.OrderedDict()


def fingerprint(value: Any) -> Any:
  """A hashable value equal for structurally equal params."""
  if isinstance(value, ClosedJaxpr):
    return ("closed", _jaxpr_fingerprint(value.jaxpr), tuple(map(_Ident, value.consts)))
  if isinstance(value, Jaxpr):
    return _jaxpr_fingerprint(value)
  if isinstance(value, (tuple, list)):
    return (type(value).__name__, tuple(fingerprint(v) for v in value))
  if isinstance(value, dict):
    return ("dict", tuple(sorted((k, fingerprint(v)) for k, v in value.items())))
  if isinstance(value, np.ndarray):
    return ("array", value.dtype.str, value.shape, value.tobytes())
  try:
    hash(value)
  except TypeError:
    return _Ident(value)
  return value


class _Ident:
  """Compares by identity and keeps its object alive, so its id cannot be reused."""
  __slots__ = ("obj",)

  def __init__(self, obj):
    self.obj = obj

  def __eq__(self, other):
    return type(other) is _Ident and other.obj is self.obj

  def __hash__(self):
    return id(self.obj)


def _jaxpr_fingerprint(jaxpr: Jaxpr):
  ids: dict = {}

  def atom(a):
    if type(a) is Literal:
      val = np.asarray(a.val)
      return ("lit", a.aval, val.dtype.str, val.tobytes())
    n = ids.get(a)
    if n is None:
      n = ids[a] = len(ids)
      return (n, a.aval)
    return n

  binders = tuple(atom(v) for v in [*jaxpr.constvars, *jaxpr.invars])
  eqns = tuple((eqn.primitive, fingerprint(eqn.params), tuple(map(atom, eqn.invars)),
                tuple(map(atom, eqn.outvars)), eqn.effects) for eqn in jaxpr.eqns)
  return ("jaxpr", len(jaxpr.constvars), binders, eqns, tuple(map(atom, jaxpr.outvars)),
          jaxpr.effects)


def apply_cached(primitive, *args, **params):
  from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic
  from minijax.runtime import dispatch
  avals = tuple(shaped_abstractify(x) for x in args)
  device = dispatch.device_of(args)
  key = (primitive, fingerprint(params), avals, device)
  fn = _cache.get(key)
  if fn is None:
    jaxpr, consts = trace_to_jaxpr_dynamic(lambda *xs: primitive.bind(*xs, **params), avals)
    fn = dispatch.compile_jaxpr(ClosedJaxpr(jaxpr, consts), device=device, name=primitive.name)
    _cache[key] = fn
    if len(_cache) > _CACHE_SIZE:
      _cache.popitem(last=False)
  else:
    _cache.move_to_end(key)
  outs = fn(*args)
  if config.debug_nans:
    dispatch.check_nans(primitive, outs)
  return outs


def def_cached_impl(primitive) -> None:
  primitive.def_impl(lambda *args, **params: apply_cached(primitive, *args, **params))
