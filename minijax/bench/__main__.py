"""`python -m minijax.bench`: the cost of host callbacks, minijax's side by side with JAX's.

  python -m minijax.bench [--quick] [--out DIR | --json PATH --plot PATH | --no-save]
                          [--iterations N] [--payloads scalar,scalar2,1MiB] [--rounds N]
                          [--devices N] [--mechanisms native,debug,pure,jax-debug,...]
                          [--no-jax]

Runs every measurement of `minijax.bench.callbacks` in one process (interleaved rounds, so
machine drift touches all contenders alike) for minijax's taps, minijax's `debug.callback`,
`io_callback` and `pure_callback`, and JAX's same callbacks; prints one plain-text table per
measurement (median [25th-75th percentile] and the ratio to minijax native ordered) and the
project's targets; and writes the rows as JSON and a log-scale bar chart as PNG into a new
results folder, which it names on stdout (`--out DIR` chooses it; `--json`/`--plot` write
those files instead; `--no-save` writes nothing).  JAX rows appear when `jax` is importable
(the `bench` extra); without it the minijax rows are measured alone.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

QUICK = dict(iterations=200, rounds=3, dispatch_calls=50, barrier_calls=50)
RESULTS_ROOT = "minijax-bench-results"

MEASURES = [
    ("loop", "Per host call (a tap or a callback) inside a compiled fori_loop of {iterations} "
             "iterations, until every host call has run (µs per call, minus the same loop "
             "without one)"),
    ("loop_device", "Same, device side only: until the loop's result is ready, before the "
                    "barrier (µs per call)"),
    ("loop_return", "The loop's call: µs until jit(loop)(x) returns to Python, and its share "
                    "of the time until every host call has run (asynchronous dispatch returns "
                    "early; a synchronous callback holds the caller)"),
    ("throughput", "End to end: taps delivered per second to a no-op tap function "
                   "(the loop above, loop cost included)"),
    ("vmap", "The scalar loop under vmap (batch {batch}): host calls per iteration and µs per "
             "iteration over the untapped vmapped loop"),
    ("grad", "The scalar loop under grad: host calls per iteration and µs per iteration over "
             "the untapped grad"),
    ("dispatch", "Dispatch of jit(lambda x: tap(x) + 1) on a scalar: µs per call over a burst, "
                 "until results and host calls are done; x untapped is paired round by round"),
    ("barrier", "Idle barrier: effects_barrier with nothing pending (µs)"),
]


def parse_args(argv):
  from minijax.bench import callbacks as cb
  p = argparse.ArgumentParser(prog="python -m minijax.bench",
                              description=__doc__.splitlines()[0])
  p.add_argument("--quick", action="store_true",
                 help="few iterations and rounds, for CI smoke runs (under a minute)")
  p.add_argument("--iterations", type=int, help="fori_loop iterations (default 1000)")
  p.add_argument("--payloads", default="scalar,scalar2,1MiB",
                 help="comma-separated tap payload sizes: scalar, 64KiB, 1MiB, 4096 (bytes), "
                      "or scalar2 (two scalar operands)")
  p.add_argument("--rounds", "--repeats", type=int, dest="rounds",
                 help="interleaved rounds, one sample of each contender per round (default 9; "
                      "the dispatch measure takes three times as many)")
  p.add_argument("--devices", type=int, default=1,
                 help="run the loop on this many CPU devices at once (sets "
                      "MINIJAX_NUM_CPU_DEVICES and JAX's host device count)")
  p.add_argument("--batch", type=int, default=8, help="vmap batch size (default 8)")
  p.add_argument("--mechanisms", help="comma-separated subset of: " + ", ".join(cb.MECHANISM_KEYS)
                 + " (no-tap baselines are always added)")
  p.add_argument("--no-jax", action="store_true", help="leave JAX out even if installed")
  p.add_argument("--measures", default=",".join(cb.MEASURE_GROUPS),
                 help="comma-separated subset of: " + ", ".join(cb.MEASURE_GROUPS)
                 + " (loop includes its device-side and throughput rows)")
  p.add_argument("--out", metavar="DIR",
                 help="results folder for results.json and loop.png (default: a new folder "
                      f"under ./{RESULTS_ROOT}/, named on stdout)")
  p.add_argument("--json", metavar="PATH", help="write the result rows as JSON here (and no "
                                                "results folder)")
  p.add_argument("--plot", metavar="PATH", help="write the PNG bar chart here (needs "
                                                "matplotlib; no results folder)")
  p.add_argument("--no-save", action="store_true", help="print the tables only")
  args = p.parse_args(argv)
  if args.mechanisms:
    keys = [k.strip() for k in args.mechanisms.split(",") if k.strip()]
    unknown = [k for k in keys if k not in cb.MECHANISM_KEYS]
    if unknown:
      p.error(f"unknown mechanisms {unknown}; choose from {cb.MECHANISM_KEYS}")
    args.mechanisms = tuple(keys)
  args.measures = tuple(k.strip() for k in args.measures.split(",") if k.strip())
  if set(args.measures) - set(cb.MEASURE_GROUPS):
    p.error(f"unknown measures {sorted(set(args.measures) - set(cb.MEASURE_GROUPS))}; "
            f"choose from {list(cb.MEASURE_GROUPS)}")
  try:
    args.payloads = tuple(cb.parse_payload(s) for s in args.payloads.split(",") if s.strip())
  except ValueError:
    p.error(f"cannot read --payloads {args.payloads!r}")
  return args


def settings_from(args):
  from minijax.bench.callbacks import Settings
  s = Settings(payloads=args.payloads, devices=args.devices, batch=args.batch,
               mechanisms=args.mechanisms, with_jax=not args.no_jax,
               measures=args.measures)
  if args.quick:
    for k, v in QUICK.items():
      setattr(s, k, v)
  if args.iterations:
    s.iterations = args.iterations
  if args.rounds:
    s.rounds = args.rounds
  return s


def set_device_count(n: int) -> None:
  """Before any client exists: n CPU devices for minijax and for JAX."""
  if n > 1:
    os.environ["MINIJAX_NUM_CPU_DEVICES"] = str(n)
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()


# ----------------------------------------------------------------------------- output

def _cell(r: dict) -> str:
  if not r["available"]:
    return "n/a"
  if r["unit"] == "taps/s":
    return f"{r['value']:,.0f}"
  if r["median_us"] is None:
    return "-"
  digits = 1 if abs(r["median_us"]) >= 10 else 2
  return f"{r['median_us']:.{digits}f} [{r['p25_us']:.{digits}f}-{r['p75_us']:.{digits}f}]"


def _ratio(r: dict) -> str:
  ratio = r.get("ratio_vs_native")
  if ratio is None or not r["available"]:
    return ""
  return f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def tables(rows: list[dict], settings) -> str:
  """One table per measure: mechanisms down, payloads across."""
  from minijax.bench import callbacks as cb
  from minijax.bench.timing import format_table
  out = []
  for measure, title in MEASURES:
    rs = [r for r in rows if r["measure"] == measure]
    if not rs:
      continue
    payloads = list(dict.fromkeys(r["payload"] for r in rs))
    order = {m.name: i for i, m in enumerate(cb.MECHANISMS)}
    mechs = sorted(dict.fromkeys(r["mechanism"] for r in rs), key=lambda m: order.get(m, 99))
    headers = ["mechanism"]
    for p in payloads:
      label = p or "median [p25-p75]"
      if measure in ("vmap", "grad"):
        headers += ["calls/iter", f"µs/iter {label}"]
      elif measure == "throughput":
        headers += [f"taps/s {label}"]
      else:
        headers += [f"{label}", "x native"]
    headers.append("note")
    body = []
    for m in mechs:
      line, notes = [m], []
      for p in payloads:
        r = next((r for r in rs if r["mechanism"] == m and r["payload"] == p), None)
        if r is None:
          line += [""] * (1 if measure == "throughput" else 2)
          continue
        if measure in ("vmap", "grad"):
          calls = r["calls_per_iter"]
          line += ["error" if not r["available"] else
                   ("-" if calls is None else f"{calls:g}"), _cell(r)]
        elif measure == "throughput":
          line += [_cell(r)]
        else:
          line += [_cell(r), _ratio(r)]
        if r["note"]:
          notes.append((p, r["note"]))
      if len({n for _, n in notes}) == 1 and len(notes) in (1, len(payloads)):
        line.append(notes[0][1])
      else:
        line.append("; ".join(f"{p}: {n}" for p, n in notes))
      body.append(line)
    out.append(title.format(iterations=settings.iterations, batch=settings.batch))
    out.append(format_table(headers, body))
    out.append("")
  return "\n".join(out)


def _find(rows, measure, mechanism, payload="scalar"):
  return next((r for r in rows if r["measure"] == measure and r["mechanism"] == mechanism
               and r["payload"] == payload and r["available"]), None)


def targets(rows: list[dict]) -> str:
  """The project's targets for minijax native, each with what this run measured."""
  from minijax.bench.callbacks import DEBUG, JAX_DEBUG, NATIVE, PURE
  checks = []

  def check(what, value, ok, shown):
    if value is not None:
      checks.append([what, shown, "met" if ok else "MISSED"])

  loop, dev = _find(rows, "loop", NATIVE), _find(rows, "loop_device", NATIVE)
  if loop:
    check("<= 1.1 µs per scalar tap, delivered", loop["median_us"], loop["median_us"] <= 1.1,
          f"{loop['median_us']:.2f} µs")
  if dev:
    check("<= 2 µs per scalar tap, device side", dev["median_us"], dev["median_us"] <= 2,
          f"{dev['median_us']:.2f} µs")
  jax_loops = [r for r in rows if r["measure"] == "loop" and r["library"] == "jax"
               and r["payload"] == "scalar" and r["available"] and r["ratio_vs_native"]
               and not r["mechanism"].startswith("no tap")]
  if jax_loops:
    low = min(r["ratio_vs_native"] for r in jax_loops)
    check(">= 50x below every jax callback (scalar loop)", low, low >= 50, f"{low:.0f}x")
  debug, jax_debug = _find(rows, "loop", DEBUG), _find(rows, "loop", JAX_DEBUG)
  if debug:
    check("<= 3 µs per scalar debug.callback, delivered", debug["median_us"],
          debug["median_us"] <= 3, f"{debug['median_us']:.2f} µs")
  debug2 = _find(rows, "loop", DEBUG, "2 scalars")
  if debug2:
    check("<= 1.5 µs per debug.callback of two scalars, delivered", debug2["median_us"],
          debug2["median_us"] <= 1.5, f"{debug2['median_us']:.2f} µs")
  if debug and jax_debug:
    ratio = jax_debug["median_us"] / debug["median_us"]
    check(">= 50x below jax.debug.callback (scalar loop)", ratio, ratio >= 50,
          f"{ratio:.0f}x ({jax_debug['median_us']:.0f} µs)")
  pure = _find(rows, "loop", PURE)
  if pure:
    check("<= 5 µs per scalar pure_callback round trip", pure["median_us"],
          pure["median_us"] <= 5, f"{pure['median_us']:.2f} µs")
  for mech, what in ((NATIVE, "tap"), (DEBUG, "debug.callback")):
    big = _find(rows, "loop", mech, "1 MiB")
    if big:
      check(f"<= 100 µs per 1 MiB {what}, delivered", big["median_us"],
            big["median_us"] <= 100, f"{big['median_us']:.1f} µs")
  rate = _find(rows, "throughput", NATIVE)
  if rate:
    check(">= 100,000 scalar taps/s end to end", rate["value"], rate["value"] >= 1e5,
          f"{rate['value']:,.0f}/s")
  big = [r for r in rows if r["measure"] == "throughput" and r["mechanism"] == NATIVE
         and r["payload"] not in ("scalar", None) and r["available"] and r["note"]]
  for r in big:
    gbs = float(r["note"].split()[0])
    check(f">= 2 GB/s with {r['payload']} taps", gbs, gbs >= 2, f"{gbs:.2f} GB/s")
  d, d0 = _find(rows, "dispatch", NATIVE), _find(rows, "dispatch", "no tap")
  if d and d0:
    ratio = d["ratio_vs_untapped"]
    check("dispatch of a tapped function <= 2x an untapped one", ratio, ratio <= 2,
          f"{ratio:.1f}x paired by round (medians {d['median_us']:.0f} vs "
          f"{d0['median_us']:.0f} µs: {d['median_us'] / d0['median_us']:.1f}x)")
  v = _find(rows, "vmap", NATIVE)
  if v:
    check("one host call per iteration under vmap", v["calls_per_iter"],
          v["calls_per_iter"] == 1, f"{v['calls_per_iter']:g}")
  g = _find(rows, "grad", NATIVE)
  if g:
    check("taps delivered under grad", g["calls_per_iter"], g["calls_per_iter"] >= 1,
          f"{g['calls_per_iter']:g} per iteration (primal + cotangent)")
  b = _find(rows, "barrier", "minijax.effects_barrier", None)
  if b:
    check("idle effects_barrier <= 200 µs", b["median_us"], b["median_us"] <= 200,
          f"{b['median_us']:.1f} µs")
  if not checks:
    return ""
  from minijax.bench.timing import format_table
  return ("Targets for minijax native (medians of this run)\n"
          + format_table(["target", "measured", ""], checks) + "\n")


