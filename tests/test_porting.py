"""Porting from JAX without friction: JAX 0.10.2's names with its signatures, its flag names
and environment variables, the behaviours ported code relies on (static arguments by name
or position, custom derivatives on concrete values, out-of-bounds indexing, weak types,
traced stages, host constants inside jit), and quiet, helpful errors.  Facts recorded from
JAX 0.10.2 are literals here; nothing imports jax."""
from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import re
import sys
import traceback

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.test_util import check_grads
from minijax.config import FLAGS
from tests.conftest import ROOT, run_python

# ----------------------------------------------------------------------------- names

# Parameter names of JAX 0.10.2's functions (inspect.signature), recorded.
JAX_SIGNATURES = {
    "jacobian": ["fun", "argnums", "has_aux", "holomorphic", "allow_int"],
    "typeof": ["x"],
    "device_count": ["backend"],
    "local_device_count": ["backend"],
    "default_backend": [],
    "device_get": ["x"],
    "block_until_ready": ["x"],
    "ensure_compile_time_eval": [],
    "disable_jit": ["disable"],
    "jit": ["fun", "in_shardings", "out_shardings", "static_argnums", "static_argnames",
            "donate_argnums", "donate_argnames", "keep_unused", "device", "backend", "inline",
            "compiler_options"],
    "named_scope": ["name"],
    "print_environment_info": ["return_string"],
    "test_util.check_grads": ["f", "args", "order", "modes", "atol", "rtol", "eps"],
    "tree_util.keystr": ["keys", "simple", "separator"],
    "tree_util.tree_reduce": ["function", "tree", "initializer", "is_leaf"],
    "tree_util.tree_map_with_path": ["f", "tree", "rest", "is_leaf", "is_leaf_takes_path"],
    "tree_util.tree_flatten_with_path": ["tree", "is_leaf", "is_leaf_takes_path"],
    "tree_util.tree_leaves_with_path": ["tree", "is_leaf", "is_leaf_takes_path"],
    "tree_util.tree_all": ["tree", "is_leaf"],
    "tree_util.tree_transpose": ["outer_treedef", "inner_treedef", "pytree_to_transpose"],
    "tree_util.tree_broadcast": ["prefix_tree", "full_tree", "is_leaf"],
    "tree.map": ["f", "tree", "rest", "is_leaf"],
    "tree.leaves": ["tree", "is_leaf"],
    "tree.flatten": ["tree", "is_leaf"],
    "tree.unflatten": ["treedef", "leaves"],
    "tree.structure": ["tree", "is_leaf"],
    "tree.reduce": ["function", "tree", "initializer", "is_leaf"],
    "tree.all": ["tree", "is_leaf"],
    "tree.transpose": ["outer_treedef", "inner_treedef", "pytree_to_transpose"],
    "tree.broadcast": ["prefix_tree", "full_tree", "is_leaf"],
    "tree.map_with_path": ["f", "tree", "rest", "is_leaf", "is_leaf_takes_path"],
    "tree.flatten_with_path": ["tree", "is_leaf", "is_leaf_takes_path"],
    "tree.leaves_with_path": ["tree", "is_leaf", "is_leaf_takes_path"],
    "dtypes.canonicalize_dtype": ["dtype", "allow_extended_dtype"],
    "dtypes.result_type": ["args", "return_weak_type_flag"],
    "dtypes.scalar_type_of": ["x"],
    "dtypes.issubdtype": ["a", "b"],
    "dtypes.itemsize_bits": ["dtype"],
    "numpy.issubdtype": ["arg1", "arg2"],
    "numpy.empty_like": ["prototype", "dtype", "shape", "device", "out_sharding"],
    "numpy.unravel_index": ["indices", "shape"],
    "numpy.choose": ["a", "choices", "out", "mode"],
    "numpy.clip": ["arr", "min", "max"],
    "tree_util.register_dataclass": ["nodetype", "data_fields", "meta_fields", "drop_fields"],
    "lax.slice_in_dim": ["operand", "start_index", "limit_index", "stride", "axis"],
    "lax.dynamic_slice_in_dim": ["operand", "start_index", "slice_size", "axis",
                                 "allow_negative_indices"],
    "lax.dynamic_update_slice_in_dim": ["operand", "update", "start_index", "axis",
                                        "allow_negative_indices"],
    "lax.clamp": ["min", "x", "max"],
    "lax.reshape": ["operand", "new_sizes", "dimensions"],
    "lax.squeeze": ["array", "dimensions"],
    "lax.expand_dims": ["array", "dimensions"],
}


def _resolve(path: str):
  obj = minijax
  for part in path.split("."):
    obj = getattr(obj, part)
  return obj


@pytest.mark.parametrize("path", sorted(JAX_SIGNATURES))
def test_names_ported_code_uses_exist_with_jax_signatures(path):
  assert list(inspect.signature(_resolve(path)).parameters) == JAX_SIGNATURES[path]


def test_clip_takes_jax_0_10_2s_arguments_only():
  """numpy's older `a_min`/`a_max` were removed from JAX's clip; minijax took them (brax's
  fluid model passes `a_min=`, which fails under JAX 0.10.2 and now under minijax alike)."""
  x = jnp.arange(4.0)
  assert jnp.clip(x, 1, 2).tolist() == x.clip(min=1, max=2).tolist() == [1, 1, 2, 2]
  assert jnp.clip(x, max=2).tolist() == [0, 1, 2, 2]
  with pytest.raises(TypeError, match="a_min"):
    jnp.clip(x, a_min=1)
  with pytest.raises(ValueError, match="No input was provided to the clip function"):
    jnp.clip()


