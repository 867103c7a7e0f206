"""Compiling MHLO modules for one device, and running them.

`compile` hands an `ir.Module` to jaxlib's CPU client for one device and returns an
`Executable`, which runs it on `Array`s and returns `Array`s.  Calling an executable is the
dispatch hot path, so everything that can be decided once is decided at compile time and
bound into a closure (`make_call`, which `jit`'s fast path also uses with the function's
constants and output tree): the result handlers (one per output, built from minijax's own
avals with checks skipped, which is also what keeps jaxlib from importing `jax` to build
them), the output avals and device, and how tokens are passed.  The closure reads `_buffer`
off every argument, executes, and wraps the outputs; a Python scalar of a parameter's aval
gets a device buffer shared by every call with that value (`array.scalar_buffer`), and
anything else unusual (numpy arguments, an argument on another device) falls to
`_call_general`, which converts and checks every argument.  The closure trusts its caller
to have chosen the executable by the arguments' avals (jaxlib checks byte sizes, not
dtypes); jaxlib's errors are translated only after they happen (a deleted or donated
argument, a wrong count or shape).

With `effects_ordering="runtime_token"` (the seed's design), ordered effects are chained
through the runtime tokens of `runtime/tokens.py`: an
executable binds the token chain of each of its (ordered effect, device) pairs into its call
closure, passes the chain's token before its array arguments and keeps the token it
returns, holding its device's ordering lock from reading the token to storing the new one
(and no other lock: with jaxlib's inline execution of cheap programs the lock is held while
the program runs, maybe waiting for room in a tap queue, and barriers never take it); an
executable with unordered effects records its execution status, with its `keepalive`.

With `effects_ordering="stream"` an executable with ordered effects takes no tokens: it
runs on the shared execution stream (`_make_execute_streamed`; see `runtime/tokens.py`),
which orders it after every execution with effects dispatched before it on its device.  An
executable with unordered effects only runs there too, and keeps no status: the fence a
barrier waits for comes after it (an order unordered effects allow).  `jit`'s fast path
runs these in its own frame (`dispatch_record`).

An executable keeps `keepalive` (what its lowering asked for: the tap consumers its custom
calls name) and its host callbacks for as long as it lives, and no longer: nothing global
refers to it, so it goes with the caches that hold it (`jit`'s, the eager cache).  The
closure it calls itself through (`self.call`) refers back to it weakly, so that no cycle
keeps it until Python's cyclic collector runs.

A run interrupted by a signal (Ctrl-C while a tap on this thread waits for room in a full
queue; see `taps.queues`) fails inside jaxlib; the call then raises what the signal
handler raised (`KeyboardInterrupt`), not jaxlib's error.  The computation is abandoned:
taps it made before are delivered, its later taps are not made, its token chains keep
their previous tokens, and later calls run normally.

An executable that makes value-returning host calls (`pure_callback`, `io_callback`; the
lowering lists them, `host_calls`) is synchronous.  It is compiled with a placeholder host
callback, which makes jaxlib run it on the dispatching thread, so that a host function
never holds one of XLA's worker threads while it waits for a computation of its own; and
its call waits until the computation has finished, so that an exception raised by a host function is raised from the call, as the
original exception (`host_calls.raise_filed`), and a failed ordered execution hands its
chains back their initial tokens, so that later calls still run.  A computation dispatched
from inside a host call (a host function that calls a jitted function) cannot wait on the
token chains of the computation that is calling it, which finishes only after the host
function returns: it starts from the chains' initial tokens instead, leaves the chains
alone, and runs to completion before the host function goes on (`_make_run_nested`), so
its effects still come after everything the outer computation did before the host call.
"""
from __future__ import annotations

import logging
import time
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from jaxlib import _jax, xla_client

from minijax import monitoring
from minijax.config import compile_log_level, config
from minijax.core.avals import ShapedArray, python_scalar_aval
from minijax.core.dtypes import PYTHON_SCALARS
from minijax.core.effects import delivered_by_return
from minijax.runtime import backend, compilation_cache, host_calls, taps
from minijax.runtime.barrier import finish_debug_calls
from minijax.runtime.array import (Array, _DELETED_MESSAGE, device_put, is_concrete_array,
                                   scalar_buffer)
