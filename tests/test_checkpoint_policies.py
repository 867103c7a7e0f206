"""`checkpoint(policy=...)` and `checkpoint_name`: what reverse mode saves and what it runs
again in the backward pass, as JAX 0.10.2 decides (the counts of debug prints below were
recorded from jax 0.10.2's `debugging_primitives_test.test_remat_of_debug_print`)."""
import numpy as np
import pytest

import minijax
from minijax import ad_checkpoint as ac
from minijax import numpy as jnp
from minijax.experimental import io_callback


def _named(x):
  y = ac.checkpoint_name(x + 1.0, "y")
  z = ac.checkpoint_name(y * 2.0, "z")
  minijax.debug.print("y: {}, z: {}", y, z)
  return ac.checkpoint_name(jnp.exp(z), "w")


def _but(*names):
  """Saves everything (debug callbacks included) except the values named `names`."""
  def policy(prim, *avals, **params):
    return params["name"] not in names if prim is ac.name_p else True
  return policy


@pytest.mark.parametrize("policy, prints", [
    (ac.everything_saveable, 1), (ac.nothing_saveable, 2), (None, 2),
    (ac.save_any_names_but_these("z"), 2), (_but("y"), 1), (_but("y", "z"), 2),
])
def test_a_debug_print_in_checkpoint_runs_again_only_where_the_policy_recomputes(
    capfd, policy, prints):
  grad = minijax.grad(minijax.checkpoint(_named, policy=policy))(2.0)
  minijax.effects_barrier()
  assert capfd.readouterr().out == "y: 3.0, z: 6.0\n" * prints
  np.testing.assert_allclose(float(grad), 2 * np.exp(6.0), rtol=1e-6)


def _count(prim_name, jaxpr) -> int:
  return sum(e.primitive.name == prim_name for e in jaxpr.eqns)


def _backward_remat(policy):
  """The `checkpoint` equation the backward pass runs for `sin(sin(x))` under `policy`."""
  f = minijax.checkpoint(lambda x: jnp.sin(ac.checkpoint_name(jnp.sin(x), "s")), policy=policy)
  jaxpr = minijax.make_jaxpr(minijax.grad(f))(1.0)
  (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "checkpoint"]
  return eqn.params["jaxpr"].jaxpr


def test_saved_names_are_not_recomputed_and_the_others_are():
  assert _count("sin", _backward_remat(None)) == 1  # sin(x) again, for the outer cos
  assert _count("sin", _backward_remat(ac.save_only_these_names("s"))) == 0
  assert _count("sin", _backward_remat(ac.save_any_names_but_these("s"))) == 1
  both = ac.save_from_both_policies(ac.nothing_saveable, ac.save_only_these_names("s"))
  assert _count("sin", _backward_remat(both)) == 0


@pytest.mark.parametrize("policy", [None, ac.everything_saveable, ac.dots_saveable,
                                    ac.save_only_these_names("s")])
