"""`jit`: trace once per argument signature, compile once per device, dispatch fast.

`jit(f)` returns a function (`_jitted`) backed by a `JitWrapped`, whose `JitCaches` keep two
caches keyed on the pytree structure of the arguments, their avals, the static arguments
and the device: traced jaxprs, and compiled executables.  As in JAX, the caches belong to
the function and the jit options, not to one `jit(f)`: `jit(f)` made again for the same `f`
with the same options finds them (`_caches_for`, keyed weakly on `f`), so `jit(f)(x)`
written inline traces and compiles once, and, as JAX documents, a trace keeps the values of
the globals it read.  Nothing in the caches refers to `f`, so they go when `f` does.  Called on concrete values (the current
trace is the eval trace) it takes the fast path: flatten in C++ (or not at all for Array
arguments), look up the executable's call closure, run it.  Called under another
transformation it binds `jit_p` with the traced jaxpr, so the transformation sees one
equation and the lowering emits a `func.call`.

`jit(f).trace(*args)`, `.lower()` and `.compile()` expose the stages (`staging/stages.py`):
`Traced` holds the jaxpr, `Lowered` the MHLO module, and compiling it reuses that module,
so `lower(x).compile()` lowers once.

With `in_shardings`/`out_shardings`, sharded Array arguments, or shardings inside the
function (a `shard_map`, a sharding constraint), the call runs as one SPMD program over
several devices (`staging/sharded.py` places it, `runtime/sharded_executable.py` runs
it); its fast-path entries are keyed by the first argument's sharding as well.  Explicit
shardings apply to the call itself: when a transformation sees the jitted function (grad,
vmap), it sees a `jit_p` equation without them, placed by its arguments and the shardings
inside.
"""
from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading
import time
import types
import weakref
from typing import Any, Callable

import numpy as np

from minijax import monitoring
from minijax.tree_util import internal as tree_util
from minijax.api_util import (DebugInfo, DeferredSignature, close_specs, flat_arg_names,
                              fun_name, fun_sourceinfo, open_specs, prefix_pairs, resolve_argnums)
from minijax.config import (JIT_KEY_FLAGS, LOCAL_BLOCKS, compile_log_level, config,
                            global_key_state, thread_key_state)
from minijax.core import sharding as sharding_lib
from minijax.core import trace as trace_lib
from minijax.core import axes, traceback_util
from minijax.core.avals import ShapeDtypeStruct, ShapedArray, Token, get_aval
from minijax.core.dtypes import PYTHON_SCALARS, float0
from minijax.core.errors import UnexpectedTracerError
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr, hoist_consts
from minijax.core.trace import Tracer
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.discharge import jaxpr_has_state
from minijax.core.state import AbstractRef, Ref
from minijax.lax import state as lax_state
from minijax.lax.call import jit_p
from minijax.runtime import backend
from minijax.runtime import executable as executable_lib
from minijax.runtime.executable import Executable
from minijax.runtime.array import Array, device_put
from minijax.runtime.sharded_executable import ShardedExecutable
from minijax.staging import special_values
from minijax.staging import cache_miss, compiler, sharded
from minijax.staging.stages import Compiled, Lowered, Traced
from minijax.staging.fast_keys import (key_function as _key_function,
                                       mixed_key_function as _mixed_key_function,
                                       pytree_key as _pytree_key)

try:  # calls on Arrays only, in C (csrc/fast_path.cc); without it, all in Python
  from minijax.staging import _native as _fast_native
except ImportError:
  _fast_native = None
# The fast path's result Arrays: `Array(buffer, aval, device)`, made in C when it can.
_new_array = Array if _fast_native is None else _fast_native.array_factory(
    Array, tuple(Array.__dict__[name] for name in (  # in csrc/fast_path.cc's order
        "_buffer", "aval", "_committed", "_device", "_npy", "_sharding")))

__all__ = ["jit", "clear_caches", "JitWrapped", "Traced", "Lowered", "Compiled"]


class _Traced:
  __slots__ = ("jaxpr", "consts", "out_tree", "donated")

  def __init__(self, jaxpr, consts, out_tree, donated):
    self.jaxpr = jaxpr            # ClosedJaxpr, constants hoisted to leading inputs
    self.consts = consts
    self.out_tree = out_tree
    self.donated = donated        # one flag per input of `jaxpr`


def _has_tracer(values) -> bool:
  return any(isinstance(c, Tracer) for c in values)


class _SlowPath(Exception):
  """Raised by a fast-path entry for arguments it cannot serve (see `_jitted`)."""


def _to_slow_path(args):
  raise _SlowPath


