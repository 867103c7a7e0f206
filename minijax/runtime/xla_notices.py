"""XLA's C++ notices that say nothing to a minijax user, kept off their stderr.

minijax lowers shardings in GSPMD's form (`mhlo.sharding` attributes and `@Sharding`
custom calls, see `lowering/spmd.py`), not in the `sdy` dialect of Shardy that JAX 0.10.2
emits, so XLA's sharding propagation prints, at every compile for several devices, a
warning that GSPMD will be deprecated in favour of Shardy: advice for whoever writes the
lowering, which the user cannot act on.  `without_notices()` wraps such a compile: it sends
the process's stderr (file descriptor 2, where XLA's C++ logging writes) through a pipe,
from which a thread passes on, line by line as they come, everything except the lines of
those notices: every other warning or error printed meanwhile (by XLA or by another
thread) still reaches the user at once, the message of a check that aborts the process
included.
"""
from __future__ import annotations

import contextlib
import os
import sys
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
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    pump = threading.Thread(target=_pass_on, args=(read_end, os.dup(saved)), daemon=True,
                            name="minijax-xla-notices")
    pump.start()
    try:
      yield
    finally:
      try:
        sys.stderr.flush()
      except (AttributeError, ValueError, OSError):
        pass
      os.dup2(saved, 2)  # (closes the pipe's write end, but for copies a child inherited)
      os.close(saved)
      # The thread ends at the pipe's end of file: at once, unless a process started
      # meanwhile holds a copy of the write end; then it passes that process's lines on
      # until it exits, and the compile does not wait for it.
      pump.join(timeout=1.0)


def _pass_on(read_end: int, out: int) -> None:
  with os.fdopen(read_end, "rb") as lines, os.fdopen(out, "wb", buffering=0) as sink:
    for line in lines:
      if not any(notice in line for notice in NOTICES):
        sink.write(line)