from minijax.runtime.tokens import (STREAM_ID, TOKEN_AVAL, GroupToken, RuntimeTokens,
                                    runtime_tokens)

logger = logging.getLogger("minijax")

JaxRuntimeError = _JaxRuntimeError = _jax.JaxRuntimeError
_raise_filed = host_calls.raise_filed
_get_stream, _set_stream = _jax.get_execution_stream_id, _jax.set_execution_stream_id
_take_interrupt = taps.take_interrupt



class CompiledProgram:
  """What every compiled program answers, for one device (`Executable`) or several
  (`sharded_executable.ShardedExecutable`): its HLO, XLA's cost analysis, and errors
  clearer than jaxlib's.  Subclasses hold `name`, `in_avals`, `out_avals`, jaxlib's loaded
  executable `_exe`, check arguments in `_prepare` and say where they run in `_placement`."""

  def _diagnose(self, args, err: Exception) -> None:
    """Raises a clearer error than jaxlib's when the arguments are at fault; else returns."""
    try:
      self._prepare(args)
    except (TypeError, RuntimeError) as clearer:
      raise clearer from err

  def _describe(self) -> str:
    return f"the computation {self.name!r} compiled for {self._placement()}"

  def as_text(self) -> str:
    """XLA's optimized HLO (for several devices, one device's partitioned program)."""
    return self._exe.get_hlo_text()

  def cost_analysis(self) -> dict:
    return self._exe.cost_analysis()

  def __repr__(self):
    ins = ", ".join(a.str_short() for a in self.in_avals)
    outs = ", ".join(a.str_short() for a in self.out_avals)
    return f"{type(self).__name__}({self.name}: ({ins}) -> ({outs}) on {self._placement()})"


def _delivering(call: Callable) -> Callable:
  """`call`, returning once the debug callbacks of the computation it ran have been made
  (`Effect.delivered_by_return`), or raising what one raised: JAX's callbacks run during
  their computation, so a program finds their output there when the call returns."""
  def call_and_deliver(*args):
    outs = call(*args)
    finish_debug_calls()
    return outs
  return call_and_deliver


