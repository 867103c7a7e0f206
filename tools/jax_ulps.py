#!/usr/bin/env python
"""Compare minijax's elementwise functions and their derivatives with JAX's bit for bit.

    python tools/jax_ulps.py [--only REGEX] [--all]

The harnesses and the numpy sweep accept what JAX's own tests accept (values within a
tolerance); this asks for more: the same bits.  Each function below runs, in one process
with JAX and in another with minijax, on the same 500 float32 points of its domain, four
ways: its value eagerly, under `jit(vmap(f))`, and its first and second derivatives under
`jit(vmap(grad(f)))`.  A line is printed for each result that differs anywhere: how many of
the 500 points differ, and by how many ulps at most and at the median.  minijax matches JAX
bit for bit where it computes the same operations in the same order (a tangent written as
JAX writes it, a series JAX evaluates); a difference is either a formula that differs or
rounding that XLA's code generation makes differently for differently shaped programs.
Needs JAX installed (the `ecosystem` extra).
"""
from __future__ import annotations

import argparse
import os
import pickle
import re
import subprocess
import sys
import tempfile

import numpy as np

POINTS = 500


def cases(jax, jnp, lax, nn, sp):
  """name -> (function of a float32 scalar, domain)."""
  return {
      "sin": (lax.sin, "any"), "cos": (lax.cos, "any"), "tan": (lax.tan, "unit"),
      "tanh": (lax.tanh, "any"), "exp": (lax.exp, "any"), "exp2": (lax.exp2, "any"),
      "expm1": (lax.expm1, "any"), "log": (lax.log, "pos"), "log1p": (lax.log1p, "pos"),
      "logistic": (lax.logistic, "any"), "sqrt": (lax.sqrt, "pos"), "rsqrt": (lax.rsqrt, "pos"),
      "cbrt": (lax.cbrt, "pos"), "asin": (lax.asin, "unit"), "acos": (lax.acos, "unit"),
      "atan": (lax.atan, "any"), "asinh": (lax.asinh, "any"), "acosh": (lax.acosh, "big"),
      "atanh": (lax.atanh, "unit"), "sinh": (lax.sinh, "any"), "cosh": (lax.cosh, "any"),
      "erf": (lax.erf, "any"), "erfc": (lax.erfc, "any"), "erf_inv": (lax.erf_inv, "unit"),
      "lgamma": (lax.lgamma, "pos"), "digamma": (lax.digamma, "pos"), "abs": (lax.abs, "any"),
      "square": (lax.square, "any"), "x**3": (lambda x: x ** 3, "any"),
      "x**-2": (lambda x: lax.integer_pow(x, -2), "pos"), "reciprocal": (jnp.reciprocal, "pos"),
      "sinc": (jnp.sinc, "any"), "log2": (jnp.log2, "pos"), "log10": (jnp.log10, "pos"),
      "bessel_i0e": (lax.bessel_i0e, "any"), "bessel_i1e": (lax.bessel_i1e, "any"),
      "i0": (jnp.i0, "any"), "atan2": (lambda x: lax.atan2(x, 1.3 - x), "any"),
      "pow": (lambda x: lax.pow(x, 1.7), "pos"), "pow(1.7, x)": (lambda x: lax.pow(1.7, x), "any"),
      "hypot": (lambda x: jnp.hypot(x, 2.0), "any"),
      "logaddexp": (lambda x: jnp.logaddexp(x, 0.5), "any"),
      "logaddexp2": (lambda x: jnp.logaddexp2(x, 0.5), "any"),
      "rem": (lambda x: lax.rem(x, 1.3), "any"), "div": (lambda x: lax.div(1.3, x), "pos"),
      "max": (lambda x: lax.max(x, 0.1), "any"),
      "relu": (nn.relu, "any"), "gelu": (nn.gelu, "any"),
      "gelu(exact)": (lambda x: nn.gelu(x, approximate=False), "any"), "silu": (nn.silu, "any"),
      "softplus": (nn.softplus, "any"), "sigmoid": (nn.sigmoid, "any"),
      "log_sigmoid": (nn.log_sigmoid, "any"), "elu": (nn.elu, "any"), "selu": (nn.selu, "any"),
      "celu": (nn.celu, "any"), "soft_sign": (nn.soft_sign, "any"), "mish": (nn.mish, "any"),
      "squareplus": (nn.squareplus, "any"), "sparse_plus": (nn.sparse_plus, "any"),
      "softmax": (lambda x: nn.softmax(jnp.stack([x, 2 * x, -x]))[0], "any"),
      "log_softmax": (lambda x: nn.log_softmax(jnp.stack([x, 2 * x, -x]))[1], "any"),
      "logsumexp": (lambda x: sp.logsumexp(jnp.stack([x, 2 * x, -x])), "any"),
      "var": (lambda x: jnp.var(jnp.stack([x, 2 + 0 * x, x * x])), "any"),
      "std": (lambda x: jnp.std(jnp.stack([x, 2 + 0 * x, x * x])), "any"),
      "norm": (lambda x: jnp.linalg.norm(jnp.stack([x, 2 + 0 * x, x * x])), "any"),
      "gammaln": (sp.gammaln, "pos"), "ndtr": (sp.ndtr, "any"),
      "ndtri": (lambda x: sp.ndtri(x * 0.5 + 0.5), "unit"), "log_ndtr": (sp.log_ndtr, "any"),
      "entr": (sp.entr, "pos"), "xlogy": (lambda x: sp.xlogy(x, x + 5), "any"),
      "xlog1py": (lambda x: sp.xlog1py(x, x + 5), "any"),
      "logit": (lambda x: sp.logit(x * 0.5 + 0.5), "unit"),
      "polygamma(1, x)": (lambda x: sp.polygamma(1, x), "pos"),
      "betaln": (lambda x: sp.betaln(x, 2.5), "pos"),
      "gammainc": (lambda x: sp.gammainc(2.5, x), "pos"),
  }


