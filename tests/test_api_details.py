"""Details of the public API that JAX's own `api_test.py` checks: the wording of tracing
errors that its tests match, and where `linearize` keeps its linear jaxpr."""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.errors import (ConcretizationTypeError, TracerBoolConversionError,
                            TracerIntegerConversionError)


def test_if_on_a_traced_value_says_attempted_boolean_conversion_with_its_shape():
  f = minijax.jit(lambda x: 1 if x > 0 else 0)
  with pytest.raises(TracerBoolConversionError,
                     match=r"^Attempted boolean conversion of traced array with shape "
                           r"bool\[\]\.\n"):
    f(0)


def test_indexing_a_list_with_a_traced_value_says_the_index_method_was_called():
  f = minijax.jit(lambda n: [1, 2, 3][n])
  with pytest.raises(TracerIntegerConversionError,
                     match=r"^The __index__\(\) method was called on traced array"):
    f(jnp.int32(1))


def test_float_and_int_of_a_traced_value_suggest_astype():
  with pytest.raises(ConcretizationTypeError, match=r"try using `x\.astype\(float\)`"):
    minijax.jit(lambda x: float(x))(1.0)
  with pytest.raises(ConcretizationTypeError, match=r"try using `x\.astype\(int\)`"):
    minijax.jit(lambda x: int(x))(1.0)


def test_a_string_argument_to_grad_is_not_a_valid_jax_type():
  with pytest.raises(TypeError, match=r"Argument 'foo' of type <class 'str'> is not a "
                                      r"valid JAX type"):
    minijax.grad(lambda x: x)("foo")


def test_linearize_keeps_its_linear_jaxpr_as_the_first_bound_argument():
  @minijax.jit
  @functools.partial(minijax.remat, policy=minijax.checkpoint_policies.checkpoint_dots)
  def f(x):
    for _ in range(3):
      x = jnp.sin(jnp.dot(x, x, precision=lax.Precision.HIGHEST) * 1e-3)
    return x

  _, f_lin = minijax.linearize(f, jnp.ones((2, 2)))
  text = str(f_lin.func.args[0])
  # the dots are saved, so the linear map recomputes the sines the later layers' tangents
  # need (not the last layer's), and the dots' tangents
  assert text.count(" sin ") == 2
  assert text.count(" dot_") == 6
  np.testing.assert_allclose(f_lin(jnp.ones((2, 2))),
                             minijax.jvp(f, (jnp.ones((2, 2)),), (jnp.ones((2, 2)),))[1],
                             rtol=1e-6)


def test_a_partial_boxed_in_a_pytree_partial_still_reads_as_that_partial():
  inner = functools.partial(lambda a, b, c: a + b + c, 1)
  p = minijax.tree_util.Partial(inner, 2)
  assert p.func.func is inner.func and p.func.args == (1,) and p.func.keywords == {}
  assert p.args == (2,) and p(3) == 6


def test_remat_traces_its_function_once_for_repeated_calls_with_the_same_types():
  count = 0

  @minijax.remat
  def g(x):
    nonlocal count
    count += 1
    return lax.sin(x), 3.

  for _ in range(10):
    y, _ = g(2.)
  assert count == 1
  np.testing.assert_allclose(y, np.sin(np.float32(2.)), rtol=1e-6)
  g(np.ones(3, np.float32))  # a new shape traces again
  assert count == 2


def test_remat_with_static_argnums_traces_once_per_static_value():
  count = 0

  @functools.partial(minijax.remat, static_argnums=(0,))
  def g(x):
    nonlocal count
    count += 1
    return lax.sin(x) if x > 0 else lax.cos(x)

  for _ in range(5):
    g(2.)
  assert count == 1
  np.testing.assert_allclose(g(-2.), np.cos(np.float32(-2.)), rtol=1e-6)
  assert count == 2


