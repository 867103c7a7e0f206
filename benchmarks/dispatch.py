"""Dispatch and compile-path costs of minijax, side by side with JAX when it is installed.

  python benchmarks/dispatch.py [--rounds N]

Measures µs per call of a jitted `x + 1` on a device-resident scalar, and the ms to trace,
lower and compile a 100-op elementwise chain on f32[1024].  Prints medians with the
25th-75th percentile spread and the ratios minijax / jax.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import minijax
import minijax.numpy as mnp
from minijax.bench.timing import fmt, format_table, interleaved, per_call_seconds

try:
  import jax
  import jax.numpy as jnp
except ImportError:
  jax = None


def chain(np_module):
  def f(x):
    for i in range(25):
      x = np_module.sin(x) * 1.01 + 0.5
      x = np_module.cos(x)
    return x
  return f


def compile_path_sampler(lib: str, stage: str):
  """One sample: a fresh 100-op function through trace / lower / compile (one stage timed)."""
  def sample():
    if lib == "minijax":
      f = minijax.jit(chain(mnp))
      x = np.ones(1024, np.float32)
      t0 = time.perf_counter(); f.trace(x); t1 = time.perf_counter()
      lowered = f.lower(x); t2 = time.perf_counter()
      if stage == "compile":
        lowered.compile()
    else:
      f = jax.jit(chain(jnp))
      x = np.ones(1024, np.float32)
      t0 = time.perf_counter(); traced = f.trace(x); t1 = time.perf_counter()
      lowered = traced.lower(); t2 = time.perf_counter()
      if stage == "compile":
        lowered.compile()
    t3 = time.perf_counter()
    return {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2}[stage]
  return sample


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=15)
  parser.add_argument("--calls", type=int, default=2000, help="calls per dispatch sample")
  args = parser.parse_args(argv)

  libs = ["minijax"] + (["jax"] if jax is not None else [])
  f_mj = minijax.jit(lambda x: x + 1)
  x_mj = minijax.device_put(np.float32(1.0))
  f_mj(x_mj).block_until_ready()
  contenders = {"minijax": lambda: per_call_seconds(lambda: f_mj(x_mj), args.calls)}
  if jax is not None:
    f_jx = jax.jit(lambda x: x + 1)
    x_jx = jax.device_put(np.float32(1.0))
    f_jx(x_jx).block_until_ready()
    contenders["jax"] = lambda: per_call_seconds(lambda: f_jx(x_jx), args.calls)
  dispatch = interleaved(contenders, args.rounds, "dispatch")

  stages = {}
  for stage in ("trace", "lower", "compile"):
    stages[stage] = interleaved({lib: compile_path_sampler(lib, stage) for lib in libs},
                                max(3, args.rounds // 3), stage)

  rows = [["dispatch, jit(x + 1) on f32[] (µs)"] + [fmt(dispatch[l]) for l in libs]]
  for stage, stats in stages.items():
    rows.append([f"{stage}, 100-op chain on f32[1024] (ms)"] + [fmt(stats[l], 1e3, 2) for l in libs])
  headers = ["measure (median [p25-p75])"] + libs
  if jax is not None:
    headers.append("minijax / jax")
    rows[0].append(f"{dispatch['minijax'].median / dispatch['jax'].median:.2f}")
    for row, stats in zip(rows[1:], stages.values()):
      row.append(f"{stats['minijax'].median / stats['jax'].median:.2f}")
    tl_mj = stages["trace"]["minijax"].median + stages["lower"]["minijax"].median
    tl_jx = stages["trace"]["jax"].median + stages["lower"]["jax"].median
  print(format_table(headers, rows))
  if jax is not None:
    print(f"\ntrace + lower: minijax {tl_mj * 1e3:.2f} ms, jax {tl_jx * 1e3:.2f} ms, "
          f"ratio {tl_mj / tl_jx:.2f} (target <= 0.5)")
    print(f"dispatch ratio {dispatch['minijax'].median / dispatch['jax'].median:.2f} (target <= 1.25)")
  else:
    print("\n(jax is not installed: install the `bench` extra for the side-by-side columns)")


if __name__ == "__main__":
  sys.exit(main())
