"""`python -m minijax.run script.py [args]` (or `-m module [args]`): run a JAX program on minijax.

It installs minijax as `jax` (`minijax.as_jax.install_as_jax`) and then runs the script as
`python script.py [args]` would (as `__main__`, with `sys.argv` and `sys.path[0]` set the
same way), or the module as `python -m module [args]` would.  pytest's xdist workers, fresh
interpreters, follow it through MINIJAX_AS_JAX=1 (`minijax.pytest_plugin`).
"""
from __future__ import annotations

import os
import runpy
import sys

from minijax.as_jax import install_as_jax

USAGE = "usage: python -m minijax.run script.py [args ...]  |  python -m minijax.run -m module [args ...]"


def main(argv: list[str]) -> None:
  if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
    print(USAGE, file=sys.stderr if not argv or argv[0] == "-m" else sys.stdout)
    sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
  os.environ["MINIJAX_AS_JAX"] = "1"  # for the pytest workers it may start (pytest_plugin.py)
  install_as_jax()
  if argv[0] == "-m":
    sys.argv = [argv[1], *argv[2:]]  # sys.path[0] is already the working directory
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  else:
    script = argv[0]
    if not os.path.exists(script):
      print(f"minijax.run: no such file {script!r}\n{USAGE}", file=sys.stderr)
      sys.exit(2)
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python script.py` has it
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
  main(sys.argv[1:])
