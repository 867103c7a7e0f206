"""Bad input to ops gives clear errors: shape mismatches name the op and both shapes,
unsupported argument types name the type, bad indices say what is wrong."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax

x23 = np.ones((2, 3), np.float32)
x4 = np.ones((4,), np.float32)


@pytest.mark.parametrize("fn,name", [(jnp.add, "add"), (jnp.multiply, "multiply"),
                                     (jnp.maximum, "maximum"), (jnp.less, "less"),
                                     (jnp.true_divide, "true_divide"), (jnp.power, "power")])
def test_binary_numpy_ops_name_the_op_and_both_shapes(fn, name):
  with pytest.raises(ValueError, match=rf"{name}: incompatible shapes for broadcasting: "
                                       r"\(2, 3\) and \(4,\)"):
    fn(x23, x4)


def test_operators_name_both_shapes_eagerly_and_under_jit():
  with pytest.raises(ValueError, match=r"add.*\(2, 3\) and \(4,\)"):
    jnp.asarray(x23) + jnp.asarray(x4)
  with pytest.raises(ValueError, match=r"subtract.*\(2, 3\) and \(4,\)"):
    minijax.jit(lambda a, b: a - b)(x23, x4)


def test_lax_binary_ops_require_equal_shapes_and_dtypes():
  with pytest.raises(TypeError, match=r"add: arrays must have the same number of dimensions, "
                                      r"got \{1, 2\} \(float32\[2,3\], float32\[4\]\)"):
    lax.add(x23, x4)
  with pytest.raises(TypeError, match=r"^lax.sub requires arguments to have the same dtypes, "
                                      r"got float32, int32\."):
    lax.sub(x23, x23.astype(np.int32))


@pytest.mark.parametrize("fn,name", [(jnp.dot, "dot"), (jnp.matmul, "matmul"),
                                     (jnp.inner, "inner")])
def test_products_name_the_op_and_both_shapes(fn, name):
  # a TypeError with JAX's message, as jax.numpy raises
  with pytest.raises(TypeError, match=rf"{name}: dot_general requires contracting dimensions "
                                      r"to have the same shape, got \(3,\) and \(4,\) "
                                      r"\(operands of shapes \(2, 3\) and \(4,\)\)"):
    fn(x23, x4)


def test_matmul_operator_and_dot_general_shape_errors():
  with pytest.raises(TypeError, match=r"matmul: .* got \(3,\) and \(2,\) \(operands of shapes "
                                      r"\(2, 3\) and \(2, 3\)\)"):
    jnp.asarray(x23) @ jnp.asarray(x23)
  with pytest.raises(TypeError, match=r"tensordot: .* got \(3,\) and \(4,\)"):
    jnp.tensordot(x23, x4, 1)
  with pytest.raises(TypeError, match=r"dot: .* got \(6,\) and \(4,\)"):
    jnp.vdot(x23, x4)
  with pytest.raises(ValueError, match=r"Incompatible types for matmul arguments: "
                                       r"float32\[2,2,3\] and float32\[3,3,2\]"):
    jnp.matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32))
  with pytest.raises(TypeError, match=r"dot_general requires contracting dimensions to have "
                                      r"the same shape, got \(3,\) and \(2,\)."):
    lax.dot_general(x23, x23, (((1,), (0,)), ((), ())))
  with pytest.raises(ValueError, match=r"lax.dot: dimension_numbers must be specified .* got "
                                       r"lhs_shape=\(2, 3\) rhs_shape=\(4,\)"):
    lax.dot(x23, x4)
  assert lax.dot(x23, x23, dimension_numbers=(((1,), (1,)), ((0,), (0,)))).shape == (2,)


@pytest.mark.parametrize("bad", ["a string", object(), {"a": 1}])
def test_unsupported_argument_types_name_the_type(bad):
  name = type(bad).__name__
  with pytest.raises(TypeError, match=name):
    jnp.add(x23, bad)
  with pytest.raises(TypeError, match=name):
    jnp.sin(bad)
  with pytest.raises(TypeError, match=name):
    jnp.sum(bad)
  with pytest.raises(TypeError, match=name):
    jnp.asarray(x23) + bad
  with pytest.raises(TypeError, match=name):
    lax.add(bad, x23)


def test_strings_and_objects_are_not_arrays():
  with pytest.raises(TypeError, match="str"):
    jnp.array("abc")
  with pytest.raises(TypeError, match="str"):
    jnp.array(["a", "b"])
  with pytest.raises(TypeError, match="object"):
    jnp.zeros_like(object())
  with pytest.raises(TypeError, match="str"):
    minijax.jit(lambda a: a * 2)("abc")


def test_indexing_errors():
  x = jnp.asarray(x23)
  with pytest.raises(IndexError, match="too many indices for array: array is 2-dimensional, "
                                       "but 3 were indexed"):
    x[0, 0, 0]
  # An out-of-bounds static int is clamped into its axis, as in JAX (tests/test_porting.py)
  np.testing.assert_array_equal(x[0, 5], x23[0, 2])
  with pytest.raises(TypeError, match="invalid index of type float"):
    x[1.5]
  with pytest.raises(TypeError, match="invalid index of type str"):
    x["a"]
  with pytest.raises(IndexError, match="single ellipsis"):
    x[..., ...]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
    x[np.array([0.5])]
  with pytest.raises(IndexError, match="boolean mask indexing needs a concrete mask"):
    minijax.jit(lambda a: a[a > 0])(x23)


def test_shape_function_errors():
  # (JAX 0.10.2's TypeErrors and messages)
  with pytest.raises(TypeError, match=r"cannot reshape array of shape \(2, 3\) \(size 6\) into "
                     r"shape \(4, -1\) because the product of specified axis sizes \(4\) does "
                     r"not evenly divide 6"):
    jnp.reshape(x23, (4, -1))
  with pytest.raises(TypeError, match=r"cannot reshape array of shape \(2, 3\) \(size 6\) into "
                     r"shape \(4, 4\) \(size 16\)"):
    jnp.reshape(x23, (4, 4))
  with pytest.raises(TypeError, match="can only specify one unknown axis size"):
    jnp.reshape(x23, (-1, -1))
  with pytest.raises(TypeError, match=r"concatenate: all arrays must have the same number of "
                                       r"dimensions, got shapes \(2, 3\), \(4,\)"):
    jnp.concatenate([x23, x4])
  with pytest.raises(TypeError, match=r"Cannot concatenate arrays with shapes that differ in "
                                      r"dimensions other than the one being concatenated: "
                                      r"concatenating along dimension 0 for shapes \(2, 3\), "
                                      r"\(2, 2\)."):
    jnp.concatenate([x23, x23[:, :2]])
  with pytest.raises(ValueError, match="array split does not result in an equal division"):
    jnp.split(x23, 2, axis=1)
  with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
    jnp.squeeze(x23, 0)
  with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast an array of shape "
                                       r"\(2, 3\) to \(3, 3\)"):
    jnp.broadcast_to(x23, (3, 3))
  with pytest.raises(ValueError, match="axis 2 is out of bounds"):
    jnp.sum(x23, axis=2)


def test_lax_structural_errors_name_the_primitive_and_shapes():
  with pytest.raises(TypeError, match=r"reshape cannot reshape float32\[2,3\] \(6 elements\)"):
    lax.reshape(x23, (4, 2))
  with pytest.raises(TypeError, match=r"slice limit_indices must be less than or equal to "
                                      r"operand shape, got limit_indices \(3, 3\) for operand "
                                      r"shape \(2, 3\)."):
    lax.slice(x23, (0, 0), (3, 3))
  with pytest.raises(TypeError, match=r"broadcast_in_dim operand dimension sizes must either be 1, "
                                      r"or be equal .* got operand of shape \(2, 3\)"):
    lax.broadcast_in_dim(x23, (2, 4), (0, 1))
  with pytest.raises(TypeError, match=r"transpose permutation isn't a permutation of operand "
                                      r"dimensions, got permutation \(0, 0\)"):
    lax.transpose(x23, (0, 0))
  with pytest.raises(TypeError, match=r"pad requires a scalar padding value"):
    lax.pad(x23, np.zeros(2, np.float32), [(0, 0, 0), (0, 0, 0)])
  with pytest.raises(TypeError, match=r"select cases must have the same shapes, got "
                                      r"\[\(2, 3\), \(4,\)\]."):
    lax.select_n(np.ones((2, 3), bool), x23, x4)
  with pytest.raises(TypeError, match=r"Gather op can only collapse slice dims with bound 1, "
                                      r"but bound is 2 for index 0 at position 0."):
    lax.gather(x23, np.zeros((2, 1), np.int32), lax.GatherDimensionNumbers((0,), (0,), (0,)),
               (2, 3))
  with pytest.raises(TypeError, match="integer_pow requires a static Python int exponent"):
    lax.integer_pow(x23, 2.5)
  with pytest.raises(TypeError, match=r"reduce_and does not accept dtype float32"):
    lax.reduce_and(x23, (0,))


def test_traced_values_cannot_pick_shapes():
  with pytest.raises(TypeError, match="arange needs concrete"):
    minijax.jit(lambda n: jnp.arange(n))(3)


def test_orders_are_honoured_or_refused_never_ignored():
  # ravel, flatten and copy ignored order= (ravel(x, 'F') gave row-major order)
  x = np.arange(6.0).reshape(2, 3)
  np.testing.assert_array_equal(jnp.ravel(x, "F"), x.ravel("F"))
  np.testing.assert_array_equal(jnp.asarray(x).ravel(order="F"), x.ravel("F"))
  np.testing.assert_array_equal(jnp.asarray(x).flatten("F"), x.flatten("F"))
  np.testing.assert_array_equal(minijax.jit(lambda a: jnp.ravel(a, "F"))(x), x.ravel("F"))
  with pytest.raises(NotImplementedError, match="Ravel not implemented for order='K'"):
    jnp.ravel(x, "K")
  with pytest.raises(NotImplementedError, match="order=A is not implemented"):
    jnp.asarray(x).flatten("A")
  with pytest.raises(ValueError, match="Unexpected value for 'order' argument: x"):
    jnp.ravel(x, "x")
  with pytest.raises(NotImplementedError, match="Only implemented for order='K'"):
    jnp.copy(x, order="F")
  with pytest.raises(ValueError, match="order 'K' is not permitted for reshaping"):
    jnp.reshape(x, (3, 2), order="K")
  assert jnp.copy(x, order="K").shape == (2, 3) and jnp.reshape(x, 6, order=None).shape == (6,)


@pytest.mark.parametrize("call,error,message", [
    (lambda: jnp.compress(x23 > 0, x23), ValueError, "condition must be a 1D array"),
    (lambda: jnp.choose(x4, [x4, x4]), ValueError, "`a` array must be integer typed"),
    (lambda: jnp.quantile(x4, x23), ValueError, r"q must be have rank <= 1, got shape \(2, 3\)"),
    (lambda: jnp.permute_dims(x23), TypeError, "axes"),
    (lambda: jnp.ldexp(x4, x4), ValueError, "ldexp not supported for input types"),
    (lambda: jnp.histogram2d(x23, x23), ValueError, "x and y must be 1-d"),
    (lambda: jnp.round(x4 > 0), ValueError, "not inexact"),
    (lambda: jnp.sign(x4 > 0), TypeError, "sign does not accept dtype bool"),
    (lambda: jnp.ediff1d(x4 > 0), TypeError, "boolean subtract"),
    (lambda: jnp.choose(np.array([0, 2]), [x4[:2], x4[:2]]), ValueError,
     "invalid entry in choice array"),
    (lambda: minijax.jit(lambda i: jnp.choose(i, [x4, x4]))(np.zeros(4, np.int32)),
     minijax.errors.ConcretizationTypeError, "mode='raise'"),
])
def test_arguments_jax_refuses_are_refused_not_reinterpreted(call, error, message):
  # each used to compute something else (flattening, truncating, ignoring the argument)
  with pytest.raises(error, match=message):
    call()


def test_booleans_where_jax_takes_them_as_integers():
  b = np.array([True, False, True])
  assert jnp.bitwise_count(b).tolist() == [1, 0, 1] and jnp.bitwise_count(b).dtype == np.uint8
  assert jnp.left_shift(b, b).tolist() == [2, 0, 2] and jnp.left_shift(b, b).dtype == np.int32
  assert jnp.right_shift(b, b).tolist() == [0, 0, 0]
  assert jnp.take(np.array([5.0, 6.0]), b).tolist() == [6.0, 5.0, 6.0]
  # JAX's dtypes: float_power keeps an inexact input's dtype, histogram counts in it
  h = np.array([0.5, 1.5], np.float16)
  assert jnp.float_power(h, h).dtype == np.float16
  assert jnp.histogram(h)[0].dtype == np.float16
  assert jnp.histogram(np.arange(5))[0].dtype == np.float32


def test_reduction_keywords_keep_jaxs_dtypes_and_refuse_what_jax_refuses():
  xi = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
  mask = xi % 2 == 0
  # a Python float `initial` beside `where` made an int32 max float32
  for f in (jnp.max, jnp.min, jnp.nanmax, jnp.nanmin):
    got = f(xi, axis=-1, initial=1.0, where=mask)
    assert got.dtype == np.int32, f
  assert jnp.max(xi, axis=-1, initial=1.0, where=mask).tolist() == [1, 1, 4]
  # nanmean/nanvar compute in the dtype asked for (they returned float32)
  assert jnp.nanmean(xi, dtype=np.int32).dtype == np.int32
  assert jnp.nanvar(xi, dtype=np.int32).dtype == np.int32
  for f in (jnp.var, jnp.std, jnp.nanstd):
    with pytest.raises(ValueError, match="must be inexact; got int32"):
      f(xi, dtype=np.int32)
  assert jnp.size(xi, axis=(0, 1)) == 12 and jnp.size(xi, axis=1) == 4
  assert jnp.ptp(xi, axis=1, out=None).tolist() == [3, 3, 3]
  assert jnp.stack([xi, xi], axis=1, out=None).shape == (3, 2, 4)
  with pytest.raises(NotImplementedError, match="out"):
    jnp.stack([xi], out=xi)
  with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
    lax.reciprocal(np.int32(3))
  with pytest.raises(TypeError, match="full must be called with scalar fill_value"):
    lax.full_like(x4, x4)


def test_lax_errors_are_jaxs_exception_types():
  # (JAX's tests ask for these classes: ValueError for a bad count or axis, TypeError for a
  # bad type, with JAX's words)
  for make, kind, words in [
      (lambda: lax.concatenate([], 0), ValueError, "non-empty sequences of arrays"),
      (lambda: lax.pad(x4, 0.0, [(0, 0, -1)]), ValueError, "interior padding .* nonnegative"),
      (lambda: lax.pad(x4, 0.0, [(-5, 0, 0)]), ValueError, "not at least 0"),
      (lambda: lax.dynamic_slice(x23, (0,), (1, 1)), ValueError, r"\(1 vs \(2, 3\)\)"),
      (lambda: lax.select_n(np.int32(0)), ValueError, "at least one case"),
      (lambda: lax.squeeze(x23, (2,)), ValueError, "axis 2 is out of bounds"),
      (lambda: lax.reduce_sum(x23, (0, 0)), ValueError, "duplicate value in 'axes'"),
      (lambda: lax.sort((x4, x4), num_keys=3), ValueError, r"num_keys=3 .* len\(operand\)=2"),
      (lambda: lax.broadcasted_iota(np.int32, (2, 3), 2), ValueError, "iota dimension"),
      (lambda: lax.iota(np.bool_, 3), TypeError, "iota does not accept dtype bool"),
      (lambda: lax.iota(np.int32, -1), TypeError, "nonnegative"),
      (lambda: lax.full((-1,), 0.0), TypeError, "nonnegative, got \\(-1,\\)"),
      (lambda: lax.argmax(x4, 0, np.float32), TypeError, "index_dtype must be an integer type"),
  ]:
    with pytest.raises(kind, match=words):
      make()
  # iota takes every number type, ml_dtypes' floats among them (JAX's harnesses count it)
  for dtype in (jnp.bfloat16, jnp.float8_e4m3fn, jnp.uint8, jnp.complex64):
    assert lax.broadcasted_iota(dtype, (2, 3), 1).dtype == dtype


def test_broadcast_in_dim_places_the_operands_axes_in_any_order():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  out = lax.broadcast_in_dim(x, (3, 2, 4), (1, 0))  # (JAX's lax accepts it; its grad fails)
  np.testing.assert_array_equal(out, np.broadcast_to(x.T[:, :, None], (3, 2, 4)))
  w = np.arange(24.0, dtype=np.float32).reshape(3, 2, 4)
  g = minijax.grad(lambda x: (lax.broadcast_in_dim(x, (3, 2, 4), (1, 0)) * w).sum())(x)
  np.testing.assert_array_equal(g, w.sum(2).T)
  ct = np.arange(30.0, dtype=np.float32).reshape(3, 5, 2)
  (t,) = minijax.linear_transpose(lambda v: lax.broadcast_in_dim(v, (3, 5, 2), (2, 0)),
                                  np.ones((2, 1), np.float32))(ct)
  np.testing.assert_array_equal(t, ct.sum((0, 1))[:, None])


def _gather(operand_shape, indices_shape, dnums, slice_sizes):
  return lambda: lax.gather(np.ones(operand_shape, np.float32), np.zeros(indices_shape, np.int32),
                            lax.GatherDimensionNumbers(*dnums), slice_sizes)


def _scatter(operand_shape, indices_shape, updates_shape, dnums):
  return lambda: lax.scatter_add(np.ones(operand_shape, np.float32),
                                 np.zeros(indices_shape, np.int32),
                                 np.ones(updates_shape, np.float32),
                                 lax.ScatterDimensionNumbers(*dnums))


@pytest.mark.parametrize("call, message", [
    (_gather((4, 5), (3, 1), ((1, 0), (), (0,)), (1, 5)),
     "offset_dims in gather op must be sorted"),
    (_gather((4, 5), (3, 1), ((1, 1), (), (0,)), (1, 5)),
     "offset_dims in gather op must not repeat"),
    (_gather((4, 5), (3, 1), ((2,), (0,), (0,)), (1, 5)),
     r"Offset dimension 0 in gather op is out of bounds; got 2, but should have been in \[0, 2\)"),
    (_gather((4, 5), (3, 2), ((1,), (0,), (0,)), (1, 5)),
     "Gather op has 1 elements in start_index_map and the bound of dimension "
     "index_vector_dim=1 of indices is 2. These two numbers must be equal."),
    (_gather((4, 5), (3, 1), ((1,), (0,), (2,)), (1, 5)),
     r"Invalid start_index_map; domain is \[0, 2\), got: 0->2."),
    (_gather((4, 5), (3, 1), ((1,), (3,), (0,)), (1, 5)),
     r"Invalid collapsed_slice_dims set in gather op; valid range is \[0, 2\); got: 3."),
    (_gather((4, 5), (3, 1), ((1,), (0,), (0,)), (1,)),
     "Gather op must have one slice size for every input dimension; got: len"),
    (_gather((4, 5), (3, 1), ((), (0,), (0,)), (1, 5)),
     "All components of the offset index in a gather op must either be a offset dimension or "
     "explicitly collapsed/batching"),
    (_gather((4, 5), (3, 1), ((1,), (0,), (0,)), (1, 6)),
     r"Slice size at index 1 in gather op is out of range, must be within \[0, 5 \+ 1\), got 6."),
    (_scatter((4, 5), (3, 1), (3, 5, 1), ((1,), (0,), (0,))),
     "Updates tensor must be of rank 2; got 3."),
    (_scatter((4, 5), (3, 1), (3, 5), ((1,), (), (0,))),
     "Scatter op has window of size 1; doesn't match operand of rank 2."),
    (_scatter((4, 5), (3, 1), (3, 5), ((1,), (0,), (3,))),
     r"Invalid scatter_dims_to_operand_dims mapping; domain is \[0, 2\), got: 0->3."),
    (_scatter((4, 5), (3, 1), (3, 6), ((1,), (0,), (0,))),
     "Bounds of the window dimensions of updates must not exceed the bounds of the corresponding "
     "dimensions of operand. For dimension 1, updates bound is 6, operand bound is 5."),
    (_scatter((4, 5), (3, 1), (2, 5), ((1,), (0,), (0,))),
     "Bounds of the scatter dimensions of updates must be the same as the bounds of the "
     "corresponding dimensions of scatter indices. For scatter dimension 0, updates bound is 2, "
     "indices bound is 3."),
])
def test_gather_and_scatter_name_the_dimension_number_rule_they_break(call, message):
  # (XLA's rules, reported one at a time in JAX's words, which JAX's tests match)
  with pytest.raises(TypeError, match=message):
    call()
  with pytest.raises(TypeError, match=message):
    minijax.jit(call)()


def test_numpy_functions_refuse_what_they_cannot_honour():
  # each of these computed something else before (JAX and numpy raise)
  x = jnp.arange(12.0).reshape(3, 4)
  with pytest.raises(IndexError, match="boolean index did not match indexed array along axis "
                                       "0; size of axis is 3 but size of corresponding boolean "
                                       "axis is 2"):
    x[np.array([True, False])]
  with pytest.raises(IndexError, match="along axis 1; size of axis is 4"):
    x[..., np.array([True, False, True])]
  assert x[None, np.array([True, False, True])].shape == (1, 2, 4)
  with pytest.raises(TypeError, match="'kind' argument to argsort is not supported"):
    jnp.argsort(x, kind="heapsort")
  with pytest.raises(TypeError, match="'order' argument to sort is not supported"):
    jnp.sort(x, order="f")
  with pytest.raises(ValueError, match="xp and fp must be one-dimensional arrays of equal size"):
    jnp.interp(x4, x4, x4[:3])
  with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
    jnp.round(x4, 1.5)
  with pytest.raises(TypeError, match=r"Shapes must be 1D sequences of concrete values of "
                                      r"integer type, got \(2.5,\)"):
    jnp.eye(2.5)
  with pytest.raises(ValueError, match="at least one array or dtype is required"):
    jnp.result_type()
  with pytest.raises(NotImplementedError, match="linear doesn't support weights"):
    jnp.quantile(x, 0.5, weights=np.ones((3, 4)))
  with pytest.raises(ValueError, match=r"Weights shape \(3,\) must match reduction axes \(4,\)"):
    jnp.quantile(x, 0.5, axis=1, weights=np.ones(3), method="inverted_cdf")


@pytest.mark.parametrize("call,what", [
    (lambda: lax.add(np.ones(3, np.int32), 1.5), "int32 and the Python float 1.5"),
    (lambda: lax.max(2.5, np.ones(3, np.int32)), "int32 and the Python float 2.5"),
    (lambda: lax.clamp(-1, np.arange(3, dtype=np.int32), 1.5), "int32 and the Python float"),
    (lambda: lax.mul(np.ones(3, np.float32), 1j), "float32 and the Python complex"),
    (lambda: lax.bitwise_and(np.ones(3, bool), 2), "bool and the Python int 2"),
])
def test_lax_refuses_a_python_scalar_its_operand_dtype_cannot_hold(call, what):
  # (it rounded 1.5 to 1 and 2 to True: JAX raises a TypeError)
  with pytest.raises(TypeError, match=rf"same dtype, got {what}.*cannot hold"):
    call()


def test_lax_abs_refuses_unsigned_integers():
  with pytest.raises(TypeError, match="abs does not accept dtype uint8"):
    lax.abs(np.ones(3, np.uint8))
  np.testing.assert_array_equal(jnp.abs(np.array([1, 200], np.uint8)), [1, 200])
