"""Compiling one SPMD program for several devices, and running it.

`compile_sharded` hands a module lowered for a device assignment (`lowering/spmd.py`) to
the client with `num_partitions` set and XLA's SPMD partitioner on, and returns a
`ShardedExecutable`.  It is the multi-device sibling of `executable.Executable`, kept apart
so that the single-device dispatch path stays as it is.  Its arguments and results are
sharded Arrays (`runtime/sharded.py`): one multi-device jaxlib array each, laid out by the
sharding the program was compiled for (`in_shardings`; `out_shardings`, the ones the
caller fixed or, for the others, the ones the partitioner chose, read back from the
executable).  The call closure passes an argument's buffer as it is when its sharding is
the one compiled for (identity first, then equality); anything else is moved there first.

Ordered effects run with one token per (effect, device), as single-device programs do:
the program takes one token array holding a token per device and returns one (see
`GroupToken` in `runtime/tokens.py`), so a tap inside `pmap` on 4 devices is ordered on
each device, and delivered on each to that device's receiver.  The dispatch holds the
ordering locks of its local devices (taken in device-id order), as a single-device one
holds its device's; an unordered run's status is kept with the executable's `keepalive`
(the tap consumers its lowering registered), as a single-device one's is.

In-flight limit: jaxlib's CPU client runs each device's part of a program with
collectives on a worker thread that waits at every collective for the other devices'
parts; with more than a few dozen such executions queued on a machine with few cores, the
workers can all be waiting in different executions and none progresses (JAX's pmap of a
psum, dispatched in a loop of a hundred calls, dies this way after 40 s on a 2-core
machine).  Executables whose compiled program communicates therefore keep at most
`MAX_IN_FLIGHT` executions dispatched and not finished, across all of them: the next call
waits for the oldest first.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from jaxlib import _jax, xla_client

from minijax import monitoring
from minijax.config import config
from minijax.core import sharding as sharding_lib
from minijax.core.avals import ShapedArray
from minijax.core.dtypes import PYTHON_SCALARS
from minijax.core.effects import delivered_by_return
from minijax.runtime import backend, compilation_cache, sharded, taps, xla_notices
from minijax.runtime.barrier import finish_debug_calls
from minijax.runtime.array import Array, _DELETED_MESSAGE, device_put, is_concrete_array
from minijax.runtime.executable import CompiledProgram, compile_options, log_compile_start
from minijax.runtime.tokens import (TOKEN_AVAL, GroupToken, runtime_tokens, wait_for_arrays,
                                    wait_for_statuses)

logger = logging.getLogger("minijax")

_JaxRuntimeError = _jax.JaxRuntimeError
MAX_IN_FLIGHT = 4
_COLLECTIVE_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute",
                   "all-to-all")

_in_flight: collections.deque = collections.deque()
_in_flight_lock = threading.Lock()


def _limit_in_flight(mark) -> None:
  """`mark`: an execution's first output, whose readiness is polled (as cheap as a call when
  it is done), or its status when it has none, which a helper thread must block on."""
  with _in_flight_lock:
    _in_flight.append(mark)
    oldest = _in_flight.popleft() if len(_in_flight) > MAX_IN_FLIGHT else None
  if oldest is not None:
    if hasattr(oldest, "is_ready"):
      wait_for_arrays([oldest])
    else:
      wait_for_statuses([oldest])


class ShardedExecutable(CompiledProgram):
  """A program partitioned over `devices`; call it with one argument per array parameter."""

  def __init__(self, loaded, *, name: str, devices, in_avals, out_avals, in_shardings,
               out_shardings, donated_args, ordered_effects, unordered_effects,
               compile_seconds: float, communicates: bool, keepalive=()):
    self._exe = loaded
    # Programs with effects run through `taps.watched`, which Ctrl-C can end
    self._execute = (taps.watched(loaded.execute_sharded) if ordered_effects or unordered_effects
                     else loaded.execute_sharded)
    self.name = name
    self.devices = tuple(devices)
    self.in_avals = tuple(in_avals)
    self.out_avals = tuple(out_avals)
    self.in_shardings = tuple(in_shardings)
    self.out_shardings = tuple(out_shardings)
    self.donated_args = tuple(donated_args)
    self.ordered_effects = tuple(ordered_effects)
    self.unordered_effects = tuple(unordered_effects)
    self.delivers_on_return = delivered_by_return(self.ordered_effects + self.unordered_effects)
    self.compile_seconds = compile_seconds
    self.communicates = communicates
    self.keepalive = tuple(keepalive)
    self._handlers = [
        xla_client.array_result_handler(aval, sharded.jaxlib_sharding(s, aval.ndim), True,
                                         _skip_checks=True)
        for aval, s in zip(self.out_avals, self.out_shardings)]
    local = [d for d in self.devices if d.process_index == d.client.process_index()]
    self.local_devices = tuple(local)
    self._token_sharding = sharding_lib.HloShardingWrapper(self.devices, None)
    token_handler = xla_client.array_result_handler(
        TOKEN_AVAL, sharded.jaxlib_sharding(self._token_sharding, 1), True, _skip_checks=True)
    self._all_handlers = [token_handler] * len(self.ordered_effects) + self._handlers
    self._chains = [[runtime_tokens.chain(e, d) for d in local] for e in self.ordered_effects]
    self._ordering = [runtime_tokens.ordering_lock(d) for d in sorted(local, key=lambda d: d.id)]
    self.call = self.make_call()

  def __call__(self, *args) -> list[Array]:
    return self.call(*args)

  # -- running

  def _group_token(self, chains) -> Any:
    first = chains[0].token
    if (type(first) is GroupToken and first.devices == self.devices
        and all(c.token is first for c in chains)):
      return first.array
    # One token per device, of one type: a chain's initial array once what it orders has
    # finished (the tokens executions return are not of the initial array's type).
    tokens = []
    for chain in chains:
      token = runtime_tokens.settle(chain)
      if token is not chain.initial:
        token.block_until_ready()
        chain.token = token = chain.initial
      tokens.append(token)
    return sharded.token_group(tokens, self.devices, TOKEN_AVAL)

  def _run(self, buffers: list) -> list:
    """Executes on argument buffers; returns output buffers (tokens passed and kept)."""
    execute = self._execute
    backend.collect_jaxlib_garbage()  # see `backend`
    status_needed = self.communicates or bool(self.unordered_effects)
    if not self.ordered_effects:
      if self.unordered_effects:
        taps.before_execution()
      results = execute(buffers, with_tokens=status_needed)
      status = results.consume_token() if status_needed else None
      outs = results.consume_with_handlers(self._handlers)
    else:
      taps.before_execution()
      runtime_tokens.wait_streamed(self.devices)  # single-device programs run before
      for lock in self._ordering:
        lock.acquire()
      try:
        token_args = [self._group_token(chains) for chains in self._chains]
        results = execute([*token_args, *buffers], with_tokens=status_needed)
        status = results.consume_token() if status_needed else None
        outs = results.consume_with_handlers(self._all_handlers)
        n = len(self._chains)
        for chains, token in zip(self._chains, outs[:n]):
          group = GroupToken(token, self.devices)
          for chain in chains:
            chain.token = group
        outs = outs[n:]
      finally:
        for lock in reversed(self._ordering):
          lock.release()
    if status is not None:
      if self.unordered_effects and self.local_devices:
        statuses = runtime_tokens.statuses(self.local_devices[0])
        with runtime_tokens._lock:
          statuses.append((status, self.keepalive))
      if self.communicates:
        _limit_in_flight(outs[0] if outs else status)
    if self.delivers_on_return:
      finish_debug_calls()
    return outs

  def make_call(self, consts: Sequence[Array] = (), out_tree=None,
                fallback: Callable | None = None) -> Callable:
    """`call(*args)` runs the program on `(*consts, *args)` and returns the output Arrays
    (or `out_tree.unflatten` of them).  Arguments laid out as compiled for go straight to
    jaxlib; others go to `fallback(args)` when given, else are moved first."""
    consts = tuple(consts)
    const_buffers = [c._buffer for c in self._prepare_all(consts, self.in_shardings)]
    arg_shardings = self.in_shardings[len(consts):]
    run, general, diagnose = self._run, self._call_general, self._diagnose
    out_avals, out_shardings = self.out_avals, self.out_shardings
    unflatten = out_tree.unflatten if out_tree is not None else None
    n_args = len(arg_shardings)

    def call(*args):
      if len(args) == n_args:
        buffers = list(const_buffers)
        for x, s in zip(args, arg_shardings):
          if type(x) is Array and (x._sharding is s or (x._sharding is not None
                                                        and x._sharding == s)):
            buffers.append(x._buffer)
          else:
            break
        else:
          try:
            outs = run(buffers)
          except _JaxRuntimeError as err:
            diagnose(args, err)
            raise
          outs = [Array(b, a, None, s, True) for b, a, s in zip(outs, out_avals, out_shardings)]
          return unflatten(outs) if unflatten is not None else outs
      if fallback is not None:
        return fallback(args)
      outs = general((*consts, *args))
      return unflatten(outs) if unflatten is not None else outs
    return call

  def _call_general(self, args) -> list[Array]:
    args = self._prepare(args)
    try:
      outs = self._run([a._buffer for a in args])
    except _JaxRuntimeError as err:
      self._diagnose(args, err)
      raise
    return [Array(b, a, None, s, True) for b, a, s in zip(outs, self.out_avals, self.out_shardings)]

  def _prepare_all(self, args, shardings) -> list[Array]:
    return [self._place(i, x, aval, s)
            for i, (x, aval, s) in enumerate(zip(args, self.in_avals, shardings))]

  def _prepare(self, args) -> list[Array]:
    if len(args) != len(self.in_avals):
      raise TypeError(f"{self._describe()} takes {len(self.in_avals)} array argument(s), "
                      f"got {len(args)}")
    return self._prepare_all(args, self.in_shardings)

  def _place(self, i: int, x, aval: ShapedArray, sharding) -> Array:
    """Argument `i` as an Array laid out by `sharding` (moved there if needed)."""
    if is_concrete_array(x):
      if x._buffer.is_deleted():
        raise RuntimeError(f"{_DELETED_MESSAGE} (argument {i} of {self._describe()})")
    elif type(x) in PYTHON_SCALARS or isinstance(x, (np.ndarray, np.generic)):
      x = device_put(x, sharding._device_assignment[0])
    else:
      raise TypeError(f"argument {i} of {self._describe()} is a {type(x).__name__}, not an "
                      "array")
    if x.aval.shape != aval.shape or x.aval.dtype != aval.dtype:
      raise TypeError(f"argument {i} of {self._describe()} should be {aval.str_short()}, got "
                      f"{x.aval.str_short()}")
    if x._sharding is sharding or x._sharding == sharding:
      return x
    return sharded.reshard(x, sharding)

  def _placement(self) -> str:
    return f"{len(self.devices)} devices"


def _output_sharding(op_sharding, ndim: int, devices: tuple, mesh) -> sharding_lib.Sharding:
  hlo = (xla_client.HloSharding.from_proto(op_sharding) if op_sharding is not None
         else xla_client.HloSharding.replicate())
  return sharding_of_hlo(hlo, ndim, devices, mesh)


def sharding_of_hlo(hlo, ndim: int, devices: tuple, mesh) -> sharding_lib.Sharding:
  """The `core.sharding` form of a sharding XLA chose (an `HloSharding` of a rank-`ndim`
  value of a module over `devices`): a `NamedSharding` of `mesh` when one lays the value
  out the same way, else a wrapper of the tile assignment."""
  if not (hlo.is_replicated() or hlo.is_manual()) and hlo.is_maximal():
    raise NotImplementedError("an output placed on one device of a multi-device program")
  if hlo.is_replicated() or hlo.is_manual():
    return (sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec()) if mesh is not None
            else sharding_lib.HloShardingWrapper(devices, None))
  dims = list(hlo.tile_assignment_dimensions())
  ids = np.array(hlo.tile_assignment_devices(), np.int64)
  if not hlo.replicate_on_last_tile_dim() and not hlo.subgroup_types():
    dims.append(1)
  tile = sharding_lib.TileAssignment(tuple(dims[:ndim]), ids.reshape(dims[:ndim] + [-1]))
  wrapper = sharding_lib.HloShardingWrapper(devices, tile)
  if mesh is not None:
    for candidate in _named_candidates(mesh, ndim):
      if candidate.is_equivalent_to(wrapper, ndim):
        return candidate
  return wrapper


def _named_candidates(mesh, ndim: int):
  """Every NamedSharding of `mesh` for rank `ndim` that splits each dimension by at most one
  run of mesh axes in mesh order (the layouts XLA's propagation produces from them)."""
  import itertools
  names = mesh.axis_names
  for placement in itertools.product(range(ndim + 1), repeat=len(names)):
    entries: list = [[] for _ in range(ndim)]
    for name, dim in zip(names, placement):
      if dim < ndim:
        entries[dim].append(name)
    spec = [None if not e else (e[0] if len(e) == 1 else tuple(e)) for e in entries]
    while spec and spec[-1] is None:
      spec.pop()
    yield sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec(*spec))