class Executable(CompiledProgram):
  """A module compiled for one device; call it with one argument per array parameter."""

  def __init__(self, loaded, *, name: str, device, in_avals, out_avals, donated_args,
               host_callbacks, ordered_effects, unordered_effects, compile_seconds: float,
               host_calls=(), keepalive=(), pass_tokens: bool = True):
    self._exe = loaded
    self.name = name
    self.device = device
    self.in_avals = tuple(in_avals)
    self.out_avals = tuple(out_avals)
    self.donated_args = tuple(donated_args)
    self.host_callbacks = tuple(host_callbacks)  # jaxlib holds them only as long as we do
    self.host_calls = tuple(host_calls)
    self.calls_host = bool(self.host_calls)
    self.keepalive = tuple(keepalive)
    self.ordered_effects = tuple(ordered_effects)
    self.unordered_effects = tuple(unordered_effects)
    # Without runtime tokens the program makes its own, and its order across calls comes
    # from the shared execution stream (see `runtime/tokens.py`).
    self.runtime_tokens = pass_tokens or not self.ordered_effects
    # On that stream too, without a status to keep: programs with unordered effects only.
    self._on_stream = (not pass_tokens and not self.calls_host
                       and bool(self.ordered_effects or self.unordered_effects))
    self.num_tokens = len(self.ordered_effects) if self.runtime_tokens else 0
    # Debug callbacks have been delivered when a call returns (as in JAX; taps need not be).
    self.delivers_on_return = delivered_by_return(self.ordered_effects + self.unordered_effects)
    self.compile_seconds = compile_seconds
    # What programs with effects or host calls run through: Ctrl-C can end it (`taps.watched`)
    effectful = self.ordered_effects or self.unordered_effects or self.calls_host
    self._execute = taps.watched(loaded.execute_sharded) if effectful else loaded.execute_sharded
    sharding = backend.sharding_for(device)
    self._handlers = [xla_client.array_result_handler(aval, sharding, True, _skip_checks=True)
                      for aval in self.out_avals]
    self._out_devices = (device,) * len(self.out_avals)
    self._chains = [runtime_tokens.chain(effect, device) for effect in self.ordered_effects]
    token_handler = xla_client.array_result_handler(TOKEN_AVAL, sharding, True,
                                                    _skip_checks=True)
    self._token_and_result_handlers = [token_handler] * self.num_tokens + self._handlers
    self._run_nested = self._make_run_nested()
    self._execute_streamed = self._make_execute_streamed()
    self._run_effectful = self._make_run_effectful()
    self.call = self.make_call(_weak_self=True)

  def __call__(self, *args) -> list[Array]:
    return self.call(*args)

  def _make_run_nested(self) -> Callable[[list], list]:
    """Runs the executable from inside a host call: from the chains' initial tokens, leaving
    the chains alone, and to completion (see the module docstring)."""
    execute, n = self._execute, self.num_tokens
    initial = [chain.initial for chain in self._chains][:n]
    all_handlers = self._token_and_result_handlers
    streamed = not self.runtime_tokens
    depth = host_calls.host_call_depth

    def run_nested(buffers):
      if streamed:  # a stream of its own: the shared one is busy with the calling program
        previous = _get_stream()
        _set_stream(STREAM_ID + depth())
      try:
        results = execute([*initial, *buffers], with_tokens=True)
      finally:
        if streamed:
          _set_stream(previous)
      status = results.consume_token()
      outs = results.consume_with_handlers(all_handlers)
      status.block_until_ready()
      return outs[n:]
    return run_nested

  def _make_run_effectful(self) -> Callable[[list], list] | None:
    """For executables with effects or host calls, a function from argument buffers to
    output buffers that passes and keeps the tokens (see `RuntimeTokens`) and waits for
    host calls; None for plain executables."""
    if not self.ordered_effects and not self.unordered_effects and not self.calls_host:
      return None
    if self.calls_host:
      return self._make_run_synchronous()
    execute, handlers, tokens = self._execute, self._handlers, runtime_tokens
    execute_streamed = self._execute_streamed
    if execute_streamed is not None:
      return lambda buffers: execute_streamed(buffers).consume_with_handlers(handlers)
    limit, lock = RuntimeTokens._MAX_UNORDERED, tokens._lock
    statuses = tokens.statuses(self.device) if self.unordered_effects else None
    depth, run_nested = host_calls.host_call_depth, self._run_nested
    keep = self.keepalive  # an unordered run keeps the consumers it taps to until it is done
    if not self.ordered_effects:
      def run_unordered(buffers):
        if depth():
          return run_nested(buffers)
        results = execute(buffers, with_tokens=True)
        status = results.consume_token()
        with lock:
          statuses.append((status, keep))
        if len(statuses) > limit:
          tokens.trim(statuses)
        return results.consume_with_handlers(handlers)
      return run_unordered

    chains, all_handlers, n = self._chains, self._token_and_result_handlers, len(self._chains)
    settle, ordering = tokens.settle, tokens.ordering_lock(self.device)

    def run_ordered(buffers):
      if depth():
        return run_nested(buffers)
      with ordering:
        results = execute([*[settle(c) for c in chains], *buffers],
                          with_tokens=statuses is not None)
        if statuses is not None:
          status = results.consume_token()
          with lock:
            statuses.append((status, keep))
        outs = results.consume_with_handlers(all_handlers)
        for chain, token in zip(chains, outs):
          chain.token = token
      if statuses is not None and len(statuses) > limit:
        tokens.trim(statuses)
      return outs[n:]
    return run_ordered

  def _make_execute_streamed(self) -> Callable[[list], Any] | None:
    """For executables with effects on the shared execution stream (`effects_ordering=
    "stream"`, no host calls): `execute_streamed(buffers)`, which starts an
    execution as `execute_sharded` does, on that stream (see `runtime/tokens.py`), and
    returns its results for `consume_with_handlers` (from inside a host call, the results
    of `_run_nested`, already finished); None for other executables.  `make_call`'s closure
    and `jit`'s fast path (`dispatch_record`) both run it.  On a single device with the
    native tap queues, the common case runs in C (`taps.streamed_dispatch`), which hands
    every other to this Python version."""
    if not self._on_stream:
      return None
    execute, device, chains, settle = self._execute, self.device, self._chains, \
        runtime_tokens.settle
    mark, busy = runtime_tokens.stream_mark(device), runtime_tokens.host_calls_running(device)
    ordering = runtime_tokens.ordering_lock(device)
    acquire, release = ordering.acquire, ordering.release
    before_execution, ordinal = taps.before_execution, taps.device_ordinal(device)
    mark_progress = taps.mark_progress
    depth, run_nested = host_calls.host_call_depth, self._run_nested
    several_devices = backend.device_count() > 1  # else no chain holds a GroupToken

    def execute_streamed(buffers):
      marking = before_execution(ordinal)
      if depth():
        return _Finished(run_nested(buffers))
      if several_devices:
        for chain in chains:
          if type(chain.token) is GroupToken:  # the last execution ran over several devices
            settle(chain)
      after_host_calls = busy[0]  # a program that calls the host runs: go after it
      if after_host_calls:
        acquire()
      previous = _get_stream()
      _set_stream(STREAM_ID)
      try:
        results = execute(buffers)
      finally:
        _set_stream(previous)
        if after_host_calls:
          release()
      mark[0] = True  # after the dispatch: a barrier's fence comes after it
      return mark_progress(ordinal, results) if marking else results

    if several_devices:
      return execute_streamed
    return taps.streamed_dispatch(ordinal, execute, _get_stream, _set_stream, STREAM_ID, depth,
                                  busy, mark, execute_streamed) or execute_streamed

  def _make_run_synchronous(self) -> Callable[[list], list]:
    """For executables that make host calls: runs, then waits for the computation to
    finish; if it failed, chains it extended go back to their initial tokens."""
    execute, handlers = self._execute, self._handlers
    lock = runtime_tokens.ordering_lock(self.device)
    n = self.num_tokens
    chains, all_handlers = self._chains[:n], self._token_and_result_handlers
    depth, run_nested = host_calls.host_call_depth, self._run_nested
    streamed, device = not self.runtime_tokens, self.device
    settle, group_chains = runtime_tokens.settle, self._chains
    busy, wait_streamed = runtime_tokens.host_calls_running(device), runtime_tokens.wait_streamed

    def start(args, out_handlers):
      results = execute(args, with_tokens=True)
      return results.consume_token(), results.consume_with_handlers(out_handlers)

    def run_synchronous(buffers):
      if depth():
        return run_nested(buffers)
      if streamed:
        for chain in group_chains:
          if type(chain.token) is GroupToken:
            settle(chain)
        # Not on the shared stream: queued there behind another thread's program, it would
        # run on an XLA worker thread when that one ends, and its host calls with it.  It
        # waits for the streamed programs dispatched before it instead, and runs on this
        # thread's own stream, to completion, holding the device's ordering lock, which
        # streamed dispatches take while it is marked busy (see `make_call`).
        with lock:
          busy[0] += 1
          try:
            wait_streamed((device,))
            status, outs = start(buffers, handlers)
            try:
              status.block_until_ready()
            except _JaxRuntimeError:
              pass  # raised below
          finally:
            busy[0] -= 1
      elif chains:
        with lock:
          status, outs = start([*[c.token for c in chains], *buffers], all_handlers)
          for chain, token in zip(chains, outs):
            chain.token = token
      else:
        status, outs = start(buffers, handlers)
      try:
        status.block_until_ready()
      except _JaxRuntimeError:
        with lock:
          for chain, token in zip(chains, outs):
            if chain.token is token:
              chain.token = chain.initial
        raise
      return outs[n:]
    return run_synchronous

  def make_call(self, consts: Sequence[Array] = (), out_tree=None,
                fallback: Callable | None = None, scalars: bool = False,
                _weak_self: bool = False, committed: bool = False) -> Callable:
    """The fastest way to run this executable: `call(*args)` runs it on `(*consts, *args)`
    and returns the list of output Arrays, or `out_tree.unflatten` of it.  Everything fixed
    at compile time is bound into the closure (this is the dispatch hot path).  Arguments
    may be Arrays on this executable's device and Python scalars of the parameters' avals
    (expected from the start when `scalars`, the way `jit` keys calls with scalars); others
    go to `fallback(args)` when given, else to `_call_general`, which converts and checks
    them.  The output Arrays are `committed` to the device, or not.  The closure keeps this
    executable alive (except `self.call`'s: `_weak_self`)."""
    if _weak_self:
      this = weakref.ref(self)
      general = lambda args: this()._call_general(args)  # noqa: E731
      diagnose = lambda args, err: this()._diagnose(args, err)  # noqa: E731
    else:
      general, diagnose = self._call_general, self._diagnose
    run_effectful = self._run_effectful
    execute, handlers = self._execute, self._handlers
    out_avals, out_devices, device = self.out_avals, self._out_devices, self.device
    out_shardings, out_committed = (None,) * len(out_avals), (committed,) * len(out_avals)
    check_devices = backend.device_count() > 1
    consts = tuple(consts)
    const_buffers = [c._buffer for c in consts]
    before_execution, ordinal = taps.before_execution, taps.device_ordinal(device)
    unflatten = out_tree.unflatten if out_tree is not None else None
    single = unflatten is not None and out_tree.num_leaves == 1 and out_tree.num_nodes == 1
    out_aval = out_avals[0] if single else None

    one_arg = not consts and len(self.in_avals) == 1  # the most common call: f(x)
    buffers_of = _buffers_function(len(self.in_avals) - len(consts), bool(consts))
    # One ordered effect and no other (an executable with taps): the token passing of
    # `run_effectful` is inlined below, which saves a call on this path.
    chain = (self._chains[0] if len(self._chains) == 1 and not self.unordered_effects
             and not self.calls_host and self.runtime_tokens else None)
    # Effects on the shared execution stream (`effects_ordering="stream"`): started by
    # `execute_streamed`.
    execute_streamed = self._execute_streamed
    depth, run_nested = host_calls.host_call_depth, self._run_nested
    token_handlers = self._token_and_result_handlers
    settle = runtime_tokens.settle
    ordering = runtime_tokens.ordering_lock(device)
    acquire, release = ordering.acquire, ordering.release
    arg_avals = self.in_avals[len(consts):]
    reuse_scalars = not any(self.donated_args)
    collect_garbage = backend.collect_jaxlib_garbage

    def with_scalars(args) -> list | None:
      """The argument buffers when every argument is an Array on this device or a Python
      scalar of the parameter's aval (`jit`'s fast path keys those by aval too); else None."""
      if len(args) != len(arg_avals):
        return None
      buffers = list(const_buffers)
      for x, aval in zip(args, arg_avals):
        if type(x) is Array and x._device is device:
          buffers.append(x._buffer)
        elif type(x) in PYTHON_SCALARS and python_scalar_aval(x) is aval:
          buffers.append(scalar_buffer(x, aval, device, reuse=reuse_scalars))
        else:
          return None
      return buffers

    def call(*args):
      buffers = None
      if not scalars:
        try:
          if one_arg and len(args) == 1:
            buffers = [args[0]._buffer]
          else:
            buffers = buffers_of(args, const_buffers)
          if check_devices and any(a._device is not device for a in args):
            buffers = None
        except (AttributeError, ValueError):  # not all Arrays, or not as many as compiled
          pass
      if buffers is None:
        buffers = with_scalars(args)
        if buffers is None:
          if fallback is not None:
            return fallback(args)
          outs = general((*consts, *args))
          return unflatten(outs) if unflatten is not None else outs
      collect_garbage()  # see `backend`: what jaxlib's threads dropped since the last call
      try:
        if run_effectful is None:
          outs = execute(buffers).consume_with_handlers(handlers)
        elif chain is not None:
          before_execution(ordinal)
          if depth():
            outs = run_nested(buffers)
          else:
            acquire()  # a `with` block costs twice as much here
            try:
              token = chain.token
              if type(token) is GroupToken:  # the last execution ran over several devices
                token = settle(chain)
              buffers.insert(0, token)
              outs = execute(buffers).consume_with_handlers(token_handlers)
              chain.token = outs[0]
            finally:
              release()
            del outs[0]
        elif execute_streamed is not None:
          outs = execute_streamed(buffers).consume_with_handlers(handlers)
        else:
          before_execution(ordinal)
          outs = run_effectful(buffers)
      except _JaxRuntimeError as err:
        interrupt = _take_interrupt()
        if interrupt is not None:
          raise interrupt from None
        diagnose((*consts, *args), err)
        _raise_filed(err)
        raise
      if single:
        return Array(outs[0], out_aval, device, None, committed)
      if committed:
        outs = list(map(Array, outs, out_avals, out_devices, out_shardings, out_committed))
      else:
        outs = list(map(Array, outs, out_avals, out_devices))
      return unflatten(outs) if unflatten is not None else outs

    if self.delivers_on_return:
      return _delivering(call)
    return call

  def dispatch_record(self, consts: Sequence[Array] = (), out_tree=None,
                      committed: bool = False) -> tuple | None:
    """What a caller needs to run this executable inline, in its own frame, on argument
    buffers it built itself (`jit`'s fast path does, saving the call of `make_call`'s
    closure): `(execute, handlers, out_aval, device, failed, const_buffers, finish,
    mixed)`, where `mixed(args)` builds the buffers of arguments among which there are
    Python scalars (None if anything else is there).  The caller runs
    `execute([*const_buffers, *buffers]).consume_with_handlers(handlers)` (after
    `backend.collect_jaxlib_garbage()`); with one output leaf, `out_aval` is its aval
    and the result is `Array(outs[0], out_aval, device)` (uncommitted: an executable whose
    results are `committed` gives no `out_aval`), else `finish(outs)`; on jaxlib's
    error it calls `failed(args, err)`, which raises.  For effects on the shared execution
    stream (taps), `execute` is `execute_sharded` wrapped by `execute_streamed`.
    None when the executable has other effects or host calls (those take `make_call`'s
    closure), or when there are several devices (the closure checks that every argument is
    on this one)."""
    execute = self._execute_streamed
    if self.delivers_on_return:
      return None  # (its calls wait for their deliveries: `make_call`)
    if execute is None:
      if self._run_effectful is not None:
        return None
      execute = self._exe.execute_sharded
    if backend.device_count() > 1:
      return None
    consts = tuple(consts)
    const_buffers = [c._buffer for c in consts]
    out_avals, out_devices, device = self.out_avals, self._out_devices, self.device
    unflatten = out_tree.unflatten if out_tree is not None else None
    single = unflatten is not None and out_tree.num_leaves == 1 and out_tree.num_nodes == 1
    diagnose = self._diagnose
    reuse_scalars = not any(self.donated_args)

    def mixed(args) -> list | None:
      """The buffers of `args`, Arrays and Python scalars (of the parameters' avals, as the
      caller checked), or None when there is anything else among them."""
      buffers = []
      for x in args:
        if type(x) is Array:
          buffers.append(x._buffer)
        elif type(x) in PYTHON_SCALARS:
          buffers.append(scalar_buffer(x, python_scalar_aval(x), device, reuse=reuse_scalars))
        else:
          return None
      return buffers

    out_shardings, out_committed = (None,) * len(out_avals), (committed,) * len(out_avals)

    def finish(outs):
      if committed:
        outs = list(map(Array, outs, out_avals, out_devices, out_shardings, out_committed))
      else:
        outs = list(map(Array, outs, out_avals, out_devices))
      return unflatten(outs) if unflatten is not None else outs

    def failed(args, err):
      interrupt = _take_interrupt()
      if interrupt is not None:
        raise interrupt from None
      diagnose((*consts, *args), err)
      _raise_filed(err)
      raise err

    return (execute, self._handlers, out_avals[0] if single and not committed else None,
            device, failed, const_buffers or None, finish, mixed)

  def _call_general(self, args) -> list[Array]:
    args = self._prepare(args)
    buffers = [a._buffer for a in args]
    backend.collect_jaxlib_garbage()
    try:
      if self._run_effectful is None:
        outs = self._exe.execute_sharded(buffers).consume_with_handlers(self._handlers)
      else:
        taps.before_execution(taps.device_ordinal(self.device))
        outs = self._run_effectful(buffers)
    except _JaxRuntimeError as err:
      interrupt = _take_interrupt()
      if interrupt is not None:
        raise interrupt from None
      self._diagnose(args, err)
      _raise_filed(err)
      raise
    return list(map(Array, outs, self.out_avals, self._out_devices))

  def _prepare(self, args) -> list[Array]:
    """Puts every argument on this executable's device and checks it against `in_avals`."""
    if len(args) != len(self.in_avals):
      raise TypeError(f"{self._describe()} takes {len(self.in_avals)} array argument(s), "
                      f"got {len(args)}")
    device = self.device
    prepared = []
    for i, (arg, aval) in enumerate(zip(args, self.in_avals)):
      if is_concrete_array(arg):
        if arg._buffer.is_deleted():
          raise RuntimeError(f"{_DELETED_MESSAGE} (argument {i} of {self._describe()})")
        if arg._device != device:
          arg = device_put(arg, device)
      else:
        arg = device_put(arg, device)
      if arg.aval.shape != aval.shape or arg.aval.dtype != aval.dtype:
        raise TypeError(f"argument {i} of {self._describe()} should be "
                        f"{aval.str_short()}, got {arg.aval.str_short()}")
      prepared.append(arg)
    return prepared

  def _placement(self) -> str:
    return str(self.device)