def test_remat_closing_over_an_outer_tracer_is_traced_afresh_each_time():
  def outer(a):
    inner = minijax.remat(lambda x: jnp.sin(x * a))
    return inner(1.)

  g = minijax.grad(outer)
  np.testing.assert_allclose(g(1.), np.cos(1.), rtol=1e-6)
  np.testing.assert_allclose(g(2.), np.cos(2.), rtol=1e-6)


def test_remat_of_one_function_under_a_closure_sees_each_outer_tracer():
  def f(x):
    return jnp.sin(x) * 2.

  rf = minijax.remat(f)
  for a in (1., 2.):
    np.testing.assert_allclose(minijax.grad(lambda x: rf(x) * a)(0.5), 2 * a * np.cos(0.5),
                               rtol=1e-6)


def test_vmap_axis_size_mismatch_names_the_most_common_size_first_with_an_example():
  x, u = np.ones((10, 4), np.float32), np.ones((10, 2), np.float32)
  with pytest.raises(ValueError, match=(
      r"vmap got inconsistent sizes for array axes to be mapped:\n"
      r"  \* most axes \(2 of them\) had size 2, e.g. axis 1 of argument b\[0\] of type "
      r"float32\[10,2\];\n"
      r"  \* one axis had size 10: axis 0 of argument a of type float32\[10,4\]")):
    minijax.vmap(lambda a, b: a, in_axes=(0, 1))(x, [u, u])


def test_vmap_axis_size_mismatch_names_keyword_arguments_and_the_axis_size_argument():
  with pytest.raises(ValueError, match=(
      r"  \* one axis had size 1: axis 0 of argument x of type int32\[1\];\n"
      r"  \* one axis had size 2: axis 0 of kwargs\['y'\] of type int32\[2\]")):
    minijax.vmap(lambda x, y: x + y)(jnp.array([1], "int32"), y=jnp.array([1, 2], "int32"))
  with pytest.raises(ValueError, match=(
      r"  \* the `axis_size` argument was 2;\n"
      r"  \* one axis had size 8: axis 0 of argument x of type int32\[8\]")):
    minijax.vmap(lambda x: x, axis_size=2)(jnp.arange(8, dtype=jnp.int32))


def test_vmap_of_no_arrays_without_axis_size_says_what_it_got():
  with pytest.raises(ValueError, match=r"got empty \*args=\(\{\},\) and \*\*kwargs=\{\}"):
    minijax.vmap(lambda x: x)({})


@pytest.mark.parametrize("kwargs,what", [
    (dict(in_axes=False), "in_axes"), (dict(in_axes={"a": 0}), "in_axes"),
    (dict(in_axes=(np.array([1., 2.]),)), "in_axes"),
    (dict(out_axes=(np.array([1., 2.]),)), "out_axes")])
def test_vmap_rejects_axis_specifications_that_are_not_ints_when_it_is_made(kwargs, what):
  with pytest.raises(TypeError, match=f"vmap {what} must be an int, None, or "):
    minijax.vmap(lambda x: x, **kwargs)


def test_pmap_rejects_a_bool_in_axes():
  with pytest.raises(TypeError, match="pmap in_axes must be an int"):
    minijax.pmap(lambda x: x, in_axes=False)


@pytest.mark.parametrize("flag,want", [
    (None, None), ("bfloat16", (lax.Precision.DEFAULT,) * 2),
    ("tensorfloat32", (lax.Precision.HIGH,) * 2), ("float32", (lax.Precision.HIGHEST,) * 2)])
def test_a_dot_without_precision_records_the_default_matmul_precision_flag(flag, want):
  x = jnp.zeros((2, 2))
  with minijax.default_matmul_precision(flag):
    jaxpr = minijax.make_jaxpr(jnp.dot)(x, x)
  assert jaxpr.jaxpr.eqns[0].params["precision"] == want
  with minijax.default_matmul_precision(flag):  # an explicit precision wins
    jaxpr = minijax.make_jaxpr(functools.partial(jnp.dot, precision="highest"))(x, x)
  assert jaxpr.jaxpr.eqns[0].params["precision"] == (lax.Precision.HIGHEST,) * 2


