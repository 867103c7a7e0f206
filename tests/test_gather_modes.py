"""lax.gather and the scatters' `mode=` (GatherScatterMode), with JAX 0.10.2's outputs as
literals: clamped, filled and dropped windows, their gradients, under vmap."""
import numpy as np
import pytest

import minijax
from minijax import lax
import minijax.numpy as jnp

NAN = float("nan")
X = np.arange(10.0, dtype=np.float32).reshape(5, 2)
IDX = np.array([[1], [7], [-1], [4]], np.int8)  # (int8: the bounds are cast to it)
ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0,))
BLOCKS = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                    start_index_map=(0,))
ADD_ROWS = lax.ScatterDimensionNumbers((1,), (0,), (0,))
CLAMPED = [[2.0, 3.0], [8.0, 9.0], [0.0, 1.0], [8.0, 9.0]]
FILLED = [[2.0, 3.0], [NAN, NAN], [NAN, NAN], [8.0, 9.0]]


def same(a, b):
  np.testing.assert_array_equal(np.asarray(a), np.asarray(b, dtype=np.asarray(a).dtype))


@pytest.mark.parametrize("mode, expected", [
    (None, CLAMPED), ("clip", CLAMPED), ("promise_in_bounds", CLAMPED),
    (lax.GatherScatterMode.CLIP, CLAMPED), ("fill", FILLED),
    (lax.GatherScatterMode.FILL_OR_DROP, FILLED)])
def test_gather_modes(mode, expected):
  same(lax.gather(X, IDX, ROWS, (1, 2), mode=mode), expected)
  same(minijax.jit(lambda x: lax.gather(x, IDX, ROWS, (1, 2), mode=mode))(X), expected)


def test_gather_fill_values_by_dtype():
  same(lax.gather(X, IDX, ROWS, (1, 2), mode="fill", fill_value=-5),
       [[2, 3], [-5, -5], [-5, -5], [8, 9]])
  same(lax.gather(X.astype(np.int32), IDX, ROWS, (1, 2), mode="fill"),
       [[2, 3], [-2**31, -2**31], [-2**31, -2**31], [8, 9]])
  same(lax.gather(X.astype(np.uint8), IDX, ROWS, (1, 2), mode="fill"),
       [[2, 3], [255, 255], [255, 255], [8, 9]])
  same(lax.gather(X > 4, IDX, ROWS, (1, 2), mode="fill"),
       [[False, False], [True, True], [True, True], [True, True]])


def test_a_window_is_filled_or_clamped_whole():
  # a 2-row window starting at row 4 of 5 is partly outside: filled whole, or moved to 3
  same(lax.gather(X, IDX, BLOCKS, (2, 2), mode="fill"),
       [[[2, 3], [4, 5]], [[NAN] * 2] * 2, [[NAN] * 2] * 2, [[NAN] * 2] * 2])
  same(lax.gather(X, IDX, BLOCKS, (2, 2), mode="clip"),
       [[[2, 3], [4, 5]], [[6, 7], [8, 9]], [[0, 1], [2, 3]], [[6, 7], [8, 9]]])


@pytest.mark.parametrize("mode, expected", [
    (None, [[0, 1], [3, 4], [4, 5], [6, 7], [9, 10]]),
    ("drop", [[0, 1], [3, 4], [4, 5], [6, 7], [9, 10]]),
    ("promise_in_bounds", [[0, 1], [3, 4], [4, 5], [6, 7], [9, 10]]),
    ("clip", [[1, 2], [3, 4], [4, 5], [6, 7], [10, 11]])])
def test_scatter_modes(mode, expected):
  ones = np.ones((4, 2), np.float32)
  same(lax.scatter_add(X, IDX, ones, ADD_ROWS, mode=mode), expected)