class _Finished:
  """What `execute_streamed` returns for a run from inside a host call: its outputs,
  already handled (`_run_nested`), for the caller's `consume_with_handlers`."""
  __slots__ = ("outs",)

  def __init__(self, outs):
    self.outs = outs

  def consume_with_handlers(self, handlers):
    return self.outs


_buffers_functions: dict[tuple[int, bool], Callable] = {}


def _buffers_function(n: int, with_consts: bool) -> Callable[[tuple, list], list]:
  """`buffers(args, const_buffers)`: the argument list of an execution on `n` Arrays, in
  unrolled code generated once per `n` (an attribute read per argument costs a fraction of
  `map`'s per-item cost); ValueError when `args` are not `n`, AttributeError when one is
  not an Array."""
  fn = _buffers_functions.get((n, with_consts))
  if fn is None:
    names = [f"a{i}" for i in range(n)]
    unpack = f"  {''.join(a + ', ' for a in names)}= args\n" if n else "  () = args\n"
    items = ("*consts, " if with_consts else "") + "".join(f"{a}._buffer, " for a in names)
    namespace: dict = {}
    exec(f"def buffers(args, consts):\n{unpack}  return [{items}]\n", namespace)  # noqa: S102
    fn = _buffers_functions[(n, with_consts)] = namespace["buffers"]
  return fn


