"""pmap and the collectives on 4 CPU devices: every collective against numpy, under pmap,
under vmap with an axis name (the batching rules), nested both ways, differentiated
(against finite differences, and JAX's facts), and the errors JAX raises."""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from tests.transform_checks import check_grads

N = 4
rng = np.random.default_rng(0)
X = rng.standard_normal((N, 3)).astype(np.float32)
SQ = rng.standard_normal((N, N)).astype(np.float32)
WIDE = rng.standard_normal((N, 8)).astype(np.float32)
CUBE = rng.standard_normal((N, N, 2)).astype(np.float32)
SHIFT = [(i, (i + 1) % N) for i in range(N)]

# name -> (function of one block over axis 'i', input, expected output of the whole map)
CASES = {
    "psum": (lambda v: lax.psum(v, "i"), X, np.broadcast_to(X.sum(0), X.shape)),
    "pmax": (lambda v: lax.pmax(v, "i"), X, np.broadcast_to(X.max(0), X.shape)),
    "pmin": (lambda v: lax.pmin(v, "i"), X, np.broadcast_to(X.min(0), X.shape)),
    "pmean": (lambda v: lax.pmean(v, "i"), X, np.broadcast_to(X.mean(0), X.shape)),
    "all_gather": (lambda v: lax.all_gather(v, "i"), X, np.broadcast_to(X, (N, *X.shape))),
    "all_gather axis=1": (lambda v: lax.all_gather(v, "i", axis=1), X,
                          np.broadcast_to(X.T, (N, 3, N))),
    "all_gather tiled": (lambda v: lax.all_gather(v, "i", tiled=True), X,
                         np.broadcast_to(X.reshape(-1), (N, 3 * N))),
    "psum_scatter": (lambda v: lax.psum_scatter(v, "i"), SQ, SQ.sum(0)),
    "psum_scatter tiled": (lambda v: lax.psum_scatter(v, "i", tiled=True), WIDE,
                           WIDE.sum(0).reshape(N, 2)),
    "psum_scatter dimension 1": (lambda v: lax.psum_scatter(v, "i", scatter_dimension=1),
                                 CUBE.transpose(0, 2, 1), CUBE.sum(0)),
    "ppermute": (lambda v: lax.ppermute(v, "i", SHIFT), X, np.roll(X, 1, axis=0)),
    "ppermute partial": (lambda v: lax.ppermute(v, "i", [(0, 2)]), X,
                         np.stack([0 * X[0], 0 * X[0], X[0], 0 * X[0]])),
    "pshuffle": (lambda v: lax.pshuffle(v, "i", [3, 2, 1, 0]), X, X[::-1]),
    "all_to_all": (lambda v: lax.all_to_all(v, "i", 0, 0), CUBE, CUBE.transpose(1, 0, 2)),
    "all_to_all 0->1": (lambda v: lax.all_to_all(v, "i", 0, 1), CUBE, CUBE.transpose(1, 2, 0)),
    "all_to_all tiled": (lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), CUBE,
                         CUBE.transpose(1, 2, 0).reshape(N, 2 * N)[:, :]),
    "axis_index": (lambda v: lax.axis_index("i") + 0 * v.sum().astype(np.int32), X,
                   np.arange(N, dtype=np.int32)),
    "psum of a constant": (lambda v: v * 0 + lax.psum(1, "i"), X, np.full(X.shape, 4.0)),
}


def _tiled_all_to_all_expected():
  # device j gets block j of every device's split axis, concatenated along axis 1
  out = np.empty((N, 1, 2 * N), np.float32)
  for j in range(N):
    out[j] = np.concatenate([CUBE[d][j:j + 1] for d in range(N)], axis=1)
  return out


CASES["all_to_all tiled"] = (CASES["all_to_all tiled"][0], CUBE, _tiled_all_to_all_expected())


@pytest.mark.parametrize("name", list(CASES))
def test_every_collective_under_pmap_matches_numpy(devices, name):
  f, x, expected = CASES[name]
  out = minijax.pmap(f, axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)
  assert out.sharding.spec == minijax.sharding.PartitionSpec("i")
  assert [s.data.shape[0] for s in out.addressable_shards] == [1] * N
  assert [s.device for s in out.addressable_shards] == devices