def test_scatter_sub_and_apply():
  ones = np.ones((4, 2), np.float32)
  same(lax.scatter_sub(X, IDX, ones, ADD_ROWS, mode="clip"),
       [[-1, 0], [1, 2], [4, 5], [6, 7], [6, 7]])
  x = np.arange(5.0, dtype=np.float32)
  scalars = lax.ScatterDimensionNumbers((), (0,), (0,))
  idx = np.array([[1], [1], [3], [9]])
  # applied once per window that covers an element, as XLA's combiner is
  same(lax.scatter_apply(x, idx, lambda v: v * 10 + 1, scalars, update_shape=(4,)),
       [0, 111, 2, 31, 4])
  same(lax.scatter_apply(x, idx, lambda v: v * 10 + 1, scalars, update_shape=(4,),
                         mode="clip"), [0, 111, 2, 31, 41])


def test_gradients_follow_the_mode():
  square_sum = lambda mode, fill=None: lambda x: (
      lax.gather(x, IDX, ROWS, (1, 2), mode=mode, fill_value=fill) ** 2).sum()
  same(minijax.grad(square_sum("clip"))(X), [[0, 2], [4, 6], [0, 0], [0, 0], [32, 36]])
  same(minijax.grad(square_sum("fill", 0))(X), [[0, 0], [4, 6], [0, 0], [0, 0], [16, 18]])
  ones = np.ones((4, 2), np.float32)
  same(minijax.grad(lambda u: (lax.scatter_add(X, IDX, u, ADD_ROWS, mode="clip") ** 2).sum())(
      ones), [[6, 8], [20, 22], [2, 4], [20, 22]])


def test_dropped_updates_get_no_cotangent():
  # (before, the transpose gathered at the clamped index: 4.0 for the dropped index 7)
  x = np.arange(5.0, dtype=np.float32)
  scalars = lax.ScatterDimensionNumbers((), (0,), (0,))
  idx = np.array([[1], [7], [-1]])
  weights = np.arange(5.0, dtype=np.float32)
  for scatter in (lax.scatter_add, lax.scatter):
    grad = minijax.grad(lambda u: (scatter(x, idx, u, scalars) * weights).sum())(
        np.ones(3, np.float32))
    same(grad, [1, 0, 0])


def test_under_vmap():
  out = minijax.vmap(lambda i: lax.gather(X, i, ROWS, (1, 2), mode="fill"))(
      np.stack([IDX, IDX[::-1]]))
  same(out, [FILLED, FILLED[::-1]])


def test_bad_modes():
  with pytest.raises(ValueError, match='Unknown gather mode "foo"'):
    lax.gather(X, IDX, ROWS, (1, 2), mode="foo")
  with pytest.raises(NotImplementedError, match="ONE_HOT"):
    lax.gather(X, IDX, ROWS, (1, 2), mode="one_hot")
  assert str(lax.GatherScatterMode.CLIP) == "GatherScatterMode.CLIP"
  assert lax.GatherScatterMode.from_any("drop") is lax.GatherScatterMode.FILL_OR_DROP


def test_vmapped_dynamic_slices_with_clamped_starts_differentiate_where_they_read():
  # A batched dynamic_slice becomes a gather, which XLA clamps as it clamps a dynamic
  # slice; the gather's transpose scatters at the clamped starts, where it read, instead of
  # dropping the out-of-bounds windows (a wrong zero gradient before).
  m = jnp.arange(12.0).reshape(3, 4)
  starts = jnp.array([0, 2])  # 2 is clamped to 1 for a window of 2 rows
  grad = minijax.grad(lambda m: minijax.vmap(
      lambda i: lax.dynamic_slice(m, (i, 1), (2, 2)))(starts).sum())(m)
  assert np.asarray(grad).tolist() == [[0, 1, 1, 0], [0, 2, 2, 0], [0, 1, 1, 0]]
  batched = minijax.grad(lambda m: minijax.vmap(
      lambda mm, i: lax.dynamic_slice(mm, (i, 1), (2, 2)))(jnp.stack([m, m]), starts).sum())(m)
  assert np.asarray(batched).tolist() == np.asarray(grad).tolist()
  rows = minijax.grad(lambda m: minijax.vmap(lambda i: m[i].sum())(jnp.array([0, 5, -1])).sum())(m)
  assert np.asarray(rows).tolist() == [[1.0] * 4, [0.0] * 4, [2.0] * 4]  # 5 clamps to row 2
  text = str(minijax.make_jaxpr(minijax.vmap(lambda i: m[i]))(jnp.array([1, 2])))
  assert "f32[2,3,4]" not in text  # the operand is read, not copied per batch element
  from minijax.experimental import checkify  # which still sees the starts out of bounds
  error, _ = checkify.checkify(minijax.vmap(lambda i: m[i]), errors=checkify.index_checks)(
      jnp.array([1, 5]))
  assert "index 5 is out of bounds for axis 0 with size 3" in error.get()


