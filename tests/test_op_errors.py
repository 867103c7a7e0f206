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
  with pytest.raises(TypeError, match=r"add requires arguments of the same shape, got "
                                      r"f32\[2,3\], f32\[4\]"):
    lax.add(x23, x4)
  with pytest.raises(TypeError, match=r"sub requires arguments of the same dtype.*i32\[2,3\]"):
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
                                       r"f32\[2,2,3\] and f32\[3,3,2\]"):
    jnp.matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32))
  with pytest.raises(TypeError, match=r"dot_general of f32\[2,3\] and f32\[2,3\].*contracting "
                                      r"axes have sizes \[3\] and \[2\]"):
    lax.dot_general(x23, x23, (((1,), (0,)), ((), ())))
  with pytest.raises(TypeError, match=r"dot requires rank-1 or rank-2 operands.*f32\[2,3\] and "
                                      r"f32\[4\]"):
    lax.dot(x23, x4)


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
  with pytest.raises(IndexError, match="indices must be integers"):
    x[np.array([0.5])]
  with pytest.raises(IndexError, match="boolean mask indexing needs a concrete mask"):
    minijax.jit(lambda a: a[a > 0])(x23)


def test_shape_function_errors():
  with pytest.raises(ValueError, match=r"cannot reshape array of size 6 into shape \(4, -1\)|"
                                       r"cannot reshape array of size 6 into shape \(4,"):
    jnp.reshape(x23, (4, -1))
  with pytest.raises(ValueError, match=r"concatenate: all arrays must have the same number of "
                                       r"dimensions, got shapes \(2, 3\), \(4,\)"):
    jnp.concatenate([x23, x4])
  with pytest.raises(TypeError, match=r"concatenate operands must have equal shapes except "
                                      r"along dimension 0, got f32\[2,3\], f32\[2,2\]"):
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
  with pytest.raises(TypeError, match=r"reshape cannot reshape f32\[2,3\] \(6 elements\)"):
    lax.reshape(x23, (4, 2))
  with pytest.raises(TypeError, match=r"slice of f32\[2,3\].*out of bounds"):
    lax.slice(x23, (0, 0), (3, 3))
  with pytest.raises(TypeError, match=r"broadcast_in_dim cannot broadcast f32\[2,3\]"):
    lax.broadcast_in_dim(x23, (2, 4), (0, 1))
  with pytest.raises(TypeError, match=r"transpose permutation \(0, 0\)"):
    lax.transpose(x23, (0, 0))
  with pytest.raises(TypeError, match=r"pad requires a scalar padding value"):
    lax.pad(x23, np.zeros(2, np.float32), [(0, 0, 0), (0, 0, 0)])
  with pytest.raises(TypeError, match=r"select_n cases must have one shape and dtype"):
    lax.select_n(np.ones((2, 3), bool), x23, x4)
  with pytest.raises(TypeError, match=r"gather of f32\[2,3\] at indices i32\[2,1\]"):
    lax.gather(x23, np.zeros((2, 1), np.int32), lax.GatherDimensionNumbers((0,), (0,), (0,)),
               (2, 3))
  with pytest.raises(TypeError, match="integer_pow requires a static Python int exponent"):
    lax.integer_pow(x23, 2.5)
  with pytest.raises(TypeError, match=r"reduce_and does not accept dtype float32"):
    lax.reduce_and(x23, (0,))


def test_traced_values_cannot_pick_shapes():
  with pytest.raises(TypeError, match="arange needs concrete"):
    minijax.jit(lambda n: jnp.arange(n))(3)
