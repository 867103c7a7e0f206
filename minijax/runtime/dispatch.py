"""Compiling jaxprs and running them: the path shared by eager ops and `jit`.

A primitive applied to concrete arrays runs as a one-equation jaxpr, compiled once per
(primitive, params, avals, device) and kept in a bounded LRU cache (params holding jaxprs,
as control flow's do, are keyed by their structure), so eager execution and `jit` go through the
same lowering and the same executables.  A jaxpr with no equations is evaluated without
compiling.  With `debug_nans`, outputs are checked and a NaN is traced back to the
primitive that produced it by re-running the jaxpr op by op.
"""
from __future__ import annotations

import collections
import functools
import operator
from typing import Any, Callable, Sequence

import numpy as np

from minijax import tree_util
from minijax.config import config
from minijax.core import primitive as primitive_lib
from minijax.core.avals import shaped_abstractify
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, eval_jaxpr
from minijax.lowering.mlir import lower_jaxpr_to_module
from minijax.runtime import backend
from minijax.runtime import executable as executable_lib
from minijax.runtime.array import Array, device_put

CompiledFn = Callable[..., list]


def device_of(args: Sequence[Any]):
  for x in args:
    if type(x) is Array:
      return x._device
  return backend.get_device(None)


def compile_jaxpr(closed_jaxpr: ClosedJaxpr, *, device, name: str,
                  donated_args: Sequence[bool] = ()) -> CompiledFn:
  """A function from flat arguments to flat output Arrays, compiled for `device`."""
  jaxpr = closed_jaxpr.jaxpr
  if not jaxpr.eqns:
    return functools.partial(_run_trivial, closed_jaxpr, device)
  lowered = lower_jaxpr_to_module(closed_jaxpr, name=name, donated_args=donated_args)
  return executable_lib.compile(
      lowered.module, device=device, name=name, in_avals=lowered.in_avals,
      out_avals=lowered.out_avals, donated_args=tuple(donated_args),
      host_callbacks=lowered.host_callbacks, num_tokens=len(lowered.ordered_effects),
      ordered_effects=lowered.ordered_effects,
      unordered_effects=tuple(e for e in jaxpr.effects if not e.ordered))


def _run_trivial(closed_jaxpr: ClosedJaxpr, device, *args) -> list:
  jaxpr = closed_jaxpr.jaxpr
  env = dict(zip(jaxpr.constvars, closed_jaxpr.consts))
  env.update(zip(jaxpr.invars, args))
  outs = []
  for v in jaxpr.outvars:
    x = v.val if type(v) is Literal else env[v]
    outs.append(device_put(x, device) if not (type(x) is Array and x._device is device) else x)
  return outs


# ----------------------------------------------------------------------------- eager primitives

_CACHE_SIZE = 4096
_primitive_cache: collections.OrderedDict = collections.OrderedDict()  # an LRU


def params_key(params: dict):
  """A hashable key, equal for params that compile to the same program.  Jaxpr-valued params
  (the bodies of cond, while, scan: traced afresh at every eager call) compare by structure,
  numpy arrays by value, other unhashable values by identity."""
  items = tuple(sorted(params.items()))
  if not any(_holds_jaxpr(v) for _, v in items):
    try:
      hash(items)
      return items
    except TypeError:
      pass
  return fingerprint(params)


def _holds_jaxpr(value) -> bool:
  return isinstance(value, (Jaxpr, ClosedJaxpr)) or (
      type(value) is tuple and any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value))


def fingerprint(value: Any) -> Any:
  """A hashable value, equal for structurally equal params."""
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


def apply_primitive(primitive, *args, **params):
  """Runs `primitive` on concrete values through a cached one-equation executable."""
  try:
    avals = tuple(map(_get_aval, args))
  except AttributeError:  # numpy values or Python scalars among the arguments
    avals = tuple(map(shaped_abstractify, args))
  device = device_of(args)
  key = (primitive, params_key(params) if params else (), avals, device)
  run = _primitive_cache.get(key)
  if run is None:
    run = _primitive_cache[key] = _compile_primitive(primitive, params, avals, device)
    if len(_primitive_cache) > _CACHE_SIZE:
      _primitive_cache.popitem(last=False)
  else:
    _primitive_cache.move_to_end(key)
  out = run(*args)
  if config.debug_nans:
    check_nans(primitive, out if primitive.multiple_results else [out])
  return out


_get_aval = operator.attrgetter("aval")
_LEAF = tree_util.tree_structure(0)


def _compile_primitive(primitive, params, avals, device) -> Callable:
  """A function of the arguments that returns the primitive's result: a list of Arrays
  when it has multiple results, else the Array."""
  from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic

  def fun(*xs):
    out = primitive.bind(*xs, **params)
    return out if primitive.multiple_results else [out]

  jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals)
  fn = compile_jaxpr(ClosedJaxpr(jaxpr, consts), device=device, name=primitive.name)
  if primitive.multiple_results:
    return fn
  if isinstance(fn, executable_lib.Executable):
    return fn.make_call(out_tree=_LEAF)
  return lambda *xs: fn(*xs)[0]


primitive_lib.default_impl.append(apply_primitive)


# ----------------------------------------------------------------------------- debug_nans

def check_nans(primitive, outs) -> None:
  for out in outs:
    if isinstance(out, Array) and np.issubdtype(out.dtype, np.inexact):
      if np.isnan(np.asarray(out)).any():
        raise FloatingPointError(f"invalid value (nan) encountered in {primitive}")


def check_nans_in_jaxpr(closed_jaxpr: ClosedJaxpr, args, outs, name: str) -> None:
  """After a compiled call produced a NaN, re-run it op by op to name the culprit."""
  for out in outs:
    if isinstance(out, Array) and np.issubdtype(out.dtype, np.inexact):
      if np.isnan(np.asarray(out)).any():
        eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)
        raise FloatingPointError(f"invalid value (nan) encountered in jit({name})")


def _on_config_change(name, value):
  if name == "tap_mechanism":
    _primitive_cache.clear()


config.on_change(_on_config_change)
