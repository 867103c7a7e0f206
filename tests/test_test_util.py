"""`minijax.test_util.check_grads` as JAX's: it does its arithmetic in the arguments' dtypes
with JAX's per-dtype tolerances, pairs complex cotangents as JAX does, and passes in float32
where JAX's passes (the calls of JAX's tutorials); wrong derivatives still fail it."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import random
from minijax.test_util import check_grads, check_vjp


def test_the_automatic_differentiation_tutorial_call_passes_in_float32():
  # JAX's docs/automatic-differentiation.md, section 5, as written there
  def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)

  def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)

  inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30],
                      [0.74, -2.49, 1.39]])
  targets = jnp.array([True, True, False, True])

  def loss(W, b):
    preds = predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

  key = random.key(0)
  key, W_key, b_key = random.split(key, 3)
  W, b = random.normal(W_key, (3,)), random.normal(b_key, ())
  assert W.dtype == np.float32
  check_grads(loss, (W, b), order=2)
  check_grads(loss, (W, b), order=2, modes=["lin"])


def test_python_scalars_are_checked_with_the_tolerance_of_their_canonical_dtype():
  # (2.5 is float32 to minijax without x64: float64's tolerance would fail the check)
  check_grads(lambda a: a ** 3, (2.5,), order=3)


def test_holomorphic_functions_pass_in_complex64():
  z = np.array([0.3 + 1j, -1 + 0.5j, 0.2 - 0.7j], np.complex64)
  check_grads(lambda a: jnp.sin(a) * a, (z,), order=2)
  check_grads(lambda a: jnp.exp(a) / (a + 2), (z,), order=2)


def test_wrong_derivatives_fail():
  @minijax.custom_jvp
  def f(x):
    return jnp.sin(x)

  f.defjvp(lambda primals, tangents: (f(primals[0]), 1.1 * jnp.cos(primals[0]) * tangents[0]))
  x = np.linspace(-1, 1, 5).astype(np.float32)
  with pytest.raises(AssertionError, match="JVP tangent"):
    check_grads(f, (x,), order=1, modes=["fwd"])
  with pytest.raises(AssertionError, match="cotangent projection"):
    check_grads(f, (x,), order=1, modes=["rev"])
  conj_wrong = lambda z: (jnp.sin(z), lambda ct: (jnp.conj(jnp.cos(z)) * ct,))
  with pytest.raises(AssertionError, match="cotangent projection"):
    check_vjp(jnp.sin, conj_wrong, (np.array([0.3 + 1j], np.complex64),))
  check_vjp(jnp.sin, functools.partial(minijax.vjp, jnp.sin),
            (np.array([0.3 + 1j], np.complex64),))
