"""Numerical checks shared by the transformation tests: directional derivatives by
central finite differences against jvp, the dot-product identity <u, J v> = <J^T u, v>
against vjp, to second order (the same checks applied to the jvp of the function), and
vmap against a Python loop over slices.  Everything runs under jit so that each check
compiles a handful of programs rather than one per operation.

Complex values are points of R^2: perturbations and cotangents are complex, and the pairing
of a cotangent u with a tangent t is Re(sum(u * t)) (no conjugation), the one under which
JAX's transposes (which never conjugate) are adjoints."""
from __future__ import annotations

import numpy as np

import minijax
from minijax import tree_util


def _wide(x):
  x = np.asarray(x)
  return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def leaves(tree):
  return [_wide(x) for x in tree_util.tree_leaves(tree)]


def vdot(a, b) -> float:
  return float(sum(np.sum(x * y).real for x, y in zip(leaves(a), leaves(b))))


def _normal(rng, shape, dtype):
  if np.issubdtype(dtype, np.complexfloating):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


def rand_like(rng, tree):
  return tree_util.tree_map(lambda x: _normal(rng, np.shape(x), np.asarray(x).dtype), tree)


def _close(a, b, rtol, atol, what):
  for x, y in zip(leaves(a), leaves(b)):
    np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=what)


def _pattern(shape, dtype):
  """A fixed, irregular cotangent of a given shape (built while tracing)."""
  n = int(np.prod(shape))
  pattern = np.cos(np.arange(n) * 1.37 + 0.5)
  if np.issubdtype(dtype, np.complexfloating):
    pattern = pattern + 1j * np.sin(np.arange(n) * 0.91 + 0.2)
  return pattern.reshape(shape).astype(dtype)


def _derivatives(f, args, v, eps):
  """jvp, vjp and the two finite-difference evaluations of `f` (traced, for one program)."""
  out, t = minijax.jvp(f, args, v)
  plus = f(*tree_util.tree_map(lambda x, d: x + eps * d, args, v))
  minus = f(*tree_util.tree_map(lambda x, d: x - eps * d, args, v))
  u = tree_util.tree_map(lambda o: _pattern(o.shape, o.dtype), out)
  cts = minijax.vjp(f, *args)[1](u)
  return t, plus, minus, u, cts


def _check_derivatives(results, v, eps, rtol, atol, order):
  t, plus, minus, u, cts = results
  num = tree_util.tree_map(lambda p, m: (_wide(p) - _wide(m)) / (2 * eps), plus, minus)
  _close(t, num, rtol, atol, f"order {order}: jvp vs central differences")
  lhs, rhs, num_lhs = vdot(u, t), vdot(cts, v), vdot(u, num)
  scale = max(1.0, abs(lhs), abs(rhs))
  assert abs(lhs - rhs) <= 10 * rtol * scale + atol, (
      f"order {order}: <u, J v> != <J^T u, v>", lhs, rhs)
  assert abs(num_lhs - rhs) <= 10 * rtol * scale + 10 * atol, (
      f"order {order}: vjp vs central differences", num_lhs, rhs)


class GradCheck:
  """Forward and reverse mode of `f` at `args` (a tuple) up to `order` (order k checks the
  derivatives of the jvp of order k-1): the tangent against central differences, and
  <u, J v> against <J^T u, v> and against the differences.  `traced` builds the program,
  `verify` checks its results, so that many checks can share one compiled program."""

  def __init__(self, f, args, order=2, eps=1e-4, rtol=1e-5, atol=1e-6, seed=0):
    rng = np.random.default_rng(seed)
    self.args = tuple(args)
    self.vs = [rand_like(rng, self.args) for _ in range(order)]
    ws = [rand_like(rng, self.args) for _ in range(order)]
    self.fs = [f]
    for k in range(1, order):
      self.fs.append(lambda *a, g=self.fs[-1], w=ws[k]: minijax.jvp(g, a, w)[1])
    self.eps, self.rtol, self.atol = eps, rtol, atol

  def traced(self, args, vs):
    return [_derivatives(g, args, v, self.eps) for g, v in zip(self.fs, vs)]

  def verify(self, results):
    for k, (res, v) in enumerate(zip(results, self.vs)):
      _check_derivatives(res, v, self.eps, self.rtol * 10 ** k, self.atol * 10 ** k, k + 1)

  def run(self):
    self.verify(minijax.jit(self.traced)(self.args, self.vs))


