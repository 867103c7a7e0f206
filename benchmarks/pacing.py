"""What pacing costs tapped dispatch: the same bursts with it and without, in paired rounds.

  python benchmarks/pacing.py [--rounds N] [--calls N]

A dispatching thread waits, every few tapped dispatches, until its device has passed a
progress mark (`taps.receiver.before_execution`), so that it never waits inside jaxlib,
out of Ctrl-C's reach.  This times bursts of tapped calls, each until `barrier_wait`
returns, with that pacing on and off (off: the device's dispatch counter is parked far
below the pace, for this measurement only), in interleaved rounds: a cheap program with an
empty tap function (the dispatch cost), and programs that compute for a while before they
tap (`tanh(x @ x)` for n x n matrices: the device's throughput).  It prints the medians in
µs per call and the median of the per-round ratios paced / unpaced.
"""
from __future__ import annotations

import argparse
import statistics
import time

import minijax
import minijax.numpy as jnp
from minijax.experimental import host_callback as hcb
from minijax.runtime.taps.queues import queues


def _nothing(arg, transforms):
  pass


def _burst(f, x, calls: int) -> float:
  start = time.perf_counter()
  for _ in range(calls):
    f(x)
  hcb.barrier_wait()
  return (time.perf_counter() - start) / calls * 1e6


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=15)
  parser.add_argument("--calls", type=int, default=2000)
  args = parser.parse_args(argv)
  cases = [("empty tap, f32[]", minijax.jit(lambda x: hcb.id_tap(_nothing, x) + 1),
            jnp.ones(()), args.calls)]
  for n in (128, 256):
    cases.append((f"tanh(x @ x), {n}x{n}",
                  minijax.jit(lambda x: hcb.id_tap(_nothing, jnp.tanh(x @ x)[0, 0])),
                  jnp.ones((n, n)) * 1e-3, max(50, args.calls * 16 // n)))
  slot = 0  # the default device's (ordinal 0)
  for name, f, x, calls in cases:
    f(x)
    hcb.barrier_wait()
    times = {True: [], False: []}
    for _ in range(args.rounds):
      for paced in (True, False):
        queues.dispatched[slot] = 0 if paced else -(1 << 30)
        times[paced].append(_burst(f, x, calls))
    queues.dispatched[slot] = 0
    ratio = statistics.median(a / b for a, b in zip(times[True], times[False]))
    print(f"{name:>20}: paced {statistics.median(times[True]):8.2f} µs per call, unpaced "
          f"{statistics.median(times[False]):8.2f}, paced/unpaced {ratio:.3f}x")


if __name__ == "__main__":
  main()
