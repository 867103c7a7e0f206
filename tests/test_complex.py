"""Complex numbers through lax and minijax.numpy.

Every lax primitive is classified: it takes complex operands (checked eagerly and under jit
against numpy, its derivatives against central differences in the complex plane treated as
R^2, its vmap against a loop), or it rejects them with a TypeError naming the primitive and
the dtype.  The same for every function of minijax.numpy that takes arrays.  Gradients follow
JAX's convention; the numbers recorded from JAX 0.10.2 are literal facts here.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.core.primitive import Primitive
from minijax.sharding import Mesh, PartitionSpec as P, SingleDeviceSharding

from tests.transform_checks import GradCheck, VmapCheck, run_together

C64 = np.complex64
_rng = np.random.default_rng(7)


def crand(*shape, scale=1.0):
  return ((_rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)) * scale).astype(C64)


def cpos(*shape):
  """Away from the branch cuts of log and sqrt (positive real parts)."""
  return (_rng.uniform(0.5, 2.0, shape) + 1j * _rng.uniform(-1, 1, shape)).astype(C64)


Z, W, V = crand(2, 3), crand(2, 3), crand(3)
M = crand(3, 3)
R = _rng.standard_normal((2, 3)).astype(np.float32)
_TIES = np.array([[1 + 2j, 1 + 3j, -1 + 5j], [2 + 0j, 1 + 9j, -1 - 5j]], C64)
_TIES2 = np.array([[1 + 3j, 1 + 2j, -1 - 5j], [1 + 9j, 2 + 0j, -1 + 5j]], C64)


def _np_logistic(z):
  return 1 / (1 + np.exp(-z))


def _lex_max(a, b):
  return np.where((a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag)), a, b)


def _lex_min(a, b):
  return np.where((a.real < b.real) | ((a.real == b.real) & (a.imag < b.imag)), a, b)


def _take(x, idx, axis):
  from minijax.lax.reductions import take_along_axis
  return take_along_axis(x, idx, axis)


# name -> (lax function, arguments, numpy reference)
LAX_COMPLEX = {
    "optimization_barrier": (lax.optimization_barrier, (Z,), lambda z: z),
    "dce_sink": (lambda z: (lax.dce_sink(z), z)[1], (Z,), lambda z: z),
    "fft": (lambda z: lax.fft(z, "fft", (3,)), (Z,), lambda z: np.fft.fft(z)),
    "conv_general_dilated": (lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"),
                             (crand(1, 1, 6), crand(1, 1, 3)),
                             lambda x, w: np.convolve(x[0, 0], w[0, 0, ::-1], "valid")[None, None]),
    "reduce_window_sum": (lambda z: lax.reduce_window(z, 0j, lax.add, (1, 2), (1, 1), "VALID"),
                          (Z,), lambda z: z[:, :-1] + z[:, 1:]),
    "reduce_window_max": (lambda z: lax.reduce_window(z, -np.inf, lax.max, (1, 2), (1, 1),
                                                      "VALID"),
                          (_TIES,), lambda z: _lex_max(z[:, :-1], z[:, 1:])),
    "reduce_window_min": (lambda z: lax.reduce_window(z, np.inf, lax.min, (1, 2), (1, 1),
                                                      "VALID"),
                          (_TIES,), lambda z: _lex_min(z[:, :-1], z[:, 1:])),
    "reduce_window": (lambda z: lax.reduce_window(z, 1 + 0j, lax.mul, (1, 2), (1, 1), "VALID"),
                      (Z,), lambda z: z[:, :-1] * z[:, 1:]),
    "neg": (lax.neg, (Z,), np.negative),
    "sign": (lax.sign, (Z,), lambda z: z / np.abs(z)),
    "exp": (lax.exp, (Z,), np.exp),
    "log": (lax.log, (cpos(2, 3),), np.log),
    "log1p": (lax.log1p, (cpos(2, 3),), np.log1p),
    "expm1": (lax.expm1, (Z,), np.expm1),
    # over a vmapped axis, JAX's lexicographic extremum (across devices they raise)
    "pmax_vmapped": (minijax.vmap(lambda z: lax.pmax(z, "k"), axis_name="k"), (_TIES,),
                     lambda z: np.stack([_lex_max(z[0], z[1])] * 2)),
    # (JAX computes it, as XLA does: -i log((x + i y) / sqrt(x^2 + y^2)))
    "atan2": (lax.atan2, (Z, W),
              lambda y, x: -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))),
    "exp2": (lax.exp2, (Z,), np.exp2),
    "reduce": (lambda z: lax.reduce(z, 0j, lambda a, b: a * 0.5 + b, (0,)), (Z,),
               lambda z: z[0] * 0.5 + z[1]),
    "sin": (lax.sin, (Z,), np.sin),
    "cos": (lax.cos, (Z,), np.cos),
    "tan": (lax.tan, (crand(2, 3, scale=0.5),), np.tan),
    "tanh": (lax.tanh, (crand(2, 3, scale=0.5),), np.tanh),
    "sinh": (lax.sinh, (Z,), np.sinh),
    "cosh": (lax.cosh, (Z,), np.cosh),
    "asin": (lax.asin, (Z,), np.arcsin),
    "acos": (lax.acos, (Z,), np.arccos),
    "atan": (lax.atan, (Z,), np.arctan),
    "asinh": (lax.asinh, (Z,), np.arcsinh),
    "acosh": (lax.acosh, (Z,), np.arccosh),
    "atanh": (lax.atanh, (Z,), np.arctanh),
    "square": (lax.square, (Z,), np.square),
    "sqrt": (lax.sqrt, (cpos(2, 3),), np.sqrt),
    "rsqrt": (lax.rsqrt, (cpos(2, 3),), lambda z: 1 / np.sqrt(z)),
    "logistic": (lax.logistic, (crand(2, 3, scale=0.5),), _np_logistic),
    "abs": (lax.abs, (Z,), np.abs),
    "integer_pow_3": (lambda z: lax.integer_pow(z, 3), (Z,), lambda z: z ** 3),
    "integer_pow_-2": (lambda z: lax.integer_pow(z, -2), (cpos(2, 3),), lambda z: z ** -2.0),
    "add": (lax.add, (Z, W), np.add),
    "sub": (lax.sub, (Z, W), np.subtract),
    "mul": (lax.mul, (Z, W), np.multiply),
    "div": (lax.div, (Z, cpos(2, 3)), np.divide),
    "pow": (lax.pow, (cpos(2, 3), crand(2, 3, scale=0.5)), np.power),
    "max_lexicographic": (lax.max, (_TIES, _TIES2), _lex_max),
    "min_lexicographic": (lax.min, (_TIES, _TIES2), _lex_min),
    "eq": (lax.eq, (Z, np.where(R > 0, Z, W)), np.equal),
    "ne": (lax.ne, (Z, np.where(R > 0, Z, W)), np.not_equal),
    "real": (lax.real, (Z,), np.real),
    "imag": (lax.imag, (Z,), np.imag),
    "conj": (lax.conj, (Z,), np.conj),
    "conj_of_real": (lax.conj, (R,), lambda x: x.astype(C64)),
    "complex": (lax.complex, (R, R[::-1].copy()), lambda x, y: x + 1j * y),
    "reduce_sum": (lambda z: lax.reduce_sum(z, (1,)), (Z,), lambda z: z.sum(1)),
    "reduce_prod": (lambda z: lax.reduce_prod(z, (0,)), (Z,), lambda z: z.prod(0)),
    "reduce_max": (lambda z: lax.reduce_max(z, (1,)), (_TIES,),
                   lambda z: np.array([max(r, key=lambda c: (c.real, c.imag)) for r in z])),
    "reduce_min": (lambda z: lax.reduce_min(z, (1,)), (_TIES,),
                   lambda z: np.array([min(r, key=lambda c: (c.real, c.imag)) for r in z])),
    "cumsum": (lambda z: lax.cumsum(z, 1), (Z,), lambda z: np.cumsum(z, 1)),
    "cumprod": (lambda z: lax.cumprod(z, 1), (Z,), lambda z: np.cumprod(z, 1)),
    "cummax": (lambda z: lax.cummax(z, 1), (_TIES,),
               lambda z: np.stack([_lex_max(_lex_max(z[:, 0], z[:, 0]), z[:, 0]),
                                   _lex_max(z[:, 0], z[:, 1]),
                                   _lex_max(_lex_max(z[:, 0], z[:, 1]), z[:, 2])], 1)),
    "cummin": (lambda z: lax.cummin(z, 1), (_TIES,),
               lambda z: np.stack([z[:, 0], _lex_min(z[:, 0], z[:, 1]),
                                   _lex_min(_lex_min(z[:, 0], z[:, 1]), z[:, 2])], 1)),
    "cumlogsumexp": (lambda z: lax.cumlogsumexp(z, 1), (Z,),
                     lambda z: np.log(np.cumsum(np.exp(z.astype(np.complex128)), 1))),
    "sort": (lambda z: lax.sort(z, 1), (_TIES,), lambda z: np.sort(z, 1)),
    "clamp": (lambda z: lax.clamp(C64(-1 + 5j), z, C64(1 + 2.5j)), (_TIES,),
              lambda z: _lex_min(_lex_max(z, C64(-1 + 5j)), C64(1 + 2.5j))),
    "select_n": (lambda z, w: lax.select_n(np.asarray(R > 0), z, w), (Z, W),
                 lambda z, w: np.where(R > 0, w, z)),
    "dot_general": (lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), (Z, M),
                    np.matmul),
    "convert_to_complex128": (lambda z: lax.convert_element_type(z, np.complex128), (Z,),
                              lambda z: z),
    "convert_from_float": (lambda x: lax.convert_element_type(x, C64), (R,),
                           lambda x: x.astype(C64)),
    "convert_to_bool": (lambda z: lax.convert_element_type(z, np.bool_),
                        (np.array([0, 1j, 2, 0], C64),), lambda z: z != 0),
    "transpose": (lambda z: lax.transpose(z, (1, 0)), (Z,), np.transpose),
    "broadcast_in_dim": (lambda z: lax.broadcast_in_dim(z, (4, 2, 3), (1, 2)), (Z,),
                         lambda z: np.broadcast_to(z, (4, 2, 3))),
    "reshape": (lambda z: lax.reshape(z, (3, 2)), (Z,), lambda z: z.reshape(3, 2)),
    "squeeze": (lambda z: lax.squeeze(z[:1], (0,)), (Z,), lambda z: z[0]),
    "rev": (lambda z: lax.rev(z, (1,)), (Z,), lambda z: z[:, ::-1]),
    "concatenate": (lambda z, w: lax.concatenate([z, w], 0), (Z, W),
                    lambda z, w: np.concatenate([z, w], 0)),
    "pad": (lambda z: lax.pad(z, lax.full((), 1j, z.dtype), ((1, 0, 1), (0, 2, 0))), (Z,),
            lambda z: np.pad(np.insert(z, 1, 1j, axis=0), ((1, 0), (0, 2)),
                             constant_values=1j)),
    "slice": (lambda z: lax.slice(z, (0, 1), (2, 3)), (Z,), lambda z: z[:, 1:]),
    "dynamic_slice": (lambda z: lax.dynamic_slice(z, (1, 1), (1, 2)), (Z,),
                      lambda z: z[1:, 1:]),
    "dynamic_update_slice": (lambda z, v: lax.dynamic_update_slice(z, v[None, :2], (1, 1)),
                             (Z, V), lambda z, v: np.concatenate(
                                 [z[:1], np.concatenate([z[1:, :1], v[None, :2]], 1)], 0)),
    "gather": (lambda z: _take(z, np.array([[2, 0, 1], [1, 1, 0]], np.int32), 1), (Z,),
               lambda z: np.take_along_axis(z, np.array([[2, 0, 1], [1, 1, 0]]), 1)),
    "scatter_add": (lambda z, v: jnp.asarray(z).at[np.array([0, 2, 0])].add(v), (V, V),
                    lambda z, v: z + np.array([v[0] + v[2], 0, v[1]], C64)),
    "scatter_mul": (lambda z, v: jnp.asarray(z).at[np.array([0, 2])].multiply(v[:2]), (V, V),
                    lambda z, v: z * np.array([v[0], 1, v[1]], C64)),
    "scatter_max": (lambda z, v: jnp.asarray(z).at[np.array([0, 1, 2])].max(v),
                    (_TIES[0], _TIES2[0]), _lex_max),
    "scatter_min": (lambda z, v: jnp.asarray(z).at[np.array([0, 1, 2])].min(v),
                    (_TIES[0], _TIES2[0]), _lex_min),
    "scatter": (lambda z, v: jnp.asarray(z).at[np.array([1])].set(v[:1]), (V, V),
                lambda z, v: np.array([z[0], v[0], z[2]], C64)),
    "copy": (lax.copy, (Z,), lambda z: z),
    "stage": (lax.stage, (Z,), lambda z: z),
    "device_put": (lambda: lax.convert_to_array(Z * 1j), (), lambda: Z * 1j),
    "stop_gradient": (lax.stop_gradient, (Z,), lambda z: z),
    "iota": (lambda: lax.iota(C64, 3), (), lambda: np.arange(3).astype(C64)),
    "cond": (lambda z: lax.cond(True, lambda a: a * 2j, lambda a: a, z), (Z,),
             lambda z: z * 2j),
    "while": (lambda z: lax.fori_loop(0, 3, lambda i, a: a * (1 + 1j), z), (Z,),
              lambda z: z * (1 + 1j) ** 3),
    "scan": (lambda z: lax.scan(lambda c, a: (c * a, c), lax.full((), 1, z.dtype), z)[1], (V,),
             lambda z: np.cumprod(np.concatenate([[1], z[:-1]])).astype(C64)),
    "jit": (minijax.jit(lambda z: z * z.conj()), (Z,), lambda z: z * np.conj(z)),
    "custom_linear_solve": (lambda z: lax.custom_linear_solve(lambda x: x * (2 - 1j), z,
                                                              lambda mv, y: y / (2 - 1j)),
                            (Z,), lambda z: z / (2 - 1j)),
    # collectives, over a vmapped axis named "k" (tests/test_parallel.py runs them on devices)
    "psum": (minijax.vmap(lambda z: lax.psum(z, "k"), axis_name="k"), (Z,),
             lambda z: np.broadcast_to(z.sum(0), z.shape)),
    "all_gather": (minijax.vmap(lambda z: lax.all_gather(z, "k"), axis_name="k"), (Z,),
                   lambda z: np.broadcast_to(z, (2, *z.shape))),
    "reduce_scatter": (minijax.vmap(lambda z: lax.psum_scatter(z, "k"), axis_name="k"),
                       (Z[:, :2],), lambda z: z.sum(0)),
    "ppermute": (minijax.vmap(lambda z: lax.ppermute(z, "k", [(0, 1), (1, 0)]), axis_name="k"),
                 (Z,), lambda z: z[::-1]),
    "all_to_all": (minijax.vmap(lambda z: lax.all_to_all(z, "k", 0, 0), axis_name="k"),
                   (Z[:, :2],), lambda z: z.T),
    "shard_map": (lambda z: minijax.shard_map(
        lambda b: b * 2j, mesh=Mesh(np.array(minijax.devices()[:1]), ("d",)),
        in_specs=P(), out_specs=P())(z), (Z,), lambda z: z * 2j),
    "sharding_constraint": (lambda z: lax.with_sharding_constraint(
        z * 1j, SingleDeviceSharding(minijax.devices()[0])), (Z,), lambda z: z * 1j),
}


def _tolerance(name):
  return dict(rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", list(LAX_COMPLEX))
def test_lax_primitive_on_complex_matches_numpy_eagerly_and_under_jit(name):
  fn, args, ref = LAX_COMPLEX[name]
  want = ref(*[a.astype(np.complex128) if a.dtype == C64 else a for a in args])
  eager = np.asarray(fn(*args))
  jitted = np.asarray(minijax.jit(fn)(*args))
  np.testing.assert_allclose(eager, want, **_tolerance(name))
  np.testing.assert_array_equal(eager, jitted)


# name -> (lax function, arguments) that must raise TypeError naming the primitive and dtype
LAX_REJECTS = {
    "rem": (lax.rem, (Z, W)),
    "floor": (lax.floor, (Z,)),
    "ceil": (lax.ceil, (Z,)),
    "round": (lax.round, (Z,)),
    "erf": (lax.erf, (Z,)),
    "is_finite": (lax.is_finite, (Z,)),
    "lt": (lax.lt, (Z, W)),
    "le": (lax.le, (Z, W)),
    "gt": (lax.gt, (Z, W)),
    "ge": (lax.ge, (Z, W)),
    "argmax": (lambda z: lax.argmax(z, 0), (Z,)),
    "argmin": (lambda z: lax.argmin(z, 0), (Z,)),
    "not": (lax.bitwise_not, (Z,)),
    "and": (lax.bitwise_and, (Z, W)),
    "or": (lax.bitwise_or, (Z, W)),
    "xor": (lax.bitwise_xor, (Z, W)),
    "shift_left": (lax.shift_left, (Z, W)),
    "shift_right_arithmetic": (lax.shift_right_arithmetic, (Z, W)),
    "shift_right_logical": (lax.shift_right_logical, (Z, W)),
    "reduce_and": (lambda z: lax.reduce_and(z, (0,)), (Z,)),
    "reduce_or": (lambda z: lax.reduce_or(z, (0,)), (Z,)),
    "real": (lax.real, (R,)),
    "imag": (lax.imag, (R,)),
    "complex": (lax.complex, (Z, W)),
    "erfc": (lax.erfc, (Z,)),
    "erf_inv": (lax.erf_inv, (Z,)),
    "lgamma": (lax.lgamma, (Z,)),
    "digamma": (lax.digamma, (Z,)),
    "polygamma": (lax.polygamma, (Z, W)),
    "zeta": (lax.zeta, (Z, W)),
    "nextafter": (lax.nextafter, (Z, W)),
    "bitcast_convert_type": (lambda z: lax.bitcast_convert_type(z, np.float32), (Z,)),
    "threefry2x32": (lambda z: lax.threefry2x32(z, z, z, z), (Z,)),
    "mulhi": (lax.mulhi, (Z, W)),
    "population_count": (lax.population_count, (Z,)),
    "clz": (lax.clz, (Z,)),
    "cbrt": (lax.cbrt, (Z,)),
    "bessel_i0e": (lax.bessel_i0e, (Z,)),
    "bessel_i1e": (lax.bessel_i1e, (Z,)),
    "reduce_xor": (lambda z: lax.reduce_xor(z, (0,)), (Z,)),
    "rng_bit_generator": (lambda z: lax.rng_bit_generator(z, (2,)), (V,)),
    "rng_uniform": (lambda z: lax.rng_uniform(z[0, 0], z[0, 1], (2,)), (Z,)),
    "select_and_gather_add": (lambda z: minijax.jvp(
        lambda y: lax.reduce_window(y, -np.inf, lax.max, (1, 2), (1, 1), "VALID"), (z,), (z,)),
        (Z,)),
    "select_and_scatter_add": (lambda z: lax.select_and_scatter_add_p.bind(
        z[:, :2], z, select_prim=lax.ge_p, window_dimensions=(1, 2), window_strides=(1, 1),
        padding=((0, 0), (0, 0))), (Z,)),
    "pmax": (lambda z: minijax.pmap(lambda v: lax.pmax(v, "k"), axis_name="k")(z[:1]), (Z,)),
    "pmin": (lambda z: minijax.pmap(lambda v: lax.pmin(v, "k"), axis_name="k")(z[:1]), (Z,)),
    "reduce_precision": (lambda z: lax.reduce_precision(z, 5, 10), (Z,)),
}


@pytest.mark.parametrize("name", list(LAX_REJECTS))
def test_lax_primitive_without_complex_support_raises_naming_it_and_the_dtype(name):
  fn, args = LAX_REJECTS[name]
  dtype = "float32" if name in ("real", "imag") else "complex64|c64"
  with pytest.raises(TypeError, match=rf"{name}.*({dtype})|({dtype}).*{name}"):
    fn(*args)
  with pytest.raises(TypeError, match=name):
    minijax.jit(fn)(*args)


# Primitives that take no array data of their own (the transformations' own, and add_any,
# which only adds tangents), and the tap primitive, which passes any dtype through.
_NOT_APPLICABLE = {"add_any", "custom_jvp_call", "custom_vjp_call", "custom_lin", "checkpoint",
                   "named_call", "axis_index", "create_token", "after_all"}
_TABLE_NAMES = {"max_lexicographic": "max", "min_lexicographic": "min", "pmax_vmapped": "pmax",
                "integer_pow_3": "integer_pow", "integer_pow_-2": "integer_pow",
                "conj_of_real": "conj", "convert_to_complex128": "convert_element_type",
                "convert_from_float": "convert_element_type",
                "convert_to_bool": "convert_element_type", "scatter_add": "scatter-add",
                "scatter_mul": "scatter-mul", "scatter_max": "scatter-max",
                "scatter_min": "scatter-min"}


def test_top_k_rejects_complex_with_jaxs_value_error():
  with pytest.raises(ValueError, match="top_k is not compatible with complex inputs"):
    lax.top_k(V, 1)


def test_every_lax_primitive_is_classified_for_complex_operands():
  classified = {_TABLE_NAMES.get(n, n) for n in [*LAX_COMPLEX, *LAX_REJECTS, "top_k"]}
  primitives = {getattr(lax, n).name for n in dir(lax) if isinstance(getattr(lax, n), Primitive)}
  assert primitives - classified - _NOT_APPLICABLE == set()


# ----------------------------------------------------------------------------- derivatives

def _c128(*args):
  return tuple(np.asarray(a, np.complex128) if np.iscomplexobj(a) else np.asarray(a, np.float64)
               for a in args)


# name -> (function, arguments): derivatives in the complex plane (as R^2), to second order
# name -> (function, arguments, order).  Second order for the rules that treat complex
# numbers specially (the parts, conjugation, modulus, products and their transposes), first
# order for the holomorphic functions, whose rules are the real ones; linear primitives that
# only move data (transpose, gather, ...) have the same rules for every dtype and are left to
# the real-valued tables.
GRADS = {name: (LAX_COMPLEX[name][0], LAX_COMPLEX[name][1], 1) for name in [
    "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "rsqrt", "logistic",
    "integer_pow_-2", "square", "pow", "reduce_prod", "cumprod", "scan"]}
GRADS.update({name: (LAX_COMPLEX[name][0], LAX_COMPLEX[name][1], 2) for name in [
    "abs", "mul", "div", "real", "imag", "conj", "conj_of_real", "complex", "dot_general"]})
GRADS.update({name: (fn, args, 2) for name, (fn, args) in {
    "convert_from_float": (lambda x: lax.convert_element_type(x, np.complex128), (R,)),
    "scatter_mul": (lambda z: jnp.asarray(z).at[np.array([0, 2])].multiply(V[:2]), (V,)),
    "abs_squared_sum": (lambda z: lax.reduce_sum(lax.mul(lax.abs(z), lax.abs(z)), (0, 1)), (Z,)),
    "u_plus_iv": (lambda x, y: lax.complex(lax.sin(lax.mul(x, y)),
                                           lax.cos(lax.add(x, lax.mul(y, y)))),
                  (R, R[::-1].copy())),
    "numpy_mix": (lambda z, w: jnp.sum(jnp.real(z * jnp.conj(w)) ** 2 + jnp.abs(jnp.exp(z)))
                  + jnp.angle(z[0, 0] + 2.0), (Z, W)),
    "numpy_complex_out": (lambda z: jnp.sqrt(z * z + 4.0) @ jnp.conj(z).T, (Z,)),
    "vdot": (jnp.vdot, (Z, W)),
    "norm": (jnp.linalg.norm, (Z,)),
    "var": (lambda z: jnp.var(z, axis=1), (Z,)),
    "max_of_complex": (lambda z: jnp.max(z, axis=1), (Z,)),
    "sort": (lambda z: jnp.sort(z, axis=1), (Z,)),
}.items()})


def _grad_check(table, name):
  fn, args, order = table[name]
  return GradCheck(fn, _c128(*args), order=order)


@pytest.fixture(scope="module")
def grad_results():
  previous = minijax.config.enable_x64
  minijax.config.update("enable_x64", True)
  try:
    results = run_together({n: _grad_check(GRADS, n) for n in GRADS})
  finally:
    minijax.config.update("enable_x64", previous)
  return results


@pytest.mark.parametrize("name", list(GRADS))
def test_complex_derivatives_match_finite_differences(name, grad_results, x64):
  check = _grad_check(GRADS, name)
  if name in grad_results:
    check.verify(grad_results[name])
  else:
    check.run()


VMAPS = {name: (LAX_COMPLEX[name][0], LAX_COMPLEX[name][1]) for name in [
    "sin", "abs", "mul", "real", "imag", "conj", "complex", "max_lexicographic", "sort",
    "reduce_max", "clamp", "dot_general", "pow", "scatter_max"]}
VMAPS.update({"angle": (jnp.angle, (Z,)), "isclose": (jnp.isclose, (Z, W)),
              "less": (jnp.less, (_TIES, _TIES2)), "round": (jnp.round, (Z,))})


def test_complex_vmap_matches_a_loop_over_slices():
  checks = {}
  for name, (fn, args) in VMAPS.items():
    variants = [([0] * len(args), 0), ([-1] * len(args), -1)]
    if len(args) > 1:
      variants.append(([None] + [0] * (len(args) - 1), 0))
    checks[name] = VmapCheck(fn, args, variants)
  results = run_together(checks)
  for name, check in checks.items():
    check.verify(results[name]) if name in results else check.run()


# ----------------------------------------------------------------------------- JAX's numbers

def _grads_facts():
  z = C64(3 + 4j)
  return {
      "grad |z|^2": (minijax.grad(lambda z: jnp.abs(z) ** 2)(z), 6 - 8j),
      "grad |z|": (minijax.grad(jnp.abs)(z), 0.6 - 0.8j),
      "grad Re z^3": (minijax.grad(lambda z: jnp.real(z ** 3))(C64(1 + 2j)), -9 + 12j),
      "grad Im sin z": (minijax.grad(lambda z: jnp.imag(jnp.sin(z)))(C64(0.5 - 1j)),
                        0.5634215 - 1.3541806j),
      "grad angle": (minijax.grad(jnp.angle)(C64(1 + 1j)), -0.5 - 0.5j),
      "holomorphic sin": (minijax.grad(jnp.sin, holomorphic=True)(C64(1 + 2j)),
                          2.032723 - 3.0518978j),
      "holomorphic z e^z": (minijax.grad(lambda z: jnp.exp(z) * z, holomorphic=True)(
          C64(0.5 + 0.25j)), 2.2942247 + 1.0112169j),
      "value_and_grad z^3": (minijax.value_and_grad(lambda z: z ** 3, holomorphic=True)(
          C64(1 - 1j)), (-2 - 2j, -6j)),
      "vjp |z|^2 z": (minijax.vjp(lambda z: jnp.conj(z) * z * z, C64(1 + 2j))[1](
          C64(1 + 0.5j)), (5 + 2.5j,)),
      "vjp exp(ix)": (minijax.vjp(lambda x: jnp.exp(1j * x), np.float32(0.3))[1](
          C64(0.5 - 2j)), (1.7629129,)),
      "jvp conj(z) sin z": (minijax.jvp(lambda z: jnp.conj(z) * jnp.sin(z), (C64(0.3 + 0.4j),),
                                        (C64(1 - 1j),)),
                            (0.25280628 - 0.0100695j, -0.2611766 + 0.00107235j)),
      "jvp u + iv": (minijax.jvp(lambda x, y: jnp.sin(x * y) + 1j * jnp.cos(x + y * y),
                                 (np.float32(0.3), np.float32(0.7)),
                                 (np.float32(1.0), np.float32(0.5))),
                     (0.20845991 + 0.7038453j, 0.8313263 - 1.2076006j)),
  }


def test_gradients_follow_jax_convention_for_complex_numbers():
  for what, (got, want) in _grads_facts().items():
    np.testing.assert_allclose(np.asarray(got, np.complex128), np.asarray(want), rtol=2e-6,
                               atol=1e-6, err_msg=what)


def test_holomorphic_jacobians_and_hessian_match_jax():
  zz = np.array([1 + 1j, 2 - 0.5j], C64)
  f = lambda z: z ** 2 * z[0]  # noqa: E731
  want = np.array([[6j, 0], [3.75 - 2j, 5 + 3j]])
  np.testing.assert_allclose(minijax.jacfwd(f, holomorphic=True)(zz), want, rtol=1e-6)
  np.testing.assert_allclose(minijax.jacrev(f, holomorphic=True)(zz), want, rtol=1e-6)
  np.testing.assert_allclose(
      minijax.hessian(lambda z: jnp.sum(z ** 3), holomorphic=True)(zz),
      np.array([[6 + 6j, 0], [0, 12 - 3j]]), rtol=1e-6)
  np.testing.assert_allclose(minijax.jacrev(lambda z: jnp.abs(z) ** 2)(zz),
                             np.array([[2 - 2j, 0], [0, 4 + 1j]]), rtol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda: minijax.grad(jnp.sin, holomorphic=True)(np.float32(1)),
     "grad with holomorphic=True requires inputs with complex dtype, but got float32."),
    (lambda: minijax.grad(jnp.abs, holomorphic=True)(C64(1)),
     "grad with holomorphic=True requires outputs with complex dtype, but got float32."),
    (lambda: minijax.grad(jnp.sin)(C64(1)),
     "grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
     "but got complex64. For holomorphic differentiation, pass holomorphic=True."),
    (lambda: minijax.jacfwd(jnp.sin)(np.ones(2, C64)),
     "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
     "but got complex64. For holomorphic differentiation, pass holomorphic=True."),
    (lambda: minijax.jacfwd(jnp.abs, holomorphic=True)(np.ones(2, C64)),
     "jacfwd with holomorphic=True requires outputs with complex dtype, but got float32."),
    (lambda: minijax.jacfwd(jnp.sin, holomorphic=True)(np.float32(1)),
     "jacfwd with holomorphic=True requires inputs with complex dtype, but got float32."),
    (lambda: minijax.jacrev(jnp.sin)(np.ones(2, C64)),
     "jacrev requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
     "but got complex64."),
    (lambda: minijax.jacrev(jnp.sin, holomorphic=True)(np.float32(1)),
     "jacrev with holomorphic=True requires inputs with complex dtype, but got float32."),
    (lambda: minijax.grad(lambda x: (x > 0).astype(int))(np.float32(1)),
     "grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
     "but got int32. For differentiation of functions with integer outputs"),
])
def test_holomorphic_checks_raise_jax_errors(call, message):
  with pytest.raises(TypeError) as info:
    call()
  assert str(info.value).startswith(message)


# ----------------------------------------------------------------------------- minijax.numpy

ZN, WN = crand(4), crand(4)
MN = crand(2, 2)
_SORTED = np.array([-1 + 0j, -1 + 2j, 0.5 - 1j, 2 + 0j], C64)
_B = np.array([True, False, True, False])


def _u(name):
  return lambda m: getattr(m, name)(ZN)


def _b(name):
  return lambda m: getattr(m, name)(ZN, WN)


_UNARY_OK = """abs absolute conj conjugate cos cosh cumprod cumsum exp exp2 expm1 imag
isfinite isinf isnan log log10 log1p log2 max min mean nan_to_num nanmax nanmin nanmean nansum
nanprod nanstd nanvar nancumsum negative positive prod ptp real reciprocal rint round sign sin
sinc sinh sort sqrt square std sum tan tanh var unique diff cumulative_sum count_nonzero all
any isreal iscomplex angle argsort ravel transpose flip fliplr flipud atleast_1d atleast_2d
atleast_3d squeeze diag nonzero flatnonzero argwhere ediff1d copy asarray array zeros_like
ones_like amax amin around arcsin arccos arctan arcsinh arccosh arctanh asin acos atan asinh
acosh atanh nancumprod""".split()
_BINARY_OK = """add divide equal not_equal fmax fmin greater greater_equal less less_equal
logical_and logical_or logical_xor maximum minimum multiply power subtract true_divide
isclose allclose array_equal dot vdot inner outer kron convolve correlate polyval isin append
float_power pow""".split()

# name -> function of the module (numpy or minijax.numpy) that computes a value
NUMPY_OK = {**{n: _u(n) for n in _UNARY_OK}, **{n: _b(n) for n in _BINARY_OK}}
# numpy's logaddexp takes no complex numbers: log(e^a + e^b) is the reference
NUMPY_OK["logaddexp"] = lambda m: (jnp.logaddexp(ZN, WN) if m is jnp
                                   else np.log(np.exp(ZN) + np.exp(WN)))
# numpy's arctan2 takes no complex numbers: JAX's continuation -i log((x + iy) / sqrt(x² + y²))
for _name in ("arctan2", "atan2"):
  NUMPY_OK[_name] = lambda m, _name=_name: (
      getattr(jnp, _name)(ZN, WN) if m is jnp
      else -1j * np.log((WN + 1j * ZN) / np.sqrt(WN.astype(complex) ** 2 + ZN ** 2)))
NUMPY_OK["logaddexp2"] = lambda m: (jnp.logaddexp2(ZN, WN) if m is jnp
                                    else np.log2(np.exp2(ZN) + np.exp2(WN)))
NUMPY_OK.update({n: (lambda m, n=n: getattr(m, n)(MN)) for n in
                 ["fliplr", "trace", "diagonal", "tril", "triu", "rot90"]})


def _like_numpy(name, reference):
  """minijax.numpy's `name`, or `reference` where numpy has no complex version."""
  return lambda m: getattr(m, name)(ZN) if m is jnp else reference(ZN)


