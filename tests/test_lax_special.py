"""The special-function primitives and the PRNG primitives of lax: values (equal to JAX
0.10.2's within a few ulps for the functions XLA computes, whose last bit XLA's code
generation may round differently on another CPU; within rounding of scipy for the incomplete
gamma and beta functions), jit against eager, gradients against finite differences, vmap
against a loop over slices, and their errors.

The CHLO values were recorded from jax 0.10.2 (`jax.lax.<name>` on these inputs); the
incomplete-function values from scipy 1.x (`gammainc`, `gammaincc`, `betainc`, and central
differences of `gammainc` in `a`)."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax
from tests.transform_checks import (VmapCheck, gradient_checks_in_x64, run_together,
                                    verify_gradient_check)
from tests.ulps import assert_within_ulps

pytestmark = pytest.mark.usefixtures("x64_off")

f32, f64 = np.float32, np.float64

# name -> (inputs, float32 outputs of jax 0.10.2, float64 outputs of jax 0.10.2)
CHLO_FACTS = {
    "erf_inv": ([[-0.999, -0.9, -0.3, 0.0, 0.2, 0.75, 0.9999]],
                [-2.3267577, -1.163087, -0.27246276, 0.0, 0.17914347, 0.8134198, 2.7510269],
                [-2.3267537655135273, -1.163087153676674, -0.2724627147267544, 0.0,
                 0.17914345462129166, 0.8134198475976187, 2.7510639057121233]),
    "erfc": ([[-3.0, -1.0, -0.2, 0.0, 0.5, 2.0, 6.0, 12.0]],
             [1.999978, 1.8427007, 1.2227026, 1.0, 0.47950017, 0.004677735, 2.1519736e-17, 0.0],
             [1.9999779095030015, 1.8427007929497148, 1.2227025892104784, 1.0,
              0.4795001221869535, 0.004677734981047267, 2.151973671249891e-17,
              1.3562611692059042e-64]),
    "lgamma": ([[-2.5, -0.5, 0.1, 0.5, 1.0, 2.5, 10.0, 100.0, 100000.0]],
               [-0.056243896, 1.2655118, 2.2527127, 0.5723648, 4.7683716e-07, 0.284683, 12.80183,
                359.13422, 1.0512878e+06],
               [-0.05624371649767457, 1.2655121234846451, 2.252712651734206, 0.5723649429247004,
                0.0, 0.2846828704729196, 12.801827480081473, 359.1342053695754,
                1051287.708973657]),
    "digamma": ([[-2.5, -0.5, 0.1, 0.5, 1.0, 2.5, 10.0, 100.0]],
                [1.1031562, 0.036489945, -10.423755, -1.96351, -0.5772154, 0.7031568, 2.2517526,
                 4.600162],
                [1.103156640645243, 0.03648997397857731, -10.423754940411078,
                 -1.9635100260214255, -0.5772156649015334, 0.7031566406452437,
                 2.2517525890667214, 4.600161852738087]),
    "polygamma": ([[1.0, 1.0, 2.0, 3.0, 1.0], [0.5, 3.0, 1.5, 4.0, 20.0]],
                  [4.934802, 0.39493403, -0.8287969, 0.044865362, 0.051270824],
                  [4.93480220054468, 0.39493406684822646, -0.828796644234319,
                   0.044865328192755106, 0.051270822935203124]),
    "zeta": ([[2.0, 3.0, 4.5, 2.0, 10.0], [1.0, 2.0, 0.5, 10.0, 1.5]],
             [1.644934, 0.20205691, 22.8106, 0.10516632, 0.017450355],
             [1.6449340668482264, 0.20205690315959426, 22.8105991461284, 0.10516633568168574,
              0.0174503557579013]),
    "nextafter": ([[1.0, 0.0, -1.0, 1e-38], [2.0, 1.0, -2.0, 0.0]],
                  [1.0000001, 1e-45, -1.0000001, 0.0],
                  [1.0000000000000002, 5e-324, -1.0000000000000002, 9.999999999999998e-39]),
}


def _bits(x):
  return np.asarray(x).tobytes()


@pytest.mark.parametrize("name", list(CHLO_FACTS))
def test_chlo_functions_equal_jax_eagerly_and_under_jit(name):
  inputs, expected32, _ = CHLO_FACTS[name]
  fn = getattr(lax, name)
  args = [np.array(a, f32) for a in inputs]
  got = fn(*args)
  assert got.dtype == f32
  assert_within_ulps(got, np.array(expected32, f32), 4, what=name)
  assert _bits(minijax.jit(fn)(*args)) == _bits(got)  # (one machine: the same code)


@pytest.mark.parametrize("name", list(CHLO_FACTS))
def test_chlo_functions_in_float64_equal_jax(x64, name):
  inputs, _, expected64 = CHLO_FACTS[name]
  got = getattr(lax, name)(*[np.array(a, f64) for a in inputs])
  assert got.dtype == f64
  assert_within_ulps(got, np.array(expected64, f64), 4, what=name)


# ----------------------------------------------------------------------------- incomplete gamma, beta

_A = [0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 0.7, 3.0]
_X = [0.05, 0.3, 2.0, 1.0, 7.0, 3.0, 25.0, 40.0, 0.0]
# scipy.special.gammainc, gammaincc, and d gammainc / da by central differences (h = 1e-6)
_P = [0.7755386354510307, 0.5614219739190003, 0.8646647167633873, 0.2642411176571153,
      0.8270083921179285, 0.0011024881301154815, 0.1821039159774551, 1.0, 0.0]
_Q = [0.22446136454896942, 0.4385780260809997, 0.1353352832366127, 0.7357588823428847,
      0.17299160788207146, 0.9988975118698845, 0.8178960840225449, 1.0743381765225792e-18, 1.0]
_DPA = [-2.0264226621158343, -0.7705703512494999, -0.22082542627810398, -0.2761960457564605,
        -0.11107537534194023, -0.001415636458426163, -0.049954877442970336, 0.0, 0.0]
# -(dP/da) / (dP/dx) from the same differences (not at x = 40, where both vanish)
_SAMPLE = [1.3672830678473078, 1.0098019457839305, 1.6316914628391848, 0.7507786922720295,
           1.2175820709856744, 0.5242119598056432, 0.9166816000500966]
# scipy.special.betainc
_BA = [0.5, 1.0, 2.0, 5.0, 30.0, 2.0, 0.3, 10.0]
_BB = [0.5, 2.0, 2.0, 1.0, 40.0, 3.0, 0.7, 0.5]
_BX = [0.1, 0.5, 0.9, 0.3, 0.45, 0.0, 1.0, 0.99]
_I = [0.20483276469913345, 0.75, 0.972, 0.0024299999999999994, 0.6447480085585666, 0.0, 1.0,
      0.6579281751567845]

INCOMPLETE = {
    "igamma": (lax.igamma, (_A, _X), _P, 2e-5, 1e-12),
    "igammac": (lax.igammac, (_A, _X), _Q, 2e-5, 1e-12),
    "igamma_grad_a": (lax.igamma_grad_a, (_A, _X), _DPA, 1e-4, 1e-7),
    "random_gamma_grad": (lax.random_gamma_grad, (_A[:7], _X[:7]), _SAMPLE, 1e-4, 1e-7),
    "betainc": (lax.betainc, (_BA, _BB, _BX), _I, 2e-5, 1e-12),
}


@pytest.mark.parametrize("name", list(INCOMPLETE))
def test_incomplete_functions_match_scipy(name):
  fn, inputs, expected, tol32, _ = INCOMPLETE[name]
  args = [np.array(a, f32) for a in inputs]
  got = minijax.jit(fn)(*args)  # (eagerly they run op by op: see the edge cases below)
  assert got.dtype == f32
  np.testing.assert_allclose(got, expected, rtol=tol32, atol=tol32 / 10)


@pytest.mark.parametrize("name", list(INCOMPLETE))
def test_incomplete_functions_in_float64_match_scipy(x64, name):
  fn, inputs, expected, _, tol64 = INCOMPLETE[name]
  got = minijax.jit(fn)(*[np.array(a, f64) for a in inputs])
  assert got.dtype == f64
  np.testing.assert_allclose(got, expected, rtol=tol64, atol=tol64)


def test_incomplete_gamma_edges_and_domain():
  nan = np.nan
  a = np.array([1.0, 2.0, 0.0, -1.0, 1.0, nan, 3.0], f32)
  x = np.array([0.0, np.inf, 2.0, 1.0, -1.0, 1.0, 1e-30], f32)
  np.testing.assert_array_equal(lax.igamma(a, x), [0, 1, 1, nan, nan, nan, 0])
  np.testing.assert_array_equal(lax.igammac(a, x), [1, 0, 0, nan, nan, nan, 1])
  np.testing.assert_array_equal(lax.betainc(f32(2), f32(3), np.array([0, 1, -0.5, 1.5], f32)),
                                [0, 1, nan, nan])
  # rank-0 operands broadcast; Python scalars take the other operand's dtype
  np.testing.assert_allclose(lax.igamma(np.float32(2.0), np.array([1.0, 7.0], f32)),
                             [0.26424112, 0.99270494], rtol=1e-6)
  assert lax.igamma(2.0, np.array([1.0], f32)).dtype == f32


def test_incomplete_gamma_of_large_shape_keeps_its_precision(x64):
  # a log x - x and log Γ(a) are each about a log a: taken apart, float32 lost all its digits
  # by a = 1e6 (and JAX does). Reference values: mpmath at 40 digits.
  a = [1e3, 1e5, 1e6, 3e4]
  x = [1020.0, 99500.0, 1001500.0, 30000.0]
  p = [0.73852718448011091, 0.056741823212792263, 0.93313889576410224, 0.50076776491877105]
  dpa = [-0.010254658433183925, -0.00036083940403825473, -0.00012956608156320815,
         -0.0023033007278647027]
  for dtype, rtol in ((f32, 1e-4), (f64, 1e-12)):
    args = np.array(a, dtype), np.array(x, dtype)
    np.testing.assert_allclose(minijax.jit(lax.igamma)(*args), p, rtol=rtol)
    np.testing.assert_allclose(minijax.jit(lax.igammac)(*args), 1 - np.array(p), rtol=rtol)
    np.testing.assert_allclose(minijax.jit(lax.igamma_grad_a)(*args), dpa, rtol=rtol)


def test_incomplete_beta_of_large_shapes_keeps_its_precision(x64):
  # the same for x^a (1-x)^b / B(a, b): float32 was 72% off at a, b ~ 1e5 (and JAX is).
  # Reference values: scipy.special.betainc in float64.
  a = [1e4, 1e5, 2e5, 3.0]
  b = [2e4, 1.5e5, 5.0, 1e5]
  x = [343 / 1024, 410 / 1024, 1 - 2**-15, 26 / 2**20]  # (float32 holds them exactly)
  want = [0.7253773245075892, 0.6550197028508167, 0.2714197184178452, 0.4509456488012458]
  # (float32's continued fraction itself still loses digits where a >> b and x is in the
  # left tail, close to where the fraction switches sides: 0.5% at the third point)
  for dtype, rtol in ((f32, [2e-4, 2e-4, 1e-2, 2e-4]), (f64, 1e-10)):
    got = minijax.jit(lax.betainc)(*(np.array(v, dtype) for v in (a, b, x)))
    assert np.all(np.abs(np.asarray(got, np.float64) - want) <= np.multiply(rtol, want))


# ----------------------------------------------------------------------------- bits

def test_bitcast_convert_type_same_narrower_and_wider():
  ones = lax.bitcast_convert_type(np.array([1.0, -2.0], f32), np.uint32)
  np.testing.assert_array_equal(ones, [0x3F800000, 0xC0000000])
  np.testing.assert_array_equal(lax.bitcast_convert_type(ones, f32), [1.0, -2.0])
  as_bytes = lax.bitcast_convert_type(np.array([1.0], f32), np.uint8)
  np.testing.assert_array_equal(as_bytes, [[0, 0, 128, 63]])
  np.testing.assert_array_equal(lax.bitcast_convert_type(as_bytes, f32), [1.0])
  batched = minijax.vmap(lambda v: lax.bitcast_convert_type(v, np.uint16),
                         in_axes=1, out_axes=1)(np.ones((3, 2), f32))
  assert batched.shape == (3, 2, 2)
  np.testing.assert_array_equal(batched[:, 0], [[0, 0x3F80]] * 3)
  g = minijax.grad(lambda v: lax.bitcast_convert_type(
      lax.bitcast_convert_type(v, np.int32), f32).sum())(np.ones(2, f32))
  np.testing.assert_array_equal(g, [0, 0])  # not differentiable: a zero derivative
  with pytest.raises(ValueError, match="trailing dimension of size 4"):
    lax.bitcast_convert_type(np.zeros((2, 3), np.uint8), f32)
  with pytest.raises(TypeError, match="bool and complex"):
    lax.bitcast_convert_type(np.zeros(2, bool), np.uint8)
  # to its own dtype, any dtype is the identity (JAX's harnesses bitcast bool and complex so)
  z = np.array([1 + 2j, -3j], np.complex64)
  np.testing.assert_array_equal(minijax.jit(lambda v: lax.bitcast_convert_type(v, v.dtype))(z), z)
  np.testing.assert_array_equal(lax.bitcast_convert_type(np.array([True, False]), bool),
                                [True, False])


def test_threefry2x32_matches_the_reference_vectors():
  # the Random123 known-answer vectors for Threefry-2x32 with 20 rounds
  u32 = np.uint32
  out = lax.threefry2x32(u32(0x13198A2E), u32(0x03707344), u32(0x243F6A88), u32(0x85A308D3))
  np.testing.assert_array_equal(out, [u32(0xC4923A9C), u32(0x483DF7A0)])
  out = lax.threefry2x32(u32(0), u32(0), u32(0), u32(0))
  np.testing.assert_array_equal(out, [u32(0x6B200159), u32(0x99BA4EFE)])
  out = lax.threefry2x32(u32(0xFFFFFFFF), u32(0xFFFFFFFF), u32(0xFFFFFFFF), u32(0xFFFFFFFF))
  np.testing.assert_array_equal(out, [u32(0x1CB996FC), u32(0xBB002BE7)])
  counters = np.arange(6, dtype=u32).reshape(2, 3)
  batched = minijax.vmap(lambda c: lax.threefry2x32(u32(7), u32(9), u32(0), c))(counters)
  direct = lax.threefry2x32(u32(7), u32(9), np.zeros((2, 3), u32), counters)
  np.testing.assert_array_equal(batched[0], direct[0])
  np.testing.assert_array_equal(batched[1], direct[1])
  with pytest.raises(TypeError, match="uint32 keys and counters"):
    lax.threefry2x32(np.int32(0), u32(0), u32(0), u32(0))


# ----------------------------------------------------------------------------- transformations

def _grid(lo, hi, n=4):
  return np.linspace(lo, hi, n)


# (igammac shares igamma's code, and its jvp is igamma's negated)
GRADS = {
    "erf_inv": (lax.erf_inv, (_grid(-0.8, 0.8),), 2),
    "erfc": (lax.erfc, (_grid(-1.5, 1.5),), 2),
    "lgamma": (lax.lgamma, (_grid(0.3, 6.0),), 2),
    "digamma": (lax.digamma, (_grid(0.3, 6.0),), 2),
    "polygamma": (lambda x: lax.polygamma(np.full(4, 2.0), x), (_grid(0.5, 4.0),), 2),
    "zeta_q": (lambda q: lax.zeta(np.full(4, 3.0), q), (_grid(0.5, 4.0),), 2),
    "igamma": (lax.igamma, (_grid(0.6, 5.0), _grid(0.4, 7.0)), 1),
    "betainc": (lax.betainc, (_grid(0.8, 4.0), _grid(1.5, 3.0), _grid(0.2, 0.8)), 1),
}


@pytest.fixture(scope="module")
def grad_results():
  return gradient_checks_in_x64(GRADS)


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_finite_differences(grad_results, x64, name):
  verify_gradient_check(grad_results, name)


def test_vmap_matches_a_loop_over_slices():
  variants2 = [((0, 0), 0), ((None, 1), 0), ((1, None), 1)]
  a, x = np.array([[0.5, 2.0], [3.0, 1.5]], f32), np.array([[0.4, 1.0], [2.0, 5.0]], f32)
  checks = {
      "erf_inv": VmapCheck(lax.erf_inv, (np.array([[0.1, -0.5], [0.3, 0.7]], f32),),
                           [((0,), 0), ((1,), 1)]),
      "lgamma": VmapCheck(lax.lgamma, (a,), [((0,), 1)]),
      "igamma": VmapCheck(lax.igamma, (a, x), variants2),
      "zeta": VmapCheck(lax.zeta, (a + 1.5, x), variants2),
  }
  results = run_together(checks)
  for name, check in checks.items():
    check.verify(results[name]) if name in results else check.run()


def test_derivatives_that_do_not_exist_raise():
  with pytest.raises(ValueError, match="polygamma is not differentiable with respect to its"):
    minijax.grad(lambda m: lax.polygamma(m, f32(2.0)))(f32(1.0))
  with pytest.raises(ValueError, match="zeta is not differentiable with respect to x"):
    minijax.grad(lambda s: lax.zeta(s, f32(2.0)))(f32(3.0))


def test_integer_and_mismatched_inputs_raise():
  with pytest.raises(TypeError, match="lgamma does not accept dtype int32"):
    lax.lgamma(np.array([1, 2], np.int32))
  with pytest.raises(TypeError, match="polygamma got incompatible shapes for broadcasting"):
    lax.polygamma(np.ones(2, f32), np.ones(3, f32))
  with pytest.raises(TypeError, match="igamma requires floating point arguments of one dtype"):
    lax.igamma(np.ones(2, f32), np.ones(2, np.int32))
  with pytest.raises(TypeError, match="betainc got incompatible shapes for broadcasting"):
    lax.betainc(np.ones(2, f32), np.ones(3, f32), f32(0.5))
