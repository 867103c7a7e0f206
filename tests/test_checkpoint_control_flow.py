"""`checkpoint` policies reach inside the `cond`, `scan`, `while_loop`, `jit` and
`custom_jvp` calls of a checkpointed function, as JAX 0.10.2's do: what the linearized (or
vjp) jaxpr recomputes is what JAX's recomputes.  The counts of `sin`/`cos`/`dot_general`
below were recorded from jax 0.10.2 (the same programs as its api_test.py RematTest).
And no non-linear equation is left to transpose (custom_jvp calls, unused jit outputs)."""
from functools import partial

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax import numpy as jnp
from minijax.interpreters import partial_eval as pe

cp = minijax.checkpoint_policies
save_cos = lambda prim, *_, **__: str(prim) == "cos"
save_sin = lambda prim, *_, **__: str(prim) == "sin"


def _linearized_text(f, x=4.0) -> str:
  return str(minijax.make_jaxpr(minijax.linearize(f, x)[1])(1.0))


def _counts(text: str, *names: str) -> tuple[int, ...]:
  return tuple(text.count(f" {n}") for n in names)


def _close(got, want, rtol=1e-6):
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-7)


def test_a_cond_in_a_checkpoint_recomputes_only_the_cos_its_tangent_needs():
  two_sins = lambda c: (jnp.sin(c), jnp.sin(c))
  f = minijax.checkpoint(lambda x: lax.cond(x > 0.0, two_sins, two_sins, x))
  text = _linearized_text(f)
  assert " sin " not in text and " cos " in text
  # one cond, inside the staged checkpoint, reading only the primal input: nothing saved
  jaxpr = minijax.make_jaxpr(minijax.linearize(f, 4.0)[1])(1.0)
  (eqn,) = jaxpr.eqns
  assert eqn.primitive.name == "checkpoint"
  assert [e.primitive.name for e in eqn.params["jaxpr"].jaxpr.eqns] == [
      "gt", "convert_element_type", "cond"]  # (the index as int32, as JAX has it)
  _close(minijax.grad(lambda x: sum(f(x)))(3.0), 2 * np.cos(3.0))

  g = minijax.checkpoint(lambda x: lax.cond(x > 0.0, lambda c: jnp.sin(jnp.sin(c)),
                                            lambda c: c, x))
  text = _linearized_text(g)
  assert " sin " in text and " cos " in text  # sin(x) again, for the outer cos
  _close(minijax.grad(g)(3.0), np.cos(np.sin(3.0)) * np.cos(3.0))


@pytest.mark.parametrize("control_flow", ["cond", "scan"])
def test_a_policy_that_saves_cos_reaches_into_a_cond_or_a_scan(control_flow):
  if control_flow == "cond":
    f = minijax.checkpoint(lambda x: lax.cond(x > 0, jnp.sin, lambda x: x, x), policy=save_cos)
    want = np.cos(3.0)
  else:
    body = lambda c, _: (jnp.sin(c), jnp.sin(c))
    f = minijax.checkpoint(lambda x: lax.scan(body, x, None, length=3)[0], policy=save_cos)
    want = np.cos(np.sin(np.sin(3.0))) * np.cos(np.sin(3.0)) * np.cos(3.0)
  assert _counts(_linearized_text(f), "sin ", "cos ") == (0, 0)
  _close(minijax.grad(f)(3.0), want, rtol=1e-5)


def _scan_apply(f, x):
  return lax.scan(lambda x, _: (f(x), None), x, None, length=1)[0]


def _cond_apply(f, x):
  return lax.cond(x.sum() > -jnp.inf, f, lambda x: x, x)


def _sin_with_jit_jvp():
  @minijax.custom_jvp
  def sin(x):
    return jnp.sin(x)

  @sin.defjvp
  def sin_jvp(primals, tangents):
    (x,), (xdot,) = primals, tangents
    y, c = minijax.jit(lambda: (jnp.sin(x), jnp.cos(x)))()
    return y, c * xdot
  return sin


def _sin_with_scan_jvp():
  @minijax.custom_jvp
  def sin(x):
    return jnp.sin(x)

  @sin.defjvp
  def sin_jvp(primals, tangents):
    (x,), (xdot,) = primals, tangents
    y, c = _scan_apply(lambda xs: (jnp.sin(xs[0]), jnp.cos(xs[1])), (x, x))
    return y, c * xdot
  return sin