NUMPY_OK.update({n: _like_numpy(n, ref) for n, ref in [
    ("deg2rad", lambda z: z * np.pi / 180), ("radians", lambda z: z * np.pi / 180),
    ("rad2deg", lambda z: z * 180 / np.pi), ("degrees", lambda z: z * 180 / np.pi)]})
NUMPY_OK.update({
    "empty_like": lambda m: np.asarray(m.empty_like(ZN)).dtype == C64,
    "astype": lambda m: m.astype(ZN, np.complex64) if m is jnp else ZN,
    "matmul": lambda m: m.matmul(MN, MN),
    "einsum": lambda m: m.einsum("ij,jk->ik", MN, MN.T),
    "tensordot": lambda m: m.tensordot(MN, MN),
    "cov": lambda m: m.cov(MN),
    "corrcoef": lambda m: m.corrcoef(MN),
    "average": lambda m: m.average(ZN, weights=np.array([1.0, 2, 3, 4])),
    "var_axis": lambda m: m.var(MN, axis=0),
    "where": lambda m: m.where(_B, ZN, WN),
    "select": lambda m: m.select([_B], [ZN], WN),
    "piecewise": lambda m: m.piecewise(ZN, [_B], [lambda v: v * 2j, 1 - 1j]),
    "searchsorted": lambda m: m.searchsorted(_SORTED, ZN),
    "interp": lambda m: m.interp(np.array([0.5, 1.5]), np.array([0.0, 1, 2]),
                                            ZN[:3]),
    "cross": lambda m: m.cross(ZN[:3], WN[:3]),
    "linalg.norm": lambda m: m.linalg.norm(ZN),
    "linalg.norm_fro": lambda m: m.linalg.norm(MN),
    "linalg.norm_1": lambda m: m.linalg.norm(ZN, 1),
    "linalg.norm_inf": lambda m: m.linalg.norm(ZN, np.inf),
    "full": lambda m: m.full(2, 1 + 2j),
    "eye": lambda m: m.eye(2, dtype=C64),
    "arange": lambda m: m.arange(3, dtype=C64),
    "linspace": lambda m: m.linspace(0, 1 + 1j, 5),
    "astype_real": lambda m: m.asarray(ZN).astype(np.float32),
    "astype_int": lambda m: m.asarray(ZN * 3).astype(np.int32),
    "power_int": lambda m: m.power(ZN, 3),
    "angle_deg": lambda m: m.angle(ZN, deg=True),
    "round_decimals": lambda m: m.round(ZN * 13, 1),
    "isclose_tolerance": lambda m: m.isclose(ZN, ZN + 1e-6, atol=0, rtol=1e-5),
    "concatenate": lambda m: m.concatenate([ZN, WN]),
    "stack": lambda m: m.stack([ZN, WN], 1),
    "take": lambda m: m.take(ZN, np.array([3, 0])),
    "repeat": lambda m: m.repeat(ZN, 2),
    "tile": lambda m: m.tile(ZN, 2),
    "roll": lambda m: m.roll(ZN, 1),
    "pad": lambda m: m.pad(ZN, 1),
    "reshape": lambda m: m.reshape(ZN, (2, 2)),
    "moveaxis": lambda m: m.moveaxis(MN, 0, 1),
    "swapaxes": lambda m: m.swapaxes(MN, 0, 1),
    "expand_dims": lambda m: m.expand_dims(ZN, 0),
    "broadcast_to": lambda m: m.broadcast_to(ZN, (2, 4)),
    "split": lambda m: m.split(ZN, 2)[1],
    "take_along_axis": lambda m: m.take_along_axis(MN, np.array([[1, 0], [0, 0]]), 1),
    "delete": lambda m: m.delete(ZN, 1),
    "insert": lambda m: m.insert(ZN, 1, 5j),
    "nan_to_num_parts": lambda m: m.nan_to_num(np.array([complex(np.nan, 1), complex(2, np.inf)],
                                                       C64)),
    "isnan_parts": lambda m: m.isnan(np.array([complex(np.nan, 1), complex(2, np.nan), 1j], C64)),
    "unstack": lambda m: m.unstack(MN)[1],
    "matrix_transpose": lambda m: m.matrix_transpose(MN),
    "vecdot": lambda m: m.vecdot(ZN, WN),
    "trapezoid": lambda m: m.trapezoid(ZN),
    "trapezoid_x": lambda m: m.trapezoid(ZN, np.array([0.0, 0.5, 2, 3])),
    "isinf_parts": lambda m: m.isinf(np.array([complex(np.inf, 1), complex(2, -np.inf), 1j], C64)),
})


