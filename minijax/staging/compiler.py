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

from minijax.tree_util import internal as tree_util
from minijax.config import LOCAL_BLOCKS, config, thread_key_state
from minijax.core import caches
from minijax.core import dtypes
from minijax.core import effects as effects_lib
from minijax.core.effects import has_deferrable
from minijax.core import primitive as primitive_lib
from minijax.core import trace as trace_lib
from minijax.core.avals import AbstractToken, Token, abstract_token, operand_avals
from minijax.core.jaxpr import ClosedJaxpr, Literal, eval_jaxpr
from minijax.core.state import AbstractRef, Ref
from minijax.interpreters.discharge import discharge_state, jaxpr_has_state
from minijax.interpreters.deferral import defer_taps
from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic
from minijax.lax.call import jit_p
from minijax.lax.state import freeze_p, new_ref_p
from minijax.lax.misc import convert_element_type_p
from minijax.staging import special_values
from minijax.lax.structural import device_put_p
from minijax.lowering.context import ir_context
from minijax.lowering.mlir import LoweringResult, lower_jaxpr_to_module
from minijax.runtime import backend, taps
from minijax.runtime import array as array_lib
from minijax.runtime import executable as executable_lib
from minijax.runtime.array import Array, device_put
from minijax.runtime.barrier import finish_debug_calls
from minijax.runtime.sharded_executable import ShardedExecutable
from minijax.runtime.tokens import TOKEN_AVAL, runtime_tokens
from minijax.staging import sharded as sharded_staging
from minijax.staging.cache_keys import params_key

CompiledFn = Callable[..., list]


def placement_of(args: Sequence[Any]) -> tuple[Any, bool]:
  """Where a computation on `args` runs unless it is told, and whether its results are
  committed there: the device of the first committed Array among them (its sharding, for
  an Array laid out over several devices) and True, else the default device and False
  (uncommitted values are moved where the computation runs).  Committed arguments on
  other devices are an error, which `check_committed` raises when the arguments miss the
  compiled program's device (the executable hands them to `fallback`)."""
  for x in args:
    if type(x) is Array and x._committed:
      return x._device or x._sharding, True
  return backend.get_device(None), False


def device_of(args: Sequence[Any]):
  return placement_of(args)[0]


def place_consts(consts: Sequence[Any], device) -> list:
  """The numpy constants a traced function closed over, put on `device` (a `Device`; other
  placements take them as they are).  The transfer guard counts these as explicit
  transfers: JAX embeds such constants in the program, which transfers nothing when
  called."""
  if not isinstance(device, backend.Device) or not any(
      isinstance(c, (np.ndarray, np.generic)) for c in consts):
    return list(consts)
  with backend.explicit_transfers():
    return [device_put(c, device) if isinstance(c, (np.ndarray, np.generic)) else c
            for c in consts]


def check_committed(args: Sequence[Any], name: str, arg_names=None) -> None:
  """JAX's ValueError when committed Arrays among `args` are on different devices
  (`arg_names`: their names, or a function that returns them)."""
  first = None
  for i, x in enumerate(args):
    if type(x) is Array and x._committed:
      if first is None:
        first = i, x
      elif x.devices() != first[1].devices() or (
          x._sharding is not None and first[1]._sharding is not None and
          x._sharding._device_assignment != first[1]._sharding._device_assignment):
        names = list((arg_names() if callable(arg_names) else arg_names) or [])
        raise ValueError(
            "Received incompatible devices for jitted computation. Got "
            f"{_describe_arg(first[0], first[1], name, names)} and "
            f"{_describe_arg(i, x, name, names)}")


def _describe_arg(i: int, x: Array, name: str, names: Sequence[str]) -> str:
  devices = (x._sharding._device_assignment if x._sharding is not None else (x._device,))
  shape = f"{x.aval.dtype.name}[{','.join(map(str, x.aval.shape))}]"
  return (f"argument {names[i] if i < len(names) else i} of {name} with shape {shape} and "
          f"with device ids {[d.id for d in devices]} on platform CPU")


