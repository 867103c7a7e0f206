"""A small convolutional classifier trained with stax and optimizers, minijax side by side
with JAX.

  python benchmarks/train_cnn.py [--rounds N] [--batch B] [--steps S]

The network is Conv(16, 3x3, SAME)-Relu-MaxPool(2x2)-Conv(32, 3x3, SAME)-Relu-MaxPool(2x2)-
Flatten-Dense(10)-LogSoftmax on 28x28x1 synthetic images, trained with momentum SGD on the
cross-entropy.  Both libraries start from the same parameters (initialized once by
minijax's stax, which gives JAX's values for the same key) and the same batches; the run
first checks that their loss trajectories agree, then measures, in interleaved rounds:

  trace+lower  ms to trace the training step and lower it to a module
  compile      ms for XLA to compile that module
  first step   ms from a fresh jit to the first result (trace, lower, compile, run)
  step         ms per compiled training step (device-resident state, `--calls` per sample)

and prints medians with the 25th-75th percentiles, the ratio of the medians and the
median of the per-round ratios (each round times both libraries back to back, so its
ratio is the one least exposed to the machine's drift).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import minijax
import minijax.numpy as mnp
from minijax import random as mrandom
from minijax.bench.timing import fmt, format_table, interleaved
from minijax.example_libraries import optimizers as moptimizers
from minijax.example_libraries import stax as mstax

try:
  import jax
  import jax.numpy as jnp
  from jax.example_libraries import optimizers as joptimizers
  from jax.example_libraries import stax as jstax
except ImportError:
  jax = None

IMAGE = (28, 28, 1)
CLASSES = 10


def network(stax):
  return stax.serial(
      stax.Conv(16, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
      stax.Conv(32, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
      stax.Flatten, stax.Dense(CLASSES), stax.LogSoftmax)


class Library:
  """One library's training step, built from its own stax, optimizers and numpy."""

  def __init__(self, name: str):
    self.name = name
    if name == "minijax":
      self.api, self.np, self.stax, self.opt = minijax, mnp, mstax, moptimizers
    else:
      self.api, self.np, self.stax, self.opt = jax, jnp, jstax, joptimizers
    _, self.apply = network(self.stax)
    self.opt_init, self.opt_update, self.get_params = self.opt.momentum(0.05, mass=0.9)

  def step_fn(self):
    """A fresh (never traced) training step: (i, state, x, y) -> (loss, new state)."""
    np_, apply, opt_update, get_params = self.np, self.apply, self.opt_update, self.get_params

    def loss(params, x, y):
      return -np_.mean(np_.sum(apply(params, x) * y, axis=1))

    def step(i, state, x, y):
      value, grads = self.api.value_and_grad(loss)(get_params(state), x, y)
      return value, opt_update(i, grads, state)
    return step

  def put(self, tree):
    return self.api.tree_util.tree_map(self.api.device_put, tree) if self.name == "jax" else \
        minijax.tree_util.tree_map(minijax.device_put, tree)


def initial_params(batch: int):
  init, _ = network(mstax)
  _, params = init(mrandom.PRNGKey(0), (batch,) + IMAGE)
  return minijax.tree_util.tree_map(np.asarray, params)


def batches(batch: int, count: int):
  rng = np.random.default_rng(0)
  out = []
  for _ in range(count):
    x = rng.standard_normal((batch,) + IMAGE).astype(np.float32)
    labels = rng.integers(0, CLASSES, batch)
    out.append((x, np.eye(CLASSES, dtype=np.float32)[labels]))
  return out


def loss_trajectory(lib: Library, params, data, steps: int) -> list[float]:
  step = lib.api.jit(lib.step_fn())
  state = lib.opt_init(lib.put(params))
  losses = []
  for i in range(steps):
    x, y = data[i % len(data)]
    value, state = step(i, state, x, y)
    losses.append(float(value))
  return losses


def stage_sampler(lib: Library, params, data, stage: str):
  x, y = data[0]

  def sample():
    state = lib.opt_init(params)
    f = lib.api.jit(lib.step_fn())
    t0 = time.perf_counter()
    if stage == "first step":
      value, _ = f(0, state, x, y)
      value.block_until_ready()
      return time.perf_counter() - t0
    if lib.name == "minijax":
      f.trace(0, state, x, y)
      lowered = f.lower(0, state, x, y)
    else:
      lowered = f.trace(0, state, x, y).lower()
    t1 = time.perf_counter()
    if stage == "trace+lower":
      return t1 - t0
    lowered.compile()
    return time.perf_counter() - t1
  return sample


def step_sampler(lib: Library, params, data, calls: int):
  step = lib.api.jit(lib.step_fn())
  state = lib.opt_init(lib.put(params))
  x, y = lib.put(data[0])
  value, state = step(0, state, x, y)
  value.block_until_ready()

  def sample():
    nonlocal state
    start = time.perf_counter()
    for i in range(calls):
      value, state = step(i, state, x, y)
    value.block_until_ready()
    return (time.perf_counter() - start) / calls
  return sample


def paired_ratio(stats) -> float:
  return statistics.median(a / b for a, b in zip(stats["minijax"].samples,
                                                   stats["jax"].samples))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=9)
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--steps", type=int, default=8, help="steps of the trajectory check")
  parser.add_argument("--calls", type=int, default=20, help="steps per timing sample")
  args = parser.parse_args(argv)
  params = initial_params(args.batch)
  data = batches(args.batch, 4)
  libs = {"minijax": Library("minijax")}
  if jax is not None:
    libs["jax"] = Library("jax")

  trajectories = {name: loss_trajectory(lib, params, data, args.steps)
                  for name, lib in libs.items()}
  print("loss trajectory (same initial parameters and batches):")
  for name, losses in trajectories.items():
    print(f"  {name:8s}" + " ".join(f"{v:.5f}" for v in losses))
  if jax is not None:
    gap = max(abs(a - b) / max(abs(b), 1e-6)
              for a, b in zip(trajectories["minijax"], trajectories["jax"]))
    print(f"  largest relative difference {gap:.1e}"
          + ("" if gap < 1e-4 else "  <-- the trajectories DIFFER"))

  stages = {}
  for stage, rounds in (("trace+lower", args.rounds), ("compile", max(3, args.rounds // 2)),
                        ("first step", max(3, args.rounds // 2))):
    stages[stage] = interleaved({n: stage_sampler(lib, params, data, stage)
                                 for n, lib in libs.items()}, rounds, stage)
  stages["step"] = interleaved({n: step_sampler(lib, params, data, args.calls)
                                for n, lib in libs.items()}, args.rounds, "step")

  names = list(libs)
  headers = [f"CNN training step, batch {args.batch} (ms, median [p25-p75])"] + names
  if jax is not None:
    headers += ["ratio of medians", "paired ratio"]
  rows = []
  for stage, stats in stages.items():
    row = [stage] + [fmt(stats[n], 1e3, 2) for n in names]
    if jax is not None:
      row += [f"{stats['minijax'].median / stats['jax'].median:.2f}",
              f"{paired_ratio(stats):.2f}"]
    rows.append(row)
  print()
  print(format_table(headers, rows))
  if jax is None:
    print("\n(jax is not installed: install the `bench` extra for the side-by-side columns)")
  else:
    print("\ntargets: step <= 1.1x jax, trace+lower <= 0.5x jax (first step: reported)")


if __name__ == "__main__":
  sys.exit(main())