def check_grads(f, args, order=2, eps=1e-4, rtol=1e-5, atol=1e-6, seed=0):
  GradCheck(f, args, order, eps, rtol, atol, seed).run()


_CHECKS_PER_PROGRAM = 10  # XLA's compile time grows faster than a program's size


def run_together(checks: dict) -> dict:
  """Runs the programs of several checks (`name -> check`) as a few compiled programs of
  up to `_CHECKS_PER_PROGRAM` checks each and returns `name -> results`; the checks of a
  program that fails are left out, and each then runs alone (its error shows in its own
  test)."""
  names, results = list(checks), {}
  for start in range(0, len(names), _CHECKS_PER_PROGRAM):
    some = names[start:start + _CHECKS_PER_PROGRAM]
    try:
      outs = minijax.jit(lambda inputs: [checks[n].traced(*i) for n, i in zip(some, inputs)])(
          [checks[n].inputs() for n in some])
    except Exception:
      continue
    results.update(zip(some, outs))
  return results


GradCheck.inputs = lambda self: (self.args, self.vs)


def gradient_checks_in_x64(grads: dict) -> tuple[dict, dict]:
  """`name -> (f, args, order)` as float64 `GradCheck`s, run together (`run_together`):
  `(checks, results)` for `verify_gradient_check` (results may miss a check whose
  program failed)."""
  minijax.config.update("enable_x64", True)
  try:
    checks = {n: GradCheck(f, args, order=order, rtol=1e-5, atol=1e-6)
              for n, (f, args, order) in grads.items()}
    return checks, run_together(checks)
  finally:
    minijax.config.update("enable_x64", False)


def verify_gradient_check(checks_and_results: tuple[dict, dict], name: str) -> None:
  """Checks the results of `name` from `gradient_checks_in_x64`, or runs it alone."""
  checks, results = checks_and_results
  if name in results:
    checks[name].verify(results[name])
  else:
    checks[name].run()


def batched(rng, x, axis, size):
  """`size` random values like `x`, stacked along `axis` (x itself when axis is None)."""
  if axis is None:
    return x
  x = np.asarray(x)
  slices = [x] + [x + _normal(rng, x.shape, x.dtype) * 0.1
                  if np.issubdtype(x.dtype, np.inexact) else x for _ in range(size - 1)]
  return np.stack(slices, axis=axis)


class VmapCheck:
  """vmap of `f` for each `(in_axes, out_axes)` variant against `f` on each slice."""

  def __init__(self, f, args, variants, size=3, seed=0):
    rng = np.random.default_rng(seed)
    self.f, self.variants = f, variants
    self.all_bargs, self.all_slices = [], []
    for in_axes, _ in variants:
      bargs = [batched(rng, x, a, size) for x, a in zip(args, in_axes)]
      self.all_bargs.append(bargs)
      self.all_slices.append([[x if a is None else np.take(x, i, axis=a)
                               for x, a in zip(bargs, in_axes)] for i in range(size)])

  def inputs(self):
    return self.all_bargs, self.all_slices

  def traced(self, all_bargs, all_slices):
    f = self.f
    return [(minijax.vmap(f, in_axes=tuple(in_axes), out_axes=out_axes)(*bargs),
             [f(*sl) for sl in slices])
            for (in_axes, out_axes), bargs, slices in zip(self.variants, all_bargs, all_slices)]

  def verify(self, results):
    for (in_axes, out_axes), (got, expected) in zip(self.variants, results):
      expected = [leaves(e) for e in expected]
      for k, g in enumerate(leaves(got)):
        want = np.stack([e[k] for e in expected], axis=out_axes)
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"in_axes={in_axes} out_axes={out_axes}")

  def run(self):
    self.verify(minijax.jit(self.traced)(*self.inputs()))


def check_vmap(f, args, variants, size=3, seed=0):
  VmapCheck(f, args, variants, size, seed).run()
