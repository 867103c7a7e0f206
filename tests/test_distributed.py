"""Two processes on jaxlib's distributed runtime (2 CPU devices each, gloo over localhost):
`python -m minijax.launch -n 2 tests/distributed_worker.py` runs a pmap whose psum,
all_gather and axis_index cross the processes and whose taps arrive in the process of their
device.  Every run is bounded by a timeout, its coordinator port is a free one, and when a
process fails the others are ended (by the launcher, or by the runtime's heartbeat check)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from minijax.launch import free_port
from tests.conftest import ROOT

WORKER = os.path.join("tests", "distributed_worker.py")


def _env():
  env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="2", MINIJAX_TAP_MECHANISM="native")
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  return env


def _launch(*args, timeout=120):
  return subprocess.run([sys.executable, "-m", "minijax.launch", "-n", "2", WORKER, *args],
                        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


def _reports(stdout: str) -> dict:
  """`process -> [json objects it printed]`, from the launcher's `[i] `-prefixed lines."""
  out: dict = {}
  for line in stdout.splitlines():
    if line[:1] == "[" and "] {" in line:
      index, _, payload = line.partition("] ")
      out.setdefault(int(index[1:]), []).append(json.loads(payload))
  return out


def _gone(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return True
  return False


def test_collectives_cross_processes_and_taps_arrive_in_each_process():
  proc = _launch()
  assert proc.returncode == 0, proc.stderr[-4000:]
  reports = _reports(proc.stdout)
  assert sorted(reports) == [0, 1]
  for index, (_, seen) in sorted(reports.items()):
    assert seen["process_index"] == index and seen["process_count"] == 2
    assert seen["devices"] == [0, 1, 2048, 2049]
    assert seen["local_devices"] == [[0, 1], [2048, 2049]][index]
    assert seen["counts"] == [4, 2] and seen["initialized"] is True
    assert seen["psum"] == [22.0, 22.0]  # 0 + 1 + 10 + 11, over both processes
    assert seen["all_gather"] == [[0.0, 1.0, 10.0, 11.0]] * 2
    assert seen["axis_index"] == [[0, 1], [2, 3]][index]
    assert seen["taps"] == [[[0, 0.0], [1, 1.0]], [[2048, 10.0], [2049, 11.0]]][index]
    # blocks b_k = [2k, 2k + 1] + 28 * k (the psum of all blocks is 28)
    assert seen["shard_map_blocks"] == [{"0": [0.0, 1.0], "1": [30.0, 31.0]},
                                        {"2048": [60.0, 61.0], "2049": [90.0, 91.0]}][index]
    assert seen["fully_addressable"] is False
    assert seen["multihost"] == {
        "stacked": [[0, 7], [1, 7]], "tiled": [0, 1], "from_0": [5.0], "from_1": 3,
        "unequal_raised": True, "global_shape": [4],
        "global_blocks": [{"0": [0.0], "1": [1.0]}, {"2048": [2.0], "2049": [3.0]}][index],
        "gathered_global": [0.0, 1.0, 2.0, 3.0], "host_local": [[0.0, 1.0], [2.0, 3.0]][index]}
    assert seen["jax_imported"] is False


def test_gloo_is_the_cpu_collectives_implementation_under_jaxs_name_too():
  import minijax
  assert minijax.config.cpu_collectives_implementation == "gloo"
  minijax.config.update("jax_cpu_collectives_implementation", "gloo")
  assert minijax.config.cpu_collectives_implementation == "gloo"


def test_the_launcher_returns_the_failing_exit_code_and_ends_the_other_process():
  proc = _launch("fail")
  assert proc.returncode == 3
  pids = [r[0]["pid"] for _, r in sorted(_reports(proc.stdout).items())]
  assert len(pids) == 2 and all(_gone(pid) for pid in pids)


def test_without_the_launcher_a_dead_peer_ends_the_other_process_within_the_heartbeat_timeout():
  address = f"127.0.0.1:{free_port()}"
  procs = [subprocess.Popen(
      [sys.executable, "-m", "minijax.launch", "-n", "2", "--heartbeat-timeout", "3",
       "--worker", str(i), "--coordinator", address, WORKER, "fail"],
      cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
      for i in range(2)]
  try:
    outs = [p.communicate(timeout=90)[0] for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  assert procs[1].returncode == 3
  assert procs[0].returncode != 0
  assert "another task died" in outs[0] and "stopped sending heartbeats" in outs[0]
