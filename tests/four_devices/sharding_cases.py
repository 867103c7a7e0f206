"""Meshes, partition specs, shardings and sharded Arrays on 4 CPU devices: device_put with a
sharding (values, shards, indices, replicas, devices), eager ops on sharded Arrays, jit with
in_shardings/out_shardings through XLA's SPMD partitioner, with_sharding_constraint, and
the errors."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

VALUE = np.arange(32, dtype=np.float32).reshape(4, 8)


def test_partition_specs_compare_as_jax_does():
  assert P("x", None) != P("x")
  assert P("x") == P("x") and P(("x", "y")) != P("x", "y")
  assert repr(P("x", None)) == "PartitionSpec('x', None)"
  assert hash(P("x")) == hash(P("x"))
  with pytest.raises(TypeError):
    P(3)


def test_meshes(devices, mesh2d):
  assert mesh2d.shape == {"x": 2, "y": 2} and mesh2d.size == 4
  assert mesh2d.device_ids.tolist() == [[0, 1], [2, 3]]
  assert mesh2d == Mesh(np.array(devices).reshape(2, 2), ("x", "y"))
  assert mesh2d != Mesh(np.array(devices).reshape(2, 2), ("a", "b"))
  with pytest.raises(ValueError, match="ndim of its first argument"):
    Mesh(np.array(devices), ("x", "y"))
  with pytest.raises(ValueError, match="unique"):
    Mesh(np.array(devices).reshape(2, 2), ("x", "x"))
  with pytest.raises(ValueError, match="not found in mesh"):
    NamedSharding(mesh2d, P("z"))


# spec -> the index of each device's block of VALUE (4x8) on the 2x2 mesh, and replica ids
LAYOUTS = {
    P("x", "y"): ([(0, 2, 0, 4), (0, 2, 4, 8), (2, 4, 0, 4), (2, 4, 4, 8)], [0, 0, 0, 0]),
    P("x"): ([(0, 2, 0, 8), (0, 2, 0, 8), (2, 4, 0, 8), (2, 4, 0, 8)], [0, 1, 0, 1]),
    P(None, "y"): ([(0, 4, 0, 4), (0, 4, 4, 8), (0, 4, 0, 4), (0, 4, 4, 8)], [0, 0, 1, 1]),
    P(None, ("x", "y")): ([(0, 4, 0, 2), (0, 4, 2, 4), (0, 4, 4, 6), (0, 4, 6, 8)],
                          [0, 0, 0, 0]),
    P(("y", "x")): ([(0, 1, 0, 8), (2, 3, 0, 8), (1, 2, 0, 8), (3, 4, 0, 8)], [0, 0, 0, 0]),
    P(): ([(0, 4, 0, 8)] * 4, [0, 1, 2, 3]),
}


def _bounds(index, shape):
  return tuple(v for s, n in zip(index, shape) for v in s.indices(n)[:2])


@pytest.mark.parametrize("spec", list(LAYOUTS), ids=str)
def test_device_put_with_a_sharding_lays_out_blocks(devices, mesh2d, spec):
  sharding = NamedSharding(mesh2d, spec)
  x = minijax.device_put(VALUE, sharding)
  assert x.sharding == sharding and x.devices() == set(devices)
  assert x.is_fully_addressable and x.is_fully_replicated == (spec == P())
  np.testing.assert_array_equal(np.asarray(x), VALUE)
  bounds, replicas = LAYOUTS[spec]
  shards = x.addressable_shards
  assert [s.device for s in shards] == devices
  assert [_bounds(s.index, VALUE.shape) for s in shards] == bounds
  assert [s.replica_id for s in shards] == replicas
  for s in shards:
    assert s.data.device == s.device and s.data.sharding == SingleDeviceSharding(s.device)
    np.testing.assert_array_equal(np.asarray(s.data), VALUE[s.index])
  assert sharding.shard_shape(VALUE.shape) == shards[0].data.shape


def test_sharded_arrays_move_between_layouts_and_devices(devices, mesh, mesh2d):
  x = minijax.device_put(VALUE, NamedSharding(mesh2d, P("x", "y")))
  y = minijax.device_put(x, NamedSharding(mesh, P(None, "i")))
  np.testing.assert_array_equal(np.asarray(y), VALUE)
  assert [s.data.shape for s in y.addressable_shards] == [(4, 2)] * 4
  w = minijax.device_put(y, SingleDeviceSharding(devices[1]))
  assert w.device == devices[1] and not w.addressable_shards[0].index[0].start
  z = minijax.device_put(y, devices[2])
  assert z.device == devices[2] and z.sharding == SingleDeviceSharding(devices[2])
  np.testing.assert_array_equal(np.asarray(z), VALUE)
  with pytest.raises(ValueError, match="Please use"):
    y.device
  assert minijax.device_put(2.0, NamedSharding(mesh, P())).weak_type


def test_eager_operations_on_sharded_arrays_keep_the_layout(mesh2d):
  sharding = NamedSharding(mesh2d, P("x", "y"))
  x = minijax.device_put(VALUE, sharding)
  y = jnp.sin(x) * 2.0 + x
  np.testing.assert_allclose(np.asarray(y), np.sin(VALUE) * 2 + VALUE, rtol=1e-6)
  assert y.sharding == sharding
  np.testing.assert_allclose(np.asarray(x.sum()), VALUE.sum())
  np.testing.assert_allclose(np.asarray(jnp.dot(x, x.T)), VALUE @ VALUE.T, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(x[1:3, ::2]), VALUE[1:3, ::2])
  assert float(x[2, 3]) == VALUE[2, 3]


def test_jit_with_in_and_out_shardings_runs_one_spmd_program(mesh2d):
  row, col = NamedSharding(mesh2d, P("x")), NamedSharding(mesh2d, P(None, "y"))
  f = minijax.jit(lambda a, b: (a @ b.T, a + 1.0), in_shardings=(row, row),
                  out_shardings=(col, NamedSharding(mesh2d, P("x", "y"))))
  out, plus = f(VALUE, VALUE)
  np.testing.assert_allclose(np.asarray(out), VALUE @ VALUE.T, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(plus), VALUE + 1)
  assert out.sharding == col and plus.sharding.spec == P("x", "y")
  with pytest.raises(ValueError, match="Sharding passed to jit does not match the sharding on "
                     "the respective arg"):  # as in JAX: committed arrays are never moved
    f(plus, plus)
  moved = minijax.device_put(plus, row)
  again, _ = f(moved, moved)
  np.testing.assert_allclose(np.asarray(again), (VALUE + 1) @ (VALUE + 1).T, rtol=1e-5)
  text = f.lower(VALUE, VALUE).as_text()
  assert "mhlo.num_partitions = 4" in text
  assert 'mhlo.sharding = "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"' in text
  assert 'mhlo.sharding = "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"' in text


def test_jit_of_sharded_arguments_propagates_their_layout(mesh2d):
  sharding = NamedSharding(mesh2d, P("x", "y"))
  x = minijax.device_put(VALUE, sharding)
  f = minijax.jit(lambda a: jnp.tanh(a) * 3.0)
  y = f(x)
  assert y.sharding == sharding
  np.testing.assert_allclose(np.asarray(f(y)), np.tanh(np.tanh(VALUE) * 3) * 3, rtol=1e-5)
  assert f(VALUE).sharding == SingleDeviceSharding(minijax.devices()[0])  # one device


def test_with_sharding_constraint(mesh2d):
  target = NamedSharding(mesh2d, P(None, ("x", "y")))
  f = minijax.jit(lambda a: lax.with_sharding_constraint(a * 2.0, target))
  out = f(minijax.device_put(VALUE, NamedSharding(mesh2d, P("x", "y"))))
  np.testing.assert_allclose(np.asarray(out), VALUE * 2)
  assert out.sharding == target
  assert "@Sharding" in f.lower(minijax.device_put(VALUE, target)).as_text()
  with mesh2d:
    g = minijax.jit(lambda a: lax.with_sharding_constraint(a, P("y")))
    assert g(VALUE).sharding == NamedSharding(mesh2d, P("y"))
  eager = lax.with_sharding_constraint(VALUE, target)
  assert eager.sharding == target
  grad = minijax.grad(lambda a: (lax.with_sharding_constraint(a, target) ** 2).sum())(VALUE)
  np.testing.assert_allclose(np.asarray(grad), 2 * VALUE)


def test_device_put_takes_pytrees_and_constrains_inside_jit(devices, mesh2d):
  row = NamedSharding(mesh2d, P("x"))
  out = minijax.device_put({"a": VALUE, "b": (VALUE[0], 1.0)}, {"a": row, "b": devices[1]})
  assert out["a"].sharding == row
  assert out["b"][0].device == devices[1] and out["b"][1].device == devices[1]
  f = minijax.jit(lambda a: minijax.device_put(a * 2, row))
  assert f(VALUE).sharding == row and "@Sharding" in f.lower(VALUE).as_text()


def test_errors(devices, mesh2d):
  with pytest.raises(ValueError, match="should be divisible by 2"):
    minijax.device_put(np.zeros((3, 4)), NamedSharding(mesh2d, P("x")))
  left = Mesh(np.array(devices[:2]), ("i",))
  right = Mesh(np.array(devices[2:]), ("i",))
  a = minijax.device_put(np.ones(4, np.float32), NamedSharding(left, P("i")))
  b = minijax.device_put(np.ones(4, np.float32), NamedSharding(right, P("i")))
  with pytest.raises(ValueError, match="incompatible devices"):
    minijax.jit(lambda u, v: u + v)(a, b)
  with pytest.raises(ValueError, match="no mesh"):
    minijax.jit(lambda u: u, in_shardings=P("i"))(np.ones(4))
  with pytest.raises(ValueError, match="both a device and in_shardings"):
    minijax.jit(lambda u: u, device=devices[0], in_shardings=NamedSharding(left, P()))
  with pytest.raises(ValueError, match="not a pytree prefix"):
    minijax.jit(lambda u: u, in_shardings=(None, None))(np.ones(4))
  with pytest.raises(ValueError, match="Please use"):
    a.device


# JAX 0.10.2's pictures of these layouts (rich, no colour: not a terminal)
VISUALIZED = [
    ((4, 8), P("x", "y"), """\
