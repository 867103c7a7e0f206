"""`jnp.pad` in every mode of numpy's, against numpy (values JAX 0.10.2 gives too), and the
cases where JAX's answer differs from numpy's, recorded from JAX as literals."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

R = np.random.RandomState(0)
ARRAYS = {"1d": (R.normal(size=5) * 10).astype(np.float32),
          "2d": (R.normal(size=(3, 4)) * 10).astype(np.float32),
          "3d_int": (R.normal(size=(2, 1, 3)) * 10).astype(np.int32),
          "single": np.array([1.5], np.float32)}
WIDTHS = [2, (1, 3), 9, "per_axis"]
MODES = [("constant", {}), ("constant", {"constant_values": 3}),
         ("constant", {"constant_values": "per_axis"}), ("edge", {}), ("wrap", {}),
         ("reflect", {}), ("symmetric", {}), ("reflect", {"reflect_type": "odd"}),
         ("symmetric", {"reflect_type": "odd"}), ("linear_ramp", {}),
         ("maximum", {}), ("minimum", {}), ("mean", {}), ("median", {}),
         ("mean", {"stat_length": 2}), ("median", {"stat_length": (1, 3)})]


def _per_axis(nd, offset=0):
  return [(i % 3 + offset, (i * 5) % 11 + offset) for i in range(nd)]


def _rounds_as_numpy(name, mode, kwargs):
  """Integer ramps and odd reflections round as JAX's, not numpy's (see below)."""
  return ARRAYS[name].dtype != np.int32 or not (
      mode == "linear_ramp" or kwargs.get("reflect_type") == "odd")


@pytest.mark.parametrize("name,mode,kwargs", [
    (name, mode, kwargs) for name in sorted(ARRAYS) for mode, kwargs in MODES
    if _rounds_as_numpy(name, mode, kwargs)], ids=str)
@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_pad_gives_numpys_values(name, width, mode, kwargs):
  x = ARRAYS[name]
  if width == "per_axis":
    width = _per_axis(x.ndim)
  if kwargs.get("constant_values") == "per_axis":
    kwargs = {"constant_values": _per_axis(x.ndim, offset=1)}
  want = np.pad(x, width, mode, **kwargs)
  got = jnp.pad(x, width, mode, **kwargs)
  assert got.shape == want.shape and got.dtype == want.dtype
  # (odd reflections subtract values of the array's size: float32 rounding of those)
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6,
                             atol=1e-6 * max(1.0, float(np.abs(want).max(initial=0))))
  jitted = minijax.jit(lambda x: jnp.pad(x, width, mode, **kwargs))(x)
  np.testing.assert_array_equal(np.asarray(jitted), np.asarray(got))


def test_pad_integer_ramp_is_jaxs():
  """An integer ramp is JAX's: float values rounded down, so where the float falls just
  below an integer it is one less than numpy's (JAX 0.10.2 gives 5 2 1 -2 -4 -6 -8 before
  the array, numpy 5 3 1 -1 -3 -5 -7; which ones fall below depends on how the CPU's code
  rounds, so they are compared with numpy within one)."""
  x = np.array([-9, 9, -1, -1, 4], np.int32)
  got = np.asarray(jnp.pad(x, 7, "linear_ramp", end_values=(5, -3)))
  want = np.pad(x, 7, "linear_ramp", end_values=(5, -3))
  assert got.dtype == np.int32 and got.shape == want.shape
  assert np.all((got == want) | (got == want - 1)), got
  assert got[0] == 5 and got[-1] == -3 and (got[7:12] == x).all()


def test_pad_with_a_function_and_under_transformations():
  def pad_with(vector, pad_width, iaxis, kwargs):
    vector = vector.at[:pad_width[0]].set(kwargs.get("padder", 10))
    return vector.at[vector.size - pad_width[1]:].set(kwargs.get("padder", 10))
  x = np.arange(6).reshape(2, 3)
  np.testing.assert_array_equal(np.asarray(jnp.pad(x, 1, pad_with, padder=-1)),
                                np.pad(x, 1, "constant", constant_values=-1))
  g = minijax.grad(lambda x: jnp.pad(x, 3, "reflect").sum())(x.astype(np.float32))
  np.testing.assert_array_equal(np.asarray(g), [[8, 20, 8], [8, 20, 8]])  # (JAX's)
  batched = minijax.vmap(lambda r: jnp.pad(r, 2, "symmetric", reflect_type="odd"))(
      x.astype(np.float32))
  np.testing.assert_array_equal(np.asarray(batched),
                                [np.pad(r, 2, "symmetric", reflect_type="odd") for r in x])


@pytest.mark.parametrize("call,error,words", [
    (lambda: jnp.pad(np.ones(3), 1, "spiral"), NotImplementedError, "Unimplemented padding"),
    (lambda: jnp.pad(np.ones(3), 1, "wrap", constant_values=1), ValueError,
     "unsupported keyword arguments for mode 'wrap'"),
    (lambda: jnp.pad(np.ones((0, 3)), 1, "edge"), ValueError, "Cannot apply 'edge' padding"),
    (lambda: jnp.pad(np.ones(3), 1, "mean", stat_length=0), ValueError, "stat_length of 0"),
    (lambda: jnp.pad(np.ones(3), -1), ValueError, "must not be negative"),
    (lambda: jnp.pad(np.ones(3), 1.5), TypeError, "integral"),
    (lambda: jnp.pad(np.ones((2, 2)), [1, 2, 3]), ValueError, "unsupported shape"),
    (lambda: jnp.pad(np.ones(3), 1, "reflect", reflect_type="both"), ValueError,
     "reflect_type"),
])
def test_pad_refuses_what_it_cannot_do(call, error, words):
  with pytest.raises(error, match=words):
    call()