def test_lax_slices_in_one_dimension_take_python_bounds():
  x = np.arange(6.0).reshape(2, 3)
  np.testing.assert_array_equal(minijax.lax.slice_in_dim(x, -2, None, axis=1), x[:, -2:])
  np.testing.assert_array_equal(minijax.lax.slice_in_dim(x, start_index=None, limit_index=1),
                                x[:1])
  np.testing.assert_array_equal(minijax.lax.index_in_dim(x, -1, axis=1, keepdims=False),
                                x[:, -1])
  with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 3"):
    minijax.lax.index_in_dim(x, 5, axis=1)


def test_the_experimental_shard_map_spelling_warns_and_runs():
  from minijax.sharding import Mesh, PartitionSpec as P
  with pytest.warns(DeprecationWarning, match="Use jax.shard_map instead"):
    from minijax.experimental.shard_map import shard_map
  mesh = Mesh(np.array(minijax.devices()[:1]), ("i",))
  out = shard_map(lambda x: x * 2, mesh, P("i"), P("i"), check_rep=False)(np.arange(4.0))
  np.testing.assert_array_equal(out, np.arange(4.0) * 2)


def test_register_dataclass_checks_fields_as_jax_does():
  import dataclasses

  @dataclasses.dataclass
  class Point:
    x: float
    label: str = dataclasses.field(metadata={"static": True}, default="p")
    cache: float = dataclasses.field(init=False, default=0.0)

  with pytest.raises(ValueError, match=r"Unexpected fields: \{'cache'\}"):
    minijax.tree_util.register_dataclass(Point)
  with pytest.raises(TypeError, match="give both data_fields and meta_fields"):
    minijax.tree_util.register_dataclass(Point, data_fields=["x"])
  minijax.tree_util.register_dataclass(Point, ["x"], ["label"], drop_fields=["cache"])
  leaves, treedef = minijax.tree_util.tree_flatten(Point(2.0))
  assert leaves == [2.0] and minijax.tree_util.tree_unflatten(treedef, [3.0]).x == 3.0


def test_jit_takes_jax_keyword_arguments():
  params = inspect.signature(minijax.jit).parameters
  for name in ["static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
               "keep_unused", "device", "backend", "inline"]:
    assert name in params and params[name].default in (None, False), name
  with pytest.raises(RuntimeError, match="cpu"):
    minijax.jit(lambda x: x, backend="gpu")


