#!/usr/bin/env python
"""Run JAX 0.10.2's primitive harnesses on minijax and compare every value with JAX's.

    python tools/jax_harnesses.py [--only scatter] [--sample 1/10] [--failures]

JAX ships its test harnesses in the wheel (`jax._src.internal_test_util.test_harnesses`):
some 5,600 programs, one or a few per primitive and case (dtypes, shapes, dimension numbers,
modes), that JAX's own export and conversion tests run; beside them, the cases of
lax_test's `testOp` (the op records of `lax_test_util.lax_ops()` at its shapes and dtypes),
named `lax_op_...`.  They are the referee for "no value differs from JAX's": the runner
needs JAX installed (the `ecosystem` extra brings it) and

1. runs each harness that JAX runs on the CPU with JAX itself, in one subprocess, under
   `jit`, keeping its arguments (drawn by JAX's own random generators) and its outputs;
2. loads the same harness file in a second subprocess with minijax installed as `jax` (its
   `jax._src` imports answered by the conformance runner's stand-ins, `tools/jax_standin`),
   runs each harness on JAX's arguments under `jit` and compares:

   - `match`: the same tree of outputs, shapes and dtypes, values within JAX's default test
     tolerance for the dtype (`jtu.default_tolerance`; integers and booleans exactly);
   - `differs`: a value, shape or dtype differs (the worst element and its ulps are shown);
   - `error`: minijax raises where JAX computes;
   - `internal`: the harness binds a JAX primitive with JAX's private parameters, or uses
     another `jax._src` object (left out, as the conformance runner leaves such tests out;
     JAX-only parameters passed at None, such as `sharding=None`, are dropped first);
   - harnesses JAX itself fails are left out.

A harness that crashes minijax's process is recorded as an error and the run resumes after
it.  Both sides run with 64-bit types enabled (`--x32` for the default).
"""
from __future__ import annotations

import argparse
import collections
import itertools
import importlib.util
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import traceback
import zlib

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)

# JAX's default test tolerances (atol = rtol), by dtype name.
TOLERANCE = {"bfloat16": 1e-2, "float16": 1e-3, "float32": 1e-6, "float64": 1e-15,
             "complex64": 1e-6, "complex128": 1e-15}


def harness_file() -> str:
  spec = importlib.util.find_spec("jax")
  if spec is None or spec.origin is None:
    sys.exit("the harnesses come with JAX: install it (pip install -e '.[ecosystem]')")
  path = os.path.join(os.path.dirname(spec.origin), "_src", "internal_test_util",
                      "test_harnesses.py")
  if not os.path.exists(path):
    sys.exit(f"no {path}: this JAX does not ship its harnesses")
  return path


def selected(harnesses, only: str | None, sample: str | None):
  """(index, harness) of those JAX runs on the CPU, narrowed by --only and --sample."""
  k, n = map(int, sample.split("/")) if sample else (1, 1)
  for i, h in enumerate(harnesses):
    if not h.filter("cpu"):
      continue
    if only and not re.search(only, h.fullname):
      continue
    if zlib.crc32(h.fullname.encode()) % n < k:
      yield i, h


def _leaves(tree) -> list:
  if isinstance(tree, (tuple, list)):
    return [leaf for t in tree for leaf in _leaves(t)]
  if isinstance(tree, dict):
    return [leaf for key in sorted(tree) for leaf in _leaves(tree[key])]
  return [tree]


def _kept(value) -> bool:
  """Whether an output is compared (not the float0 cotangent of an integer input)."""
  return getattr(value, "dtype", None) is None or np.dtype(value.dtype).names is None \
      or "float0" not in str(value.dtype)


def _host(value) -> np.ndarray:
  if hasattr(value, "dtype") and "key<" in str(value.dtype):  # typed PRNG keys: their bits
    import jax
    value = jax.random.key_data(value)
  return np.asarray(value)


class OpCase:
  """A case of lax_test's `testOp`: an op record of `lax_test_util.lax_ops()` at shapes and
  a dtype, named as the harnesses are."""

  def __init__(self, record, shapes, dtype):
    self.op, self.shapes, self.dtype = record.op, shapes, dtype
    self.rng_factory, self.tol = record.rng_factory, record.tol
    self.fullname = "lax_op_" + "_".join(
        [record.op] + [np.dtype(dtype).name + str(list(s)).replace(" ", "") for s in shapes])

  def filter(self, device):
    return True

  def dyn_args_maker(self, rng):
    make = self.rng_factory(rng)
    return [make(shape, self.dtype) for shape in self.shapes]