@pytest.mark.parametrize("name", list(CASES))
def test_every_collective_under_vmap_with_an_axis_name_matches_numpy(name):
  f, x, expected = CASES[name]
  out = minijax.vmap(f, axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["psum", "all_gather", "psum_scatter tiled", "ppermute",
                                  "all_to_all", "axis_index"])
def test_a_collective_over_the_device_axis_batches_under_an_inner_vmap(name):
  f, x, expected = CASES[name]
  stacked = np.stack([x, 2 * x])  # vmap over the leading axis, pmap over the next
  out = minijax.vmap(minijax.pmap(f, axis_name="i"))(stacked)
  other = minijax.pmap(f, axis_name="i")(2 * x)
  np.testing.assert_allclose(np.asarray(out[0]), expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(out[1]), np.asarray(other), rtol=1e-5, atol=1e-6)
  inner = minijax.pmap(minijax.vmap(f), axis_name="i")(np.stack([x, 2 * x], axis=1))
  np.testing.assert_allclose(np.asarray(inner), np.stack([np.asarray(out[0]),
                                                          np.asarray(out[1])], axis=1),
                             rtol=1e-5, atol=1e-6)


def test_psum_over_a_device_axis_and_a_vmapped_axis_together():
  x = np.arange(24, dtype=np.float32).reshape(N, 2, 3)
  f = minijax.pmap(minijax.vmap(lambda v: lax.psum(v, ("i", "b")), axis_name="b"),
                   axis_name="i")
  np.testing.assert_allclose(np.asarray(f(x)), np.broadcast_to(x.sum((0, 1)), x.shape))
  idx = minijax.pmap(minijax.vmap(lambda v: lax.axis_index(("i", "b")), axis_name="b"),
                     axis_name="i")(x)
  np.testing.assert_array_equal(np.asarray(idx), np.arange(8).reshape(N, 2))


def test_pmap_in_axes_out_axes_static_arguments_and_pytrees():
  x = np.arange(12, dtype=np.float32).reshape(3, N)
  f = minijax.pmap(lambda a, b, k: {"s": lax.psum(a["v"], "i") * k + b}, axis_name="i",
                   in_axes=({"v": 1}, None, None), out_axes={"s": 1},
                   static_broadcasted_argnums=2)
  out = f({"v": x}, np.float32(1.0), 2.0)
  np.testing.assert_allclose(np.asarray(out["s"]),
                             np.broadcast_to(x.sum(1, keepdims=True) * 2 + 1, x.shape))
  replicated = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i", out_axes=None)(X)
  np.testing.assert_allclose(np.asarray(replicated), X.sum(0), rtol=1e-6)
  assert replicated.sharding.spec == minijax.sharding.PartitionSpec()


def test_pmap_without_axis_name():
  doubled = minijax.pmap(lambda v: v * 2)(X)
  np.testing.assert_allclose(np.asarray(doubled), 2 * X)
  np.testing.assert_allclose(minijax.grad(lambda v: minijax.pmap(jnp.sin)(v).sum())(X),
                             np.cos(X), rtol=1e-6)
  assert "pmap(<lambda>)" in repr(doubled.sharding.mesh.axis_names[0])


def test_pmap_lower_compile_takes_and_returns_pytrees_and_pswapaxes_pshuffle():
  f = minijax.pmap(lambda v: {"d": v - lax.pmean(v, "i")}, axis_name="i")
  lowered = f.lower(X)
  compiled = lowered.compile()
  np.testing.assert_allclose(np.asarray(compiled(X)["d"]), np.asarray(f(X)["d"]), rtol=1e-6)
  assert lowered.in_tree == minijax.tree_util.tree_structure(((0,), {}))
  ((aval,), kwargs) = compiled.in_avals
  assert aval.shape == X.shape and kwargs == {}
  square = np.arange(N * N, dtype=np.float32).reshape(N, N, 1)
  swapped = minijax.pmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(square)
  np.testing.assert_array_equal(np.asarray(swapped), square.transpose(1, 0, 2))
  with pytest.raises(ValueError, match=r"`perm` does not represent a permutation: \[1, 1"):
    minijax.pmap(lambda v: lax.pshuffle(v, "i", [1, 1, 2, 3]), "i")(X)
  with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
    minijax.pmap(lambda v, s: v, static_broadcasted_argnums=1)(X, np.ones(2))


