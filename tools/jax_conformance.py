#!/usr/bin/env python
"""Run JAX 0.10.2's own test files against minijax, beside JAX's figures.

    python tools/jax_conformance.py --jax-src ~/jax api pmap random --failures

Each test file (a path, or a name looked up in `<jax-src>/tests`) runs with pytest in a
subprocess, `import jax` answered by minijax (`minijax.install_as_jax`), its
`jax._src.test_util` by the stand-in in `tools/jax_standin/`, and its other `jax._src`
imports by placeholders that fail only the tests that use them.  The runner prints per file
passed / failed / skipped / errors beside JAX's figures and how many of the tests JAX
passes minijax passes too; `--failures` lists those tests grouped by the first line of
their error.

`--jax` runs the file with JAX itself through the same stand-ins and records each test's
outcome in `tools/jax_conformance_results.json`, so that the comparison needs no JAX
installed.  Tests that fail under JAX with `needs JAX internals` are recorded there as left
out (with the internal they use as the reason), as are those in `LEFT_OUT` below; both
sides skip them.

A test that hangs past `--timeout` is stopped (SIGALRM, or the process ends and the runner
resumes the file after it); a crash of the process loses that one test, recorded as such.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
RESULTS = os.path.join(TOOLS, "jax_conformance_results.json")
JAX_VERSION = "0.10.2"

# Tests left out on both sides, by hand, with the reason (besides those the JAX run finds
# failing with `needs JAX internals`, recorded in RESULTS).
LEFT_OUT: dict[str, dict[str, str]] = {
    "debugging_primitives_test.py": {
        f"DebugPrintTransformationTest::test_remat_of_debug_print{i}":
            "a remat policy compares primitives with jax._src.ad_checkpoint.name_p by identity"
        for i in (0, 1)},
    # JAX 0.4.34's host_callback tests (run by path, no JAX figures recorded)
    "host_callback_test.py": {
        "HostCallbackCallTest::test_primitive_compilation":
            "counts JAX's private primitive-compile cache (jtu.count_primitive_compiles); "
            "minijax's tests/test_host_callback_semantics.py checks the behaviour on its "
            "compile log"},
}

SOURCE_DISTRIBUTION = re.compile(r"[A-Za-z][\w.-]*-\d+(\.\d+)+")  # an unpacked sdist's folder: flax-0.12.8

OUTCOMES = ("passed", "failed", "skipped", "error")


def resolve_file(name: str, jax_src: str | None) -> str:
  if os.path.exists(name):
    return os.path.abspath(name)
  if jax_src is None:
    sys.exit(f"{name!r} is not a file; name a JAX source checkout with --jax-src DIR "
             "(or the JAX_SRC environment variable) to look it up in DIR/tests")
  base = name if name.endswith(".py") else (name if name.endswith("_test") else name + "_test") + ".py"
  path = os.path.join(jax_src, "tests", base)
  if not os.path.exists(path):
    sys.exit(f"no test file {path}")
  return path


def file_key(path: str) -> str:
  """The name a file's outcomes are recorded under: its base name for JAX's test files, its
  path inside site-packages for an installed library's (`optax/_src/alias_test.py`), whose
  base names repeat across libraries, and its path from an unpacked source distribution's
  folder for the tests a library ships only there (`flax-0.12.8/tests/struct_test.py`)."""
  parts = path.replace(os.sep, "/").split("/site-packages/")
  if len(parts) > 1:
    return parts[1]
  folders = path.replace(os.sep, "/").split("/")
  for i, folder in enumerate(folders[:-1]):
    if SOURCE_DISTRIBUTION.fullmatch(folder):
      return "/".join(folders[i:])
  return os.path.basename(path)


def library_paths(path: str) -> list[str]:
  """Where a library's own test runs import from, for a test file in an unpacked source
  distribution: the file's folder (`from utils import ...`) and the distribution's top
  folder (`from tests import ...`)."""
  folders = os.path.dirname(os.path.abspath(path)).split(os.sep)
  for i, folder in enumerate(folders):
    if SOURCE_DISTRIBUTION.fullmatch(folder):
      return [os.sep.join(folders), os.sep.join(folders[:i + 1])]
  return []


def requested_devices(path: str) -> int:
  """The CPU devices the file asks for (`jtu.request_cpu_devices(N)`), else 1."""
  text = open(path).read()
  found = re.findall(r"(?:request_cpu_devices|set_host_platform_device_count)\((\d+)\)", text)
  return max(map(int, found), default=1)


def load_results() -> dict:
  if os.path.exists(RESULTS):
    with open(RESULTS) as f:
      return json.load(f)
  return {"about": f"JAX {JAX_VERSION}'s outcomes on its own test files through the runner's "
                   "stand-ins (tools/jax_conformance.py --jax); written by the runner",
          "jax_version": JAX_VERSION, "files": {}}


def left_out_of(results: dict, base: str, jax_mode: bool) -> dict[str, str]:
  """The tests not run: LEFT_OUT's, and those the JAX run found needing JAX internals (a
  `--jax` run of the whole file finds them again)."""
  recorded = results["files"].get(base, {}).get("left_out", {})
  return {**({} if jax_mode else recorded), **LEFT_OUT.get(base, {})}


def run_file(path: str, backend: str, args, skip: set[str], jax_entry: dict
             ) -> tuple[dict, list[str], dict]:
  """Runs one test file; returns ({test id: (outcome, message)}, notes, what to record).

  `jax_entry` is what the JAX run recorded: if the file does not import, each of its tests
  is recorded as an error; the values JAX had for the flags the file reads at import, and
  the public names JAX answered its `jax._src` names with, are handed to the stand-ins."""
  expected = jax_outcomes(jax_entry)
  devices = args.devices or requested_devices(path)
  results: dict[str, tuple[str, str]] = {}
  notes: list[str] = []
  flags: dict = {}
  public: dict = {}
  with tempfile.TemporaryDirectory(prefix="jax_conformance_") as tmp:
    out = os.path.join(tmp, "results.jsonl")
    skip_file = os.path.join(tmp, "skip.json")
    env = dict(os.environ)
    env.update(
        JAX_CONFORMANCE_BACKEND=backend, JAX_CONFORMANCE_FILE=path, JAX_CONFORMANCE_OUT=out,
        JAX_CONFORMANCE_SKIP=skip_file, JAX_CONFORMANCE_TIMEOUT=str(args.timeout),
        PYTHONPATH=os.pathsep.join([*library_paths(path), TOOLS, ROOT, env.get("PYTHONPATH", "")]
                                   ).rstrip(os.pathsep),
        JAX_PLATFORMS="cpu", JAX_PLATFORM_NAME="cpu",
        JAX_CONFORMANCE_JAX_FLAGS=json.dumps(jax_entry.get("flags_at_import", {})),
        JAX_CONFORMANCE_JAX_PUBLIC=json.dumps(jax_entry.get("public_names", {})))
    if devices > 1:  # (one is minijax's default: a file may then ask with XLA_FLAGS, as of JAX)
      env["MINIJAX_NUM_CPU_DEVICES"] = str(devices)
    if args.devices:  # explicit: both backends get exactly this many
      env["JAX_CONFORMANCE_DEVICES"] = str(devices)
      env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                          f" --xla_force_host_platform_device_count={devices}").strip()
    if args.sample:
      env["JAX_CONFORMANCE_SAMPLE"] = args.sample
    command = [sys.executable, "-m", "pytest", path, "-p", "jax_standin.plugin",
               "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
               "--noconftest", "--assert=plain", "-q", "--rootdir", tmp, "-o", "addopts="]
    if args.k:
      command += ["-k", args.k]
    start = time.time()
    seen: list = []
    for attempt in range(1000):
      with open(skip_file, "w") as f:
        json.dump(sorted(skip | set(results)), f)
      log_path = os.path.join(tmp, f"pytest{attempt}.log")
      with open(log_path, "w") as log:
        proc = subprocess.run(command, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
      started, progress = None, False
      with open(out) as f:
        for line in f:
          record = json.loads(line)
          if "start" in record:
            started = record["start"]
          elif "id" in record:
            if record["id"] not in results:
              progress = True
            results[record["id"]] = (record["outcome"], record["message"])
            started = None
          elif "collect_error" in record:
            notes.append("the file did not import:\n" + record["collect_error"])
          elif "flags_at_import" in record:
            flags.update(record["flags_at_import"])
          elif "public_names" in record:
            public.update(record["public_names"])
          elif "missing_at_import" in record and record["missing_at_import"] not in seen:
            seen.append(record["missing_at_import"])
            notes.append("the file imports with placeholders for what minijax lacks (the "
                         "tests using them fail): " + ", ".join(record["missing_at_import"]))
          elif "missing_flags" in record:
            notes.append("config flags the backend lacks (set by the stand-in's JaxTestCase, "
                         "ignored): " + ", ".join(record["missing_flags"]))
      open(out, "w").close()
      if started is not None:  # the process died inside this test
        took = "timeout" if proc.returncode == 1 and "Timeout" in open(log_path).read()[-20000:] \
            else f"exit code {proc.returncode}"
        results[started] = ("error", f"the test process died ({took}): "
                            + _last_line(log_path))
        continue
      if proc.returncode not in (0, 1, 5) and not progress and not notes:
        notes.append(f"pytest exited with {proc.returncode}:\n" + open(log_path).read()[-3000:])
      break
  if not results and any(n.startswith("the file did not import") for n in notes):
    last = [l for l in notes[0].splitlines() if l.startswith("E ")][-1:] or ["?"]
    results = {tid: ("error", "the file did not import: " + last[0][2:].strip())
               for tid in expected}
  notes = list(dict.fromkeys(notes))
  notes.append(f"{devices} CPU device(s), {time.time() - start:.0f} s")
  return results, notes, {"flags_at_import": flags, "public_names": public}


def _last_line(log_path: str) -> str:
  lines = [l for l in open(log_path).read().splitlines() if l.strip()]
  return lines[-1][:200] if lines else ""


def counts(results: dict) -> dict[str, int]:
  c = collections.Counter(outcome for outcome, _ in results.values())
  return {o: c.get(o, 0) for o in OUTCOMES}


def cause(message: str) -> str:
  """The group a failure goes in: its first line with addresses and numbers blurred."""
  text = message.replace("jax_standin.internals.", "")
  while re.search(r"<[^<>]*>", text):  # reprs: <axis name of pmap(<lambda>)>, <function ...>
    text = re.sub(r"<[^<>]*>", "\u27e8\u27e9", text)
  text = text.replace("\u27e8\u27e9", "<…>")
  text = re.sub(r"0x[0-9a-fA-F]+", "0x…", text)
  text = re.sub(r"(?<![A-Za-z_])\d+(\.\d+)?", "N", text)
  return text[:140]


def group_failures(mine: dict, jax: dict) -> list[tuple[str, list[str]]]:
  groups = collections.defaultdict(list)
  for tid, outcome in sorted(jax.items()):
    if outcome == "passed" and tid in mine and mine[tid][0] != "passed":
      status, message = mine[tid]
      groups[f"[{status}] {cause(message)}" if status != "failed" else cause(message)].append(tid)
  return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def jax_outcomes(entry: dict) -> dict[str, str]:
  return {tid: (v if isinstance(v, str) else v[0]) for tid, v in entry.get("tests", {}).items()}


def record_jax(results_db: dict, base: str, results: dict, devices: int, partial: bool,
               found: dict) -> None:
  results_db.update(load_results())  # what other runs recorded meanwhile stays
  entry = results_db["files"].setdefault(base, {"tests": {}, "left_out": {}})
  if not partial:
    entry["tests"], entry["left_out"] = {}, {}
  entry["devices"] = devices
  for key, values in found.items():  # flags read at import; public names used
    old = entry.get(key, {}) if partial else {}
    entry[key] = dict(sorted({**old, **values}.items()))
  for tid, (outcome, message) in sorted(results.items()):
    if "needs JAX internals: " in message:
      entry["left_out"][tid] = message[message.index("needs JAX internals: "):]
      entry["tests"].pop(tid, None)
    else:
      entry["tests"][tid] = outcome if outcome == "passed" else [outcome, message[:160]]
  entry["tests"] = dict(sorted(entry["tests"].items()))
  entry["left_out"] = dict(sorted(entry["left_out"].items()))
  with open(RESULTS, "w") as f:
    json.dump(results_db, f, indent=0, sort_keys=False)
    f.write("\n")


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("files", nargs="+", help="JAX test files: paths, or names such as "
                      "`api` or `pmap_test.py` looked up in <jax-src>/tests")
  parser.add_argument("--jax-src", default=os.environ.get("JAX_SRC"),
                      help="a JAX source checkout (default: $JAX_SRC)")
  parser.add_argument("--jax", action="store_true", help="run with JAX itself through the "
                      "same stand-ins and record its outcomes in " + os.path.relpath(RESULTS, ROOT))
  parser.add_argument("--no-record", action="store_true", help="with --jax: do not record")
  parser.add_argument("-k", help="pytest's -k expression: run only the matching tests")
  parser.add_argument("--devices", type=int, help="CPU devices (default: what the file asks "
                      "for with jtu.request_cpu_devices, else 1)")
  parser.add_argument("--timeout", type=int, default=120, help="seconds per test (default 120)")
  parser.add_argument("--sample", help="K/N: run the tests whose id hashes (CRC32 mod N) below "
                      "K, a deterministic sample; both sides are compared on it")
  parser.add_argument("--failures", action="store_true", help="list the tests JAX passes and "
                      "minijax does not, grouped by the first line of their error")
  parser.add_argument("--top", type=int, default=15, help="groups of failures listed per file")
  parser.add_argument("--json", help="write minijax's per-test outcomes to this file")
  parser.add_argument("--saved", help="report minijax's outcomes saved by an earlier --json "
                      "instead of running the files")
  parser.add_argument("--markdown", help="append the figures (a table) and the report to this "
                      "file")
  args = parser.parse_args(argv)

  results_db = load_results()
  summary, dump, report = [], {}, []

  def say(text=""):
    print(text)
    report.append(text)

  for name in args.files:
    path = resolve_file(name, args.jax_src)
    base = file_key(path)
    left_out = left_out_of(results_db, base, args.jax and not (args.k or args.sample))
    backend = "jax" if args.jax else "minijax"
    entry = results_db["files"].get(base, {})
    if args.saved:  # outcomes saved by an earlier run's --json, reported again
      with open(args.saved) as f:
        results = {tid: tuple(v) for tid, v in json.load(f)[base].items()}
      notes, found = [f"outcomes read from {args.saved}"], {}
    else:
      results, notes, found = run_file(path, backend, args, set(left_out),
                                       {} if args.jax else entry)
    say(f"\n== {base} ({backend}; {notes[-1]})")
    for note in notes[:-1]:
      say("  " + note.replace("\n", "\n    "))
    if args.jax:  # what needs JAX internals is left out, not counted
      internal = {t for t, (_, m) in results.items() if "needs JAX internals: " in m}
      left_out = {**left_out, **{t: results[t][1] for t in internal}}
      mine = counts({t: v for t, v in results.items() if t not in internal})
    else:
      mine = counts(results)
    say(f"  {backend:8s} " + "  ".join(f"{o} {mine[o]}" for o in OUTCOMES)
        + f"  (left out, need JAX internals: {len(left_out)})")
    if args.jax:
      if not args.no_record:
        record_jax(results_db, base, results, args.devices or requested_devices(path),
                   partial=bool(args.k or args.sample), found=found)
        say(f"  recorded in {os.path.relpath(RESULTS)}")
      summary.append((base, mine, None, None))
      continue
    dump[base] = {tid: list(v) for tid, v in sorted(results.items())}
    jax = {t: o for t, o in jax_outcomes(entry).items() if t not in left_out}
    if not jax:
      say("  (no JAX figures recorded for this file: run it once with --jax)")
      summary.append((base, mine, None, None))
      continue
    if args.k:  # only the tests both sides ran
      jax = {tid: o for tid, o in jax.items() if tid in results}
    elif args.sample:
      k, n = map(int, args.sample.split("/"))
      jax = {tid: o for tid, o in jax.items() if zlib.crc32(tid.encode()) % n < k}
    for tid in jax:
      results.setdefault(tid, ("error", "not run on minijax (not collected)"))
    theirs = counts({tid: (o, "") for tid, o in jax.items()})
    both = sum(1 for tid, o in jax.items() if o == "passed" and results[tid][0] == "passed")
    say(f"  {'JAX':8s} " + "  ".join(f"{o} {theirs[o]}" for o in OUTCOMES))
    pct = 100 * both / max(theirs["passed"], 1)
    say(f"  of the {theirs['passed']} tests JAX passes, minijax passes {both} ({pct:.0f}%)")
    extra = sum(1 for tid, o in jax.items() if o != "passed" and results[tid][0] == "passed")
    if extra:
      say(f"  ({extra} tests pass on minijax that JAX does not pass)")
    summary.append((base, mine, theirs, both))
    if args.failures:
      groups = group_failures(results, jax)
      say(f"  JAX passes, minijax does not: {sum(len(t) for _, t in groups)} tests, "
          f"{len(groups)} causes")
      for message, tids in groups[:args.top]:
        say(f"    {len(tids):4d}  {message}\n          e.g. {tids[0]}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dump, f, indent=0)
  table = ["| file | passed | failed | skipped | errors | JAX passed | minijax passes of those |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
  for base, mine, theirs, both in summary:
    row = f"| {base} | " + " | ".join(str(mine[o]) for o in OUTCOMES)
    if theirs is not None:
      row += f" | {theirs['passed']} | {both} ({100 * both / max(theirs['passed'], 1):.0f}%) |"
    else:
      row += " | | |"
    table.append(row)
  if len(summary) > 1:
    print("\n" + "\n".join(table))
  if args.markdown:
    with open(args.markdown, "a") as f:
      f.write("\n".join(table) + "\n\n```text" + "\n".join(report) + "\n```\n")
  return 0


if __name__ == "__main__":
  sys.exit(main())
