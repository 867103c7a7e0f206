"""Derivatives where an operation chooses: ties with a bound or between elements, and
repeated indices, with JAX 0.10.2's values as literals."""
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax


def test_clamp_derivatives_follow_jax_at_the_bounds():
  """JAX 0.10.2's rule: x's tangent only strictly inside (min, max), min's where min > x,
  max's where max < x; at a tie none (minijax passed x's tangent at the bounds)."""
  x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0], np.float32)
  np.testing.assert_array_equal(
      minijax.vmap(minijax.grad(lambda v: lax.clamp(-1.0, v, 1.0)))(x), [0, 0, 1, 0, 0])
  grad_all = minijax.grad(lax.clamp, argnums=(0, 1, 2))
  assert [float(g) for g in grad_all(1.0, 0.0, 2.0)] == [1, 0, 0]
  assert [float(g) for g in grad_all(1.0, 3.0, 2.0)] == [0, 0, 1]
  assert [float(g) for g in grad_all(1.0, 1.0, 2.0)] == [0, 0, 0]
  assert [float(g) for g in grad_all(3.0, 0.0, 2.0)] == [0, 0, 0]


def test_scatter_with_repeated_indices_differentiates_only_the_winning_update():
  """Where indices repeat, one update lands (the last, on XLA's CPU); only it may get a
  cotangent.  minijax gave every repeated update the cotangent: x.at[[1, 1, 3]].set(u)
  had gradient [1, 1, 3] for weights arange(5), where JAX 0.10.2 gives [0, 1, 3]."""
  weights = np.arange(5.0, dtype=np.float32)
  idx = np.array([1, 1, 3])
  f = lambda x, u: jnp.sum(x.at[idx].set(u) * weights)
  gx, gu = minijax.grad(f, (0, 1))(np.zeros(5, np.float32), np.array([1.0, 2.0, 3.0], np.float32))
  np.testing.assert_array_equal(gx, [0, 0, 2, 0, 4])
  np.testing.assert_array_equal(gu, [0, 1, 3])
  jac = lambda u: jnp.zeros(5).at[idx].set(u)
  u = np.ones(3, np.float32)
  np.testing.assert_array_equal(minijax.jacrev(jac)(u), minijax.jacfwd(jac)(u))
  # windows clipped onto a repeated row, rows of a 2-d operand, and under vmap
  g2 = minijax.grad(lambda u: jnp.sum(jnp.zeros((3, 4)).at[np.array([0, 2, 0])].set(u) ** 2))
  np.testing.assert_array_equal(g2(np.arange(12.0).reshape(3, 4))[0], [0, 0, 0, 0])
  dn = lax.ScatterDimensionNumbers((1,), (0,), (0,))
  clip = minijax.grad(lambda u: jnp.sum(lax.scatter(np.zeros((3, 2)), np.array([[2], [7]]), u,
                                                   dn, mode="clip") * 3.0))
  np.testing.assert_array_equal(clip(np.ones((2, 2))), [[0, 0], [3, 3]])
  per_row = minijax.vmap(minijax.grad(
      lambda u, i: jnp.sum(jnp.zeros(4).at[i].set(u) * weights[:4])))
  np.testing.assert_array_equal(per_row(np.ones((2, 3)), np.array([[0, 0, 1], [2, 3, 2]])),
                                [[0, 0, 1], [0, 3, 2]])


def test_cumulative_reductions_are_primitives_differentiated_as_jaxs_scan():
  """cummax/cummin/cumprod/cumlogsumexp are primitives as in JAX (lax.cummax_p, ...), and
  their derivatives are an associative_scan's: ties share the tangent as in JAX 0.10.2
  (cummax of [5, 5, 5, 5] weighted 1..4: [3.75, 2.75, 2.5, 1])."""
  x = np.full(4, 5.0, np.float32)
  jaxpr = str(minijax.make_jaxpr(lambda v: lax.cummax(v, 0))(x))
  assert "cummax[axis=0 reverse=False]" in jaxpr
  g = minijax.grad(lambda v: jnp.sum(lax.cummax(v) * np.arange(1.0, 5.0, dtype=np.float32)))(x)
  np.testing.assert_array_equal(g, [3.75, 2.75, 2.5, 1])
  for prim in (lax.cumprod_p, lax.cummax_p, lax.cummin_p, lax.cumlogsumexp_p):
    assert prim.name in ("cumprod", "cummax", "cummin", "cumlogsumexp")
  v = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]], np.float32)
  for fn, ref in ((lax.cumprod, np.cumprod), (lax.cummax, np.maximum.accumulate),
                  (lax.cummin, np.minimum.accumulate),
                  (lax.cumlogsumexp, lambda a, axis: np.logaddexp.accumulate(a, axis=axis))):
    np.testing.assert_allclose(minijax.vmap(lambda r: fn(r, 0, reverse=True), 1, 1)(v),
                               ref(v[::-1], axis=0)[::-1], rtol=1e-6)
  with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
    lax.cumlogsumexp(np.arange(3, dtype=np.int32))


def test_these_derivatives_hold_with_several_threads_tracing_at_once():
  """Four threads trace and run the rules above under jit at once; each gets what one
  thread alone gets."""
  import threading
  weights = np.arange(5.0, dtype=np.float32)

  def run(k):
    scatter = minijax.jit(minijax.grad(
        lambda u: jnp.sum(jnp.zeros(5).at[np.array([1, 1, 3])].set(u) * weights)))
    ties = minijax.grad(lambda v: jnp.sum(lax.cummax(v) * weights[1:]))
    bounds = minijax.vmap(minijax.grad(lambda v: lax.clamp(-1.0, v, 1.0)))
    return [np.asarray(scatter(np.full(3, k, np.float32))).tolist(),
            np.asarray(ties(np.full(4, 5.0 + k, np.float32))).tolist(),
            np.asarray(bounds(np.array([-1.0, 0.0, 1.0, k], np.float32))).tolist()]

  alone = {k: run(k) for k in range(4)}
  together, failures = {}, []

  def work(k):
    try:
      for _ in range(3):
        together.setdefault(k, []).append(run(k))
    except Exception as e:  # (collected: an assertion in a thread would go unseen)
      failures.append(e)
  threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert failures == []
  assert all(got == alone[k] for k in range(4) for got in together[k])
  assert alone[0] == [[0, 1, 3], [3.75, 2.75, 2.5, 1], [0, 1, 0, 1]]