def test_allreduces_over_axis_index_groups():
  x = np.arange(N * 3, dtype=np.float32).reshape(N, 3)
  halves = [[0, 1], [2, 3]]

  def per_group(groups, reduce):
    return np.concatenate([np.broadcast_to(reduce(x[g], axis=0), (len(g), 3)) for g in groups])
  summed = minijax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=halves), "i")(x)
  np.testing.assert_allclose(np.asarray(summed), per_group(halves, np.sum))
  uneven = [[3], [0, 2, 1]]  # groups of unequal sizes, in any order
  summed = minijax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=uneven), "i")(x)
  np.testing.assert_allclose(np.asarray(summed)[[3, 0, 2, 1]], per_group([[3], [0, 2, 1]],
                                                                         np.sum))
  biggest = minijax.pmap(lambda v: lax.pmax(v, "i", axis_index_groups=halves), "i")(x)
  np.testing.assert_allclose(np.asarray(biggest), per_group(halves, np.max))
  mean = minijax.pmap(lambda v: lax.pmean(v, "i", axis_index_groups=halves), "i")(x)
  np.testing.assert_allclose(np.asarray(mean), per_group(halves, np.mean))
  twos = minijax.pmap(lambda v: v * 0 + lax.psum(2.0, "i", axis_index_groups=halves), "i")(x)
  np.testing.assert_allclose(np.asarray(twos), np.full_like(x, 4.0))
  with pytest.raises(ValueError, match="cover all indices of the axis"):
    minijax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]), "i")(x)
  flags = np.array([True, False, True, True])  # booleans are counted, as in JAX
  counted = minijax.pmap(lambda v: lax.psum(v, "i"), "i")(flags)
  assert counted.dtype == np.int32 and np.asarray(counted).tolist() == [3] * N
  with pytest.raises(NotImplementedError, match="all_gather: axis_index_groups"):
    minijax.pmap(lambda v: lax.all_gather(v, "i", axis_index_groups=halves), "i")(x)


def test_pmap_errors_name_the_argument_and_the_flat_arguments():
  with pytest.raises(ValueError, match=re.escape("pmap in_axes[0][0] specification must be a "
                                                 "tree prefix")):
    minijax.pmap(lambda a, b: a, in_axes=((0, 0, 0), 0))((X, X), X)
  with pytest.raises(ValueError, match="each argument passed by keyword is mapped"):
    minijax.pmap(lambda a, b: a, in_axes=((0, 0), 0))(a=(X, X), b=X)
  compiled = minijax.pmap(lambda v: v * 2, "i").lower(X).compile()
  with pytest.raises(TypeError, match=r"Argument 'flat_args\[0\]' compiled with float32\[4,3\] "
                                      r"and called with int32\[4,3\]"):
    compiled(X.astype(np.int32))


def test_pmap_donates_laid_out_arguments():
  f = minijax.pmap(lambda v: v * 2, "i", donate_argnums=0)
  x = minijax.pmap(lambda v: v, "i")(X)
  assert "tf.aliasing_output = 0" in f.lower(x).as_text()
  np.testing.assert_allclose(np.asarray(f(x)), 2 * X)
  assert x.is_deleted()


def test_pmap_over_fewer_devices_and_given_devices(devices):
  out = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(X[:2])
  np.testing.assert_allclose(np.asarray(out), np.broadcast_to(X[:2].sum(0), (2, 3)), rtol=1e-6)
  assert out.sharding.mesh.device_list == tuple(devices[:2])
  chosen = [devices[3], devices[1]]
  idx = minijax.pmap(lambda v: lax.axis_index("i") + 0 * v.astype(np.int32), axis_name="i",
                     devices=chosen)(np.zeros(2, np.int32))
  assert [s.device for s in idx.addressable_shards] == chosen
  np.testing.assert_array_equal(np.asarray(idx), [0, 1])


