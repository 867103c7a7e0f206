#!/usr/bin/env python
"""Call every function of `jax.numpy` (and `jax.scipy.special`, `jax.nn`) on a grid of
dtypes and shapes, with JAX and with minijax, and compare what each returns.

    python tools/jax_numpy_sweep.py [--module numpy] [--only REGEX] [--x64]
        [--transform jit|vmap|grad] [--keywords] [--failures]

JAX's lax_numpy tests compare each jnp function with numpy over dtypes and shapes; this
sweep asks the same question of minijax with JAX itself as the answer, for every public
function at once.  Arguments are drawn from one seeded generator in both processes, per
function by its required positional parameters (arrays for array parameters, small
integers for `axis`-like ones), in every dtype of the grid, at shapes (), (3,) and (2, 3)
(and broadcasting pairs for binary functions), each also with `axis=0` and `axis=-1` where
the function takes an axis (`--keywords`: instead, each keyword parameter the function
takes, from `keepdims` to `where=`, with the other values of `KEYWORD_VALUES`, one at a
time).  `--transform` calls it under `jit`, under `vmap` over a
batch of two first arguments, or through `grad` of the sum of its (real part of its) first
output with respect to its first argument (floating and complex dtypes only).  Each case
ends as:

  - `match`: same dtype and shape, values within JAX's default test tolerance for the dtype
    (integers and booleans exactly), NaNs where JAX has NaNs;
  - `differs`: a value, shape or dtype differs (the worst element and its ulps shown);
  - `error`: minijax raises where JAX computes;
  - `refuses`: both raise (counted as agreeing); `answers`: minijax computes where JAX
    raises (listed, not counted as a failure: JAX's refusals are often its own limits);
  - `jax-odd`: eagerly, a `differs` case where minijax agrees with numpy's or scipy's own
    function (computed in float64 from the same arguments and rounded to the result's
    dtype) and JAX does not: out-of-domain arguments, mostly, where JAX's formula
    answers something else than the reference.

Each side runs in a subprocess; a case that crashes or hangs (--timeout) a process is
recorded and the sweep resumes after it.  Needs JAX installed (the `ecosystem` extra).
"""
from __future__ import annotations

import argparse
import collections
import inspect
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import zlib

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
from jax_harnesses import compare  # noqa: E402  (JAX's default tolerances, by dtype)

DTYPES = ["bool", "int8", "int32", "uint8", "uint32", "float16", "bfloat16", "float32",
          "complex64"]
DTYPES_X64 = ["int64", "uint64", "float64", "complex128"]
SHAPES = [(), (3,), (2, 3)]
PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (3,))]
# `--keywords`: other values for the keyword parameters functions take, by name ("MASK": a
# boolean array of the first argument's shape, drawn like the arguments)
KEYWORD_VALUES = {
    "keepdims": [True], "dtype": ["float32", "int32"], "ddof": [1], "descending": [True],
    "stable": [False], "side": ["right"], "mode": ["clip", "wrap"], "ord": [1, 2, np.inf, -1],
    "decimals": [1, -1], "where": ["MASK"], "initial": [1], "include_initial": [True],
    "equal_nan": [True], "right": [True], "increasing": [True], "assume_unique": [True],
    "invert": [True], "return_index": [True], "return_inverse": [True],
    "return_counts": [True], "endpoint": [False], "rowvar": [False], "bias": [True],
    "full_matrices": [False], "compute_uv": [False], "hermitian": [True], "UPLO": ["U"],
    "upper": [True], "lower": [False], "nan": [0.5], "posinf": [9.0], "neginf": [-9.0],
    "bins": [3], "density": [True], "method": ["lower", "nearest", "midpoint"],
    "axis": [None], "norm": ["ortho", "forward"], "weights": ["MASK"], "k": [1, -1], "offset": [1, -1], "unbiased": [True], "nan_policy": ["omit"],
    "fill_value": [7], "size": [4], "total_repeat_length": [8], "append": [1.5],
    "prepend": [-1], "periodic": [False], "symmetric": [True], "correction": [1],
    "approximate": [False], "return_sign": [True], "b": ["MASK"], "sym_pos": [True],
    "trans": [1], "unit_diagonal": [True], "overwrite_b": [True],
    "check_finite": [False], "n": [2, 5], "s": [(2, 2)], "axes": [(0,)], "output": ["complex"],
    "loc": [1.5, -2.0], "scale": [2.0, 0.5],
}
# linalg modules: square matrices, a batch of them, and a wide one
LINALG_SHAPES = [(3, 3), (2, 3, 3), (2, 3)]
LINALG_PAIRS = [((3, 3), (3, 3)), ((3, 3), (3,)), ((2, 3, 3), (2, 3, 3)), ((2, 3, 3), (2, 3, 1))]
AXIS_NAMES = {"axis", "axis1", "axis2", "source", "destination", "k", "n", "shift",
              "decimals", "N", "deg", "ddof", "q", "repeats", "indices_or_sections", "ord"}
