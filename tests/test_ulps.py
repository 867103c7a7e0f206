"""The ulp comparison that float values recorded from JAX go through (tests/ulps.py) lets the
last bits differ and nothing more."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.ulps import assert_within_ulps


def _up(x, k):
  for _ in range(k):
    x = np.nextafter(x, np.inf, dtype=x.dtype)
  return x


def test_a_few_ulps_pass_and_more_fail():
  want = np.array([1.0, -0.3, 7e-3, 0.0, 2.5e10], np.float32)
  assert_within_ulps(_up(want, 4), want, 4)
  with pytest.raises(AssertionError, match="ulps apart"):
    assert_within_ulps(_up(want, 5), want, 4)
  with pytest.raises(AssertionError, match="ulps apart"):
    assert_within_ulps(want * np.float32(1 + 1e-5), want, 4)


def test_array_scale_measures_in_ulps_of_the_largest_element():
  want = np.array([0.9, 1e-3], np.float32)
  near_zero = want.copy()
  near_zero[1] += np.float32(2 ** -24 * 3)  # 3 ulps at 0.9's scale, many at 1e-3's
  assert_within_ulps(near_zero, want, 4, scale="array")
  with pytest.raises(AssertionError):
    assert_within_ulps(near_zero, want, 4)


def test_integers_dtypes_shapes_and_non_finite_values_must_match_exactly():
  with pytest.raises(AssertionError):
    assert_within_ulps(np.array([1, 2], np.uint32), np.array([1, 3], np.uint32))
  with pytest.raises(AssertionError):
    assert_within_ulps(np.ones(2, np.float32), np.ones(2, np.float64))
  with pytest.raises(AssertionError):
    assert_within_ulps(np.ones(2, np.float32), np.ones(3, np.float32))
  with pytest.raises(AssertionError):
    assert_within_ulps(np.array([np.inf], np.float32), np.array([np.nan], np.float32))
  b = np.array([1.5, -2.0], ml_dtypes.bfloat16)
  assert_within_ulps(b, b)
