"""Trace, lower, compile, cache: the one path from a jaxpr to something that runs.

Both ways of running code go through here.  A primitive applied to concrete values (the
eager impl, which this module installs on every primitive with
`primitive.set_eager_impl`) runs as a one-equation jaxpr, compiled once per (primitive,
params, avals, device) and kept in a bounded LRU cache.  A `jit_p` equation evaluated on
concrete values (`jit`'s slow path, or `jit_p` bound under no transformation) runs its
jaxpr compiled once per (jaxpr, donation, device).  Either way the jaxpr is lowered to an
MHLO module (`lowering.mlir`) and compiled for one device (`runtime.compile`); a jaxpr with
no equations is evaluated without compiling.  With `debug_nans`/`debug_infs`, outputs are
checked (`special_values`).
"""
from __future__ import annotations

import collections
import functools
import operator
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir

from minijax import tree_util
from minijax.config import config
from minijax.core import caches
from minijax.core import dtypes
from minijax.core import effects as effects_lib
from minijax.core import primitive as primitive_lib
from minijax.core import trace as trace_lib
from minijax.core.avals import get_aval
from minijax.core.jaxpr import ClosedJaxpr, Literal, eval_jaxpr
from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic
from minijax.lax.call import jit_p
from minijax.lax.misc import convert_element_type_p
from minijax.staging import special_values
from minijax.lax.structural import device_put_p
from minijax.lowering.context import ir_context
from minijax.lowering.mlir import LoweringResult, lower_jaxpr_to_module
from minijax.runtime import backend
from minijax.runtime import array as array_lib
from minijax.runtime import executable as executable_lib
from minijax.runtime.array import Array, device_put
from minijax.runtime.sharded_executable import ShardedExecutable
from minijax.runtime.tokens import TOKEN_AVAL, runtime_tokens
from minijax.staging import sharded as sharded_staging
from minijax.staging.cache_keys import params_key

CompiledFn = Callable[..., list]


def device_of(args: Sequence[Any]):
  """The device of the first Array among `args` (its sharding, for an Array laid out over
  several devices), else the default device."""
  for x in args:
    if type(x) is Array:
      return x._device or x._sharding
  return backend.get_device(None)


def runtime_tokens_wanted() -> bool:
  """Whether single-device programs pass runtime tokens (`config.effects_ordering`)."""
  return config.effects_ordering == "runtime_token"


def jit_device(device, args: Sequence[Any]):
  """Where a jitted computation runs: its `device=` (resolved), else its arguments'."""
  return backend.get_device(device) if device is not None else device_of(args)


def compile_jaxpr(closed_jaxpr: ClosedJaxpr, *, device, name: str,
                  donated_args: Sequence[bool] = (),
                  lowered: LoweringResult | None = None,
                  compiler_options: dict | None = None) -> CompiledFn:
  """A function from flat arguments to flat output Arrays, compiled for `device` (from
  `lowered`, the jaxpr's lowering, when the caller has it already; with XLA's
  `compiler_options`).  A jaxpr without equations is run without compiling anything,
  unless its lowering is given (`Lowered.compile()` wants that module compiled)."""
  jaxpr = closed_jaxpr.jaxpr
  if not jaxpr.eqns and lowered is None:  # (the inner jaxpr: caches are weak on that)
    return functools.partial(_run_trivial, jaxpr, tuple(closed_jaxpr.consts), device)
  if lowered is None:
    lowered = lower_jaxpr_to_module(closed_jaxpr, name=name, donated_args=donated_args,
                                    runtime_tokens=runtime_tokens_wanted())
  if not lowered.runtime_tokens and lowered.ordered_effects:
    _fence_program(backend.get_device(device))
  return executable_lib.compile(
      lowered.module, device=device, name=name, in_avals=lowered.in_avals,
      out_avals=lowered.out_avals, donated_args=tuple(donated_args),
      host_callbacks=lowered.host_callbacks, host_calls=lowered.host_calls,
      num_tokens=len(lowered.ordered_effects) if lowered.runtime_tokens else 0,
      runtime_tokens=lowered.runtime_tokens,
      ordered_effects=lowered.ordered_effects,
      unordered_effects=effects_lib.unordered_effects(jaxpr.effects),
      keepalive=lowered.keepalives, compiler_options=compiler_options)


# ----------------------------------------------------------------------------- fences

_FENCE = """
func.func public @main() -> tensor<0xi1> {
  %0 = mhlo.constant dense<> : tensor<0xi1>
  return %0 : tensor<0xi1>
}
"""
_fence_executables: dict = {}


def _fence_program(device):
  """jaxlib's executable of the fence program on `device`, and its result handler; compiled
  with the first streamed program of the device (so that a forked child, which cannot
  compile, has it too), and kept for good."""
  program = _fence_executables.get(device)
  if program is None:
    with ir_context(), ir.Location.unknown():
      module = ir.Module.parse(_FENCE)
    exe = executable_lib.compile(module, device=device, name="fence", in_avals=(),
                                 out_avals=(TOKEN_AVAL,))
    program = _fence_executables[device] = (exe._exe.execute_sharded, exe._handlers)
  return program


def _fence(device):
  """Dispatches the fence program on `device` (on the current execution stream) and returns
  its output buffer, ready once everything dispatched before it on that stream is done
  (see `runtime/tokens.py`)."""
  execute, handlers = _fence_program(device)
  return execute([]).consume_with_handlers(handlers)[0]


runtime_tokens.fence = _fence


