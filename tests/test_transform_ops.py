"""Every differentiable lax primitive under jvp and vjp to second order (float64, central
differences), and every primitive under vmap against a loop over slices with in_axes and
out_axes variants.  Adding a primitive adds a row to OPS."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax
from tests.transform_checks import check_grads, check_vmap

f64 = np.float64
_rng = np.random.default_rng(42)


def nrm(*shape):
  return _rng.standard_normal(shape)


def pos(*shape):
  return _rng.uniform(0.5, 2.0, shape)


def away(*shape):
  return _rng.uniform(0.5, 2.0, shape) * _rng.choice([-1.0, 1.0], shape)


def distinct(*shape):
  return (_rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 + 0.1)


def small(*shape):
  return _rng.uniform(-0.7, 0.7, shape)


# name -> (function of the differentiable arguments, arguments, options)
OPS = {
    "neg": (lax.neg, (nrm(2, 3),), {}),
    "sin": (lax.sin, (nrm(2, 3),), {}),
    "cos": (lax.cos, (nrm(2, 3),), {}),
    "tan": (lax.tan, (small(2, 3),), {}),
    "tanh": (lax.tanh, (nrm(2, 3),), {}),
    "exp": (lax.exp, (small(2, 3),), {}),
    "log": (lax.log, (pos(2, 3),), {}),
    "log1p": (lax.log1p, (pos(2, 3),), {}),
    "expm1": (lax.expm1, (small(2, 3),), {}),
    "sqrt": (lax.sqrt, (pos(2, 3),), {}),
    "rsqrt": (lax.rsqrt, (pos(2, 3),), {}),
    "logistic": (lax.logistic, (nrm(2, 3),), {}),
    "abs": (lax.abs, (away(2, 3),), {}),
    "sign": (lax.sign, (away(2, 3),), {}),
    "floor": (lax.floor, (away(2, 3),), {}),
    "ceil": (lax.ceil, (away(2, 3),), {}),
    "round": (lax.round, (away(2, 3),), {}),
    "integer_pow_3": (lambda x: lax.integer_pow(x, 3), (nrm(2, 3),), {}),
    "integer_pow_-2": (lambda x: lax.integer_pow(x, -2), (pos(2, 3),), {}),
    "add": (lax.add, (nrm(2, 3), nrm(2, 3)), {}),
    "sub": (lax.sub, (nrm(2, 3), nrm(2, 3)), {}),
    "mul": (lax.mul, (nrm(2, 3), nrm(2, 3)), {}),
    "div": (lax.div, (nrm(2, 3), away(2, 3)), {}),
    "max": (lax.max, (distinct(2, 3), distinct(2, 3) + 0.05), {}),
    "min": (lax.min, (distinct(2, 3), distinct(2, 3) + 0.05), {}),
    "pow": (lax.pow, (pos(2, 3), nrm(2, 3)), {}),
    "atan2": (lax.atan2, (away(2, 3), away(2, 3)), {}),
    "rem": (lax.rem, (pos(2, 3) * 3, pos(2, 3)), {}),
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1,)), (nrm(3),), {}),
    "reshape": (lambda x: lax.reshape(x, (3, 2)), (nrm(2, 3),), {}),
    "transpose": (lambda x: lax.transpose(x, (2, 0, 1)), (nrm(2, 3, 4),), {}),
    "squeeze": (lambda x: lax.squeeze(x, (1,)), (nrm(3, 1, 2),), {}),
    "expand_dims": (lambda x: lax.expand_dims(x, (0, 2)), (nrm(3, 2),), {}),
    "rev": (lambda x: lax.rev(x, (0, 1)), (nrm(2, 3),), {}),
    "concatenate": (lambda x, y: lax.concatenate([x, y], 1), (nrm(2, 3), nrm(2, 2)), {}),
    "pad": (lambda x, p: lax.pad(x, p, [(1, 2, 1), (0, -1, 0)]), (nrm(2, 3), f64(0.5)), {}),
    "convert_element_type": (lambda x: lax.convert_element_type(x, np.float32),
                             (nrm(2, 3),), dict(eps=1e-2, rtol=1e-4, atol=1e-4)),
    "select_n": (lambda x, y: lax.select_n(np.array([[True, False, True]] * 2), x, y),
                 (nrm(2, 3), nrm(2, 3)), {}),
    "clamp": (lambda x: lax.clamp(-0.5, x, 0.5), (away(2, 3) * 0.6,), {}),
    "copy": (lax.copy, (nrm(2, 3),), {}),
    "slice": (lambda x: lax.slice(x, (0, 1), (2, 4), (1, 2)), (nrm(3, 4),), {}),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(0)), (2, 2)),
                      (nrm(3, 4),), {}),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(
        x, u, (np.int32(1), np.int32(2))), (nrm(3, 4), nrm(2, 2)), {}),
    "take_along_axis": (lambda x: lax.take_along_axis(
        x, np.array([[2, 0], [1, 1]], np.int32), 1), (nrm(2, 3),), {}),
    "reduce_sum": (lambda x: lax.reduce_sum(x, (1,)), (nrm(2, 3),), {}),
    "reduce_max": (lambda x: lax.reduce_max(x, (0,)), (distinct(2, 3),), {}),
    "reduce_min": (lambda x: lax.reduce_min(x, (0, 1)), (distinct(2, 3),), {}),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (1,)), (away(2, 3),), {}),
    "cumsum": (lambda x: lax.cumsum(x, 1), (nrm(2, 3),), {}),
    "cumsum_reverse": (lambda x: lax.cumsum(x, 0, reverse=True), (nrm(3, 2),), {}),
    "cumprod": (lambda x: lax.cumprod(x, 1), (away(2, 3),), {}),
    "cummax": (lambda x: lax.cummax(x, 1), (distinct(2, 3),), {}),
    "sort": (lambda x: lax.sort(x, 1), (distinct(2, 3),), {}),
    "sort_key_val": (lambda k, v: lax.sort_key_val(k, v, 0), (distinct(4, 2), nrm(4, 2)), {}),
    "dot": (lax.dot, (nrm(2, 3), nrm(3, 4)), {}),
    "dot_general_batch": (lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                          (nrm(2, 3, 4), nrm(2, 4, 3)), {}),
}

# Zero-derivative or derivative-free primitives are still checked under vmap.
VMAP_ONLY = {
    "eq": (lax.eq, (nrm(2, 3), nrm(2, 3))),
    "lt": (lax.lt, (nrm(2, 3), nrm(2, 3))),
    "is_finite": (lax.is_finite, (nrm(2, 3),)),
    "argmax": (lambda x: lax.argmax(x, 1), (distinct(2, 3),)),
    "argmin": (lambda x: lax.argmin(x, 0), (distinct(2, 3),)),
    "stop_gradient": (lax.stop_gradient, (nrm(2, 3),)),
    "bitwise_and": (lax.bitwise_and, (np.arange(6, dtype=np.int32).reshape(2, 3),
                                      np.full((2, 3), 5, np.int32))),
}


@pytest.fixture(autouse=True)
def _x64(x64):
  yield


@pytest.mark.parametrize("name", list(OPS))
def test_primitive_gradients_match_finite_differences_to_second_order(name):
  fn, args, opts = OPS[name]
  check_grads(fn, tuple(np.asarray(a, f64) for a in args), order=2, **opts)


def _in_axes_variants(args):
  ranks = [np.ndim(a) for a in args]
  variants = [[0] * len(args)]
  if all(r >= 1 for r in ranks):
    variants.append([-1] * len(args))
  if len(args) > 1:
    variants.append([None] + [0] * (len(args) - 1))
    variants.append([0] + [None] * (len(args) - 1))
  return variants


@pytest.mark.parametrize("name", list(OPS) + list(VMAP_ONLY))
def test_primitive_vmap_matches_a_loop_over_slices(name):
  fn, args = (OPS[name][:2] if name in OPS else VMAP_ONLY[name])
  args = [np.asarray(a) for a in args]
  for k, in_axes in enumerate(_in_axes_variants(args)):
    check_vmap(fn, args, in_axes, out_axes=0 if k % 2 == 0 else -1, seed=k)
