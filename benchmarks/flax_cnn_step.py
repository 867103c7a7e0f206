"""The flax.linen CNN training step of tests/ecosystem/flax_linen.py on minijax and on JAX:
dispatch of the compiled step, and trace + lower of a fresh jit of it.

  python benchmarks/flax_cnn_step.py [--rounds 5] [--calls 200] [--lowers 5]

Needs the `ecosystem` extra (flax, optax and jax).  A library binds to one `jax`, so each
side runs in its own process (`python -m minijax.run` for minijax); the rounds alternate
the two sides and every round measures both, so machine noise falls on both alike.  The
table shows the medians over rounds of each process's median, and minijax / JAX.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import json, sys, time
import flax.linen as nn
import jax, jax.numpy as jnp, numpy as np, optax

class CNN(nn.Module):
  @nn.compact
  def __call__(self, x, train: bool):
    x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9)(nn.Conv(8, (3, 3))(x)))
    x = nn.avg_pool(x, (2, 2), strides=(2, 2))
    x = nn.max_pool(nn.relu(nn.Conv(8, (3, 3), padding="VALID")(x)), (2, 2), strides=(2, 2))
    x = nn.Dropout(0.25, deterministic=not train)(x.reshape((x.shape[0], -1)))
    return nn.Dense(3)(x)

calls, lowers = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.RandomState(0)
labels = rng.randint(0, 3, 16)
images = rng.normal(0, 1, (16, 12, 12, 1)).astype(np.float32)
cnn = CNN()
variables = cnn.init({"params": jax.random.PRNGKey(1)}, images, train=False)
params, stats = variables["params"], variables["batch_stats"]
tx = optax.adam(1e-2)
opt = tx.init(params)

def step(params, stats, opt, key):
  def loss_fn(p):
    logits, upd = cnn.apply({"params": p, "batch_stats": stats}, images, train=True,
                            rngs={"dropout": key}, mutable=["batch_stats"])
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), upd["batch_stats"]
  (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
  updates, opt = tx.update(grads, opt, params)
  return optax.apply_updates(params, updates), stats, opt, loss

key = jax.random.PRNGKey(2)
jitted = jax.jit(step)
out = jitted(params, stats, opt, key)
jax.block_until_ready(out)
times = []
for _ in range(calls):
  t = time.perf_counter()
  out = jitted(params, stats, opt, key)
  jax.block_until_ready(out)
  times.append(time.perf_counter() - t)
dispatch = sorted(times)[len(times) // 2]
times = []
for _ in range(lowers):
  t = time.perf_counter()
  jax.jit(lambda *a: step(*a)).lower(params, stats, opt, key)  # a new function: no cache
  times.append(time.perf_counter() - t)
print("BENCH " + json.dumps({"dispatch_us": dispatch * 1e6,
                             "trace_lower_ms": sorted(times)[len(times) // 2] * 1e3}))
'''


def _measure(side: str, child: str, calls: int, lowers: int) -> dict:
  env = dict(os.environ)
  runner = []
  if side == "minijax":
    runner = ["-m", "minijax.run"]
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  out = subprocess.run([sys.executable, *runner, child, str(calls), str(lowers)],
                       capture_output=True, text=True, env=env, timeout=900)
  if out.returncode:
    raise RuntimeError(f"{side} run failed:\n{out.stderr[-2000:]}")
  line = [s for s in out.stdout.splitlines() if s.startswith("BENCH ")][-1]
  return json.loads(line[len("BENCH "):])


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--calls", type=int, default=200)
  parser.add_argument("--lowers", type=int, default=5)
  args = parser.parse_args(argv)
  rows = {"minijax": [], "jax": []}
  with tempfile.TemporaryDirectory() as tmp:
    child = os.path.join(tmp, "flax_cnn_step_child.py")
    with open(child, "w") as f:
      f.write(CHILD)
    for r in range(args.rounds):
      for side in (("minijax", "jax") if r % 2 == 0 else ("jax", "minijax")):
        rows[side].append(_measure(side, child, args.calls, args.lowers))
  print(f"{'measure':<22}{'minijax':>12}{'jax':>12}{'minijax/jax':>14}")
  for key in ("dispatch_us", "trace_lower_ms"):
    m = statistics.median(x[key] for x in rows["minijax"])
    j = statistics.median(x[key] for x in rows["jax"])
    print(f"{key:<22}{m:>12.1f}{j:>12.1f}{m / j:>14.2f}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