NOT_ARRAYS = {"dtype", "shape", "newshape", "new_shape", "reps", "pad_width", "order",
              "fill_value", "num", "start", "stop", "step", "size", "bins", "prototype"}
# Functions whose arguments this grid cannot describe (file names, callables, index
# expressions, printing), or which return objects rather than arrays.
SKIP = {
    "numpy": {"load", "save", "savez", "fromfile", "fromfunction", "fromiter", "frompyfunc",
              "vectorize", "piecewise", "apply_along_axis", "apply_over_axes", "einsum",
              "einsum_path", "printoptions", "set_printoptions", "get_printoptions",
              "iinfo", "finfo", "dtype", "promote_types", "result_type", "can_cast",
              "issubdtype", "isdtype", "ndim", "shape", "size", "from_dlpack", "frombuffer",
              "fromstring", "block", "mgrid", "ogrid", "r_", "c_", "s_", "index_exp",
              "ix_", "nditer", "astype", "broadcast_shapes", "isscalar", "iterable",
              "array_repr", "array_str", "save", "ufunc", "select", "ndarray", "einsum",
              "asarray", "array", "copy"},
    "scipy.special": set(),
    "nn": {"dot_product_attention", "scaled_dot_general", "scaled_matmul",
           "get_scaled_dot_general_config"},
}


def functions(jnp, module: str, only: str | None) -> list[str]:
  names = []
  for name in sorted(dir(jnp)):
    obj = getattr(jnp, name)
    if (name.startswith("_") or name in SKIP.get(module, ()) or isinstance(obj, type)
        or not callable(obj) or inspect.ismodule(obj)):
      continue
    if only and not re.search(only, name):
      continue
    names.append(name)
  return names


