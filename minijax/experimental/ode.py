"""`odeint`: JAX's adaptive ODE solver, differentiable in reverse mode by the adjoint method.

    ys = odeint(func, y0, t, *args)      # ys[i] ≈ y(t[i]) where dy/dt = func(y, t, *args)

The state `y` is any pytree of float arrays; it is flattened to one vector for the solver.

Forward: the explicit Runge-Kutta pair of Dormand and Prince (order 5, with an embedded
order-4 solution whose difference estimates the local error; the last stage is the first
of the next step).  A step is accepted when the RMS of the error, scaled by
`atol + rtol * max(|y|, |y_next|)`, is at most 1; the next step size is the current one
times `0.9 * err**(-1/5)`, kept within [0.2, 10] times it and at most `hmax`.  The first
step size follows Hairer, Nørsett and Wanner's heuristic (from the sizes of `y0`,
`func(y0)` and a trial Euler step).  Values at the requested times come from a quartic
fitted on each accepted step to its ends, their derivatives and the method's midpoint
estimate.  The loops are a `scan` over the requested times around a `while_loop` of steps
(at most `mxstep` per interval), so `odeint` traces once and runs under `jit`.

Reverse (`custom_vjp`): from the last requested time back to the first, the adjoint
`a = dL/dy` and the parameter cotangent are integrated backwards in time together with
`y` (restarted at each stored output, which keeps the backward pass from drifting off the
forward trajectory), with the same solver:

    dy/ds = -func(y, -s),   da/ds = a . d func/dy,   d args_bar/ds = a . d func/d args

over `s = -t`.  Each output's cotangent is added to `a` when the integration passes it;
the cotangent of an output time `t[i]` is `g[i] . func(y[i], t[i])`, and that of `t[0]`
is `-a(t[0]) . func(y[0], t[0])`.  Values that `func` closes over and that are traced by
an enclosing transformation become explicit arguments first, so they get cotangents too.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from minijax import lax
from minijax.tree_util import internal as tree_util
from minijax import numpy as jnp
from minijax.api import vjp, vmap
from minijax.core.avals import get_aval
from minijax.core.jaxpr import eval_jaxpr
from minijax.core.trace import Tracer
from minijax.custom_derivatives import custom_vjp
from minijax.flatten_util import ravel_pytree
from minijax.interpreters import partial_eval as pe

__all__ = ["odeint"]


def odeint(func: Callable, y0: Any, t, *args, rtol: float = 1.4e-8, atol: float = 1.4e-8,
           mxstep: float = np.inf, hmax: float = np.inf):
  """The solution of `dy/dt = func(y, t, *args)` from `y(t[0]) = y0` at the times `t`
  (increasing): a pytree like `y0` whose leaves gain a leading axis of `len(t)`.

  `rtol`, `atol`: the error tolerances of each step; `mxstep`: the most steps between two
  requested times; `hmax`: the largest step.  `args` must be arrays or scalars (close over
  anything else)."""
  for arg in tree_util.tree_leaves(args):
    if not isinstance(arg, (Tracer, np.ndarray, np.generic, int, float, complex, bool)) and \
        not hasattr(arg, "__array__"):
      raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
  t = jnp.asarray(t)
  if t.ndim != 1:
    raise ValueError(f"odeint's t must be a 1-d array of times, got shape {t.shape}")
  converted, consts = _hoist_traced_closure(func, y0, t[0], args)
  flat_y0, unravel = ravel_pytree(y0)
  flat_func = lambda y, t, *a: ravel_pytree(converted(unravel(y), t, *a))[0]  # noqa: E731
  ys = _odeint(flat_func, rtol, atol, mxstep, hmax, flat_y0, t, *args, *consts)
  return vmap(unravel)(ys)


def _hoist_traced_closure(func: Callable, y0, t0, args) -> tuple[Callable, list]:
  """`func` as a function of `(y, t, *args, *consts)` where `consts` are the traced values
  it closes over (so that the custom_vjp sees them as arguments), and those values."""
  flat, in_tree = tree_util.tree_flatten((y0, t0, args))
  out_tree = []

  def flat_func(*leaves):
    y, t, a = tree_util.tree_unflatten(in_tree, list(leaves))
    out, tree = tree_util.tree_flatten(func(y, t, *a))
    out_tree.append(tree)
    return out

  closed = pe.trace_to_closed_jaxpr(flat_func, [get_aval(x) for x in flat])
  traced = [i for i, c in enumerate(closed.consts) if isinstance(c, Tracer)]
  if not traced:
    return func, []
  n_args = len(args)

  def converted(y, t, *rest):
    a, hoisted = rest[:n_args], rest[n_args:]
    consts = list(closed.consts)
    for i, c in zip(traced, hoisted):
      consts[i] = c
    leaves = tree_util.tree_leaves((y, t, a))
    return tree_util.tree_unflatten(out_tree[0], eval_jaxpr(closed.jaxpr, consts, *leaves))

  return converted, [closed.consts[i] for i in traced]


# ----------------------------------------------------------------------------- the solver
# Dormand-Prince 5(4): nodes, stage weights, the order-5 weights, the error weights (order 5
# minus order 4) and the weights of the midpoint estimate used for dense output.

_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
_A = [np.array(row) for row in (
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])]
_B5 = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
# (the order-4 solution whose difference JAX takes as the error, not the tableau's usual one
# 5179/57600, ..., 1/40: the steps accepted and their sizes are JAX's)
_B4 = np.array([1951 / 21600, 0, 22642 / 50085, 451 / 720, -12231 / 42400, 649 / 6300, 1 / 60])
_MID = np.array([6025192743 / 30085553152, 0, 51252292925 / 65400821598,
                 -2691868925 / 45128329728, 187940372067 / 1594534317056,
                 -1776094331 / 19743644256, 11237099 / 235043384]) / 2


def _weighted(k, weights, dtype):
  """`sum_i weights[i] * k[i]` over the stages (rows of `k`)."""
  return jnp.tensordot(jnp.asarray(weights, dtype), k, axes=1)


def _step(fun, y, f, t, dt):
  """One Dormand-Prince step: (y_next, f_next, error estimate, stage derivatives)."""
  dtype = y.dtype
  ks = [f]
  for c, a in zip(_C[1:], _A):
    ks.append(fun(y + dt * _weighted(jnp.stack(ks), a, dtype), t + c * dt))
  k = jnp.stack(ks)
  y_next = y + dt * _weighted(k[:6], _B5[:6], dtype)  # (where the last stage was taken)
  return y_next, ks[-1], dt * _weighted(k, _B5 - _B4, dtype), k


def _rms(x):
  return jnp.sqrt(jnp.mean(x * x))


def _error_ratio(err, y, y_next, rtol, atol):
  return _rms(jnp.abs(err) / (atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(y_next))))


def _next_step_size(dt, ratio):
  """dt times 0.9 ratio^(-1/5), at most 10 and at least 1 after an accepted step (0.2 after
  a rejected one), as JAX's."""
  least = jnp.where(ratio < 1, 1.0, 0.2)
  factor = jnp.minimum(10.0, jnp.maximum(0.9 * ratio ** (-1 / 5), least))
  return jnp.where(ratio == 0, dt * 10.0, dt * factor)