def test_tree_utilities_behave_as_jax():
  params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
  paths = [(minijax.tree_util.keystr(p), minijax.tree_util.keystr(p, simple=True, separator="/"))
           for p, _ in minijax.tree.leaves_with_path(params)]
  assert paths == [("['foo']['bar']['bat'][0]", "foo/bar/bat/0"),
                   ("['foo']['bar']['bat'][1]", "foo/bar/bat/1"),
                   ("['foo']['bar']['baz']", "foo/bar/baz")]
  assert minijax.tree.reduce(lambda a, b: a + b, params) == 6
  assert minijax.tree.reduce(lambda a, b: a + b, params, 10) == 16
  labelled = minijax.tree.map_with_path(lambda p, x, y: (minijax.tree_util.keystr(p), x + y),
                                        [1, (2,)], [10, (20,)])
  assert labelled == [("[0]", 11), (("[1][0]", 22),)]
  outer, inner = minijax.tree.structure([0, 0]), minijax.tree.structure((0, 0))
  assert minijax.tree.transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
  assert minijax.tree.transpose(outer, None, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
  assert minijax.tree.all([True, (1, 2)]) and not minijax.tree.all([True, 0])
  assert minijax.tree.broadcast([1, 2], [(3, 4), 5]) == [(1, 1), 2]
  leaves, treedef = minijax.tree.flatten({"a": 1, "b": (2, 3)})
  assert minijax.tree.unflatten(treedef, [x * 2 for x in leaves]) == {"a": 2, "b": (4, 6)}
  # is_leaf takes the value (or, with is_leaf_takes_path, the path and the value)
  flat, _ = minijax.tree_util.tree_flatten_with_path([1, [2]], is_leaf=lambda x: x == [2])
  assert [x for _, x in flat] == [1, [2]]
  flat, _ = minijax.tree_util.tree_flatten_with_path(
      [1, [2]], is_leaf=lambda path, x: len(path) == 1, is_leaf_takes_path=True)
  assert [x for _, x in flat] == [1, [2]]


class _Pair:
  def __init__(self, a, b):
    self.a, self.b = a, b


def test_pytrees_registered_with_keys_and_static_classes():
  tu = minijax.tree_util
  tu.register_pytree_with_keys(
      _Pair, lambda p: (((tu.GetAttrKey("a"), p.a), (tu.GetAttrKey("b"), p.b)), None),
      lambda aux, children: _Pair(*children))
  flat, _ = tu.tree_flatten_with_path(_Pair(1, [2, 3]))
  assert [(tu.keystr(path), x) for path, x in flat] == [(".a", 1), (".b[0]", 2), (".b[1]", 3)]
  doubled = minijax.jit(lambda p: tu.tree_map(lambda x: x * 2, p))(_Pair(1.0, 2.0))
  assert (float(doubled.a), float(doubled.b)) == (2.0, 4.0)

  @tu.register_pytree_with_keys_class
  class Box:
    def __init__(self, x):
      self.x = x

    def tree_flatten_with_keys(self):
      return ((tu.GetAttrKey("x"), self.x),), "aux"

    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls(*children)
  assert tu.keystr(tu.tree_flatten_with_path(Box(5))[0][0][0]) == ".x"

  @tu.register_static
  class Static:
    pass
  marker = Static()
  leaves, treedef = tu.tree_flatten([marker, 1])
  assert leaves == [1] and tu.tree_unflatten(treedef, [2])[0] is marker


def test_shape_dtype_structs_know_rank_size_and_length():
  s = minijax.ShapeDtypeStruct(shape=(4, 2, 3), dtype=jnp.float32)
  assert (s.ndim, s.size, len(s), str(s)) == (3, 24, 4, "ShapeDtypeStruct(shape=(4, 2, 3), "
                                                        "dtype=float32)")
  scalar = minijax.ShapeDtypeStruct((), np.float32)
  assert (scalar.ndim, scalar.size) == (0, 1)
  with pytest.raises(TypeError, match="len.. of unsized object"):
    len(scalar)
  with pytest.raises(ValueError, match="dtype must be specified"):
    minijax.ShapeDtypeStruct((), None)


def test_utilities_of_the_top_level():
  assert repr(minijax.typeof(1.0)) == "ShapedArray(float32[], weak_type=True)"
  assert str(minijax.typeof(1.0)) == "~float32[]"  # as JAX prints them
  assert str(minijax.typeof(np.ones((2, 3), np.int32))) == "int32[2,3]"
  assert minijax.typeof(np.ones((2, 3), np.int32)).shape == (2, 3)
  assert minijax.device_count() == len(minijax.devices()) == minijax.local_device_count()
  assert minijax.default_backend() == "cpu"
  got = minijax.device_get({"a": jnp.ones(2), "b": 3})
  assert type(got["a"]) is np.ndarray and got["b"] == 3
  tree = (jnp.ones(2), [jnp.zeros(()), 1])
  assert minijax.block_until_ready(tree) is tree
  info = minijax.print_environment_info(return_string=True)
  assert "minijax:" in info and "jaxlib:" in info and "numpy:" in info and "device info" in info
  np.testing.assert_allclose(minijax.jacobian(lambda x: x ** 2)(np.ones(2, np.float32)),
                             2 * np.eye(2))


def test_ensure_compile_time_eval_computes_concrete_values_inside_jit():
  @minijax.jit
  def f(x):
    with minijax.ensure_compile_time_eval():
      y = jnp.sin(3.0)
      positive = y > 0  # a concrete Array: usable in Python control flow
    return x + y if positive else x - y
  np.testing.assert_allclose(f(1.0), 1 + np.sin(3.0), rtol=1e-6)
  jaxpr = str(minijax.make_jaxpr(f)(1.0))
  assert "sin" not in jaxpr and "gt" not in jaxpr
  with pytest.raises(minijax.errors.TracerBoolConversionError):
    minijax.jit(lambda x: jnp.sin(x) > 0 and x)(1.0)  # traced values stay traced


def test_ensure_compile_time_eval_runs_operations_without_operands_eagerly():
  with minijax.ensure_compile_time_eval():  # eye and iota have no operands to trace
    np.testing.assert_allclose(jnp.linalg.solve(jnp.eye(3), jnp.ones(3)), np.ones(3))
    assert jnp.arange(3).sum() == 3


def test_an_impl_saved_from_a_primitive_still_runs_once_replaced():
  from minijax import lax
  sin_impl, calls = lax.sin_p.impl, []
  lax.sin_p.def_impl(lambda x, **params: calls.append(1) or sin_impl(x, **params))
  try:
    y = minijax.checkpoint(lambda x: lax.sin(lax.sin(x)))(2.0)
  finally:
    lax.sin_p.def_impl(sin_impl)
  np.testing.assert_allclose(y, np.sin(np.sin(2.0)), rtol=1e-6)
  assert calls == [1, 1] and lax.sin_p.impl is sin_impl


def test_named_scope_names_operations_in_the_lowered_module():
  def f(x):
    with minijax.named_scope("layer1"):
      with minijax.named_scope("inner"):
        return jnp.sin(x)
  module = minijax.jit(f).lower(1.0).compiler_ir()
  assert "layer1/inner/sin" in module.operation.get_asm(enable_debug_info=True)
  with pytest.raises(TypeError, match="string"):
    with minijax.named_scope(3):
      pass


def test_lowered_operations_are_named_as_jax_names_them():
  # JAX 0.10.2's names: the module's function, the scopes, the op holding a region and the
  # region (a branch, a loop's body or condition); a called function names its own ops
  # from its start, and the call after the function.
  @minijax.jit
  def inner(x):
    with minijax.named_scope("c"):
      return jnp.cos(x)

  def f(x):
    with minijax.named_scope("b"):
      y = lax.cond(x.sum() > 0, jnp.sin, lambda x: inner(x), x)
      return lax.while_loop(lambda c: c.sum() < 10, lambda c: c * 2, y)

  text = minijax.jit(f).lower(jnp.ones(2)).as_text(debug_info=True)
  names = set(re.findall(r'loc\("([^"/][^"]*)"', text))
  assert {"jit(f)/b/gt", "jit(f)/b/cond", "jit(f)/b/cond/branch_1_fun/sin",
          "jit(f)/b/cond/branch_0_fun/jit(inner)", "c/cos", "jit(f)/b/while",
          "jit(f)/b/while/cond/lt", "jit(f)/b/while/body/mul"} <= names, names


def test_array_copy_has_its_own_buffer_and_setitem_names_the_at_update():
  x = jnp.arange(3.0)
  y = x.copy()
  x.delete()
  np.testing.assert_array_equal(y, [0.0, 1.0, 2.0])
  np.testing.assert_array_equal(jnp.copy(y), y)
  np.testing.assert_array_equal(minijax.jit(lambda a: a.copy() * 2)(y), [0.0, 2.0, 4.0])
  with pytest.raises(TypeError, match=r"instead of x\[0\] = 1\.0, use x = x\.at\[0\]\.set\(1\.0\)"):
    y[0] = 1.0
  with pytest.raises(TypeError, match=r"x = x\.at\[1:3\]\.set\(y\)"):
    y[1:3] = jnp.ones(2)
  with pytest.raises(TypeError, match=r"\.at\[0, \.\.\.\]"):
    minijax.jit(lambda a: a.__setitem__((0, Ellipsis), 2))(y)


def test_scalar_types_compare_and_hash_like_numpys():
  assert np.complex64 == jnp.complex64 and jnp.float32 == np.float32
  assert np.dtype("float32") == jnp.float32 and jnp.float32 == np.dtype("float32")
  assert not (jnp.float32 != np.float32) and jnp.float32 != jnp.int32
  assert jnp.float32 != "float32"  # as JAX's
  assert {np.float32: "f"}[jnp.float32] == "f" and hash(jnp.int8) == hash(np.int8)
  assert isinstance(np.float32(1), jnp.float32) and not isinstance(np.int32(1), jnp.float32)
  assert np.zeros(2, jnp.int8).dtype == np.int8


def test_errors_are_jax_classes_raised_where_jax_raises_them():
  errors = minijax.errors
  # The class hierarchy of JAX 0.10.2's jax.errors
  assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
  assert issubclass(errors.ConcretizationTypeError, errors.JAXTypeError)
  assert issubclass(errors.JAXTypeError, TypeError)
  assert issubclass(errors.TracerArrayConversionError, errors.JAXTypeError)
  assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
  assert issubclass(errors.JAXIndexError, IndexError)
  assert issubclass(errors.JaxprTypeError, TypeError)
  assert issubclass(errors.UnexpectedTracerError, Exception)
  cases = [
      (lambda x: 1.0 if x > 0 else 0.0, errors.TracerBoolConversionError),
      (lambda x: jnp.ones(3)[: int(x)], errors.ConcretizationTypeError),
      (lambda x: np.asarray(x), errors.TracerArrayConversionError),
      (lambda x: jnp.ones(3)[jnp.ones(3) > x], errors.NonConcreteBooleanIndexError),
  ]
  for fn, error in cases:
    with pytest.raises(error) as info:
      minijax.jit(fn)(1.0)
    assert type(info.value) is error
  with pytest.raises(errors.JaxRuntimeError):
    raise errors.JaxRuntimeError("from XLA")


def test_dtypes_module():
  d = minijax.dtypes
  assert d.result_type(1.0, return_weak_type_flag=True) == (np.float32, True)
  assert d.result_type(np.float32, 1) == np.float32
  assert d.result_type(np.int8, np.uint8) == np.int16
  assert d.scalar_type_of(np.float32(1)) is float and d.scalar_type_of(np.int8(1)) is int
  assert d.scalar_type_of(True) is bool and d.scalar_type_of(np.complex64(1)) is complex
  assert d.canonicalize_dtype(np.float64) == np.float32
  assert d.issubdtype(d.bfloat16, np.floating) and not d.issubdtype(np.int32, np.floating)
  assert d.itemsize_bits(np.int16) == 16 and d.float0 == np.dtype([("float0", np.void, 0)])
  assert issubclass(d.TypePromotionError, ValueError)
  assert d.finfo(d.bfloat16).bits == 16 and d.iinfo(np.int8).max == 127


def test_check_grads_passes_right_derivatives_and_catches_wrong_ones():
  check_grads(lambda x, y: jnp.sin(x) * y ** 2, (np.float32(0.3), np.float32(1.2)), order=2)
  check_grads(lambda x: jnp.tanh(x).sum(), (np.linspace(0, 1, 5).astype(np.float32),), 2,
              modes=["rev"])
  check_grads(lambda x: {"a": x ** 3}, (np.float64(0.7),), 1, modes=("fwd",), atol=1e-4,
              rtol=1e-4)
  wrong = minijax.custom_jvp(lambda x: jnp.sin(x))
  wrong.defjvp(lambda p, t: (jnp.sin(p[0]), 2.0 * t[0]))
  for modes in (["fwd"], ["rev"]):
    with pytest.raises(AssertionError):
      check_grads(wrong, (np.float32(0.3),), 1, modes=modes)


# ----------------------------------------------------------------------------- config

def test_config_takes_jax_names_for_every_flag():
  config = minijax.config
  for name in FLAGS:
    assert getattr(config, "jax_" + name) == getattr(config, name)
  previous = config.enable_x64
  try:
    config.update("jax_enable_x64", True)
    assert config.enable_x64 and config.jax_enable_x64
    assert jnp.ones(2, jnp.float64).dtype == np.float64
  finally:
    config.update("enable_x64", previous)
  with pytest.raises(AttributeError, match="no flag 'jax_not_a_flag'"):
    config.update("jax_not_a_flag", 1)
  with pytest.raises(ValueError, match="host_callback_semantics"):
    config.update("jax_host_callback_semantics", "modern")
  with pytest.raises(ValueError, match="traceback_filtering"):
    config.update("jax_traceback_filtering", "sometimes")
  with pytest.raises(ValueError, match="CPU only"):
    config.update("jax_platforms", "tpu")
  config.update("jax_platforms", "cpu")
  config.update("jax_platforms", None)


_SHOW_CONFIG = """
import minijax
from minijax.config import config
print(config.enable_x64, config.debug_nans, config.log_compiles, config.traceback_filtering,
      config.host_callback_semantics, minijax.device_count())
minijax.numpy.ones(2).block_until_ready()
"""


def test_jax_environment_variables_are_read_and_minijax_ones_win():
  jax_env = {"JAX_ENABLE_X64": "1", "JAX_DEBUG_NANS": "true", "JAX_LOG_COMPILES": "1",
             "JAX_TRACEBACK_FILTERING": "off",
             "XLA_FLAGS": "--xla_force_host_platform_device_count=3"}
  clean = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINIJAX_", "JAX_", "TF_CPP")) and k != "XLA_FLAGS"}
  proc = subprocess.run([sys.executable, "-c", _SHOW_CONFIG], capture_output=True, text=True,
                        env=dict(clean, PYTHONPATH=ROOT, **jax_env), timeout=120)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout.split() == ["True", "True", "True", "off", "seed", "3"]
  assert "pjrt_client.cc" not in proc.stderr  # jaxlib's C++ INFO logs are silenced
  mine = {"MINIJAX_ENABLE_X64": "0", "MINIJAX_DEBUG_NANS": "0", "MINIJAX_LOG_COMPILES": "0",
          "MINIJAX_TRACEBACK_FILTERING": "remove_frames", "MINIJAX_NUM_CPU_DEVICES": "2",
          "MINIJAX_HOST_CALLBACK_SEMANTICS": "jax", "TF_CPP_MIN_LOG_LEVEL": "0"}
  proc = subprocess.run([sys.executable, "-c", _SHOW_CONFIG], capture_output=True, text=True,
                        env=dict(clean, PYTHONPATH=ROOT, **jax_env, **mine), timeout=120)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout.split() == ["False", "False", "False", "remove_frames", "jax", "2"]
  assert "pjrt_client.cc" in proc.stderr  # the user asked for INFO logs


# ----------------------------------------------------------------------------- behaviours

def _scaled(x, n, *, offset=0.0):
  return x * n + offset if n > 1 else x


@pytest.mark.parametrize("kw", [dict(static_argnums=1), dict(static_argnames="n"),
                                dict(static_argnums=(1,), static_argnames=("n",))])
def test_static_arguments_are_static_however_they_are_passed(kw):
  f = minijax.jit(_scaled, **kw)
  assert float(f(2.0, 3)) == 6.0 and float(f(2.0, n=3)) == 6.0 and float(f(2.0, 0)) == 2.0


def test_static_and_donated_argument_names_are_checked_against_the_signature():
  with pytest.raises(ValueError, match=r"invalid argnames \{'m'\} in static_argnames"):
    minijax.jit(_scaled, static_argnames="m")
  with pytest.raises(ValueError, match=r"static_argnums=\(5,\), but only accepts 2"):
    minijax.jit(_scaled, static_argnums=5)
  with pytest.raises(ValueError, match="cannot intersect"):
    minijax.jit(_scaled, static_argnames="n", donate_argnames="n")
  f = minijax.jit(_scaled, static_argnames=("n", "offset"))  # keyword-only names are fine
  assert float(f(1.0, 2, offset=1.0)) == 3.0
  g = minijax.jit(lambda x, y: x + y, donate_argnames="y")
  a, b = jnp.ones(3), jnp.ones(3)
  g(a, b)
  assert b.is_deleted() and not a.is_deleted()


def test_a_non_array_argument_names_its_path_and_suggests_static_argnums():
  def f(x, mode):
    return x
  with pytest.raises(TypeError, match=r"(?s)at path mode\..*static_argnums or static_argnames"):
    minijax.jit(f)(1.0, "fast")
  with pytest.raises(TypeError, match=r"type <class 'object'>.*path mode\['a'\]"):
    minijax.jit(f)(1.0, mode={"a": object()})
  with pytest.raises(TypeError, match=r"path mode\[1\]"):
    minijax.jit(f, static_argnums=0)("static", [1.0, "x"])


@minijax.custom_jvp
def _relu_like(x):
  if x > 0:  # Python control flow on the value: only possible on concrete values
    return jnp.sin(x)
  return x


@_relu_like.defjvp
def _relu_like_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return _relu_like(x), (jnp.cos(x) if x > 0 else 1.0) * t


@minijax.custom_vjp
def _clip_grad(x):
  return jnp.sin(x) if x > 0 else x


_clip_grad.defvjp(lambda x: (_clip_grad(x), x), lambda x, g: (jnp.clip(g, -0.5, 0.5) * 3.0,))


def test_custom_derivative_functions_run_on_concrete_values_when_nothing_traces_them():
  np.testing.assert_allclose(minijax.grad(_relu_like)(1.0), np.cos(1.0), rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(_relu_like)(-1.0), 1.0)
  np.testing.assert_allclose(minijax.jvp(_relu_like, (2.0,), (1.0,))[1], np.cos(2.0), rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(minijax.grad(_relu_like))(1.0), -np.sin(1.0),
                             rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(lambda x: _relu_like(x) * 2)(1.0), 2 * np.cos(1.0),
                             rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(_clip_grad)(1.0), 1.5)
  np.testing.assert_allclose(minijax.grad(_clip_grad)(-1.0), 1.5)
  np.testing.assert_allclose(_relu_like(x=-2.0), -2.0)  # keywords bind to positions
  # Staged, the function is traced, and Python control flow on values fails as in JAX.
  for f in (minijax.jit(minijax.grad(_relu_like)), minijax.jit(_clip_grad)):
    with pytest.raises(minijax.errors.TracerBoolConversionError):
      f(1.0)


def test_a_custom_function_closing_over_a_differentiated_value_is_differentiated():
  def loss(w):
    h = minijax.custom_jvp(lambda x: x * w)
    h.defjvp(lambda p, t: (h(*p), t[0] * w))
    return h(2.0)
  np.testing.assert_allclose(minijax.grad(loss)(3.0), 2.0)


def test_a_custom_jvp_rule_may_return_another_structure_than_the_function():
  @minijax.custom_jvp
  def print_tangents(arg):
    return None

  seen = []

  @print_tangents.defjvp
  def print_tangents_jvp(primals, tangents):
    seen.append(tangents[0])
    return primals, tangents

  def power3(x):
    y = x * x
    print_tangents((x, y))
    return y * x
  out, tangent = minijax.jvp(power3, (3.0,), (0.1,))
  np.testing.assert_allclose([out, tangent], [27.0, 2.7], rtol=1e-6)
  np.testing.assert_allclose(seen[0], [0.1, 0.6], rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(power3)(3.0), 27.0)
  with pytest.raises(TypeError, match="equal container"):
    bad = minijax.custom_jvp(lambda x: x)
    bad.defjvp(lambda p, t: (p, t[0]))
    minijax.jvp(bad, (1.0,), (1.0,))


# x[idx] and x.at[idx] updates on jnp.arange(10) and arange(12).reshape(3, 4), as JAX 0.10.2
# computed them.
_X, _M = np.arange(10, dtype=np.int32), np.arange(12, dtype=np.int32).reshape(3, 4)
OUT_OF_BOUNDS_READS = [
    (_X, 11, 9), (_X, -11, 0), (_X, np.int32(12), 9), (_X, np.array([0, 11, -12]), [0, 9, 0]),
    (_M, 5, [8, 9, 10, 11]), (_M, (1, 7), 7), (_M, (slice(None), 9), [3, 7, 11]),
    (_M, (5, slice(1, 3)), [9, 10]), (_M, ([0, 5], 2), [2, 10]), (_M, ([0, 1], 7), [3, 7]),
    (_X, slice(10, 20), []),
]


@pytest.mark.parametrize("x, idx, expected", OUT_OF_BOUNDS_READS)
def test_out_of_bounds_integer_indices_clamp_when_reading(x, idx, expected):
  np.testing.assert_array_equal(jnp.asarray(x)[idx], expected)


def test_out_of_bounds_indices_under_jit_and_fill_mode():
  x = jnp.arange(10)
  assert int(minijax.jit(lambda x, i: x[i])(x, 11)) == 9
  assert int(x.at[11].get()) == 9 and int(x.at[11].get(mode="fill", fill_value=-1)) == -1
  m = jnp.asarray(_M)
  np.testing.assert_array_equal(m.at[[0, 1], 7].get(mode="fill", fill_value=-1), [-1, -1])


OUT_OF_BOUNDS_UPDATES = [
    (_X, lambda r: r[11].set(100), _X),
    (_X, lambda r: r[-11].set(100), _X),
    (_X, lambda r: r[np.array([1, 11])].set(7), [0, 7, 2, 3, 4, 5, 6, 7, 8, 9]),
    (_M, lambda r: r[5].set(1), _M),
    (_M, lambda r: r[1, 7].add(1), _M),
    (_M, lambda r: r[[0, 5], 2].set(-1), [[0, 1, -1, 3], [4, 5, 6, 7], [8, 9, 10, 11]]),
    (_M, lambda r: r[[0, 1], 7].set(-1), _M),
    (_X, lambda r: r[11].set(100, mode="clip"), [0, 1, 2, 3, 4, 5, 6, 7, 8, 100]),
]


@pytest.mark.parametrize("x, update, expected", OUT_OF_BOUNDS_UPDATES)
def test_out_of_bounds_updates_are_dropped(x, update, expected):
  np.testing.assert_array_equal(update(jnp.asarray(x).at), expected)


# (expression, dtype, weak_type) as JAX 0.10.2 gives them.
WEAK_TYPES = [
    (lambda: jnp.full((2,), 3.0), np.float32, True),
    (lambda: jnp.full((2,), 3), np.int32, True),
    (lambda: jnp.full((), 3.0), np.float32, True),
    (lambda: jnp.full((2,), 3.0, dtype=jnp.float32), np.float32, False),
    (lambda: jnp.full((2,), True), np.bool_, False),
    (lambda: jnp.logaddexp(1.0, 2.0), np.float32, True),
    (lambda: jnp.logaddexp(jnp.float32(1), 2.0), np.float32, False),
    (lambda: minijax.grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)[1], np.float32, True),
    (lambda: minijax.grad(lambda x, y: x * y)(2.0, 3.0), np.float32, True),
    (lambda: minijax.jacfwd(lambda x: x ** 3)(2.0), np.float32, True),
    (lambda: minijax.jacrev(lambda x: x ** 3)(2.0), np.float32, True),
    (lambda: minijax.hessian(lambda x: x ** 3)(2.0), np.float32, True),
    (lambda: jnp.zeros_like(1.0), np.float32, True),
    (lambda: jnp.ones_like(jnp.asarray(1.0)), np.float32, True),
    (lambda: jnp.zeros_like(1.0, dtype=jnp.float32), np.float32, False),
    (lambda: jnp.full_like(1.0, 2.0), np.float32, True),
    (lambda: jnp.full_like(jnp.ones(2), 3), np.float32, False),
    (lambda: jnp.sum(1.0), np.float32, False),
    (lambda: jnp.max(jnp.asarray(1.0)), np.float32, False),
    (lambda: jnp.cumsum(1.0), np.float32, False),
    (lambda: jnp.asarray(1.0), np.float32, True),
]


