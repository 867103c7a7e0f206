"""Runs each probe of `tools/jax_probes/` with JAX and with minijax and compares what they
print, line by line: the values, dtypes, shapes and error types of a few hundred calls
across checkify, callbacks and effects, indexing gradients, random draws, nn, control
flow, linalg, pytrees, dtypes, numpy, shard_map and pmap, the Array API, jet,
custom_vmap, scipy's modules (stats, signal), dot algorithms, jaxprs' debug info, the
stages of jit and the first lines of errors about traced values, odeint with the example
libraries, refs and enable_x64, debug_nans, the transformations' options and errors,
custom_jvp/custom_vjp rules, lax's shape and type errors, image resizing,
nn.initializers, numpy's and random's errors, empty arrays and edge values; and sweeps:
every elementwise and structural lax op by value, jit, grad, jvp and vmap, fft, index
forms and x.at[...], pytrees through the transformations, typed keys and every sampler,
ufunc methods, and checkify under the transformations.

A probe is a script written here (none of JAX's code) that prints one line per case,
`python probe.py m` with minijax, `python probe.py j` with JAX; addresses (0x...) are
ignored.  JAX must be installed (`pip install -e ".[ecosystem]"`).

    python tools/jax_probes.py            # a line per probe: identical lines / lines
    python tools/jax_probes.py --diff     # and the lines that differ
    python tools/jax_probes.py --only jet # probes whose name matches
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_probes")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _run(path: str, which: str) -> list[str]:
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  if "xla_force_host_platform_device_count" in open(path).read():
    env["MINIJAX_NUM_CPU_DEVICES"] = "4"  # as many devices as the probe gives JAX
  proc = subprocess.run([sys.executable, path, which], capture_output=True, text=True,
                        env=env, cwd=ROOT, timeout=600)
  lines = proc.stdout.splitlines()
  if proc.returncode:
    lines.append(f"EXIT {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
  return [_ADDRESS.sub("0x", line) for line in lines]


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--diff", action="store_true", help="print the lines that differ")
  parser.add_argument("--only", default="", help="run the probes whose name matches")
  args = parser.parse_args()
  total = same = 0
  for name in sorted(os.listdir(HERE)):
    if not name.endswith(".py") or not re.search(args.only, name):
      continue
    path = os.path.join(HERE, name)
    ours, theirs = _run(path, "m"), _run(path, "j")
    matcher = difflib.SequenceMatcher(a=theirs, b=ours, autojunk=False)
    identical = sum(block.size for block in matcher.get_matching_blocks())
    lines = max(len(ours), len(theirs))
    total, same = total + lines, same + identical
    print(f"{name[:-3]:22} {identical:4d} of {lines:4d} lines identical")
    if args.diff and identical < lines:
      for line in difflib.unified_diff(theirs, ours, "jax", "minijax", n=0, lineterm=""):
        print("    " + line[:200])
  print(f"{'all':22} {same:4d} of {total:4d} lines identical")
  return 0


if __name__ == "__main__":
  sys.exit(main())