def test_at_updater_takes_jaxs_keywords():
  """JAX 0.10.2's values.  `wrap_negative_indices=False` was swallowed (x.at[-1].get(
  wrap_negative_indices=False, mode='fill') read x[-1] where JAX fills), mode='drop' and
  GatherScatterMode values read clamped where JAX fills, and divide on an integer array
  multiplied by 1 / 2 cast to 0."""
  x = jnp.arange(4.0)
  nowrap = dict(wrap_negative_indices=False)
  assert float(x.at[-1].get(mode="fill", fill_value=7.0, **nowrap)) == 7.0
  assert float(x.at[-1].get(mode="clip", **nowrap)) == 0.0
  assert float(x.at[-1].get(**nowrap)) == 0.0
  np.testing.assert_array_equal(x.at[np.array([-1, 1])].set(9.0, **nowrap), [0, 9, 2, 3])
  np.testing.assert_array_equal(x.at[jnp.array([-1, 1])].set(9.0, mode="clip", **nowrap),
                                [9, 9, 2, 3])
  assert np.isnan(x.at[7].get(mode="drop"))
  assert np.isnan(x.at[7].get(mode=lax.GatherScatterMode.FILL_OR_DROP))
  divided = jnp.arange(4).at[1].divide(2)
  assert divided.dtype == np.float32 and divided.tolist() == [0, 0.5, 2, 3]
  np.testing.assert_array_equal(x.at[np.array([1, 2])].power(2.0), [0, 1, 4, 3])
  np.testing.assert_array_equal(x.at[np.array([0, 0, 2])].apply(lambda v: v + 1), [2, 1, 3, 3])
  grad = minijax.grad(lambda a: a.at[np.array([0, 2])].multiply(a[1], unique_indices=True).sum())
  np.testing.assert_array_equal(grad(x), [1, 3, 1, 1])
  with pytest.raises(NotImplementedError, match="out_sharding is not supported"):
    x.at[0].set(1.0, out_sharding=object())
  with pytest.raises(NotImplementedError, match="mode='one_hot' is not supported"):
    x.at[1].get(mode="one_hot")


def test_checkify_sees_take_along_axis_indices_out_of_bounds():
  """As in JAX 0.10.2, jnp.take_along_axis hands its indices to the gather as given (its
  mode treats those out of bounds), so checkify reports them; minijax clamped them first."""
  from minijax.experimental import checkify
  x = jnp.arange(4.0)
  err, out = checkify.checkify(lambda v: jnp.take_along_axis(v, jnp.array([7]), axis=0),
                               errors=checkify.index_checks)(x)
  assert "index 7 is out of bounds for axis 0 with size 4" in err.get()
  assert np.isnan(out[0])
  np.testing.assert_array_equal(jnp.take_along_axis(x, np.array([7, -1, -9]), 0, mode="clip"),
                                [3, 3, 0])
  np.testing.assert_array_equal(
      jnp.take_along_axis(x, np.array([7, 1]), 0, mode="fill", fill_value=-1.0), [-1, 1])
  with pytest.raises(TypeError, match="check takes a scalar pred"):
    checkify.checkify(lambda: checkify.check(jnp.array([True, False]), "m"))()