@pytest.mark.parametrize("i", range(len(WEAK_TYPES)))
def test_weak_types_follow_jax(i):
  make, dtype, weak = WEAK_TYPES[i]
  out = make()
  assert (out.dtype, bool(out.weak_type)) == (np.dtype(dtype), weak)


def test_jit_trace_returns_a_traced_stage():
  f = minijax.jit(lambda x: {"y": jnp.sin(x) * 2})
  traced = f.trace(np.float32(1.0))
  assert type(traced).__name__ == "Traced" and traced.fun_name == "<lambda>"
  assert "sin" in str(traced.jaxpr) and traced.jaxpr.in_avals[0].shape == ()
  assert traced.out_info["y"].shape == () and traced.out_info["y"].dtype == np.float32
  lowered = traced.lower()
  assert "mhlo.sine" in lowered.as_text()
  np.testing.assert_allclose(lowered.compile()(np.float32(2.0))["y"], 2 * np.sin(2.0),
                             rtol=1e-6)


VALUES = np.array([10.0, 20.0, 30.0], np.float32)
CONSTANTS = {
    "array": lambda: jnp.array(VALUES),
    "asarray": lambda: jnp.asarray(VALUES),
    "array of a list": lambda: jnp.array([10.0, 20.0, 30.0]),
    "arange": lambda: jnp.arange(10.0, 31.0, 10.0),
    "linspace": lambda: jnp.linspace(10.0, 30.0, 3),
}


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_host_data_made_into_arrays_inside_jit_can_be_indexed_by_traced_values(name):
  make = CONSTANTS[name]
  index = minijax.jit(lambda i: make()[i])
  assert [float(index(i)) for i in range(3)] == [10.0, 20.0, 30.0]
  np.testing.assert_array_equal(minijax.vmap(lambda i: make()[i])(jnp.arange(3)), VALUES)
  assert float(minijax.grad(lambda w, i: (make() * w)[i])(1.0, 2)) == 30.0