def _as_np(x):
  return np.asarray(x)


@pytest.mark.parametrize("name", list(NUMPY_OK))
def test_numpy_function_on_complex_matches_numpy(name):
  fn = NUMPY_OK[name]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
    got, want = _as_np(fn(jnp)), _as_np(fn(np))
  assert got.shape == np.shape(want)
  if np.iscomplexobj(want):
    assert np.iscomplexobj(got), got.dtype
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


# JAX bins complex samples in lexicographic order (numpy drops their imaginary parts):
# JAX 0.10.2's counts and edges
_ZH = (np.arange(6) + 1j * np.arange(6)[::-1]).astype(C64)
NUMPY_OK.update({
    "histogram": lambda m: m.histogram(_ZH, 3)[0] if m is jnp else np.array([2, 2, 2], C64),
    "histogram_bin_edges": lambda m: (m.histogram_bin_edges(_ZH, 3) if m is jnp else
                                      np.array([5j, 5 / 3 + 10j / 3, 10 / 3 + 5j / 3, 5], C64)),
    "histogram2d": lambda m: (m.histogram2d(_ZH, _ZH[::-1], bins=2)[1] if m is jnp else
                              np.array([5j, 2.5 + 2.5j, 5], C64)),
    "histogramdd": lambda m: (m.histogramdd(np.stack([_ZH, _ZH[::-1]], 1), bins=2)[0]
                              if m is jnp else np.array([[0, 3], [3, 0]])),
})