# (sin, cos) in the linearized jaxpr under save_cos, save_sin, everything_saveable,
# nothing_saveable, and nothing_saveable with the call applied twice: jax 0.10.2's counts.
@pytest.mark.parametrize("apply, make_sin, counts", [
    (_scan_apply, _sin_with_jit_jvp, [(0, 0), (0, 1), (0, 0), (1, 1), (2, 2)]),
    (_scan_apply, _sin_with_scan_jvp, [(1, 0), (0, 1), (0, 0), (1, 1), (2, 2)]),
    (_cond_apply, _sin_with_jit_jvp, [(0, 0), (0, 1), (0, 0), (0, 1), (1, 2)]),
])
def test_a_custom_jvp_rule_inside_a_checkpointed_loop_or_branch_saves_what_jax_saves(
    apply, make_sin, counts):
  sin = make_sin()
  policies = [save_cos, save_sin, cp.everything_saveable, cp.nothing_saveable]
  funs = [minijax.checkpoint(partial(apply, sin), policy=p) for p in policies]
  funs.append(minijax.checkpoint(lambda x: apply(sin, apply(sin, x)),
                                 policy=cp.nothing_saveable))
  assert [_counts(_linearized_text(f), "sin ", "cos ") for f in funs] == counts
  for f in funs[:-1]:
    _close(minijax.grad(f)(3.0), np.cos(3.0))
  _close(minijax.grad(funs[-1])(3.0), np.cos(np.sin(3.0)) * np.cos(3.0))


def _three_dots(W):
  def f(x):
    for _ in range(3):
      x = jnp.sin(jnp.dot(x, W, precision=lax.Precision.HIGHEST))
    return x
  return f


@pytest.mark.parametrize("where, counts", [
    ("checkpoint outside the scan", (3, 3, 6)),
    ("checkpoint outside the cond", (2, 3, 5)),
])
def test_dots_saveable_saves_the_dots_of_a_loop_or_branch_and_recomputes_the_sins(
    where, counts):
  x = jnp.ones((5,))

  def plain(W):
    if "scan" in where:
      return lax.scan(lambda c, _: (_three_dots(W)(c), None), x, None, length=2)[0]
    return lax.cond(x.sum() > 0, _three_dots(W), lambda x: x, x)

  f = minijax.checkpoint(plain, policy=cp.checkpoint_dots)
  W = jnp.ones((5, 5)) * 0.1
  y, f_vjp = minijax.vjp(f, W)
  text = str(minijax.make_jaxpr(f_vjp)(y))
  assert _counts(text, "sin ", "cos ", "dot_") == counts
  ct = jnp.arange(5.0)
  _close(f_vjp(ct)[0], minijax.vjp(plain, W)[1](ct)[0], rtol=1e-5)


def test_a_custom_jvp_called_on_tangents_in_a_checkpoint_is_inlined_before_transposing():
  @minijax.custom_jvp
  def total(x):
    return jnp.sum(x, axis=0)

  @total.defjvp
  def total_jvp(primals, tangents):
    (x,), (xdot,) = primals, tangents
    return total(x), total(xdot)  # the rule applies the function to the tangent

  f = minijax.checkpoint(lambda x: total(x), policy=cp.checkpoint_dots)
  _close(minijax.grad(lambda x: f(x) ** 2)(jnp.ones(3)), [6.0, 6.0, 6.0])
  _close(minijax.jacrev(minijax.grad(lambda x: f(x) ** 2))(jnp.ones(3)), np.full((3, 3), 2.0))
  g = lambda x: lax.scan(lambda _, x: (None, f(x)), None, x)[1]
  _close(minijax.grad(lambda x: jnp.sum(g(x) ** 2))(jnp.ones((2, 3))), np.full((2, 3), 6.0))


def test_a_while_loop_in_a_checkpoint_keeps_its_known_counter_and_recomputes_the_rest():
  def f(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x))[1]

  _, f_lin = minijax.linearize(minijax.checkpoint(f), 3.0)
  _close(f_lin(1.0), minijax.grad(lambda x: jnp.sin(jnp.sin(jnp.sin(x))))(3.0))
  text = _linearized_text(minijax.checkpoint(f))
  assert " sin " in text and " cos " in text


def test_dead_code_elimination_prunes_unused_outputs_inside_a_cond_and_a_scan():
  def f(x):
    a, b = lax.cond(x > 0, lambda x: (jnp.sin(x), jnp.cos(x)), lambda x: (x, x), x)
    (c, d), ys = lax.scan(lambda c, _: ((jnp.exp(c[0]), jnp.tanh(c[1])), jnp.log(c[0])),
                          (a, b), None, length=2)
    return c, d, ys
  jaxpr = minijax.make_jaxpr(f)(1.0).jaxpr
  dced, used_inputs = pe.dce_jaxpr(jaxpr, [False, True, False])
  assert used_inputs == [True]
  text = str(dced)
  assert " tanh " in text and " cos " in text
  assert " exp " not in text and " log " not in text and " sin " not in text
  cond_eqn, scan_eqn = [e for e in dced.eqns if e.primitive.name in ("cond", "scan")]
  assert len(cond_eqn.outvars) == 1 and len(scan_eqn.outvars) == 1
  assert scan_eqn.params["num_carry"] == 1


