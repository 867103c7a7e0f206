"""Ctrl-C under load: how long a tapped program takes to exit after SIGINT, run after run.

  python benchmarks/interrupts.py [--runs N] [--burners N] [--no-compiler] [--parallel N]
                                  [--gdb]

Each run is a fresh interpreter that a user interrupts, as in issue 30's reliability suite:
  - slow tap: a jitted `fori_loop` of 100 taps whose tap function sleeps 0.5 s, then
    `barrier_wait()` (the main thread waits for the receiver);
  - full queue: a 1 MB tap queue and a jitted `fori_loop` of 200 taps of 1 MiB each, whose
    tap function sleeps 0.1 s, then `barrier_wait()` (taps wait for room in the queue, on
    the main thread when the program runs there, and the main thread waits for them);
each under both tap mechanisms (native and callback).  This script sends SIGINT once the
child has said it is about to wait (0.2-0.5 s later, varied), and measures, from here, the
time until the child has exited.  Meanwhile `--burners` processes spin on the cores and one
process compiles new programs without pause (minijax tracing, lowering and XLA compiling),
so that the children are starved as on a busy machine.

It prints one line per case, `runs`, `within 2 s`, the median and the worst latency, and
for each run that failed what it wrote: a run still alive 20 s after SIGINT is sent
SIGUSR1 first, on which it prints every Python thread's stack (`faulthandler`), and with
`--gdb` gdb's backtrace of every native thread goes to /tmp/interrupts_gdb_<pid>.txt.
Exits non-zero unless every run exited within 2 s with KeyboardInterrupt.
"""
from __future__ import annotations

import argparse
import itertools
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT_S = 2.0
HUNG_S = 20.0

CHILD = """
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)
import minijax, minijax.numpy as jnp
from minijax import lax
from minijax.config import config
from minijax.experimental import host_callback as hcb
config.update("tap_mechanism", sys.argv[1])
case = sys.argv[2]

def slow(arg, transforms):
  time.sleep(0.5 if case == "slow_tap" else 0.1)

if case == "slow_tap":
  taps, x = 100, jnp.float32(1.0)
else:
  taps, x = 200, jnp.zeros(256 * 1024, jnp.float32)  # 1 MiB a tap
f = minijax.jit(lambda x: lax.fori_loop(0, taps, lambda i, c: hcb.id_tap(slow, c + 1.0), x))
f.lower(x).compile()
print("waiting", flush=True)
f(x)
hcb.barrier_wait()
print("the barrier returned before the interrupt", flush=True)
"""

BURNER = "while True: pass\n"

COMPILER = """
import itertools
import minijax, minijax.numpy as jnp
x = jnp.ones((64, 64))
for i in itertools.count():
  f = minijax.jit(lambda x, i=i: jnp.tanh(x @ x + i).sum(0) * jnp.cos(x[i % 64]))
  f(x).block_until_ready()
"""


def _start(code: str, *args: str, env=None, **kwargs) -> subprocess.Popen:
  return subprocess.Popen([sys.executable, "-c", code, *args], env=env, text=True, **kwargs)


def run_once(mechanism: str, case: str, env: dict, gdb: bool) -> tuple[float | None, str]:
  """(seconds from SIGINT to exit, or None if it hung; what the child wrote on stderr)."""
  with tempfile.TemporaryFile("w+") as err:
    child = _start(CHILD, mechanism, case, env=env, stdout=subprocess.PIPE, stderr=err)
    line = child.stdout.readline()
    if line.strip() != "waiting":
      child.kill()
      child.wait()
      err.seek(0)
      return None, f"the child did not start: {line!r} {err.read()[-2000:]}"
    time.sleep(random.uniform(0.2, 0.5))
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    try:
      child.wait(HUNG_S)
      latency = time.monotonic() - sent
    except subprocess.TimeoutExpired:
      child.send_signal(signal.SIGUSR1)  # faulthandler: every thread's stack on stderr
      time.sleep(1.0)
      if gdb:
        with open(f"/tmp/interrupts_gdb_{child.pid}.txt", "w") as out:
          subprocess.run(["gdb", "-p", str(child.pid), "-batch", "-ex",
                          "thread apply all bt 30"], stdout=out, stderr=subprocess.STDOUT)
      child.kill()
      child.wait()
      latency = None
    err.seek(0)
    text = err.read()
    if latency is not None and "KeyboardInterrupt" not in text:
      return None, f"exited ({child.returncode}) without KeyboardInterrupt: {text[-2000:]}"
    return latency, text


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--runs", type=int, default=25, help="runs per case (4 cases)")
  parser.add_argument("--burners", type=int, default=2 * (os.cpu_count() or 2))
  parser.add_argument("--no-compiler", action="store_true")
  parser.add_argument("--parallel", type=int, default=2, help="children interrupted at once")
  parser.add_argument("--gdb", action="store_true", help="gdb backtraces of hung runs")
  args = parser.parse_args(argv)
  env = dict(os.environ, MINIJAX_TAP_QUEUE_BYTES=str(1 << 20))
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  load = [_start(BURNER) for _ in range(args.burners)]
  if not args.no_compiler:
    load.append(_start(COMPILER, env=env, stdout=subprocess.DEVNULL))
  cases = list(itertools.product(("native", "callback"), ("slow_tap", "full_queue")))
  latencies = {case: [] for case in cases}
  failures = []
  try:
    from concurrent.futures import ThreadPoolExecutor
    jobs = [case for case in cases for _ in range(args.runs)]
    random.shuffle(jobs)
    with ThreadPoolExecutor(args.parallel) as pool:
      outcomes = pool.map(lambda case: run_once(*case, env, args.gdb), jobs)
      for case, (latency, text) in zip(jobs, outcomes):
        if latency is None or latency >= LIMIT_S:
          failures.append((case, latency, text))
        if latency is not None:
          latencies[case].append(latency)
  finally:
    for proc in load:
      proc.kill()
      proc.wait()
  print(f"{'mechanism':10} {'case':11} {'runs':>5} {'within 2 s':>11} {'median s':>9} "
        f"{'worst s':>8}   (burners: {args.burners}, compiler: {not args.no_compiler})")
  for (mechanism, case), got in latencies.items():
    within = sum(t < LIMIT_S for t in got)
    print(f"{mechanism:10} {case:11} {args.runs:5d} {within:11d} "
          f"{statistics.median(got) if got else float('nan'):9.3f} "
          f"{max(got) if got else float('nan'):8.3f}")
  for case, latency, text in failures:
    print(f"\nFAILED {case}: latency {latency}\n{text[-6000:]}")
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
