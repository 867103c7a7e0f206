"""Linear algebra under `jit`, minijax side by side with JAX: both call jaxlib's LAPACK kernels.

  OPENBLAS_NUM_THREADS=1 python benchmarks/linalg.py [--rounds N] [--n 128]

jnp.linalg.solve, cholesky, qr, eigh, svd and det of f32 n x n matrices (qr and svd of
n x n/2); µs per compiled call (results waited for with block_until_ready), medians with
25th-75th percentiles over interleaved rounds, and the ratio minijax / jax when jax is
installed (the `bench` extra).  LAPACK's own threads make the timings noisy on a busy
machine; one BLAS thread keeps both sides comparable.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import minijax
import minijax.numpy as mnp
from minijax.bench.timing import fmt, format_table, interleaved

try:
  import jax
  import jax.numpy as jnp
except ImportError:
  jax = None


def cases(n: int):
  rng = np.random.default_rng(0)
  a = rng.standard_normal((n, n)).astype(np.float32)
  b = rng.standard_normal((n, 4)).astype(np.float32)
  spd = (a @ a.T + n * np.eye(n)).astype(np.float32)
  tall = rng.standard_normal((n, n // 2)).astype(np.float32)
  return {
      "solve": (lambda m: m.linalg.solve, (a, b)),
      "cholesky": (lambda m: m.linalg.cholesky, (spd,)),
      "qr": (lambda m: m.linalg.qr, (tall,)),
      "eigh": (lambda m: m.linalg.eigh, (spd,)),
      "svd": (lambda m: lambda x: m.linalg.svd(x, full_matrices=False), (tall,)),
      "det": (lambda m: m.linalg.det, (a,)),
  }


def call_sampler(lib: str, make, args, calls: int):
  api, np_module, tree = ((minijax, mnp, minijax.tree_util) if lib == "minijax"
                          else (jax, jnp, jax.tree_util))
  fn = api.jit(make(np_module))
  args = [api.device_put(x) for x in args]

  def wait(out):
    for leaf in tree.tree_leaves(out):
      leaf.block_until_ready()

  wait(fn(*args))

  def sample():
    start = time.perf_counter()
    for _ in range(calls):
      out = fn(*args)
    wait(out)
    return (time.perf_counter() - start) / calls
  return sample


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=9)
  parser.add_argument("--calls", type=int, default=50, help="calls per timing sample")
  parser.add_argument("--n", type=int, default=128, help="matrix size")
  args = parser.parse_args(argv)
  libs = ["minijax"] + (["jax"] if jax is not None else [])
  headers = [f"n={args.n}, µs per call, median [p25-p75]"] + libs + (
      ["minijax / jax"] if jax else [])
  rows = []
  for name, (make, inputs) in cases(args.n).items():
    stats = interleaved({l: call_sampler(l, make, inputs, args.calls) for l in libs},
                        args.rounds, name)
    row = [name] + [fmt(stats[l], 1e6, 1) for l in libs]
    if jax is not None:
      row.append(f"{stats['minijax'].median / stats['jax'].median:.2f}")
    rows.append(row)
  print(format_table(headers, rows))
  if jax is None:
    print("\n(jax is not installed: install the `bench` extra for the side-by-side columns)")


if __name__ == "__main__":
  sys.exit(main())