class JitCaches:
  """The traces and fast-path entries of one function under one set of jit options, per
  state of the flags that change what tracing and lowering produce (`global_key_state`);
  `cache` and `fast` are the current state's.  Shared by every `jit(f)` made with those
  options (`_caches_for`); nothing here refers to the function."""
  __slots__ = ("by_state", "cache", "fast", "multi_device", "__weakref__")

  def __init__(self):
    self.by_state: dict[tuple, tuple[dict, dict]] = {}
    self.multi_device = False
    self.select_state(global_key_state())
    _all_caches.add(self)

  def select_state(self, state: tuple) -> None:
    self.cache, self.fast = self.by_state.setdefault(state, ({}, {}))

  def of_thread(self) -> tuple[dict, dict]:
    """`(cache, fast)` for the flags in force in this thread: the selected ones, unless a
    `with` block is open in some thread (`LOCAL_BLOCKS`)."""
    if not LOCAL_BLOCKS[0]:
      return self.cache, self.fast
    return self.by_state.setdefault(thread_key_state(), ({}, {}))


# fun -> {jit options: JitCaches}, keyed weakly on the function (see the module docstring).
_shared: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


def _option_key(value):
  return tuple(value) if isinstance(value, list) else value


def _caches_for(fun: Callable, options: tuple) -> JitCaches:
  """The caches of `fun` under `options` (fresh ones for a function that cannot be keyed
  weakly, or options that cannot be hashed)."""
  options = tuple(map(_option_key, options))
  try:
    with _shared_lock:
      by_options = _shared.get(fun)
      if by_options is None:
        by_options = _shared[fun] = {}
      caches = by_options.get(options)
      if caches is None:
        caches = by_options[options] = JitCaches()
      return caches
  except Exception:  # not weakly referenceable, unhashable, or an __eq__ that raises
    return JitCaches()