def compile_sharded(module, *, devices: Sequence, name: str, in_avals, out_avals,
                    in_shardings, out_shardings, donated_args: Sequence[bool] = (),
                    host_callbacks: Sequence[Callable] = (), ordered_effects: Sequence = (),
                    unordered_effects: Sequence = (), mesh=None,
                    keepalive: Sequence = (), compiler_options: dict | None = None
                    ) -> ShardedExecutable:
  """Compiles `module` (lowered for `devices`, in that order) as one SPMD program.

  `in_shardings` gives one sharding per array argument; `out_shardings` one per result or
  None where the partitioner chooses (that choice is read back, as a `NamedSharding` of
  `mesh` when it is one)."""
  devices = tuple(devices)
  host_callbacks = taps.bind_host_callbacks(host_callbacks, devices)
  unsupported = [e for e in ordered_effects if not e.ordered_across_devices]
  if len(devices) > 1 and unsupported:
    raise ValueError("The following ordered effects are not supported for more than 1 "
                     f"device: {unsupported}")
  backend.check_can_compile()
  client = backend.get_client()
  taps.sweep_retired()
  options = compile_options(compiler_options)
  options.num_replicas = 1
  options.num_partitions = len(devices)
  build = options.executable_build_options
  build.use_spmd_partitioning = True
  n_tokens = len(ordered_effects)
  if any(s is None for s in out_shardings):
    build.allow_spmd_sharding_propagation_to_output = [True]
  options.device_assignment = xla_client.DeviceAssignment.create(
      np.array([[d.id for d in devices]], dtype=np.int32))
  level = log_compile_start(name, f"{len(devices)} devices", in_avals, out_avals,
                            ordered_effects)
  start = time.perf_counter()
  try:
    with xla_notices.without_notices():
      loaded = compilation_cache.compile_and_load(
          client, module, sharded.device_list(devices), options,
          host_callbacks=host_callbacks, name=name, device_ids=[d.id for d in devices],
          cacheable=not (ordered_effects or unordered_effects))
  except _JaxRuntimeError as err:
    err.add_note(f"while compiling {name!r} for {len(devices)} devices")
    raise
  seconds = time.perf_counter() - start
  monitoring.record_event_duration_secs("/jax/core/compile/backend_compile_duration", seconds,
                                        fun_name=f"jit({name})")
  if any(s is None for s in out_shardings):
    chosen = loaded.get_output_shardings()  # None for one device
    chosen = chosen[n_tokens:] if chosen is not None else [None] * len(out_avals)
    out_shardings = [s if s is not None else _output_sharding(op, a.ndim, devices, mesh)
                     for s, op, a in zip(out_shardings, chosen, out_avals)]
  text = loaded.get_hlo_text()
  communicates = any(op in text for op in _COLLECTIVE_OPS)
  if level:
    logger.log(level, "Finished XLA compilation of jit(%s) in %.9f sec", name, seconds)
  return ShardedExecutable(loaded, name=name, devices=devices, in_avals=in_avals,
                           out_avals=out_avals, in_shardings=in_shardings,
                           out_shardings=out_shardings, donated_args=donated_args,
                           ordered_effects=ordered_effects,
                           unordered_effects=unordered_effects, compile_seconds=seconds,
                           communicates=communicates, keepalive=keepalive)