def _draw(rng: np.random.RandomState, shape, dtype: str, ml_dtypes) -> np.ndarray:
  if dtype == "bool":
    return np.asarray(rng.rand(*shape) > 0.5)
  if dtype.startswith("uint"):
    values = rng.randint(0, 10, shape)
  elif dtype.startswith("int"):
    values = rng.randint(-5, 6, shape)
  elif dtype.startswith("complex"):
    values = rng.randn(*shape) * 2 + 1j * rng.randn(*shape) * 2
  else:
    values = rng.randn(*shape) * 2
  return np.asarray(values).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def cases(fun, name: str, x64: bool, module: str = "numpy", keywords: bool = False):
  """(case name, positional args maker, keyword args) for one function."""
  try:
    params = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError):
    return []
  required = [p for p in params if p.default is p.empty
              and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  if any(p.name in NOT_ARRAYS for p in required) or len(required) > 3:
    return []
  takes_axis = any(p.name == "axis" for p in params)
  arrays = [p for p in required if p.name not in AXIS_NAMES]
  ints = [p for p in required if p.name in AXIS_NAMES]
  dtypes = DTYPES + (DTYPES_X64 if x64 else [])
  out = []
  if not required:
    return []
  square = "linalg" in module
  shapes = ([(s,) for s in (LINALG_SHAPES if square else SHAPES)] if len(arrays) == 1 else
            (LINALG_PAIRS if square else PAIRS) if len(arrays) == 2 else
            [((3, 3) if square else (2, 3),) * len(arrays)])
  for dtype in dtypes:
    for shape in shapes:
      tag = f"{name}[{dtype}]{'/'.join(str(list(s)) for s in shape)}"
      out.append((tag, dtype, shape, [1] * len(ints), {}))
      if takes_axis and len(shape[0]) >= 1 and not ints and not keywords:
        out.append((tag + " axis=0", dtype, shape, [], {"axis": 0}))
        if len(shape[0]) == 2:
          out.append((tag + " axis=-1", dtype, shape, [], {"axis": -1}))
  if keywords:  # each keyword's other values, one at a time, instead of the plain cases
    plain, out = out, []
    optional = [p.name for p in params if p.default is not p.empty and p.kind in
                (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name in KEYWORD_VALUES]
    for tag, dtype, shape, int_args, _ in plain:
      for keyword in optional:
        for value in KEYWORD_VALUES[keyword]:
          out.append((f"{tag} {keyword}={value}", dtype, shape, int_args, {keyword: value}))
  return out


class _Timeout(Exception):
  pass


def run_side(side: str, module: str, only: str | None, x64: bool, transform: str, out: str,
             start_after: str | None, timeout: float, keywords: bool = False) -> None:
  """Run every case with JAX (`side == "jax"`) or minijax, appending (case, result) records
  to `out`; `result` is ("ok", [arrays]) or ("raise", "ExcType: message")."""
  import importlib
  import ml_dtypes
  if side == "minijax":
    import minijax
    minijax.install_as_jax()
  import jax
  jax.config.update("jax_enable_x64", x64)
  mod = importlib.import_module(f"jax.{module}")

  def on_alarm(*_):
    raise _Timeout()
  signal.signal(signal.SIGALRM, on_alarm)
  started = start_after is None
  with open(out, "ab") as f:
    for name in functions(mod, module, only):
      fun = getattr(mod, name)
      for case, dtype, shape, ints, kwargs in cases(fun, name, x64, module, keywords):
        if not started:
          started = case == start_after
          continue
        if transform == "grad" and not ("float" in dtype or "complex" in dtype):
          continue
        pickle.dump(("start", case), f)
        f.flush()
        rng = np.random.RandomState(zlib.crc32(case.encode()))
        args = [_draw(rng, s, dtype, ml_dtypes) for s in shape] + ints
        kwargs = {k: (_draw(rng, shape[0], "bool", ml_dtypes) if isinstance(v, str) and
                      v == "MASK" else v) for k, v in kwargs.items()}
        if transform == "vmap":
          args[0] = np.stack([args[0], _draw(rng, shape[0], dtype, ml_dtypes)])
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
          result = transformed(jax, fun, transform, args, kwargs)
          leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(result)]
          record = ("ok", leaves)
        except _Timeout:
          record = ("raise", f"timeout after {timeout} s")
        except Exception as e:  # noqa: BLE001  (every refusal is a result here)
          record = ("raise", f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
        finally:
          signal.setitimer(signal.ITIMER_REAL, 0)
        pickle.dump((case, record + (args, kwargs)), f)
        f.flush()


def transformed(jax, fun, transform: str, args: list, kwargs: dict):
  """`fun(*args, **kwargs)` under the transform; the arguments after the arrays (axes,
  counts) are static."""
  rest = args[1:]
  def first_only(x):
    return fun(x, *rest, **kwargs)
  if transform == "jit":
    return jax.jit(first_only)(args[0])
  if transform == "vmap":
    return jax.vmap(first_only)(args[0])
  if transform == "grad":
    def total(x):
      out = jax.tree_util.tree_leaves(first_only(x))[0]
      return jax.numpy.sum(jax.numpy.real(out))
    return jax.grad(total, holomorphic=False)(args[0])
  return fun(*args, **kwargs)


def reference(module: str, case: str, args: list, kwargs: dict) -> list | None:
  """numpy's or scipy's answer for one case, in float64, or None where there is none."""
  import importlib
  if not (module == "numpy" or module.startswith("scipy.")):
    return None
  package, *attributes = module.split(".", 2) if module.startswith("scipy.") else [module]
  try:  # scipy.stats.norm is an object in scipy, a module in JAX
    fun = importlib.import_module(".".join([package, *attributes[:1]]))
    for name in attributes[1:] + [case.split("[")[0]]:
      fun = getattr(fun, name)
  except (ImportError, AttributeError):
    return None
  def widened(a):
    floating = isinstance(a, np.ndarray) and (a.dtype.kind == "f" or a.dtype.name == "bfloat16")
    return a.astype(np.float64) if floating else a
  wide = [widened(a) for a in args]
  try:
    with np.errstate(all="ignore"):
      out = fun(*wide, **kwargs)
  except Exception:  # noqa: BLE001  (no reference for this case)
    return None
  return [np.asarray(leaf) for leaf in (out if isinstance(out, tuple) else (out,))]


def jax_is_odd(module: str, case: str, ours: list, theirs: list, args: list, kwargs: dict
               ) -> bool:
  ref = reference(module, case, args, kwargs)
  if ref is None or len(ref) != len(theirs):
    return False
  with np.errstate(all="ignore"):
    ref = [r.astype(t.dtype) if r.shape == t.shape else r for r, t in zip(ref, theirs)]
  return compare(ours, ref) is None and compare(theirs, ref) is not None


def _read(path: str) -> tuple[dict, str | None]:
  records, last_started = {}, None
  with open(path, "rb") as f:
    while True:
      try:
        key, value = pickle.load(f)
      except EOFError:
        break
      if key == "start":
        last_started = value
      else:
        records[key] = value
  crashed = last_started if last_started is not None and last_started not in records else None
  return records, crashed


def collect(side: str, args) -> dict:
  out = tempfile.mktemp(suffix=f".{side}.pkl")
  start_after = None
  while True:
    cmd = [sys.executable, os.path.abspath(__file__), "--side", side, "--out", out,
           "--module", args.module, "--timeout", str(args.timeout)]
    cmd += ["--only", args.only] if args.only else []
    cmd += ["--x64"] if args.x64 else []
    cmd += ["--transform", args.transform] if args.transform else []
    cmd += ["--keywords"] if args.keywords else []
    cmd += ["--start-after", start_after] if start_after else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    records, crashed = _read(out) if os.path.exists(out) else ({}, None)
    if proc.returncode == 0 or crashed is None:
      if proc.returncode != 0:
        sys.exit(f"the {side} side failed:\n{proc.stderr[-3000:]}")
      return records
    with open(out, "ab") as f:  # the case that took the process down
      pickle.dump((crashed, ("raise", f"process died ({proc.returncode})", [], {})), f)
    start_after = crashed


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--module", default="numpy", help="numpy, scipy.special or nn")
  p.add_argument("--only", help="functions whose name matches this regex")
  p.add_argument("--x64", action="store_true", help="64-bit types enabled on both sides")
  p.add_argument("--transform", choices=["jit", "vmap", "grad"],
                 help="call each function under this transformation")
  p.add_argument("--failures", action="store_true", help="list each differing case")
  p.add_argument("--keywords", action="store_true",
                 help="instead of axes, each keyword parameter's other values (KEYWORD_VALUES)")
  p.add_argument("--timeout", type=float, default=20.0)
  p.add_argument("--side", help=argparse.SUPPRESS)
  p.add_argument("--out", help=argparse.SUPPRESS)
  p.add_argument("--start-after", help=argparse.SUPPRESS)
  args = p.parse_args(argv)
  if args.side:
    run_side(args.side, args.module, args.only, args.x64, args.transform, args.out,
             args.start_after, args.timeout, args.keywords)
    return 0
  theirs, mine = collect("jax", args), collect("minijax", args)
  kinds = collections.defaultdict(list)
  for case, (status, value, call_args, call_kwargs) in theirs.items():
    ours = mine.get(case, ("raise", "not run"))
    if status == "raise":
      kinds["refuses" if ours[0] == "raise" else "answers"].append((case, value))
    elif ours[0] == "raise":
      kinds["error"].append((case, ours[1]))
    else:
      diff = compare(ours[1], value)
      if diff and not args.transform and jax_is_odd(args.module, case, ours[1], value,
                                                    call_args, call_kwargs):
        kinds["jax-odd"].append((case, diff))
      else:
        kinds["differs" if diff else "match"].append((case, diff))
  total = len(theirs)
  print(f"jax.{args.module}: {total} cases, " + ", ".join(
      f"{len(kinds[k])} {k}" for k in ("match", "refuses", "differs", "jax-odd", "error",
                                         "answers")))
  if args.failures:
    for kind in ("differs", "jax-odd", "error", "answers"):
      for case, why in kinds[kind]:
        print(f"  {kind:8s} {case}: {why}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