def runtime_tokens_wanted() -> bool:
  """Whether single-device programs pass runtime tokens (`config.effects_ordering`)."""
  return config.effects_ordering == "runtime_token"


def jit_device(device, args: Sequence[Any], name: str = "jit", arg_names=None):
  """Where a jitted computation runs: its `device=` (resolved, and every argument moved
  there), else its arguments' (`placement_of`; committed ones must agree)."""
  if device is not None:
    return backend.get_device(device)
  check_committed(args, name, arg_names)
  return device_of(args)


def compile_jaxpr(closed_jaxpr: ClosedJaxpr, *, device, name: str,
                  donated_args: Sequence[bool] = (),
                  lowered: LoweringResult | None = None,
                  compiler_options: dict | None = None) -> CompiledFn:
  """A function from flat arguments to flat output Arrays, compiled for `device` (from
  `lowered`, the jaxpr's lowering, when the caller has it already; with XLA's
  `compiler_options`).  A jaxpr without equations is run without compiling anything,
  unless its lowering is given (`Lowered.compile()` wants that module compiled)."""
  jaxpr = closed_jaxpr.jaxpr
  if jaxpr_has_state(jaxpr):
    return _compile_stateful(closed_jaxpr, device=device, name=name, donated_args=donated_args,
                             compiler_options=compiler_options)
  deferred = deferred_form(closed_jaxpr, device)
  if deferred is not None:  # (`lowered`, if given, is the lowering of that form)
    pure, plan, takes_record_id = deferred
    fn = compile_jaxpr(pure, device=device, name=name,
                       donated_args=deferred_donation(donated_args, takes_record_id),
                       lowered=lowered, compiler_options=compiler_options)
    n_out = len(jaxpr.outvars)
    return DeferredCall(fn, n_out, plan, backend.get_device(device), pure.out_avals[n_out:],
                        takes_record_id, effects_lib.delivered_by_return(jaxpr.effects))
  if not jaxpr.eqns and lowered is None:  # (the inner jaxpr: caches are weak on that)
    return functools.partial(_run_trivial, jaxpr, tuple(closed_jaxpr.consts), device)
  if lowered is None:
    lowered = lower_jaxpr_to_module(closed_jaxpr, name=name, donated_args=donated_args,
                                    runtime_tokens=runtime_tokens_wanted())
  if not lowered.runtime_tokens and lowered.ordered_effects:
    _fence_program(backend.get_device(device))
  in_avals, out_avals = lowered.in_avals, lowered.out_avals
  token_values = any(type(a) is AbstractToken for a in (*in_avals, *out_avals))
  if token_values:  # token buffers travel as Arrays of TOKEN_AVAL (see `TokenCall`)
    in_avals = [TOKEN_AVAL if type(a) is AbstractToken else a for a in in_avals]
    out_avals = [TOKEN_AVAL if type(a) is AbstractToken else a for a in out_avals]
  fn = executable_lib.compile(
      lowered.module, device=device, name=name, in_avals=in_avals,
      out_avals=out_avals, donated_args=tuple(donated_args),
      host_callbacks=lowered.host_callbacks, host_calls=lowered.host_calls,
      num_tokens=len(lowered.ordered_effects) if lowered.runtime_tokens else 0,
      runtime_tokens=lowered.runtime_tokens,
      ordered_effects=lowered.ordered_effects,
      unordered_effects=effects_lib.unordered_effects(jaxpr.effects),
      keepalive=lowered.keepalives, compiler_options=compiler_options)
  if token_values:
    return TokenCall(fn, [type(a) is AbstractToken for a in lowered.out_avals])
  return fn


