"""Runtime tokens: what orders the executions that carry effects, across calls.

The lowered `main` of a computation takes one token per ordered effect before its array
arguments, in `ordered_effects` order, and returns the same number of tokens before its
array results (see `lowering/tokens.py` for the same contract at lowering time).  For
every (ordered effect, device) a `TokenChain` keeps the token returned by the last
execution that carried the effect; the first execution, and the first after a barrier saw
the chain finish, gets a zero-byte `bool[0]` array.  Each execution therefore waits for the
previous one with the same effect on that device, in call order, without the host ever
blocking.  Executions with unordered effects record their execution status instead, so
that `runtime_tokens.wait_all()` can wait for every started effectful computation.

An execution over several devices (`runtime/sharded_executable.py`) passes one token array
holding a token per device and gets one back; it leaves that array, as a `GroupToken`, in
the chain of every one of its devices.  The next execution over the same devices passes it
on as it is; any other reads the chain through `settle`, which waits for the group's
execution to finish (so that the order holds) and restarts the chain from its initial
token.  Splitting the array into per-device tokens instead would need jaxlib's
single-device views, which import `jax` (see `runtime/sharded.py`).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from jaxlib import xla_client

from minijax.core.avals import ShapedArray
from minijax.runtime.array import _put_numpy

TOKEN_AVAL = ShapedArray((0,), np.bool_)


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
      token.array.block_until_ready()
      chain.token = token = chain.initial
    return token

  def statuses(self, device) -> list:
    """The execution statuses of unordered runs on `device`, not yet waited for."""
    with self._lock:
      return self._unordered.setdefault(device, [])

  def trim(self, statuses: list) -> None:
    """Drops the older half of a long status list, once those runs are done."""
    with self._lock:
      done = statuses[:len(statuses) // 2]
      del statuses[:len(done)]
    for status in done:
      status.block_until_ready()

  def pending(self) -> list:
    """Everything a barrier must wait for: the tokens of chains that have started, and the
    unordered run statuses."""
    with self._lock:
      return ([_array(c.token) for c in self._chains.values() if c.token is not c.initial] +
              [s for ss in self._unordered.values() for s in ss])

  def wait_all(self) -> None:
    """Blocks until every effectful computation started so far has finished (or failed).

    A chain whose token is done then goes back to its initial token, which orders nothing
    more than a finished token does, so that the next idle barrier has nothing to wait for."""
    with self._lock:
      started = [(c, c.token) for c in self._chains.values() if c.token is not c.initial]
      statuses = [s for ss in self._unordered.values() for s in ss]
      for ss in self._unordered.values():
        ss.clear()
    if started:
      arrays = {id(a): a for a in (_array(token) for _, token in started)}
      xla_client.batched_block_until_ready(list(arrays.values()))
      with self._lock:
        for chain, token in started:
          if chain.token is token:  # no execution has extended the chain meanwhile
            chain.token = chain.initial
    for status in statuses:
      status.block_until_ready()

  block_until_ready = wait_all

  def clear(self) -> None:
    """Forgets every token: the next effectful executions start new chains."""
    with self._lock:
      for chain in self._chains.values():
        chain.token = chain.initial
      for statuses in self._unordered.values():
        statuses.clear()


def _array(token):
  return token.array if type(token) is GroupToken else token


runtime_tokens = RuntimeTokens()
