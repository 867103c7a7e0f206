"""The fast Fourier transform: `lax.fft` (XLA's FFT) and `minijax.numpy.fft`.

Every transform is checked against numpy's, eagerly and under jit, with `n`/`s`, `axis`/`axes`
and `norm`; its derivatives (forward and reverse, second order, in float64) against central
differences with the complex plane treated as R^2; its vmap against a loop over slices.
Gradients of complex functions follow JAX's convention (numbers recorded from JAX 0.10.2).
"""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax

from tests.transform_checks import (GradCheck, VmapCheck, gradient_checks_in_x64, run_together,
                                    verify_gradient_check)

_rng = np.random.default_rng(3)
X = _rng.standard_normal((4, 6, 5)).astype(np.float32)
Z = (X + 1j * _rng.standard_normal((4, 6, 5))).astype(np.complex64)
Y5 = (_rng.standard_normal((2, 3, 2, 3, 2)) + 1j * _rng.standard_normal((2, 3, 2, 3, 2))
      ).astype(np.complex64)

_ONE_D = [{}, {"n": 4}, {"n": 9, "axis": 1}, {"norm": "ortho"}, {"norm": "forward", "axis": 0},
          {"n": 3, "axis": -3, "norm": "backward"}]
_N_D = [{}, {"s": (3, 7)}, {"axes": (0, 2)}, {"s": (2, 3), "axes": (2, 0), "norm": "ortho"},
        {"axes": (1,), "norm": "forward"}, {"s": (4, 2, 6), "axes": (1, 2, 0)}]
CASES = ([(name, k) for name in ("fft", "ifft", "irfft", "hfft") for k in _ONE_D]
         + [(name, k) for name in ("rfft", "ihfft") for k in _ONE_D]
         + [(name, k) for name in ("fftn", "ifftn", "rfftn", "irfftn") for k in _N_D]
         + [(name, k) for name in ("fft2", "ifft2", "rfft2", "irfft2") for k in _N_D
            if len(k.get("axes", (0, 1))) == 2])


def _numpy(name, x, kwargs):
  if "s" in kwargs and "axes" not in kwargs:  # (numpy 2 wants the axes spelled out)
    kwargs = dict(kwargs, axes=tuple(range(x.ndim - len(kwargs["s"]), x.ndim)))
  return getattr(np.fft, name)(x, **kwargs)


def _input(name):
  return X if name in ("rfft", "ihfft", "rfftn", "rfft2") else Z


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_numpy_fft_matches_numpy_eagerly_and_under_jit(name, kwargs):
  x = _input(name)
  want = _numpy(name, x, kwargs)
  fn = getattr(jnp.fft, name)
  for got in (fn(x, **kwargs), minijax.jit(lambda a: fn(a, **kwargs))(x)):
    assert got.shape == want.shape
    assert got.dtype == (np.float32 if not np.iscomplexobj(want) else np.complex64)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize("name,kwargs", [("fftn", {}), ("ifftn", {}), ("rfftn", {}),
                                         ("irfftn", {"s": (3, 2, 3, 2, 4)}),
                                         ("fftn", {"axes": (4, 0, 2, 1)})])
def test_more_than_three_axes_are_transformed_in_steps(name, kwargs):
  x = Y5.real.astype(np.float32) if name == "rfftn" else Y5
  want = _numpy(name, x, kwargs)
  got = getattr(jnp.fft, name)(x, **kwargs)
  np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


def test_fft_of_integers_and_reals_is_complex64_as_in_jax():
  assert jnp.fft.fft(np.arange(4)).dtype == np.complex64
  assert jnp.fft.rfft(np.arange(4)).dtype == np.complex64
  np.testing.assert_allclose(jnp.fft.rfft(np.arange(4)), [6, -2 + 2j, -2])
  np.testing.assert_allclose(jnp.fft.irfft(np.array([1, 3, 5])), [3, -1, 0, -1])


