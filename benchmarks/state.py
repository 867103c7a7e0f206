"""Refs: an in-place loop over a ref vs the functional loop, and jit dispatch with a ref
argument vs an array argument; minijax and JAX side by side (paired, interleaved rounds).

  python benchmarks/state.py [--rounds N] [--calls N]

1. `fori_loop` of 1,000 iterations over f32[262144] (1 MiB), each writing one element:
   through a ref (`r[i] = r[i] + 1`) and functionally (`x = x.at[i].set(x[i] + 1)`), both
   jitted; the ratio ref / functional is the cost of state (target <= 1.1: no copy of the
   1 MiB buffer per iteration, nor per call).
2. µs per call of a jitted `+ 1` on f32[]: `r[...] = r[...] + 1` on a ref argument vs
   `x + 1` on an array; the difference is the cost of a ref at dispatch (target <= 0.5 µs).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

try:
  import minijax
except ImportError:  # run from a checkout
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  import minijax
from minijax.bench.timing import Stats, fmt, format_table, interleaved, per_call_seconds

try:
  import jax
except ImportError:
  jax = None

N, STEPS = 262144, 1000


def loops(lib):
  lax = lib.lax

  def with_ref(r):
    def body(i, c):
      r[i] = r[i] + 1.
      return c
    lax.fori_loop(0, STEPS, body, 0)
    return r[0]

  def functional(x):
    return lax.fori_loop(0, STEPS, lambda i, x: x.at[i].set(x[i] + 1.), x)
  return lib.jit(with_ref), lib.jit(functional)


def samplers(lib, name, calls):
  jnp = lib.numpy
  ref_loop, fun_loop = loops(lib)
  r = lib.new_ref(jnp.zeros(N, jnp.float32))
  x = lib.device_put(np.zeros(N, np.float32))
  ref_loop(r)
  fun_loop(x).block_until_ready()

  def ref_sample():
    return per_call_seconds(lambda: ref_loop(r).block_until_ready(), 20)

  def fun_sample():
    return per_call_seconds(lambda: fun_loop(x).block_until_ready(), 20)

  inc_ref = lib.jit(lambda r: r.__setitem__(..., r[...] + 1.))
  inc_arr = lib.jit(lambda x: x + 1.)
  s = lib.new_ref(jnp.float32(0.))
  y = lib.device_put(np.float32(0.))
  inc_ref(s)
  inc_arr(y).block_until_ready()
  return {f"{name} loop, ref": ref_sample, f"{name} loop, .at[].set": fun_sample,
          f"{name} dispatch, ref": lambda: per_call_seconds(lambda: inc_ref(s), calls),
          f"{name} dispatch, array": lambda: per_call_seconds(lambda: inc_arr(y), calls)}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=31)
  parser.add_argument("--calls", type=int, default=2000, help="calls per dispatch sample")
  args = parser.parse_args(argv)
  libs = [("minijax", minijax)] + ([("jax", jax)] if jax is not None else [])
  contenders = {}
  for name, lib in libs:
    contenders.update(samplers(lib, name, args.calls))
  loop_stats = interleaved({k: v for k, v in contenders.items() if "loop" in k}, args.rounds,
                           "loops")
  dispatch_stats = interleaved({k: v for k, v in contenders.items() if "dispatch" in k},
                               args.rounds, "dispatch")
  rows = []
  for name, _ in libs:
    ref, fun = loop_stats[f"{name} loop, ref"], loop_stats[f"{name} loop, .at[].set"]
    dr, da = dispatch_stats[f"{name} dispatch, ref"], dispatch_stats[f"{name} dispatch, array"]
    # paired per round (the machine's load changes between rounds, less within one)
    ratio = Stats([a / b for a, b in zip(ref.samples, fun.samples)])
    diff = Stats([a - b for a, b in zip(dr.samples, da.samples)])
    rows.append([name, fmt(ref, 1e3, 3), fmt(fun, 1e3, 3), fmt(ratio, 1, 2),
                 fmt(dr, 1e6, 2), fmt(da, 1e6, 2), fmt(diff, 1e6, 2)])
  print(format_table(["library", "loop ref (ms)", "loop .at[].set (ms)", "ref / set",
                      "jit(ref) (µs)", "jit(array) (µs)", "ref - array (µs)"], rows))
  print(f"\n(1,000-iteration fori_loop over f32[{N}] (1 MiB); dispatch of a jitted +1 on f32[]; "
        "medians [p25-p75]; the ratio and the difference are paired per round; targets: "
        "ref / set <= 1.1, ref - array <= 0.5 µs)")


if __name__ == "__main__":
  sys.exit(main())