def deferred_form(closed_jaxpr: ClosedJaxpr, device) -> tuple[ClosedJaxpr, Any, bool] | None:
  """`(jaxpr, plan, takes_record_id)` of `closed_jaxpr` with its taps turned into outputs
  (`interpreters.deferral.defer_taps`) when `tap_delivery` defers them on `device`, else
  None: the form in which it is lowered and compiled."""
  if not has_deferrable(closed_jaxpr.jaxpr.effects):
    return None
  if taps.deferred.delivery(backend.get_device(device)) != "deferred":
    return None
  return defer_taps(closed_jaxpr, config.tap_loop_buffer)


def deferred_donation(donated_args: Sequence, takes_record_id: bool) -> tuple:
  """The donation of a deferred form's arguments: the record id, last, is not donated."""
  return (*donated_args, False) if takes_record_id and donated_args else tuple(donated_args)


class DeferredCall:
  """A compiled function whose taps were deferred (`interpreters.deferral`): its outputs
  after the first `n_out` are the tapped values (`nbytes` of them), delivered per `plan`
  by the device's receiver (`runtime.taps.deferred`), whose queue each call joins as it
  starts.  With `takes_record_id` the program also takes the call's record id, as a last
  argument (its `while_loop`s send full buffers with it).  With `delivers_on_return` (debug
  callbacks among the taps: `Effect.delivered_by_return`) a call returns once the record
  has been delivered."""
  __slots__ = ("fn", "n_out", "plan", "device", "nbytes", "takes_record_id",
               "delivers_on_return", "_call")

  def __init__(self, fn: CompiledFn, n_out: int, plan, device, extra_avals,
               takes_record_id: bool, delivers_on_return: bool = False):
    self.fn, self.n_out, self.plan, self.device = fn, n_out, plan, device
    self.nbytes = sum(a.size * a.dtype.itemsize for a in extra_avals)
    self.takes_record_id = takes_record_id
    self.delivers_on_return = delivers_on_return
    self._call = self._around(fn)

  def __call__(self, *args) -> list:
    return self._call(*args)

  def _around(self, run: Callable[..., list]) -> Callable[..., list]:
    """`run` (the executable, or its fast-path closure) between taking the call's place in
    the device's tap queue and handing the record its outputs; returns the others."""
    n, plan, device, nbytes, takes_id = (self.n_out, self.plan, self.device, self.nbytes,
                                         self.takes_record_id)
    start, delivers = taps.deferred.start, self.delivers_on_return

    def call(*args):
      record = start(device, plan, nbytes)
      try:
        outs = run(*args, record.id) if takes_id else run(*args)
      except BaseException:
        record.fill(None)
        raise
      record.fill(outs[n:])
      if delivers:
        finish_debug_calls()
      return outs[:n]
    return call

  def as_text(self):
    return self.fn.as_text() if hasattr(self.fn, "as_text") else ""

  def make_call(self, consts=(), out_tree=None, fallback=None, scalars: bool = False,
                committed: bool = False):
    """`jit`'s fast-path entry: the inner executable's closure, `_around`ed."""
    unflatten = out_tree.unflatten if out_tree is not None else list
    if not hasattr(self.fn, "make_call"):
      return lambda *args: unflatten(commit(self(*consts, *args), committed))
    call = self._around(self.fn.make_call(consts, None, fallback,
                                          scalars or self.takes_record_id,
                                          committed=committed))
    return lambda *args: unflatten(call(*args))


class TokenCall:
  """A compiled function whose jaxpr takes or returns tokens as values: a `Token`
  argument is passed as the device buffer of XLA's token type it wraps, and a token
  result comes back as a new `Token` wrapping the buffer the program returned."""
  __slots__ = ("fn", "out_tokens")

  def __init__(self, fn: CompiledFn, out_tokens: Sequence[bool]):
    self.fn, self.out_tokens = fn, tuple(out_tokens)

  def __call__(self, *args) -> list:
    outs = self.fn(*[x._buf if type(x) is Token else x for x in args])
    return [Token(Array(x._buffer, abstract_token, x._device)) if is_token else x
            for x, is_token in zip(outs, self.out_tokens)]