# Added with the rest of numpy's surface: complex operands, compared with numpy.
ZM = np.stack([ZN, WN, ZN * 2])  # a 3x4 complex matrix
NUMPY_OK.update({
    "array_equiv": _b("array_equiv"), "block": lambda m: m.block([[ZM, ZM]]),
    "compress": lambda m: m.compress(np.array([1, 0, 1]), ZM, axis=0),
    "extract": lambda m: m.extract(np.array([1, 0, 1, 1]), ZN),
    "cumulative_prod": lambda m: (m.cumulative_prod(ZN) if m is jnp else np.cumprod(ZN)),
    "diagflat": _u("diagflat"), "dsplit": lambda m: m.dsplit(ZM.reshape(3, 2, 2), 2),
    "geomspace": lambda m: m.geomspace(ZN[0], ZN[1], 4),
    "poly": _u("poly"), "polyadd": _b("polyadd"), "polysub": _b("polysub"),
    "polymul": _b("polymul"), "polyder": _u("polyder"), "polyint": _u("polyint"),
    "polydiv": _b("polydiv"), "vander": _u("vander"), "sort_complex": _u("sort_complex"),
    "trim_zeros": lambda m: m.trim_zeros(np.concatenate([[0j], ZN, [0j]])),
    "union1d": _b("union1d"), "setdiff1d": _b("setdiff1d"), "setxor1d": _b("setxor1d"),
    "intersect1d": lambda m: m.intersect1d(ZN, ZN[::-1]),
    "unique_values": lambda m: (m.unique_values(ZN) if m is jnp else np.unique(ZN)),
    "unique_counts": lambda m: (m.unique_counts(ZN)[1] if m is jnp
                                else np.unique(ZN, return_counts=True)[1]),
    "unique_inverse": lambda m: (m.unique_inverse(ZN)[1] if m is jnp
                                 else np.unique(ZN, return_inverse=True)[1]),
    "unique_all": lambda m: (m.unique_all(ZN)[2] if m is jnp
                             else np.unique(ZN, return_inverse=True)[1]),
    "matvec": lambda m: (m.matvec(ZM, WN) if m is jnp else ZM @ WN),
    "vecmat": lambda m: (m.vecmat(ZN[:3], ZM) if m is jnp else np.conj(ZN[:3]) @ ZM),
    "resize": lambda m: m.resize(ZN, (2, 3)), "rollaxis": lambda m: m.rollaxis(ZM, 1),
    "lexsort": lambda m: m.lexsort((ZN.real, ZN.imag)),
    "partition": lambda m: (m.partition(ZN.real, 1) if m is jnp
                            else np.sort(ZN.real)[[0, 1, 3, 2]]),
    "argpartition": lambda m: (m.argpartition(ZN.real, 1) if m is jnp
                               else np.argsort(ZN.real)[[0, 1, 3, 2]]),
    "fill_diagonal": lambda m: (m.fill_diagonal(ZM[:, :3], WN[0], inplace=False) if m is jnp
                                else np.where(np.eye(3, dtype=bool), WN[0], ZM[:, :3])),
    "put": lambda m: (m.put(ZN, np.array([1]), WN[:1], inplace=False) if m is jnp
                      else np.concatenate([ZN[:1], WN[:1], ZN[2:]])),
    "place": lambda m: (m.place(ZN, ZN.real > 0, WN[:1], inplace=False) if m is jnp
                        else np.where(ZN.real > 0, WN[0], ZN)),
    "put_along_axis": lambda m: (m.put_along_axis(ZM, np.zeros((3, 1), int), WN[0], axis=1,
                                                  inplace=False) if m is jnp
                                 else np.concatenate([np.full((3, 1), WN[0]), ZM[:, 1:]], 1)),
    "gradient": _u("gradient"),
    "polyfit": lambda m: m.polyfit(np.arange(4.0, dtype=np.float32), ZN, 1),
    "roots": lambda m: np.sort_complex(np.asarray(m.roots(ZN))),
})
# name -> (call, exception type): JAX 0.10.2 raises on these too (checked beside JAX)
NUMPY_RAISES = {
    "argmax": (_u("argmax"), TypeError), "argmin": (_u("argmin"), TypeError),
    "nanargmax": (_u("nanargmax"), TypeError), "nanargmin": (_u("nanargmin"), TypeError),
    "cbrt": (_u("cbrt"), TypeError), "ceil": (_u("ceil"), TypeError),
    "floor": (_u("floor"), TypeError), "trunc": (_u("trunc"), TypeError),
    "fix": (_u("fix"), TypeError), "signbit": (_u("signbit"), ValueError),
    "copysign": (_b("copysign"), TypeError), "floor_divide": (_b("floor_divide"), TypeError),
    "fmod": (_b("fmod"), TypeError), "remainder": (_b("remainder"), TypeError),
    "mod": (_b("mod"), TypeError), "divmod": (_b("divmod"), TypeError),
    "heaviside": (_b("heaviside"), TypeError), "hypot": (_b("hypot"), ValueError),
    "ldexp": (lambda m: m.ldexp(ZN, 2), ValueError),
    "frexp": (_u("frexp"), TypeError),
    "clip": (lambda m: m.clip(ZN, 0, 1), ValueError),
    "median": (_u("median"), ValueError),
    "quantile": (lambda m: m.quantile(ZN, 0.5), ValueError),
    "percentile": (lambda m: m.percentile(ZN, 50), ValueError),
    "bitwise_and": (_b("bitwise_and"), TypeError), "left_shift": (_b("left_shift"), TypeError),
    "bitwise_count": (_u("bitwise_count"), TypeError), "fabs": (_u("fabs"), TypeError),
    "isposinf": (_u("isposinf"), ValueError), "isneginf": (_u("isneginf"), ValueError),
    "modf": (_u("modf"), TypeError), "nextafter": (_b("nextafter"), TypeError),
    "spacing": (_u("spacing"), TypeError), "unwrap": (_u("unwrap"), TypeError),
    "nanmedian": (_u("nanmedian"), ValueError),
    "nanquantile": (lambda m: m.nanquantile(ZN, 0.5), ValueError),
    "nanpercentile": (lambda m: m.nanpercentile(ZN, 50), ValueError),
    "i0": (_u("i0"), TypeError),
}
# the array API's names, classified as the function each names
_ALIASES = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
            "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2",
            "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
            "bitwise_right_shift": "right_shift"}