def test_with_64_bit_types_an_fft_of_64_bit_integers_is_complex128_as_in_jax():
  # JAX 0.10.2 (to_complex_dtype): int64 in complex128; int32 and bool in complex64
  with minijax.enable_x64():
    assert jnp.fft.fft(np.arange(4)).dtype == np.complex128
    assert jnp.fft.fft(np.zeros(0, np.int64)).dtype == np.complex128
    assert jnp.fft.rfft(np.arange(4)).dtype == np.complex128
    assert jnp.fft.fft(np.arange(4, dtype=np.int32)).dtype == np.complex64
    assert jnp.fft.fft(np.ones(2, bool)).dtype == np.complex64


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_frequencies_and_shifts_match_numpy(n):
  np.testing.assert_allclose(jnp.fft.fftfreq(n, 0.5), np.fft.fftfreq(n, 0.5), rtol=1e-6)
  np.testing.assert_allclose(jnp.fft.rfftfreq(n), np.fft.rfftfreq(n), rtol=1e-6)
  assert jnp.fft.fftfreq(n).dtype == np.float32
  assert jnp.fft.fftfreq(n, dtype=np.float16).dtype == np.float16
  x = np.arange(n * 3.0).reshape(n, 3)
  for axes in (None, 0, (1,), (0, 1)):
    np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))


def test_fftfreq_spacing_may_be_traced():
  got = minijax.jit(lambda d: jnp.fft.fftfreq(4, d))(np.float32(0.25))
  np.testing.assert_allclose(got, np.fft.fftfreq(4, 0.25))


def test_lax_fft_jaxpr_and_mhlo():
  jaxpr = str(minijax.make_jaxpr(lambda x: lax.fft(x, "rfft", (5,)))(X[0]))
  assert "c64[6,3] = fft[" in jaxpr and "fft_lengths=(5,)" in jaxpr
  text = minijax.jit(lambda x: lax.fft(x, lax.FftType.RFFT, (6, 5))).lower(X[0]).as_text()
  assert "mhlo.fft" in text and "RFFT" in text


def test_bad_input_raises_naming_the_problem():
  with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
    jnp.fft.rfft(Z)
  with pytest.raises(ValueError, match="Invalid norm value"):
    jnp.fft.fft(Z, norm="sideways")
  with pytest.raises(ValueError, match="repeated ax"):
    jnp.fft.fftn(Z, axes=(0, 0))
  with pytest.raises(ValueError, match="only supports 2 axes"):
    jnp.fft.fft2(Z, axes=(0, 1, 2))
  with pytest.raises(ValueError, match="does not support multiple axes"):
    jnp.fft.fft(Z, axis=(0, 1))
  with pytest.raises(ValueError, match="Shape and axes have different lengths"):
    jnp.fft.fftn(Z, s=(2, 2), axes=(0,))
  with pytest.raises(ValueError, match="must be positive"):
    jnp.fft.fft(Z, n=0)
  with pytest.raises(ValueError, match="minor dimensions"):
    lax.fft(Z, "fft", (7,))
  with pytest.raises(ValueError, match="Unknown FFT type"):
    lax.fft(Z, "dct", (5,))
  with pytest.raises(ValueError, match="only takes an int"):
    jnp.fft.fftfreq([3, 4])
  with pytest.raises(ValueError, match=r"fftn does not support repeated axes. Got axes \[1, 1\]"):
    jnp.fft.fftn(np.ones((2, 3)), axes=[1, 1])
  with pytest.raises(ValueError, match=r"IRFFT input shape \(2, 14, 15\) minor dimensions must "
                     r"be equal to all except the last fft_length, got fft_lengths=\(13, 15\)"):
    lax.fft(np.ones((2, 14, 15)), fft_type="irfft", fft_lengths=(13, 15))
  with pytest.raises(ValueError, match="RFFT input must be float32 or float64, got bfloat16"):
    lax.fft(np.ones((14, 15), jnp.bfloat16), fft_type="rfft", fft_lengths=(5, 6))


def test_fft_of_an_empty_array_is_empty():
  out = jnp.fft.fft(jnp.zeros((0,), jnp.complex64))
  assert out.shape == (0,) and out.dtype == np.complex64


# ------------------------------------------------------------------------- transformations

R64 = _rng.standard_normal((3, 6)).astype(np.float64)
C128 = (_rng.standard_normal((3, 4)) + 1j * _rng.standard_normal((3, 4))).astype(np.complex128)
C3D = (_rng.standard_normal((2, 3, 4)) + 1j * _rng.standard_normal((2, 3, 4))).astype(
    np.complex128)

