"""`minijax.scipy.optimize.minimize` with `method='BFGS'`: Nocedal & Wright's BFGS
(Numerical Optimization, Algorithm 6.1) from the identity as first inverse Hessian, each
step's length found by a line search for the strong Wolfe conditions (their Algorithms 3.5
and 3.6: steps doubled until a minimum is bracketed, then the bracket narrowed at the
minimum of the cubic through its ends, or at its middle where that minimum falls outside).
Both are `lax.while_loop`s, so the whole minimization jits; gradients come from
`value_and_grad`.

As in JAX: `x0` is 1-D; `options` takes `maxiter` (200 per variable), `norm` (of the
gradient, inf), `gtol` (1e-5) and `line_search_maxiter` (10); `status` is 0 when the
gradient's norm fell below `gtol`, 1 when the iterations ran out, and 2 + the line
search's status (1: its bracket shrank to nothing, 2: it ran out of steps) when a step
could not satisfy the Wolfe conditions.  `tol`, when given, is the `gtol` (scipy's meaning;
JAX ignores it).  The minima are JAX's and scipy's; the number of function evaluations on
the way may differ from JAX's by the line search's choices."""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from minijax import lax
import minijax.numpy as jnp


class OptimizeResults(NamedTuple):
  x: Any
  success: Any
  status: Any
  fun: Any
  jac: Any
  hess_inv: Any
  nfev: Any
  njev: Any
  nit: Any


_C1, _C2 = 1e-4, 0.9  # sufficient decrease and curvature (Nocedal & Wright's values)
_ZOOM_STEPS = 30


class _Search(NamedTuple):
  i: Any             # trial steps taken
  zooming: Any       # bracket found: narrowing [lo, hi]
  a_prev: Any        # the last trial (while bracketing) and its phi, phi'
  f_prev: Any
  d_prev: Any
  a_next: Any        # the next trial while bracketing
  lo: Any            # the bracket's end with the lower phi, and the other end
  f_lo: Any
  d_lo: Any
  hi: Any
  f_hi: Any
  d_hi: Any
  done: Any
  failed: Any
  a: Any             # the accepted step, its value and gradient
  f: Any
  g: Any


def _cubic_minimum(a, fa, da, b, fb, db):
  """The minimum of the cubic through (a, fa) and (b, fb) with slopes da and db, or the
  middle of [a, b] where that minimum is not inside its middle 80% (Nocedal & Wright 3.59)."""
  d1 = da + db - 3 * (fa - fb) / (a - b)
  radicand = d1 * d1 - da * db
  d2 = jnp.sign(b - a) * jnp.sqrt(jnp.maximum(radicand, 0))
  c = b - (b - a) * (db + d2 - d1) / (db - da + 2 * d2)
  low, high = jnp.minimum(a, b), jnp.maximum(a, b)
  margin = 0.1 * (high - low)
  inside = (radicand >= 0) & jnp.isfinite(c) & (c > low + margin) & (c < high - margin)
  return jnp.where(inside, c, (a + b) / 2)


def _line_search(value_and_grad, x, p, f0, g0, old_old_fval, maxiter):
  """(step, f, g, evaluations, failed, status) for the strong Wolfe conditions along p."""
  d0 = jnp.dot(g0, p)
  guess = 1.01 * 2 * (f0 - old_old_fval) / d0
  first = jnp.where((guess > 0) & jnp.isfinite(guess), jnp.minimum(guess, 1.0), 1.0)
  zero = jnp.zeros((), f0.dtype)
  start = _Search(i=0, zooming=False, a_prev=zero, f_prev=f0, d_prev=d0,
                  a_next=first.astype(f0.dtype), lo=zero, f_lo=f0, d_lo=d0, hi=zero,
                  f_hi=f0, d_hi=d0, done=False, failed=False, a=zero, f=f0, g=g0)

  def keep_going(s):
    return ~s.done & ~s.failed & (s.i < maxiter + _ZOOM_STEPS)

  def step(s):
    a = jnp.where(s.zooming, _cubic_minimum(s.lo, s.f_lo, s.d_lo, s.hi, s.f_hi, s.d_hi),
                  s.a_next)
    f, g = value_and_grad(x + a * p)
    d = jnp.dot(g, p)
    too_high = f > f0 + _C1 * a * d0
    flat_enough = jnp.abs(d) <= -_C2 * d0
    # bracketing: a minimum lies between the last two trials once phi rose or turned up
    rose = too_high | ((s.i > 0) & (f >= s.f_prev))
    bracket_done = ~rose & flat_enough
    turned = ~rose & ~flat_enough & (d >= 0)
    new_bracket = rose | turned
    b_lo = jnp.where(rose, s.a_prev, a)
    b_hi = jnp.where(rose, a, s.a_prev)
    bf_lo, bd_lo = jnp.where(rose, s.f_prev, f), jnp.where(rose, s.d_prev, d)
    bf_hi, bd_hi = jnp.where(rose, f, s.f_prev), jnp.where(rose, d, s.d_prev)
    # zooming: a replaces the end it is better than
    replaces_hi = too_high | (f >= s.f_lo)
    zoom_done = ~replaces_hi & flat_enough
    flip = ~replaces_hi & ~flat_enough & (d * (s.hi - s.lo) >= 0)
    z_hi = jnp.where(replaces_hi, a, jnp.where(flip, s.lo, s.hi))
    zf_hi = jnp.where(replaces_hi, f, jnp.where(flip, s.f_lo, s.f_hi))
    zd_hi = jnp.where(replaces_hi, d, jnp.where(flip, s.d_lo, s.d_hi))
    z_lo = jnp.where(replaces_hi, s.lo, a)
    zf_lo, zd_lo = jnp.where(replaces_hi, s.f_lo, f), jnp.where(replaces_hi, s.d_lo, d)
    z = s.zooming
    done = jnp.where(z, zoom_done, bracket_done)
    lo, f_lo, d_lo = (jnp.where(z, u, v) for u, v in ((z_lo, b_lo), (zf_lo, bf_lo),
                                                      (zd_lo, bd_lo)))
    hi, f_hi, d_hi = (jnp.where(z, u, v) for u, v in ((z_hi, b_hi), (zf_hi, bf_hi),
                                                      (zd_hi, bd_hi)))
    narrow = jnp.abs(hi - lo) <= 1e-10 * jnp.maximum(jnp.abs(hi), 1.0)
    zooming = z | new_bracket
    out_of_steps = jnp.where(zooming, s.i + 1 >= maxiter + _ZOOM_STEPS, s.i + 1 >= maxiter)
    failed = ~done & ((zooming & narrow) | out_of_steps)
    return _Search(i=s.i + 1, zooming=zooming, a_prev=a, f_prev=f, d_prev=d,
                   a_next=2 * a, lo=lo, f_lo=f_lo, d_lo=d_lo, hi=hi, f_hi=f_hi,
                   d_hi=d_hi, done=done, failed=failed, a=a, f=f, g=g)

  s = lax.while_loop(keep_going, step, start)
  status = jnp.where(s.done, 0, jnp.where(s.zooming & (s.i < maxiter + _ZOOM_STEPS), 1, 2))
  return s.a, s.f, s.g, s.i, ~s.done, status


