"""`minijax.experimental.ode.odeint`: Dormand-Prince with adaptive steps and the adjoint
method for reverse mode, checked against exact solutions, finite differences and numbers
recorded from jax 0.10.2's `jax.experimental.ode.odeint` (float32, within its tolerance)."""
import numpy as np
import pytest

import minijax
from minijax import numpy as jnp
from minijax.experimental import host_callback as hcb
from minijax.experimental.ode import odeint

TS = np.linspace(0.0, 2.0, 5, dtype=np.float32)


def decay(y, t, k):
  return -k * y


def pend(y, t, m, g):
  theta, omega = y
  return [omega, -m * omega - g * jnp.sin(theta)]


def test_odeint_solves_exponential_decay_eagerly_and_under_jit():
  exact = np.exp(-0.7 * TS)
  np.testing.assert_allclose(odeint(decay, 1.0, TS, 0.7), exact, rtol=2e-6)
  np.testing.assert_allclose(minijax.jit(lambda k: odeint(decay, 1.0, TS, k))(0.7), exact,
                             rtol=2e-6)
  # tolerances and step limits are honoured: a loose rtol takes fewer steps, still close;
  # the steps are JAX's (its step-size rule and error estimate): these are JAX 0.10.2's values
  loose = odeint(decay, 1.0, TS, 0.7, rtol=1e-3, atol=1e-3)
  np.testing.assert_allclose(loose, exact, rtol=2e-3)
  np.testing.assert_allclose(loose, [1.0, 0.7044333219528198, 0.4964957535266876,
                                     0.35001131892204285, 0.24618610739707947], rtol=1e-6)


def test_odeint_of_a_pendulum_matches_jax():
  ts = np.linspace(0.0, 1.0, 5, dtype=np.float32)
  y0 = [np.pi - 0.1, 0.0]
  theta, omega = odeint(pend, y0, ts, 0.25, 9.8)
  np.testing.assert_allclose(theta, [3.041592597961426, 3.010100841522217, 2.8986880779266357,
                                     2.6444365978240967, 2.1133992671966553], rtol=2e-6)
  np.testing.assert_allclose(omega, [0.0, -0.26190677285194397, -0.6695144772529602,
                                     -1.4525773525238037, -2.9375874996185303], rtol=2e-6)
  dm, dg = minijax.grad(lambda m, g: odeint(pend, y0, ts, m, g)[0][-1], argnums=(0, 1))(
      0.25, 9.8)
  np.testing.assert_allclose([dm, dg], [0.32603046, -0.15403526], rtol=1e-5)
  d_y0 = minijax.grad(lambda y0: odeint(pend, y0, ts, 0.25, 9.8)[1].sum())(y0)
  np.testing.assert_allclose(d_y0, [48.46121, 16.717949], rtol=1e-5)


def test_the_adjoint_gives_the_exact_gradients_of_decay():
  # y(t) = y0 exp(-k (t - t0)): d/dk, d/dy0, d/dt of the last and first times
  g_k = minijax.grad(lambda k: odeint(decay, 1.0, TS, k)[-1])(0.7)
  np.testing.assert_allclose(g_k, -2.0 * np.exp(-1.4), rtol=1e-5)
  g_y0 = minijax.grad(lambda y0: odeint(decay, y0, TS, 0.7).sum())(1.0)
  np.testing.assert_allclose(g_y0, np.exp(-0.7 * TS).sum(), rtol=1e-5)
  g_t = minijax.grad(lambda t: odeint(decay, 1.0, t, 0.7)[-1])(jnp.asarray(TS))
  slope = 0.7 * np.exp(-1.4)
  np.testing.assert_allclose(g_t, [slope, 0, 0, 0, -slope], rtol=1e-5, atol=1e-7)


def test_the_state_may_be_a_pytree_and_func_may_close_over_traced_values():
  def f(y, t, c):
    return {"a": -c * y["a"], "b": y["a"]}
  ys = odeint(f, {"a": 1.0, "b": 0.0}, TS, 2.0)
  np.testing.assert_allclose(ys["a"], np.exp(-2.0 * TS), rtol=2e-6)
  np.testing.assert_allclose(ys["b"], (1 - np.exp(-2.0 * TS)) / 2, rtol=2e-6, atol=1e-7)

  def closed(k):  # k reaches func by closure, not through *args
    return odeint(lambda y, t: -k * y, 1.0, TS)[-1]
  np.testing.assert_allclose(minijax.grad(closed)(0.7), -2.0 * np.exp(-1.4), rtol=1e-5)
  np.testing.assert_allclose(minijax.vmap(minijax.grad(closed))(jnp.array([0.5, 0.7])),
                             -2.0 * np.exp(-2.0 * np.array([0.5, 0.7])), rtol=1e-5)


def test_complex_states_are_integrated_and_differentiated():
  f = lambda y, t, alpha: alpha * y  # noqa: E731
  ys = odeint(f, jnp.complex64(1 + 2j), TS, jnp.complex64(-0.5 + 1j))
  np.testing.assert_allclose(ys, (1 + 2j) * np.exp((-0.5 + 1j) * TS), rtol=1e-5)
  g = minijax.grad(lambda a: odeint(f, jnp.complex64(1 + 0j), TS, a)[-1].real)(-0.5)
  np.testing.assert_allclose(g, 2.0 * np.exp(-1.0), rtol=1e-5)  # d/da exp(2a) at -1/2


def test_forward_mode_and_bad_arguments_are_refused():
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff|custom_vjp"):
    minijax.jvp(lambda k: odeint(decay, 1.0, TS, k), (0.7,), (1.0,))
  with pytest.raises(TypeError, match="The contents of odeint \\*args must be arrays or "
                                      "scalars, but got"):
    odeint(lambda y, t, f: f(y), 1.0, TS, jnp.sin)


def test_taps_in_the_dynamics_run_under_grad_with_jax_0_4_34_semantics():
  """JAX 0.4.34's host_callback test_tap_odeint: a tap in func, under grad, must not fail
  (the forward and the backward pass both evaluate func, so both tap)."""
  previous = minijax.config.host_callback_semantics
  minijax.config.update("host_callback_semantics", "jax")
  seen = []
  try:
    def f(x, t, k):
      x = hcb.id_tap(lambda v, _: seen.append(float(v)), x,
                     callback_flavor=hcb.CallbackFlavor.DEBUG)
      return -k * x
    loss = lambda k: odeint(f, 1.0, jnp.linspace(0, 0.001, num=2), k)[-1]  # noqa: E731
    np.testing.assert_allclose(minijax.grad(loss)(1.0), -0.001 * np.exp(-0.001), rtol=1e-4)
    hcb.barrier_wait()
  finally:
    minijax.config.update("host_callback_semantics", previous)
  assert len(seen) > 7 and all(0.95 < v < 1.05 for v in seen)  # (trial steps overshoot)
