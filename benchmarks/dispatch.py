"""Dispatch and compile-path costs of minijax, side by side with JAX when it is installed.

  python benchmarks/dispatch.py [--rounds N]

Measures µs per call of a jitted `x + 1` on a device-resident scalar, and of the other
calls issue 21 names (`DISPATCH`: 10 arguments, a 100-leaf dict, `jit(grad(f))`, three
static values in turn, `jit(f)(x)` written inline), µs per eager call of a few numpy
functions on f32[1024] (each runs as one compiled call in both libraries), and the ms to
trace, lower and compile a 100-op elementwise chain on f32[1024].  Prints medians with the
25th-75th percentile spread, the ratio of the medians minijax / jax and, for dispatch, the
median of the per-round ratios (each round times both libraries back to back).
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


def _add(x, y):
  return x + y


def _ten(*xs):
  return sum(xs[1:], xs[0])


def _dict_sum(d):
  return sum(d.values())


def _loss(x):
  return (x * x).sum()


def _scaled(x, n):
  return x * n


def dispatch_cases(lib, np_module):
  """name -> a no-argument call of each dispatch case for `lib` ("minijax" or "jax")."""
  mod = minijax if lib == "minijax" else jax
  put = lambda v: mod.device_put(np.asarray(v, np.float32))  # noqa: E731
  x = put(1.0)
  xs = [put(float(i)) for i in range(10)]
  tree = {f"k{i:03d}": put(float(i)) for i in range(100)}
  v = put(np.ones(4))
  f1, f10, fdict = mod.jit(lambda x: x + 1), mod.jit(_ten), mod.jit(_dict_sum)
  fgrad = mod.jit(mod.grad(_loss))
  fstatic = mod.jit(_scaled, static_argnums=1)
  statics = [1, 2, 3]

  def static_calls():
    for n in statics:
      fstatic(x, n)

  def static_keyword_calls():
    for n in statics:
      fstatic(x, n=n)

  cases = {
      "jit(x + 1), 1 arg": lambda: f1(x),
      "jit, 10 args": lambda: f10(*xs),
      "jit, 100-leaf dict": lambda: fdict(tree),
      "jit(grad(f)) on f32[4]": lambda: fgrad(v),
      "jit, static arg (3 values in turn)": static_calls,
      "jit, static keyword arg (3 values in turn)": static_keyword_calls,
      "jit(f)(x) inline, f = x + y": lambda: mod.jit(_add)(x, x),
  }
  for call in cases.values():
    for _ in range(3):
      call()  # compiles
  return cases


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

  cases = {lib: dispatch_cases(lib, mnp if lib == "minijax" else jnp) for lib in libs}
  calls_per = {"jit, static arg (3 values in turn)": 3,
               "jit, static keyword arg (3 values in turn)": 3}
  more = {}
  for name in cases["minijax"]:
    n = max(1, args.calls // 4)
    samplers = {lib: (lambda call=cases[lib][name]: per_call_seconds(call, n)
                      / calls_per.get(name, 1)) for lib in libs}
    more[name] = interleaved(samplers, args.rounds, name)

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
  measured += [(f"dispatch, {name} (µs)", stats, 1e6, 1) for name, stats in more.items()]
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
    print("\nmedian of per-round ratios minijax / jax (paired rounds):")
    for name, stats in [("jit(x + 1) on f32[]", dispatch), *more.items()]:
      ratios = [m / j for m, j in zip(stats["minijax"].samples, stats["jax"].samples)]
      print(f"  {name}: {sorted(ratios)[len(ratios) // 2]:.2f}")
    print(f"\ntrace + lower: minijax {tl_mj * 1e3:.2f} ms, jax {tl_jx * 1e3:.2f} ms, "
          f"ratio {tl_mj / tl_jx:.2f} (target <= 0.5)")
    print(f"dispatch ratio {dispatch['minijax'].median / dispatch['jax'].median:.2f} (target <= 1.25)")
  else:
    print("\n(jax is not installed: install the `bench` extra for the side-by-side columns)")


if __name__ == "__main__":
  sys.exit(main())