class JitWrapped:
  """The state behind `jit(fun)`: static and donated arguments, caches, the device."""
  _inline = False  # jit(inline=True): under a transformation the body is inlined, not called

  def __init__(self, fun: Callable, static_argnums=None, static_argnames=None,
               donate_argnums=None, device=None, donate_argnames=None, in_shardings=None,
               out_shardings=None, compiler_options=None):
    self._fun = fun
    self._name = fun_name(fun)
    static_argnums, static_argnames, donate_argnums, donate_argnames = resolve_argnums(
        fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
    self._static_argnums = frozenset(static_argnums)
    self._static_argnames = frozenset(static_argnames)
    self._donate_argnums = frozenset(donate_argnums)
    self._donate_argnames = frozenset(donate_argnames)
    self._device = backend.get_device(device) if device is not None else None
    if device is not None and (in_shardings is not None or out_shardings is not None):
      raise ValueError("can't specify both a device and in_shardings/out_shardings; the "
                       "shardings say where the computation runs")
    self._in_shardings = in_shardings
    self._out_shardings = out_shardings
    self._compiler_options = dict(compiler_options or {})  # XLA's, for every compile
    self._caches = _caches_for(fun, (
        static_argnums, static_argnames, donate_argnums, donate_argnames, self._device,
        _SameOrEqual(in_shardings), _SameOrEqual(out_shardings),
        _SameOrEqual(compiler_options or None)))

  @property
  def _cache(self) -> dict[Any, _Traced]:
    return self._caches.of_thread()[0]

  @property
  def _fast(self) -> dict[Any, Callable]:
    return self._caches.of_thread()[1]

  # -- argument handling

  def _static_positions(self, n: int) -> frozenset:
    """The positions of the static arguments in a call with `n` positional arguments."""
    return frozenset(i for i in range(n)
                     if i in self._static_argnums or i - n in self._static_argnums)

  def _split(self, args, kwargs):
    if not self._static_argnums and not self._static_argnames:
      return args, kwargs, ()
    dyn_args, static = [], []
    for i, a in enumerate(args):
      if i in self._static_argnums or (i - len(args)) in self._static_argnums:
        static.append((i, _check_static(a, i), type(a)))
      else:
        dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in sorted(kwargs.items()):  # the same trace whatever the keywords' order
      if k in self._static_argnames:
        static.append((k, _check_static(v, k), type(v)))
      else:
        dyn_kwargs[k] = v
    return tuple(dyn_args), dyn_kwargs, tuple(static)

  def _merge(self, static, dyn_args, dyn_kwargs):
    args, kwargs = list(dyn_args), dict(dyn_kwargs)
    for where, value, _ in static:
      if isinstance(where, int):
        args.insert(where, value)
      else:
        kwargs[where] = value
    return args, kwargs

  def _donated_leaves(self, args, kwargs, static) -> tuple[bool, ...]:
    """One flag per dynamic leaf of `(dyn_args, dyn_kwargs)`."""
    static_where = {where for where, _, _ in static}
    flags = []
    for pos, arg in enumerate(args):
      if pos not in static_where:
        donated = pos in self._donate_argnums or (pos - len(args)) in self._donate_argnums
        flags.extend([donated] * len(tree_util.tree_leaves(arg)))
    for name in sorted(kwargs):  # the order of the leaves of a dict: its sorted keys
      if name not in static_where:
        flags.extend([name in self._donate_argnames] * len(tree_util.tree_leaves(kwargs[name])))
    return tuple(flags)

  # -- tracing

  def _debug_info(self, args, kwargs, static, num_leaves: int) -> DebugInfo:
    """The jaxpr's `DebugInfo`: its arguments named through the function's signature,
    static ones naming nothing (None when the names do not count `num_leaves`)."""
    names = tuple(self._arg_names(args, kwargs, static))
    debug = DebugInfo("jit", fun_sourceinfo(self._fun), names)
    return debug if len(debug.arg_names) == num_leaves else debug._replace(arg_names=None)

  def _trace(self, static, dyn_args, dyn_kwargs, in_tree, avals) -> _Traced:
    def call(*dyn_args, **dyn_kwargs):
      args, kwargs = self._merge(static, dyn_args, dyn_kwargs)
      return self._fun(*args, **kwargs)

    flat_fun, out_tree = tree_util.flatten_fun(call, in_tree)
    args, kwargs = self._merge(static, dyn_args, dyn_kwargs)
    debug = self._debug_info(args, kwargs, static, len(avals))
    start = time.perf_counter()
    try:
      jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals, debug)
    except pe.InvalidOutputError as e:
      raise e.named(debug, out_tree()) from None
    lax_state.check_no_returned_refs(self._fun, "jit", jaxpr, debug.arg_names)
    jaxpr.debug_info = debug.set_result_paths(out_tree())
    seconds = time.perf_counter() - start
    monitoring.record_event_duration_secs("/jax/core/compile/jaxpr_trace_duration", seconds,
                                          fun_name=self._name)
    level = compile_log_level()
    if level:
      logging.getLogger("minijax").log(
          level, "Finished tracing %s for jit in %.9f sec", self._name, seconds)
    donated = (self._donated_leaves(args, kwargs, static)
               if self._donate_argnums or self._donate_argnames else ())
    donated = (False,) * len(consts) + donated + (False,) * (len(avals) - len(donated))
    closed, consts = hoist_consts(ClosedJaxpr(jaxpr, consts))
    return _Traced(closed, consts, out_tree(), donated)

  def _traced_for(self, args, kwargs):
    dyn_args, dyn_kwargs, static = self._split(args, kwargs)
    flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    try:
      avals = tuple(map(get_aval, flat))
    except TypeError:
      self._raise_non_array_argument(args, kwargs, static, flat)
    key = (in_tree, avals, static, axes.current_frames())
    try:
      traced = self._cache.get(key)
    except Exception as e:  # (hashable: `_split` checked) an __eq__ that raises
      types = sorted({type(v).__name__ for _, v, _ in static})
      raise ValueError(
          "Non-hashable static arguments are not supported: static arguments should be "
          f"comparable using __eq__. Comparing static arguments of types {types} raised "
          f"{type(e).__name__}: {e}") from e
    if traced is None:
      if config.explain_cache_misses:
        names = self._arg_names(args, kwargs, static)
        cache_miss.explain(self._fun, self._name, key, {s: c for s, (c, _) in
                                                        self._caches.by_state.items()},
                           thread_key_state(), _STATE_FLAGS, names)
      if config.no_tracing:
        raise RuntimeError(f"re-tracing function {self._name} for `jit`, but 'no_tracing' "
                           "is set (minijax.no_tracing / jax_no_tracing)")
      traced = self._trace(static, dyn_args, dyn_kwargs, in_tree, avals)
      if not _has_tracer(traced.consts):
        _bounded_insert(self._cache, key, traced)
    if any(type(a) is AbstractRef for a in avals) or any(type(c) is Ref for c in traced.consts):
      self._check_ref_arguments(traced, flat, args, kwargs, static)
    return traced, flat

  def _check_ref_arguments(self, traced, flat, args, kwargs, static):
    names = self._arg_names(args, kwargs, static)
    lax_state.check_ref_arguments(self._fun, "jit", flat, names, traced.consts)

  def _arg_names(self, args, kwargs, static) -> list[str]:
    """The names of the dynamic leaves of `(args, kwargs)` (static arguments name none)."""
    static_where = {where for where, _, _ in static}
    return flat_arg_names(self._fun, [None if i in static_where else a
                                      for i, a in enumerate(args)],
                          {k: v for k, v in kwargs.items() if k not in static_where})

  def _raise_non_array_argument(self, args, kwargs, static, flat):
    """The TypeError for a leaf that is not an array: which argument, and what to do."""
    names = self._arg_names(args, kwargs, static)
    for i, leaf in enumerate(flat):
      try:
        get_aval(leaf)
      except TypeError:
        path = names[i] if i < len(names) else f"flat argument {i}"
        raise TypeError(
            f"Error interpreting argument to {self._fun!r} as an abstract array. The "
            f"problematic value is of type {type(leaf)!r} and was passed to the function at "
            f"path {path}.\nThis typically means that a jit-wrapped function was called with a "
            "non-array argument, and this argument was not marked as static using the "
            "static_argnums or static_argnames parameters of minijax.jit.") from None
    raise AssertionError("unreachable: every leaf has an aval")

  # -- calling (the fast path lives in `_jitted`, the function `jit` returns)

  def _call_slow(self, args, kwargs, fast_key=None):
    """Traces (if needed), compiles (if needed) and runs.  `fast_key` is the key `jitted`
    computed for these arguments and did not find; the compiled executable is filed under
    it.  Under `disable_jit` the function runs as plain Python (its state has no fast-path
    entries)."""
    if config.disable_jit:
      return self._fun(*args, **kwargs)
    traced, flat = self._traced_for(args, kwargs)
    if type(trace_lib._context.trace) is trace_lib.EvalTrace and not _has_tracer(traced.consts):
      leaked = next((x for x in flat if isinstance(x, Tracer)), None)
      if leaked is not None:  # no trace is active, so its trace has ended
        raise UnexpectedTracerError(leaked)
      if config.no_execution:  # a key of the caches: the fast path has no entries then
        raise RuntimeError(f"minijax tried to execute function {self._name}, but the "
                           "no_execution config option is set")
      placement = self._placement(traced, flat, args, kwargs)
      device = None if placement is None else sharded.single_device(placement, traced.jaxpr)
      # As in JAX, the results are committed when an argument is, or the placement is given.
      committed = (self._device is not None or placement is not None
                   or any(type(x) is Array and x._committed for x in flat))
      checking = special_values.checking()
      # A NaN check may run the function again on its arguments: nothing is donated.
      donated = (False,) * len(traced.donated) if checking else traced.donated
      if placement is not None and device is None:
        executable = sharded.compiled_call(traced.jaxpr, self._name, donated, placement,
                                           compiler_options=self._compiler_options)
        device = compiler.device_of(flat)
      else:
        names = lambda: self._arg_names(args, kwargs, self._split(args, kwargs)[2])  # noqa: E731
        device = device or compiler.jit_device(self._device, flat, self._name, names)
        executable = compiler.compiled_call(traced.jaxpr, self._name, donated, device,
                                            compiler_options=self._compiler_options)
      float0_out = any(getattr(a, "dtype", None) == float0 for a in traced.jaxpr.out_avals)
      if (fast_key is not None and not checking and not float0_out
          and not any(type(c) is Token for c in traced.consts)
          and all(type(x) is Array or type(x) in PYTHON_SCALARS or type(x) is Ref
                  for x in flat)):
        self._remember_fast(fast_key, device, executable, traced, flat, committed)
      consts = compiler.place_consts(traced.consts, device)
      outs = compiler.commit(executable(*consts, *flat), committed)
      if float0_out:  # as in JAX, float0 results (no data) are numpy zeros
        outs = [np.zeros(a.shape, float0) if a.dtype == float0 else x
                for x, a in zip(outs, traced.jaxpr.out_avals)]
      if checking:
        special_values.check_jit(outs, self._name, lambda: self._fun(*args, **kwargs))
      return traced.out_tree.unflatten(outs)
    if jaxpr_has_state(traced.jaxpr.jaxpr) or self._inline:
      # With refs, under a transformation, the function is inlined: its ref operations
      # (and custom rules that use refs) meet the transformation one by one.
      outs = eval_jaxpr(traced.jaxpr.jaxpr, traced.jaxpr.consts, *traced.consts, *flat)
      return traced.out_tree.unflatten(outs)
    outs = jit_p.bind(*traced.consts, *flat, jaxpr=traced.jaxpr, name=self._name,
                      donated_invars=traced.donated, device=self._device)
    return traced.out_tree.unflatten(outs)

  def _placement(self, traced: _Traced, flat, args, kwargs):
    """Where the call runs when that is given by shardings (None: the device path)."""
    explicit = self._in_shardings is not None or self._out_shardings is not None
    if not explicit and not any(type(x) is Array and x._sharding is not None for x in flat):
      if not sharded.closed_jaxpr_shardings(traced.jaxpr):
        return None
    n_consts = len(traced.consts)
    flat_in = flat_out = None
    if self._in_shardings is not None:
      dyn_args, dyn_kwargs, _ = self._split(args, kwargs)
      if dyn_kwargs:
        raise ValueError(f"jit of {self._name} with in_shardings was called with keyword "
                         "arguments; pass them positionally")
      flat_in = _flat_shardings(self._in_shardings, tuple(dyn_args), "in_shardings",
                                self._name)
    if self._out_shardings is not None:
      out = traced.out_tree.unflatten(list(traced.jaxpr.out_avals))
      flat_out = _flat_shardings(self._out_shardings, out, "out_shardings", self._name)
    return sharded.placement(traced.jaxpr, [*traced.consts, *flat], self._name,
                             None if flat_in is None else [None] * n_consts + flat_in,
                             flat_out)

  def _remember_fast(self, key, device, executable, traced, flat, committed):
    """Files `executable` under the fast path's `key` (see `_jitted`), which `flat`, the
    call's arguments, produced; its results are `committed` to their device(s) or not."""
    caches = self._caches
    multi_device = self._device is None and backend.device_count() > 1
    if multi_device and not caches.multi_device:  # `jitted` did not know to add the device
      key = (key, device)
    caches.multi_device = multi_device
    # An entry hands arguments it cannot serve back to `jitted` by raising `_SlowPath`; it
    # refers to nothing of this object (the caches are shared, and must not keep `fun`).
    fallback = _to_slow_path
    if isinstance(executable, ShardedExecutable):
      _bounded_insert(self._fast, key, (*_NO_RECORD, executable.make_call(
          traced.consts, traced.out_tree, fallback)))
      return
    consts = [c if (type(c) is Array and c._device is device) or type(c) is Ref
              else device_put(c, device) for c in compiler.place_consts(traced.consts, device)]
    record = None
    if hasattr(executable, "make_call"):
      scalars = any(type(x) in PYTHON_SCALARS for x in flat)
      entry = executable.make_call(consts, traced.out_tree, fallback, scalars=scalars,
                                   committed=committed)
      if type(executable) is Executable and all(type(c) is Array for c in consts):
        record = executable.dispatch_record(consts, traced.out_tree, committed)
    else:  # a jaxpr without equations: nothing was compiled
      def entry(*flat):
        return traced.out_tree.unflatten(compiler.commit(executable(*consts, *flat), committed))
    _bounded_insert(self._fast, key, (*(record or _NO_RECORD), entry))

  def clear_cache(self) -> None:
    """Forgets this function's traces and executables (under these jit options), as JAX's
    `jit(f).clear_cache()` does."""
    self._caches.by_state.clear()
    self._caches.select_state(global_key_state())

  def cache_size(self) -> int:
    """How many argument signatures this function has been traced for (JAX's
    `jit(f)._cache_size()`), under the current flags."""
    return len(self._cache)

  def eval_shape(self, *args, **kwargs):
    """`jit(f).eval_shape(*args)`: the results' shapes, dtypes and (from `out_shardings`)
    shardings, as `ShapeDtypeStruct`s; traces (or reads the trace cache), runs nothing."""
    args, kwargs = open_specs((args, kwargs), ShapeDtypeStruct)
    traced, _ = self._traced_for(args, kwargs)
    avals = list(traced.jaxpr.out_avals)
    shardings = [None] * len(avals)
    if self._out_shardings is not None:
      shardings = _flat_shardings(self._out_shardings, traced.out_tree.unflatten(avals),
                                  "out_shardings", self._name)
    return close_specs(traced.out_tree.unflatten([
        ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=s)
        for a, s in zip(avals, shardings)]), ShapeDtypeStruct)

  def lower(self, *args, **kwargs) -> "Lowered":
    return self.trace(*args, **kwargs).lower()

  def trace(self, *args, **kwargs) -> "Traced":
    args, kwargs = open_specs((args, kwargs), ShapeDtypeStruct)
    traced, flat = self._traced_for(args, kwargs)
    dyn_args, dyn_kwargs, static = self._split(args, kwargs)
    in_tree = tree_util.tree_structure((dyn_args, dyn_kwargs))
    names = self._arg_names(args, kwargs, static)
    placement = self._placement(traced, flat, args, kwargs)
    if placement is not None and sharded.single_device(placement, traced.jaxpr) is None:
      return Traced(traced, self._name, None, placement, in_tree, names)
    device = placement.devices[0] if placement is not None else None
    return Traced(traced, self._name, device or compiler.jit_device(self._device, flat),
                  None, in_tree, names)