# ----------------------------------------------------------------------------- quiet errors

def _model(x):
  return jnp.dot(x, jnp.ones((3, 4)))


def _frames(e: BaseException) -> list[str]:
  return [f.filename for f in traceback.extract_tb(e.__traceback__)]


def _internal(filename: str) -> bool:
  return filename.startswith(os.path.join(ROOT, "minijax") + os.sep)


@pytest.fixture
def filtering():
  previous = minijax.config.traceback_filtering
  yield lambda mode: minijax.config.update("jax_traceback_filtering", mode)
  minijax.config.update("traceback_filtering", previous)


@pytest.mark.parametrize("transform", [
    lambda: minijax.jit(_model)(jnp.ones((2, 5))),
    lambda: minijax.grad(lambda x: _model(x).sum())(jnp.ones((2, 5))),
    lambda: minijax.vmap(_model)(jnp.ones((3, 2, 5))),
])
def test_tracebacks_show_the_users_frames_and_keep_the_others(filtering, transform):
  filtering("auto")
  with pytest.raises(TypeError, match="contracting dimensions") as info:
    transform()
  e = info.value
  assert not any(map(_internal, _frames(e))), _frames(e)
  assert any(name.endswith("test_porting.py") for name in _frames(e))
  assert "removed" in e.__notes__[-1] and "MINIJAX_TRACEBACK_FILTERING=off" in e.__notes__[-1]
  full = minijax.core.traceback_util.format_unfiltered(e)
  assert os.path.join(ROOT, "minijax", "numpy") in full and "in _model" in full


