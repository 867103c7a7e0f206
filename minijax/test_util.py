"""`minijax.test_util.check_grads`: automatic derivatives against finite differences.

    check_grads(f, (x, y), order=2)             # jvp and vjp, to second order
    check_grads(f, (x,), 1, modes=["rev"])      # vjp only

Each check runs in one random direction (as JAX's does), so its cost does not grow with
the size of the inputs: forward mode compares `jvp(f, args, t)` with the central
difference `(f(args + eps t) - f(args - eps t)) / 2 eps`; reverse mode compares the inner
product `<vjp(ct), t>` with `<ct, that difference>`.  Higher orders check the jvp (or the
vjp applied to the primal output) as a function of the primals, recursively; "lin" mode
checks the jvp that `linearize` gives.

The arithmetic is JAX's, so that a check passes or fails as JAX's does: perturbed
arguments, differences and random directions are in the dtypes the function sees (float64
values are float32 unless x64 is on, and a Python scalar stays one), tolerances are those of
those dtypes (scaled by the sizes of the compared arrays), and complex cotangents pair with
tangents by `Re(sum(conj(a) * b))`, the cotangent conjugated on its way through the vjp.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from minijax import api
from minijax.tree_util import internal as tree_util
from minijax.core import dtypes

__all__ = ["check_close", "check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4

_GRADIENT_TOLERANCE = {
    np.dtype(dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _dtype(x) -> np.dtype:
  """The dtype a value has once minijax holds it (float64 is float32 unless x64 is on)."""
  return np.dtype(dtypes.canonicalize_dtype(np.asarray(x).dtype))


# JAX's default test tolerances (integers and booleans: exact)
_DEFAULT_TOLERANCE = {
    np.dtype(dtypes.bfloat16): 1e-2, np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6,
    np.dtype(np.float64): 1e-15, np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
}


def _tolerance(dtype, given, defaults=_GRADIENT_TOLERANCE) -> float:
  dtype = np.dtype(dtypes.canonicalize_dtype(dtype))
  if given is None:
    return defaults.get(dtype, 0.0)
  if isinstance(given, dict):
    return {np.dtype(k): v for k, v in given.items()}.get(dtype, defaults.get(dtype, 0.0))
  return given


def check_close(xs, ys, atol=None, rtol=None, err_msg: str = "") -> None:
  """Asserts that two trees of arrays agree within JAX's default test tolerances for their
  dtypes (or `atol`/`rtol`, numbers or dicts by dtype), scaled by the arrays' sizes."""
  _check_close(xs, ys, atol, rtol, err_msg, _DEFAULT_TOLERANCE)


def _check_close(xs, ys, atol, rtol, err_msg: str, defaults=_GRADIENT_TOLERANCE) -> None:
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
      continue
    if x.shape != y.shape:
      raise AssertionError(f"{err_msg}: shapes differ, {x.shape} and {y.shape}")
    a = max(_tolerance(x.dtype, atol, defaults), _tolerance(y.dtype, atol, defaults))
    r = max(_tolerance(x.dtype, rtol, defaults), _tolerance(y.dtype, rtol, defaults))
    wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(y) else np.float64
    np.testing.assert_allclose(x.astype(wide), y.astype(wide), atol=a * max(x.size, 1),
                               rtol=r * max(y.size, 1), err_msg=err_msg)


def _inexact(x) -> bool:
  return dtypes.is_inexact(np.asarray(x).dtype)


def _is_python_scalar(x) -> bool:
  return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _rand_like(rng, x):
  """A random direction like `x`, in its dtype (a Python scalar stays one); float0 zeros
  for integer and boolean values, which have no tangent."""
  if not _inexact(x):
    return np.zeros(np.shape(x), dtypes.float0)
  dtype = _dtype(x)
  out = np.asarray(rng.randn(*np.shape(x)), dtype)
  if np.issubdtype(dtype, np.complexfloating):
    out = out + dtype.type(1j) * np.asarray(rng.randn(*np.shape(x)), dtype)
  return out.item() if _is_python_scalar(x) else out


def _axpy(a, t, x):
  """`x + a * t` for the differentiable leaves, rounded to the dtype the function will see
  `x` in (as JAX's check does); the others are kept."""
  def leaf(xi, ti):
    if not _inexact(xi):
      return xi
    dtype = _dtype(xi)
    step = np.multiply(ti, np.array(a, dtype), dtype=dtype)
    out = np.asarray(np.add(np.asarray(xi), step), dtype)  # (float64 values add in float64)
    return out.item() if _is_python_scalar(xi) else out
  return tree_util.tree_map(leaf, x, t)


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], eps: float = EPS):
  """The central difference of `f` at `primals` along `tangents`, in the dtypes of `f`'s
  outputs (with inf - inf taken as 0)."""
  f_pos = f(*_axpy(eps, tangents, tuple(primals)))
  f_neg = f(*_axpy(-eps, tangents, tuple(primals)))

  def difference(p, n):
    if not _inexact(p):
      return np.zeros(np.shape(p), dtypes.float0)
    dtype = _dtype(p)
    p, n = np.asarray(p, dtype), np.asarray(n, dtype)
    with np.errstate(invalid="ignore"):
      diff = np.where(p == n, np.zeros((), dtype), np.subtract(p, n, dtype=dtype))
    return np.multiply(diff, np.array(0.5 / eps, dtype), dtype=dtype)
  return tree_util.tree_map(difference, f_pos, f_neg)


def _conj(tree):
  return tree_util.tree_map(lambda x: x if np.asarray(x).dtype == dtypes.float0 else np.conj(x),
                            tree)


def _inner(xs, ys):
  """`Re <xs, ys>` = the real part of sum(conj(x) * y) over the leaves, in their dtype."""
  total = None
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
      continue
    part = np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1)))
    total = part if total is None else np.add(total, part)
  return np.float32(0) if total is None else total


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
  ct_in = _conj(pullback(_conj(cotangent)))
  _check_close(_inner(tangents, ct_in), _inner(t_out, cotangent), atol, rtol,
               f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def _jvp_by_linearize(f, primals, tangents):
  out, f_lin = api.linearize(f, *primals)
  return out, f_lin(*tangents)


def check_grads(f: Callable, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None,
                eps=None) -> None:
  """Checks `f`'s derivatives at `args` up to `order` in the `modes` ("fwd", "rev", "lin":
  the jvp that `linearize` gives) against finite differences; raises AssertionError where
  they differ."""
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
    if "lin" in modes:
      msg = f"LIN of {what}" if what else "LIN"
      check_jvp(f, functools.partial(_jvp_by_linearize, f), args, atol, rtol, eps, msg)
      if order > 1:
        check(functools.partial(_jvp_by_linearize, f), (args, args), order - 1, msg)

  check(f, args, order, "")