def _compile_stateful(closed_jaxpr: ClosedJaxpr, *, device, name: str,
                      donated_args: Sequence[bool], compiler_options=None) -> CompiledFn:
  """A jaxpr with refs runs discharged (`interpreters.discharge`): each ref argument is
  passed as the buffer it holds, donated and aliased to the extra result that is its final
  value, and that result becomes the ref's buffer after the call."""
  pure, donated, ref_pos = discharged_for_call(closed_jaxpr, donated_args)
  fn = compile_jaxpr(pure, device=device, name=name, donated_args=donated,
                     compiler_options=compiler_options)
  n_out = len(closed_jaxpr.jaxpr.outvars)
  return StatefulCall(fn, ref_pos, n_out, _may_forward(pure.jaxpr, n_out))


# Primitives whose result XLA may hand back as one of the program's argument buffers.
_FORWARDING = frozenset({"jit", "copy", "convert_element_type", "reshape", "checkpoint",
                         "named_call", "custom_jvp_call", "custom_vjp_call", "squeeze",
                         "expand_dims", "broadcast_in_dim"})


def _may_forward(pure_jaxpr, n_out: int) -> tuple[bool, ...]:
  """Per ref result of a discharged program: whether XLA may return it in the buffer of
  another argument (a value written whole into the ref) or of another result.  Such a
  result is copied before it becomes the ref's buffer, which a later call donates."""
  producer = {v: e.primitive.name for e in pure_jaxpr.eqns for v in e.outvars}
  outs = pure_jaxpr.outvars
  return tuple(type(v) is Literal or outs.count(v) > 1 or producer.get(v, "jit") in _FORWARDING
               for v in outs[n_out:])


def discharged_for_call(closed_jaxpr: ClosedJaxpr, donated_args: Sequence[bool] = ()):
  """`(pure jaxpr, donation, ref positions)` of a jaxpr with refs: its discharged form,
  each ref argument donated and aliased (by result index) to the ref's final value."""
  jaxpr = closed_jaxpr.jaxpr
  n_out = len(jaxpr.outvars)
  ref_pos = tuple(i for i, v in enumerate(jaxpr.invars) if type(v.aval) is AbstractRef)
  donated = list(donated_args) or [False] * len(jaxpr.invars)
  for k, i in enumerate(ref_pos):
    donated[i] = n_out + k
  return discharge_state(closed_jaxpr, lowering=True), tuple(donated), ref_pos


