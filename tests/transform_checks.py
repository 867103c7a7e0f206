"""Numerical checks shared by the transformation tests: directional derivatives by
central finite differences against jvp, the dot-product identity <u, J v> = <J^T u, v>
against vjp, to second order (the same checks applied to the jvp of the function), and
vmap against a Python loop over slices.  Everything runs under jit so that each check
compiles a handful of programs rather than one per operation."""
from __future__ import annotations

import numpy as np

import minijax
from minijax import tree_util


def leaves(tree):
  return [np.asarray(x, np.float64) for x in tree_util.tree_leaves(tree)]


def vdot(a, b) -> float:
  return float(sum(np.vdot(x.ravel(), y.ravel()) for x, y in zip(leaves(a), leaves(b))))


def rand_like(rng, tree):
  return tree_util.tree_map(
      lambda x: rng.standard_normal(np.shape(x)).astype(np.asarray(x).dtype), tree)


def _close(a, b, rtol, atol, what):
  for x, y in zip(leaves(a), leaves(b)):
    np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=what)


def check_jvp(f, args, v, eps, rtol, atol):
  out, t = minijax.jit(lambda a, v: minijax.jvp(f, a, v))(args, v)
  fj = minijax.jit(f)
  plus = fj(*tree_util.tree_map(lambda x, d: x + eps * d, args, v))
  minus = fj(*tree_util.tree_map(lambda x, d: x - eps * d, args, v))
  num = tree_util.tree_map(lambda p, m: (np.asarray(p, np.float64) - np.asarray(m, np.float64))
                           / (2 * eps), plus, minus)
  _close(t, num, rtol, atol, "jvp vs central differences")
  return out, t, num


def check_vjp(f, args, v, out, t, num, rng, rtol, atol):
  u = rand_like(rng, out)
  cts = minijax.jit(lambda a, u: minijax.vjp(f, *a)[1](u))(args, u)
  lhs, rhs = vdot(u, t), vdot(cts, v)
  scale = max(1.0, abs(lhs), abs(rhs))
  assert abs(lhs - rhs) <= 10 * rtol * scale + atol, ("<u, J v> != <J^T u, v>", lhs, rhs)
  num_lhs = vdot(u, num)
  assert abs(num_lhs - rhs) <= 10 * rtol * scale + 10 * atol, (
      "vjp vs central differences", num_lhs, rhs)


def check_grads(f, args, order=2, eps=1e-4, rtol=1e-5, atol=1e-6, seed=0):
  """Forward and reverse mode of `f` at `args` (a tuple) up to `order`."""
  rng = np.random.default_rng(seed)
  v = rand_like(rng, tuple(args))
  out, t, num = check_jvp(f, tuple(args), v, eps, rtol, atol)
  check_vjp(f, tuple(args), v, out, t, num, rng, rtol, atol)
  if order > 1:
    w = rand_like(rng, tuple(args))
    f_jvp = lambda *a: minijax.jvp(f, a, w)[1]
    check_grads(f_jvp, args, order - 1, eps, rtol * 10, atol * 10, seed + 1)


def batched(rng, x, axis, size):
  """`size` random values like `x`, stacked along `axis` (x itself when axis is None)."""
  if axis is None:
    return x
  x = np.asarray(x)
  slices = [x] + [x + rng.standard_normal(x.shape).astype(x.dtype) * 0.1
                  if np.issubdtype(x.dtype, np.floating) else x for _ in range(size - 1)]
  return np.stack(slices, axis=axis)


def check_vmap(f, args, in_axes, out_axes=0, size=3, seed=0):
  rng = np.random.default_rng(seed)
  bargs = [batched(rng, x, a, size) for x, a in zip(args, in_axes)]
  got = minijax.vmap(f, in_axes=tuple(in_axes), out_axes=out_axes)(*bargs)
  expected = []
  for i in range(size):
    sl = [x if a is None else np.take(x, i, axis=a) for x, a in zip(bargs, in_axes)]
    expected.append(leaves(f(*sl)))
  for k, g in enumerate(leaves(got)):
    want = np.stack([e[k] for e in expected], axis=out_axes)
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