def machine() -> str:
  model = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          model = line.split(":", 1)[1].strip()
          break
  except OSError:
    pass
  return f"{os.cpu_count()} CPUs, {model}, Python {platform.python_version()}"


def _load() -> float | None:
  """The 1-minute load average: other work on the machine widens the spreads."""
  try:
    return round(os.getloadavg()[0], 2)
  except OSError:
    return None


def versions() -> dict:
  out = {}
  for name in ("jaxlib", "jax"):
    try:
      module = __import__(name)
      out[name] = getattr(module, "__version__", "?")
    except ImportError:
      out[name] = None
  return out


def write_plot(rows: list[dict], path: str) -> bool:
  """Log-scale bars of µs per host call in the loop, by mechanism, one group per payload."""
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:
    print("(matplotlib is not installed: no plot written)", file=sys.stderr)
    return False
  rs = [r for r in rows if r["measure"] == "loop" and r["available"]
        and r["median_us"] is not None and not r["mechanism"].startswith("no tap")]
  payloads = list(dict.fromkeys(r["payload"] for r in rs))
  mechs = list(dict.fromkeys(r["mechanism"] for r in rs))
  fig, ax = plt.subplots(figsize=(9, 4.8))
  width = 0.8 / max(1, len(payloads))
  for i, p in enumerate(payloads):
    xs, ys, lo, hi = [], [], [], []
    for j, m in enumerate(mechs):
      r = next((r for r in rs if r["mechanism"] == m and r["payload"] == p), None)
      if r is None:
        continue
      y = max(r["median_us"], 1e-2)
      xs.append(j + (i - (len(payloads) - 1) / 2) * width)
      ys.append(y)
      lo.append(max(0.0, y - max(r["p25_us"], 1e-2)))
      hi.append(max(0.0, r["p75_us"] - y))
    ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=p)
    for x, y, h in zip(xs, ys, hi):
      ax.text(x, (y + h) * 1.12, f"{y:.3g}", ha="center", va="bottom", fontsize=7)
  ax.set_yscale("log")
  ax.set_xticks(range(len(mechs)))
  ax.set_xticklabels(mechs, rotation=25, ha="right", fontsize=8)
  ax.set_ylabel("µs per host call (median, 25-75% whiskers)")
  ax.set_title("Host callback overhead inside a compiled loop (lower is better)\n"
               + machine(), fontsize=10)
  ax.legend(title="payload")
  ax.grid(axis="y", which="both", alpha=0.3)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return True