GRADS = {
    "lax_fft": (lambda z: lax.fft(z, "fft", (4,)), (C128,), 2),
    "lax_ifft_2d": (lambda z: lax.fft(z, "ifft", (3, 4)), (C128,), 2),
    "lax_rfft": (lambda x: lax.fft(x, "rfft", (6,)), (R64,), 2),
    "lax_rfft_2d": (lambda x: lax.fft(x, "rfft", (3, 6)), (R64,), 2),
    "lax_irfft_even": (lambda z: lax.fft(z, "irfft", (6,)), (C128,), 2),
    "lax_irfft_odd": (lambda z: lax.fft(z, "irfft", (7,)), (C128,), 2),
    "lax_irfft_3d": (lambda z: lax.fft(z, "irfft", (2, 3, 6)), (C3D,), 2),
    "nonlinear_of_rfft": (lambda x: jnp.abs(jnp.fft.rfft(jnp.sin(x), norm="ortho")) ** 2,
                          (R64,), 2),
    "irfft_of_product": (lambda z: jnp.fft.irfft(z * z, n=5, axis=0), (C128,), 2),
    "fftn_axes_s": (lambda z: jnp.fft.fftn(z, s=(2, 5), axes=(1, 0), norm="forward"),
                    (C128,), 2),
    "rfft2_then_irfft2": (lambda x: jnp.fft.irfft2(jnp.fft.rfft2(x) ** 2, s=(3, 6)), (R64,), 2),
    "fftshift_of_fft": (lambda z: jnp.fft.fftshift(jnp.fft.ifft(z)), (C128,), 2),
    "hfft": (lambda z: jnp.fft.hfft(z, norm="ortho"), (C128,), 2),
}


@pytest.fixture(scope="module")
def grad_results():
  return gradient_checks_in_x64(GRADS)


@pytest.mark.parametrize("name", list(GRADS))
def test_fft_derivatives_match_finite_differences(name, grad_results, x64):
  verify_gradient_check(grad_results, name)


def test_fft_gradients_follow_jax_convention():
  # recorded from JAX 0.10.2
  z = np.array([1 + 2j, 0.5 - 1j, 2 + 0j, -1 + 1j], np.complex64)
  x = np.array([1., 2., -1., 0.5, 3.], np.float32)
  np.testing.assert_allclose(minijax.grad(lambda z: jnp.fft.fft(z)[1].real)(z),
                             [1, -1j, -1, 1j], atol=1e-6)
  np.testing.assert_allclose(minijax.grad(lambda x: jnp.fft.rfft(x)[2].imag)(x),
                             [0., -0.58778524, 0.95105654, -0.95105654, 0.58778524], atol=1e-6)
  np.testing.assert_allclose(minijax.grad(lambda z: jnp.fft.irfft(z)[1])(z),
                             [0.16666667, 0.16666667 + 0.28867513j, -0.16666667 + 0.28867513j,
                              -0.16666667], atol=1e-6)


def test_linear_transpose_of_fft_is_its_adjoint():
  # <ct, rfft(x)> == <transpose(ct), x> with the pairing Re(sum(a * b))
  x = _rng.standard_normal((2, 8)).astype(np.float32)
  ct = (_rng.standard_normal((2, 5)) + 1j * _rng.standard_normal((2, 5))).astype(np.complex64)
  f = lambda x: jnp.fft.rfft(x)
  (back,) = minijax.linear_transpose(f, x)(ct)
  np.testing.assert_allclose(np.sum(ct * np.fft.rfft(x)).real, np.sum(np.asarray(back) * x),
                             rtol=1e-5)


VMAPS = {
    "fft": (lambda z: lax.fft(z, "fft", (4,)), (C128.astype(np.complex64),)),
    "rfft_2d": (lambda x: jnp.fft.rfft2(x), (X[0],)),
    "irfft_axis0": (lambda z: jnp.fft.irfft(z, n=7, axis=0), (Z[0],)),
    "ifftn_all": (lambda z: jnp.fft.ifftn(z), (Z[0],)),
    "fftshift": (lambda x: jnp.fft.fftshift(x), (X[0],)),
}


def test_fft_vmap_matches_a_loop_over_slices():
  checks = {name: VmapCheck(fn, args, [([0], 0), ([-1], -1), ([1], 0)])
            for name, (fn, args) in VMAPS.items()}
  results = run_together(checks)
  for name, check in checks.items():
    check.verify(results[name]) if name in results else check.run()