def _run_trivial(jaxpr, consts, device, *args) -> list:
  env = dict(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  outs = []
  for v in jaxpr.outvars:
    x = v.val if type(v) is Literal else env[v]
    outs.append(device_put(x, device) if not (type(x) is Array and x._device is device) else x)
  return outs


# ----------------------------------------------------------------------------- jit_p

class _CompiledSlot:
  """Where `compiled_call` files the executable of one (jaxpr, donation, device)."""
  __slots__ = ("fn",)

  def __init__(self, *key):
    self.fn = None


# Keyed weakly on the jaxpr: an executable lives while its jaxpr does (jit keeps the jaxprs
# it traced for as long as the jitted function lives), and at most `config.jit_cache_size`
# of them, the least recently used evicted.
_compiled = caches.WeakLRU(_CompiledSlot, "jit_cache_size")


def compiled_call(jaxpr: ClosedJaxpr, name: str, donated_invars, device,
                  lowered: LoweringResult | None = None,
                  compiler_options: dict | None = None) -> CompiledFn:
  """The compiled executable for a `jit_p` equation on `device` (shared with `jit`'s fast
  path), compiled on first use (from `lowered` when given; with XLA's `compiler_options`)."""
  options = tuple(sorted(compiler_options.items())) if compiler_options else ()
  slot = _compiled(jaxpr, donated_invars, device, config.tap_mechanism,
                   config.effects_ordering, options)
  fn = slot.fn
  if fn is None:
    fn = slot.fn = compile_jaxpr(jaxpr, device=device, name=name,
                                 donated_args=donated_invars, lowered=lowered,
                                 compiler_options=compiler_options)
  return fn


def _jit_impl(*args, jaxpr, name, donated_invars, device):
  placement = sharded_staging.placement(jaxpr, args, name) if device is None else None
  if placement is not None:
    device = sharded_staging.single_device(placement, jaxpr)
  if placement is not None and device is None:
    fn = sharded_staging.compiled_call(jaxpr, name, donated_invars, placement)
  else:
    fn = compiled_call(jaxpr, name, donated_invars, jit_device(device, args))
  outs = fn(*args)
  if special_values.checking():
    special_values.check_jaxpr(jaxpr, args, outs, name)
  return outs


jit_p.def_impl(_jit_impl)
device_put_p.def_impl(device_put)


# ----------------------------------------------------------------------------- eager primitives

# The least recently used entry goes beyond `config.eager_cache_size` entries.
_primitive_cache: collections.OrderedDict = collections.OrderedDict()
_aval_attr = operator.attrgetter("aval")
_LEAF = tree_util.tree_structure(0)


def apply_primitive(primitive, *args, **params):
  """Runs `primitive` on concrete values through a cached one-equation executable."""
  try:
    avals = tuple(map(_aval_attr, args))
  except AttributeError:  # numpy values or Python scalars among the arguments
    avals = None
  if avals is None:  # outside the `except`, so that get_aval's errors are not chained to it
    avals = tuple(map(get_aval, args))
  device = device_of(args)
  key = (primitive, params_key(params) if params else (), avals, device)
  run = _primitive_cache.get(key)
  if run is None:
    run = _primitive_cache[key] = _compile_primitive(primitive, params, avals, device, args)
    _evict_primitives(config.eager_cache_size)
  else:
    try:
      _primitive_cache.move_to_end(key)
    except KeyError:  # another thread evicted it meanwhile
      pass
  out = run(*args)
  if special_values.checking():
    special_values.check_primitive(primitive, out if primitive.multiple_results else [out])
  return out


def _evict_primitives(size: int) -> None:
  while len(_primitive_cache) > size:
    try:
      _primitive_cache.popitem(last=False)
    except KeyError:  # emptied by another thread
      return


def _compile_primitive(primitive, params, avals, device, args=()) -> Callable:
  """A function of the arguments that returns the primitive's result: a list of Arrays
  when it has multiple results, else the Array.  `device` is a sharding when an argument
  is laid out over several devices: the program then runs over them
  (`sharded.compile_primitive`)."""
  if not isinstance(device, backend.Device):
    fn = sharded_staging.compile_primitive(primitive, params, avals, args)
    if primitive.multiple_results:
      return fn
    if isinstance(fn, ShardedExecutable):
      return fn.make_call(out_tree=_LEAF)
    return lambda *xs: fn(*xs)[0]

  def fun(*xs):
    out = primitive.bind(*xs, **params)
    return out if primitive.multiple_results else [out]

  with trace_lib.constant_folding(False):  # else one without operands would run itself
    jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals)
  fn = compile_jaxpr(ClosedJaxpr(jaxpr, consts), device=device, name=primitive.name)
  if primitive.multiple_results:
    return fn
  if isinstance(fn, executable_lib.Executable):
    return fn.make_call(out_tree=_LEAF)
  return lambda *xs: fn(*xs)[0]


primitive_lib.set_eager_impl(apply_primitive)


def _widen_subbyte(x: Array) -> np.ndarray:
  """The host value of `x`, of a sub-byte dtype (see `runtime.array`)."""
  wide = np.dtype(np.float32 if dtypes.is_float(x.dtype) else
                  np.int8 if x.dtype.name.startswith("int") else np.uint8)
  out = apply_primitive(convert_element_type_p, x, new_dtype=wide, weak_type=False)
  return np.asarray(out).astype(x.dtype)


array_lib.widen_subbyte = _widen_subbyte


def _on_config_change(name, value):
  if name in ("tap_mechanism", "effects_ordering"):
    _primitive_cache.clear()
  elif name == "eager_cache_size":
    _evict_primitives(value)


def clear_caches() -> None:
  """Forgets every compiled executable and rewritten jaxpr below `jit`'s own caches."""
  _primitive_cache.clear()
  sharded_staging._shard_map_cache.clear()
  caches.clear_all()
  array_lib.clear_scalar_buffers()


config.on_change(_on_config_change)
