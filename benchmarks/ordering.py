"""The cost of ordering tapped calls: a runtime token per call, or one execution stream.

  python benchmarks/ordering.py [--rounds N] [--calls N]

Times a burst of N calls (until every tap has run, `barrier_wait`) of
`jit(lambda x: id_tap(nothing, x) + 1)` under each `effects_ordering` setting, and the same
burst of the untapped `jit(lambda x: x + 1)`, in interleaved rounds; prints the median µs
per call and the median of the per-round ratios tapped / untapped (see docs/effects.md),
in wall time and in the dispatching thread's CPU time until the last call returned (the
steadier of the two on a shared machine; it leaves out the receiver thread's work).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import minijax
from minijax.config import config
from minijax.experimental import host_callback as hcb

MODES = ("runtime_token", "stream")


def _nothing(arg, transforms):
  pass


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=15)
  parser.add_argument("--calls", type=int, default=2000)
  args = parser.parse_args(argv)
  x = minijax.device_put(np.float32(1.0))
  saved = config.effects_ordering
  tapped = {}
  for mode in MODES:
    config.update("effects_ordering", mode)
    tapped[mode] = minijax.jit(lambda x: hcb.id_tap(_nothing, x) + 1)
    tapped[mode](x)
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

  samples = {name: [] for name in ("untapped", *MODES)}
  try:
    for _ in range(args.rounds):
      samples["untapped"].append(burst(plain))
      for mode in MODES:
        config.update("effects_ordering", mode)
        samples[mode].append(burst(tapped[mode]))
  finally:
    config.update("effects_ordering", saved)
  for name, values in samples.items():
    line = f"{name:>14}:"
    for what, k in (("wall", 0), ("dispatching thread's CPU", 1)):
      ratios = [v[k] / u[k] for v, u in zip(values, samples["untapped"])]
      line += (f"  {what} {statistics.median(v[k] for v in values) * 1e6:6.2f} µs per call, "
               f"{statistics.median(ratios):.2f}x untapped;")
    print(line.rstrip(";"))


if __name__ == "__main__":
  sys.exit(main())