def test_fft_under_jit_grad_vmap_compositions():
  f = lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 2)  # Parseval: a quadratic form
  xs = X[0]
  g = minijax.jit(minijax.vmap(minijax.grad(f)))(xs)
  want = np.stack([minijax.grad(f)(row) for row in xs])
  np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
  GradCheck(f, (xs[0],), order=2, eps=1e-3, rtol=1e-3, atol=1e-3).run()


def test_axis_none_transforms_every_axis_and_frequencies_are_fractions():
  x = np.array([[1, 2, 3], [4, 5, 7]], np.float32)
  # as JAX: axis=None is the n-dimensional transform's axes=None (n: the last axis' length)
  np.testing.assert_allclose(jnp.fft.fft(x, axis=None), np.fft.fftn(x), rtol=1e-6)
  np.testing.assert_allclose(jnp.fft.fft(x, n=4, axis=None), np.fft.fftn(x, s=[4]), rtol=1e-6)
  np.testing.assert_allclose(jnp.fft.rfft(x, axis=None), np.fft.rfftn(x), rtol=1e-6)
  assert jnp.fft.fftfreq(5, 0.1, dtype=jnp.float16).dtype == np.float16
  with pytest.raises(ValueError, match="fftfreq: dtype must be a floating type"):
    jnp.fft.fftfreq(5, dtype=np.int32)  # (it answered in float32; JAX's int32 gives zeros)


def _dct_reference(x: np.ndarray, axis: int, ortho: bool) -> np.ndarray:
  """scipy's type-2 DCT as its defining sum, in float64."""
  n = x.shape[axis]
  k, j = np.arange(n)[:, None], np.arange(n)[None, :]
  m = 2 * np.cos(np.pi * k * (2 * j + 1) / (2 * n))
  if ortho:
    m[0] *= np.sqrt(1 / (4 * n))
    m[1:] *= np.sqrt(1 / (2 * n))
  return np.moveaxis(np.moveaxis(x.astype(np.float64), axis, -1) @ m.T, -1, axis)


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_scipy_dct_is_the_cosine_sum_and_idct_inverts_it(norm):
  # (computed by one FFT as JAX computes it: its values were JAX's bit for bit on this
  # machine, 104 of 104 cases of dtypes, lengths, axes and norms; numpyro's DCT transform
  # test sits within 1e-6 of a Jacobian's log-determinant, which the cosine matrix missed)
  from minijax.scipy import fft as sfft
  x = _rng.normal(size=(4, 5, 6)).astype(np.float32)
  for axis in (0, 1, 2):
    got = np.asarray(sfft.dct(x, axis=axis, norm=norm))
    np.testing.assert_allclose(got, _dct_reference(x, axis, norm == "ortho"), rtol=2e-5,
                               atol=2e-5)
    np.testing.assert_allclose(np.asarray(sfft.idct(got, axis=axis, norm=norm)), x,
                               rtol=1e-5, atol=1e-5)
  both = _dct_reference(_dct_reference(x, 0, norm == "ortho"), 2, norm == "ortho")
  np.testing.assert_allclose(np.asarray(sfft.dctn(x, axes=(0, 2), norm=norm)), both,
                             rtol=2e-5, atol=1e-4)
  every = sfft.dctn(x, norm=norm)
  np.testing.assert_allclose(np.asarray(sfft.idctn(every, norm=norm)), x, rtol=1e-4, atol=1e-4)
  padded = np.concatenate([x, np.zeros((4, 5, 2), np.float32)], axis=2)
  np.testing.assert_allclose(np.asarray(sfft.dct(x, n=8, norm=norm)),
                             _dct_reference(padded, 2, norm == "ortho"), rtol=2e-5, atol=2e-5)
  assert sfft.dct(x.astype(np.float16)).dtype == np.float32  # (through a complex64 FFT)
  z = (x + 1j * x[::-1]).astype(np.complex64)
  np.testing.assert_allclose(np.asarray(sfft.dct(z, norm=norm)),
                             _dct_reference(z.real, 2, norm == "ortho")
                             + 1j * _dct_reference(z.imag, 2, norm == "ortho"), atol=1e-4)