NUMPY_RAISES.update({alias: ((_b if alias in ("atan2", "bitwise_left_shift") else _u)(alias),
                             NUMPY_RAISES[name][1])
                     for alias, name in _ALIASES.items() if name in NUMPY_RAISES})


@pytest.mark.parametrize("name", list(NUMPY_RAISES))
def test_numpy_function_without_complex_support_raises_naming_it(name):
  call, error = NUMPY_RAISES[name]
  with pytest.raises(error, match="complex"):
    call(jnp)


# Functions that take no array, or only integer or boolean arrays, or shapes.
_NO_COMPLEX_ARGUMENT = """arange broadcast_shapes can_cast diag_indices empty eye finfo full
identity indices issubdtype isdtype logspace meshgrid ndim ones printoptions promote_types result_type
shape size tri tril_indices triu_indices unravel_index zeros bitwise_not invert bitwise_or
bitwise_xor right_shift logical_not bincount digitize choose isscalar iscomplexobj isrealobj
vectorize frompyfunc apply_along_axis array_split hsplit vsplit hstack vstack dstack column_stack concat
permute_dims broadcast_arrays full_like bartlett blackman hamming hanning iterable ix_
diag_indices_from tril_indices_from triu_indices_from mask_indices ravel_multi_index
fromfunction apply_over_axes gcd lcm packbits unpackbits kaiser get_printoptions
set_printoptions array_repr array_str save savez load frombuffer fromstring fromfile fromiter
from_dlpack einsum_path""".split()
_NO_COMPLEX_ARGUMENT += [a for a, name in _ALIASES.items() if name in _NO_COMPLEX_ARGUMENT]


