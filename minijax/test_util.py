"""`minijax.test_util.check_grads`: automatic derivatives against finite differences.

    check_grads(f, (x, y), order=2)             # jvp and vjp, to second order
    check_grads(f, (x,), 1, modes=["rev"])      # vjp only

Each check runs in one random direction (as JAX's does), so its cost does not grow with
the size of the inputs: forward mode compares `jvp(f, args, t)` with the central
difference `(f(args + eps t) - f(args - eps t)) / 2 eps`; reverse mode compares the inner
product `<vjp(ct), t>` with `<ct, that difference>`.  Higher orders check the jvp (or the
vjp applied to the primal output) as a function of the primals, recursively.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from minijax import api, tree_util
from minijax.core import dtypes

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4

_GRADIENT_TOLERANCE = {
    np.dtype(dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _tolerance(dtype, given) -> float:
  if given is None:
    return _GRADIENT_TOLERANCE.get(np.dtype(dtype), 0.0)
  if isinstance(given, dict):
    return {np.dtype(k): v for k, v in given.items()}.get(np.dtype(dtype), _tolerance(dtype, None))
  return given


def _check_close(xs, ys, atol, rtol, err_msg: str) -> None:
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
      continue
    a = max(_tolerance(x.dtype, atol), _tolerance(y.dtype, atol))
    r = max(_tolerance(x.dtype, rtol), _tolerance(y.dtype, rtol))
    wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(y) else np.float64
    np.testing.assert_allclose(x.astype(wide), y.astype(wide), atol=a * max(x.size, 1),
                               rtol=r * max(y.size, 1), err_msg=err_msg)


def _inexact(x) -> bool:
  return dtypes.is_inexact(np.asarray(x).dtype)


def _rand_like(rng, x):
  x = np.asarray(x)
  if not _inexact(x):
    return np.zeros(x.shape, dtypes.float0)
  out = rng.standard_normal(x.shape)
  if np.iscomplexobj(x):
    out = out + 1j * rng.standard_normal(x.shape)
  # the dtype the value computes in (a Python float is float32 without x64), as JAX's
  # check_grads draws it, so the comparison uses that dtype's tolerance
  return np.asarray(out, dtypes.canonicalize_dtype(x.dtype))


def _axpy(a, t, x):
  """`x + a * t` for the differentiable leaves; the others are kept."""
  return tree_util.tree_map(
      lambda xi, ti: xi if not _inexact(xi) else np.asarray(
          np.asarray(xi, np.complex128 if np.iscomplexobj(xi) else np.float64) + a * np.asarray(ti),
          np.asarray(xi).dtype), x, t)


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], eps: float = EPS):
  """The central difference of `f` at `primals` along `tangents`."""
  f_pos = f(*_axpy(eps, tangents, tuple(primals)))
  f_neg = f(*_axpy(-eps, tangents, tuple(primals)))
  return tree_util.tree_map(
      lambda p, n: (np.asarray(p, np.float64 if not np.iscomplexobj(p) else np.complex128)
                    - np.asarray(n)) * (0.5 / eps) if _inexact(p) else np.zeros(
                        np.shape(p), dtypes.float0), f_pos, f_neg)


def _inner(xs, ys) -> np.ndarray:
  """The inner product of two trees, in the dtype of their leaves (so that it is compared
  with that dtype's tolerance)."""
  total, dtype = 0.0, np.dtype(np.float16)
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
      continue
    dtype = np.promote_types(dtype, np.promote_types(x.dtype, y.dtype))
    total = total + np.sum(x.astype(np.complex128) * y.astype(np.complex128))
  return np.asarray(total if np.issubdtype(dtype, np.complexfloating) else np.real(total), dtype)


def check_jvp(f: Callable, f_jvp: Callable, args, atol=None, rtol=None, eps: float = EPS,
              err_msg: str = "") -> None:
  """`f_jvp(args, tangents)` against `f` and its central difference."""
  rng = np.random.RandomState(0)
  tangents = tree_util.tree_map(functools.partial(_rand_like, rng), tuple(args))
  v_out, t_out = f_jvp(tuple(args), tangents)
  _check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  t_expected = numerical_jvp(f, args, tangents, eps)
  _check_close(t_out, t_expected, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f: Callable, f_vjp: Callable, args, atol=None, rtol=None, eps: float = EPS,
              err_msg: str = "") -> None:
  """`f_vjp(*args) -> (out, pullback)` against the central difference of `f`."""
  rng = np.random.RandomState(0)
  v_out, pullback = f_vjp(*args)
  _check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  tangents = tree_util.tree_map(functools.partial(_rand_like, rng), tuple(args))
  t_out = numerical_jvp(f, args, tangents, eps)
  cotangent = tree_util.tree_map(functools.partial(_rand_like, rng), v_out)
  ct_in = pullback(tree_util.tree_map(np.conj, cotangent))
  ip = _inner(tangents, tree_util.tree_map(np.conj, ct_in))
  ip_expected = _inner(t_out, cotangent)
  _check_close(ip, ip_expected, atol, rtol,
               f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def check_grads(f: Callable, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None,
                eps=None) -> None:
  """Checks `f`'s derivatives at `args` up to `order` in the `modes` ("fwd", "rev")
  against finite differences; raises AssertionError where they differ."""
  args = tuple(args)
  eps = eps or EPS

  def check(f, args, order, what):
    if "fwd" in modes:
      msg = f"JVP of {what}" if what else "JVP"
      check_jvp(f, functools.partial(api.jvp, f), args, atol, rtol, eps, msg)
      if order > 1:
        check(functools.partial(api.jvp, f), (args, args), order - 1, msg)
    if "rev" in modes:
      msg = f"VJP of {what}" if what else "VJP"
      check_vjp(f, functools.partial(api.vjp, f), args, atol, rtol, eps, msg)
      if order > 1:
        def f_vjp(*args):
          out, pullback = api.vjp(f, *args)
          return pullback(out)
        check(f_vjp, args, order - 1, msg)

  check(f, args, order, "")
