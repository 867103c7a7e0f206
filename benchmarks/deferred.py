"""Immediate against deferred taps (`tap_delivery`), on this machine's devices.

  python benchmarks/deferred.py [--rounds N] [--steps N] [--calls N]

Three workloads, each timed until every tap has run (`barrier_wait`), in interleaved
rounds (immediate, deferred and untapped in every round):

* a jitted `scan` of `--steps` steps with one scalar tap per step: µs per tap delivered,
  (tapped - untapped) / steps; and the same loop as a `while_loop` (its deferred taps fill
  buffers of `tap_loop_buffer` rows, each sent to the host when full);
* a burst of `--calls` calls of a jitted `x + 1` with one scalar tap: µs per call, and
  the ratio to the untapped call;
* the same burst with a 1 MiB tap.

Prints the median of each and of the per-round ratios.  On the CPU `auto` is immediate
(the native tap handler); deferred exists for accelerators, where a host transfer during a
computation costs a round trip (see docs/effects.md), and is measured here so that its cost
on the CPU is known.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.experimental import host_callback as hcb

DELIVERIES = ("immediate", "deferred")


def _nothing(arg, transforms):
  pass


def _timed(run) -> float:
  start = time.perf_counter()
  run()
  hcb.barrier_wait()
  return time.perf_counter() - start


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=11)
  parser.add_argument("--steps", type=int, default=1000)
  parser.add_argument("--calls", type=int, default=1000)
  args = parser.parse_args(argv)

  def scan(tapped):
    def body(c, _):
      c = c + 1.0
      return (hcb.id_tap(_nothing, c) if tapped else c), None
    return minijax.jit(lambda x: lax.scan(body, x, None, length=args.steps)[0])

  def while_(tapped):
    def body(c):
      i, x = c
      x = x + 1.0
      return i + 1, (hcb.id_tap(_nothing, x) if tapped else x)
    return minijax.jit(lambda x: lax.while_loop(lambda c: c[0] < args.steps, body,
                                                (0, x))[1])

  def call(tapped):
    return minijax.jit(lambda x: (hcb.id_tap(_nothing, x) if tapped else x) + 1)

  big = jnp.zeros(256 * 1024, jnp.float32)  # 1 MiB
  scalar = jnp.float32(0)
  cases = {  # name -> {contender: (function, argument, repetitions)}
      "scan": {"untapped": (scan(False), scalar, 1)},
      "while": {"untapped": (while_(False), scalar, 1)},
      "call": {"untapped": (call(False), scalar, args.calls)},
      "1 MiB call": {"untapped": (call(False), big, args.calls // 4)},
  }
  for delivery in DELIVERIES:
    with minijax.tap_delivery(delivery):
      cases["scan"][delivery] = (scan(True), scalar, 1)
      cases["while"][delivery] = (while_(True), scalar, 1)
      cases["call"][delivery] = (call(True), scalar, args.calls)
      cases["1 MiB call"][delivery] = (call(True), big, args.calls // 4)

  def run_case(delivery, fn, x, n):
    def run():
      for _ in range(n):
        fn(x)
    if delivery == "untapped":
      return _timed(run)
    with minijax.tap_delivery(delivery):
      return _timed(run)

  times = {(case, who): [] for case, contenders in cases.items() for who in contenders}
  for round_ in range(args.rounds + 1):  # the first round warms up (compiles)
    for case, contenders in cases.items():
      for who, (fn, x, n) in contenders.items():
        t = run_case(who, fn, x, n)
        if round_:
          times[case, who].append(t / n)

  median = lambda xs: statistics.median(xs) * 1e6  # noqa: E731
  print(f"devices: {minijax.devices()}; {args.rounds} rounds")
  print(f"{'workload':<12} {'contender':<10} {'median µs':>11} {'/ untapped':>11} {'µs per tap':>11}")
  for case, contenders in cases.items():
    base = times[case, "untapped"]
    for who in contenders:
      ts = times[case, who]
      ratio = statistics.median([t / b for t, b in zip(ts, base)])
      per_tap = ""
      if who != "untapped":
        steps = args.steps if case in ("scan", "while") else 1
        per_tap = f"{statistics.median([(t - b) / steps for t, b in zip(ts, base)]) * 1e6:11.3f}"
      print(f"{case:<12} {who:<10} {median(ts):11.2f} {ratio:11.2f} {per_tap:>11}")


if __name__ == "__main__":
  main()