def op_cases() -> list[OpCase]:
  from jax._src.internal_test_util import lax_test_util
  cases = []
  for record in lax_test_util.lax_ops():
    for group in lax_test_util.compatible_shapes:
      for shapes in itertools.combinations_with_replacement(group, record.nargs):
        for dtype in record.dtypes:
          cases.append(OpCase(record, shapes, dtype))
  return cases


TRANSFORMS = ("jit", "vmap", "jvp", "vjp")


def call(jax, fun, transform: str, args):
  """`fun` at `args` under `transform`, always inside `jit`: `vmap` over the leading axis
  of every argument; `jvp` with unit tangents for the inexact arguments (float0 zeros for
  the others); `vjp` pulling back unit cotangents."""
  if transform == "jit":
    return jax.jit(fun)(*args)
  if transform == "vmap":
    return jax.jit(jax.vmap(fun))(*args)
  tangents = [np.ones_like(a) if np.issubdtype(np.asarray(a).dtype, np.inexact)
              else np.zeros(np.shape(a), jax.dtypes.float0) for a in args]
  if transform == "jvp":
    return jax.jit(lambda *primals: jax.jvp(fun, primals, tuple(tangents)))(*args)

  def pulled_back(*primals):
    out, pullback = jax.vjp(fun, *primals)
    return pullback(jax.tree_util.tree_map(jax.numpy.ones_like, out))
  return jax.jit(pulled_back)(*args)


