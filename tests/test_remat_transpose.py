"""Reverse mode through `checkpoint` of loops: the transpose of a `checkpoint` splits its
staged recomputation by partial evaluation (as JAX does), so the primal carried through a
recomputed `scan` beside its tangent is recomputed, not handed to a transpose rule (which
`sin` and `cos` do not have).  Derivatives are checked against central differences."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax

from tests.transform_checks import gradient_checks_in_x64, verify_gradient_check


@minijax.custom_jvp
def _sin(x):
  return jnp.sin(x)


_sin.defjvp(lambda primals, tangents: (_sin(primals[0]), jnp.cos(primals[0]) * tangents[0]))


def _loop(step, n=3):
  return lambda x: lax.scan(lambda c, _: (step(c), None), x, None, length=n)[0]


X = np.array([0.7, -0.4, 1.3])

GRADS = {
    "checkpoint_of_scan": (minijax.checkpoint(_loop(jnp.sin)), (X,), 2),
    "checkpoint_of_scan_with_ys": (
        minijax.checkpoint(lambda x: lax.scan(lambda c, y: (jnp.cos(c) * y, c * c), x,
                                              jnp.stack([X, X * 2]))), (X,), 2),
    "checkpoint_of_fori_loop": (
        minijax.checkpoint(lambda x: lax.fori_loop(0, 4, lambda i, c: jnp.sin(c) + i, x)),
        (X,), 2),
    "checkpoint_of_custom_jvp_in_scan": (minijax.checkpoint(_loop(_sin)), (X,), 2),
    "scan_of_checkpointed_custom_jvp": (_loop(minijax.checkpoint(lambda c: _sin(c) * c)),
                                        (X,), 2),
    "nested_checkpoints_of_scans": (
        minijax.checkpoint(_loop(minijax.checkpoint(_loop(jnp.cos, 2)))), (X,), 2),
    "checkpoint_of_cond_in_scan": (
        minijax.checkpoint(_loop(lambda c: lax.cond(c.sum() > 0, jnp.sin, jnp.cos, c))),
        (X,), 2),
}


@pytest.fixture(scope="module")
def grad_results():
  return gradient_checks_in_x64(GRADS)


@pytest.mark.parametrize("name", list(GRADS))
def test_reverse_mode_through_checkpointed_loops_matches_finite_differences(
    name, grad_results, x64):
  verify_gradient_check(grad_results, name)


def test_grad_of_a_checkpointed_scan_is_the_chain_rule():
  x = np.float32(0.7)
  g = minijax.grad(minijax.checkpoint(_loop(jnp.sin)))(x)
  a = np.sin(np.float64(x))
  b = np.sin(a)
  np.testing.assert_allclose(g, np.cos(x) * np.cos(a) * np.cos(b), rtol=1e-6)
  np.testing.assert_allclose(minijax.jit(minijax.grad(minijax.checkpoint(_loop(jnp.sin))))(x),
                             g, rtol=1e-6)
  # the recomputation stays in the backward pass, inside the transposed checkpoint
  jaxpr = minijax.make_jaxpr(minijax.grad(minijax.checkpoint(_loop(jnp.sin))))(x)
  (backward,) = [e for e in jaxpr.eqns if e.primitive.name == "checkpoint"]
  assert "sin" in str(backward.params["jaxpr"]) and "scan" in str(backward.params["jaxpr"])