def test_traceback_filtering_modes(filtering):
  filtering("off")
  with pytest.raises(TypeError) as info:
    minijax.jit(_model)(jnp.ones((2, 5)))
  assert any(map(_internal, _frames(info.value))) and not getattr(info.value, "__notes__", [])
  filtering("remove_frames")
  with pytest.raises(TypeError) as info:
    minijax.jit(_model)(jnp.ones((2, 5)))
  cause = info.value.__cause__
  assert type(cause).__name__ == "UnfilteredStackTrace" and "contracting" in str(cause)
  assert any(map(_internal, _frames(cause))) and not any(map(_internal, _frames(info.value)))


def test_the_native_build_failure_is_recorded_and_explained(tmp_path):
  """setup.py records why the extension was not built; the run-time warning quotes it."""
  src = tmp_path / "src"
  src.mkdir()
  for name in ("setup.py", "pyproject.toml", "README.md"):
    shutil.copy(os.path.join(ROOT, name), src / name)
  shutil.copytree(os.path.join(ROOT, "csrc"), src / "csrc")
  (src / "minijax" / "runtime" / "taps").mkdir(parents=True)
  env = dict(os.environ, CC="/bin/false", CXX="/bin/false")
  proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=src,
                        capture_output=True, text=True, env=env, timeout=120)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert "native tap extension was not built" in proc.stderr
  taps_dir = src / "minijax" / "runtime" / "taps"
  assert "CompileError" in (taps_dir / "_native_build_error.txt").read_text()
  proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=src,
                        capture_output=True, text=True, timeout=120,
                        env=dict(env, MINIJAX_REQUIRE_NATIVE="1"))
  assert proc.returncode != 0 and "could not be built" in proc.stderr

  from minijax.runtime.taps.queues import native_unavailable_reason
  assert native_unavailable_reason(str(taps_dir)).startswith("its build failed (CompileError")
  (taps_dir / "_native_build_error.txt").unlink()
  assert native_unavailable_reason(str(taps_dir)).startswith("it was not built")