def test_every_numpy_function_is_classified_for_complex_arguments():
  import inspect
  names = {n for n in dir(jnp) if not n.startswith("_") and callable(getattr(jnp, n))
           and not inspect.isclass(getattr(jnp, n)) and not inspect.ismodule(getattr(jnp, n))}
  classified = set(NUMPY_OK) | set(NUMPY_RAISES) | set(_NO_COMPLEX_ARGUMENT)
  assert names - classified == set()


def test_array_api_names_are_classified_as_the_functions_they_name():
  for alias, name in _ALIASES.items():
    assert getattr(jnp, alias) is getattr(jnp, name), alias
    assert [alias in t for t in (NUMPY_OK, NUMPY_RAISES, _NO_COMPLEX_ARGUMENT)] == \
        [name in t for t in (NUMPY_OK, NUMPY_RAISES, _NO_COMPLEX_ARGUMENT)], alias


def test_array_methods_and_properties_of_complex_arrays():
  z = jnp.asarray(ZN)
  np.testing.assert_array_equal(z.real, ZN.real)
  np.testing.assert_array_equal(z.imag, ZN.imag)
  np.testing.assert_array_equal(z.conj(), ZN.conj())
  np.testing.assert_array_equal(z.conjugate(), ZN.conj())
  x = jnp.asarray(R)
  assert x.real is not None and x.imag.dtype == np.float32
  np.testing.assert_array_equal(x.imag, np.zeros_like(R))
  assert jnp.iscomplexobj(z) and not jnp.iscomplexobj(x) and jnp.isrealobj(x)
  assert minijax.jit(lambda a: a.imag * 2)(z).dtype == np.float32
  assert complex(jnp.asarray(C64(1 + 2j))) == 1 + 2j