def test_vmap_with_out_axes_none_of_a_mapped_output_names_the_axis():
  with pytest.raises(ValueError, match=r"vmap has mapped output \(axis_name=foo\) but "
                                       r"out_axes is None"):
    minijax.vmap(lambda x: x, out_axes=None, axis_name="foo")(jnp.array([1., 2.]))


@pytest.mark.parametrize("convert", [lambda f: f, minijax.jit], ids=["eager", "jit"])
def test_converting_arrays_to_python_values_checks_shape_and_dtype_first(convert):
  import operator
  for fn in (operator.index, hex, oct):
    for x in (jnp.arange(10), jnp.arange(0, dtype="int32"), jnp.float32(0)):
      with pytest.raises(TypeError, match=r"^Only integer scalar arrays can be converted to "
                                          r"a scalar index\."):
        convert(fn)(x)
  for fn in (int, float, complex):
    for x in (jnp.arange(10), jnp.arange(1, dtype="float32")):
      with pytest.raises(TypeError, match="^Only scalar arrays can be converted to Python "
                                          "scalars"):
        convert(fn)(x)
  with pytest.raises(ValueError, match="^The truth value of an empty array is ambiguous"):
    convert(bool)(jnp.arange(0, dtype="int32"))
  with pytest.raises(ValueError, match="^The truth value of an array with more than one "
                                       "element is ambiguous"):
    convert(bool)(jnp.arange(3))


def test_scalar_arrays_still_convert_to_python_values():
  assert operator_index(jnp.int32(3)) == 3 and hex(jnp.int32(10)) == "0xa"
  assert int(jnp.float32(2.5)) == 2 and float(jnp.int32(2)) == 2.0
  assert complex(jnp.float32(1)) == 1 + 0j and bool(jnp.ones(1)) is True


def operator_index(x):
  import operator
  return operator.index(x)


def test_named_call_passes_python_values_through_and_stages_no_equation():
  f = minijax.named_call(lambda flag, y: y if flag else None, name="test")
  assert minijax.jit(f, static_argnums=(0,))(True, 5) == 5
  assert minijax.jit(functools.partial(f, True))(5) == 5
  g = minijax.named_call(lambda x: jnp.sin(x) * 2, name="g")
  jaxpr = minijax.make_jaxpr(g)(1.)
  assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "mul"]
  assert {str(e.source_info.name_stack) for e in jaxpr.eqns} == {"g"}
  np.testing.assert_allclose(minijax.grad(g)(1.), 2 * np.cos(1.), rtol=1e-6)


def test_jit_of_a_generator_function_is_refused_when_made():
  def gen(x):
    yield x

  with pytest.raises(TypeError, match="Expected a function, got a generator function"):
    minijax.jit(gen)


def test_a_numpy_masked_array_argument_is_refused_rather_than_losing_its_mask():
  x = np.ma.array([1, 2, 3], mask=[True, False, True])
  with pytest.raises(ValueError, match="numpy masked arrays are not supported"):
    minijax.jit(lambda x: x)(x)
  with pytest.raises(ValueError, match="use arr.filled()"):
    jnp.sin(x)


@pytest.mark.parametrize("transform", [minijax.jacfwd, minijax.jacrev, minijax.grad])
def test_jit_static_argnames_see_through_derivative_transforms(transform):
  @functools.partial(minijax.jit, static_argnames=["flag"])
  @transform
  def my_function(x, flag):
    return x if flag else jnp.zeros_like(x)

  assert my_function(1.0, False) == 0.0
  assert my_function(1.0, True) == 1.0


def test_closure_convert_hoists_the_tracers_a_function_closes_over():
  def f(x):
    scale = lambda y: y * x + np.float32(1)
    converted, consts = minijax.closure_convert(scale, 1.0)
    assert len(consts) == 1  # (x is a tracer of grad's)
    return converted(2.0, *consts)
  assert minijax.grad(f)(3.0) == 2.0 and minijax.jit(f)(3.0) == 7.0
  w = np.arange(3.0, dtype=np.float32)
  converted, consts = minijax.closure_convert(lambda a: (a * w).sum(), 1.0)
  assert consts == [] and converted(2.0) == 6.0  # (concrete arrays stay closed over, as JAX)
  assert minijax.process_indices() == [0]