def test_pmap_composes_with_jit_scan_and_cond():
  def body(v):
    def step(c, _):
      c = lax.cond(lax.axis_index("i") % 2 == 0, lambda c: c + 1.0, lambda c: c - 1.0, c)
      return lax.psum(c, "i") / 4.0, c
    return lax.scan(step, v, None, length=3)
  carry, ys = minijax.jit(minijax.pmap(body, axis_name="i"))(X)
  c, expected = X.copy(), []
  for _ in range(3):
    c = c + np.where(np.arange(N) % 2 == 0, 1.0, -1.0)[:, None]
    expected.append(c)
    c = np.broadcast_to(c.sum(0) / 4.0, c.shape)
  np.testing.assert_allclose(np.asarray(carry), c, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(ys), np.stack(expected, 1), rtol=1e-5)


def test_a_pmap_inside_eager_control_flow_and_vmap_runs_over_its_devices(devices):
  # (JAX 0.10.2's pmap_test testVmapOfPmap3, test_num_replicas_with_switch and
  # lax_control_flow_test test_while_loop_of_pmap: the loop or branch compiles over the
  # pmap's devices)
  total = minijax.pmap(lambda v: lax.psum(jnp.sin(v), "i"), axis_name="i")
  out = lax.fori_loop(0, 3, lambda i, v: total(v) + v, jnp.ones(N))
  want = np.ones(N, np.float32)
  for _ in range(3):
    want = np.sin(want).sum() + want
  np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5)
  ident = minijax.pmap(lambda v: v)
  np.testing.assert_array_equal(np.asarray(lax.cond(True, ident, ident, X)), X)
  assert {s.device for s in lax.cond(False, ident, total, X).addressable_shards} == set(devices)

  def func(q, pts):  # a pmap of a broadcast value, mapped over the queries
    return minijax.pmap(lambda x, y: y, in_axes=(0, None))(pts, q)
  qs = jnp.asarray([[0, 0], [3, 3], [2, 2]])
  by_map = lax.map(lambda q: func(q, jnp.ones(N)), qs)
  by_vmap = minijax.vmap(func, in_axes=(0, None))(qs, jnp.ones(N))
  want = np.broadcast_to(np.asarray(qs)[:, None, :], (3, N, 2))
  np.testing.assert_array_equal(np.asarray(by_map), want)
  np.testing.assert_array_equal(np.asarray(by_vmap), want)


def test_grad_of_psum_under_pmap_is_two_v_times_the_axis_size():
  # JAX 0.10.2: psum transposes to psum, so the gradient counts every device
  g = minijax.pmap(minijax.grad(lambda v: lax.psum(v ** 2, "i").sum()), axis_name="i")(X)
  np.testing.assert_allclose(np.asarray(g), 2 * X * N, rtol=1e-6)


@pytest.mark.parametrize("name", ["psum", "pmax", "all_gather", "psum_scatter tiled",
                                  "ppermute", "all_to_all 0->1"])
def test_collectives_under_pmap_against_finite_differences(name):
  f, x, _ = CASES[name]
  check_grads(minijax.pmap(lambda v: jnp.sin(f(v)), axis_name="i"), (x,), order=1,
              eps=1e-3, rtol=2e-3, atol=2e-3)


def test_transposes_follow_jax():
  # all_gather transposes to psum_scatter, ppermute to the inverse permutation
  def loss(v):
    return (lax.all_gather(v, "i") * np.arange(N, dtype=np.float32)[:, None]).sum()
  g = minijax.pmap(minijax.grad(loss), axis_name="i")(X)
  np.testing.assert_allclose(np.asarray(g), np.broadcast_to(np.arange(N) * N, (3, N)).T,
                             rtol=1e-6)
  g = minijax.pmap(minijax.grad(lambda v: (lax.ppermute(v, "i", SHIFT) * v).sum()),
                   axis_name="i")(X)
  np.testing.assert_allclose(np.asarray(g), np.roll(X, 1, 0) + np.roll(X, -1, 0), rtol=1e-6)


