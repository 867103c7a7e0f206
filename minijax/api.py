"""The user-facing transformations: `jit`, `make_jaxpr` (and, as they land, grad/vmap/...).

`jit(f)` keeps two caches keyed on the pytree structure of the arguments, their avals,
the static arguments and the device: traced jaxprs, and compiled executables.  Called on
concrete values (the current trace is the eval trace) it takes the fast path: flatten in
C++, look up the executable, run it.  Called under another transformation it binds
`jit_p` with the traced jaxpr, so the transformation sees one equation and the lowering
emits a `func.call`.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from minijax import tree_util
from minijax.config import config
from minijax.core import trace as trace_lib
from minijax.core.avals import shaped_abstractify
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr
from minijax.core.trace import Tracer
from minijax.interpreters import partial_eval as pe
from minijax.lax.call import compiled_call, jit_p
from minijax.lowering.mlir import lower_jaxpr_to_module
from minijax.runtime import backend, dispatch
from minijax.runtime.array import Array


def _abstractify(x):
  if type(x) is Array:
    return x.aval
  return shaped_abstractify(x)


def _normalize_argnums(argnums, nargs=None) -> tuple[int, ...]:
  if argnums is None:
    return ()
  if isinstance(argnums, int):
    argnums = (argnums,)
  return tuple(argnums)


class _DebugInfo:
  __slots__ = ("fun_name", "arg_names")

  def __init__(self, fun_name, arg_names):
    self.fun_name = fun_name
    self.arg_names = arg_names


def _fun_name(fun) -> str:
  return getattr(fun, "__name__", None) or type(fun).__name__


def _flat_arg_names(fun, args, kwargs) -> list[str]:
  try:
    sig = inspect.signature(fun)
    bound = sig.bind_partial(*args)
    names = list(bound.arguments)
  except (TypeError, ValueError):
    names = []
  out = []
  for i, arg in enumerate(args):
    base = names[i] if i < len(names) else f"args[{i}]"
    paths, _ = tree_util.tree_flatten_with_path(arg)
    out.extend(base + "".join(str(k) for k in path) for path, _ in paths)
  for k, v in kwargs.items():
    paths, _ = tree_util.tree_flatten_with_path(v)
    out.extend(k + "".join(str(p) for p in path) for path, _ in paths)
  return out


class _Traced:
  __slots__ = ("jaxpr", "consts", "out_tree", "donated", "executable", "device")

  def __init__(self, jaxpr, consts, out_tree, donated):
    self.jaxpr = jaxpr            # ClosedJaxpr, constants hoisted to leading inputs
    self.consts = consts
    self.out_tree = out_tree
    self.donated = donated        # one flag per input of `jaxpr`
    self.executable = None        # compiled for `device`, set on the first eager call
    self.device = None


def _hoist_consts(jaxpr: Jaxpr) -> ClosedJaxpr:
  return ClosedJaxpr(Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                           jaxpr.effects, jaxpr.debug_info), [])


class JitWrapped:
  """The result of `jit(fun)`."""

  def __init__(self, fun: Callable, static_argnums=(), static_argnames=(), donate_argnums=(),
               device=None):
    functools.update_wrapper(self, fun)
    self._fun = fun
    self._name = _fun_name(fun)
    self._static_argnums = frozenset(_normalize_argnums(static_argnums))
    self._static_argnames = frozenset((static_argnames,) if isinstance(static_argnames, str)
                                      else static_argnames or ())
    self._donate_argnums = frozenset(_normalize_argnums(donate_argnums))
    self._device = backend.get_device(device) if device is not None else None
    self._cache: dict[Any, _Traced] = {}

  # -- argument handling

  def _split(self, args, kwargs):
    if not self._static_argnums and not self._static_argnames:
      return args, kwargs, ()
    dyn_args, static = [], []
    for i, a in enumerate(args):
      if i in self._static_argnums or (i - len(args)) in self._static_argnums:
        static.append((i, _check_static(a, i)))
      else:
        dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
      if k in self._static_argnames:
        static.append((k, _check_static(v, k)))
      else:
        dyn_kwargs[k] = v
    return tuple(dyn_args), dyn_kwargs, tuple(static)

  def _merge(self, static, dyn_args, dyn_kwargs):
    args, kwargs = list(dyn_args), dict(dyn_kwargs)
    for where, value in static:
      if isinstance(where, int):
        args.insert(where, value)
      else:
        kwargs[where] = value
    return args, kwargs

  def _donated_leaves(self, args, static) -> tuple[bool, ...]:
    """One flag per dynamic leaf of `(dyn_args, dyn_kwargs)`."""
    static_positions = {where for where, _ in static if isinstance(where, int)}
    flags = []
    for pos, arg in enumerate(args):
      if pos not in static_positions:
        flags.extend([pos in self._donate_argnums] * len(tree_util.tree_leaves(arg)))
    return tuple(flags)

  # -- tracing

  def _trace(self, static, dyn_args, dyn_kwargs, in_tree, avals) -> _Traced:
    out_tree_box = []

    def flat_fun(*flat):
      args, kwargs = tree_util.tree_unflatten(in_tree, flat)
      args, kwargs = self._merge(static, args, kwargs)
      out = self._fun(*args, **kwargs)
      leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return leaves

    names = _flat_arg_names(self._fun, *self._merge(static, dyn_args, dyn_kwargs)) \
        if not static else None
    debug = _DebugInfo(self._name, names if names and len(names) == len(avals) else None)
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals, debug)
    donated = self._donated_leaves(self._merge(static, dyn_args, dyn_kwargs)[0], static) \
        if self._donate_argnums else ()
    donated = (False,) * len(consts) + donated + (False,) * (len(avals) - len(donated))
    return _Traced(_hoist_consts(jaxpr), consts, out_tree_box[0], donated)

  def _traced_for(self, args, kwargs):
    dyn_args, dyn_kwargs, static = self._split(args, kwargs)
    flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    avals = tuple(map(_abstractify, flat))
    key = (in_tree, avals, static)
    traced = self._cache.get(key)
    if traced is None:
      traced = self._trace(static, dyn_args, dyn_kwargs, in_tree, avals)
      if not any(isinstance(c, Tracer) for c in traced.consts):
        self._cache[key] = traced
    return traced, flat, dyn_args, static, in_tree

  # -- calling

  def __call__(self, *args, **kwargs):
    eager = type(trace_lib._context.trace) is trace_lib.EvalTrace
    if eager:
      dyn_args, dyn_kwargs, static = self._split(args, kwargs) if (
          self._static_argnums or self._static_argnames) else (args, kwargs, ())
      flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
      try:
        avals = tuple([x.aval if type(x) is Array else _abstractify(x) for x in flat])
      except TypeError as e:
        raise TypeError(f"jit({self._name}): {e}") from None
      traced = self._cache.get((in_tree, avals, static))
      if traced is not None and traced.executable is not None and (
          self._device is not None or _first_device(flat) is traced.device):
        outs = traced.executable(*traced.consts, *flat)
        if config.debug_nans:
          dispatch.check_nans_in_jaxpr(traced.jaxpr, [*traced.consts, *flat], outs, self._name)
        return traced.out_tree.unflatten(outs)
    traced, flat, dyn_args, static, in_tree = self._traced_for(args, kwargs)
    if eager and not any(isinstance(c, Tracer) for c in traced.consts):
      device = self._device or _first_device(flat)
      traced.executable = compiled_call(traced.jaxpr, self._name, traced.donated, device)
      traced.device = device
      outs = traced.executable(*traced.consts, *flat)
      if config.debug_nans:
        dispatch.check_nans_in_jaxpr(traced.jaxpr, [*traced.consts, *flat], outs, self._name)
      return traced.out_tree.unflatten(outs)
    outs = jit_p.bind(*traced.consts, *flat, jaxpr=traced.jaxpr, name=self._name,
                      donated_invars=traced.donated, device=self._device)
    return traced.out_tree.unflatten(outs)

  def lower(self, *args, **kwargs) -> "Lowered":
    traced, flat, dyn_args, static, in_tree = self._traced_for(args, kwargs)
    return Lowered(traced, self._name, self._device or _first_device(flat))

  def trace(self, *args, **kwargs):
    traced, *_ = self._traced_for(args, kwargs)
    return traced.jaxpr

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)


def _first_device(flat):
  for x in flat:
    if type(x) is Array:
      return x._device
  return backend.get_device(None)


def _check_static(value, where):
  try:
    hash(value)
  except TypeError:
    raise ValueError(
        f"static argument {where!r} of type {type(value).__name__} is not hashable; static "
        "arguments must be hashable (use a tuple instead of a list, or make it a dynamic "
        "argument)") from None
  return value


class Lowered:
  """`jit(f).lower(*args)`: the MHLO module, ready to compile."""

  def __init__(self, traced: _Traced, name: str, device):
    self._traced = traced
    self._name = name
    self._device = device
    self._result = lower_jaxpr_to_module(traced.jaxpr, name=name, donated_args=traced.donated)

  def as_text(self) -> str:
    return str(self._result.module)

  def compiler_ir(self):
    return self._result.module

  def compile(self) -> "Compiled":
    fn = compiled_call(self._traced.jaxpr, self._name, self._traced.donated, self._device)
    return Compiled(fn, self._traced)


class Compiled:
  def __init__(self, fn, traced: _Traced):
    self._fn = fn
    self._traced = traced

  def as_text(self) -> str:
    if hasattr(self._fn, "as_text"):
      return self._fn.as_text()
    return "(no XLA computation: the jaxpr has no equations)"

  def __call__(self, *args, **kwargs):
    flat, _ = tree_util.tree_flatten((args, kwargs))
    return self._traced.out_tree.unflatten(self._fn(*self._traced.consts, *flat))


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(),
        donate_argnums=(), device=None):
  """Compiles `fun` with XLA; usable as `@jit` or `@jit(static_argnums=...)`."""
  if fun is None:
    return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                         donate_argnums=donate_argnums, device=device)
  if not callable(fun):
    raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
  return JitWrapped(fun, static_argnums, static_argnames, donate_argnums, device)


def make_jaxpr(fun: Callable, static_argnums=()):
  """`make_jaxpr(f)(*args)` returns the ClosedJaxpr `f` traces to."""
  static_argnums = _normalize_argnums(static_argnums)

  @functools.wraps(fun)
  def make(*args, **kwargs):
    static = {i: args[i] for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]
    flat, in_tree = tree_util.tree_flatten((dyn, kwargs))

    def flat_fun(*flat_args):
      d, kw = tree_util.tree_unflatten(in_tree, flat_args)
      it = iter(d)
      full = [static[i] if i in static else next(it) for i in range(len(args))]
      return tree_util.tree_leaves(fun(*full, **kw))

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, [_abstractify(x) for x in flat])
    return ClosedJaxpr(jaxpr, consts)
  return make