# A fast-path entry is `(*record, call)` (see `_jitted`); this `record` for those that have none.
_NO_RECORD = (None,) * 8


def _bounded_insert(cache: dict, key, value) -> None:
  """`cache[key] = value`, first dropping the oldest entries beyond `config.jit_cache_size`
  (insertion order: a hit costs nothing more than the lookup)."""
  while len(cache) >= config.jit_cache_size:
    try:
      del cache[next(iter(cache))]
    except (StopIteration, KeyError, RuntimeError):  # changed by another thread meanwhile
      break
  cache[key] = value


_STATE_FLAGS = JIT_KEY_FLAGS


_all_caches: "weakref.WeakSet[JitCaches]" = weakref.WeakSet()


class _SameOrEqual:
  """A jit option in `_caches_for`'s key: equal when equal (or, unhashable, the same)."""
  __slots__ = ("value",)

  def __init__(self, value):
    self.value = value

  def __eq__(self, other):
    if self.value is other.value:
      return True
    try:
      return bool(self.value == other.value)
    except Exception:
      return False

  def __hash__(self):
    try:
      return hash(self.value)
    except TypeError:
      return 0


def _on_config_change(name, value):
  if name in _STATE_FLAGS:
    state = global_key_state()
    for caches in list(_all_caches):
      caches.select_state(state)