def run_jax(path: str, out: str, only, sample, x64: bool, transform: str) -> None:
  import jax
  jax.config.update("jax_enable_x64", x64)
  spec = importlib.util.spec_from_file_location("test_harnesses", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  records = []
  for i, h in selected(module.all_harnesses + op_cases(), only, sample):
    rng = np.random.RandomState(zlib.crc32(h.fullname.encode()))
    op = getattr(h, "op", None)
    tol = h.tol if isinstance(h, OpCase) else None
    try:
      args = h.dyn_args_maker(rng)
      if transform == "vmap":  # a batch of two draws
        args = [np.stack([a, b]) for a, b in zip(args, h.dyn_args_maker(rng))]
      fun = getattr(jax.lax, op) if op else h.dyn_fun
      outputs = [_host(v) for v in _leaves(call(jax, fun, transform, args)) if _kept(v)]
      records.append((i, h.fullname, op, tol, [np.asarray(a) for a in args], outputs, None))
    except Exception as e:  # JAX fails it: left out
      records.append((i, h.fullname, op, tol, None, None, f"{type(e).__name__}: {e}"[:300]))
  with open(out, "wb") as f:
    pickle.dump(records, f)


def compare(mine: list, theirs: list, tol_given=None) -> str | None:
  """None when the outputs agree; else what differs."""
  if len(mine) != len(theirs):
    return f"{len(mine)} outputs where JAX has {len(theirs)}"
  for k, (a, b) in enumerate(zip(mine, theirs)):
    where = f"output {k}: " if len(theirs) > 1 else ""
    if a.shape != b.shape or a.dtype != b.dtype:
      return f"{where}{a.dtype}{list(a.shape)} where JAX has {b.dtype}{list(b.shape)}"
    tol = TOLERANCE.get(b.dtype.name)
    if isinstance(tol_given, dict):  # an op record's own tolerances, as jtu.tolerance takes
      tol = max(tol or 0, *(t for d, t in tol_given.items() if np.dtype(d) == b.dtype), 0)
    elif tol_given is not None and tol is not None:
      tol = max(tol, tol_given)
    if tol is None:
      if not np.array_equal(a, b):
        bad = np.argwhere(a != b)[0]
        return f"{where}at {tuple(bad)}: {a[tuple(bad)]} where JAX has {b[tuple(bad)]}"
      continue
    wide = np.complex128 if np.iscomplexobj(b) else np.float64
    x, y = a.astype(wide), b.astype(wide)
    with np.errstate(invalid="ignore"):  # (inf - inf)
      if np.allclose(x, y, atol=tol, rtol=tol, equal_nan=True):
        continue
      err = np.where((np.isnan(x) & np.isnan(y)) | (x == y), 0, np.abs(x - y))
      err = np.where(np.isnan(err), np.inf, err)
      bad = np.unravel_index(np.argmax(err), err.shape)
      ulp = np.spacing(np.abs(y[bad]).astype(b.real.dtype))  # (of the component type)
    ulps = float(err[bad] / ulp) if ulp else float("inf")
    return (f"{where}at {tuple(int(i) for i in bad)}: {x[bad]:.7g} where JAX has "
            f"{y[bad]:.7g} ({ulps:.3g} ulps)")
  return None


def run_minijax(path: str, jax_records: str, out: str, start_after: int, x64: bool,
                transform: str) -> None:
  import minijax
  minijax.install_as_jax()
  import jax
  jax.config.update("jax_enable_x64", x64)
  sys.path.insert(0, TOOLS)
  from jax_standin import internals
  internals.LENIENT[0] = True
  internals.OWN.update(internals._own(), **_harness_internals())
  _drop_jax_only_params()
  internals.install_test_files([path])
  # the group of a harness of a primitive minijax lacks is named as JAX names it
  internals.Internal.__str__ = lambda self: self._path.rsplit(".", 1)[-1].removesuffix("_p")
  import test_harnesses as module
  by_name = collections.defaultdict(list)  # (sets of dtypes enumerate in any order)
  for h in module.all_harnesses:
    by_name[h.fullname].append(h)
  with open(jax_records, "rb") as f:
    records = pickle.load(f)
  log = open(out, "a")
  for i, name, op, tol, args, expected, jax_error in records:
    if i <= start_after or jax_error is not None:
      continue
    log.write(json.dumps({"start": i}) + "\n")
    log.flush()
    h = by_name[name].pop(0) if by_name[name] else None
    fun = getattr(jax.lax, op, None) if op else (h.dyn_fun if h else None)
    if fun is None:
      outcome, message = "error", (f"minijax.lax has no {op}" if op else
                                   "the harness file has no such harness under minijax")
    else:
      try:
        outputs = [np.asarray(v) for v in _leaves(call(jax, fun, transform, args))
                   if _kept(v)]
        message = compare(outputs, expected, tol)
        outcome = "match" if message is None else "differs"
      except Exception as e:
        text = f"{type(e).__name__}: {e}"
        internal = (isinstance(e, internals.NeedsJaxInternals) or "needs JAX internals" in text
                    or _binds_privately(e))
        outcome, message = ("internal" if internal else "error"), text.split("\n")[0][:300]
    log.write(json.dumps({"id": i, "name": name, "outcome": outcome, "message": message})
              + "\n")
    log.flush()


# parameters of JAX's primitives that minijax's do not have (shardings, accuracy, the
# subset and algorithm of an SVD): a harness that binds a primitive itself passes them at None
_JAX_ONLY_PARAMS = ("sharding", "out_sharding", "accuracy", "subset_by_index", "algorithm")


def _drop_jax_only_params() -> None:
  """In this (the runner's minijax) process only: `Primitive.bind` ignores those parameters
  when they hold None, so such a harness tests the primitive's values, not JAX's params."""
  from minijax.core.primitive import Primitive
  bind = Primitive.bind

  def bind_without_jax_only(self, *args, **params):
    for key in _JAX_ONLY_PARAMS:
      if key in params and params[key] is None:
        del params[key]
    return bind(self, *args, **params)
  Primitive.bind = bind_without_jax_only


def _harness_internals() -> dict:
  """The private JAX helpers the harnesses call, as binds of minijax's same primitives."""
  from minijax.lax import windowed_reductions as w

  def select_and_gather_add(tangents, operand, select_prim, window_dimensions,
                            window_strides, padding, base_dilation, window_dilation):
    return w.select_and_gather_add_p.bind(
        tangents, operand, select_prim=select_prim,
        window_dimensions=tuple(window_dimensions), window_strides=tuple(window_strides),
        padding=tuple(map(tuple, padding)), base_dilation=tuple(base_dilation),
        window_dilation=tuple(window_dilation))

  def select_and_scatter_add(source, operand, select_prim, window_dimensions,
                             window_strides, padding):
    return w.select_and_scatter_add_p.bind(
        source, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides), padding=tuple(map(tuple, padding)))

  from jax_standin.internals import _Namespace
  from minijax import lax
  import minijax.numpy
  windowed, ad_util = "jax._src.lax.windowed_reductions", "jax._src.ad_util"
  return {"jax._src.numpy": minijax.numpy,  # (public as jax.numpy)
          windowed: _Namespace(windowed, _select_and_gather_add=select_and_gather_add,
                               _select_and_scatter_add=select_and_scatter_add),
          ad_util: _Namespace(ad_util, add_any_p=lax.add_any_p, add_jaxvals_p=lax.add_any_p,
                              stop_gradient_p=lax.stop_gradient_p)}


