"""Callbacks in computations over several devices, and the sharding names JAX's callback
tests use (`minijax.NamedSharding`, `minijax.P`, `set_mesh`, `experimental.pjit`)."""
import sys

import numpy as np
import pytest

import minijax
from minijax import numpy as jnp
from minijax.experimental import io_callback, pjit
from minijax.sharding import Mesh, PartitionSpec, SingleDeviceSharding


def test_the_sharding_names_are_jaxs(mesh):
  assert minijax.NamedSharding is minijax.sharding.NamedSharding
  assert minijax.P is PartitionSpec and pjit.pjit is minijax.jit
  assert minijax.sharding.use_mesh is minijax.set_mesh is minijax.sharding.set_mesh


def test_set_mesh_sets_the_mesh_globally_or_for_a_block(mesh):
  f = minijax.jit(lambda x: x * 2, in_shardings=minijax.P("i"), out_shardings=minijax.P("i"))
  with minijax.set_mesh(mesh):
    assert minijax.sharding.get_mesh() is mesh
    out = f(jnp.arange(8.0))
  assert minijax.sharding.get_mesh() is None
  assert out.sharding == minijax.NamedSharding(mesh, minijax.P("i"))
  np.testing.assert_array_equal(out, np.arange(8.0) * 2)
  previous = minijax.set_mesh(mesh)  # the global form
  try:
    assert minijax.sharding.get_mesh() is mesh
  finally:
    previous.__exit__(None, None, None)
  assert minijax.sharding.get_mesh() is None
  with pytest.raises(ValueError, match="Expected mesh of type"):
    minijax.set_mesh("i")


@pytest.mark.parametrize("ordered", [True, False])
def test_an_io_callback_runs_on_the_device_its_sharding_names(mesh, devices, ordered):
  seen = []
  cb_sharding = SingleDeviceSharding(devices[-1])

  def f(x):
    io_callback(lambda v: seen.append(int(v.sum())), None, x, ordered=ordered,
                sharding=cb_sharding)
    return io_callback(lambda v: v + 1, minijax.ShapeDtypeStruct(x.shape, x.dtype), x,
                       ordered=ordered)

  g = pjit.pjit(f, in_shardings=minijax.NamedSharding(mesh, minijax.P("i")),
                out_shardings=minijax.NamedSharding(mesh, minijax.P()))
  x = jnp.arange(4, dtype=np.int32)
  np.testing.assert_array_equal(g(x), np.arange(4) + 1)
  minijax.effects_barrier()
  assert seen == [6]
  text = g.lower(x).as_text()
  assert "{maximal device=3}" in text and "{maximal device=0}" in text
  with pytest.raises(NotImplementedError, match="single-device sharding"):
    io_callback(lambda v: v, None, x, sharding=minijax.NamedSharding(mesh, minijax.P()))


def test_a_shard_map_returning_nothing_takes_out_specs_none(mesh):
  seen = []

  def f(x):
    io_callback(lambda v: seen.append(v.shape), None, x, ordered=True)

  minijax.jit(minijax.shard_map(f, mesh=mesh, in_specs=minijax.P("i"), out_specs=None))(
      jnp.arange(8))
  minijax.effects_barrier()
  assert seen == [(2,)] * 4
  with pytest.raises(TypeError, match="out_specs leaves must be PartitionSpecs, got None"):
    minijax.shard_map(lambda x: x, mesh=mesh, in_specs=minijax.P("i"), out_specs=None)(
        jnp.arange(8))


def test_make_mesh_builds_auto_meshes_and_refuses_other_axis_types(devices):
  from minijax.sharding import AxisType
  mesh = minijax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
  assert mesh.shape == {"x": 2, "y": 2} and list(mesh.devices.flat) == list(devices)
  with pytest.raises(NotImplementedError, match="AxisType.Auto"):
    Mesh(np.array(devices), ("i",), axis_types=(AxisType.Explicit,))
  with pytest.raises(ValueError, match="needs 8 devices"):
    minijax.make_mesh((8,), ("i",))


def test_minijax_partitions_with_gspmd_and_says_so(mesh):
  assert minijax.config.use_shardy_partitioner is False
  assert minijax.config.jax_use_shardy_partitioner is False
  with pytest.raises(ValueError, match="use_shardy_partitioner cannot be True"):
    minijax.config.update("jax_use_shardy_partitioner", True)


def test_an_ordered_debug_print_over_several_devices_is_refused_as_in_jax(capsys):
  def f(x):
    minijax.debug.print("{}", x, ordered=True)
    return x

  with pytest.raises(ValueError, match="ordered effects are not supported for more than 1 "
                     r"device: \[OrderedDebugEffect\]"):
    minijax.pmap(f)(jnp.arange(4))
  minijax.pmap(lambda x: minijax.debug.print("{}", x))(jnp.arange(4))  # unordered: fine
  minijax.effects_barrier()
  assert sorted(capsys.readouterr().out.split()) == ["0", "1", "2", "3"]


def test_debug_prints_over_several_devices_have_run_when_the_call_returns(mesh, capsys):
  minijax.pmap(lambda x: minijax.debug.print("p {}", x))(jnp.arange(4))  # no barrier
  assert sorted(capsys.readouterr().out.split("\n")) == ["", "p 0", "p 1", "p 2", "p 3"]
  f = minijax.jit(lambda x: minijax.debug.print("s: {}", x, partitioned=True))
  f(minijax.device_put(np.arange(8), minijax.NamedSharding(mesh, minijax.P("i"))))
  assert sorted(capsys.readouterr().out.splitlines()) == [
      "s: [0 1]", "s: [2 3]", "s: [4 5]", "s: [6 7]"]