config.on_change(_on_config_change)


def clear_caches() -> None:
  """Clears every compilation and staging cache, as `jax.clear_caches()` does: the traces
  and executables of every jitted function, the executables of primitives applied outside
  jit, the jaxprs rewritten by transformations and the shared buffers of Python scalars.
  Executables (and the tap consumers they own) are freed once nothing else holds them."""
  for caches in list(_all_caches):
    caches.by_state.clear()
    caches.select_state(global_key_state())
  compiler.clear_caches()


def _check_static(value, where):
  try:
    hash(value)
  except TypeError as e:
    raise ValueError(  # (JAX's words, then which argument and what to do)
        "Non-hashable static arguments are not supported. An error occurred while trying to "
        f"hash an object of type {type(value)}, {value}. The error was:\n"
        f"{type(e).__name__}: {e}\nStatic argument {where!r} must be hashable: use a tuple "
        "instead of a list, or make it a dynamic argument.") from None
  return value


def jit(fun: Callable | None = None, *, in_shardings=None, out_shardings=None,
        static_argnums=None, static_argnames=None, donate_argnums=None, donate_argnames=None,
        keep_unused: bool = False, device=None, backend=None, inline: bool = False,
        compiler_options: dict | None = None):
  """Compiles `fun` with XLA; usable as `@jit` or `@jit(static_argnums=...)`.

  As in JAX, `static_argnums` and `static_argnames` (and `donate_argnums` and
  `donate_argnames`) name the same parameters through `fun`'s signature when only one of
  them is given, so an argument is static however it is passed.  `keep_unused` is
  accepted for JAX's sake (minijax keeps every argument); with `inline=True` a call under a
  transformation (another `jit`, `make_jaxpr`, `grad`) applies the function's equations
  where it is called instead of binding a `jit` equation; `backend` may only be "cpu".  `compiler_options` are XLA's
  (`{"xla_...": value}`), for the programs this function compiles when called on concrete
  values.

  `in_shardings` (a sharding, a PartitionSpec under `with mesh:`, None, or a pytree prefix
  of the positional arguments of those) lays the arguments out before the call, and
  `out_shardings` (a prefix of the outputs) the results; None leaves one to the
  arguments (inputs) or to XLA's partitioner (outputs)."""
  if fun is None:
    return lambda f: jit(f, in_shardings=in_shardings, out_shardings=out_shardings,
                         static_argnums=static_argnums, static_argnames=static_argnames,
                         donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                         keep_unused=keep_unused, device=device, backend=backend,
                         inline=inline, compiler_options=compiler_options)
  if isinstance(fun, staticmethod):
    raise TypeError(f"staticmethod arguments are not supported, got {fun!r:.60}; apply jit "
                    "under @staticmethod instead (@staticmethod above @jit)")
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun!r:.60}")
  if inspect.isgeneratorfunction(fun):
    raise TypeError(f"Expected a function, got a generator function: {fun!r:.60}")
  if backend not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {backend!r}: minijax runs on the 'cpu' backend only")
  wrapped = JitWrapped(fun, static_argnums, static_argnames, donate_argnums, device,
                       donate_argnames, in_shardings, out_shardings, compiler_options)
  wrapped._inline = bool(inline)
  return _jitted(wrapped)