def _first_step_size(fun, t0, y0, f0, rtol, atol):
  # (Hairer, Nørsett and Wanner's rule, with Euclidean norms where they take RMS ones, as JAX)
  scale = atol + jnp.abs(y0) * rtol
  norm = jnp.linalg.norm
  d0, d1 = norm(y0 / scale), norm(f0 / scale)
  h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  f1 = fun(y0 + h0 * f0, t0 + h0)
  d2 = norm((f1 - f0) / scale) / h0
  h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                 (0.01 / jnp.maximum(d1, d2)) ** (1 / 5))
  return jnp.minimum(100 * h0, h1)


def _quartic(y, y_next, k, dt):
  """Coefficients (highest power first) of the quartic p on [0, 1] with p(0) = y,
  p(1) = y_next, p'(0) = dt f(y), p'(1) = dt f(y_next) and p(1/2) = the midpoint
  estimate."""
  y_mid = y + dt * _weighted(k, _MID, y.dtype)
  d0, d1 = dt * k[0], dt * k[-1]
  return jnp.stack([-2 * d0 + 2 * d1 - 8 * y - 8 * y_next + 16 * y_mid,
                    5 * d0 - 3 * d1 + 18 * y + 14 * y_next - 32 * y_mid,
                    -4 * d0 + d1 - 11 * y - 5 * y_next + 16 * y_mid, d0, y])