def _binds_privately(e: Exception) -> bool:
  """The harness called `<primitive>.bind` itself (JAX's private parameters)."""
  frames = traceback.extract_tb(e.__traceback__)
  return any(f.filename.endswith("test_harnesses.py") and ".bind(" in (f.line or "")
             for f in frames) and isinstance(e, TypeError)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--only", help="a regular expression: the harnesses whose name has it")
  parser.add_argument("--sample", help="K/N: the harnesses whose name hashes (CRC32 mod N) "
                      "below K")
  parser.add_argument("--x32", action="store_true", help="64-bit types off on both sides")
  parser.add_argument("--transform", choices=TRANSFORMS, default="jit",
                      help="run each harness under jit (default), or jit of its vmap over a "
                      "batch of two draws, of its jvp (unit tangents), or of its vjp (unit "
                      "cotangents)")
  parser.add_argument("--failures", action="store_true", help="list what differs and what "
                      "fails, grouped by cause")
  parser.add_argument("--top", type=int, default=40, help="causes listed (default 40)")
  parser.add_argument("--json", help="write each harness's outcome to this file")
  parser.add_argument("--side", choices=["jax", "minijax"], help=argparse.SUPPRESS)
  parser.add_argument("--records", help=argparse.SUPPRESS)
  parser.add_argument("--out", help=argparse.SUPPRESS)
  parser.add_argument("--start-after", type=int, default=-1, help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  x64 = not args.x32
  path = harness_file()
  if args.side == "jax":
    run_jax(path, args.out, args.only, args.sample, x64, args.transform)
    return 0
  if args.side == "minijax":
    run_minijax(path, args.records, args.out, args.start_after, x64, args.transform)
    return 0

  env = dict(os.environ, JAX_PLATFORMS="cpu",
             PYTHONPATH=os.pathsep.join([TOOLS, ROOT, os.environ.get("PYTHONPATH", "")]))
  me = [sys.executable, os.path.abspath(__file__), "--transform", args.transform] + (
      ["--x32"] if args.x32 else [])
  with tempfile.TemporaryDirectory(prefix="jax_harnesses_") as tmp:
    records, out = os.path.join(tmp, "jax.pkl"), os.path.join(tmp, "minijax.jsonl")
    narrow = (["--only", args.only] if args.only else []) + \
        (["--sample", args.sample] if args.sample else [])
    subprocess.run(me + ["--side", "jax", "--out", records] + narrow, env=env, check=True)
    with open(records, "rb") as f:
      jax_failed = {r[0]: r[-1] for r in pickle.load(f) if r[-1] is not None}
    results: dict[int, dict] = {}
    start_after = -1
    while True:
      proc = subprocess.run(me + ["--side", "minijax", "--records", records, "--out", out,
                                  "--start-after", str(start_after)], env=env,
                            stderr=subprocess.PIPE, text=True)
      started = None
      with open(out) as f:
        for line in f:
          record = json.loads(line)
          if "start" in record:
            started = record["start"]
          else:
            results[record["id"]] = record
            started = None
      open(out, "w").close()
      if started is None:
        if proc.returncode:
          sys.stderr.write(proc.stderr[-3000:])
          return proc.returncode
        break
      last = (proc.stderr.strip().splitlines() or ["?"])[-1]
      results[started] = {"id": started, "name": f"#{started}", "outcome": "error",
                          "message": f"the process died (exit {proc.returncode}): {last}"}
      start_after = started

  tally = collections.Counter(r["outcome"] for r in results.values())
  run = len(results)
  print(f"JAX's harnesses run on the CPU under {args.transform}: {run + len(jax_failed)} "
        f"({len(jax_failed)} fail under JAX itself: left out)")
  print("  " + "  ".join(f"{o} {tally.get(o, 0)}" for o in
                         ("match", "differs", "error", "internal")))
  judged = run - tally.get("internal", 0)
  print(f"  of the {judged} harnesses on public API, minijax matches JAX on "
        f"{tally.get('match', 0)} ({100 * tally.get('match', 0) / max(judged, 1):.1f}%)")
  if args.failures:
    for outcome in ("differs", "error", "internal"):
      groups = collections.defaultdict(list)
      for r in results.values():
        if r["outcome"] == outcome:
          key = re.sub(r"(?<![A-Za-z_])\d+(\.\d+)?(e[-+]?\d+)?", "N", r["message"])[:150]
          if outcome == "differs":
            key = r["name"].split("_")[0] + ": " + key
          groups[key].append(r["name"])
      print(f"\n{outcome}: {sum(map(len, groups.values()))} harnesses, {len(groups)} causes")
      for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:args.top]:
        print(f"  {len(names):4d}  {key}\n        e.g. {names[0]}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({r["name"]: [r["outcome"], r["message"]] for r in results.values()}, f,
                indent=0)
  return 0


if __name__ == "__main__":
  sys.exit(main())