def domains():
  rng = np.random.default_rng(0)
  return {"any": rng.uniform(-4, 4, POINTS), "pos": rng.uniform(0.05, 4, POINTS),
          "unit": rng.uniform(-0.95, 0.95, POINTS), "big": rng.uniform(1.05, 6, POINTS)}


def run(side: str, only: str | None, out_path: str) -> None:
  if side == "jax":
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as sp
    from jax import lax, nn
  else:
    import minijax as jax
    import minijax.numpy as jnp
    import minijax.scipy.special as sp
    from minijax import lax, nn
  points = {k: v.astype(np.float32) for k, v in domains().items()}
  results = {}
  for name, (f, domain) in cases(jax, jnp, lax, nn, sp).items():
    if only and not re.search(only, name):
      continue
    x = points[domain]
    ways = {"eager": lambda: f(x), "jit(vmap)": lambda: jax.jit(jax.vmap(f))(x),
            "grad": lambda: jax.jit(jax.vmap(jax.grad(f)))(x),
            "grad of grad": lambda: jax.jit(jax.vmap(jax.grad(jax.grad(f))))(x)}
    for way, compute in ways.items():
      try:
        results[name, way] = np.asarray(compute())
      except Exception as e:  # noqa: BLE001 (a refusal is a result too)
        results[name, way] = f"{type(e).__name__}: {str(e)[:80]}"
  with open(out_path, "wb") as f:
    pickle.dump(results, f)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """The distance in float32 units in the last place (NaN against a number: 2**31)."""
  def ordered(v):
    bits = v.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
  out = np.abs(ordered(a) - ordered(b))
  return np.where(np.isnan(a) != np.isnan(b), 2 ** 31, np.where(np.isnan(a), 0, out))


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--only", help="only the functions whose name matches this regex")
  parser.add_argument("--all", action="store_true", help="also list what is identical")
  parser.add_argument("--side", choices=["jax", "minijax"], help=argparse.SUPPRESS)
  parser.add_argument("--out", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.side:
    run(args.side, args.only, args.out)
    return 0
  tools = os.path.dirname(os.path.abspath(__file__))
  got = {}
  with tempfile.TemporaryDirectory() as tmp:
    for side in ("jax", "minijax"):
      out = os.path.join(tmp, side)
      command = [sys.executable, __file__, "--side", side, "--out", out]
      if args.only:
        command += ["--only", args.only]
      root = os.path.dirname(tools)  # (this checkout's minijax, not an installed one)
      path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
      subprocess.run(command, check=True, cwd=root,
                     env=dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=path))
      with open(out, "rb") as f:
        got[side] = pickle.load(f)
  same = 0
  for key, want in got["jax"].items():
    have = got["minijax"].get(key)
    name = f"{key[0]} ({key[1]})"
    if isinstance(want, str) or isinstance(have, str):
      if isinstance(want, str) and isinstance(have, str):
        same += 1
      else:
        print(f"{name:32} JAX: {want if isinstance(want, str) else 'computes'}; "
              f"minijax: {have if isinstance(have, str) else 'computes'}")
      continue
    if want.shape != have.shape or want.dtype != have.dtype:
      print(f"{name:32} {have.dtype}{list(have.shape)} where JAX has "
            f"{want.dtype}{list(want.shape)}")
      continue
    distance = ulps(want, have)
    if not distance.any():
      same += 1
      if args.all:
        print(f"{name:32} identical")
      continue
    differ = distance[distance > 0]
    print(f"{name:32} {differ.size:4d} of {distance.size} differ, by up to "
          f"{int(differ.max())} ulps (median {int(np.median(differ))})")
  print(f"{same} of {len(got['jax'])} results identical to JAX's bit for bit")
  return 0


if __name__ == "__main__":
  sys.exit(main())
