"""What JAX's libraries call that user programs rarely do, found by flax 0.12.8's own tests:
the array protocol of wrappers that forward `aval`, sharding-carrying type constructors,
`PartitionSpec.UNCONSTRAINED`, shardings on an abstract mesh, einsum's `_dot_general` hook
and `out_sharding`, and partial evaluation over key-typed inputs; and by dm-haiku 0.0.17's:
PRNG implementations of one's own (`extend.random`) and the pieces of a user's trace."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax, random
from minijax.core.avals import ShapedArray
from minijax.interpreters import partial_eval as pe
from minijax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P


class Wrapper:
  """A flax-Variable-like box: it forwards unknown attributes (`aval`, `shape`) to its
  value and defines JAX's `__jax_array__`."""

  def __init__(self, value):
    self.value = value

  def __getattr__(self, name):
    return getattr(self.value, name)

  def __jax_array__(self):
    return self.value


def test_numpy_functions_take_the_array_of_a_wrapper_that_forwards_aval():
  def f(w):
    box = Wrapper(w)
    converted = jnp.asarray(box, jnp.float32)
    assert type(converted) is not Wrapper
    return (converted * jnp.sin(box)).sum()
  x = np.array([0.5, 1.0], np.float32)
  np.testing.assert_allclose(minijax.jit(minijax.grad(f))(x), np.sin(x) + x * np.cos(x),
                             rtol=1e-6)
  # nothing of the wrapper (nor of the gradient's tracers) is left in the jaxpr's constants
  assert minijax.make_jaxpr(minijax.grad(f))(x).consts == []


def test_types_take_an_unsplit_sharding_and_refuse_a_split_one():
  aval = ShapedArray((3, 2), np.float32, sharding=None)
  assert ShapedArray((3, 2), np.float32, sharding=aval.sharding) is aval
  assert aval.update(sharding=aval.sharding) is aval
  assert aval.sharding.update(spec=P(None)).spec == P(None)
  with pytest.raises(NotImplementedError, match="carry no sharding"):
    aval.sharding.update(spec=P("x", None))
  mesh = Mesh(np.array(minijax.devices()[:1]), ("x",))
  with pytest.raises(NotImplementedError, match="carry no sharding"):
    ShapedArray((3,), np.float32, sharding=NamedSharding(mesh, P("x")))


def test_unconstrained_dimensions_and_shardings_on_the_abstract_mesh_in_force():
  mesh = Mesh(np.array(minijax.devices()[:1]), ("x",))
  assert repr(P("x", P.UNCONSTRAINED)) == "PartitionSpec('x', UNCONSTRAINED)"
  assert NamedSharding(mesh, P(P.UNCONSTRAINED, "x")).spec == P(None, "x")
  assert mesh.are_all_axes_auto and not mesh.are_all_axes_explicit
  abstract = mesh.abstract_mesh
  assert abstract == AbstractMesh((1,), ("x",)) and abstract.are_all_axes_auto
  with pytest.raises(ValueError, match="needs the mesh it describes in force"):
    NamedSharding(abstract, P("x"))
  with minijax.set_mesh(mesh):
    sharding = NamedSharding(abstract, P("x"))
    assert sharding.mesh is mesh
    out = lax.with_sharding_constraint(jnp.arange(4.0), sharding)
  np.testing.assert_array_equal(out, np.arange(4.0))


def test_einsum_contracts_with_the_given_dot_general_and_takes_out_sharding():
  calls = []

  def counting_dot_general(x, y, dimension_numbers, precision=None,
                           preferred_element_type=None):
    calls.append(dimension_numbers)
    return lax.dot_general(x, y, dimension_numbers, precision=precision,
                           preferred_element_type=preferred_element_type)
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  got = jnp.einsum("ij,jk,kl->il", a, a.T, a, _dot_general=counting_dot_general)
  np.testing.assert_allclose(got, a @ a.T @ a)
  assert len(calls) == 2
  np.testing.assert_allclose(jnp.einsum("ij,jk", a, a.T, out_sharding=None), a @ a.T)
  np.testing.assert_allclose(jnp.matmul(a, a.T, out_sharding=None), a @ a.T)
  with pytest.raises(NotImplementedError):
    jnp.einsum("ij,jk", a, a.T, out=np.zeros((2, 2)))


