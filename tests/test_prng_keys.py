"""Typed PRNG keys and JAX 0.10.2's PRNG implementations.

Each implementation's bits were recorded once from jax 0.10.2 on CPU (`_IMPL_FACTS`: for
key(42, impl=...), its data, `split(k, 3)`, `fold_in(k, 7)`, 32- and 8-bit draws, a
uniform and a normal draw, `randint`, and the keys of a vmapped seed).  Threefry and
Philox are integer arithmetic, the same on every machine; rbg's bits come from XLA's
RngBitGenerator, deterministic on CPU.  Then: key arrays through lax and jnp operations and
through the transformations, the flags that choose and police keys, and JAX's errors.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import dtypes, lax, random
from minijax.random import prng
from minijax.config import State

pytestmark = pytest.mark.usefixtures("x64_off")

kd = random.key_data

# impl: [key data, split(k, 3), fold_in(k, 7), bits uint32 (4,), bits uint8 (3,),
#        uniform (3,), normal(key(-3), (2,)), randint (3,) in [0, 100),
#        vmap(key)(arange(3)) data] -- recorded from jax 0.10.2
_IMPL_FACTS = {
    "philox2x32": [[3991259024], [[2171499443], [413155073], [2864015503]], [684560128], [944504651, 856563819, 3743454102, 2331796311], [75, 107, 150], [0.21990954875946045, 0.1994342803955078, 0.8715907335281372], [1.37262761592865, 0.2697650194168091], [84, 10, 62], [[4280135257], [1133621287], [3594909439]]],  # noqa: E501
    "philox4x32": [[3717705800, 533567081], [[2181901948, 3341115038], [969239790, 3857553174], [3980413867, 158073360]], [41828760, 81464021], [1373712901, 3223971023, 2207559167, 2345961807], [5, 207, 255], [0.31984245777130127, 0.7506392002105713, 0.5139873027801514], [-0.5122736692428589, 0.325408399105072], [61, 44, 58], [[1713891541, 3781805453], [1792067052, 3928187465], [1493069011, 109046716]]],  # noqa: E501
    "threefry4x32": [[1605953687, 3689221460, 1722219033, 3178796034], [[3188509147, 2083947553, 1469629592, 921930771], [361144456, 1418825268, 1547191614, 2559243763], [1650616655, 2909718409, 1895971994, 1205228181]], [2445197787, 3874293641, 4221169969, 2984886860], [2739996017, 3649338001, 3087855958, 731494402], [113, 145, 86], [0.6379549503326416, 0.8496776819229126, 0.7189474105834961], [0.4016035795211792, -0.4537520706653595], [19, 22, 51], [[2624366954, 3783175782, 4228967636, 1381410776], [2120643104, 326518214, 373257695, 1143382629], [135995395, 1674433403, 1886296426, 3198885756]]],  # noqa: E501
    "rbg": [[0, 42, 0, 42], [[1832780943, 270669613, 1832780943, 270669613], [64467757, 2916123636, 64467757, 2916123636], [2465931498, 255383827, 2465931498, 255383827]], [2547012911, 1371500959, 2547012911, 1371500959], [2620864722, 2991908441, 282133475, 2589630650], [210, 89, 227], [0.6102175712585449, 0.6966079473495483, 0.06568920612335205], [-1.032225489616394, -0.3114891052246094], [1, 20, 35], [[0, 0, 0, 0], [0, 1, 0, 1], [0, 2, 0, 2]]],  # noqa: E501
    "unsafe_rbg": [[0, 42, 0, 42], [[2620864722, 2991908441, 282133475, 2589630650], [4105776319, 298289174, 864345282, 274752888], [3163845003, 1288433488, 2875901698, 4130285303]], [2104303640, 250182049, 1106406590, 1983638428], [2620864722, 2991908441, 282133475, 2589630650], [210, 89, 227], [0.6102175712585449, 0.6966079473495483, 0.06568920612335205], [-1.032225489616394, -0.3114891052246094], [39, 91, 59], [[0, 0, 0, 0], [0, 1, 0, 1], [0, 2, 0, 2]]],  # noqa: E501
    "threefry2x32": [[0, 42], [[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827]], [2547012911, 1371500959], [2098992034, 2919706841, 2646866425, 2409546199], [162, 217, 249], [0.48870956897735596, 0.6797971725463867, 0.6162714958190918], [-0.028141099959611893, 0.486221045255661], [44, 14, 71], [[0, 0], [0, 1], [0, 2]]],  # noqa: E501
}


def _draws(impl):
  k = random.key(42, impl=impl)
  return [kd(k).tolist(), kd(random.split(k, 3)).tolist(), kd(random.fold_in(k, 7)).tolist(),
          random.bits(k, (4,), np.uint32).tolist(), random.bits(k, (3,), np.uint8).tolist(),
          random.uniform(k, (3,)).tolist(), random.normal(random.key(-3, impl=impl),
                                                          (2,)).tolist(),
          random.randint(k, (3,), 0, 100).tolist(),
          kd(minijax.vmap(lambda s: random.key(s, impl=impl))(np.arange(3))).tolist()]


@pytest.mark.parametrize("impl", sorted(_IMPL_FACTS))
def test_every_implementation_draws_jax_bits(impl):
  assert _draws(impl) == _IMPL_FACTS[impl]


@pytest.mark.parametrize("impl", ["rbg", "philox4x32"])
def test_the_default_implementation_flag_chooses_the_keys_impl(impl):
  with minijax.default_prng_impl(impl):
    assert random.default_prng_impl() is prng.prngs[impl]
    assert random.key_impl(random.key(42)) == impl
    assert kd(random.key(42)).tolist() == _IMPL_FACTS[impl][0]
    assert random.PRNGKey(42).tolist() == _IMPL_FACTS[impl][0]  # legacy keys too
    assert random.uniform(random.PRNGKey(42), (3,)).tolist() == _IMPL_FACTS[impl][5]
  assert random.key_impl(random.key(0)) == "threefry2x32"
  minijax.config.update("jax_default_prng_impl", impl)
  try:
    assert random.key(0).dtype == random.key_dtype(impl)
  finally:
    minijax.config.update("jax_default_prng_impl", "threefry2x32")
  with pytest.raises(ValueError, match="default_prng_impl cannot be 'bogus'"):
    minijax.config.update("jax_default_prng_impl", "bogus")


def test_rbg_samplers_match_jax_under_vmap_and_gamma():
  got = minijax.vmap(lambda k: random.uniform(k, (2,)))(
      random.split(random.key(3, impl="rbg"), 3))
  np.testing.assert_array_equal(got, np.array(
      [[0.3193399906158447, 0.33820033073425293], [0.8023825883865356, 0.020228266716003418],
       [0.7657917737960815, 0.04420614242553711]], np.float32))
  keys = minijax.vmap(random.split)(random.split(random.key(3, impl="unsafe_rbg"), 2))
  assert kd(keys).tolist() == [
      [[352530580, 1196949968, 3014794189, 451777257],
       [2173680159, 1463419628, 3218610840, 4095447092]],
      [[10634496, 341495334, 1672697491, 1683090709],
       [2800073840, 3080854572, 25140064, 4101914241]]]
  np.testing.assert_allclose(random.gamma(random.key(1, impl="rbg"), 0.8, (5,)), [
      0.04114184528589249, 2.0803446769714355, 0.5684934258460999, 0.6840885281562805,
      1.8299866914749146], rtol=1e-6)


def test_rng_bit_generator_and_mulhi_are_jax_primitives():
  key = np.array([1, 2, 3, 4], np.uint32)
  new, bits = lax.rng_bit_generator(key, (5,))
  assert new.tolist() == [1, 2, 5, 4]
  assert bits.tolist() == [512747620, 1298009047, 1267190206, 761827841, 1383286907]
  assert lax.rng_bit_generator(key, (5,), dtype=np.uint8)[1].tolist() == [100, 215, 190, 1,
                                                                          123]
  _, bits = minijax.jit(lambda k: lax.rng_bit_generator(k, (2, 3)))(key)
  assert bits.tolist() == [[512747620, 1298009047, 1267190206],
                           [761827841, 1383286907, 1639995030]]
  new, bits = minijax.vmap(lambda k: lax.rng_bit_generator(k, (2,)))(
      np.arange(12, dtype=np.uint32).reshape(3, 4))
  assert new.tolist() == [[0, 1, 4, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
  assert bits.tolist() == [[895509795, 3230209149], [3834998268, 2007387529],
                           [550253412, 3629164905]]
  with pytest.raises(TypeError, match="unsupported dtype int32"):
    lax.rng_bit_generator(key, (2,), dtype=np.int32)
  assert lax.mulhi(np.uint32([0xD2511F53, 5]), np.uint32([0xFFFFFFFF, 7])).tolist() == [
      3528531794, 0]
  assert lax.mulhi(np.int32([-5, 1 << 30]), np.int32([7, 8])).tolist() == [-1, 2]
  assert str(minijax.make_jaxpr(lax.mulhi)(np.uint32(1), np.uint32(2))) == (
      "{ lambda ; a:u32[] b:u32[]. let c:u32[] = mulhi a b in (c,) }")


# ----------------------------------------------------------------------------- key arrays

def _keys(*shape, impl="threefry2x32"):
  return random.split(random.key(28, impl=impl), int(np.prod(shape))).reshape(shape)


def _same(a, b):
  assert a.dtype == b.dtype and a.shape == b.shape
  np.testing.assert_array_equal(kd(a), kd(b))


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg", "philox2x32"])
def test_key_arrays_index_slice_and_update_as_arrays_of_keys(impl):
  ks = _keys(3, 4, impl=impl)
  data = np.asarray(kd(ks))
  n = len(prng.prngs[impl].key_shape)
  tail = (slice(None),) * n
  assert isinstance(ks, random.PRNGKeyArray) and ks.shape == (3, 4) and ks.ndim == 2
  assert ks.dtype == random.key_dtype(impl) and ks.dtype.name == f"key<{ks._impl.tag}>"
  assert ks.itemsize == 4 * data.shape[-1] and ks.nbytes == ks.itemsize * 12
  np.testing.assert_array_equal(kd(ks[1]), data[1])
  np.testing.assert_array_equal(kd(ks[1, 2:4]), data[1, 2:4])
  np.testing.assert_array_equal(kd(ks[..., 1]), data[(Ellipsis, 1, *tail)])
  np.testing.assert_array_equal(kd(ks[np.array([0, 2])]), data[[0, 2]])
  np.testing.assert_array_equal(kd(ks.T), np.swapaxes(data, 0, 1))
  np.testing.assert_array_equal(kd(ks.reshape(2, 6)), data.reshape(2, 6, -1))
  np.testing.assert_array_equal(kd(jnp.ravel(ks)), data.reshape(12, -1))
  np.testing.assert_array_equal(kd(lax.slice_in_dim(ks, 1, 3)), data[1:3])
  np.testing.assert_array_equal(kd(lax.dynamic_slice_in_dim(ks, np.int16(1), 2)), data[1:3])
  k = _keys(1, 4, impl=impl)
  out = minijax.jit(lambda a, b, i: lax.dynamic_update_slice_in_dim(a, b, i, axis=0))(
      ks, k, np.int16(1))
  expected = data.copy()
  expected[1] = np.asarray(kd(k))[0]
  np.testing.assert_array_equal(kd(out), expected)
  out = lax.dynamic_update_slice(ks, k, (2, 0))
  expected = data.copy()
  expected[2] = np.asarray(kd(k))[0]
  np.testing.assert_array_equal(kd(out), expected)
  out = ks.at[0, 1].set(k[0, 3])
  expected = data.copy()
  expected[0, 1] = np.asarray(kd(k))[0, 3]
  np.testing.assert_array_equal(kd(out), expected)
  np.testing.assert_array_equal(kd(ks.at[1].get()), data[1])
  with pytest.raises(IndexError, match="Too many indices"):
    random.key(0)[0]


def test_key_arrays_through_jnp_structural_functions():
  ks = _keys(2)
  data = np.asarray(kd(ks))
  np.testing.assert_array_equal(kd(jnp.concatenate([ks, ks])), np.concatenate([data, data]))
  np.testing.assert_array_equal(kd(jnp.stack([ks, ks], axis=1)), np.stack([data, data], 1))
  np.testing.assert_array_equal(kd(jnp.broadcast_to(ks[0], (3,))), np.stack([data[0]] * 3))
  np.testing.assert_array_equal(kd(jnp.expand_dims(ks, 0)), data[None])
  np.testing.assert_array_equal(kd(jnp.tile(ks[0], 3)), np.stack([data[0]] * 3))
  np.testing.assert_array_equal(kd(jnp.append(ks, ks[0])), data[[0, 1, 0]])
  np.testing.assert_array_equal(kd(jnp.where(np.array([True, False]), ks, ks[::-1])),
                                data[[0, 0]])
  np.testing.assert_array_equal(kd(lax.select(np.array([False, True]), ks, ks[::-1])),
                                data[[1, 1]])
  np.testing.assert_array_equal(kd(jnp.zeros_like(ks)), np.zeros_like(data))
  np.testing.assert_array_equal(kd(jnp.full_like(ks, 100)), np.full_like(data, 100))
  np.testing.assert_array_equal(kd(jnp.full_like(ks, random.key(42))), [[0, 42], [0, 42]])
  np.testing.assert_array_equal(kd(jnp.zeros((3,), dtype=ks.dtype)), np.zeros((3, 2)))
  np.testing.assert_array_equal(kd(jnp.full((2,), random.key(42), dtype=ks.dtype)),
                                [[0, 42], [0, 42]])
  _same(jnp.asarray(ks), ks)
  _same(jnp.array(ks, dtype=ks.dtype), ks)
  assert jnp.shape(ks) == (2,) and jnp.ndim(ks) == 1 and jnp.result_type(ks) == ks.dtype
  assert (ks == ks).tolist() == [True, True] and (ks != ks[::-1]).tolist() == [True, True]
  assert bool(random.key(1) == random.key(1)) and not bool(random.key(1) == random.key(2))


def test_key_arrays_through_transformations():
  ks = _keys(3, 4, 5)
  assert minijax.vmap(minijax.jit(lambda k: k.T))(ks).shape == (3, 5, 4)
  _, out = minijax.jit(lambda ks: lax.scan(lambda _, k: (None, k.T), None, ks))(_keys(3, 4))
  assert isinstance(out, random.PRNGKeyArray) and out.shape == (3, 4)
  out = lax.cond(True, lambda k: random.split(k)[0], lambda k: k, random.key(0))
  _same(out, random.split(random.key(0))[0])
  carry = lax.fori_loop(0, 3, lambda i, k: random.fold_in(k, i), random.key(5))
  expected = random.key(5)
  for i in range(3):
    expected = random.fold_in(expected, i)
  _same(carry, expected)
  g = minijax.grad(lambda x, k: x * random.normal(k, ()))(1.0, random.key(3))
  np.testing.assert_allclose(g, random.normal(random.key(3), ()))
  _same(minijax.jit(random.clone)(ks), ks)
  _same(minijax.device_put(ks), ks)
  seen = []
  minijax.jit(lambda k: seen.append(k.dtype) or random.split(k))(random.key(0))
  assert seen == [random.key_dtype()]
  out = minijax.eval_shape(lambda k: random.split(k), random.key(0))
  assert out.shape == (2,)


def test_key_array_arithmetic_and_conversion_raise_jax_errors():
  key = random.key(123)
  with pytest.raises(TypeError, match="add does not accept dtypes key<fry>, int32"):
    key + 1
  with pytest.raises(TypeError, match="add does not accept dtypes key<fry>, int32"):
    jnp.add(key, 1)
  with pytest.raises(TypeError, match="add does not accept dtype key<fry>"):
    key + key
  with pytest.raises(TypeError, match="neg does not accept dtype key<fry>"):
    -key
  with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to int32"):
    lax.convert_element_type(key, int)
  with pytest.raises(ValueError, match="Cannot convert_element_type from int32 to key<fry>"):
    lax.convert_element_type(np.int32(0), key.dtype)
  with pytest.raises(TypeError, match="PRNGKey dtype cannot be converted to a NumPy array"):
    np.asarray(key)
  with pytest.raises(TypeError, match="unhashable"):
    hash(key)


def test_key_dtypes_are_extended_dtypes_under_prng_key():
  dtype = random.key(0).dtype
  assert jnp.issubdtype(dtype, dtypes.prng_key) and jnp.issubdtype(dtype, dtypes.extended)
  assert jnp.issubdtype(dtype, np.generic) and jnp.issubdtype(dtype, dtype)
  assert not jnp.issubdtype(dtype, np.integer) and not jnp.issubdtype(dtype, np.number)
  assert not jnp.issubdtype(np.uint32, dtypes.prng_key)
  assert dtype != random.key_dtype("rbg") and dtype.itemsize == 8
  assert random.key_dtype("rbg").itemsize == 16 and str(random.key_dtype("rbg")) == "key<rbg>"


def test_key_impls_wrap_and_unwrap():
  for name, impl in prng.prngs.items():
    if name not in _IMPL_FACTS:
      continue
    key = random.key(42, impl=name)
    assert random.key_impl(key) == name and key._impl is impl
    assert kd(key).shape == impl.key_shape
    _same(random.wrap_key_data(kd(key), impl=name), key)
    _same(random.wrap_key_data(kd(key), dtype=key.dtype), key)
    _same(random.key(42, dtype=key.dtype), key)
  with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype`"):
    random.key(42, impl="rbg", dtype=random.key_dtype("rbg"))
  with pytest.raises(TypeError, match="key_data.shape to end with \\(4,\\)"):
    random.wrap_key_data(np.zeros(2, np.uint32), impl="rbg")
  with pytest.raises(TypeError, match="unrecognized type"):
    random.key(0, impl=3)
  keys = minijax.vmap(lambda d: prng.random_wrap(d, impl=prng.prngs["threefry2x32"]))(
      jnp.arange(6, dtype=jnp.uint32).reshape(3, 2))
  assert isinstance(keys, random.PRNGKeyArray) and keys.shape == (3,)
  with pytest.raises(TypeError, match="random_unwrap takes key array operand"):
    prng.random_unwrap(jnp.zeros((3, 2), jnp.uint32))


def test_a_user_defined_implementation_works_like_the_builtin_ones():
  from minijax.random import threefry2x32 as tf

  double = prng.PRNGImpl(
      key_shape=(2, 2),
      seed=lambda s: jnp.stack([tf.threefry_seed(s), tf.threefry_seed(s ^ 3)]),
      split=lambda k, shape: minijax.vmap(lambda h: tf.threefry_split(h, shape),
                                          out_axes=len(shape))(k),
      random_bits=lambda k, w, shape: tf.threefry_random_bits(k[0], w, shape),
      fold_in=lambda k, d: jnp.stack([tf.threefry_fold_in(k[0], d),
                                      tf.threefry_fold_in(k[1], d)]),
      tag="fry2")
  key = random.key(1, impl=double)
  assert key.dtype.name == "key<fry2>" and kd(key).shape == (2, 2)
  assert random.key_impl(key) is double
  assert random.split(key, 3).shape == (3,) and kd(random.split(key, 3)).shape == (3, 2, 2)
  np.testing.assert_array_equal(random.uniform(key, (3,)),
                                random.uniform(random.key(1), (3,)))


def test_threefry_2x32_hashes_random123_test_vectors():
  from minijax.random.threefry2x32 import threefry_2x32
  out = threefry_2x32(np.uint32([0x13198a2e, 0x03707344]), np.uint32([0x243f6a88, 0x85a308d3]))
  assert [hex(int(x)) for x in out] == ["0xc4923a9c", "0x483df7a0"]
  out = threefry_2x32(np.uint32([0, 0]), np.uint32([0, 0, 0]))  # odd counts are padded
  assert out.shape == (3,)


# ----------------------------------------------------------------------------- flags

def test_legacy_prng_key_flag_allows_warns_or_refuses_raw_keys():
  raw = jnp.zeros(2, dtype="uint32")
  msg = "Legacy uint32 key array passed as key to jax.random function"
  with minijax.legacy_prng_key("allow"), warnings.catch_warnings():
    warnings.simplefilter("error")
    random.uniform(raw)
  with minijax.legacy_prng_key("warn"), pytest.warns(UserWarning, match=msg):
    random.uniform(raw)
  with minijax.legacy_prng_key("error"):
    with pytest.raises(ValueError, match=msg):
      random.uniform(raw)
    with pytest.raises(TypeError, match="invalid PRNG key data"):
      random.uniform(jnp.zeros(1, dtype="float32"))
    random.uniform(random.key(0))  # typed keys are always fine
  assert minijax.config.legacy_prng_key == "allow"


def test_enable_custom_prng_makes_prngkey_typed_and_seed_offset_moves_seeds():
  with minijax.enable_custom_prng(True):
    assert isinstance(random.PRNGKey(42), random.PRNGKeyArray)
  assert not isinstance(random.PRNGKey(42), random.PRNGKeyArray)
  k1 = random.key(17)
  minijax.config.update("jax_random_seed_offset", 3)
  try:
    assert kd(random.key(17)).tolist() == [0, 20] != kd(k1).tolist()
  finally:
    minijax.config.update("jax_random_seed_offset", 0)
  with pytest.raises(ValueError, match="debug_key_reuse cannot be True"):
    minijax.config.update("jax_debug_key_reuse", True)
  with minijax.debug_key_reuse(False):
    random.normal(random.key(0))


def test_python_ints_above_int32_are_made_in_the_dtype_asked_for():
  # seeds and key words are uint32 values above int32's range (issue 24)
  assert jnp.uint32(2998342421).tolist() == 2998342421
  assert jnp.uint32(2998342421).dtype == np.uint32
  assert jnp.asarray(2998342421, dtype=jnp.uint32).tolist() == 2998342421
  assert minijax.jit(lambda: jnp.asarray(2**32 - 1, dtype=np.uint32))().tolist() == 2**32 - 1
  with pytest.raises(OverflowError, match="2147483648 out of bounds for int32"):
    jnp.int32(2**31)
  assert jnp.asarray(1.5, dtype=jnp.int32).tolist() == 1
  assert kd(random.wrap_key_data(jnp.asarray([0, 2998342421], dtype=jnp.uint32))).tolist() == [
      0, 2998342421]


def test_a_64_bit_dtype_asked_for_without_x64_warns_or_raises_as_the_flag_says():
  key = random.key(1701)
  with pytest.warns(UserWarning, match="Explicitly requested dtype uint64 requested in bits "
                    "is not available, and will be truncated to dtype uint32"):
    assert random.bits(key, (3,), np.uint64).dtype == np.uint32
  assert random.bits(key, (3,)).dtype == np.uint32  # the default asks for nothing
  minijax.config.update("jax_explicit_x64_dtypes", "error")
  try:
    with pytest.raises(ValueError, match="Explicitly requested dtype float64 requested in "
                       "normal is not available"):
      random.normal(key, (2,), np.float64)
    assert random.bits(key, (3,), np.uint8).dtype == np.uint8
  finally:
    minijax.config.update("jax_explicit_x64_dtypes", "warn")
  # JAX's 'allow' honours the explicit 64-bit dtype (tests/test_explicit_x64.py has more)
  with State("jax_explicit_x64_dtypes")("allow"):
    assert random.normal(key, (2,), np.float64).dtype == np.float64
    assert random.bits(key, (3,), np.uint8).dtype == np.uint8
  assert minijax.config.explicit_x64_dtypes == "warn"


def test_the_tangent_of_a_key_array_is_float0_of_the_keys_shape():
  f = lambda x, k: x * random.normal(k, ())
  g = minijax.grad(f, argnums=(0, 1), allow_int=True)(1.0, _keys(3)[0])
  assert g[1].dtype == dtypes.float0 and g[1].shape == ()
  seen = []

  @minijax.custom_jvp
  def h(x, key):
    return x * random.normal(key, ())

  @h.defjvp
  def _(primals, tangents):
    seen.append((tangents[1].dtype, tangents[1].shape))
    return h(*primals), tangents[0] * random.normal(primals[1], ())

  np.testing.assert_allclose(minijax.grad(h)(0.0, _keys(2)[1]), random.normal(_keys(2)[1], ()))
  assert seen == [(dtypes.float0, ())]

  @minijax.custom_vjp
  def ident(_, state):
    return state

  def bwd(_, state_bar):
    assert state_bar[1].dtype == dtypes.float0
    return state_bar[0], state_bar
  ident.defvjp(lambda _, state: (state, None), bwd)
  assert minijax.grad(lambda t: ident(t, (8.0, random.key(1)))[0])(3.0) == 1.0


def test_typeof_a_key_array_is_a_shaped_array_of_its_key_dtype():
  keys = _keys(3)
  aval = minijax.typeof(keys)
  assert aval.shape == (3,) and aval.dtype == keys.dtype and repr(aval) == (
      "ShapedArray(key<fry>[3])")
  assert minijax.typeof(random.key(0, impl="rbg")).str_short() == "key<rbg>[]"
  with pytest.raises(TypeError, match="sin: argument of type PRNGKeyArray is not a valid"):
    jnp.sin(keys)


def test_more_structural_functions_and_traced_indices_on_key_arrays():
  ks = _keys(4)
  data = np.asarray(kd(ks))
  parts = minijax.jit(lambda k: jnp.split(k, 2))(ks)
  assert [p.shape for p in parts] == [(2,), (2,)]
  np.testing.assert_array_equal(kd(parts[1]), data[2:])
  np.testing.assert_array_equal(kd(jnp.flip(ks)), data[::-1])
  np.testing.assert_array_equal(kd(jnp.roll(ks, 1)), np.roll(data, 1, axis=0))
  grid = _keys(2, 3)
  np.testing.assert_array_equal(kd(jnp.moveaxis(grid, 0, -1)),
                                np.moveaxis(np.asarray(kd(grid)), 0, 1))
  np.testing.assert_array_equal(kd(minijax.jit(lambda k, i: k[i])(ks, 2)), data[2])
  out = lax.fori_loop(0, 3, lambda i, k: random.split(k, 3)[i], random.key(0))
  expected = random.key(0)
  for i in range(3):
    expected = random.split(expected, 3)[i]
  _same(out, expected)
  # a negative axis counts the data's key words: refused rather than mapped wrongly
  with pytest.raises(ValueError, match="split a key array of threefry2x32 across its key "
                     "words"):
    minijax.vmap(lambda k: random.uniform(k), in_axes=-1)(ks)


def test_numpys_stacking_repeating_and_triangle_functions_on_key_arrays():
  """What optax and others call on keys (`jnp.astype(jnp.where(c, new, old), old.dtype)`),
  each the same function of the keys' data with the key words kept whole, as in JAX."""
  ks, grid = _keys(3), _keys(2, 2)
  data, gdata = np.asarray(kd(ks)), np.asarray(kd(grid))
  same = lambda out, expected: np.testing.assert_array_equal(kd(out), expected)  # noqa: E731
  for f in (lambda k: k, minijax.jit):
    assert f(lambda k: jnp.astype(jnp.where(True, k, k), k.dtype))(ks).dtype == ks.dtype
    same(f(lambda k: jnp.hstack([k, k]))(ks), np.concatenate([data, data]))
    same(f(lambda k: jnp.vstack([k, k]))(ks), np.stack([data, data]))
    same(f(lambda k: jnp.column_stack([k, k]))(ks), np.stack([data, data], axis=1))
    same(f(lambda k: jnp.repeat(k, 2))(ks), np.repeat(data, 2, axis=0))
    same(f(lambda k: jnp.triu(k))(grid), np.where(np.triu(np.ones((2, 2), bool))[..., None],
                                                  gdata, 0))
    same(f(lambda k: jnp.delete(k, 1))(ks), data[[0, 2]])
    same(f(lambda k: jnp.take_along_axis(k, jnp.array([2, 0, 1]), axis=0))(ks), data[[2, 0, 1]])
    same(f(lambda k: jnp.resize(k, (2, 2)))(ks), data[[0, 1, 2, 0]].reshape(2, 2, 2))
    same(f(jnp.atleast_2d)(ks), data[None])
  same(jnp.rot90(grid), np.rot90(gdata))
  # 2-d keys: hstack joins along axis 1 (it joined along 0 once: JAX's (2, 4), not (4, 2))
  same(jnp.hstack([grid, grid]), np.concatenate([gdata, gdata], axis=1))
  same(jnp.dstack([grid, grid]), np.stack([gdata, gdata], axis=2))
  same(jnp.tril(grid, -1), np.where(np.tril(np.ones((2, 2), bool), -1)[..., None], gdata, 0))
  assert jnp.atleast_3d(ks).shape == (1, 3, 1) and jnp.atleast_3d(grid).shape == (2, 2, 1)
  same(jnp.insert(ks, 1, random.key(1)), np.insert(data, 1, kd(random.key(1)), axis=0))
  same(jnp.select([np.array([True, False, False])], [ks], random.key(1)),
       np.where([[True], [False], [False]], data, kd(random.key(1))))
  same(ks.take(np.array([2])), data[[2]])
  assert jnp.isscalar(random.key(0)) and jnp.atleast_1d(random.key(0)).shape == (1,)
  with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to uint32"):
    jnp.astype(ks, np.uint32)


