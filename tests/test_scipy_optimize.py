"""scipy.optimize.minimize with BFGS: minima as JAX's and scipy's, under jit, with JAX's
options, statuses and errors."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.scipy.optimize import minimize


def rosenbrock(x):
  return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def himmelblau(x):
  return (x[0] ** 2 + x[1] - 11.0) ** 2 + (x[0] + x[1] ** 2 - 7.0) ** 2


def test_bfgs_finds_the_minima_jax_and_scipy_find(x64):
  result = minimize(rosenbrock, np.array([-1.2, 1.0]), method="BFGS")
  np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-5)
  assert bool(result.success) and int(result.status) == 0
  assert float(jnp.max(jnp.abs(result.jac))) < 1e-5
  # the 4-d Rosenbrock from this start has a local minimum, scipy's (JAX's line search
  # gives up at its first step: status 3)
  far = minimize(rosenbrock, np.array([-1.2, 1.0, 0.5, 1.3]), method="BFGS")
  np.testing.assert_allclose(far.x, [-0.7756592, 0.6130934, 0.3820628, 0.1459717],
                             atol=1e-5)
  # JAX's iteration and evaluation counts on Himmelblau's function (nit 8) and the
  # minimum (3, 2)
  hb = minijax.jit(lambda x0: minimize(himmelblau, x0, method="bfgs"))(np.ones(2))
  np.testing.assert_allclose(hb.x, [3.0, 2.0], atol=1e-6)
  assert int(hb.nit) == 8 and hb.hess_inv.shape == (2, 2)


def test_bfgs_options_args_and_statuses():
  shifted = lambda x, c: jnp.sum((x - c) ** 2)  # noqa: E731
  result = minimize(shifted, np.zeros(3, np.float32), args=(3.0,), method="BFGS")
  np.testing.assert_allclose(result.x, [3.0, 3.0, 3.0], rtol=1e-6)
  assert result.x.dtype == np.float32 and int(result.nit) == 3  # (as in JAX)
  capped = minimize(rosenbrock, np.array([-1.2, 1.0], np.float32), method="BFGS",
                    options={"maxiter": 2})
  assert int(capped.status) == 1 and not bool(capped.success) and int(capped.nit) == 2
  # tol is the gradient tolerance, as in scipy
  x0 = np.array([-1.2, 1.0], np.float32)
  loose = minimize(rosenbrock, x0, method="BFGS", tol=1e-1)
  tight = minimize(rosenbrock, x0, method="BFGS")
  assert int(loose.nit) < int(tight.nit) and float(jnp.max(jnp.abs(loose.jac))) < 1e-1


def test_bad_arguments_are_refused():
  with pytest.raises(TypeError, match="args argument .* must be a tuple"):
    minimize(rosenbrock, np.zeros(2), args=[1], method="BFGS")
  with pytest.raises(ValueError, match="Method Nelder-Mead not recognized"):
    minimize(rosenbrock, np.zeros(2), method="Nelder-Mead")
  with pytest.raises(ValueError, match="x0 must be a 1-dimensional array"):
    minimize(rosenbrock, np.zeros((2, 2)), method="BFGS")
