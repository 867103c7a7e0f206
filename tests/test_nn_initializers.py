"""minijax.nn.initializers: every initializer's output for a fixed key equals JAX 0.10.2's
(values recorded from JAX as literals; within a few ulps, since XLA's code generation and,
for the orthogonal ones, LAPACK's QR may round the last bit differently on another CPU),
dtypes and shapes follow the arguments,
initializers run under jit and vmap, and bad arguments raise JAX's errors."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import random
from minijax.nn import initializers as I
from tests.ulps import assert_within_ulps

pytestmark = pytest.mark.usefixtures("x64_off")

# name -> (the initializer, as code run against minijax.nn.initializers, shape, the float32
# values jax.nn.initializers gave for random.PRNGKey(42), flattened)
JAX_VALUES = {
    "uniform": ("I.uniform()", (2, 3), [0.004887095652520657, 0.006797971669584513, 0.006162714678794146, 0.005610160529613495, 0.0045064459554851055, 0.005858658347278833]),
    "uniform_scale": ("I.uniform(2.5)", (4,), [1.2217738628387451, 1.6994929313659668, 1.5406787395477295, 1.4025402069091797]),
    "normal": ("I.normal()", (2, 3), [-0.0002830461598932743, 0.004671318456530571, 0.002957029500976205, 0.001535459072329104, -0.001240328187122941, 0.002169231418520212]),
    "normal_stddev": ("I.normal(1.7)", (2, 1, 2), [-0.048117849975824356, 0.794124186038971, 0.5026950240135193, 0.2610280513763428]),
    "truncated_normal": ("I.truncated_normal(0.5)", (2, 3), [-0.013508249074220657, 0.22219040989875793, 0.14093853533267975, 0.07325402647256851, -0.059181150048971176, 0.10345374047756195]),
    "truncated_normal_bounds": ("I.truncated_normal(1.0, lower=-1.0, upper=0.5)", (4,), [-0.20434169471263885, 0.05230233445763588, -0.03256894648075104, -0.1065608561038971]),
    "glorot_uniform": ("I.glorot_uniform()", (2, 3), [-0.02473609521985054, 0.39391589164733887, 0.25473809242248535, 0.13367953896522522, -0.1081322431564331, 0.1881226748228073]),
    "glorot_normal": ("I.glorot_normal()", (2, 3), [-0.019425004720687866, 0.31951215863227844, 0.2026711106300354, 0.10534006357192993, -0.0851031169295311, 0.14876757562160492]),
    "xavier_normal_conv": ("I.xavier_normal(2, 3)", (1, 2, 2, 2), [-0.015356816351413727, 0.25259655714035034, 0.16022558510303497, 0.08327864110469818, -0.06727992743253708, 0.1176111027598381, -0.7478129267692566, 0.40627431869506836]),
    "he_uniform": ("I.he_uniform()", (3, 2), [-0.031934160739183426, 0.5085431933403015, 0.3288654386997223, 0.1725795418024063, -0.13959811627864838, 0.24286530911922455]),
    "he_normal": ("I.he_normal()", (3, 2), [-0.0250775758177042, 0.4124884605407715, 0.2616472840309143, 0.13599345088005066, -0.10986766219139099, 0.19205811619758606]),
    "kaiming_uniform": ("I.kaiming_uniform()", (2, 2), [-0.03911120072007179, 0.622835636138916, 0.4027762711048126, 0.21136590838432312]),
    "lecun_uniform": ("I.lecun_uniform()", (3, 2), [-0.022580862045288086, 0.35959434509277344, 0.2325429916381836, 0.12203216552734375, -0.09871077537536621, 0.17173171043395996]),
    "lecun_normal": ("I.lecun_normal()", (3, 2), [-0.017732521519064903, 0.29167336225509644, 0.1850125640630722, 0.09616187959909439, -0.07768816500902176, 0.13580559194087982]),
    "variance_scaling_fan_out_normal": ("I.variance_scaling(0.5, 'fan_out', 'normal')", (2, 3), [-0.011555311270058155, 0.1907057911157608, 0.12072023749351501, 0.06268485635519028, -0.05063618719577789, 0.08855850994586945]),
    "variance_scaling_geo_batch": ("I.variance_scaling(2.0, 'fan_geo_avg', 'uniform', in_axis=1, out_axis=2, batch_axis=0)", (2, 2, 2), [-0.03911120072007179, 0.622835636138916, 0.4027762711048126, 0.21136590838432312, -0.17097207903862, 0.2974480390548706, -1.4729032516479492, 0.9530899524688721]),
    "orthogonal": ("I.orthogonal()", (3, 2), [-0.08792734146118164, 0.8722633719444275, 0.918591320514679, 0.2578020691871643, -0.3853037655353546, 0.41556572914123535]),
    "orthogonal_columns": ("I.orthogonal(2.0, column_axis=0)", (2, 3), [-0.17585468292236328, 1.837182641029358, -0.7706075310707092, 1.744526743888855, 0.5156041383743286, 0.8311314582824707]),
    "delta_orthogonal": ("I.delta_orthogonal()", (3, 2, 2), [0.0, 0.0, 0.0, 0.0, -0.09528422355651855, 0.9954500794410706, 0.9954500794410706, 0.09528428316116333, 0.0, 0.0, 0.0, 0.0]),
}


@pytest.mark.parametrize("name", list(JAX_VALUES))
def test_initializer_values_equal_jax(name):
  expr, shape, expected = JAX_VALUES[name]
  out = eval(expr, {"I": I})(random.PRNGKey(42), shape)
  assert out.shape == shape and out.dtype == np.float32
  expected = np.asarray(expected, np.float32).reshape(shape)
  if "orthogonal" in name:  # a QR factorization: its rounding scales with the matrix
    assert_within_ulps(out, expected, 8, scale="array", what=expr)
  else:
    assert_within_ulps(out, expected, 4, what=expr)


def test_typed_keys_give_the_same_values_as_raw_keys():
  raw = I.glorot_normal()(random.PRNGKey(42), (2, 3))
  typed = I.glorot_normal()(random.wrap_key_data(random.PRNGKey(42)), (2, 3))
  np.testing.assert_array_equal(raw, typed)


def test_constant_initializers_ignore_the_key_and_follow_the_dtype():
  key = random.PRNGKey(0)
  for init, value in ((I.zeros, 0.0), (I.ones, 1.0), (I.constant(-2.5), -2.5)):
    out = init(key, (2, 3))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.full((2, 3), value, np.float32))
    assert init(key, (4,), np.int32).dtype == np.int32
  assert I.constant(3, dtype=np.int32)(key, (2,)).dtype == np.int32


def test_dtypes_shapes_and_transformations():
  key = random.PRNGKey(1)
  init = I.he_uniform()
  assert init(key, (3, 4), np.float16).dtype == np.float16
  assert I.normal(dtype=np.float16)(key, (2,)).dtype == np.float16
  assert init(key, [3, 4]).shape == (3, 4)
  np.testing.assert_array_equal(minijax.jit(lambda k: init(k, (3, 4)))(key), init(key, (3, 4)))
  keys = random.split(key, 3)
  stacked = minijax.vmap(lambda k: I.lecun_normal()(k, (2, 2)))(keys)
  np.testing.assert_array_equal(stacked[1], I.lecun_normal()(keys[1], (2, 2)))
  # a wide layer's glorot uniform samples stay inside the limit sqrt(6 / (fan_in + fan_out))
  w = np.asarray(I.glorot_uniform()(key, (300, 200)))
  assert np.abs(w).max() <= np.sqrt(6 / 500) and abs(w.std() - np.sqrt(2 / 500)) < 2e-3
  t = np.asarray(I.truncated_normal(1.0)(key, (20000,)))
  assert t.min() >= -2 and t.max() <= 2


def test_bad_arguments_raise():
  key = random.PRNGKey(0)
  with pytest.raises(ValueError, match="invalid mode for variance scaling initializer: fan"):
    I.variance_scaling(1.0, "fan", "normal")(key, (2, 2))
  with pytest.raises(ValueError, match="invalid distribution for variance scaling"):
    I.variance_scaling(1.0, "fan_in", "cauchy")(key, (2, 2))
  with pytest.raises(ValueError, match="Can't compute input and output sizes of a 1-dimensional"):
    I.glorot_normal()(key, (3,))
  with pytest.raises(ValueError, match="orthogonal initializer requires at least a 2D shape"):
    I.orthogonal()(key, (3,))
  with pytest.raises(ValueError, match="requires a 3D, 4D or 5D shape"):
    I.delta_orthogonal()(key, (3, 3))


def test_initializers_take_out_sharding_as_the_samplers_do():
  from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P
  key = random.key(0)
  mesh = Mesh(minijax.devices()[:1], ("x",))
  plain = I.lecun_normal()(key, (2, 3))
  placed = I.lecun_normal()(key, (2, 3), out_sharding=NamedSharding(mesh, P()))
  np.testing.assert_array_equal(placed, plain)
  assert placed.sharding == NamedSharding(mesh, P())
  unsharded = minijax.typeof(plain).sharding  # what flax passes: nothing changes
  np.testing.assert_array_equal(I.zeros(key, (2,), np.float32, unsharded), [0, 0])


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_variance_scaling_keeps_bfloat16_real(distribution):
  # (numpy does not count ml_dtypes' bfloat16 as np.floating: it drew complex64 samples)
  import ml_dtypes
  init = I.variance_scaling(1.0, "fan_in", distribution)
  out = init(random.key(0), (3, 4), ml_dtypes.bfloat16)
  assert out.dtype == ml_dtypes.bfloat16
  assert np.all(np.abs(np.asarray(out, np.float32)) < 4)