def test_the_default_implementation_comes_from_the_environment_too():
  from tests.conftest import run_python
  out = run_python("import minijax; from minijax import random; "
                   "print(random.key_data(random.key(42)).tolist())",
                   env={"JAX_DEFAULT_PRNG_IMPL": "rbg"})
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "[0, 42, 0, 42]"
  out = run_python("import minijax", env={"JAX_DEFAULT_PRNG_IMPL": "fry"})
  assert out.returncode != 0 and "JAX_DEFAULT_PRNG_IMPL='fry'" in out.stderr


def test_threefry_partitionable_false_draws_jaxs_original_bits():
  """`jax_threefry_partitionable=False` (distrax's von Mises tests set it): JAX 0.10.2's bits
  for key(42), recorded (threefry is integer arithmetic: the same on every machine)."""
  split3 = [[3134548294, 3733159049], [3746501087, 894150801], [801545058, 2363201431]]
  with minijax.threefry_partitionable(False):
    k = random.key(42)
    assert random.bits(k, (3,)).tolist() == [2465931498, 430176367, 255383827]
    assert random.bits(k, (5,), dtype=np.uint8).tolist() == [45, 179, 215, 3, 244]
    assert kd(random.split(k, 3)).tolist() == split3
    assert kd(minijax.jit(lambda k: random.split(k, 3))(k)).tolist() == split3
  # the flag is part of jit's key: one jitted function draws by the flag in force
  draw = minijax.jit(lambda k: random.bits(k, (3,)))
  default = draw(random.key(42)).tolist()
  with minijax.threefry_partitionable(False):
    assert draw(random.key(42)).tolist() == [2465931498, 430176367, 255383827] != default
  assert draw(random.key(42)).tolist() == default