def test_vmap_sum_match_checkpoint_static_argnames_and_backend_arguments():
  x = np.arange(3.0, dtype=np.float32)
  total, doubled = minijax.vmap(lambda v: (v, 2 * v), out_axes=(None, 0), sum_match=True)(x)
  assert float(total) == 3.0 and np.asarray(doubled).tolist() == [0.0, 2.0, 4.0]
  assert float(minijax.vmap(lambda v: 2.0, out_axes=None, spmd_axis_name="i")(x)) == 2.0

  def f(v, n):
    for _ in range(n):  # Python control flow on a static argument
      v = minijax.numpy.sin(v)
    return v

  g = minijax.checkpoint(f, static_argnames="n")
  assert float(g(1.0, n=2)) == float(g(1.0, 2)) == pytest.approx(np.sin(np.sin(1.0)))
  assert float(minijax.grad(lambda v: g(v, n=1))(1.0)) == pytest.approx(np.cos(1.0))
  with pytest.raises(TypeError, match="`concrete` option to checkpoint has been removed"):
    minijax.checkpoint(f, concrete=True)
  assert minijax.process_count("cpu") == 1 and minijax.process_index(backend="cpu") == 0


def test_fwd_and_bwd_reuse_residuals_and_process_local_data_places_arrays():
  f = lambda x, w: (x @ w).sum()  # noqa: E731
  x = np.ones((2, 2), np.float32)
  fwd, bwd = minijax.fwd_and_bwd(f, argnums=0)
  y, residuals = fwd(x, 2 * x)
  assert float(y) == 16.0
  assert np.asarray(bwd(residuals, 1.0)).tolist() == [[4.0, 4.0], [4.0, 4.0]]
  fwd, bwd = minijax.fwd_and_bwd(lambda x, w: (f(x, w), {"n": x.sum()}), argnums=(0, 1),
                                 has_aux=True)
  y, residuals, aux = fwd(x, x)
  dx, dw = bwd(residuals, 1.0)
  assert float(aux["n"]) == 4.0 and np.asarray(dw).tolist() == [[2.0, 2.0], [2.0, 2.0]]
  from minijax.sharding import make_single_device_sharding
  sharding = make_single_device_sharding(minijax.devices()[0])
  placed = minijax.make_array_from_process_local_data(sharding, np.arange(4.0))
  assert placed.sharding == sharding and np.asarray(placed).tolist() == [0, 1, 2, 3]
  with pytest.raises(ValueError, match="global_shape"):
    minijax.make_array_from_process_local_data(sharding, np.arange(4.0), (8,))


def test_jaxprs_and_lowerings_carry_jaxs_argument_names_and_result_paths():
  def f(x, y, *rest, z=3.0, **kw):
    return {"a": x * y, "b": (x, z)}

  debug = minijax.make_jaxpr(f)(1.0, 2.0, 3.0, z=4.0, w=5.0).jaxpr.debug_info
  assert debug.func_name == "f"
  assert debug.arg_names == ("x", "y", "rest[0]", "kw['w']", "z")  # keywords sorted, as flattened
  assert debug.result_paths == ("result['a']", "result['b'][0]", "result['b'][1]")
  debug = minijax.make_jaxpr(lambda p: p)({"w": 1.0, "b": [2.0, 3.0]}).jaxpr.debug_info
  assert debug.arg_names == ("p['b'][0]", "p['b'][1]", "p['w']")
  text = minijax.jit(f).lower(1.0, 2.0).as_text()
  assert ('-> (tensor<f32> {jax.result_info = "result[\'a\']"}, tensor<f32> '
          '{jax.result_info = "result[\'b\'][0]"}') in text
  assert '{jax.result_info = "result"}' in minijax.jit(lambda x: x * 2).lower(1.0).as_text()