def test_without_the_native_extension_the_warning_says_what_runs_why_and_how_to_rebuild():
  proc = run_python("""
import sys, warnings
sys.modules["minijax.runtime.taps._native"] = None  # as if it could not be loaded
import numpy as np, minijax
from minijax.experimental import host_callback as hcb
with warnings.catch_warnings(record=True) as caught:
  warnings.simplefilter("always")
  minijax.jit(lambda x: hcb.id_tap(lambda a, t: None, x))(np.float32(1))
  hcb.barrier_wait()
(w,) = [w for w in caught if "native tap extension" in str(w.message)]
print(str(w.message))
""", env={"MINIJAX_TAP_DELIVERY": "immediate"})
  assert proc.returncode == 0, proc.stderr[-2000:]
  message = proc.stdout.strip()
  assert "\n" not in message
  assert "Python callback mechanism" in message and "because it failed to load" in message
  assert "reinstall minijax" in message and "circular import" not in message


def test_copy_to_host_async_of_a_pytree_returns_it():
  x = minijax.device_put(1.0)
  assert minijax.copy_to_host_async(x) is x and float(x) == 1.0
  tree = [object(), 1, {"a": jnp.ones(2)}]
  assert minijax.copy_to_host_async(tree) is tree


def test_scalar_types_repr_as_classes_of_minijax_numpy():
  # As JAX's `<class 'jax.numpy.bfloat16'>` (test ids are built from these reprs).
  assert repr(jnp.bfloat16) == "<class 'minijax.numpy.bfloat16'>"
  assert repr(jnp.float32) == "<class 'minijax.numpy.float32'>" and jnp.int8.__name__ == "int8"