class StatefulCall:
  """Calls a discharged program on refs (see `_compile_stateful`)."""
  __slots__ = ("fn", "ref_pos", "n_out", "copy")

  def __init__(self, fn, ref_pos, n_out, copy):
    self.fn, self.ref_pos, self.n_out, self.copy = fn, ref_pos, n_out, copy

  def __call__(self, *args):
    args = list(args)
    refs = []
    for i in self.ref_pos:
      ref = args[i]
      if type(ref) is not Ref:
        raise TypeError(f"argument {i} must be a Ref (the function was traced for one), got "
                        f"{type(ref).__name__}")
      if any(r is ref for r in refs):
        raise ValueError(f"one ref of type {ref.aval} is passed twice to a function that "
                         "updates it: only one reference to a mutable array may be passed")
      refs.append(ref)
      args[i] = ref._buf
      if args[i] is None:
        raise ValueError(f"a ref of type {ref.aval} is used after it was frozen: `freeze` "
                         "ends a ref's life; read it with `r[...]` to keep using it")
    outs = self.fn(*args)
    n = self.n_out
    for ref, new, copy in zip(refs, outs[n:], self.copy):
      ref._buf = array_lib.copy_array(new) if copy else new
    return outs[:n]

  def as_text(self):
    return self.fn.as_text() if hasattr(self.fn, "as_text") else ""

  def make_call(self, consts=(), out_tree=None, fallback=None, scalars: bool = False,
                committed: bool = False):
    """`jit`'s fast-path entry (see `Executable.make_call`): the executable's own closure,
    with each ref's buffer passed in and its new buffer put back.  Consts may be refs (a
    closed-over ref is read at call time)."""
    if not isinstance(self.fn, executable_lib.Executable) or any(self.copy):
      call_general = self
      unflatten = out_tree.unflatten
      return lambda *args: unflatten(commit(call_general(*consts, *args), committed))
    inner = self.fn.make_call((), None, None, scalars, committed=committed)
    ref_pos, n, unflatten = self.ref_pos, self.n_out, out_tree.unflatten
    consts = tuple(consts)
    if not consts and len(ref_pos) == 1 and len(self.fn.in_avals) == 1:  # f(ref)
      def call_one(ref):
        try:
          buf = ref._buf
        except AttributeError:
          return fallback((ref,))
        if buf is None:
          return self(ref)  # raises: the ref was frozen
        outs = inner(buf)
        ref._buf = outs[n]
        return unflatten(outs[:n])
      return call_one

    def call(*args):
      full = [*consts, *args]
      try:
        refs = [full[i] for i in ref_pos]
        for i, ref in zip(ref_pos, refs):
          full[i] = ref._buf
      except (AttributeError, IndexError):
        return fallback(args)
      if None in full or len(set(map(id, refs))) < len(refs):
        return unflatten(self(*consts, *args))  # raises: a frozen ref, or one ref twice
      outs = inner(*full)
      for ref, new in zip(refs, outs[n:]):
        ref._buf = new
      return unflatten(outs[:n])
    return call


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
    if type(x) is Token:
      outs.append(Token(x._buf))
    elif type(x) is Array and x._device is device:
      # As a compiled program's would be, each result is a buffer of its own: donating
      # the argument later must not delete the result.
      outs.append(array_lib.copy_array(x))
    else:
      outs.append(device_put(x, device))
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
                   config.tap_delivery, config.tap_loop_buffer, config.effects_ordering,
                   options)
  fn = slot.fn
  if fn is None:
    fn = slot.fn = compile_jaxpr(jaxpr, device=device, name=name,
                                 donated_args=donated_invars, lowered=lowered,
                                 compiler_options=compiler_options)
  return fn


def _jit_impl(*args, jaxpr, name, donated_invars, device):
  committed = device is not None or any(type(x) is Array and x._committed for x in args)
  placement = sharded_staging.placement(jaxpr, args, name) if device is None else None
  if placement is not None:
    device = sharded_staging.single_device(placement, jaxpr)
  if placement is not None and device is None:
    fn = sharded_staging.compiled_call(jaxpr, name, donated_invars, placement)
  else:
    fn = compiled_call(jaxpr, name, donated_invars, jit_device(device, args, name))
  outs = commit(fn(*args), committed or placement is not None)
  if special_values.checking():
    special_values.check_jaxpr(jaxpr, args, outs, name)
  return outs


jit_p.def_impl(_jit_impl)
device_put_p.def_impl(device_put)


@new_ref_p.def_impl
def _new_ref_impl(x, *, kind, memory_space):
  """A ref owns its buffer (a call donates it), so it holds a copy of `x`."""
  x = x if type(x) is Array else device_put(x)
  return Ref(array_lib.copy_array(x), AbstractRef(x.aval, None if kind == "tangent" else kind))


@freeze_p.def_impl
def _freeze_impl(ref):
  """The ref's buffer, handed over: the ref is dead afterwards."""
  buf = ref._buf
  if buf is None:
    raise ValueError(f"freeze of a ref of type {ref.aval} that was frozen already")
  ref._buf = None
  return buf


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
    avals = operand_avals(primitive, args)
  device, committed = placement_of(args)
  key = (primitive, params_key(params) if params else (), avals, device, committed)
  if LOCAL_BLOCKS[0]:  # (the flags in force in this thread decide how it compiles)
    key = (key, thread_key_state())
  run = _primitive_cache.get(key)
  if run is None:
    run = _primitive_cache[key] = _compile_primitive(primitive, params, avals, device, args,
                                                     committed)
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