def test_many_collective_calls_in_flight_do_not_deadlock():
  # jaxlib's CPU client deadlocks with a few dozen collective programs queued (JAX's pmap
  # too); minijax keeps at most MAX_IN_FLIGHT of them dispatched
  f = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
  y = f(X)
  for _ in range(60):
    y = f(X)
  np.testing.assert_allclose(np.asarray(y), np.broadcast_to(X.sum(0), X.shape), rtol=1e-5)


def test_the_lowering_shows_replica_groups_and_the_manual_region(mesh2d):
  text = minijax.jit(minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")).lower(X).as_text()
  assert "mhlo.num_partitions = 4" in text
  assert "replica_groups = dense<[[0, 1, 2, 3]]>" in text and "use_global_device_ids" in text
  assert "@SPMDFullToShardShape" in text and '{mhlo.sharding = "{manual}"}' in text
  P = minijax.sharding.PartitionSpec
  f = minijax.shard_map(lambda v: lax.psum(v, "x"), mesh=mesh2d, in_specs=P("x", "y"),
                        out_specs=P(None, "y"))
  text = minijax.jit(f).lower(np.zeros((4, 4), np.float32)).as_text()
  assert "replica_groups = dense<[[0, 2], [1, 3]]>" in text
  assert '"{devices=[2,2]0,1,2,3}"' in text


ERRORS = {
    "unbound name outside any map": (NameError, "unbound axis name: i",
                                     lambda: lax.psum(np.ones(3), "i")),
    "unbound name inside pmap": (NameError, "unbound axis name: j",
                                 lambda: minijax.pmap(lambda v: lax.psum(v, "j"), "i")(X)),
    # as in JAX 0.10.2, the mesh is every device, and each block holds several slices
    "more slices than devices": (ValueError, "not evenly divisible",
                                 lambda: minijax.pmap(lambda v: v, "i")(np.ones((5, 2)))),
    "twice the slices of the devices": (
        ValueError, re.escape("cannot select an axis to squeeze out which has size not equal "
                              "to one, got shape=(2, 2) and dimensions=(0,)"),
        lambda: minijax.pmap(lambda v: v, "i")(np.ones((8, 2)))),
    "mismatched sizes": (ValueError, "inconsistent sizes",
                         lambda: minijax.pmap(lambda a, b: a + b, "i")(np.ones((4, 2)),
                                                                      np.ones((3, 2)))),
    "nothing mapped": (ValueError, "at least one argument with a mapped axis",
                       lambda: minijax.pmap(lambda a: a, "i", in_axes=None)(X)),
    "axis out of range": (ValueError, "rank should be at least 3",
                          lambda: minijax.pmap(lambda a: a, "i", in_axes=2)(X)),
    "ppermute duplicates": (ValueError, "sources and destinations must be unique",
                            lambda: minijax.pmap(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]),
                                                 "i")(X)),
    "psum_scatter size": (ValueError, "must equal the axis size",
                          lambda: minijax.pmap(lambda v: lax.psum_scatter(v, "i"), "i")(X)),
    "all_to_all size": (ValueError, "all_to_all requires the size of the mapped axis",
                        lambda: minijax.pmap(lambda v: lax.all_to_all(v, "i", 0, 0), "i")(X)),
    "static argnum past the arguments": (
        ValueError, r"static_broadcasted_argnums=\(1,\)",
        lambda: minijax.pmap(lambda a, b: a, "i", static_broadcasted_argnums=1)(X)),
    "axis_size disagrees": (ValueError, "Specified axis_size 2",
                            lambda: minijax.pmap(lambda a: a, "i", axis_size=2)(X)),
    "axis_index_groups": (NotImplementedError, "axis_index_groups",  # (psum's: supported)
                          lambda: minijax.pmap(lambda v: lax.psum_scatter(
                              v, "i", axis_index_groups=[[0, 1], [2, 3]]), "i")(X)),
    "axis_index_groups that miss an index": (
        ValueError, "cover all indices",
        lambda: minijax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]), "i")(X)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_bad_input_raises_jax_errors(name):
  exc, message, fn = ERRORS[name]
  with pytest.raises(exc, match=message):
    fn()


def test_jax_was_never_imported():
  assert "jax" not in sys.modules
