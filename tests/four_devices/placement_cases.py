"""Placement on 4 CPU devices: the committed bit of Arrays (which device a computation runs
on, when `jit` refuses an argument), copies of sharded Arrays, and building Arrays from
blocks (`make_array_from_callback`, `make_array_from_single_device_arrays`)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding


def test_device_put_to_a_device_commits_and_computations_follow_committed_values(devices):
  x = jnp.arange(3.)
  y = minijax.device_put(np.arange(3.), devices[1])
  assert (x.committed, y.committed, minijax.device_put(np.ones(2)).committed) == (
      False, True, False)
  assert minijax.device_put(x) is x and minijax.device_put(y) is y
  f = minijax.jit(lambda a, b: a + b)
  for out in (y + 1, x + y, y + x, f(x, y), f(y, x), f(y, 1.0), f(y, np.ones(3)), y[0],
              jnp.copy(y), y.astype(np.int32), next(iter(y))):
    assert out.devices() == {devices[1]} and out.committed
  for out in (x + 1, f(x, x), f(x, 1.0), minijax.jit(lambda a: a)(x)):
    assert out.devices() == {devices[0]} and not out.committed
  k = minijax.device_put(minijax.random.key(0), devices[1])
  assert k.committed and minijax.random.normal(k, (2,)).devices() == {devices[1]}
  # jit(device=) moves even committed values, and commits its results
  g = minijax.jit(lambda a: a * 2, device=devices[2])
  assert g(y).devices() == {devices[2]} and g(x).committed


def test_uncommitted_values_go_to_the_default_device(devices):
  x = jnp.arange(3.)
  g = minijax.jit(lambda a: a * 2)
  with minijax.default_device(devices[2]):
    u = jnp.arange(3.)
    assert u.devices() == {devices[2]} and not u.committed
    assert g(x).devices() == {devices[2]} and not g(x).committed
  assert (u + 1).devices() == {devices[0]} and g(u).devices() == {devices[0]}


def test_committed_values_on_two_devices_cannot_meet(devices, mesh):
  y = minijax.device_put(np.arange(3.), devices[1])
  w = minijax.device_put(np.arange(3.), devices[2])
  f = minijax.jit(lambda a, b: a + b)
  f(y, jnp.arange(3.))  # an entry for committed arguments on devices[1]
  for _ in range(2):  # the error comes from the first call and from the cached program
    with pytest.raises(ValueError, match=r"Received incompatible devices for jitted "
                       r"computation. Got argument a of <lambda> with shape float32\[3\] and "
                       r"with device ids \[1\] on platform CPU and argument b of <lambda> "
                       r"with shape float32\[3\] and with device ids \[2\] on platform CPU"):
      f(y, w)
    with pytest.raises(ValueError, match="incompatible devices"):
      y + w
  a = minijax.device_put(jnp.arange(4.), NamedSharding(mesh, P("i")))
  with pytest.raises(ValueError, match="incompatible devices"):
    a + minijax.device_put(jnp.ones(4), devices[0])
  assert (a + jnp.ones(4)).sharding == a.sharding  # an uncommitted one is moved


def test_in_shardings_refuse_a_committed_array_laid_out_otherwise(devices):
  """As JAX 0.10.2: the layout (blocks numbered in each sharding's own device order) must
  match; a committed array may be moved to other devices, an uncommitted one is re-laid out."""
  left = Mesh(np.array(devices[:2]), ("x",))
  right = Mesh(np.array(devices[2:]), ("x",))
  x = jnp.arange(4.)
  y = minijax.device_put(x, devices[1])
  split_left = minijax.device_put(x, NamedSharding(left, P("x")))
  whole_left = minijax.device_put(x, NamedSharding(left, P()))
  split_right = minijax.jit(lambda a: a * 2, in_shardings=NamedSharding(right, P("x")))
  for arg in (split_left, x):
    out = split_right(arg)
    assert out.sharding == NamedSharding(right, P("x")) and out.committed
    np.testing.assert_array_equal(out, [0., 2., 4., 6.])
  for arg in (whole_left, y):
    with pytest.raises(ValueError, match="Sharding passed to jit does not match the sharding "
                       "on the respective arg"):
      split_right(arg)
  whole_left_jit = minijax.jit(lambda a: a * 2, in_shardings=NamedSharding(left, P()))
  np.testing.assert_array_equal(whole_left_jit(y), [0., 2., 4., 6.])
  with pytest.raises(ValueError, match="does not match"):
    whole_left_jit(split_left)
  on_zero = minijax.jit(lambda a: a * 2, in_shardings=SingleDeviceSharding(devices[0]))
  assert on_zero(y).devices() == {devices[0]}


def test_moving_an_uncommitted_value_between_devices_is_an_implicit_transfer(devices):
  x = jnp.arange(3.)
  y = minijax.device_put(np.arange(3.), devices[1])
  with minijax.transfer_guard_device_to_device("disallow"):
    with pytest.raises(Exception, match="Disallowed device-to-device transfer"):
      minijax.jit(lambda a, b: a + b)(y, x)
    assert minijax.device_put(y, devices[2]).devices() == {devices[2]}  # explicit
  np.testing.assert_array_equal(minijax.jit(lambda a, b: a + b)(y, x), [0., 2., 4.])


def test_copies_of_sharded_arrays_copy_each_block_on_its_device(devices, mesh, mesh2d):
  x = minijax.device_put(jnp.ones(4), NamedSharding(mesh, P("i")))
  y = minijax.device_put(jnp.arange(8.).reshape(2, 4), NamedSharding(mesh2d, P("y", "x")))
  for a in (x, y):
    b = jnp.copy(a)
    assert b.sharding == a.sharding
    np.testing.assert_array_equal(b, a)
    for s, t in zip(a.addressable_shards, b.addressable_shards):
      assert (s.device, s.index, s.replica_id) == (t.device, t.index, t.replica_id)
      np.testing.assert_array_equal(s.data, t.data)
      assert s.data.unsafe_buffer_pointer() != t.data.unsafe_buffer_pointer()
  a.delete()
  assert not b.is_deleted()
  replicated = minijax.pmap(lambda v: v, in_axes=0, out_axes=None)(jnp.arange(4))
  out = jnp.copy(replicated)
  assert isinstance(out.sharding, NamedSharding) and int(out) == 0


def test_make_array_from_callback_asks_for_each_block(devices, mesh, mesh2d):
  value = np.arange(32.).reshape(4, 8)  # float64: made float32, as JAX does without x64
  sharding = NamedSharding(mesh2d, P("x", "y"))
  asked = []
  a = minijax.make_array_from_callback(value.shape, sharding,
                                       lambda index: asked.append(index) or value[index])
  assert len(asked) == 4 and a.dtype == np.float32 and a.committed and a.sharding == sharding
  np.testing.assert_array_equal(a, value)
  for shard in a.addressable_shards:
    np.testing.assert_array_equal(shard.data, value[shard.index])
  replicated = minijax.make_array_from_callback((), NamedSharding(mesh, P()), lambda i: 2.0)
  assert replicated.shape == () and float(replicated) == 2.0
  one = minijax.make_array_from_callback((3,), SingleDeviceSharding(devices[1]),
                                         lambda index: np.arange(3))
  assert one.devices() == {devices[1]} and one.committed and one.dtype == np.int32
  with pytest.raises(ValueError, match="must match the dtype of the addressable shards"):
    minijax.make_array_from_callback(value.shape, sharding, lambda i: value[i], dtype=np.int32)
  with pytest.raises(TypeError, match="sharding should be an instance"):
    minijax.make_array_from_callback(value.shape, "x", lambda i: value[i])


def test_make_array_from_single_device_arrays_assembles_blocks_in_place(devices, mesh2d):
  value = np.arange(32, dtype=np.float32).reshape(4, 8)
  sharding = NamedSharding(mesh2d, P("x", "y"))
  blocks = [minijax.device_put(value[index], d)
            for d, index in sharding.addressable_devices_indices_map(value.shape).items()]
  a = minijax.make_array_from_single_device_arrays(value.shape, sharding, blocks[::-1])
  assert a.sharding == sharding and a.committed
  np.testing.assert_array_equal(a, value)
  with pytest.raises(ValueError, match=r"none is on \[CpuDevice\(id=3\)\]"):
    minijax.make_array_from_single_device_arrays(value.shape, sharding, blocks[:3])
  with pytest.raises(ValueError, match="Expected shard shape"):
    minijax.make_array_from_single_device_arrays((4, 16), sharding, blocks)


def test_key_arrays_are_made_from_blocks_too(devices, mesh):
  sharding = NamedSharding(mesh, P("i"))
  expected = minijax.vmap(minijax.random.key)(jnp.arange(4))
  made = minijax.make_array_from_callback(
      (4,), sharding, lambda index: minijax.vmap(minijax.random.key)(jnp.arange(4)[index[0]]))
  np.testing.assert_array_equal(minijax.random.key_data(made),
                                minijax.random.key_data(expected))
  keys = minijax.random.split(minijax.random.key(0), 4)
  blocks = [minijax.device_put(keys[i:i + 1], d) for i, d in enumerate(devices)]
  assembled = minijax.make_array_from_single_device_arrays((4,), sharding, blocks)
  assert assembled.sharding == sharding
  np.testing.assert_array_equal(minijax.random.key_data(assembled),
                                minijax.random.key_data(keys))


def test_process_local_data_is_the_whole_array_in_one_process(mesh2d):
  from minijax.sharding import NamedSharding, PartitionSpec as P
  sharding = NamedSharding(mesh2d, P("x", None))
  made = minijax.make_array_from_process_local_data(sharding, np.arange(8.0).reshape(4, 2))
  assert made.shape == (4, 2) and made.sharding == sharding
  assert [np.asarray(s.data).tolist() for s in made.addressable_shards][:2] == [
      [[0.0, 1.0], [2.0, 3.0]]] * 2
  with pytest.raises(ValueError, match=r"local data has shape \(4, 2\), but with "
                                       r"global_shape=\(8, 2\)"):
    minijax.make_array_from_process_local_data(sharding, np.zeros((4, 2)), (8, 2))


def test_multihost_utils_in_one_process(mesh):
  from minijax.experimental import multihost_utils as mh
  from minijax.sharding import PartitionSpec as P
  assert mh.process_allgather({"a": np.arange(3)})["a"].tolist() == [[0, 1, 2]]
  assert mh.process_allgather(np.arange(3), tiled=True).tolist() == [0, 1, 2]
  assert mh.broadcast_one_to_all((np.ones(2), 3))[1] == 3
  mh.assert_equal({"x": np.arange(3)})
  mh.sync_global_devices("one process")
  assert mh.reached_preemption_sync_point(3) is False
  glob = mh.host_local_array_to_global_array({"x": np.arange(8.0)}, mesh, P("i"))
  assert glob["x"].shape == (8,) and len(glob["x"].addressable_shards) == 4
  assert mh.process_allgather(glob["x"], tiled=True).tolist() == list(range(8))
  assert mh.process_allgather(glob["x"]).shape == (1, 8)  # (fully addressable: stacked)
  local = mh.global_array_to_host_local_array(glob, mesh, P("i"))
  assert np.asarray(local["x"]).tolist() == list(range(8)) and mesh.local_mesh == mesh


def test_like_functions_lay_out_their_result_as_a_committed_sharded_input(devices):
  # (as JAX's full_like: optax's optimizer moments follow their sharded parameters)
  mesh = Mesh(np.array(devices).reshape(2, 2), ("a", "b"))
  x = minijax.device_put(jnp.ones((4, 4)), NamedSharding(mesh, P("a", "b")))
  for made in (jnp.zeros_like(x), jnp.ones_like(x), jnp.full_like(x, 2.0)):
    assert made.sharding == x.sharding
  assert jnp.zeros_like(x, shape=(2,)).sharding != x.sharding  # (another shape: default)
  assert len(jnp.zeros_like(jnp.ones(3)).sharding.device_set) == 1


def test_a_compiled_sharded_function_says_where_its_values_live(mesh):
  split, whole = NamedSharding(mesh, P("i")), NamedSharding(mesh, P())
  f = minijax.jit(lambda x, y: (x * 2, y.sum()), in_shardings=(split, whole))
  compiled = f.lower(jnp.arange(8.0), jnp.ones(3)).compile()
  assert compiled.input_shardings == ((split, whole), {})
  outs = compiled.output_shardings
  assert outs[0].is_equivalent_to(split, 1) and outs[1].is_fully_replicated
  assert [f.layout.major_to_minor for f in compiled.input_formats[0]] == [(0,), (0,)]
  x, total = compiled(minijax.device_put(jnp.arange(8.0), split), jnp.ones(3))
  assert x.sharding.is_equivalent_to(outs[0], 1) and float(total) == 3.0
  # a Format of the default layout stands for its sharding (flax's Variable(out_sharding=))
  from minijax.experimental.layout import Format, Layout
  placed = minijax.device_put(jnp.arange(8.0), Format(Layout((0,)), split))
  assert placed.sharding == split


def test_jax_was_never_imported():
  assert "jax" not in sys.modules