def _compile_primitive(primitive, params, avals, device, args=(), committed=False) -> Callable:
  """A function of the arguments that returns the primitive's result: a list of Arrays
  (`committed` to `device`, or not) when it has multiple results, else the Array.
  `device` is a sharding when an argument is laid out over several devices: the program
  then runs over them (`sharded.compile_primitive`); so it does over a mesh used inside (a
  `pmap` in the body of an eager loop or branch), as `jit` would run it.  Arguments
  elsewhere than `device` are moved there, unless they are committed elsewhere (JAX's
  error)."""
  if primitive._effectful_abstract_eval is None:  # no impl of its own, and none to compile
    raise NotImplementedError(
        f"Evaluation rule for '{primitive}' not implemented: primitive '{primitive}' has "
        f"neither an impl (`{primitive}_p.def_impl(fn)`) nor the abstract evaluation and "
        "lowering rules from which minijax compiles one")
  def fun(*xs):
    out = primitive.bind(*xs, **params)
    return out if primitive.multiple_results else [out]

  if isinstance(device, backend.Device):
    with trace_lib.constant_folding(False):  # else one without operands would run itself
      jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals)
    closed = ClosedJaxpr(jaxpr, consts)
    # A mesh inside (a pmap in a loop's body or a branch) runs it over the mesh's devices.
    if sharded_staging.jaxpr_shardings(jaxpr):
      p = sharded_staging.placement(closed, args, primitive.name)
      device = sharded_staging.single_device(p, closed) or p
  if not isinstance(device, backend.Device):
    if isinstance(device, sharded_staging.Placement):
      fn = sharded_staging.compiled_call(closed, primitive.name, (False,) * len(avals), device)
    else:
      fn = sharded_staging.compile_primitive(primitive, params, avals, args)
    if primitive.multiple_results:
      return fn
    if isinstance(fn, ShardedExecutable):
      return fn.make_call(out_tree=_LEAF)
    return lambda *xs: fn(*xs)[0]

  fn = compile_jaxpr(closed, device=device, name=primitive.name)
  if isinstance(fn, executable_lib.Executable):
    single = not primitive.multiple_results

    def moved(xs):  # not all on `device`: moved there, unless committed elsewhere
      check_committed(xs, primitive.name)
      outs = fn._call_general(xs)
      for out in outs:
        out._committed = committed
      return outs[0] if single else outs
    return fn.make_call(out_tree=_LEAF if single else None, fallback=moved,
                        committed=committed)
  if primitive.multiple_results:
    return fn if not committed else lambda *xs: commit(fn(*xs))
  return lambda *xs: commit(fn(*xs), committed)[0]


def commit(outs: list, committed: bool = True) -> list:
  """`outs` (new Arrays, and anything else) with the Arrays' committed bit set."""
  for out in outs:
    if type(out) is Array:
      out._committed = committed
  return outs


primitive_lib.set_eager_impl(apply_primitive)


def _widen_subbyte(x: Array) -> np.ndarray:
  """The host value of `x`, of a sub-byte dtype (see `runtime.array`)."""
  wide = np.dtype(np.float32 if dtypes.is_float(x.dtype) else
                  np.int8 if x.dtype.name.startswith("int") else np.uint8)
  out = apply_primitive(convert_element_type_p, x, new_dtype=wide, weak_type=False)
  return np.asarray(out).astype(x.dtype)


array_lib.widen_subbyte = _widen_subbyte


def _on_config_change(name, value):
  if name in ("tap_mechanism", "tap_delivery", "tap_loop_buffer", "effects_ordering",
              "allow_f16_reductions"):
    _primitive_cache.clear()  # (a reduction refused is refused when it is traced)
  elif name == "eager_cache_size":
    _evict_primitives(value)


def clear_caches() -> None:
  """Forgets every compiled executable and rewritten jaxpr below `jit`'s own caches."""
  _primitive_cache.clear()
  sharded_staging._shard_map_cache.clear()
  caches.clear_all()
  array_lib.clear_scalar_buffers()


config.on_change(_on_config_change)