def test_names_jax_removed_say_so_also_through_the_jax_alias():
  with pytest.raises(AttributeError, match="jax.device_put_sharded is deprecated"):
    minijax.device_put_sharded
  from minijax.as_jax import JaxAlias
  alias = JaxAlias(minijax)
  with pytest.raises(AttributeError, match="jax.device_put_replicated is deprecated"):
    alias.device_put_replicated
  with pytest.raises(AttributeError, match=r"module 'jax' \(minijax\) has no attribute 'nope'"):
    alias.nope


def test_jax_imports_beside_minijax_with_its_own_pytree_nodes():
  """minijax keeps its own pytree registry: JAX, imported after it (as the benchmarks do),
  registers OrderedDict and its other nodes without a clash."""
  pytest.importorskip("jax")
  import subprocess, sys
  code = ("import collections, minijax, jax\n"
          "d = collections.OrderedDict(b=1, a=2)\n"
          "assert minijax.tree_util.tree_leaves(d) == jax.tree_util.tree_leaves(d) == [1, 2]\n")
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
  assert proc.returncode == 0, proc.stderr


def test_jax_experimental_and_jax_lib_are_attributes_after_import_jax_as_in_jax():
  import jaxlib
  code = ("import minijax; print(minijax.experimental.io_callback.__name__); "
          "minijax.install_as_jax(); import jax; print(jax.experimental.__name__); "
          "print(jax.lib.__version__); import jax.lib")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["io_callback", "minijax.experimental", jaxlib.__version__]


def test_the_old_names_of_the_process_queries_warn_and_answer():
  for old, new in (("host_count", "process_count"), ("host_id", "process_index"),
                   ("host_ids", "process_indices")):
    with pytest.warns(UserWarning, match=f"jax.{old} has been renamed to jax.{new}"):
      assert getattr(minijax, old)() == getattr(minijax, new)()
