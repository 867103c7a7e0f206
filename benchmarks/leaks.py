"""Memory that minijax keeps: per call, and after the functions that made it are gone.

  python benchmarks/leaks.py [--calls N] [--shapes N] [--closures N]

Each probe runs in a fresh interpreter and prints one row:

* `per call`: a jitted function with a tap (unordered, then ordered) and one without,
  called N times (default 200,000) on the same argument after a warm-up; the growth of
  the resident set (RSS) and of Python's allocated blocks, per call, after a barrier and a
  garbage collection.
* `shapes`: one jitted function called on N shapes (default 2,000), then deleted: RSS while
  it lived, RSS kept after `del f` and a collection, RSS kept after glibc's `malloc_trim(0)`
  (memory freed but still held by the allocator is returned to the system, so what is left
  is what is really in use), and the number of live executables.
* `closures`: N (default 500) short-lived `jit(closure)` each with a tap, called once and
  dropped; the same RSS figures, live executables and registered tap consumers.

RSS depends on the allocator and on what else runs; the block and object counts do not.
The script only uses what every minijax version has, so it can measure an older tree too
(`PYTHONPATH=<tree> python benchmarks/leaks.py`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

PROBE = """
import ctypes, gc, json, os, sys
import numpy as np

def rss():
  with open("/proc/self/statm") as f:
    return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def trim():
  gc.collect()
  try:
    ctypes.CDLL("libc.so.6").malloc_trim(0)
  except OSError:
    pass

import minijax
import minijax.numpy as jnp
from minijax.experimental import host_callback as hcb
from minijax.runtime.executable import Executable
from minijax.runtime.taps import registry

def live_executables():
  return sum(1 for o in gc.get_objects() if type(o) is Executable)

def settle():
  hcb.barrier_wait(); gc.collect(); hcb.barrier_wait()

which, n = sys.argv[1], int(sys.argv[2])
out = {}
if which == "per call":
  def nothing(a, t):
    pass
  for kind, fn in [("unordered tap", lambda x: hcb.id_tap(nothing, x * 2, ordered=False)),
                   ("ordered tap", lambda x: hcb.id_tap(nothing, x * 2)),
                   ("no tap", lambda x: x * 2)]:
    f, x = minijax.jit(fn), jnp.ones(3)
    for _ in range(2000):
      f(x)
    settle()
    r0, b0 = rss(), sys.getallocatedblocks()
    for _ in range(n):
      f(x)
    settle()
    out[kind] = dict(rss_bytes_per_call=(rss() - r0) / n,
                     blocks_per_call=(sys.getallocatedblocks() - b0) / n)
elif which == "shapes":
  trim(); r0 = rss(); e0 = live_executables()
  f = minijax.jit(lambda x: jnp.sin(x) * 2 + 1)
  for i in range(1, n + 1):
    f(np.ones((i,), np.float32))
  alive = rss() - r0
  del f
  gc.collect()
  kept = rss() - r0
  trim()
  out = dict(alive_mb=alive / 1e6, kept_mb=kept / 1e6, kept_after_trim_mb=(rss() - r0) / 1e6,
             live_executables=live_executables() - e0)
elif which == "closures":
  x = np.float32(1)
  minijax.jit(lambda x: hcb.id_tap(lambda a, t: None, x))(x)
  settle(); trim()
  r0, e0, c0 = rss(), live_executables(), len(registry.consumers_by_id)
  for i in range(n):
    def g(x, i=i):
      return hcb.id_tap(lambda a, t: None, x + i)
    minijax.jit(g)(x)
  settle()
  kept = rss() - r0
  trim()
  out = dict(kept_mb=kept / 1e6, kept_after_trim_mb=(rss() - r0) / 1e6,
             live_executables=live_executables() - e0,
             consumers=len(registry.consumers_by_id) - c0)
print(json.dumps(out))
"""


def probe(which: str, n: int) -> dict:
  proc = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE), which, str(n)],
                        capture_output=True, text=True, env=os.environ)
  if proc.returncode:
    raise RuntimeError(f"probe {which!r} failed:\n{proc.stderr[-3000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--calls", type=int, default=200_000)
  parser.add_argument("--shapes", type=int, default=2000)
  parser.add_argument("--closures", type=int, default=500)
  args = parser.parse_args(argv)
  for kind, row in probe("per call", args.calls).items():
    print(f"per call, {kind:>13}: {row['rss_bytes_per_call']:7.1f} B RSS and "
          f"{row['blocks_per_call']:.4f} Python blocks per call over {args.calls:,} calls")
  s = probe("shapes", args.shapes)
  print(f"{args.shapes:,} shapes: {s['alive_mb']:.0f} MB while f lives; after del f "
        f"{s['kept_mb']:.0f} MB kept, {s['kept_after_trim_mb']:.0f} MB after malloc_trim, "
        f"{s['live_executables']} executables alive")
  c = probe("closures", args.closures)
  print(f"{args.closures:,} short-lived jit(closure) with a tap: {c['kept_mb']:.0f} MB kept, "
        f"{c['kept_after_trim_mb']:.0f} MB after malloc_trim, {c['live_executables']} "
        f"executables and {c['consumers']} tap consumers alive")


if __name__ == "__main__":
  main()
