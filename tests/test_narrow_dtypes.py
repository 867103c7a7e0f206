"""The narrow dtypes JAX 0.10.2 has on CPU (int2, int4, uint2, uint4, float4_e2m1fn and the
float8 family, from ml_dtypes): values, JAX's promotion lattice for them (each combines
only with itself and weak Python scalars), and callbacks that take and return them
(values and errors recorded from jax 0.10.2)."""
import ml_dtypes
import numpy as np
import pytest

import minijax
from minijax import dtypes
from minijax import numpy as jnp

NARROW = ["int2", "int4", "uint2", "uint4", "float4_e2m1fn"]
FLOAT8 = ["float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz",
          "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"]


@pytest.mark.parametrize("dtype", NARROW + FLOAT8)
def test_values_of_every_narrow_dtype_round_trip_through_the_device(dtype):
  want = np.arange(4).astype(dtype)  # [0, 1, 2, 3] as far as each dtype can say it
  x = jnp.asarray(want) if dtype == "float8_e8m0fnu" else jnp.arange(4, dtype=dtype)
  assert x.dtype == np.dtype(dtype)
  np.testing.assert_array_equal(np.asarray(x), want)
  np.testing.assert_array_equal(np.asarray(minijax.jit(lambda v: v)(want)), want)
  np.testing.assert_array_equal(np.asarray(x.reshape(2, 2)), want.reshape(2, 2))


def test_narrow_types_combine_with_themselves_and_weak_scalars_only():
  assert (jnp.arange(4, dtype="int4") + 1).dtype == np.dtype(ml_dtypes.int4)
  np.testing.assert_array_equal(jnp.arange(4, dtype="int4") * 2,
                                np.array([0, 2, 4, 6], ml_dtypes.int4))
  np.testing.assert_array_equal(jnp.arange(4, dtype="float8_e4m3fn") + 1.5,
                                np.array([1.5, 2.5, 3.5, 4.5], ml_dtypes.float8_e4m3fn))
  assert jnp.promote_types("int4", "int4") == np.dtype(ml_dtypes.int4)
  assert dtypes.itemsize_bits("int4") == 4 and dtypes.itemsize_bits("uint2") == 2
  with pytest.raises(dtypes.TypePromotionError,
                     match=r"Input dtypes \('int4', 'int8'\) have no available implicit dtype "
                           r"promotion path.*1-bit, 2-bit and 4-bit integers.*'int32'"):
    jnp.promote_types("int4", "int8")
  with pytest.raises(dtypes.TypePromotionError, match=r"8-bit floats.*'float32'"):
    jnp.arange(2, dtype="float8_e4m3fn") + jnp.arange(2, dtype=np.float32)


@pytest.mark.parametrize("dtype", NARROW)
def test_callbacks_take_and_return_sub_byte_arrays_of_their_own_dtype(dtype):
  seen = []

  def identity(x):
    seen.append(np.asarray(x).dtype)
    return np.asfortranarray(x)  # a non-default stride, too

  x = np.arange(24).astype(dtype).reshape(2, 3, 4)
  f = minijax.jit(lambda v: minijax.pure_callback(identity, minijax.ShapeDtypeStruct.like(v), v))
  np.testing.assert_array_equal(np.asarray(f(x)), x)
  assert seen == [np.dtype(dtype)]
  made = minijax.jit(lambda: minijax.pure_callback(
      lambda: np.arange(8).astype(dtype), minijax.ShapeDtypeStruct((8,), dtype)))()
  np.testing.assert_array_equal(np.asarray(made), np.arange(8).astype(dtype))