# ----------------------------------------------------------------------------- per shard
# The lines below were printed by jax 0.10.2 on 4 CPU devices (in some order: each device
# prints its own).

def _printed(capsys):
  minijax.effects_barrier()
  return sorted(capsys.readouterr().out.splitlines())


def test_a_partitioned_debug_print_prints_each_devices_shard(mesh, mesh2d, capsys):
  f = minijax.jit(lambda x: minijax.debug.print("s: {}", x, partitioned=True))
  f(minijax.device_put(np.arange(8), minijax.NamedSharding(mesh, minijax.P("i"))))
  assert _printed(capsys) == ["s: [0 1]", "s: [2 3]", "s: [4 5]", "s: [6 7]"]
  f(minijax.device_put(np.arange(8).reshape(2, 4), minijax.NamedSharding(mesh2d,
                                                                       minijax.P("x", "y"))))
  assert _printed(capsys) == ["s: [[0 1]]", "s: [[2 3]]", "s: [[4 5]]", "s: [[6 7]]"]
  f(minijax.device_put(np.arange(8), minijax.NamedSharding(mesh, minijax.P())))
  assert _printed(capsys) == ["s: [0 1 2 3 4 5 6 7]"] * 4
  minijax.debug.print("s: {}", jnp.arange(3), partitioned=True)  # eagerly: the whole value
  assert _printed(capsys) == ["s: [0 1 2]"]


def test_a_partitioned_debug_print_under_vmap_prints_each_element_per_shard(mesh, capsys):
  g = minijax.jit(minijax.vmap(
      lambda x, y: minijax.debug.print("v: {} {}", x, y, partitioned=True), in_axes=(0, 1)))
  g(minijax.device_put(np.arange(8).reshape(4, 2), minijax.NamedSharding(mesh, minijax.P("i"))),
    minijax.device_put(np.arange(8).reshape(2, 4) + 10,
                       minijax.NamedSharding(mesh, minijax.P(None, "i"))))
  assert _printed(capsys) == sorted(
      ["v: [0 1] [10 14]", "v: [2 3] [11 15]", "v: [4 5] [12 16]", "v: [6 7] [13 17]"] * 4)


def test_a_partitioned_debug_print_in_shard_map_prints_each_block(mesh, capsys):
  h = minijax.jit(minijax.shard_map(
      lambda x: (minijax.debug.print("b: {}", x, partitioned=True), x * 2)[1], mesh=mesh,
      in_specs=minijax.P("i"), out_specs=minijax.P("i")))
  np.testing.assert_array_equal(h(np.arange(8.0)), np.arange(8.0) * 2)
  assert _printed(capsys) == ["b: [0. 1.]", "b: [2. 3.]", "b: [4. 5.]", "b: [6. 7.]"]


def test_an_exception_in_a_partitioned_debug_callback_fails_the_call_as_in_jax(mesh):
  def bad(v):
    raise ValueError(f"shard {v}")
  x = minijax.device_put(np.arange(8.0), minijax.NamedSharding(mesh, minijax.P("i")))
  with pytest.raises(minijax.errors.JaxRuntimeError, match=r"ValueError: shard \[") as info:
    minijax.jit(lambda x: minijax.debug.callback(bad, x, partitioned=True))(x)
  assert type(info.value.__cause__) is ValueError
  minijax.effects_barrier()  # raised once


def test_inspect_array_sharding_reports_the_layout_xla_chose_once_per_compilation(mesh):
  seen = []
  k = minijax.jit(lambda x: (minijax.debug.inspect_array_sharding(x * 2, callback=seen.append),
                             x)[1])
  x = minijax.device_put(np.arange(8.0), minijax.NamedSharding(mesh, minijax.P("i")))
  with minijax.set_mesh(mesh):
    k(x)
    k(x)  # cached: no second call, as in JAX
  assert seen == [minijax.NamedSharding(mesh, minijax.P("i"))]
  seen.clear()
  minijax.jit(lambda x: minijax.debug.inspect_array_sharding(x * 2, callback=seen.append))(x)
  # (without set_mesh: the mesh of the arguments' shardings)
  assert seen == [minijax.NamedSharding(mesh, minijax.P("i"))]
  seen.clear()
  minijax.jit(minijax.shard_map(
      lambda b: (minijax.debug.inspect_array_sharding(b, callback=seen.append), b)[1],
      mesh=mesh, in_specs=minijax.P("i"), out_specs=minijax.P("i")))(np.arange(8.0))
  assert seen == [minijax.NamedSharding(mesh, minijax.P())]  # a block: as JAX says
  seen.clear()
  minijax.debug.inspect_array_sharding({"a": x}, callback=seen.append)  # eagerly: at once
  assert seen == [x.sharding]
  seen.clear()
  minijax.jit(minijax.grad(lambda v: jnp.sum(
      (minijax.debug.inspect_array_sharding(v, callback=seen.append), v * v)[1])))(1.0)
  assert seen == [SingleDeviceSharding(minijax.devices()[0])]  # one device: at lowering


def test_jax_was_never_imported():
  assert "jax" not in sys.modules