def test_partial_evaluation_over_a_key_typed_input():
  key = random.key(0)
  aval = ShapedArray((), key.dtype)
  seen = []

  def body(k, x):
    seen.append(k.dtype)
    return random.fold_in(k, 3), x * 2.0
  jaxpr, out_pvals, _ = pe.trace_to_jaxpr_nounits(
      body, [pe.PartialVal.unknown(aval), pe.PartialVal.known(np.float32(1.5))])
  assert seen == [key.dtype]
  assert not out_pvals[0].is_known() and out_pvals[1].get_known() == 3.0
  assert jaxpr.invars[0].aval.shape == (2,)  # the key's data, as jit traces keys


def test_device_put_to_a_partition_spec_uses_the_mesh_in_force():
  mesh = Mesh(np.array(minijax.devices()[:1]), ("x",))
  with pytest.raises(ValueError, match="set a mesh via `jax.set_mesh`"):
    minijax.device_put(jnp.zeros(4), P("x"))
  with minijax.set_mesh(mesh):
    out = minijax.device_put(jnp.arange(4.0), P("x"))
    pair = minijax.device_put((jnp.zeros(2), jnp.ones(2)), (P(), None))
  assert out.sharding == NamedSharding(mesh, P("x"))
  np.testing.assert_array_equal(out, np.arange(4.0))
  assert pair[0].sharding == NamedSharding(mesh, P())


def test_a_library_shows_or_hides_its_frames_through_the_exclusion_list(tmp_path, monkeypatch):
  import importlib
  import sys
  import traceback
  from minijax._src import traceback_util as jax_traceback_util
  (tmp_path / "mylib_frames.py").write_text(
      "def fail(x):\n  raise ValueError('from the library')\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  mylib = importlib.import_module("mylib_frames")

  def files_in_traceback():
    try:
      minijax.jit(lambda x: mylib.fail(x))(1.0)
    except ValueError as e:
      return [f.f_code.co_filename for f, _ in traceback.walk_tb(e.__traceback__)]
  assert mylib.__file__ in files_in_traceback()
  jax_traceback_util._exclude_paths.append(str(tmp_path))  # (flax's hide_flax_in_tracebacks)
  try:
    assert mylib.__file__ not in files_in_traceback()
  finally:
    jax_traceback_util._exclude_paths.remove(str(tmp_path))
  assert mylib.__file__ in files_in_traceback()
  sys.modules.pop("mylib_frames", None)


def test_shapes_take_concrete_integer_arrays_and_refuse_floats():
  # (blackjax sizes an array by a 0-d integer Array; a float shape was truncated before)
  assert jnp.zeros(jnp.array(3)).shape == (3,)
  assert jnp.ones((jnp.array(2), 3)).shape == (2, 3)
  for bad in (jnp.array(2.0), 2.5, (2.0, 3)):
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values of "
                       "integer type, got"):
      jnp.zeros(bad)
  for make in (lambda: minijax.lax.reshape(jnp.ones(4), (2.0, 2)),  # (JAX's words, everywhere)
               lambda: minijax.lax.broadcast_in_dim(1.0, (2.5,), ()),
               lambda: jnp.arange(6).reshape(2.0, 3), lambda: minijax.lax.iota(np.int32, 2.0)):
    with pytest.raises(TypeError, match=r"Shapes must be 1D sequences .*, got \("):
      make()


