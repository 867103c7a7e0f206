"""The cost of ordering tapped calls: a runtime token per call, or one execution stream.

  python benchmarks/ordering.py [--rounds N] [--calls N] [--load N]

Times a burst of N calls (until every tap has run, `barrier_wait`) of
`jit(lambda x: id_tap(nothing, x) + 1)` under each `effects_ordering` setting, the same
function with an unordered `debug.callback` in place of the tap (on the stream), and the same
burst of the untapped `jit(lambda x: x + 1)`, in interleaved rounds; prints the median µs
per call and the median of the per-round ratios tapped / untapped (see docs/effects.md),
in wall time and in the dispatching thread's CPU time until the last call returned (the
steadier of the two on a shared machine; it leaves out the receiver thread's work).

With `--load N` N other processes keep a core busy each (`--load all`: every core) while
it measures: the receivers must not starve the dispatching thread
(their spinning and lingering adapt to load; see `csrc/tap_queue.cc`).

With `--breakdown` it times, on the stream, where the tapped call's extra time goes, each
part alone in the same interleaved rounds: the tapped program executed by hand (jaxlib's
`execute_sharded` and `consume_with_handlers`, on the thread's own stream: the tap's custom
call and its push into the queue run inside), then with the switch to the shared stream,
then with the tap runtime's checks before an execution (`before_execution`, the host-call
depth), then all that as the executable does it (`Executable._execute_streamed`), beside the
untapped program executed by hand, and beside an untapped program of several XLA operations
(a cumsum: XLA's CPU runtime costs more per execution for a program of more than one
operation, tapped or not); and the receiver thread's CPU time per tap.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax.config import config
from minijax.experimental import host_callback as hcb

MODES = ("runtime_token", "stream")


def _nothing(arg, transforms):
  pass


def _unordered(x):
  minijax.debug.callback(lambda x: None, x)
  return x + 1


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=15)
  parser.add_argument("--calls", type=int, default=2000)
  parser.add_argument("--breakdown", action="store_true",
                      help="time the parts of a tapped call on the stream (see above)")
  parser.add_argument("--load", default="0",
                      help="cores another process keeps busy meanwhile (a number, or 'all')")
  args = parser.parse_args(argv)
  load = os.cpu_count() if args.load == "all" else int(args.load)
  with _busy_cores(load):
    if args.breakdown:
      return breakdown(args)
    return measure(args)


@contextlib.contextmanager
def _busy_cores(n: int):
  """`n` other processes, each spinning on a core, for as long as the block runs."""
  procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
  try:
    yield
  finally:
    for p in procs:
      p.kill()
      p.wait()


def measure(args):
  x = minijax.device_put(np.float32(1.0))
  saved = config.effects_ordering
  tapped = {}
  for mode in MODES:
    config.update("effects_ordering", mode)
    tapped[mode] = minijax.jit(lambda x: hcb.id_tap(_nothing, x) + 1)
    tapped[mode](x)
  config.update("effects_ordering", "stream")
  unordered = minijax.jit(_unordered)
  unordered(x)
  plain = minijax.jit(lambda x: x + 1)
  plain(x)
  hcb.barrier_wait()

  def burst(fn):
    start, cpu = time.perf_counter(), time.thread_time()
    for _ in range(args.calls):
      fn(x)
    cpu = time.thread_time() - cpu
    hcb.barrier_wait()
    return (time.perf_counter() - start) / args.calls, cpu / args.calls

  samples = {name: [] for name in ("untapped", *MODES, "unordered")}
  try:
    for _ in range(args.rounds):
      samples["untapped"].append(burst(plain))
      for mode in MODES:
        config.update("effects_ordering", mode)
        samples[mode].append(burst(tapped[mode]))
      samples["unordered"].append(burst(unordered))
  finally:
    config.update("effects_ordering", saved)
  for name, values in samples.items():
    line = f"{name:>14}:"
    for what, k in (("wall", 0), ("dispatching thread's CPU", 1)):
      ratios = [v[k] / u[k] for v, u in zip(values, samples["untapped"])]
      line += (f"  {what} {statistics.median(v[k] for v in values) * 1e6:6.2f} µs per call, "
               f"{statistics.median(ratios):.2f}x untapped;")
    print(line.rstrip(";"))


def breakdown(args):
  from jaxlib import _jax
  from minijax.runtime import host_calls, taps
  from minijax.runtime.taps import receiver
  from minijax.runtime.tokens import STREAM_ID

  x = minijax.device_put(np.float32(1.0))
  saved = config.effects_ordering
  config.update("effects_ordering", "stream")
  try:
    tapped = minijax.jit(lambda x: hcb.id_tap(_nothing, x) + 1)
    plain = minijax.jit(lambda x: x + 1)
    several = minijax.jit(lambda x: jnp.cumsum(jnp.stack([x, x + 1]))[1])
    t_exe, p_exe = tapped.lower(x).compile()._fn, plain.lower(x).compile()._fn
    s_exe = several.lower(x).compile()._fn
    tapped(x), plain(x), t_exe(x), p_exe(x), s_exe(x)
    hcb.barrier_wait()
    buffers = [x._buffer]
    get_stream, set_stream = _jax.get_execution_stream_id, _jax.set_execution_stream_id
    before, ordinal = taps.before_execution, taps.device_ordinal(x._device)
    depth = host_calls.host_call_depth

    def by_hand(exe, shared=False, checks=False):
      execute, handlers = exe._exe.execute_sharded, exe._handlers

      def run():
        if checks:
          before(ordinal)
          depth()
        if shared:
          previous = get_stream()
          set_stream(STREAM_ID)
          results = execute(buffers)
          set_stream(previous)
        else:
          results = execute(buffers)
        results.consume_with_handlers(handlers)
      return run

    parts = {
        "untapped jit call": lambda: plain(x),
        "tapped jit call": lambda: tapped(x),
        "untapped program by hand": by_hand(p_exe),
        "untapped cumsum by hand": by_hand(s_exe),
        "tapped program by hand": by_hand(t_exe),
        "  + shared stream": by_hand(t_exe, shared=True),
        "  + tap runtime checks": by_hand(t_exe, shared=True, checks=True),
        "  all in execute_streamed": lambda: t_exe._execute_streamed(buffers)
        .consume_with_handlers(t_exe._handlers),
    }
    receivers = [r.thread.ident for r in receiver._receivers.values()]
    clocks = [time.pthread_getcpuclockid(ident) for ident in receivers]
    samples = {name: [] for name in parts}
    received = {name: [] for name in parts}
    for _ in range(args.rounds):
      for name, call in parts.items():
        rec0 = sum(map(time.clock_gettime, clocks))
        cpu = time.thread_time()
        for _ in range(args.calls):
          call()
        cpu = time.thread_time() - cpu
        hcb.barrier_wait()
        samples[name].append(cpu / args.calls)
        received[name].append((sum(map(time.clock_gettime, clocks)) - rec0) / args.calls)
  finally:
    config.update("effects_ordering", saved)
  base = samples["untapped jit call"]
  print("dispatching thread's CPU per call (median), and the receiver's CPU per call:")
  for name, values in samples.items():
    ratio = statistics.median(v / b for v, b in zip(values, base))
    print(f"  {name:>26}: {statistics.median(values) * 1e6:6.2f} µs, {ratio:.2f}x the untapped "
          f"jit call; receiver {statistics.median(received[name]) * 1e6:5.2f} µs")


if __name__ == "__main__":
  sys.exit(main())