def _solve(fun, rtol, atol, mxstep, hmax, y0, ts, *args):
  """The solution at `ts` of `dy/dt = fun(y, t, *args)` for a flat `y0`: shape (len(ts), n)."""
  f = lambda y, t: fun(y, t, *args)  # noqa: E731
  t0 = ts[0]
  f0 = f(y0, t0)
  dt = jnp.clip(_first_step_size(f, t0, y0, f0, rtol, atol), 0, hmax)
  coeffs = jnp.stack([y0] * 5)  # (the constant y0 until a step is accepted)
  start = (y0, f0, t0, dt, t0, coeffs)

  def to_target(carry, target):
    def going(state):
      i, _, _, t, dt, _, _ = state
      return (t < target) & (i < mxstep) & (dt > 0)

    def step(state):
      i, y, fy, t, dt, last_t, coeffs = state
      y_next, f_next, err, k = _step(f, y, fy, t, dt)
      ratio = _error_ratio(err, y, y_next, rtol, atol)
      dt_next = jnp.clip(_next_step_size(dt, ratio), 0, hmax)
      accepted = [i + 1, y_next, f_next, t + dt, dt_next, t, _quartic(y, y_next, k, dt)]
      rejected = [i + 1, y, fy, t, dt_next, last_t, coeffs]
      return [jnp.where(ratio <= 1, new, old) for new, old in zip(accepted, rejected)]

    _, *carry = lax.while_loop(going, step, [0, *carry])
    _, _, t, _, last_t, coeffs = carry = tuple(carry)
    theta = (target - last_t) / (t - last_t)
    return carry, jnp.polyval(coeffs, theta.astype(y0.dtype))

  _, ys = lax.scan(to_target, start, ts[1:])
  return jnp.concatenate([y0[None], ys])


_odeint = custom_vjp(_solve, nondiff_argnums=(0, 1, 2, 3, 4))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, res, g):
  ys, ts, args = res

  def augmented(state, s, *args):
    y, a, _ = state
    y_dot, pullback = vjp(lambda y, *args: func(y, -s, *args), y, *args)
    a_dot, *args_dot = pullback(a)
    return -y_dot, a_dot, tuple(args_dot)

  def back_one(carry, x):
    a, args_bar = carry
    y_i, g_i, t_i, t_before = x
    a = a + g_i
    t_bar = jnp.dot(func(y_i, t_i, *args), g_i)
    state, unravel = ravel_pytree((y_i, a, args_bar))
    aug = lambda y, s, *args: ravel_pytree(augmented(unravel(y), s, *args))[0]  # noqa: E731
    with warnings.catch_warnings():  # a real part of a complex state comes back real, exactly
      warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
      out = _odeint(aug, rtol, atol, mxstep, hmax, state, jnp.stack([-t_i, -t_before]), *args)
      _, a, args_bar = unravel(out[-1])
    return (a, args_bar), t_bar

  zeros = lambda tree: tree_util.tree_map(jnp.zeros_like, tree)  # noqa: E731
  (a, args_bar), t_bars = lax.scan(back_one, (jnp.zeros_like(ys[0]), zeros(args)),
                                   (ys[1:][::-1], g[1:][::-1], ts[1:][::-1], ts[:-1][::-1]))
  t0_bar = -jnp.dot(func(ys[0], ts[0], *args), a)
  ts_bar = jnp.concatenate([t0_bar[None], t_bars[::-1]])
  if not jnp.iscomplexobj(ts):  # (a complex state's: the real part reaches real times)
    ts_bar = jnp.real(ts_bar)
  ts_bar = ts_bar.astype(ts.dtype)
  return (a + g[0], ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)
