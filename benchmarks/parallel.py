"""pmap on 4 CPU devices, minijax side by side with JAX in one run.

  python benchmarks/parallel.py [--rounds N]

Measures (medians with the 25th-75th percentile spread, A/B interleaved rounds):
  * dispatch of a small pmap: `pmap(lambda x: psum(x, 'i'))` on f32[4, 8] already laid out
    over the devices (µs per call, calls issued in bursts of 4 and the burst waited for:
    jaxlib's CPU client deadlocks with dozens of collective programs in flight, for JAX as
    for minijax, see runtime/sharded_executable.py), and of `pmap(lambda x: x + 1)`, which
    has no collective, in bursts of 64;
  * a data-parallel MLP training step: replicated parameters, the batch split over the 4
    devices, gradients averaged with `pmean` (µs per step, bursts of 4);
  * aggregate tap throughput: a pmap whose body taps a scalar in a 2000-step loop, on 4
    devices and on 1 (taps delivered per second, the barrier included; minijax only: JAX
    has no id_tap any more).  Every device has its own receiver thread; on a machine with
    few cores and tap functions that need the GIL, the ratio 4-device / 1-device says how
    much of that parallelism survives.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("MINIJAX_NUM_CPU_DEVICES", "4")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import numpy as np  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as mnp  # noqa: E402
from minijax import lax as mlax  # noqa: E402
from minijax.bench.timing import fmt, format_table, interleaved  # noqa: E402
from minijax.experimental import host_callback as hcb  # noqa: E402

try:
  import jax
  import jax.numpy as jnp
  from jax import lax as jlax
except ImportError:
  jax = None

N = 4
IN, HIDDEN, OUT, BATCH = 64, 256, 10, 128
TAPS = 2000


def burst_seconds(call, out_of, calls: int, burst: int) -> float:
  """Seconds per call of `calls` calls issued `burst` at a time, each burst waited for."""
  start = time.perf_counter()
  for _ in range(calls // burst):
    for _ in range(burst):
      y = call()
    out_of(y).block_until_ready()
  return (time.perf_counter() - start) / (calls // burst * burst)


def libs():
  out = {"minijax": (minijax, mnp, mlax)}
  if jax is not None:
    out["jax"] = (jax, jnp, jlax)
  return out


def dispatch_samplers(calls: int, collective: bool):
  samplers = {}
  for name, (api, np_module, lax) in libs().items():
    if collective:
      f = api.pmap(lambda x, lax=lax: lax.psum(x, "i"), axis_name="i")
    else:
      f = api.pmap(lambda x: x + 1.0, axis_name="i")
    x = f(np.ones((N, 8), np.float32))  # laid out over the devices
    x.block_until_ready()
    burst = 4 if collective else 64
    samplers[name] = lambda f=f, x=x, burst=burst: burst_seconds(lambda: f(x), lambda y: y,
                                                                 calls, burst)
  return samplers


def mlp_samplers(calls: int):
  rng = np.random.default_rng(0)
  params = (rng.normal(size=(IN, HIDDEN)).astype(np.float32) * 0.1,
            np.zeros(HIDDEN, np.float32),
            rng.normal(size=(HIDDEN, OUT)).astype(np.float32) * 0.1,
            np.zeros(OUT, np.float32))
  x = rng.normal(size=(N, BATCH // N, IN)).astype(np.float32)
  y = rng.normal(size=(N, BATCH // N, OUT)).astype(np.float32)
  samplers = {}
  for name, (api, np_module, lax) in libs().items():
    def loss(params, x, y, np_module=np_module):
      w1, b1, w2, b2 = params
      h = np_module.tanh(np_module.dot(x, w1) + b1)
      return np_module.mean((np_module.dot(h, w2) + b2 - y) ** 2)

    def step(params, x, y, api=api, lax=lax, loss=loss):
      value, grads = api.value_and_grad(loss)(params, x, y)
      grads = lax.pmean(grads, "i")
      return tuple(p - 0.01 * g for p, g in zip(params, grads)), lax.pmean(value, "i")

    pstep = api.pmap(step, axis_name="i", in_axes=(None, 0, 0), out_axes=None)
    state = {"params": pstep(params, x, y)[0]}
    xs, ys = api.pmap(lambda a: a, axis_name="i")(x), api.pmap(lambda a: a, axis_name="i")(y)

    def call(pstep=pstep, state=state, xs=xs, ys=ys):
      state["params"], value = pstep(state["params"], xs, ys)
      return value
    call()
    samplers[name] = lambda call=call: burst_seconds(call, lambda v: v, calls, 4)
  return samplers


def tap_sampler(n_devices: int):
  count = [0]

  def tap(x, transforms):
    count[0] += 1

  def body(v):
    return mlax.fori_loop(0, TAPS, lambda i, c: hcb.id_tap(tap, c + 1.0), v)

  f = minijax.pmap(body, axis_name="i", devices=minijax.devices()[:n_devices])
  x = np.zeros(n_devices, np.float32)
  f(x)
  hcb.barrier_wait()

  def sample():
    start = time.perf_counter()
    before = count[0]
    f(x)
    hcb.barrier_wait()
    delivered = count[0] - before
    assert delivered == TAPS * n_devices, delivered
    return delivered / (time.perf_counter() - start)
  return sample


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=9)
  parser.add_argument("--calls", type=int, default=200, help="pmap calls per sample")
  args = parser.parse_args(argv)
  if len(minijax.devices()) != N:
    sys.exit(f"benchmarks/parallel.py needs {N} CPU devices (MINIJAX_NUM_CPU_DEVICES={N})")
  names = list(libs())

  measured = [
      ("pmap(psum) on f32[4,8], bursts of 4 (µs/call)",
       interleaved(dispatch_samplers(args.calls, True), args.rounds, "pmap psum"), 1e6),
      ("pmap(x + 1) on f32[4,8], bursts of 64 (µs/call)",
       interleaved(dispatch_samplers(args.calls * 4, False), args.rounds, "pmap x+1"), 1e6),
      ("data-parallel MLP step, batch 128 (µs/step)",
       interleaved(mlp_samplers(args.calls // 2), args.rounds, "mlp step"), 1e6),
  ]
  rows = [[what] + [fmt(stats[n], scale) for n in names] for what, stats, scale in measured]
  headers = ["measure (median [p25-p75])"] + names
  if jax is not None:
    headers.append("minijax / jax")
    for row, (_, stats, _) in zip(rows, measured):
      row.append(f"{stats['minijax'].median / stats['jax'].median:.2f}")
  print(format_table(headers, rows))

  taps = interleaved({"4 devices": tap_sampler(4), "1 device": tap_sampler(1)},
                     max(3, args.rounds // 2), "taps")
  four, one = taps["4 devices"].median, taps["1 device"].median
  print(f"\naggregate taps/s from pmap ({TAPS} scalar taps per device per call): "
        f"4 devices {four:,.0f} [{taps['4 devices'].p25:,.0f}-{taps['4 devices'].p75:,.0f}], "
        f"1 device {one:,.0f} [{taps['1 device'].p25:,.0f}-{taps['1 device'].p75:,.0f}], "
        f"ratio {four / one:.2f}")
  if jax is not None:
    psum_ratio = measured[0][1]["minijax"].median / measured[0][1]["jax"].median
    mlp_ratio = measured[2][1]["minijax"].median / measured[2][1]["jax"].median
    print(f"pmap(psum) dispatch ratio {psum_ratio:.2f} (target <= 1.25); "
          f"MLP step ratio {mlp_ratio:.2f} (target <= 1.1)")
  else:
    print("(jax is not installed: install the `bench` extra for the side-by-side columns)")


if __name__ == "__main__":
  sys.exit(main())
