"""`lax.custom_linear_solve` and `lax.custom_root`: the solvers' results, differentiated by
the problem (implicitly) rather than through the solvers, under jvp, grad, jacfwd, second
order, vmap and jit, against numpy's linear algebra and closed forms."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax

pytestmark = pytest.mark.usefixtures("x64_off")

RNG = np.random.default_rng(0)
A = (RNG.standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def linear(a, b, transpose=True):
  """x = a^-1 b, solved by jnp.linalg.solve (whose own derivative is never used)."""
  return lax.custom_linear_solve(
      lambda x: a @ x, b, lambda matvec, y: jnp.linalg.solve(a, y),
      (lambda vecmat, y: jnp.linalg.solve(a.T, y)) if transpose else None)


def check(got, want, tol=1e-4):
  np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)


def test_custom_linear_solve_value_and_derivatives_are_the_problems():
  inv = np.linalg.inv(A.astype(np.float64))
  x = inv @ B
  check(linear(A, B), x)
  check(minijax.jit(linear)(A, B), x)
  # d/db sum(A^-1 b) = A^-T 1;  d/dA sum(A^-1 b) = -A^-T 1 x^T
  g_a, g_b = minijax.grad(lambda a, b: linear(a, b).sum(), (0, 1))(A, B)
  check(g_b, inv.T @ np.ones(3))
  check(g_a, -np.outer(inv.T @ np.ones(3), x))
  check(minijax.jacfwd(linear, 1)(A, B), inv)
  check(minijax.jvp(lambda a: linear(a, B), (A,), (np.eye(3, dtype=np.float32),))[1],
        -inv @ x)
  check(minijax.hessian(lambda b: (linear(A, b) ** 2).sum())(B), 2 * inv.T @ inv)
  check(minijax.vmap(linear, (None, 0))(A, np.stack([B, 2 * B])), [x, 2 * x])
  check(minijax.vmap(linear, (0, None))(np.stack([A, 2 * A]), B), [x, x / 2])
  check(minijax.jit(minijax.grad(lambda a: linear(a, B).sum()))(A),
        -np.outer(inv.T @ np.ones(3), x))


def test_custom_linear_solve_is_lowered_as_its_solver_and_needs_transpose_solve_backwards():
  text = minijax.jit(linear).lower(A, B).as_text()
  assert "custom_linear_solve" in text
  check(minijax.jvp(lambda b: linear(A, b, False), (B,), (B,))[1], np.linalg.solve(A, B))
  with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
    minijax.grad(lambda b: linear(A, b, False).sum())(B)
  s = A @ A.T
  symmetric = lambda s, b: lax.custom_linear_solve(  # noqa: E731
      lambda x: s @ x, b, lambda mv, y: jnp.linalg.solve(s, y), symmetric=True)
  check(minijax.grad(lambda b: symmetric(s, b).sum())(B),
        np.linalg.solve(s.astype(np.float64), np.ones(3)))


def test_custom_linear_solve_takes_pytrees_and_aux():
  b = {"a": B, "c": np.float32(3.0)}

  def solve(a, b):
    return lax.custom_linear_solve(
        lambda x: {"a": a @ x["a"], "c": 2.0 * x["c"]}, b,
        lambda mv, y: ({"a": jnp.linalg.solve(a, y["a"]), "c": y["c"] / 2.0}, jnp.int32(7)),
        lambda vm, y: ({"a": jnp.linalg.solve(a.T, y["a"]), "c": y["c"] / 2.0},
                       jnp.int32(7)), has_aux=True)

  x, aux = solve(A, b)
  check(x["a"], np.linalg.solve(A.astype(np.float64), B))
  assert float(x["c"]) == 1.5 and int(aux) == 7
  check(minijax.grad(lambda b: solve(A, b)[0]["c"])(b)["c"], 0.5)
  with pytest.raises(TypeError, match="matvec must return the structure of b"):
    lax.custom_linear_solve(lambda x: x["a"], b, lambda mv, y: y)


def newton_sqrt(a, aux=False):
  """sqrt(a) as the root of x^2 - a, found by 20 Newton steps."""
  def newton(f, x0):
    x = lax.fori_loop(0, 20, lambda i, x: x - f(x) / (2 * x), x0)
    return (x, jnp.int32(20)) if aux else x
  return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0),
                         has_aux=aux)


def test_custom_root_derivatives_come_from_the_implicit_function_theorem():
  a = np.float32(2.0)
  check(newton_sqrt(a), np.sqrt(2.0), 1e-6)
  check(minijax.grad(newton_sqrt)(a), 0.5 / np.sqrt(2.0), 1e-6)  # d sqrt(a) = 1 / (2 sqrt a)
  check(minijax.jit(minijax.grad(newton_sqrt))(a), 0.5 / np.sqrt(2.0), 1e-6)
  check(minijax.grad(minijax.grad(newton_sqrt))(a), -0.25 * 2.0 ** -1.5, 1e-5)
  check(minijax.vmap(minijax.grad(newton_sqrt))(np.array([4.0, 9.0], np.float32)), [0.25, 1 / 6])
  x, iterations = newton_sqrt(a, aux=True)
  assert int(iterations) == 20
  check(minijax.grad(lambda a: newton_sqrt(a, aux=True)[0])(a), 0.5 / np.sqrt(2.0), 1e-6)


def test_custom_root_of_a_linear_system_closing_over_traced_parameters():
  def root(a, b):
    def tangent_solve(g, y):
      return jnp.linalg.solve(minijax.jacfwd(g)(y), y)
    return lax.custom_root(lambda x: a @ x - b, jnp.zeros(3), lambda f, x0: jnp.linalg.solve(a, b),
                           tangent_solve)
  inv = np.linalg.inv(A.astype(np.float64))
  x = inv @ B
  check(root(A, B), x)
  g_a, g_b = minijax.grad(lambda a, b: root(a, b).sum(), (0, 1))(A, B)
  check(g_b, inv.T @ np.ones(3))
  check(g_a, -np.outer(inv.T @ np.ones(3), x))


def test_custom_root_whose_solvers_close_over_the_differentiated_value():
  # (the tangent_solve closing over `a` leaked a's JVP tracer into the backward pass)
  def sqrt(a):
    return lax.custom_root(lambda x: x ** 2 - a, 1.0, lambda f, x0: jnp.sqrt(a),
                           lambda g, y: y / (2 * jnp.sqrt(a)))
  for run in (minijax.grad(sqrt), minijax.jit(minijax.grad(sqrt))):
    check(run(np.float32(2.0)), 0.5 / np.sqrt(2.0))
  check(minijax.vmap(minijax.grad(sqrt))(np.float32([2.0, 9.0])), 0.5 / np.sqrt([2.0, 9.0]))
  check(minijax.grad(minijax.grad(sqrt))(np.float32(2.0)), -0.25 * 2.0 ** -1.5)
  check(minijax.jvp(sqrt, (np.float32(4.0),), (np.float32(1.0),))[1], 0.25)
  with pytest.raises(TypeError, match=r"function <lambda> at .* traced for custom_root solve "
                                      r"returned a value of type <class 'str'>"):
    lax.custom_root(lambda x: x - 3.0, 0.0, lambda f, x0: (3.0, "aux"), lambda g, y: y,
                    has_aux=True)
