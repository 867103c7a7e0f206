"""The stages of ahead-of-time compilation report what JAX's do: the output structure and
types at each stage, and, once compiled, where arguments and results live and the layouts
XLA chose (JAX 0.10.2's values on the CPU, recorded here)."""
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.experimental.layout import Format, Layout
from minijax.sharding import SingleDeviceSharding


def f(x, y):
  return {"prod": x @ y, "total": x.sum()}


def test_each_stage_gives_the_output_tree_and_types():
  traced = minijax.jit(f).trace(jnp.ones((2, 3)), jnp.ones((3, 4)))
  lowered = traced.lower()
  compiled = lowered.compile()
  for stage in (traced, lowered, compiled):
    assert stage.out_tree == minijax.tree.structure({"prod": 0, "total": 0})
    info = stage.out_info
    assert (info["prod"].shape, info["prod"].dtype) == ((2, 4), np.float32)
    assert (info["total"].shape, info["total"].dtype) == ((), np.float32)
  weak = minijax.jit(lambda x: x * 2).trace(1.0)
  assert weak.out_info.weak_type and not weak.lower().out_info.weak_type  # as JAX's


def test_a_compiled_function_says_where_its_values_live_and_how_they_are_laid_out():
  compiled = minijax.jit(f).lower(jnp.ones((2, 3)), jnp.ones((3, 4))).compile()
  cpu = SingleDeviceSharding(minijax.devices()[0])
  assert repr(cpu) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
  assert compiled.input_shardings == ((cpu, cpu), {})
  assert compiled.output_shardings == {"prod": cpu, "total": cpu}
  assert compiled.out_info["prod"].sharding == cpu
  assert compiled.out_info["prod"].format == Format(Layout((0, 1)), cpu)
  assert repr(compiled.out_info["total"]) == (
      "ShapeDtypeStruct(shape=(), dtype=float32, sharding=SingleDeviceSharding(device=CpuDevice("
      "id=0), memory_kind=device), format=Layout(major_to_minor=(), tiling=(), "
      "sub_byte_element_size_in_bits=0))")
  spec = minijax.ShapeDtypeStruct((2,), np.float32, sharding=Format(Layout((0,)), cpu))
  assert spec.sharding == cpu and spec.update(shape=(3,)).format == spec.format
  assert spec != minijax.ShapeDtypeStruct((2,), np.float32, sharding=cpu)
  row_major = Format(Layout((0, 1)), cpu)
  assert compiled.input_formats == ((row_major, row_major), {})
  assert compiled.output_formats == {"prod": row_major, "total": Format(Layout(()), cpu)}
  assert repr(Layout((0, 1))) == (
      "Layout(major_to_minor=(0, 1), tiling=(), sub_byte_element_size_in_bits=0)")
  out = compiled(jnp.ones((2, 3)), jnp.ones((3, 4)))
  assert out["prod"].sharding == compiled.output_shardings["prod"]


def test_a_function_with_constants_reports_only_its_arguments():
  table = jnp.arange(6.0).reshape(2, 3)
  compiled = minijax.jit(lambda x: table * x).lower(2.0).compile()
  cpu = SingleDeviceSharding(minijax.devices()[0])
  assert compiled.input_shardings == ((cpu,), {})
  assert compiled.input_formats == ((Format(Layout(()), cpu),), {})
  np.testing.assert_array_equal(compiled(2.0), np.arange(6.0).reshape(2, 3) * 2)


def test_a_format_of_the_default_layout_places_by_its_sharding_and_another_is_refused():
  cpu = SingleDeviceSharding(minijax.devices()[0])
  x = minijax.device_put(np.ones((2, 3), np.float32), Format(Layout((0, 1)), cpu))
  assert x.sharding == cpu
  y = minijax.jit(lambda v: minijax.lax.with_sharding_constraint(v, Format(None, cpu)))(x)
  np.testing.assert_array_equal(y, np.ones((2, 3)))
  with pytest.raises(NotImplementedError, match=r"row-major.*cannot apply another layout"):
    minijax.device_put(np.ones((2, 3), np.float32), Format(Layout((1, 0)), cpu))


def test_a_function_of_no_arguments_has_no_input_formats():
  table = jnp.arange(3.0)
  compiled = minijax.jit(lambda: table * 2).lower().compile()
  assert compiled.input_formats == ((), {}) and compiled.input_shardings == ((), {})
  assert compiled.output_formats.layout == Layout((0,))
