"""The cost of reaping: a jitted, scanned 1,000-step loop that reaps one value per step
(`append`) and the last of another (`clobber`), beside the same loop returning those values
by hand, and JAX's hand-written loop when JAX is installed.

  python benchmarks/harvest.py [--rounds N] [--steps N]

Prints µs per call (median [p25-p75]) of each, measured in interleaved rounds, and the
ratio reap / by hand (target <= 1.1).  Reaping happens while the function is traced, so
the compiled programs should be the same; the script also says whether their optimized
HLO is.
"""
from __future__ import annotations

import argparse
import re
import sys

import numpy as np

import minijax
import minijax.numpy as mnp
from minijax import lax
from minijax.bench.timing import fmt, format_table, interleaved, per_call_seconds
from minijax.effects import call_and_reap, sow

try:
  import jax
  import jax.numpy as jnp
except ImportError:
  jax = None


def reaped_loop(xs):
  def body(c, x):
    h = mnp.tanh(c * 0.9 + x)
    sow(h, tag="trace", name="h", mode="append")
    sow(h * h, tag="trace", name="energy", mode="clobber")
    return h, None
  carry, _ = lax.scan(body, mnp.zeros(xs.shape[1:], xs.dtype), xs)
  return carry


def by_hand(np_module, lax_module):
  """The same loop, carrying the last `energy` and stacking `h` itself."""
  def body(carry, x):
    c, _ = carry
    h = np_module.tanh(c * 0.9 + x)
    return (h, h * h), h

  def loop(xs):
    zeros = np_module.zeros(xs.shape[1:], xs.dtype)
    (carry, energy), hs = lax_module.scan(
        body, (zeros, np_module.zeros(xs.shape[1:], xs.dtype)), xs)
    return carry, {"energy": energy, "h": hs}
  return loop


def _hlo(compiled) -> str:
  text = compiled.as_text()
  return re.sub(r",? metadata=\{[^}]*\}", "", text[text.index("\n%"):])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=15)
  parser.add_argument("--steps", type=int, default=1000)
  parser.add_argument("--calls", type=int, default=200, help="calls per sample")
  args = parser.parse_args(argv)

  xs = np.random.default_rng(0).standard_normal((args.steps, 64)).astype(np.float32)
  reap_fn = minijax.jit(call_and_reap(reaped_loop, tag="trace"))
  hand_fn = minijax.jit(by_hand(mnp, lax))
  x_mj = minijax.device_put(xs)
  out_r, out_h = reap_fn(x_mj), hand_fn(x_mj)
  np.testing.assert_allclose(out_r[1]["h"], out_h[1]["h"], rtol=1e-6)
  np.testing.assert_allclose(out_r[1]["energy"], out_h[1]["energy"], rtol=1e-6)
  run = lambda f: (lambda: per_call_seconds(lambda: minijax.block_until_ready(f(x_mj)),  # noqa: E731
                                            args.calls))
  contenders = {"minijax reap": run(reap_fn), "minijax by hand": run(hand_fn)}
  if jax is not None:
    jax_fn = jax.jit(by_hand(jnp, jax.lax))
    x_jx = jax.device_put(xs)
    jax.block_until_ready(jax_fn(x_jx))
    contenders["jax by hand"] = lambda: per_call_seconds(
        lambda: jax.block_until_ready(jax_fn(x_jx)), args.calls)
  stats = interleaved(contenders, args.rounds, "harvest")
  names = list(contenders)
  print(format_table(["measure (µs per call, median [p25-p75])"] + names,
                     [[f"jit(scan) of {args.steps} steps, f32[64] carry"]
                      + [fmt(stats[n], 1e6, 1) for n in names]]))
  ratio = stats["minijax reap"].median / stats["minijax by hand"].median
  print(f"\nreap / by hand: {ratio:.3f} (target <= 1.1)")
  same = _hlo(reap_fn.lower(x_mj).compile()) == _hlo(hand_fn.lower(x_mj).compile())
  print(f"same optimized HLO: {same}")


if __name__ == "__main__":
  sys.exit(main())