def test_iscomplexobj_asks_scalar_types_and_keys_for_their_dtype_as_jax():
  """JAX reads `x.dtype` first: `jnp.complex64` the type is complex (optax's tests skip
  complex parameters with `jnp.iscomplexobj(dtype)`), a key array is not."""
  assert jnp.iscomplexobj(jnp.complex64) and jnp.iscomplexobj(jnp.complex128)
  assert not jnp.iscomplexobj(jnp.float32) and jnp.isrealobj(jnp.bfloat16)
  assert not jnp.iscomplexobj(None) and jnp.iscomplexobj([1j]) and jnp.iscomplexobj(1j)
  assert not jnp.iscomplexobj(minijax.random.key(0))
  assert minijax.jit(lambda a: jnp.iscomplexobj(a) + 0)(jnp.ones(2, C64)) == 1


def test_real_imag_conj_of_real_values_keep_their_dtype_as_jax():
  for x, dtype in ((np.float32(1), np.float32), (np.int32(3), np.int32)):
    assert jnp.real(x).dtype == dtype and jnp.imag(x).dtype == dtype
    assert jnp.conj(x).dtype == dtype
  assert jnp.angle(np.int32(-1)).dtype == np.float32
  np.testing.assert_allclose(jnp.angle(np.float32(-1.0)), np.pi)
  assert lax.conj(np.float32(1.0)).dtype == C64


def test_casting_complex_to_real_warns_as_numpy():
  with pytest.warns(np.exceptions.ComplexWarning):
    lax.convert_element_type(ZN, np.float32)


def test_complex128_with_x64(x64):
  z = np.array([1 + 1e-12j, 2 - 3j])
  out = jnp.exp(jnp.asarray(z)) * jnp.conj(z)
  assert out.dtype == np.complex128
  np.testing.assert_allclose(out, np.exp(z) * np.conj(z), rtol=1e-15)
  assert jnp.abs(jnp.asarray(z)).dtype == np.float64
  assert lax.complex(np.float64(1), np.float64(2)).dtype == np.complex128