┌───────────────────────┬───────────────────────┐
│                       │                       │
│         CPU 0         │         CPU 1         │
│                       │                       │
│                       │                       │
├───────────────────────┼───────────────────────┤
│                       │                       │
│         CPU 2         │         CPU 3         │
│                       │                       │
│                       │                       │
└───────────────────────┴───────────────────────┘
"""),
    ((8,), P(("x", "y")), """\
┌───────┬───────┬───────┬───────┐
│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │
└───────┴───────┴───────┴───────┘
"""),
    ((4, 8), P(None, "y"), """\
┌───────────────────────┬───────────────────────┐
│                       │                       │
│                       │                       │
│                       │                       │
│                       │                       │
│        CPU 0,2        │        CPU 1,3        │
│                       │                       │
│                       │                       │
│                       │                       │
│                       │                       │
└───────────────────────┴───────────────────────┘
"""),
]


@pytest.mark.parametrize("shape,spec,picture", VISUALIZED)
def test_visualize_array_sharding_draws_jaxs_picture(mesh2d, capsys, shape, spec, picture):
  pytest.importorskip("rich")
  x = minijax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh2d, spec))
  minijax.debug.visualize_array_sharding(x)
  assert capsys.readouterr().out.strip("\n") == picture.strip("\n")
  with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
    minijax.debug.visualize_sharding((2, 2, 2), x.sharding)


def test_jax_was_never_imported():
  assert "jax" not in sys.modules
