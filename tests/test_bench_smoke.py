"""Smoke test of the callback benchmark: `python -m minijax.bench --quick --json PATH` runs in a
subprocess (in the test environment, where jax is absent) and its JSON holds every row; by
default it writes its JSON and PNG into a results folder it names on stdout."""
from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MINIJAX_MECHANISMS = ["minijax native ordered", "minijax native unordered", "minijax callback",
                      "minijax debug.callback", "minijax io_callback ordered",
                      "minijax io_callback unordered", "minijax pure_callback",
                      "minijax pure_callback (jaxlib callback)"]
TAPPED_MEASURES = ["loop", "loop_device", "loop_return", "throughput", "vmap", "grad",
                   "dispatch"]


def test_quick_benchmark_writes_every_row_as_json(tmp_path):
  out = tmp_path / "bench.json"
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  proc = subprocess.run(
      [sys.executable, "-m", "minijax.bench", "--quick", "--iterations", "100",
       "--payloads", "scalar,64KiB", "--json", str(out), "--plot", str(tmp_path / "p.png")],
      cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "Per host call (a tap or a callback) inside a compiled fori_loop" in proc.stdout
  assert "Results written to" not in proc.stdout  # --json and --plot say where
  assert "round" in proc.stderr  # the progress line
  data = json.loads(out.read_text())
  rows = data["rows"]
  from minijax.bench.callbacks import ROW_KEYS
  assert all(set(r) == set(ROW_KEYS) for r in rows)
  have = {(r["measure"], r["mechanism"], r["payload"]) for r in rows}
  for mech in MINIJAX_MECHANISMS:
    for payload in ("scalar", "64 KiB"):
      assert ("loop", mech, payload) in have
      assert ("loop_device", mech, payload) in have
      assert ("loop_return", mech, payload) in have
      assert ("throughput", mech, payload) in have
    for measure in ("vmap", "grad", "dispatch"):
      assert (measure, mech, "scalar") in have
  assert ("loop", "no tap", "scalar") in have and ("dispatch", "no tap", "scalar") in have
  assert ("barrier", "minijax.effects_barrier", None) in have
  for r in rows:
    if r["library"] == "minijax" and r["measure"] in TAPPED_MEASURES:
      # minijax rows must be measured, or say why not.
      assert r["available"] or r["note"], r
    if r["available"] and r["measure"] not in ("throughput",):
      assert r["median_us"] is not None and r["p25_us"] <= r["median_us"] <= r["p75_us"], r
  native = [r for r in rows if r["mechanism"] == "minijax native ordered" and r["measure"] == "loop"]
  assert all(r["ratio_vs_native"] == 1.0 for r in native)
  # jax rows are either absent (jax not installed) or present with a value or a reason.
  for r in rows:
    if r["library"] == "jax":
      assert r["available"] or r["note"]


def test_payload_sizes_and_error_reasons_read_and_print_as_users_write_them():
  from minijax.bench.callbacks import parse_payload, payload_label, select_mechanisms, short_reason
  assert [parse_payload(s) for s in ("scalar", "1MiB", "64 KiB", "4096")] == [4, 1 << 20, 65536, 4096]
  assert [payload_label(n) for n in (4, 1 << 20, 65536, 1000)] == ["scalar", "1 MiB", "64 KiB", "1000 B"]
  reason = short_reason(ValueError("Cannot `vmap` ordered IO callback. More text follows here."))
  assert reason == "ValueError: Cannot `vmap` ordered IO callback."
  assert len(short_reason(RuntimeError("x" * 500))) <= 100
  keys = [m.key for m in select_mechanisms(["callback", "jax-debug"], with_jax=False)]
  assert keys == ["none", "callback"]  # the baseline comes along, jax rows are left out


def test_by_default_the_results_go_to_a_new_folder_named_on_stdout(tmp_path):
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  proc = subprocess.run(
      [sys.executable, "-m", "minijax.bench", "--quick", "--no-jax", "--measures", "barrier"],
      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = next(l for l in proc.stdout.splitlines() if l.startswith("Results written to "))
  folder = tmp_path / line.removeprefix("Results written to ").split("/ (")[0]
  assert folder.parent.name == "minijax-bench-results"
  data = json.loads((folder / "results.json").read_text())
  assert data["command"] == "python -m minijax.bench --quick --no-jax --measures barrier"
  assert [r["mechanism"] for r in data["rows"]] == ["minijax.effects_barrier"]