def test_a_jitted_functions_func_is_the_function_as_code_unwrapping_partials_expects():
  """`jit` returns a partial of its dispatch function; `.func` shows the user's function (chex's
  `chexify` unwraps partials by `.func.__name__`)."""
  def step(x):
    return x + 1
  jitted = minijax.jit(step)
  assert jitted.func is step and jitted.__name__ == "step" and float(jitted(1.0)) == 2.0


def test_a_failed_checks_values_format_as_arrays_as_in_jax():
  from minijax.experimental import checkify

  def f(x):
    checkify.check(jnp.all(x > 0), "bad {x} {first} {tree}", x=x, first=x[0],
                   tree={"b": x[1]})
    return x

  for g in (checkify.checkify(f), minijax.jit(checkify.checkify(f))):
    err, _ = g(np.array([1.0, np.nan], np.float32))
    # (JAX 0.10.2's message, recorded)
    assert err.get() == "bad [ 1. nan] 1.0 {'b': Array(nan, dtype=float32)} (`check` failed)"


def test_a_check_may_format_typed_keys():
  """chex's traced `assert_trees_all_equal` formats trees holding keys; JAX 0.10.2's message."""
  from minijax import random
  from minijax.experimental import checkify

  def f(k, x):
    checkify.check(x > 0, "k={} x={}", k, x)
    return x

  expected = ("k=Array((2,), dtype=key<fry>) overlaying:\n[[ 507451445 1853169794]\n"
              " [1948878966 4237131848]] x=-1.0 (`check` failed)")
  for g in (checkify.checkify(f), minijax.jit(checkify.checkify(f)),
            checkify.checkify(minijax.jit(f))):
    assert g(random.split(random.key(1)), jnp.float32(-1.0))[0].get() == expected
    assert g(random.split(random.key(1)), jnp.float32(1.0))[0].get() is None


def test_aux_outputs_may_hold_any_python_object_as_in_jax():
  # (haiku's stateful.grad returns its own objects as aux: they were refused as "not a
  # valid JAX type")
  marker = object()
  g, aux = minijax.grad(lambda x: (x ** 2, marker), has_aux=True)(3.0)
  assert aux is marker and g == 6.0
  (value, (name, same)), g = minijax.value_and_grad(lambda x: (x * x, ("x", x)),
                                                    has_aux=True)(3.0)
  assert name == "x" and same == 3.0 and value == 9.0
  assert minijax.vjp(lambda x: (x, marker), 1.0, has_aux=True)[2] is marker
  assert minijax.jvp(lambda x: (x, [marker]), (1.0,), (1.0,), has_aux=True)[2][0] is marker
  assert minijax.linearize(lambda x: (x, marker), 1.0, has_aux=True)[2] is marker


def test_the_gradient_of_a_power_of_a_weak_value_is_weak_as_in_jax():
  assert repr(minijax.grad(lambda x: x ** 2)(3.0)) == "Array(6., dtype=float32, weak_type=True)"
  assert repr(minijax.jvp(lambda x: x ** 3, (1.0,), (1.0,))[1]) == (
      "Array(3., dtype=float32, weak_type=True)")
  assert repr(minijax.grad(lambda x: x ** 2)(np.float32(3.0))) == "Array(6., dtype=float32)"


def test_transformations_wrap_callables_whose_name_is_not_a_string():
  # an object's `__name__` may be anything (tinygp's equinox modules): JAX copies what it
  # can, and so does minijax
  class Scale:
    __name__ = property(lambda self: 3)

    def __call__(self, x):
      return 2 * x

  for transform in (minijax.vmap, minijax.grad, minijax.jacfwd, minijax.checkpoint):
    f = transform(Scale())
    assert type(inspect.unwrap(f)) is Scale
  np.testing.assert_array_equal(minijax.vmap(Scale())(np.arange(3.0)), [0.0, 2.0, 4.0])