def main(argv=None) -> int:
  args = parse_args(argv)
  set_device_count(args.devices)
  from minijax.bench import callbacks as cb
  settings = settings_from(args)
  started, load_before = time.perf_counter(), _load()
  rows = cb.run(settings)
  elapsed, load_after = time.perf_counter() - started, _load()
  header = (f"minijax callback benchmark: {machine()}\n"
            + ", ".join(f"{k} {v or 'not installed'}" for k, v in versions().items())
            + f"; {settings.rounds} rounds ({3 * settings.rounds} for dispatch), "
            f"{settings.devices} device(s), {elapsed:.0f} s; "
            f"load average {load_before} before, {load_after} after")
  print(header)
  print()
  print(tables(rows, settings))
  print(targets(rows))
  if not any(r["library"] == "jax" for r in rows):
    print("(jax is not installed or was left out: install the `bench` extra for the JAX rows)")
  json_path, plot_path, folder = args.json, args.plot, None
  if not (json_path or plot_path or args.no_save):
    folder = args.out or os.path.join(RESULTS_ROOT, time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(folder, exist_ok=True)
    json_path, plot_path = os.path.join(folder, "results.json"), os.path.join(folder, "loop.png")
  if json_path:
    with open(json_path, "w") as f:
      json.dump({"machine": machine(), "versions": versions(),
                 "settings": {k: (list(v) if isinstance(v, tuple) else v)
                              for k, v in vars(settings).items()},
                 "elapsed_s": elapsed, "load_average": [load_before, load_after],
                 "command": "python -m minijax.bench " + " ".join(argv if argv is not None
                                                                  else sys.argv[1:]),
                 "rows": rows}, f, indent=1)
  wrote_plot = bool(plot_path) and write_plot(rows, plot_path)
  if folder is not None:
    files = "results.json" + (", loop.png" if wrote_plot else "")
    print(f"Results written to {folder}/ ({files})")
  return 0


if __name__ == "__main__":
  sys.exit(main())