def test_every_policy_gives_the_same_gradient(policy):
  def f(w, x):
    return jnp.sum(jnp.tanh(ac.checkpoint_name(jnp.dot(w, x), "s")) ** 2)
  w = np.arange(6, dtype=np.float32).reshape(2, 3) / 10
  x = np.arange(3, dtype=np.float32)
  want = minijax.grad(f)(w, x)
  got = minijax.jit(minijax.grad(minijax.checkpoint(f, policy=policy)))(w, x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_checkpoint_name_is_the_identity_under_every_transformation():
  f = lambda x: ac.checkpoint_name(x * 3.0, "n")
  assert float(f(2.0)) == 6.0
  assert float(minijax.grad(f)(2.0)) == 3.0
  np.testing.assert_array_equal(minijax.vmap(f)(jnp.arange(3.0)), [0.0, 3.0, 6.0])
  assert "name[name=n]" in str(minijax.make_jaxpr(f)(1.0))


def test_a_policy_must_be_callable():
  with pytest.raises(TypeError, match="policy must be a callable"):
    minijax.checkpoint(lambda x: x, policy="dots")


def test_an_io_callback_in_checkpoint_is_refused_under_grad_as_in_jax():
  def f(x, y):
    io_callback(lambda v: v, y, y)
    return x
  assert float(minijax.checkpoint(f)(2.0, 3.0)) == 2.0  # without reverse mode it runs
  with pytest.raises(NotImplementedError,
                     match="Effects not supported in partial-eval of `checkpoint`"):
    minijax.grad(minijax.checkpoint(f))(2.0, 3.0)


# ---- nested checkpoints: the inner `checkpoint` (like an inner `jit`, `scan` or `cond`) of the
# jvp'd body has known primal and unknown tangent inputs; it splits by its own rule, so its
# primal outputs stay known and the outer policy classifies its known part.
def _inner(x):
  return ac.checkpoint_name(jnp.sin(x), "s") ** 2 * jnp.cos(x)


def _nested(inner_policy, outer_policy):
  g = minijax.checkpoint(_inner, policy=inner_policy)
  return minijax.checkpoint(lambda x: g(x) + jnp.sin(g(x * 2.0)), policy=outer_policy)


def _plain(x):
  return _inner(x) + jnp.sin(_inner(x * 2.0))


def test_a_nested_checkpoint_under_grad_keeps_its_primal_outputs_known():
  @minijax.checkpoint
  def g(x):
    return jnp.sin(x) ** 2
  nested = minijax.checkpoint(lambda x: g(x) + 1.0)
  value, grad = minijax.value_and_grad(nested)(jnp.float32(1.0))
  np.testing.assert_allclose(float(value), 1.7080734, rtol=1e-6)  # recorded from jax 0.10.2
  np.testing.assert_allclose(float(grad), 0.90929735, rtol=1e-6)


_POLICIES = [None, ac.everything_saveable, ac.dots_saveable, ac.save_only_these_names("s")]


@pytest.mark.parametrize("inner_policy", _POLICIES)
@pytest.mark.parametrize("outer_policy", _POLICIES)
def test_nested_checkpoints_differentiate_like_the_plain_function(inner_policy, outer_policy):
  f = _nested(inner_policy, outer_policy)
  x = jnp.float32(0.7)
  close = lambda got, want: np.testing.assert_allclose(np.asarray(got), np.asarray(want),
                                                       rtol=2e-5, atol=1e-6)
  close(minijax.grad(f)(x), minijax.grad(_plain)(x))
  close(minijax.grad(minijax.grad(f))(x), minijax.grad(minijax.grad(_plain))(x))
  xs = jnp.arange(3, dtype=jnp.float32)
  close(minijax.vmap(minijax.grad(f))(xs), minijax.vmap(minijax.grad(_plain))(xs))
  close(minijax.grad(minijax.jit(f))(x), minijax.grad(_plain)(x))
  in_jit = minijax.checkpoint(lambda x: minijax.jit(f)(x) * 2.0, policy=outer_policy)
  close(minijax.grad(in_jit)(x), 2 * minijax.grad(_plain)(x))

  def loop(fun):
    return lambda x: minijax.lax.scan(lambda c, _: (fun(c), None), x, None, length=3)[0]
  close(minijax.grad(minijax.checkpoint(loop(f), policy=outer_policy))(x),
        minijax.grad(loop(_plain))(x))

  def branch(fun):
    return lambda x: minijax.lax.cond(x > 0, fun, lambda y: y, x)
  close(minijax.grad(minijax.checkpoint(branch(f), policy=outer_policy))(x),
        minijax.grad(branch(_plain))(x))


def test_the_outer_policy_saves_a_name_from_the_inner_checkpoint():
  g = minijax.checkpoint(lambda x: ac.checkpoint_name(jnp.sin(x), "s") * 2.0)
  for policy, sins in ((None, 1), (ac.save_only_these_names("s"), 0)):
    f = minijax.checkpoint(lambda x: jnp.sin(g(x)), policy=policy)
    jaxpr = minijax.make_jaxpr(minijax.grad(f))(1.0)
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "checkpoint"]
    assert _count("sin", eqn.params["jaxpr"].jaxpr) == sins
    np.testing.assert_allclose(float(minijax.grad(f)(1.0)),
                               np.cos(2 * np.sin(1.0)) * 2 * np.cos(1.0), rtol=1e-6)


def _printing(x):
  y = ac.checkpoint_name(jnp.sin(x), "y")
  minijax.debug.print("inner {}", y)
  return y * y


# (inner policy, outer policy, whether the inner one is called through jit, prints):
# recorded from jax 0.10.2, where the outer policy decides what is saved.
@pytest.mark.parametrize("inner, outer, jitted, prints", [
    (None, None, False, 3), (None, None, True, 3),
    (None, ac.everything_saveable, False, 1), (None, ac.everything_saveable, True, 1),
    (ac.everything_saveable, None, False, 2), (ac.everything_saveable, None, True, 2),
    (ac.everything_saveable, ac.save_only_these_names("y"), False, 3),
    (ac.save_only_these_names("y"), ac.everything_saveable, False, 1),
])
def test_a_debug_print_in_a_nested_checkpoint_runs_as_often_as_in_jax(
    capfd, inner, outer, jitted, prints):
  g = minijax.checkpoint(_printing, policy=inner)
  g = minijax.jit(g) if jitted else g
  grad = minijax.grad(minijax.checkpoint(lambda x: g(x) + 1.0, policy=outer))(1.0)
  minijax.effects_barrier()
  assert capfd.readouterr().out == "inner 0.8414709568023682\n" * prints
  np.testing.assert_allclose(float(grad), np.sin(2.0), rtol=1e-6)
