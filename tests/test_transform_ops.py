"""Every differentiable lax primitive under jvp and vjp to second order (float64, central
differences), and every primitive under vmap against a loop over slices with in_axes and
out_axes variants.  Adding a primitive adds a row to OPS."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
from minijax import lax
import functools

from tests.transform_checks import GradCheck, VmapCheck, run_together

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


_POOLED = distinct(4, 5)  # the fixed operand whose windows select for select_and_*_add

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
    # a rank-0 operand on either side of an elementwise op (lax broadcasts it)
    "add_rank0_x": (lax.add, (f64(0.7), nrm(2, 3)), {}),
    "add_rank0_y": (lax.add, (nrm(2, 3), f64(-0.4)), {}),
    "sub_rank0_x": (lax.sub, (f64(0.7), nrm(2, 3)), {}),
    "sub_rank0_y": (lax.sub, (nrm(2, 3), f64(-0.4)), {}),
    "mul_rank0_x": (lax.mul, (f64(1.3), nrm(2, 3)), {}),
    "mul_rank0_y": (lax.mul, (nrm(2, 3), f64(-0.8)), {}),
    "div_rank0_x": (lax.div, (f64(1.3), away(2, 3)), {}),
    "div_rank0_y": (lax.div, (nrm(2, 3), f64(1.7)), {}),
    "max_rank0_y": (lax.max, (distinct(2, 3), f64(0.93)), {}),
    "min_rank0_x": (lax.min, (f64(0.93), distinct(2, 3)), {}),
    "pow_rank0_x": (lax.pow, (f64(1.3), nrm(2, 3)), {}),
    "pow_rank0_y": (lax.pow, (pos(2, 3), f64(0.7)), {}),
    "atan2_rank0_y": (lax.atan2, (away(2, 3), f64(0.8)), {}),
    "rem_rank0_y": (lax.rem, (pos(2, 3) * 3, f64(0.9)), {}),
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
    "top_k": (lambda x: lax.top_k(x, 2)[0], (distinct(2, 4),), {}),
    "associative_scan_mul": (lambda x: lax.associative_scan(lax.mul, x, axis=1),
                             (away(2, 5),), {}),
    "associative_scan_reverse": (lambda x, y: lax.associative_scan(
        lambda a, b: (a[0] + b[0], a[1] * b[0] + b[1]), (x, y), reverse=True),
        (nrm(4), nrm(4)), {}),
    "top_k_axis0": (lambda x: lax.top_k(x, 2, axis=0)[0], (distinct(3, 2),), {}),
    "dot": (lax.dot, (nrm(2, 3), nrm(3, 4)), {}),
    "dot_general_batch": (lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                          (nrm(2, 3, 4), nrm(2, 4, 3)), {}),
    "conv_strided_dilated": (lambda x, w: lax.conv_general_dilated(
        x, w, (2, 1), [(1, 0), (2, 1)], (1, 2), (2, 1)), (nrm(2, 2, 5, 3), nrm(3, 2, 2, 2)), {}),
    "conv_nhwc_same": (lambda x, w: lax.conv_general_dilated(
        x, w, (1, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        (nrm(1, 4, 5, 2), nrm(3, 2, 2, 3)), {}),
    "conv_feature_groups": (lambda x, w: lax.conv_general_dilated(
        x, w, (1,), [(1, 1)], feature_group_count=2), (nrm(2, 4, 5), nrm(4, 2, 3)), {}),
    "conv_batch_groups": (lambda x, w: lax.conv_general_dilated(
        x, w, (2,), "VALID", batch_group_count=2), (nrm(4, 3, 5), nrm(4, 3, 2)), {}),
    "conv_transpose": (lambda x, w: lax.conv_transpose(x, w, (2,), "SAME"),
                       (nrm(2, 3, 2), nrm(3, 2, 3)), {}),
    "reduce_window_sum": (lambda x: lax.reduce_window(
        x, 0.0, lax.add, (2, 3), (2, 1), [(1, 0), (0, 2)], (1, 2), (2, 1)), (nrm(4, 3),), {}),
    "reduce_window_max_same": (lambda x: lax.reduce_window(
        x, -np.inf, lax.max, (2, 2), (1, 2), "SAME"), (distinct(4, 5),), {}),
    "reduce_window_max_negative_padding": (lambda x: lax.reduce_window(
        x, -np.inf, lax.max, (2, 2), (2, 1), [(-1, 1), (1, -1)]), (distinct(5, 4),), {}),
    "reduce_window_min_base_dilation": (lambda x: lax.reduce_window(
        x, np.inf, lax.min, (3,), (2,), [(1, 1)], (2,)), (distinct(5),), {}),
    "select_and_scatter_add": (lambda s: lax.select_and_scatter_add_p.bind(
        s, _POOLED, select_prim=lax.ge_p, window_dimensions=(2, 2),
        window_strides=(1, 2), padding=((1, 0), (0, 1))), (nrm(4, 3),), {}),
    "select_and_gather_add": (lambda t: lax.select_and_gather_add_p.bind(
        t, _POOLED, select_prim=lax.le_p, window_dimensions=(2, 2),
        window_strides=(2, 1), padding=((0, 1), (1, 0)), base_dilation=(1, 1),
        window_dilation=(1, 1)), (nrm(4, 5),), {}),
}

# Zero-derivative or derivative-free primitives are still checked under vmap.
VMAP_ONLY = {
    "eq": (lax.eq, (nrm(2, 3), nrm(2, 3))),
    "lt": (lax.lt, (nrm(2, 3), nrm(2, 3))),
    "lt_rank0_x": (lax.lt, (f64(0.1), nrm(2, 3))),
    "eq_rank0_y": (lax.eq, (np.arange(6.0).reshape(2, 3), f64(2.0))),
    "is_finite": (lax.is_finite, (nrm(2, 3),)),
    "argmax": (lambda x: lax.argmax(x, 1), (distinct(2, 3),)),
    "argmin": (lambda x: lax.argmin(x, 0), (distinct(2, 3),)),
    "stop_gradient": (lax.stop_gradient, (nrm(2, 3),)),
    "bitwise_and": (lax.bitwise_and, (np.arange(6, dtype=np.int32).reshape(2, 3),
                                      np.full((2, 3), 5, np.int32))),
    "shift_left_rank0_y": (lax.shift_left, (np.arange(6, dtype=np.int32).reshape(2, 3),
                                            np.int32(2))),
}


@pytest.fixture(autouse=True)
def _x64(x64):
  yield


# Checks run in chunks of one compiled program each (compiling dominates the cost); each
# test then verifies its own results, or runs alone when its chunk failed.
_CHUNK = 16


def _chunked(table: dict, make_check, key):
  names = list(table)
  i = names.index(key) // _CHUNK * _CHUNK
  results = _chunk_results(id(table), tuple(names[i:i + _CHUNK]), make_check, table)
  check = make_check(table, key)
  if key in results:
    check.verify(results[key])
  else:
    check.run()


@functools.lru_cache(maxsize=None)
def _chunk_results_cached(table_id, names, make_check, x64):
  return run_together({n: make_check(_TABLES[table_id], n) for n in names})


def _chunk_results(table_id, names, make_check, table):
  _TABLES[table_id] = table
  return _chunk_results_cached(table_id, names, make_check, minijax.config.enable_x64)


_TABLES: dict = {}


def _op_grad_check(table, name):
  fn, args, opts = table[name]
  return GradCheck(fn, tuple(np.asarray(a, f64) for a in args), order=2, **opts)


@pytest.mark.parametrize("name", list(OPS))
def test_primitive_gradients_match_finite_differences_to_second_order(name):
  _chunked(OPS, _op_grad_check, name)


def _in_axes_variants(args):
  ranks = [np.ndim(a) for a in args]
  variants = [[0] * len(args)]
  if all(r >= 1 for r in ranks):
    variants.append([-1] * len(args))
  if len(args) > 1:
    variants.append([None] + [0] * (len(args) - 1))
    variants.append([0] + [None] * (len(args) - 1))
  return variants


_VMAP_TABLE = {**{k: v[:2] for k, v in OPS.items()}, **VMAP_ONLY}


def _op_vmap_check(table, name):
  fn, args = table[name]
  args = [np.asarray(a) for a in args]
  variants = [(in_axes, 0 if k % 2 == 0 else -1)
              for k, in_axes in enumerate(_in_axes_variants(args))]
  return VmapCheck(fn, args, variants)


@pytest.mark.parametrize("name", list(_VMAP_TABLE))
def test_primitive_vmap_matches_a_loop_over_slices(name):
  _chunked(_VMAP_TABLE, _op_vmap_check, name)


# ----------------------------------------------------------------------------- minijax.numpy

import minijax.numpy as jnp  # noqa: E402

_M = np.array([[True, False, True], [False, True, True]])
NUMPY = {
    "abs": (jnp.abs, (away(2, 3),)),
    "arccos": (jnp.arccos, (small(2, 3),)),
    "arccosh": (jnp.arccosh, (pos(2, 3) + 1.0,)),
    "arcsin": (jnp.arcsin, (small(2, 3),)),
    "arcsinh": (jnp.arcsinh, (nrm(2, 3),)),
    "arctan": (jnp.arctan, (nrm(2, 3),)),
    "arctan2": (jnp.arctan2, (away(2, 3), away(2, 3))),
    "arctanh": (jnp.arctanh, (small(2, 3),)),
    "cbrt": (jnp.cbrt, (pos(2, 3),)),
    "cosh": (jnp.cosh, (nrm(2, 3),)),
    "sinh": (jnp.sinh, (nrm(2, 3),)),
    "exp2": (jnp.exp2, (nrm(2, 3),)),
    "log2": (jnp.log2, (pos(2, 3),)),
    "log10": (jnp.log10, (pos(2, 3),)),
    "hypot": (jnp.hypot, (away(2, 3), away(2, 3))),
    "logaddexp": (jnp.logaddexp, (nrm(2, 3), nrm(2, 3))),
    "power": (jnp.power, (pos(2, 3), nrm(2, 3))),
    "square": (jnp.square, (nrm(2, 3),)),
    "reciprocal": (jnp.reciprocal, (away(2, 3),)),
    "true_divide_broadcast": (jnp.true_divide, (nrm(2, 3), away(3))),
    "multiply_scalar": (lambda x: jnp.multiply(x, 2.5), (nrm(2, 3),)),
    "add_rank0_array": (jnp.add, (f64(0.3), nrm(2, 3))),
    "divide_rank0_array": (jnp.true_divide, (nrm(2, 3), f64(1.9))),
    "subtract_broadcast": (jnp.subtract, (nrm(2, 1), nrm(3))),
    "maximum": (jnp.maximum, (distinct(2, 3), distinct(2, 3) + 0.05)),
    "clip": (lambda x: jnp.clip(x, -0.5, 0.5), (away(2, 3) * 0.6,)),
    "where": (lambda x, y: jnp.where(_M, x, y), (nrm(2, 3), nrm(2, 3))),
    "sum": (lambda x: jnp.sum(x, axis=1), (nrm(2, 3),)),
    "mean_keepdims": (lambda x: jnp.mean(x, axis=0, keepdims=True), (nrm(2, 3),)),
    "prod": (lambda x: jnp.prod(x, axis=1), (away(2, 3),)),
    "max": (lambda x: jnp.max(x, axis=0), (distinct(2, 3),)),
    "min": (jnp.min, (distinct(2, 3),)),
    "std": (jnp.std, (nrm(2, 3),)),
    "var": (lambda x: jnp.var(x, axis=1), (nrm(2, 3),)),
    "average": (lambda x: jnp.average(x, axis=0, weights=np.array([[1.0] * 3, [3.0] * 3])),
                (nrm(2, 3),)),
    "cumsum": (lambda x: jnp.cumsum(x, axis=1), (nrm(2, 3),)),
    "cumprod": (lambda x: jnp.cumprod(x, axis=0), (away(2, 3),)),
    "dot": (jnp.dot, (nrm(2, 3), nrm(3))),
    "matmul": (jnp.matmul, (nrm(2, 2, 3), nrm(2, 3, 2))),
    "einsum": (lambda a, b: jnp.einsum("ij,jk->ki", a, b), (nrm(2, 3), nrm(3, 2))),
    "inner": (jnp.inner, (nrm(2, 3), nrm(4, 3))),
    "outer": (jnp.outer, (nrm(2), nrm(3))),
    "tensordot": (lambda a, b: jnp.tensordot(a, b, axes=1), (nrm(2, 3), nrm(3, 2))),
    "vdot": (jnp.vdot, (nrm(2, 3), nrm(2, 3))),
    "trace": (jnp.trace, (nrm(3, 3),)),
    "diagonal": (jnp.diagonal, (nrm(3, 3),)),
    "tril": (jnp.tril, (nrm(3, 3),)),
    "transpose": (jnp.transpose, (nrm(2, 3, 2),)),
    "swapaxes": (lambda x: jnp.swapaxes(x, 0, 2), (nrm(2, 3, 2),)),
    "moveaxis": (lambda x: jnp.moveaxis(x, 0, -1), (nrm(2, 3, 2),)),
    "reshape": (lambda x: jnp.reshape(x, (3, -1)), (nrm(2, 3),)),
    "ravel": (jnp.ravel, (nrm(2, 3),)),
    "stack": (lambda a, b: jnp.stack([a, b], axis=1), (nrm(2, 3), nrm(2, 3))),
    "concatenate": (lambda a, b: jnp.concatenate([a, b], axis=0), (nrm(2, 3), nrm(1, 3))),
    "tile": (lambda x: jnp.tile(x, (2, 1)), (nrm(2, 3),)),
    "repeat": (lambda x: jnp.repeat(x, 2, axis=1), (nrm(2, 3),)),
    "roll": (lambda x: jnp.roll(x, 1, axis=1), (nrm(2, 3),)),
    "flip": (jnp.flip, (nrm(2, 3),)),
    "rot90": (jnp.rot90, (nrm(2, 3),)),
    "pad": (lambda x: jnp.pad(x, ((1, 0), (0, 2))), (nrm(2, 3),)),
    "take": (lambda x: jnp.take(x, np.array([2, 0, 2]), axis=1), (nrm(2, 3),)),
    "sort": (lambda x: jnp.sort(x, axis=1), (distinct(2, 3),)),
    "norm": (jnp.linalg.norm, (nrm(2, 3),)),
    "broadcast_to": (lambda x: jnp.broadcast_to(x, (2, 3)), (nrm(3),)),
    "getitem": (lambda x: x[1:, ::2], (nrm(3, 4),)),
    "getitem_array": (lambda x: x[np.array([0, 2, 2])], (nrm(3, 2),)),
    "at_set": (lambda x, y: x.at[0, 1:].set(y), (nrm(2, 3), nrm(2))),
    "at_add": (lambda x, y: x.at[np.array([1, 1])].add(y), (nrm(3, 2), nrm(2, 2))),
    "operators": (lambda x, y: (x * y - x / (y * y + 1.0)) ** 2 + jnp.sum(-x @ y.T), (nrm(2, 3), nrm(2, 3))),
}


def _np_grad_check(table, name):
  fn, args = table[name]
  return GradCheck(fn, tuple(np.asarray(a, f64) for a in args), order=2)


def _np_vmap_check(table, name):
  fn, args = table[name]
  args = [np.asarray(a, np.float32) for a in args]
  return VmapCheck(fn, args, [([0] * len(args), -1)])


@pytest.mark.parametrize("name", list(NUMPY))
def test_numpy_gradients_match_finite_differences_to_second_order(name):
  _chunked(NUMPY, _np_grad_check, name)


@pytest.mark.parametrize("name", list(NUMPY))
def test_numpy_vmap_matches_a_loop_over_slices(name):
  _chunked(NUMPY, _np_vmap_check, name)