def test_a_prng_implementation_defined_through_extend_random_makes_typed_keys():
  import minijax.extend as jex
  splits = []

  def split(key, shape):
    splits.append(tuple(shape))
    return jnp.zeros((*shape, 3), np.uint32) + key[0] + 1

  impl = jex.random.define_prng_impl(
      key_shape=(3,), seed=lambda seed: jnp.full((3,), seed, np.uint32), split=split,
      random_bits=lambda key, bit_width, shape: jnp.zeros(shape, np.uint32),
      fold_in=lambda key, data: key, name="counting", tag="cnt")
  key = minijax.random.key(7, impl=impl)
  assert str(key.dtype) == "key<cnt>" and key.shape == ()
  assert minijax.random.key_data(key).tolist() == [7, 7, 7]
  assert minijax.random.key_data(minijax.random.split(key)).tolist() == [[8, 8, 8]] * 2
  assert splits == [(2,)]
  fry = jex.random.seed_with_impl(jex.random.threefry_prng_impl, 0)
  assert minijax.random.key_data(fry).tolist() == [0, 0]
  # JAX 0.10.2's bits for the counters 0..3 under the zero key
  assert jex.random.threefry_2x32(np.zeros(2, np.uint32), np.arange(4, dtype=np.uint32)
                                  ).tolist() == [4146024105, 967050713, 2718843009, 1272950319]


def test_a_users_transformation_through_extend_core_and_linear_util():
  # what haiku's to_dot is built from: take_current_trace, TraceTag, lu.transformation
  from minijax.extend import core as jex_core, linear_util as lu
  seen = []

  @lu.transformation
  def doubled_inputs(tag, *args):
    with jex_core.take_current_trace() as parent:
      seen.append((tag, parent))
      outs = yield [2 * a for a in args], {}
    yield [o + 1 for o in outs]

  tag = jex_core.TraceTag()
  assert tag == tag and tag != jex_core.TraceTag()
  wrapped = doubled_inputs(lu.wrap_init(lambda x, y: [x * y]), tag)
  assert wrapped.call_wrapped(3.0, 4.0) == [49.0]
  assert seen[0][0] is tag and seen[0][1] is jex_core.find_top_trace(())


def test_a_users_trace_class_sees_every_primitive_as_haikus_to_dot():
  # JAX's extension protocol: a Tracer made with (trace, aval), a Trace whose
  # process_primitive binds on the trace it was started in (bind_with_trace), and a
  # WrappedFun flattened by api_util.flatten_fun
  from minijax import api_util
  from minijax.core.trace import Trace, Tracer
  from minijax.extend import core as jex_core, linear_util as lu

  class Recording(Tracer):
    def __init__(self, trace, val):
      super().__init__(trace, minijax.typeof(val))
      self.val = val

  class RecordingTrace(Trace):
    def __init__(self, parent):
      super().__init__()
      self.parent, self.seen = parent, []

    def lower(self, x):
      return x.val if isinstance(x, Recording) and x._trace is self else x

    def process_primitive(self, primitive, tracers, params):
      vals = [self.lower(t) for t in tracers]
      out = primitive.bind_with_trace(self.parent, vals, [minijax.typeof(v) for v in vals],
                                      params)
      self.seen.append(primitive.name)
      return ([Recording(self, o) for o in out] if primitive.multiple_results
              else Recording(self, out))

  traces = []

  @lu.transformation
  def recorded(*args):
    with jex_core.take_current_trace() as parent:
      trace = RecordingTrace(parent)
      traces.append(trace)
      with jex_core.set_current_trace(trace):
        outs = yield [Recording(trace, a) for a in args], {}
        yield [trace.lower(o) for o in outs]

  flat, out_tree = api_util.flatten_fun(lu.wrap_init(lambda x, y: {"z": jnp.sin(x) * y}),
                                        minijax.tree.structure(((1.0, 2.0), {})))
  (z,) = recorded(flat).call_wrapped(np.float32(0.5), np.float32(2.0))
  assert out_tree().unflatten([z]) == {"z": z}
  np.testing.assert_allclose(z, 2 * np.sin(0.5), rtol=1e-6)
  assert traces[0].seen == ["sin", "mul"]


