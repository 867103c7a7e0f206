"""Typed key arrays as users' pytree leaves, as in JAX.

A key array is one leaf of key dtype in `tree_util`'s functions (and `minijax.tree`), as
JAX has it, while the transformations still carry its uint32 data (`tree_util.internal`).
Libraries rely on the users' view: optax splits one key per leaf of a tree
(`tree_split_key_like`), chex compares trees of keys leaf by leaf.
"""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import random, tree_util

pytestmark = pytest.mark.usefixtures("x64_off")


def test_a_key_array_is_one_leaf_of_key_dtype():
  k = random.key(0)
  leaves, treedef = tree_util.tree_flatten({"a": k, "b": [1.0, random.split(k, 3)]})
  assert len(leaves) == 3 and treedef.num_leaves == 3
  assert leaves[0] is k and leaves[2].shape == (3,)
  assert minijax.dtypes.issubdtype(leaves[0].dtype, minijax.dtypes.prng_key)
  assert tree_util.tree_structure(k) == tree_util.tree_structure(0.0)
  assert minijax.tree.leaves(k) == [k]
  assert tree_util.all_leaves([k, 1.0])
  paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path({"k": k})[0]]
  assert paths == ["['k']"]


def test_tree_map_hands_whole_key_arrays_to_the_function():
  keys = random.split(random.key(1), 2)
  out = tree_util.tree_map(lambda x: x.shape, {"k": keys, "x": jnp.ones(3)})
  assert out == {"k": (2,), "x": (3,)}
  # a tree of keys split leaf by leaf (optax's tree_split_key_like)
  tree = {"a": jnp.ones(2), "b": jnp.zeros(3)}
  new = random.split(random.key(0), tree_util.tree_structure(tree).num_leaves)
  split = tree_util.tree_unflatten(tree_util.tree_structure(tree), list(new))
  assert tree_util.tree_structure(split) == tree_util.tree_structure(tree)
  np.testing.assert_array_equal(random.key_data(split["b"]), random.key_data(new[1]))


def test_is_leaf_still_applies_beside_key_leaves():
  k = random.key(2)
  tree = {"a": (1.0, 2.0), "k": k}
  leaves = tree_util.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple))
  assert leaves[0] == (1.0, 2.0) and leaves[1] is k
  by_path = tree_util.tree_leaves_with_path(tree, is_leaf=lambda p, x: isinstance(x, tuple),
                                            is_leaf_takes_path=True)
  assert [x for _, x in by_path][1] is k


def test_transformations_still_carry_keys_through_trees():
  keys = random.split(random.key(3), 4)
  state = {"k": keys, "n": jnp.arange(4.0)}
  out = minijax.jit(lambda s: {"k": s["k"][::-1], "n": s["n"] + 1})(state)
  np.testing.assert_array_equal(random.key_data(out["k"]), random.key_data(keys)[::-1])
  draws = minijax.vmap(lambda s: random.uniform(s["k"]) + s["n"])(state)
  assert draws.shape == (4,)
  _, ys = minijax.lax.scan(lambda c, k: (c, random.bits(k)), 0, keys)
  assert ys.shape == (4,) and ys.dtype == np.uint32
  # the transformations' own view sees the data inside
  assert len(tree_util.internal.tree_leaves(state)) == 2
  assert tree_util.internal.tree_leaves(keys)[0].dtype == np.uint32


def test_array_equal_compares_key_arrays_eagerly_and_under_jit():
  # (chex's jittable assert_trees_all_equal compares key leaves with it, equal_nan=True)
  a, b = random.split(random.key(1)), random.split(random.key(2))
  assert bool(jnp.array_equal(a, a, equal_nan=True))
  assert not bool(jnp.array_equal(a, b))
  assert not bool(minijax.jit(jnp.array_equal)(a, b))
  assert bool(minijax.jit(jnp.array_equal)(a, a))
  assert not bool(jnp.array_equal(a, a[0]))  # shapes differ
  with pytest.raises(TypeError, match="array_equal compares key arrays"):
    jnp.array_equal(a, jnp.zeros((2, 2), jnp.uint32))


