"""`python -m minijax.launch -n N script.py [args...]`: run a script in N local processes.

The launcher picks a free port on 127.0.0.1 for the coordinator and starts N copies of
itself in worker mode, one per process id.  A worker joins the distributed runtime
(`minijax.distributed`, gloo collectives) and then runs the script as `__main__`, with
`sys.argv` set to `[script, *args]`; in the script `minijax.distributed.initialize()` is a
no-op and `minijax.process_index()` tells the processes apart.  The launcher copies each
worker's output lines to its own stdout and stderr, prefixed with `[i] `.

It returns the first non-zero exit code a worker ends with (0 when all succeed), and ends
the other workers then, so that none is left waiting for a dead peer: they are sent
SIGTERM, then SIGKILL after `--grace` seconds.  On Linux a worker also dies with its
launcher (the parent-death signal), so killing the launcher leaves no orphans.
"""
from __future__ import annotations

import argparse
import os
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = ["main", "free_port"]


def free_port() -> int:
  """A TCP port on 127.0.0.1 that was free a moment ago."""
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _parse(argv):
  parser = argparse.ArgumentParser(prog="python -m minijax.launch",
                                   description="Run a script in N local minijax processes.")
  parser.add_argument("-n", "--num-processes", type=int, required=True)
  parser.add_argument("--port", type=int, default=None,
                      help="coordinator port on 127.0.0.1 (default: a free one)")
  parser.add_argument("--grace", type=float, default=5.0,
                      help="seconds between SIGTERM and SIGKILL for the other workers")
  parser.add_argument("--heartbeat-timeout", type=int, default=100)
  parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
  parser.add_argument("--coordinator", default=None, help=argparse.SUPPRESS)
  parser.add_argument("script")
  parser.add_argument("args", nargs=argparse.REMAINDER)
  return parser.parse_args(argv)


def _run_worker(opts) -> None:
  from minijax.runtime import distributed
  import minijax.distributed
  minijax.distributed.initialize(opts.coordinator, opts.num_processes, opts.worker,
                                 heartbeat_timeout_seconds=opts.heartbeat_timeout)
  distributed.state.by_launcher = True
  sys.argv = [opts.script, *opts.args]
  sys.path.insert(0, os.path.dirname(os.path.abspath(opts.script)))
  try:
    runpy.run_path(opts.script, run_name="__main__")
  except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    if code:
      _exit_now(code)
    raise
  except BaseException:
    # Exit at once: the normal exit would wait (in the distributed runtime's shutdown) for
    # peers that may be waiting for this process in a collective.
    import traceback
    traceback.print_exc()
    _exit_now(1)


def _exit_now(code: int) -> None:
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)


def _die_with_parent() -> None:
  """In the child: ask Linux to SIGKILL it when the launcher dies."""
  try:
    import ctypes
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
  except Exception:
    pass


def _pump(stream, out, prefix: str) -> None:
  binary = getattr(out, "buffer", None)
  for line in iter(stream.readline, b""):
    if binary is not None:
      binary.write(prefix.encode() + line)
      binary.flush()
    else:
      out.write(prefix + line.decode(errors="replace"))
      out.flush()
  stream.close()


def main(argv=None) -> int:
  opts = _parse(sys.argv[1:] if argv is None else argv)
  if opts.worker is not None:
    _run_worker(opts)
    return 0
  if opts.num_processes < 1:
    print("minijax.launch: -n must be at least 1", file=sys.stderr)
    return 2
  address = f"127.0.0.1:{opts.port or free_port()}"
  procs, pumps = [], []
  for i in range(opts.num_processes):
    cmd = [sys.executable, "-m", "minijax.launch", "-n", str(opts.num_processes),
           "--heartbeat-timeout", str(opts.heartbeat_timeout), "--worker", str(i),
           "--coordinator", address, opts.script, *opts.args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    procs.append(proc)
  for i, proc in enumerate(procs):  # (threads only once every worker is started)
    for stream, out in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
      t = threading.Thread(target=_pump, args=(stream, out, f"[{i}] "), daemon=True)
      t.start()
      pumps.append(t)
  code = 0
  try:
    running = list(procs)
    while running:
      for proc in list(running):
        rc = proc.poll()
        if rc is None:
          continue
        running.remove(proc)
        if rc != 0 and code == 0:
          code = rc
          _end(running, opts.grace)
          running = []
          break
      time.sleep(0.05)
  except KeyboardInterrupt:
    _end(procs, opts.grace)
    code = 130
  for t in pumps:
    t.join(timeout=5)
  return code


def _end(procs, grace: float) -> None:
  """SIGTERM, then SIGKILL whatever is still alive after `grace` seconds."""
  for proc in procs:
    if proc.poll() is None:
      proc.terminate()
  deadline = time.monotonic() + grace
  for proc in procs:
    try:
      proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()
