"""`minijax.scipy.signal`: convolutions and correlations against scipy's, in every mode, by
both methods, for real and complex operands of ranks 1 to 3 (either operand the larger);
their derivatives against central differences, their vmap against a loop."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.signal as ss

import minijax
import minijax.scipy.signal as ms

from tests.transform_checks import VmapCheck, gradient_checks_in_x64, verify_gradient_check

_rng = np.random.default_rng(0)
SHAPES = [((7,), (3,)), ((3,), (7,)), ((5,), (5,)), ((6, 5), (3, 2)), ((2, 3), (4, 5)),
          ((4, 4), (4, 1)), ((1,), (1,)), ((5, 4, 3), (2, 3, 1))]


def _operands(sa, sb, is_complex):
  a, b = _rng.standard_normal(sa), _rng.standard_normal(sb)
  if is_complex:
    a, b = a + 1j * _rng.standard_normal(sa), b + 1j * _rng.standard_normal(sb)
  dtype = np.complex64 if is_complex else np.float32
  return a.astype(dtype), b.astype(dtype)


def _close(got, want):
  assert got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1, np.abs(want).max()))


@pytest.mark.parametrize("is_complex", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_convolve_and_correlate_match_scipy(shapes, is_complex):
  a, b = _operands(*shapes, is_complex)
  for mode in ("full", "same", "valid"):
    for name in ("convolve", "correlate"):
      for method in ("direct", "fft", "auto"):
        _close(getattr(ms, name)(a, b, mode=mode, method=method),
               getattr(ss, name)(a, b, mode=mode, method="direct" if method == "auto"
                                 else method))
    _close(ms.fftconvolve(a, b, mode=mode), ss.fftconvolve(a, b, mode=mode))
    if a.ndim == 2:
      for name in ("convolve2d", "correlate2d"):
        _close(getattr(ms, name)(a, b, mode=mode), getattr(ss, name)(a, b, mode=mode))


def test_fftconvolve_along_some_axes():
  a = _rng.standard_normal((3, 8)).astype(np.float32)
  b = _rng.standard_normal((3, 4)).astype(np.float32)
  for mode in ("full", "same", "valid"):
    _close(ms.fftconvolve(a, b, mode, axes=1), ss.fftconvolve(a, b, mode, axes=1))
    _close(ms.fftconvolve(a, b, mode, axes=[-1]), ss.fftconvolve(a, b, mode, axes=[-1]))
  with pytest.raises(ValueError, match="mapped axes must have same shape"):
    ms.fftconvolve(a, b[:2], axes=1)


def test_integers_are_promoted_and_results_are_exact_enough():
  got = ms.convolve(np.array([1, 2, 3]), np.array([0, 1, 0.5]))
  assert got.dtype == np.float32
  np.testing.assert_allclose(got, [0, 1, 2.5, 4, 1.5], atol=1e-6)
  assert minijax.jit(lambda a, b: ms.convolve(a, b, "same"))(np.ones(5), np.ones(3)).shape == (5,)


def test_bad_input_raises_as_jax():
  a, b = np.ones((3, 4), np.float32), np.ones((4, 3), np.float32)
  with pytest.raises(ValueError, match="one input must be smaller than the other"):
    ms.convolve(a, b)
  with pytest.raises(ValueError, match="same number of dimensions"):
    ms.convolve(a, np.ones(3))
  with pytest.raises(ValueError, match="mode must be one of"):
    ms.convolve(a, a, mode="circular")
  with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
    ms.convolve(a, a, method="overlap-add")
  with pytest.raises(NotImplementedError, match="boundary='fill'"):
    ms.convolve2d(a, a, boundary="wrap")
  with pytest.raises(ValueError, match="only supports 2-dimensional inputs"):
    ms.correlate2d(np.ones(3), np.ones(3))
  with pytest.raises(ValueError, match="zero-size"):
    ms.convolve(np.ones(0), np.ones(0))


GRADS = {
    "convolve_same": (lambda a, b: ms.convolve(a, b, "same"),
                      (_rng.standard_normal((6, 5)), _rng.standard_normal((3, 2))), 2),
    "correlate_valid_fft": (lambda a, b: ms.correlate(a, b, "valid", method="fft"),
                            (_rng.standard_normal(7), _rng.standard_normal(3)), 2),
    "fftconvolve_complex": (lambda a, b: ms.fftconvolve(a, b * b, "full"),
                            (_rng.standard_normal(5) + 1j * _rng.standard_normal(5),
                             _rng.standard_normal(5) + 1j * _rng.standard_normal(5)), 2),
    "correlate2d_same": (lambda a, b: ms.correlate2d(a, b, "same"),
                         (_rng.standard_normal((4, 4)), _rng.standard_normal((2, 3))), 2),
}


@pytest.fixture(scope="module")
def grad_results():
  return gradient_checks_in_x64(GRADS)


@pytest.mark.parametrize("name", list(GRADS))
def test_signal_derivatives_match_finite_differences(name, grad_results, x64):
  verify_gradient_check(grad_results, name)


@pytest.mark.parametrize("fn", [lambda a, b: ms.convolve(a, b, "same"),
                                lambda a, b: ms.convolve(a, b, method="fft"),
                                lambda a, b: ms.correlate2d(a, b, "valid")],
                         ids=["direct", "fft", "correlate2d"])
def test_signal_vmap_matches_a_loop(fn):
  a = _rng.standard_normal((5, 4)).astype(np.float32)
  b = _rng.standard_normal((2, 3)).astype(np.float32)
  VmapCheck(fn, (a, b), [([0, 0], 0), ([1, None], 1), ([None, 0], 0)]).run()


WINDOWS = ["boxcar", "triang", "hann", "hamming", "blackman", "nuttall", "blackmanharris",
           "flattop", "bartlett", "parzen", "bohman", "barthann", "cosine", "tukey",
           ("tukey", 0.3), ("tukey", 1.0), "exponential", ("exponential", None, 3.0),
           ("kaiser", 8.6), ("gaussian", 2.5), ("general_gaussian", 1.5, 3.0),
           ("general_cosine", [0.5, 0.3, 0.2]), ("general_hamming", 0.6), "rect"]


@pytest.mark.parametrize("window", WINDOWS, ids=str)
def test_spectra_take_scipys_windows_by_name_and_parameters(window, x64):
  # (JAX asks scipy.signal.get_window for them; minijax has no scipy, and knew five names)
  x = np.random.RandomState(0).randn(100)
  _, _, got = ms.stft(x, nperseg=16, window=window)
  _, _, want = ss.stft(x, nperseg=16, window=window)
  np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_welch_and_csd_average_by_the_median_as_scipy(x64):
  x = np.random.RandomState(1).randn(2, 200)
  for scaling in ("density", "spectrum"):
    np.testing.assert_allclose(ms.welch(x, nperseg=32, average="median", scaling=scaling)[1],
                               ss.welch(x, nperseg=32, average="median", scaling=scaling)[1],
                               rtol=1e-12)
    np.testing.assert_allclose(ms.csd(x, x[::-1], nperseg=32, average="median")[1],
                               ss.csd(x, x[::-1], nperseg=32, average="median")[1], rtol=1e-12)
  with pytest.raises(ValueError, match="needs one or more parameters"):
    ms.stft(x[0], nperseg=16, window="kaiser")
  with pytest.raises(ValueError, match="Unknown window type"):
    ms.stft(x[0], nperseg=16, window="nope")
