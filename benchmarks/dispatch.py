"""Dispatch and compile-path costs of minijax, side by side with JAX when it is installed.

  python benchmarks/dispatch.py [--rounds N] [--calls N] [--clock wall|thread]
                                [--only dispatch,eager,compile]

Measures µs per call of a jitted `x + 1` on a device-resident scalar, and of the other
calls issue 21 names (`DISPATCH`: 10 arguments, a 100-leaf dict, `jit(grad(f))`, three
static values in turn, `jit(f)(x)` written inline), µs per eager call of a few numpy
functions on f32[1024] (each runs as one compiled call in both libraries), and the ms to
trace, lower and compile a 100-op elementwise chain on f32[1024].  Prints medians with the
25th-75th percentile spread, the ratio of the medians minijax / jax and, for dispatch, the
median of the per-round ratios (each round times both libraries back to back).  With
`--clock thread` the dispatch and eager rows are the calling thread's CPU time per call
(`time.thread_time`): on a shared machine that is the steadier measure of what a call costs,
since it leaves out the time the thread waits for a core.  The eager rows include `x + 1`
on f32[16], where dispatch is all there is.
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


EAGER = {  # name -> (size of x, the call)
    "x + 1": (16, lambda np_module, x: x + 1),
    "x + 1.0": (1024, lambda np_module, x: x + 1.0),
    "mean(x)": (1024, lambda np_module, x: np_module.mean(x)),
    "var(x)": (1024, lambda np_module, x: np_module.var(x)),
    "dot(x, x)": (1024, lambda np_module, x: np_module.dot(x, x)),
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
  parser.add_argument("--clock", choices=("wall", "thread"), default="wall",
                      help="wall time, or the calling thread's CPU time, per call")
  parser.add_argument("--only", default="dispatch,eager,compile",
                      help="comma-separated subset of: dispatch, eager, compile")
  args = parser.parse_args(argv)
  parts = set(args.only.split(","))
  clock = time.thread_time if args.clock == "thread" else time.perf_counter
  timed = lambda call, n: per_call_seconds(call, n, clock)  # noqa: E731

  libs = ["minijax"] + (["jax"] if jax is not None else [])
  measured, paired = [], []
  if "dispatch" in parts:
    cases = {lib: dispatch_cases(lib, mnp if lib == "minijax" else jnp) for lib in libs}
    calls_per = {"jit, static arg (3 values in turn)": 3,
                 "jit, static keyword arg (3 values in turn)": 3}
    for name in cases["minijax"]:
      n = args.calls if name == "jit(x + 1), 1 arg" else max(1, args.calls // 4)
      samplers = {lib: (lambda call=cases[lib][name]: timed(call, n) / calls_per.get(name, 1))
                  for lib in libs}
      stats = interleaved(samplers, args.rounds, name)
      measured.append((f"dispatch, {name} (µs)", stats, 1e6, 1))
      paired.append((name, stats))

  if "eager" in parts:
    for name, (size, op) in EAGER.items():
      x = np.arange(size, dtype=np.float32)
      samplers = {}
      for lib in libs:
        np_module, array = (mnp, minijax.device_put(x)) if lib == "minijax" else \
            (jnp, jax.device_put(x))
        call = lambda np_module=np_module, array=array: op(np_module, array)  # noqa: E731
        call()  # compiles
        samplers[lib] = lambda call=call: timed(call, args.calls // 4)
      stats = interleaved(samplers, args.rounds, f"eager {name}")
      measured.append((f"eager {name} on f32[{size}] (µs)", stats, 1e6, 1))
      paired.append((f"eager {name} on f32[{size}]", stats))

  stages = {}
  if "compile" in parts:
    for stage in ("trace", "lower", "compile"):
      stages[stage] = interleaved({lib: compile_path_sampler(lib, stage) for lib in libs},
                                  max(3, args.rounds // 3), stage)
      measured.append((f"{stage}, 100-op chain on f32[1024] (ms)", stages[stage], 1e3, 2))

  rows = [[what] + [fmt(stats[l], scale, digits) for l in libs]
          for what, stats, scale, digits in measured]
  headers = ["measure (median [p25-p75])"] + libs
  if jax is not None:
    headers.append("minijax / jax")
    for row, (_, stats, _, _) in zip(rows, measured):
      row.append(f"{stats['minijax'].median / stats['jax'].median:.2f}")
  print(f"clock: {args.clock}")
  print(format_table(headers, rows))
  if jax is None:
    print("\n(jax is not installed: install the `bench` extra for the side-by-side columns)")
    return
  print("\nmedian of per-round ratios minijax / jax (paired rounds):")
  for name, stats in paired:
    ratios = [m / j for m, j in zip(stats["minijax"].samples, stats["jax"].samples)]
    print(f"  {name}: {sorted(ratios)[len(ratios) // 2]:.2f}")
  if stages:
    tl_mj = stages["trace"]["minijax"].median + stages["lower"]["minijax"].median
    tl_jx = stages["trace"]["jax"].median + stages["lower"]["jax"].median
    print(f"\ntrace + lower: minijax {tl_mj * 1e3:.2f} ms, jax {tl_jx * 1e3:.2f} ms, "
          f"ratio {tl_mj / tl_jx:.2f} (target <= 0.5)")

if __name__ == "__main__":
  sys.exit(main())