def _run_on_the_dispatching_thread(*args):
  raise AssertionError("a placeholder host callback was called")


# XLA's options that jaxlib takes on the executable's build options, not as overrides.
_BUILD_OPTIONS = ("exec_time_optimization_effort", "memory_fitting_effort",
                  "optimization_level", "memory_fitting_level")


def compile_options(compiler_options: dict | None = None) -> xla_client.CompileOptions:
  """XLA's compile options with the user's `compiler_options` (`{"xla_...": value}`,
  checked by XLA when compiling: an unknown name raises `JaxRuntimeError`)."""
  options = xla_client.CompileOptions()
  overrides = dict(compiler_options or {})
  for name in _BUILD_OPTIONS:
    if name in overrides:
      setattr(options.executable_build_options, name, overrides.pop(name))
  if overrides:
    options.env_option_overrides = list(overrides.items())
  return options


def log_compile_start(name: str, where, in_avals, out_avals, ordered_effects) -> int:
  """Logs that `name` is being compiled for `where` (a device, or "N devices"), as JAX
  words it, and returns the level at which its end is to be logged (`compile_log_level`)."""
  level = compile_log_level()
  if level:
    logger.log(level, "Compiling jit(%s) for %s with global shapes and types (%s) -> (%s)%s",
               name, where, ", ".join(a.str_short() for a in in_avals),
               ", ".join(a.str_short() for a in out_avals),
               f" and ordered effects {list(ordered_effects)}" if ordered_effects else "")
  return level


