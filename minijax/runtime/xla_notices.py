"""XLA's C++ notices that say nothing to a minijax user, kept off their stderr.

minijax lowers shardings in GSPMD's form (`mhlo.sharding` attributes and `@Sharding`
custom calls, see `lowering/spmd.py`), not in the `sdy` dialect of Shardy that JAX 0.10.2
emits, so XLA's sharding propagation prints, at every compile for several devices, a
warning that GSPMD will be deprecated in favour of Shardy: advice for whoever writes the
lowering, which the user cannot act on.  `without_notices()` wraps such a compile: it sends
the process's stderr (file descriptor 2, where XLA's C++ logging writes) to a temporary
file and, afterwards, writes back everything except the lines of those notices, so every
other warning or error printed meanwhile (by XLA or by another thread) still reaches the
user, only delayed until the compile returns.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading

# Substrings of the lines dropped.
NOTICES = (b"GSPMD sharding propagation is going to be deprecated",)

_lock = threading.Lock()


@contextlib.contextmanager
def without_notices():
  with _lock:
    for stream in (sys.stdout, sys.stderr):
      try:
        stream.flush()
      except (AttributeError, ValueError, OSError):
        pass
    try:
      saved = os.dup(2)
    except OSError:  # no stderr to filter
      yield
      return
    with tempfile.TemporaryFile() as captured:
      os.dup2(captured.fileno(), 2)
      try:
        yield
      finally:
        try:
          sys.stderr.flush()
        except (AttributeError, ValueError, OSError):
          pass
        os.dup2(saved, 2)
        os.close(saved)
        captured.seek(0)
        kept = [line for line in captured.read().splitlines(keepends=True)
                if not any(notice in line for notice in NOTICES)]
        if kept:
          os.write(2, b"".join(kept))