def test_a_jaxpr_built_by_hand_through_extend_core():
  # kfac-jax 0.0.8 builds equations with gensym and new_jaxpr_eqn
  from minijax.extend import core
  make_var = core.gensym()
  x, y = make_var(ShapedArray((3,), np.float32)), make_var(ShapedArray((3,), np.float32))
  eqn = core.new_jaxpr_eqn([x], [y], lax.sin_p, {}, core.no_effects)
  jaxpr = core.Jaxpr([], [x], [y], [eqn])
  (out,) = minijax.core.eval_jaxpr(jaxpr, [], np.arange(3, dtype=np.float32))
  np.testing.assert_allclose(out, np.sin(np.arange(3)), rtol=1e-6)
  assert core.DebugInfo is minijax.api_util.DebugInfo


def test_check_close_uses_jaxs_default_test_tolerances():
  # tinygp's test helpers import it from jax._src.public_test_util
  from minijax._src.public_test_util import check_close
  check_close({"a": np.float32(1)}, {"a": np.float32(1 + 5e-7)})
  with pytest.raises(AssertionError):
    check_close(np.float32(1), np.float32(1 + 1e-5))
  with pytest.raises(AssertionError):
    check_close(np.arange(3), np.arange(3) + np.array([0, 0, 1]))  # integers: exactly
  check_close(np.float32(1), np.float32(1.01), atol=0.1, rtol=0.1)
  with pytest.raises(AssertionError, match="shapes differ"):
    check_close(np.ones(2), np.ones(3))


def test_where_a_library_asks_what_it_is_traced_under():
  # kfac-jax's in_pmap: the axis names bound here, through jax.core with a warning
  from minijax.extend import core
  from minijax._src import jax_core
  assert core.unsafe_get_axis_names_DO_NOT_USE() == []
  seen = []

  def probe(x):
    with pytest.warns(DeprecationWarning, match="jax.core.unsafe_get_axis_names_DO_NOT_USE "
                      "is deprecated"):
      seen.append(jax_core.unsafe_get_axis_names_DO_NOT_USE())
    seen.append((core.unsafe_am_i_under_a_vmap_DO_NOT_USE(),
                 core.unsafe_am_i_under_a_jit_DO_NOT_USE()))
    return x

  minijax.vmap(probe, axis_name="i")(jnp.ones(2))
  minijax.jit(probe)(1.0)
  assert seen == [["i"], (True, False), [], (False, True)]
  with pytest.raises(AttributeError, match="has no attribute 'JaxprDebugInfo'"):
    jax_core.JaxprDebugInfo


def test_a_type_registered_as_vmappable_is_refused_by_vmap_not_mapped_leaf_by_leaf():
  # MJX registers its Warp data with JAX's handlers (some fields unmapped); mapping each
  # leaf instead would batch the fields its handlers leave alone.
  from minijax import tree_util
  from minijax.interpreters import batching

  @tree_util.register_pytree_node_class
  class Data:
    def __init__(self, x, n):
      self.x, self.n = x, n

    def tree_flatten(self):
      return (self.x, self.n), None

    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls(*children)

  batching.register_vmappable(Data, int, int, lambda *a: None, lambda *a: None, None)
  try:
    with pytest.raises(NotImplementedError, match="argument of type Data, registered with "
                       "batching.register_vmappable"):
      minijax.vmap(lambda d: d.x)(Data(jnp.ones(3), jnp.ones(3)))
    with pytest.raises(NotImplementedError, match="result of type Data"):
      minijax.vmap(lambda x: Data(x, x))(jnp.ones(3))
    np.testing.assert_array_equal(minijax.vmap(lambda x: 2 * x)(jnp.ones(3)), np.full(3, 2.0))
  finally:
    del batching.vmappables[Data]
