"""A 2-layer MLP training step (`grad` under `jit`), minijax side by side with JAX.

  python benchmarks/mlp_grad.py [--rounds N]

256 hidden units, batch 128, f32.  Reports trace+lower ms and compile ms of a fresh
training step, and µs per compiled step, as medians with 25th-75th percentiles, and the
ratios minijax / jax when jax is installed (the `bench` extra).
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

IN, HIDDEN, OUT, BATCH = 64, 256, 10, 128


def make_step(api, np_module):
  def loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np_module.tanh(np_module.dot(x, w1) + b1)
    logits = np_module.dot(h, w2) + b2
    return np_module.mean((logits - y) ** 2)

  def step(params, x, y):
    grads = api.grad(loss)(params, x, y)
    return tuple(p - 0.01 * g for p, g in zip(params, grads))
  return step


def data():
  rng = np.random.default_rng(0)
  params = (rng.normal(size=(IN, HIDDEN)).astype(np.float32) * 0.1,
            np.zeros(HIDDEN, np.float32),
            rng.normal(size=(HIDDEN, OUT)).astype(np.float32) * 0.1,
            np.zeros(OUT, np.float32))
  x = rng.normal(size=(BATCH, IN)).astype(np.float32)
  y = rng.normal(size=(BATCH, OUT)).astype(np.float32)
  return params, x, y


def compile_sampler(lib: str, stage: str):
  api, np_module = (minijax, mnp) if lib == "minijax" else (jax, jnp)
  params, x, y = data()

  def sample():
    f = api.jit(make_step(api, np_module))
    t0 = time.perf_counter()
    if lib == "minijax":
      f.trace(params, x, y)
      lowered = f.lower(params, x, y)
    else:
      lowered = f.trace(params, x, y).lower()
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    return t1 - t0 if stage == "trace+lower" else t2 - t1
  return sample


def step_sampler(lib: str, calls: int):
  api, np_module = (minijax, mnp) if lib == "minijax" else (jax, jnp)
  params, x, y = data()
  step = api.jit(make_step(api, np_module))
  params = tuple(api.device_put(p) for p in params)
  x, y = api.device_put(x), api.device_put(y)
  step(params, x, y)[0].block_until_ready()

  def sample():
    out = params
    start = time.perf_counter()
    for _ in range(calls):
      out = step(params, x, y)
    out[0].block_until_ready()
    return (time.perf_counter() - start) / calls
  return sample


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=9)
  parser.add_argument("--calls", type=int, default=200, help="steps per timing sample")
  args = parser.parse_args(argv)
  libs = ["minijax"] + (["jax"] if jax is not None else [])
  results = {
      "trace+lower (ms)": (interleaved({l: compile_sampler(l, "trace+lower") for l in libs},
                                       args.rounds, "trace+lower"), 1e3),
      "compile (ms)": (interleaved({l: compile_sampler(l, "compile") for l in libs},
                                   max(3, args.rounds // 2), "compile"), 1e3),
      "step (µs)": (interleaved({l: step_sampler(l, args.calls) for l in libs},
                                args.rounds, "step"), 1e6),
  }
  headers = ["MLP step, median [p25-p75]"] + libs + (["minijax / jax"] if jax else [])
  rows = []
  for name, (stats, scale) in results.items():
    row = [name] + [fmt(stats[l], scale, 2) for l in libs]
    if jax is not None:
      row.append(f"{stats['minijax'].median / stats['jax'].median:.2f}")
    rows.append(row)
  print(format_table(headers, rows))
  if jax is None:
    print("\n(jax is not installed: install the `bench` extra for the side-by-side columns)")
  else:
    print("\ntargets: step within 0.9-1.1x of jax, trace+lower <= 0.5x of jax")


if __name__ == "__main__":
  sys.exit(main())
