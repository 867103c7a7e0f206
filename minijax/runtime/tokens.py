"""Runtime tokens: what orders the executions that carry effects, across calls.

With `effects_ordering="runtime_token"` (the seed's design; the default is below), the
lowered `main` of a computation takes one token per ordered effect before its array
arguments, in `ordered_effects` order, and returns the same number of tokens before its
array results (see `lowering/tokens.py` for the same contract at lowering time).  For
every (ordered effect, device) a `TokenChain` keeps the token returned by the last
execution that carried the effect; the first execution, and the first after a barrier saw
the chain finish, gets a zero-byte `bool[0]` array.  Each execution therefore waits for the
previous one with the same effect on that device, in call order, without the host ever
blocking.  Executions with unordered effects record their execution status instead (with
what the execution keeps alive until it is done), so that a barrier can wait for every
started effectful computation.

Two kinds of lock: `ordering_lock(device)`, which a dispatching thread holds from reading
its chains' tokens to storing the ones its execution returns (jaxlib may run a cheap
program inline, so this can last as long as the program, which may wait for room in a
tap queue); and `_lock`, held only for a few list and dict operations.  Waiting for
computations never takes an ordering lock, so a barrier never waits behind a blocked
dispatch: it reads the chains' tokens (`snapshot`), waits for them as it sees fit, and
then lets go of what finished (`release`).

With `config.effects_ordering == "stream"` (the default) a single-device program makes its
tokens itself and takes none: executions with effects (ordered or not; unordered ones then
keep no status) all run on one XLA execution stream
(`STREAM_ID`), whose executions XLA's CPU client runs in dispatch order on each device,
whichever Python thread dispatched them.  Each such dispatch marks its device (`stream_mark`);
what a barrier waits for on a marked device is a fence, a trivial program dispatched on the
same stream (`fence`, compiled by the staging layer), which finishes after everything
dispatched before it there.  `snapshot` and `started_tokens` include the fences (as
chain-less entries), so barriers, the exit handler and consumer retirement wait for them as
they wait for tokens; an execution over several devices first waits for the fences of its
devices (`wait_streamed`).  A program that calls the host (`pure_callback`, `io_callback`)
is not dispatched on the shared stream: queued there behind another thread's program, XLA
would run it, and its host functions, on a worker thread.  It takes the device's ordering
lock, waits for the streamed programs before it (`wait_streamed`) and runs on its own
thread's stream to completion, counted in `host_calls_running`; while that count is not
zero, streamed dispatches on the device take the ordering lock too, so they come after it.
(A dispatch that read the count just before it rose runs beside that program: a window of
a few hundred nanoseconds between two threads' calls made at the same moment.)

Every wait here for a computation is one that Ctrl-C can end (a computation may wait for
room in a tap queue behind a tap function that never returns, and jaxlib's own waits run no
signal handler): arrays are polled (`wait_for_arrays`, with `wait_until`'s short sleeps),
and execution statuses, which can only be blocked on, are blocked on by a helper thread
while the caller polls it (`wait_for_statuses`).

An execution over several devices (`runtime/sharded_executable.py`) passes one token array
holding a token per device and gets one back; it leaves that array, as a `GroupToken`, in
the chain of every one of its devices.  The next execution over the same devices passes it
on as it is; any other reads the chain through `settle`, which waits for the group's
execution to finish (so that the order holds) and restarts the chain from its initial
token.  Splitting the array into per-device tokens instead would need jaxlib's
single-device views, which import `jax` (see `runtime/sharded.py`).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from jaxlib import _jax

from minijax.core.avals import ShapedArray
from minijax.runtime.array import _put_numpy

TOKEN_AVAL = ShapedArray((0,), np.bool_)
STREAM_ID = 0x6D6A78  # the execution stream of ordered single-device programs ("mjx")


def wait_until(done: Callable[[], bool], deadline: float | None = None,
               max_pause: float = 5e-3, spin: float = 2e-4) -> bool:
  """Polls `done` (spinning for `spin` seconds, then sleeping up to `max_pause` seconds
  between polls, which lets signal handlers run) until it holds (True) or `deadline`, a
  `time.monotonic()` value, passes (False)."""
  if done():
    return True
  spin_until = time.perf_counter() + spin
  while time.perf_counter() < spin_until:
    if done():
      return True
  pause = 5e-5
  while not done():
    if deadline is not None and time.monotonic() >= deadline:
      return False
    time.sleep(pause)
    pause = min(pause * 2, max_pause)
  return True


def is_ready(array) -> bool:
  """Whether the computation behind a jaxlib array has finished (a failed one has too: its
  error surfaces where its results are used)."""
  try:
    return array.is_ready()
  except Exception:
    return True


def wait_for_arrays(arrays: Sequence[Any], deadline: float | None = None) -> bool:
  """Waits until the computations behind `arrays` have finished; False if `deadline`
  passed first."""
  return wait_until(lambda: all(map(is_ready, arrays)), deadline)


def wait_for_statuses(statuses: Sequence[Any], deadline: float | None = None,
                      errors: bool = True) -> bool:
  """Waits until the executions of `statuses` (jaxlib's execution tokens) have finished,
  raising the error of a failed one (unless not `errors`); False if `deadline` passed
  first.  On the main thread a helper thread blocks on them while this one polls it; if
  Ctrl-C or the deadline ends the wait, the helper goes on until they finish."""
  failed: list = []

  def block():
    try:
      for status in statuses:
        status.block_until_ready()
    except Exception as e:
      failed.append(e)

  if not statuses:
    return True
  if threading.current_thread() is threading.main_thread() or deadline is not None:
    helper = threading.Thread(target=block, daemon=True, name="minijax-wait")
    helper.start()
    if not wait_until(lambda: not helper.is_alive(), deadline):
      return False
  else:
    block()
  if failed and errors:
    raise failed[0]
  return True


class GroupToken:
  """The token array an execution over `devices` returned, one token per device."""
  __slots__ = ("array", "devices")

  def __init__(self, array, devices: tuple):
    self.array = array
    self.devices = devices


class TokenChain:
  """The runtime token of one (ordered effect, device): `token` is what the next execution
  with that effect on that device must take, and is replaced by the token it returns."""
  __slots__ = ("token", "initial")

  def __init__(self, initial):
    self.token = self.initial = initial


class RuntimeTokens:
  """The token chain of every (ordered effect, device), and the status of unordered runs.

  Executables bind their chains, the lock and their device's status list into their call
  closures, so these objects are only ever changed in place."""

  _MAX_UNORDERED = 256  # per device, before the oldest statuses are waited for and dropped

  def __init__(self):
    # Re-entrant: a host call that runs inline, while its executable's dispatch holds the
    # lock, may compile and dispatch computations of its own on the same thread.
    self._lock = threading.RLock()
    self._chains: dict[tuple[Any, Any], TokenChain] = {}
    self._unordered: dict[Any, list] = {}
    self._initial: dict[Any, Any] = {}
    self._ordering: dict[Any, threading.RLock] = {}
    self._streamed: dict[Any, list] = {}   # device -> [streamed work since its last fence]
    self._fences: dict[Any, Any] = {}      # device -> its last fence not yet waited for
    self._host_calling: dict[Any, list] = {}  # device -> [programs calling the host running]
    # device -> the output buffer of a fence just dispatched on STREAM_ID (set by staging)
    self.fence = None

  def stream_mark(self, device) -> list:
    """`[marked]`: whether `device` ran a streamed execution since its last fence (one list
    per device, set in place by the dispatch path after each such execution)."""
    with self._lock:
      return self._streamed.setdefault(device, [False])

  def _any_streamed(self) -> bool:
    return bool(self._fences) or any(m[0] for m in self._streamed.values())

  def _dispatch_fences(self, devices=None) -> list:
    """Fences every marked device (of `devices`); returns `(device, fence)` of every fence
    not yet waited for (on `devices`)."""
    with self._lock:
      marked = [d for d, m in self._streamed.items()
                if m[0] and (devices is None or d in devices)]
      for d in marked:
        self._streamed[d][0] = False
    if marked:
      previous = _get_stream()
      _set_stream(STREAM_ID)
      try:
        fences = [(d, self.fence(d)) for d in marked]
      finally:
        _set_stream(previous)
      with self._lock:
        self._fences.update(fences)
    with self._lock:
      return [(d, f) for d, f in self._fences.items() if devices is None or d in devices]

  def wait_streamed(self, devices) -> None:
    """Blocks until the streamed executions dispatched so far on `devices` have finished."""
    if not self._any_streamed():
      return
    for device, fence in self._dispatch_fences(devices):
      wait_for_arrays([fence])
      with self._lock:
        if self._fences.get(device) is fence:
          del self._fences[device]

  def host_calls_running(self, device) -> list:
    """`[n]`: how many streamed programs that call the host run on `device` now (one list
    per device, changed in place, read by the dispatch path)."""
    with self._lock:
      return self._host_calling.setdefault(device, [0])

  def ordering_lock(self, device) -> threading.RLock:
    """The lock that orders the executions with ordered effects on `device` (see the module
    docstring).  Re-entrant, as `_lock` is, for a host call that dispatches from inside the
    execution holding it."""
    with self._lock:
      lock = self._ordering.get(device)
      if lock is None:
        lock = self._ordering[device] = threading.RLock()
      return lock

  def chain(self, effect, device) -> TokenChain:
    """The chain of `effect` on `device`, created on first use."""
    key = (effect, device)
    with self._lock:
      chain = self._chains.get(key)
      if chain is None:
        chain = self._chains[key] = TokenChain(self.initial(device))
      return chain

  def current(self, effect, device) -> Any:
    """The token the next execution with `effect` on `device` must wait for."""
    return self.chain(effect, device).token

  def initial(self, device) -> Any:
    """The token a chain starts from: a zero-byte array on `device`."""
    token = self._initial.get(device)
    if token is None:
      token = self._initial[device] = _put_numpy(np.zeros((0,), np.bool_), TOKEN_AVAL,
                                                 device)._buffer
    return token

  def settle(self, chain: TokenChain) -> Any:
    """The single-device token of `chain` (whose token may be a `GroupToken`): a group's
    execution is waited for, and the chain restarts from its initial token."""
    token = chain.token
    if type(token) is GroupToken:
      wait_for_arrays([token.array])
      chain.token = token = chain.initial
    return token

  def statuses(self, device) -> list:
    """The unordered runs on `device` not yet waited for: `(execution status, what the run
    keeps alive)` pairs, appended under `_lock`."""
    with self._lock:
      return self._unordered.setdefault(device, [])

  def trim(self, statuses: list) -> None:
    """Drops the older half of a long status list, once those runs are done."""
    with self._lock:
      done = statuses[:len(statuses) // 2]
      del statuses[:len(done)]
    wait_for_statuses([status for status, _ in done])

  def pending(self) -> list:
    """Everything a barrier must wait for: the tokens of chains that have started, and the
    unordered run statuses."""
    started, entries = self.snapshot()
    return [_array(token) for _, token in started] + [status for status, _ in entries]

  def snapshot(self) -> tuple[list, list]:
    """`(started, entries)`: the (chain, token) of every chain that has started, and the
    unordered runs not yet waited for.  Nothing is removed; see `release`."""
    fences = self._dispatch_fences() if self._any_streamed() else []
    with self._lock:
      started = [(c, c.token) for c in self._chains.values() if c.token is not c.initial]
      entries = [e for ss in self._unordered.values() for e in ss]
    started += [(device, fence) for device, fence in fences]
    return started, entries

  def progress_mark(self, device) -> list:
    """Arrays that are all ready once every execution with effects dispatched so far on
    `device` has finished: the tokens of its started chains, and a fence (dispatched now)
    after its streamed executions.  Unordered runs under `effects_ordering="runtime_token"`,
    which keep statuses only, are not covered."""
    fences = self._dispatch_fences((device,)) if self._any_streamed() else []
    with self._lock:
      tokens = [_array(c.token) for (_, d), c in self._chains.items()
                if d == device and c.token is not c.initial]
    return tokens + [fence for _, fence in fences]

  def started_tokens(self) -> list:
    """The current token array of every chain that has started: once they are all ready,
    every ordered execution dispatched so far has finished."""
    fences = self._dispatch_fences() if self._any_streamed() else []
    with self._lock:
      return [_array(c.token) for c in self._chains.values()
              if c.token is not c.initial] + [fence for _, fence in fences]

  def release(self, started: list, entries: list) -> None:
    """After waiting for a `snapshot`: chains whose token is still the one waited for go
    back to their initial token (which orders nothing more than a finished token does, so
    that the next idle barrier has nothing to wait for), and the runs waited for are
    dropped."""
    waited = {id(e) for e in entries}
    with self._lock:
      for chain, token in started:
        if type(chain) is not TokenChain:  # a fence: `chain` is its device
          if self._fences.get(chain) is token:
            del self._fences[chain]
        elif chain.token is token:  # no execution has extended the chain meanwhile
          chain.token = chain.initial
      if waited:
        for ss in self._unordered.values():
          ss[:] = [e for e in ss if id(e) not in waited]

  def wait_all(self) -> None:
    """Waits until every effectful computation started so far has finished (or failed),
    then `release`s them."""
    started, entries = self.snapshot()
    wait_for_arrays([_array(token) for _, token in started])
    wait_for_statuses([status for status, _ in entries], errors=False)
    self.release(started, entries)

  block_until_ready = wait_all

  def clear(self) -> None:
    """Forgets every token: the next effectful executions start new chains."""
    with self._lock:
      for chain in self._chains.values():
        chain.token = chain.initial
      for statuses in self._unordered.values():
        statuses.clear()
      for mark in self._streamed.values():
        mark[0] = False
      self._fences.clear()

  def after_fork_in_child(self) -> None:
    """In a forked child: locks a parent thread may have held are made anew, and the
    parent's computations, which never finish here, are forgotten."""
    self._lock._at_fork_reinit()
    for lock in self._ordering.values():
      lock._at_fork_reinit()
    self.clear()


def _array(token):
  return token.array if type(token) is GroupToken else token


token_array = _array  # the jaxlib array behind a chain's token (a GroupToken's array)
_get_stream, _set_stream = _jax.get_execution_stream_id, _jax.set_execution_stream_id


runtime_tokens = RuntimeTokens()

if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=runtime_tokens.after_fork_in_child)