def test_the_names_jaxs_callback_tests_use_are_there():
  # jnp.vdot(precision=), jax.core.ShapedArray / eval_jaxpr, ShapeDtypeStruct.like
  x = jnp.arange(3.0)
  assert float(jnp.vdot(x, x, precision="highest")) == 5.0
  aval = minijax.core.ShapedArray((2,), np.float32)
  assert minijax.ShapeDtypeStruct.like(aval) == minijax.ShapeDtypeStruct((2,), np.float32)
  closed = minijax.make_jaxpr(lambda v: v * 2)(np.float32(3))
  assert float(minijax.core.eval_jaxpr(closed.jaxpr, closed.consts, np.float32(3))[0]) == 6.0
  to_tangent = minijax.core.primal_dtype_to_tangent_dtype  # as jax.extend.core's
  assert to_tangent(np.int32) == dtypes.float0 and to_tangent(np.bool_) == dtypes.float0
  assert to_tangent(np.float16) == np.float16 and to_tangent(jnp.bfloat16) == jnp.bfloat16


@pytest.mark.parametrize("name, kind, bits", [
    ("bfloat16", np.floating, 16), ("float8_e4m3fn", np.floating, 8),
    ("float8_e5m2", np.floating, 8), ("float6_e2m3fn", np.floating, 6),
    ("float6_e3m2fn", np.floating, 6), ("float4_e2m1fn", np.floating, 4),
    ("int4", np.signedinteger, 4), ("int2", np.signedinteger, 2),
    ("uint4", np.unsignedinteger, 4), ("uint2", np.unsignedinteger, 2),
    ("int1", np.signedinteger, 1), ("uint1", np.unsignedinteger, 1)])
def test_ml_dtypes_types_sit_under_numpys_abstract_types_as_in_jax(name, kind, bits):
  t = getattr(ml_dtypes, name)
  parents = {np.floating: [np.inexact], np.signedinteger: [np.integer],
             np.unsignedinteger: [np.integer]}[kind]
  for abstract in [kind, *parents, np.number, np.generic]:
    assert jnp.issubdtype(t, abstract) and dtypes.issubdtype(name, abstract), abstract
  others = {np.floating, np.inexact, np.integer, np.signedinteger, np.unsignedinteger,
            np.complexfloating} - {kind, *parents}
  assert not any(jnp.issubdtype(t, other) for other in others)
  assert jnp.issubdtype(t, t) and not jnp.issubdtype(t, np.float16)
  assert not jnp.issubdtype(np.float32, t) and not jnp.issubdtype(t, np.int8)
  assert dtypes.itemsize_bits(t) == bits


def test_one_bit_ints_and_six_bit_floats_are_named_as_in_jax_but_hold_no_arrays():
  # JAX 0.10.2's names, limits and promotions (recorded from it)
  assert str(jnp.iinfo(jnp.int1)) == "iinfo(min=-1, max=0, dtype=int1)"
  assert jnp.iinfo(jnp.uint1).max == 1 and jnp.iinfo(jnp.int4).min == -8
  assert jnp.finfo(jnp.float6_e3m2fn).max == 28 and jnp.finfo(jnp.float6_e2m3fn).bits == 6
  assert jnp.promote_types(jnp.bool_, jnp.int1) == jnp.int1
  assert jnp.promote_types(jnp.float6_e3m2fn, jnp.float6_e3m2fn) == jnp.float6_e3m2fn
  with pytest.raises(dtypes.TypePromotionError, match="1-bit, 2-bit and 4-bit integers do not "
                     "support implicit promotion"):
    jnp.promote_types(jnp.int1, jnp.int8)
  with pytest.raises(dtypes.TypePromotionError, match="6-bit floats do not support implicit"):
    jnp.promote_types(jnp.float6_e2m3fn, jnp.float32)
  assert jnp.isdtype(jnp.int1, "signed integer") and jnp.isdtype(jnp.float6_e2m3fn, "real floating")
  for t in (jnp.int1, jnp.uint1, jnp.float6_e2m3fn):  # (XLA has no type for them here)
    with pytest.raises(TypeError, match=f"minijax does not support dtype {np.dtype(t)}"):
      jnp.zeros(3, t)
