"""Cache keys for compiled programs: params that compile to the same program compare equal.

The eager primitive cache keys an executable on (primitive, params, avals, device).  Most
params are hashable and compare by value; jaxpr-valued params (the bodies of cond, while,
scan, traced afresh at every eager call) compare by structure, numpy arrays by value, and
other unhashable values by identity (`api_util.SameObject` keeps the object alive so its
id cannot be reused).  Functions (a tap function, say) are keyed by `api_util.function_key`, never by
an `__eq__` of their own: an executable calls back the very function it was compiled for,
so two equal but distinct functions must not share one.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from minijax.api_util import SameObject, function_key
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal


def params_key(params: dict):
  """A hashable key, equal for params that compile to the same program.  Jaxpr-valued params
  (the bodies of cond, while, scan: traced afresh at every eager call) compare by structure,
  numpy arrays by value, other unhashable values by identity."""
  items = tuple(sorted(params.items()))
  if not any(_holds_jaxpr(v) or _is_function(v) for _, v in items):
    try:
      hash(items)
      return items
    except TypeError:
      pass
  return fingerprint(params)


def _is_function(value) -> bool:
  """A callable that is not a type (types are compared by identity anyway)."""
  return callable(value) and not isinstance(value, type)


def _holds_jaxpr(value) -> bool:
  return isinstance(value, (Jaxpr, ClosedJaxpr)) or (
      type(value) is tuple and any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value))


def fingerprint(value: Any) -> Any:
  """A hashable value, equal for structurally equal params."""
  if isinstance(value, ClosedJaxpr):
    return ("closed", _jaxpr_fingerprint(value.jaxpr), tuple(map(SameObject, value.consts)))
  if isinstance(value, Jaxpr):
    return _jaxpr_fingerprint(value)
  if isinstance(value, (tuple, list)):
    return (type(value).__name__, tuple(fingerprint(v) for v in value))
  if isinstance(value, dict):
    return ("dict", tuple(sorted((k, fingerprint(v)) for k, v in value.items())))
  if isinstance(value, np.ndarray):
    return ("array", value.dtype.str, value.shape, value.tobytes())
  if _is_function(value):
    return function_key(value)
  try:
    hash(value)
  except TypeError:
    return SameObject(value)
  return value


def _jaxpr_fingerprint(jaxpr: Jaxpr):
  """Variables numbered in order of appearance, literals by their bytes."""
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