def test_isclose_and_allclose_of_keys_are_equality_as_in_jax():
  # (flax's tests check that two RNG streams differ with jnp.allclose)
  a = random.split(random.key(1), 3)
  assert np.asarray(jnp.isclose(a, a[1])).tolist() == [False, True, False]
  assert bool(jnp.allclose(a, a)) and not bool(jnp.allclose(a, random.key(7)))
  assert bool(minijax.jit(jnp.allclose)(a[0], a[0]))
  with pytest.raises(TypeError, match="isclose does not accept dtypes key<fry>, float32"):
    jnp.isclose(a, 1.0)
  assert jnp.nan_to_num(a) is a  # (blackjax maps it over states holding keys; JAX's too)


def test_shape_dtype_structs_of_key_dtype_through_eval_shape_and_jit():
  key = random.key(1701)
  spec = minijax.ShapeDtypeStruct.like(key)
  assert spec.shape == () and spec.dtype == key.dtype
  assert minijax.eval_shape(lambda x: x, spec) == spec
  out = minijax.eval_shape(lambda k: (random.split(k, 4), random.bits(k, (3,))), spec)
  assert out == (minijax.ShapeDtypeStruct((4,), key.dtype),
                 minijax.ShapeDtypeStruct((3,), np.uint32))
  assert minijax.eval_shape(random.split, key) == minijax.ShapeDtypeStruct((2,), key.dtype)
  f = minijax.jit(lambda ks: (ks[0], random.bits(ks[1])))
  many = minijax.ShapeDtypeStruct((3,), key.dtype)
  assert f.eval_shape(many)[0] == spec
  keys = random.split(key, 3)
  got = f.trace(many).lower().compile()(keys)
  np.testing.assert_array_equal(random.key_data(got[0]), random.key_data(keys[0]))
  assert int(got[1]) == int(random.bits(keys[1]))
  with pytest.raises(AttributeError, match="has no aval of its own"):
    spec.aval
  assert not hasattr(spec, "aval")  # (isinstance checks that read `aval` go on, as in JAX)


def test_custom_vjp_with_symbolic_zeros_boxes_primals_and_gives_keys_float0_zeros():
  from minijax.custom_derivatives import CustomVJPPrimal, SymbolicZero
  seen = {}

  @minijax.custom_vjp
  def f(_, state):
    return state

  def f_fwd(_, state):
    seen["fwd"] = state
    return minijax.tree.map(lambda x: x.value, state), None

  def f_bwd(_, state_bar):
    seen["bwd"] = state_bar
    return state_bar[0], state_bar

  f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
  state = (8.0, random.key(123))
  assert minijax.grad(lambda theta: f(theta, state)[0])(3.0) == 1.0
  boxed = seen["fwd"]
  assert all(isinstance(b, CustomVJPPrimal) for b in boxed)
  assert boxed[1].value is state[1] or boxed[1].value.dtype == state[1].dtype
  assert not boxed[0].perturbed and not boxed[1].perturbed
  ct = seen["bwd"]
  assert isinstance(ct[1], SymbolicZero) and ct[1].dtype == minijax.dtypes.float0
  assert ct[1].shape == () and float(ct[0]) == 1.0


def test_custom_vjp_symbolic_zeros_marks_perturbed_inputs_and_zero_cotangents():
  from minijax.custom_derivatives import SymbolicZero
  seen = {}

  @minijax.custom_vjp
  def f(x, y):
    return x * y, y

  def f_fwd(x, y):
    seen["perturbed"] = (x.perturbed, y.perturbed)
    return (x.value * y.value, y.value), (x.value, y.value)

  def f_bwd(res, g):
    seen["g"] = g
    x, y = res
    gx = g[0] * y
    return gx, SymbolicZero(minijax.typeof(y).at_least_vspace())

  f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
  gx = minijax.grad(lambda x: f(x, 3.0)[0])(2.0)
  assert float(gx) == 3.0 and seen["perturbed"] == (True, False)
  assert isinstance(seen["g"][1], SymbolicZero)  # the second output had no cotangent
  # and under jit, the same
  assert float(minijax.jit(minijax.grad(lambda x: f(x, 3.0)[0]))(2.0)) == 3.0
  assert seen["perturbed"] == (True, False)