class _BFGS(NamedTuple):
  k: Any
  nfev: Any
  x: Any
  f: Any
  g: Any
  H: Any
  old_f: Any
  converged: Any
  failed: Any
  search_status: Any


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
  if maxiter is None:
    maxiter = np.size(x0) * 200
  value_and_grad = _value_and_grad(fun)
  n = x0.shape[0]
  f0, g0 = value_and_grad(x0)
  start = _BFGS(k=0, nfev=1, x=x0, f=f0, g=g0, H=jnp.eye(n, dtype=x0.dtype),
                old_f=f0 + jnp.linalg.norm(g0) / 2,
                converged=jnp.linalg.norm(g0, ord=norm) < gtol, failed=False,
                search_status=0)

  def keep_going(s):
    return ~s.converged & ~s.failed & (s.k < maxiter)

  def step(s):
    p = -s.H @ s.g
    a, f, g, evaluations, failed, status = _line_search(value_and_grad, s.x, p, s.f, s.g,
                                                        s.old_f, line_search_maxiter)
    step_taken = a * p
    y = g - s.g
    rho = 1 / jnp.dot(y, step_taken)
    w = jnp.eye(n, dtype=rho.dtype) - rho * jnp.outer(step_taken, y)
    H = w @ s.H @ w.T + rho * jnp.outer(step_taken, step_taken)
    H = jnp.where(jnp.isfinite(rho), H, s.H)  # (no curvature along the step: keep H)
    return _BFGS(k=s.k + 1, nfev=s.nfev + evaluations, x=s.x + step_taken, f=f, g=g, H=H,
                 old_f=s.f, converged=jnp.linalg.norm(g, ord=norm) < gtol, failed=failed,
                 search_status=status)

  s = lax.while_loop(keep_going, step, start)
  status = jnp.where(s.converged, 0, jnp.where(s.k == maxiter, 1,
                                               jnp.where(s.failed, 2 + s.search_status, -1)))
  return OptimizeResults(x=s.x, success=s.converged & ~s.failed, status=status, fun=s.f,
                         jac=s.g, hess_inv=s.H, nfev=s.nfev, njev=s.nfev, nit=s.k)


def _value_and_grad(fun):
  from minijax.api import value_and_grad
  return value_and_grad(fun)


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
  """The minimum of `fun(x, *args)` from `x0` (1-D) by `method`: 'BFGS'."""
  if not isinstance(args, tuple):
    raise TypeError("args argument to minijax.scipy.optimize.minimize must be a tuple, "
                    f"got {args}")
  options = dict(options or {})
  x0 = jnp.asarray(x0)
  if x0.ndim != 1:
    raise ValueError(f"minimize: x0 must be a 1-dimensional array, got shape {x0.shape}")
  if not jnp.issubdtype(x0.dtype, jnp.floating):
    x0 = x0.astype(jnp.result_type(float))
  if method.lower() == "bfgs":
    if tol is not None:
      options.setdefault("gtol", tol)
    return _minimize_bfgs(lambda x: fun(x, *args), x0, **options)
  raise ValueError(f"Method {method} not recognized (minijax implements 'BFGS')")


__all__ = ["OptimizeResults", "minimize"]