def _is_sharding_leaf(x) -> bool:
  return x is None or isinstance(x, (sharding_lib.Sharding, sharding_lib.PartitionSpec))


def _flat_shardings(spec, tree, what: str, fun_name: str) -> list:
  """One sharding (or None) per leaf of `tree`, from `spec`, a pytree prefix of it."""
  def mismatch(details):
    return ValueError(f"jit {what} of {fun_name} ({spec}) is not a pytree prefix of the "
                      f"{'positional arguments' if what == 'in_shardings' else 'outputs'} "
                      f"{tree_util.tree_structure(tree)}{details}")
  out = []
  for s, sub in prefix_pairs(spec, tree, is_leaf=_is_sharding_leaf, name=what,
                             mismatch=mismatch):
    if isinstance(s, sharding_lib.PartitionSpec):
      s = sharding_lib.on_current_mesh(s, f"jit {what} of {fun_name}")
    for leaf in tree_util.tree_leaves(sub, is_leaf=lambda x: isinstance(x, ShapedArray)):
      if s is not None:
        s.check_shape(leaf.shape if isinstance(leaf, ShapedArray) else get_aval(leaf).shape)
      out.append(s)
  return out


def _jitted(wrapped: JitWrapped) -> Callable:
  """The function `jit` returns.  Its fast path serves calls on concrete Arrays and Python
  scalars from `wrapped._fast`, whose entries are tuples `(*record, call)`: `call` runs an
  executable and unflattens its results (`Executable.make_call`); `record`, for an
  executable on a single device without effects, or with only ordered ones on the shared
  execution stream (taps), says how to run it here, in this frame, on the argument buffers
  built with the key (`Executable.dispatch_record`; `_NO_RECORD` for the others).  A call
  with one Array argument is tried first, with the fewest steps.  When the native fast
  path is built (`csrc/fast_path.cc`), calls on Arrays only are served in C before this
  function runs, and every other call, miss or error comes here.  When every
  argument is an Array the key is their avals (the aval itself for one argument), with no
  flattening; with Python scalars among them, the tuple of avals (a scalar's is weakly
  typed, as in JAX); for other pytrees it is the tree structure and the leaves' avals;
  with several devices and no `device=`, the first argument's device is added.  With
  static or keyword arguments (the dynamic ones Arrays) the key holds the keywords, the
  static values, their types and the dynamic arguments' avals.  The keys (and buffer
  lists) of several arguments are built by code generated per number of arguments
  (`_key_function`).  An entry hands arguments that are neither (anything else with an
  `aval`) back to `wrapped._call_slow`, which also serves every first call and files the
  new entry under the key computed here, the one place that defines it.  (An entry raises
  `_SlowPath` for those, and the slow path runs outside the `except` block, so that its
  errors are not chained to that one.)"""
  slow, caches = wrapped._call_slow, wrapped._caches
  context, EvalTrace = trace_lib._context, trace_lib.EvalTrace
  filter_exception, getframe = traceback_util.filter_exception, sys._getframe
  device_of = compiler.device_of
  with_static = bool(wrapped._static_argnums)
  key_functions: dict[Any, Callable] = {}  # per number of arguments (and keyword names)
  collect_garbage, runtime_error = backend.collect_jaxlib_garbage, executable_lib.JaxRuntimeError
  new_array = _new_array
  local_blocks = LOCAL_BLOCKS

  def new_key_function(n):
    return key_functions.setdefault(
        n, _key_function(n, wrapped._static_positions(n), with_static))

  kw_key_functions: dict[int, Callable] = {}  # per number of positional arguments: the
  # key function of the last keyword names used with it (which raises KeyError for others)

  def kw_key(args, kwargs):
    n = len(args)
    names = tuple(sorted(kwargs))
    fn = key_functions.get((n, names))
    if fn is None:
      fn = key_functions.setdefault((n, names), _key_function(
          n, wrapped._static_positions(n), True, names, wrapped._static_argnames))
    kw_key_functions[n] = fn
    return fn(args, kwargs)

  def jitted(*args, **kwargs):
    try:
      if type(context.trace) is EvalTrace:
        fast = caches.fast if not local_blocks[0] else caches.of_thread()[1]
        n = len(args)
        flat = args
        if n == 1 and not kwargs and not with_static:  # the commonest call, f(x), first
          x, = args
          try:
            buffers = [x._buffer]
            key = x.aval
            if x._committed:  # (committed arguments have entries of their own)
              key = (key, True)
          except AttributeError:  # not an Array (a pytree, a Python scalar)
            key = None
          else:
            entry = fast.get(key)
            if entry is not None:
              execute, handlers, out_aval, device, failed, const_buffers, finish, mixed, call \
                  = entry
              if out_aval is not None and const_buffers is None:  # one output, no constants
                collect_garbage()  # see `backend`: what jaxlib's threads dropped meanwhile
                try:
                  outs = execute(buffers).consume_with_handlers(handlers)
                except runtime_error as err:
                  failed(args, err)
                return new_array(outs[0], out_aval, device)
        else:
          try:
            if kwargs:
              try:
                key, flat, buffers = kw_key_functions[n](args, kwargs)
              except KeyError:  # the first keyword call with n positional arguments, or
                key, flat, buffers = kw_key(args, kwargs)  # with other keyword names
            elif with_static:
              key, flat, buffers = (key_functions.get(n) or new_key_function(n))(args)
            else:
              key, buffers = (key_functions.get(n) or new_key_function(n))(args)
          except AttributeError:
            key = None
            if not (kwargs or with_static) and n > 1:  # a Python scalar, most likely
              key_functions[n] = _mixed_key_function(n)
        if key is None:
          if with_static or kwargs:
            return slow(args, kwargs)
          key, flat, buffers = _pytree_key(args)
          if key is None:
            return slow(args, kwargs)
        try:
          entry = fast.get(key)
          if entry is None and caches.multi_device:  # keyed by the device too
            key = (key, device_of(flat))
            entry = fast.get(key)
        except Exception:  # a static argument unhashable, or whose __eq__ raises: the
          entry = key = None  # slow path says which
        if entry is None:
          return slow(args, kwargs, key)
        execute, handlers, out_aval, device, failed, const_buffers, finish, mixed, call = entry
        if execute is not None:  # run it here (see the docstring)
          if buffers is None:  # Python scalars among the arguments
            buffers = mixed(flat)
          if buffers is not None:
            if const_buffers is not None:
              buffers = const_buffers + buffers
            collect_garbage()  # see `backend`: what jaxlib's threads dropped meanwhile
            try:
              outs = execute(buffers).consume_with_handlers(handlers)
            except runtime_error as err:
              failed(flat, err)
            if out_aval is not None:
              return new_array(outs[0], out_aval, device)
            return finish(outs)
        try:
          return call(*flat)
        except _SlowPath:  # not Arrays after all (a leaked tracer), or on another device
          pass
      return slow(args, kwargs)
    except Exception as e:  # an API boundary: the user sees their own frames
      filter_exception(e, getframe())
      raise

  def failed_in_c(failed, args, err):
    """An error of a call that `_fast_native` ran in C, raised as above."""
    try:
      if isinstance(err, runtime_error):
        failed(args, err)
      raise err
    except Exception as e:
      filter_exception(e, getframe())
      raise

  traceback_util.register_boundary(jitted.__code__)
  traceback_util.register_boundary(failed_in_c.__code__)
  functools.update_wrapper(jitted, wrapped._fun)
  dispatch = jitted
  if _fast_native is not None:
    static_mask = None
    if with_static:
      def static_mask(n):
        """One byte per position of a call with `n` arguments: 1 where it is static."""
        positions = wrapped._static_positions(n)
        return bytes(i in positions for i in range(n))
    dispatch = _fast_native.fast_path(caches, context, EvalTrace, _new_array, collect_garbage,
                                      jitted, failed_in_c, static_mask, LOCAL_BLOCKS)
  out = PjitFunction(dispatch)
  functools.update_wrapper(out, wrapped._fun)
  out.__signature__ = DeferredSignature(wrapped._fun)
  out.lower = wrapped.lower
  out.trace = wrapped.trace
  out.eval_shape = wrapped.eval_shape
  out.clear_cache = wrapped.clear_cache
  out._cache_size = wrapped.cache_size
  out._wrapped = wrapped
  return out


class PjitFunction(functools.partial):
  """What `jit` returns, named as JAX names it (`<PjitFunction of f>`): a partial of the
  dispatch function `_jitted` makes (a partial calls it from C, with no Python frame of
  its own), bound as a method when it is a class attribute, as a function would be."""

  def __repr__(self):
    try:
      return f"<PjitFunction of {self.__wrapped__!r}>"
    except Exception:  # the function's own repr raised
      return "<PjitFunction>"

  def __get__(self, obj, objtype=None):
    return self if obj is None else types.MethodType(self, obj)

  @property
  def func(self):
    """The jitted function, as code that unwraps partials (chex's `chexify`) expects to find
    there (the dispatch function the partial calls stays internal, as in JAX)."""
    return self.__wrapped__

  def __copy__(self):  # copied as a function is: itself
    return self

  def __deepcopy__(self, memo):
    return self
