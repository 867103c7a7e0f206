"""Dispatch and compile-path costs of minijax, side by side with JAX when it is installed.

  python benchmarks/dispatch.py [--rounds N]

Measures µs per call of a jitted `x + 1` on a device-resident scalar, µs per eager call of
a few numpy functions on f32[1024] (each runs as one compiled call in both libraries), and
the ms to trace, lower and compile a 100-op elementwise chain on f32[1024].  Prints
medians with the 25th-75th percentile spread and the ratios minijax / jax.
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


EAGER = {
    "x + 1.0": lambda np_module, x: x + 1.0,
    "mean(x)": lambda np_module, x: np_module.mean(x),
    "var(x)": lambda np_module, x: np_module.var(x),
    "dot(x, x)": lambda np_module, x: np_module.dot(x, x),
}


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

  eager = {}
  x = np.arange(1024, dtype=np.float32)
  arrays = {"minijax": (mnp, minijax.device_put(x))}
  if jax is not None:
    arrays["jax"] = (jnp, jax.device_put(x))
  for name, op in EAGER.items():
    samplers = {}
    for lib, (np_module, array) in arrays.items():
      call = lambda np_module=np_module, array=array: op(np_module, array)  # noqa: E731
      call()  # compiles
      samplers[lib] = lambda call=call: per_call_seconds(call, args.calls // 4)
    eager[name] = interleaved(samplers, args.rounds, f"eager {name}")

  stages = {}
  for stage in ("trace", "lower", "compile"):
    stages[stage] = interleaved({lib: compile_path_sampler(lib, stage) for lib in libs},
                                max(3, args.rounds // 3), stage)

  measured = [("dispatch, jit(x + 1) on f32[] (µs)", dispatch, 1e6, 1)]
  measured += [(f"eager {name} on f32[1024] (µs)", stats, 1e6, 1) for name, stats in eager.items()]
  measured += [(f"{stage}, 100-op chain on f32[1024] (ms)", stats, 1e3, 2)
               for stage, stats in stages.items()]
  rows = [[what] + [fmt(stats[l], scale, digits) for l in libs]
          for what, stats, scale, digits in measured]
  headers = ["measure (median [p25-p75])"] + libs
  if jax is not None:
    headers.append("minijax / jax")
    for row, (_, stats, _, _) in zip(rows, measured):
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