def test_a_shard_map_in_a_checkpoint_splits_by_its_own_rule_under_grad():
  from minijax import shard_map
  from minijax.sharding import Mesh, PartitionSpec as P
  mesh = Mesh(np.array(minijax.devices()[:1]), ("x",))
  g = shard_map(lambda x: jnp.sin(x) * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
  plain = lambda x: jnp.sum(g(x) ** 2)
  f = minijax.checkpoint(plain)
  x = jnp.arange(4.0)
  want = 8 * np.sin(np.arange(4.0)) * np.cos(np.arange(4.0))
  _close(minijax.grad(f)(x), want, rtol=1e-5)
  _close(minijax.jit(minijax.grad(f))(x), want, rtol=1e-5)
  # its primal part runs in the forward pass; the backward pass reads its saved residual
  jaxpr = minijax.make_jaxpr(minijax.grad(f))(x)
  assert [e.primitive.name for e in jaxpr.eqns][0] == "shard_map"


def test_linear_transpose_of_a_custom_jvp_function_transposes_its_function():
  @minijax.custom_jvp
  def double(x):
    return 2 * x
  double.defjvp(lambda p, t: (double(p[0]), double(t[0])))
  (ct,) = minijax.linear_transpose(double, 1.0)(3.0)
  assert float(ct) == 6.0  # as jax 0.10.2
  assert float(minijax.grad(lambda x: minijax.jvp(double, (x,), (1.0,))[1] * x)(2.0)) == 2.0


def _printing_sin(x):
  y = jnp.sin(x)
  minijax.debug.print("y {}", y)
  return y


@pytest.mark.parametrize("where, policy, prints", [
    ("cond", None, 2), ("scan", None, 4), ("scan", cp.everything_saveable, 2),
])
def test_a_debug_print_in_a_checkpointed_branch_or_loop_runs_as_often_as_in_jax(
    capfd, where, policy, prints):
  if where == "cond":
    f = lambda x: lax.cond(x > 0, lambda x: _printing_sin(x) ** 2, lambda x: x, x)
    want, lines = np.sin(2.0), ["y 0.8414709568023682"]
  else:
    f = lambda x: lax.scan(lambda c, _: (_printing_sin(c), None), x, None, length=2)[0]
    want = np.cos(np.sin(1.0)) * np.cos(1.0)
    lines = ["y 0.8414709568023682", "y 0.7456241250038147"]
  grad = minijax.grad(minijax.checkpoint(f, policy=policy))(1.0)
  minijax.effects_barrier()
  # (recorded from jax 0.10.2: the forward pass, then the recomputation if not saved)
  assert capfd.readouterr().out == "".join(f"{l}\n" for l in lines) * (prints // len(lines))
  _close(grad, want, rtol=1e-6)


def test_the_transpose_of_a_jit_skips_what_only_outputs_without_cotangent_need():
  f = minijax.jit(lambda x: (2 * x, x > 0))  # `gt` has no transpose rule, and needs none
  (ct,) = minijax.linear_transpose(lambda x: f(x)[0], 1.0)(1.0)
  assert float(ct) == 2.0
  assert float(minijax.grad(lambda x: f(x)[0] * 3.0)(1.0)) == 6.0


def test_a_policy_reaches_inside_a_checkpointed_pmap_as_in_jax():
  # JAX 0.10.2 (pmap_test's test_remat_of_pmap*): the linearized checkpoint recomputes
  # sin(x) inside the pmap; the vjp jaxpr's sin/cos counts follow the policy
  g = minijax.pmap(lambda x: jnp.sin(jnp.sin(x)))
  x = jnp.arange(1.0)
  text = str(minijax.make_jaxpr(minijax.linearize(minijax.checkpoint(g), x)[1])(x))
  assert " sin " in text and " cos " in text
  for policy, want in [(save_cos, (0, 0)), (save_sin, (0, 2)), (cp.nothing_saveable, (1, 2))]:
    f = minijax.checkpoint(g, policy=policy)
    y, f_vjp = minijax.vjp(f, x)
    assert _counts(str(f_vjp.jaxpr), "sin ", "cos ") == want, policy
    _close(f_vjp(jnp.ones_like(y))[0], np.cos(np.sin(0.0)) * np.cos(0.0))
    _close(minijax.grad(lambda x: f(x).sum())(x + 0.5),
           np.cos(np.sin(0.5)) * np.cos(0.5), rtol=1e-6)


def test_dead_code_elimination_prunes_unused_outputs_inside_a_shard_map():
  from minijax import shard_map
  from minijax.sharding import Mesh, PartitionSpec as P
  mesh = Mesh(np.array(minijax.devices()[:1]), ("x",))
  g = shard_map(lambda a: (jnp.sin(a), jnp.cos(a) * 3.0), mesh=mesh, in_specs=P("x"),
                out_specs=(P("x"), P("x")))
  jaxpr = minijax.make_jaxpr(lambda a: g(a)[0])(jnp.arange(4.0)).jaxpr
  pruned, used = pe.dce_jaxpr(jaxpr, [True])
  (eqn,) = pruned.eqns
  assert len(eqn.outvars) == 1 and len(eqn.params["out_specs"]) == 1
  assert [e.primitive.name for e in eqn.params["jaxpr"].jaxpr.eqns] == ["sin"]
  assert used == [True]
