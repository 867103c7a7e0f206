"""Host callback overhead, minijax taps vs JAX callbacks: the same as `python -m minijax.bench`.

  python benchmarks/callback_overhead.py [--quick] [--json PATH] [--plot PATH] ...

A thin wrapper so the benchmark also lives with the other scripts under `benchmarks/`; every
flag and every measurement is `minijax.bench.__main__`'s (see its docstring, or `--help`).
"""
from __future__ import annotations

import os
import sys

try:
  from minijax.bench.__main__ import main
except ImportError:  # run from a checkout without installing it
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  from minijax.bench.__main__ import main

if __name__ == "__main__":
  sys.exit(main())