def compile(module, *, device, name: str, in_avals: Sequence[ShapedArray],
            out_avals: Sequence[ShapedArray], donated_args: Sequence[bool] = (),
            host_callbacks: Sequence[Callable] = (), num_tokens: int = 0,
            ordered_effects: Sequence[Any] = (), unordered_effects: Sequence[Any] = (),
            host_calls: Sequence[Any] = (), keepalive: Sequence[Any] = (),
            compiler_options: dict | None = None,
            runtime_tokens: bool = True) -> Executable:
  """Compiles `module` (an `ir.Module` whose public `main` follows the token contract above).

  `donated_args` is informational: the module's `tf.aliasing_output` argument attributes are
  what make jaxlib reuse (and delete) donated inputs.  `host_callbacks` are the Python
  callables that `xla_ffi_python_cpu_callback` custom calls refer to by index;
  `host_calls` the value-returning host calls the module makes (the executable then waits
  for its results, see the module docstring); `keepalive` is kept for the executable's
  lifetime (the lowering's keepalives); `compiler_options` are XLA's (`compile_options`).
  """
  if runtime_tokens and num_tokens != len(ordered_effects):
    raise ValueError(f"compiling {name!r}: num_tokens={num_tokens} but {len(ordered_effects)} "
                     f"ordered effect(s) {list(ordered_effects)}; the module needs one token "
                     "parameter and result per ordered effect")
  if donated_args and len(donated_args) != len(in_avals):
    raise ValueError(f"compiling {name!r}: donated_args has {len(donated_args)} entries for "
                     f"{len(in_avals)} array argument(s)")
  backend.check_can_compile()
  client = backend.get_client()
  device = backend.get_device(device)
  taps.sweep_retired()  # forget the tap consumers of executables gone meanwhile
  if host_callbacks:
    host_callbacks = taps.bind_host_callbacks(host_callbacks, (device,))
  if host_calls:
    # jaxlib runs an executable compiled with host callbacks synchronously, on the thread
    # that dispatches it.  Host calls then never hold an XLA worker thread while their
    # function waits for a computation it dispatched, which could need that very worker
    # (with every worker so held, nothing would run).  This callable is never called.
    host_callbacks = [*host_callbacks, _run_on_the_dispatching_thread]
  options = compile_options(compiler_options)
  options.device_assignment = xla_client.DeviceAssignment.create(
      np.array([[device.id]], dtype=np.int32))
  level = log_compile_start(name, device, in_avals, out_avals, ordered_effects)
  start = time.perf_counter()
  try:
    loaded = compilation_cache.compile_and_load(
        client, module, xla_client.DeviceList((device,)), options,
        host_callbacks=host_callbacks, name=name, device_ids=(device.id,),
        cacheable=not (host_calls or ordered_effects or unordered_effects))
  except _JaxRuntimeError as err:
    err.add_note(f"while compiling {name!r} for {device}")
    raise
  seconds = time.perf_counter() - start
  monitoring.record_event_duration_secs("/jax/core/compile/backend_compile_duration", seconds,
                                        fun_name=f"jit({name})")
  if level:
    logger.log(level, "Finished XLA compilation of jit(%s) in %.9f sec", name, seconds)
  return Executable(loaded, name=name, device=device, in_avals=in_avals, out_avals=out_avals,
                    donated_args=donated_args, host_callbacks=host_callbacks,
                    ordered_effects=ordered_effects, unordered_effects=unordered_effects,
                    compile_seconds=seconds, host_calls=host_calls, keepalive=keepalive,
                    pass_tokens=runtime_tokens)
