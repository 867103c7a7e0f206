"""The multi-device tests: tests/four_devices/*_cases.py need a client with 4 CPU devices,
and the device count is fixed when the client is created, so they run together in one
fresh interpreter with MINIJAX_NUM_CPU_DEVICES=4 (one pytest run: one import, one client,
shared compiled programs).  Their names keep this run from collecting them."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

CASES = ["tests/four_devices/collectives_cases.py", "tests/four_devices/sharding_cases.py",
         "tests/four_devices/shard_map_cases.py",
         "tests/four_devices/callback_sharding_cases.py",
         "tests/four_devices/placement_cases.py", "tests/four_devices/checkify_cases.py"]


def _run_on_four_devices(cases, mechanism: str) -> None:
  env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="4", MINIJAX_TAP_MECHANISM=mechanism)
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "-o", "addopts=", "-rfE", *cases], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=600)
  report = "\n".join(line for line in proc.stdout.splitlines()
                     if not line.startswith(("I1201", "W1201")))
  assert proc.returncode == 0, report[-8000:]
  assert " passed" in report and "failed" not in report


def test_the_parallel_cases_pass_on_four_cpu_devices():
  _run_on_four_devices(CASES, "native")


def test_taps_and_host_calls_over_four_devices_work_under_the_callback_mechanism():
  # jaxlib's Python callback is told which device runs it by an operand (the partition id),
  # and a host function that compiles something runs on an XLA worker thread
  _run_on_four_devices(["tests/four_devices/callback_sharding_cases.py",
                        "tests/four_devices/shard_map_cases.py"], "callback")
