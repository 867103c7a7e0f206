"""The pytest plugin the conformance runner starts pytest with (`-p jax_standin.plugin`).

It reads its orders from the environment the runner sets:

- `JAX_CONFORMANCE_BACKEND`: `minijax` (install minijax as `jax`) or `jax` (JAX itself);
- `JAX_CONFORMANCE_FILE`: the JAX test file, loaded through `internals.TestFileFinder`;
- `JAX_CONFORMANCE_OUT`: a JSON-lines file that gets one line as each test starts and one
  with its outcome as it ends (so a crash or a hang loses one test, not the file);
- `JAX_CONFORMANCE_SKIP`: a JSON file with the test ids not to run (left out, or done
  before a crash); `JAX_CONFORMANCE_SAMPLE` `k/n`: run the tests whose id's CRC32 modulo n
  is below k; `JAX_CONFORMANCE_TIMEOUT`: seconds per test.
"""
from __future__ import annotations

import faulthandler
import json
import os
import re
import signal
import sys
import zlib

import pytest

_out = None


def _write(record) -> None:
  _out.write(json.dumps(record) + "\n")
  _out.flush()


def test_id(nodeid: str) -> str:
  """`tests/api_test.py::APITest::test_x` -> `APITest::test_x`."""
  return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def pytest_configure(config):
  global _out
  _out = open(os.environ["JAX_CONFORMANCE_OUT"], "a")
  from absl import flags
  if not flags.FLAGS.is_parsed():
    flags.FLAGS(["pytest"], known_only=True)
  if os.environ.get("JAX_CONFORMANCE_BACKEND", "minijax") == "minijax":
    import minijax
    minijax.install_as_jax()
    from jax_standin import internals
    internals.LENIENT[0] = True
  else:
    import jax
    assert not hasattr(jax, "__minijax__"), "JAX mode needs the real jax"
  from jax_standin import internals
  internals.install_test_files([os.environ["JAX_CONFORMANCE_FILE"]])


def pytest_collection_modifyitems(session, config, items):
  skip = set()
  if os.environ.get("JAX_CONFORMANCE_SKIP"):
    with open(os.environ["JAX_CONFORMANCE_SKIP"]) as f:
      skip = set(json.load(f))
  sample = os.environ.get("JAX_CONFORMANCE_SAMPLE")
  k, n = map(int, sample.split("/")) if sample else (1, 1)
  keep, drop = [], []
  for item in items:
    tid = test_id(item.nodeid)
    sampled = zlib.crc32(tid.encode()) % n < k
    (keep if sampled and tid not in skip else drop).append(item)
  if drop:
    config.hook.pytest_deselected(items=drop)
  items[:] = keep
  _write({"collected": len(keep)})
  from jax_standin.internals import MISSING_AT_IMPORT, FLAGS_AT_IMPORT
  if MISSING_AT_IMPORT:
    _write({"missing_at_import": sorted(set(MISSING_AT_IMPORT))})
  _write({"flags_at_import": FLAGS_AT_IMPORT})


def pytest_collectreport(report):
  if report.failed:
    _write({"collect_error": report.longreprtext[-4000:]})


class TestTimeout(Exception):
  pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
  timeout = int(os.environ.get("JAX_CONFORMANCE_TIMEOUT", "0"))
  _write({"start": test_id(item.nodeid)})
  if timeout:
    # A hang the alarm cannot interrupt (native code holding on) ends the process; the
    # runner records this test as timed out and resumes after it.
    faulthandler.dump_traceback_later(2 * timeout + 30, exit=True)
  try:
    yield
  finally:
    if timeout:
      faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
  timeout = int(os.environ.get("JAX_CONFORMANCE_TIMEOUT", "0"))
  if timeout:
    def on_alarm(signum, frame):
      raise TestTimeout(f"test exceeded the per-test timeout of {timeout} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)
  try:
    yield
  finally:
    if timeout:
      signal.alarm(0)
      signal.signal(signal.SIGALRM, old)


_results: dict = {}


def _message(report) -> str:
  if report.skipped:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):
      return str(longrepr[2]).removeprefix("Skipped: ")
    return getattr(report, "wasxfail", "") or str(longrepr)
  crash = getattr(report.longrepr, "reprcrash", None)
  text = crash.message if crash is not None else str(report.longrepr)
  placeholder = re.search(r"<stand-in for JAX internal ([^>]*)>", text)
  if placeholder and "needs JAX internals" not in text:  # e.g. assertIs(x, placeholder)
    return f"needs JAX internals: {placeholder[1]} (compared with)"
  lacking = re.search(r"<placeholder for ([^>]*), which minijax lacks>", text)
  if lacking and "minijax lacks" not in text.split("<placeholder")[0]:
    return f"minijax lacks {lacking[1]} (compared with)"
  return text.strip().splitlines()[0][:300] if text.strip() else ""


def pytest_runtest_logreport(report):
  tid = test_id(report.nodeid)
  outcome = _results.get(tid)
  if report.when == "setup":
    if report.failed:
      outcome = ("error", _message(report))
    elif report.skipped:
      outcome = ("skipped", _message(report))
  elif report.when == "call":
    if hasattr(report, "wasxfail"):
      outcome = ("skipped", "expected failure") if report.skipped else ("failed", "unexpected success")
    elif report.passed:
      outcome = ("passed", "")
    else:
      outcome = ("failed" if report.failed else "skipped", _message(report))
  elif report.when == "teardown" and report.failed and outcome and outcome[0] == "passed":
    outcome = ("error", "teardown: " + _message(report))
  _results[tid] = outcome
  if report.when == "teardown":
    status, message = outcome or ("error", "no outcome")
    _write({"id": tid, "outcome": status, "message": message,
            "seconds": round(getattr(report, "duration", 0.0), 3)})


def pytest_sessionfinish(session, exitstatus):
  from jax_standin.internals import PUBLIC_USED
  _write({"public_names": PUBLIC_USED})
  try:
    from jax_standin.test_util import MISSING_FLAGS
    if MISSING_FLAGS:
      _write({"missing_flags": sorted(MISSING_FLAGS)})
  except Exception:  # the test file may not have imported the stand-in at all
    pass
  _out.flush()
  sys.stdout.flush()
