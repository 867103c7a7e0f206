"""Elementwise primitives: arithmetic, transcendental functions, comparisons, logic.

Binary ops take operands of equal dtype and of one shape, except that any of them may have
rank 0 (`utils.elementwise_shapes`; `minijax.numpy` promotes and broadcasts the rest
before it binds them); Python scalars are accepted and become rank-0 operands of the other
operand's dtype, keeping their weak type.  Each primitive's block holds every rule it has:
abstract eval (from the shape/dtype rules of `utils`), lowering, jvp, transpose when it is
linear, and batching (`defvectorized` for unary ops, `defbroadcasting` for n-ary ones).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.interpreters import ad, batching
from minijax.lax import accuracy as accuracy_lib
from minijax.lax import utils
from minijax.lowering import mlir

__all__ = [
    "population_count", "population_count_p", "square_p", "exp2", "exp2_p", "cbrt", "cbrt_p",
    "clz", "clz_p",
    "add", "add_any", "sub", "mul", "div", "rem", "neg", "max", "min", "pow", "integer_pow",
    "abs", "sign", "floor", "ceil", "round", "exp", "log", "log1p", "expm1", "sin", "cos",
    "tan", "tanh", "sqrt", "rsqrt", "logistic", "erf", "atan2", "is_finite", "square", "reciprocal",
    "eq", "ne", "lt", "le", "gt", "ge", "bitwise_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "not_", "and_", "or_", "xor", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "RoundingMethod",
    "add_p", "add_any_p", "sub_p", "mul_p", "div_p", "rem_p", "neg_p", "max_p", "min_p", "pow_p",
    "integer_pow_p", "abs_p", "sign_p", "floor_p", "ceil_p", "round_p", "exp_p", "log_p",
    "log1p_p", "expm1_p", "sin_p", "cos_p", "tan_p", "tanh_p", "sqrt_p", "rsqrt_p",
    "logistic_p", "erf_p", "atan2_p", "is_finite_p", "eq_p", "ne_p", "lt_p", "le_p", "gt_p", "ge_p",
    "not_p", "and_p", "or_p", "xor_p", "shift_left_p", "shift_right_arithmetic_p",
    "shift_right_logical_p",
]

def _coerce_scalars(*args):
  """Python scalars become rank-0 operands of the array operands' dtype, weakly typed
  only when that array is (the result is weak only if every operand is).  A scalar that
  dtype cannot hold (a float for an integer array, a complex for a real one, an int for a
  boolean one) is refused as JAX refuses it, never rounded."""
  if not any(isinstance(a, dtypes.PYTHON_SCALARS) for a in args):
    return args
  arrays = [a for a in args if not isinstance(a, dtypes.PYTHON_SCALARS)]
  if not arrays:
    return args
  aval = get_aval(arrays[0])
  from minijax.lax.structural import full
  for a in args:
    if isinstance(a, dtypes.PYTHON_SCALARS) and not _holds(aval.dtype, a):
      raise TypeError(
          f"lax operations require arguments of the same dtype, got {aval.dtype.name} and "
          f"the Python {type(a).__name__} {a!r}, which {aval.dtype.name} cannot hold; "
          "convert one explicitly, or use the jax.numpy function, which promotes.")
  return tuple(full((), a, aval.dtype, weak_type=aval.weak_type) if isinstance(a, dtypes.PYTHON_SCALARS)
               else a for a in args)


def _holds(dtype, scalar) -> bool:
  if isinstance(scalar, bool):
    return True
  if isinstance(scalar, int):
    return dtype != dtypes.bool_
  if isinstance(scalar, float):
    return dtypes.is_inexact(dtype)
  return np.issubdtype(dtype, np.complexfloating)


def _binop(name, accepted, what, mhlo_op, dtype_rule=None):
  prim = utils.standard_primitive(
      name, utils.elementwise_shapes(name),
      dtype_rule or utils.same_dtypes_accepting(name, accepted, what))
  batching.defbroadcasting(prim)
  mlir.register_lowering(prim, utils.nary_lowering(mhlo_op), splat_literals=True)
  return prim


def _unop(name, accepted, what, mhlo_op):
  prim = utils.standard_primitive(name, utils.elementwise_shapes(name),
                                  utils.same_dtypes_accepting(name, accepted, what))
  batching.defvectorized(prim)
  if mhlo_op is not None:
    mlir.register_lowering(prim, utils.nary_lowering(mhlo_op), splat_literals=True)
  return prim


def _accurate_unop(name, mhlo_op, accepted=None, nan_through=False, of_complex=None):
  """A unary op that takes JAX's `accuracy=` (see `minijax.lax.accuracy`), of floating
  point or complex operands unless `accepted` (a (predicate, description) pair) says;
  `nan_through`: see `utils.nan_through`; `of_complex`: the lowering rule for complex
  operands, where XLA's own operation is inexact."""
  prim = _unop(name, *(accepted or _inexact), None)
  op_name = mhlo_op.OPERATION_NAME

  def lowering(ctx, x, accuracy=None):
    if of_complex is not None and _is_complex(ctx.avals_in[0].dtype):
      return of_complex(ctx, x)
    out = accuracy_lib.annotate(mlir.emit_elementwise(ctx, op_name, [x]), accuracy)
    return utils.nan_through(ctx, x, out) if nan_through else out
  mlir.register_lowering(prim, lowering, splat_literals=True)
  return prim


def _linear_transpose(fns):
  """A transpose rule for a primitive linear in some arguments: `fns[i](ct, *args)` is the
  cotangent of argument i when it is the undefined (linear) one (summed to rank 0 for a
  rank-0 argument of a larger result)."""
  def rule(ct, *args, **params):
    out = []
    for fn, a in zip(fns, args):
      if not ad.is_undefined_primal(a):
        out.append(None)
      elif type(ct) is ad.Zero:
        out.append(ad.Zero(a.aval))
      elif fn is None:
        raise NotImplementedError("not linear in this argument")
      else:
        out.append(utils.unbroadcast(fn(ct, *args, **params), a.aval))
    return out
  return rule


def _zeros_like(x):
  from minijax.lax.structural import full
  aval = get_aval(x)
  return full(aval.shape, 0, aval.dtype)


def _ones_like(x):
  from minijax.lax.structural import full
  aval = get_aval(x)
  return full(aval.shape, 1, aval.dtype)


def _const(x, value):
  """`value` as an array shaped and typed like `x`."""
  from minijax.lax.structural import full
  aval = get_aval(x)
  return full(aval.shape, value, aval.dtype)


# ---- add
add_p = _binop("add", utils.is_number, utils.NUMBER_KINDS, mhlo.AddOp)
ad.defjvp(add_p, lambda g, x, y: g, lambda g, x, y: g)
ad.primitive_transposes[add_p] = _linear_transpose([lambda ct, x, y: ct, lambda ct, x, y: ct])


def add(x, y):
  return add_p.bind(*_coerce_scalars(x, y))


# ---- add_any: the sum of two tangents or cotangents (what autodiff accumulates with)
add_any_p = utils.standard_primitive(
    "add_any", utils.elementwise_shapes("add_any"),
    utils.same_dtypes_accepting("add_any", utils.any_dtype, ""))
batching.defbroadcasting(add_any_p)
mlir.register_lowering(add_any_p, utils.nary_lowering(mhlo.AddOp))
ad.primitive_jvps[add_any_p] = lambda primals, tangents: (
    add_any_p.bind(*primals), ad.add_tangents(*tangents))
ad.primitive_transposes[add_any_p] = lambda ct, x, y: [ct, ct]


def add_any(x, y):
  return add_any_p.bind(x, y)


# ---- sub
sub_p = _binop("sub", utils.is_number, utils.NUMBER_KINDS, mhlo.SubtractOp)
ad.defjvp(sub_p, lambda g, x, y: g, lambda g, x, y: neg(g))
ad.primitive_transposes[sub_p] = _linear_transpose([lambda ct, x, y: ct,
                                                    lambda ct, x, y: neg(ct)])


def sub(x, y):
  return sub_p.bind(*_coerce_scalars(x, y))


# ---- mul
mul_p = _binop("mul", utils.is_number, utils.NUMBER_KINDS, mhlo.MulOp)
ad.defjvp(mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))
ad.primitive_transposes[mul_p] = _linear_transpose([lambda ct, x, y: mul(ct, y),
                                                    lambda ct, x, y: mul(x, ct)])


def mul(x, y, *, out_dtype=None):
  """x * y; with `out_dtype`, both are converted to it first (the product of int8s as
  int16s, say), as XLA does it on the CPU."""
  x, y = _coerce_scalars(x, y)
  if out_dtype is not None:
    from minijax.lax.misc import convert_element_type
    x, y = convert_element_type(x, out_dtype), convert_element_type(y, out_dtype)
  return mul_p.bind(x, y)


# ---- div (integer division truncates toward zero, as in C)
div_p = _binop("div", utils.is_number, utils.NUMBER_KINDS, mhlo.DivOp)
ad.defjvp(div_p, lambda g, x, y: div(g, y),
          lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))
ad.primitive_transposes[div_p] = _linear_transpose([lambda ct, x, y: div(ct, y), None])


def div(x, y):
  return div_p.bind(*_coerce_scalars(x, y))


# ---- rem (sign of the dividend, as C's fmod); XLA has no complex remainder
rem_p = _binop("rem", lambda dt: utils.is_number(dt) and not _is_complex(dt),
               "integer, floating", mhlo.RemOp)
ad.defjvp(rem_p, lambda g, x, y: g,
          lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))))


def rem(x, y):
  return rem_p.bind(*_coerce_scalars(x, y))


# ---- neg
neg_p = _unop("neg", utils.is_number, utils.NUMBER_KINDS, mhlo.NegOp)
ad.deflinear(neg_p, lambda ct: [neg(ct)])


def neg(x):
  return neg_p.bind(x)


# ---- max / min: ties split the tangent evenly, as JAX does
def _balanced_eq(x, z, y):
  """1 where x is the selected value (0.5 on a tie with y), else 0, in x's dtype and the
  shape of the result z (x or y may have rank 0)."""
  from minijax.lax.misc import select_n
  one, half, zero = _const(z, 1), _const(z, 0.5), _const(z, 0)
  return select_n(eq(x, z), zero, select_n(eq(y, z), one, half))


def _minmax_lowering(which, op_class):
  """XLA's max/min, except that complex values compare lexicographically (real parts first),
  as numpy orders them; XLA's own ops compare real parts only."""
  plain = utils.nary_lowering(op_class)

  def rule(ctx, x, y):
    if not _is_complex(ctx.avals_in[0].dtype):
      return plain(ctx, x, y)
    from minijax.lax.complex_ops import lexicographic_select
    return lexicographic_select(*utils.broadcast_operands(ctx, (x, y)), which)
  return rule


def _is_complex(dtype) -> bool:
  return np.issubdtype(dtype, np.complexfloating)


max_p = _binop("max", utils.any_dtype, "", mhlo.MaxOp)
mlir.register_lowering(max_p, _minmax_lowering("max", mhlo.MaxOp), splat_literals=True)
ad.defjvp2(max_p, lambda g, out, x, y: mul(g, _balanced_eq(x, out, y)),
           lambda g, out, x, y: mul(g, _balanced_eq(y, out, x)))


def max(x, y):
  return max_p.bind(*_coerce_scalars(x, y))


min_p = _binop("min", utils.any_dtype, "", mhlo.MinOp)
mlir.register_lowering(min_p, _minmax_lowering("min", mhlo.MinOp), splat_literals=True)
ad.defjvp2(min_p, lambda g, out, x, y: mul(g, _balanced_eq(x, out, y)),
           lambda g, out, x, y: mul(g, _balanced_eq(y, out, x)))


def min(x, y):
  return min_p.bind(*_coerce_scalars(x, y))


# ---- pow (a floating point or complex base; an exponent of its dtype, or of an integer one)
def _pow_dtype(x, y):
  dtypes.check_not_float0("pow", [x.dtype, y.dtype])
  if dtypes.is_inexact(x.dtype) and (y.dtype == x.dtype or dtypes.is_integer(y.dtype)):
    return x.dtype
  raise TypeError("the first argument to pow must have an inexact dtype (float or complex), "
                  "and the second argument must have an inexact or integer dtype, and two "
                  f"inexact dtypes must match, but got {x.dtype} and {y.dtype} respectively.")


def _pow_lowering(ctx, x, y):
  (x_aval, y_aval), (out,) = ctx.avals_in, ctx.avals_out
  if y_aval.dtype != out.dtype:  # an integer exponent, converted to the base's dtype
    y_aval = y_aval.update(dtype=out.dtype)
    y = mhlo.ConvertOp(mlir.aval_to_ir_type(y_aval), y).result
    ctx = dataclasses.replace(ctx, avals_in=[x_aval, y_aval])
  return utils.nary_lowering(mhlo.PowOp)(ctx, x, y)


pow_p = utils.standard_primitive("pow", utils.elementwise_shapes("pow"), _pow_dtype)
batching.defbroadcasting(pow_p)
mlir.register_lowering(pow_p, _pow_lowering, splat_literals=True)


def _pow_jvp_x(g, out, x, y):
  # y * x**(y-1), written so that x == 0 with y == 0 gives 0 rather than nan
  from minijax.lax.misc import convert_element_type, select_n
  x, y = utils.broadcast_elementwise("pow", x, y)  # (to the result's shape)
  y = convert_element_type(y, get_aval(out).dtype)
  safe = select_n(eq(y, _zeros_like(y)), pow(x, sub(y, _ones_like(y))), _zeros_like(out))
  return mul(g, mul(y, safe))


def _pow_jvp_y(g, out, x, y):
  from minijax.lax.misc import select_n
  x, _ = utils.broadcast_elementwise("pow", x, y)
  zero = eq(x, _zeros_like(x))
  safe_log = log(select_n(zero, x, _ones_like(x)))
  return mul(g, select_n(zero, mul(out, safe_log), _zeros_like(out)))


ad.defjvp2(pow_p, _pow_jvp_x, _pow_jvp_y)


def pow(x, y):
  return pow_p.bind(*_coerce_scalars(x, y))


# ---- integer_pow (static integer exponent, lowered to repeated squaring)
integer_pow_p = utils.standard_primitive(
    "integer_pow", utils.elementwise_shapes("integer_pow"),
    utils.same_dtypes_accepting("integer_pow", utils.is_number, utils.NUMBER_KINDS))
batching.defvectorized(integer_pow_p)


def _integer_pow_lowering(ctx, x, *, y):
  acc, base, n = None, x, abs_int(y)
  while n:
    if n & 1:
      acc = base if acc is None else mhlo.MulOp(acc, base).result
    n >>= 1
    if n:
      base = mhlo.MulOp(base, base).result
  if acc is None:
    acc = mlir.ir_constant(np.ones(ctx.avals_out[0].shape, ctx.avals_out[0].dtype))
  if y < 0:
    one = mlir.ir_constant(np.ones(ctx.avals_out[0].shape, ctx.avals_out[0].dtype))
    acc = mhlo.DivOp(one, acc).result
  return acc


def abs_int(n: int) -> int:
  return n if n >= 0 else -n


mlir.register_lowering(integer_pow_p, _integer_pow_lowering)


def _integer_pow_jvp(g, x, *, y):
  if y == 0:
    return _zeros_like(g)
  if y == 1:
    return g
  aval = get_aval(x)
  if aval.weak_type:  # a weak rank-0 literal, as in JAX's jaxprs (the tangent stays weak)
    from minijax.lax.structural import full
    factor = full((), y, aval.dtype, weak_type=True)
  else:
    factor = np.array(y, aval.dtype)  # a rank-0 literal in the jaxpr, as in JAX's
  return mul(g, mul(factor, x if y == 2 else integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


def integer_pow(x, y: int):
  if not isinstance(y, (int, np.integer)):
    raise TypeError(f"integer_pow requires a static Python int exponent, got {type(y).__name__}")
  aval = get_aval(x)
  if y < 0 and dtypes.is_integer(aval.dtype):
    raise TypeError(f"Integers cannot be raised to negative powers, got "
                    f"integer_pow({aval}, {int(y)})")
  return integer_pow_p.bind(x, y=int(y))


def _square_of_complex(z):
  """(a + ib)^2 = (a - b)(a + b) + 2abi: exact 0 real parts where |a| = |b| (x * x made
  inf - inf of them once a^2 overflows)."""
  from minijax.lax.complex_ops import complex, imag, real
  a, b = real(z), imag(z)
  return complex(mul(sub(a, b), add(a, b)), mul(_const(a, 2), mul(a, b)))


_square_of_complex_rule = utils.lowering_from_function(_square_of_complex)


def _square_lowering(ctx, x):
  if _is_complex(ctx.avals_in[0].dtype):
    return _square_of_complex_rule(ctx, x)
  return mhlo.MulOp(x, x).result


square_p = _unop("square", utils.is_number, utils.NUMBER_KINDS, None)
mlir.register_lowering(square_p, _square_lowering, splat_literals=True)
ad.defjvp(square_p, lambda g, x: mul(g, mul(_const(x, 2), x)))


def square(x):
  return square_p.bind(x)


def reciprocal(x):
  return integer_pow(x, -1)


# ---- abs (of a complex number: its modulus, a real value)
def _abs_dtype(x):
  if np.issubdtype(x.dtype, np.complexfloating):
    return np.dtype(np.float64 if x.dtype == dtypes.complex128 else np.float32)
  if x.dtype == dtypes.bool_ or np.issubdtype(x.dtype, np.unsignedinteger):
    raise TypeError(f"abs does not accept dtype {x.dtype.name} ({x.str_short()}); it accepts "
                    "signed integers, floating point and complex numbers")
  return x.dtype


abs_p = utils.standard_primitive("abs", lambda x: x.shape, _abs_dtype)
batching.defvectorized(abs_p)
mlir.register_lowering(abs_p, utils.nary_lowering(mhlo.AbsOp), splat_literals=True)


def _abs_jvp(g, out, x):
  from minijax.lax.misc import select_n
  if not _is_complex(get_aval(x).dtype):  # the slope at 0 is 1, as JAX's
    return select_n(ge(x, _zeros_like(x)), neg(g), g)
  # d|z| = Re(conj(z) dz) / |z|, and 0 at z = 0 (JAX's choice)
  from minijax.lax.complex_ops import complex, conj, real
  zero = eq(out, _zeros_like(out))
  safe = select_n(zero, out, _ones_like(out))
  return real(mul(g, div(conj(x), complex(safe, _zeros_like(safe)))))


ad.defjvp2(abs_p, _abs_jvp)


def abs(x):
  return abs_p.bind(x)


# ---- sign
sign_p = _unop("sign", utils.is_number, utils.NUMBER_KINDS, None)


def _sign_lowering(ctx, x):
  aval = ctx.avals_in[0]
  if dtypes.is_integer(aval.dtype) and not np.issubdtype(aval.dtype, np.signedinteger):
    zero = mlir.ir_constant(np.zeros(aval.shape, aval.dtype))
    one = mlir.ir_constant(np.ones(aval.shape, aval.dtype))
    is_zero = _compare_ir(x, zero, "EQ", aval.dtype)
    return mhlo.SelectOp(is_zero, zero, one).result
  return mhlo.SignOp(x).result


mlir.register_lowering(sign_p, _sign_lowering)
ad.defjvp(sign_p, lambda g, x: _zeros_like(g))


def sign(x):
  return sign_p.bind(x)


# ---- floor, ceil, round: piecewise constant, zero derivative
floor_p = _unop("floor", utils.is_float, "floating", mhlo.FloorOp)
ad.defjvp(floor_p, lambda g, x: _zeros_like(g))


def floor(x):
  return floor_p.bind(x)


ceil_p = _unop("ceil", utils.is_float, "floating", mhlo.CeilOp)
ad.defjvp(ceil_p, lambda g, x: _zeros_like(g))


def ceil(x):
  return ceil_p.bind(x)


class RoundingMethod:
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


round_p = _unop("round", utils.is_float, "floating", None)
mlir.register_lowering(round_p, lambda ctx, x, *, rounding_method: (
    mhlo.RoundNearestEvenOp(x) if rounding_method == RoundingMethod.TO_NEAREST_EVEN
    else mhlo.RoundOp(x)).result)
ad.defjvp(round_p, lambda g, x, **_: _zeros_like(g))


def round(x, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO):
  return round_p.bind(x, rounding_method=int(rounding_method))


# ---- exp, log, log1p, expm1
_inexact = (utils.is_inexact, "floating, complexfloating")

exp_p = _accurate_unop("exp", mhlo.ExpOp, nan_through=True)
ad.defjvp2(exp_p, lambda g, out, x, **_: mul(g, out))


def exp(x, *, accuracy=None):
  return exp_p.bind(x, **accuracy_lib.params(accuracy))


log_p = _accurate_unop("log", mhlo.LogOp)
ad.defjvp(log_p, lambda g, x, **_: div(g, x))


def log(x, *, accuracy=None):
  return log_p.bind(x, **accuracy_lib.params(accuracy))


def _as_stablehlo(ctx, x, *, name):
  # The StableHLO op: XLA's conversion of it to HLO expands the complex case into an accurate
  # algorithm (its complex math expander), which it does not do for the MHLO op (whose
  # complex sqrt gave -4.4e-8 + 1j for sqrt(-1), and whose log1p(-1 + 0j) gave 0).
  return mlir.emit_elementwise(ctx, f"stablehlo.{name}", [x])


log1p_p = _accurate_unop("log1p", mhlo.Log1pOp,
                         of_complex=functools.partial(_as_stablehlo, name="log_plus_one"))
ad.defjvp(log1p_p, lambda g, x, **_: div(g, add(x, _ones_like(x))))


def log1p(x, *, accuracy=None):
  return log1p_p.bind(x, **accuracy_lib.params(accuracy))


expm1_p = _accurate_unop("expm1", mhlo.Expm1Op)
ad.defjvp2(expm1_p, lambda g, out, x, accuracy=None: (
    mul(g, exp(x, accuracy=accuracy)) if accuracy is accuracy_lib.AccuracyMode.HIGHEST
    else mul(g, add(out, _ones_like(out)))))


def expm1(x, *, accuracy=None):
  return expm1_p.bind(x, **accuracy_lib.params(accuracy))


exp2_p = utils.standard_primitive("exp2", utils.elementwise_shapes("exp2"),
                                  utils.same_dtypes_accepting("exp2", *_inexact))
batching.defvectorized(exp2_p)
ad.defjvp2(exp2_p, lambda g, out, x, **_: mul(log(_const(x, 2)), mul(g, out)))


def _exp2_lowering(ctx, x, accuracy=None):
  # (XLA has no exp2: e ** (x log 2), as JAX lowers it)
  ln2 = mlir.ir_constant(np.full(ctx.avals_in[0].shape, np.log(2), ctx.avals_in[0].dtype))
  out = accuracy_lib.annotate(mhlo.ExpOp(mhlo.MulOp(ln2, x).result).result, accuracy)
  return utils.nan_through(ctx, x, out)


mlir.register_lowering(exp2_p, _exp2_lowering, splat_literals=True)


def exp2(x, *, accuracy=None):
  """2 ** x, elementwise."""
  return exp2_p.bind(x, **accuracy_lib.params(accuracy))


# ---- cbrt
cbrt_p = _accurate_unop("cbrt", mhlo.CbrtOp, (utils.is_float, "floating"))
ad.defjvp2(cbrt_p, lambda g, out, x, **_: mul(g, mul(_const(x, 1 / 3), integer_pow(out, -2))))


def cbrt(x, *, accuracy=None):
  """The real cube root, elementwise."""
  return cbrt_p.bind(x, **accuracy_lib.params(accuracy))


# ---- sin, cos, tan, tanh
def _sinh_cosh(b):
  """sinh and cosh of real `b` from expm1: exact for tiny `b` (exp(b) - exp(-b) cancels)."""
  up, down = expm1(b), expm1(neg(b))
  two = _const(b, 2)
  return div(sub(up, down), two), div(add(add(up, down), two), two)


def _sin_of_complex(z):
  """sin(a + ib) = sin a cosh b + i cos a sinh b: XLA's complex sine loses a tiny b (sin(1e-20j)
  was 0) and makes NaN of 0 * inf where a is 0 and b is large; this is JAX's construction."""
  from minijax.lax.complex_ops import complex, imag, real
  from minijax.lax.misc import select
  a, b = real(z), imag(z)
  sinh_b, cosh_b = _sinh_cosh(b)
  zero = eq(a, _const(a, 0))
  return complex(select(zero, a, mul(sin(a), cosh_b)), mul(cos(a), sinh_b))


def _cos_of_complex(z):
  """cos(a + ib) = cos a cosh b - i sin a sinh b (see `_sin_of_complex`)."""
  from minijax.lax.complex_ops import complex, imag, real
  from minijax.lax.misc import select
  a, b = real(z), imag(z)
  sinh_b, cosh_b = _sinh_cosh(b)
  zero = eq(a, _const(a, 0))
  im = select(zero, select(lt(b, _const(b, 0)), a, neg(a)), neg(mul(sin(a), sinh_b)))
  return complex(mul(cos(a), cosh_b), im)


sin_p = _accurate_unop("sin", mhlo.SineOp,
                       of_complex=utils.lowering_from_function(_sin_of_complex))
ad.defjvp(sin_p, lambda g, x, accuracy=None: mul(g, cos(x, accuracy=accuracy)))


def sin(x, *, accuracy=None):
  return sin_p.bind(x, **accuracy_lib.params(accuracy))


cos_p = _accurate_unop("cos", mhlo.CosineOp,
                       of_complex=utils.lowering_from_function(_cos_of_complex))
ad.defjvp(cos_p, lambda g, x, accuracy=None: neg(mul(g, sin(x, accuracy=accuracy))))


def cos(x, *, accuracy=None):
  return cos_p.bind(x, **accuracy_lib.params(accuracy))


tan_p = _accurate_unop("tan", mhlo.TanOp)
ad.defjvp2(tan_p, lambda g, out, x, **_: mul(g, add(_const(x, 1), square(out))))


def tan(x, *, accuracy=None):
  return tan_p.bind(x, **accuracy_lib.params(accuracy))


tanh_p = _accurate_unop("tanh", mhlo.TanhOp)
def _tanh_jvp(g, out, x, accuracy=None):
  if accuracy is accuracy_lib.AccuracyMode.HIGHEST:  # 4 logistic(2x) logistic(-2x)
    return mul(g, mul(_const(x, 4), mul(logistic(mul(_const(x, 2), x), accuracy=accuracy),
                                        logistic(mul(_const(x, -2), x), accuracy=accuracy))))
  return mul(add(g, mul(g, out)), sub(_const(x, 1), out))  # (g + g tanh)(1 - tanh)


ad.defjvp2(tanh_p, _tanh_jvp)


def tanh(x, *, accuracy=None):
  return tanh_p.bind(x, **accuracy_lib.params(accuracy))


# ---- sqrt, rsqrt, logistic
sqrt_p = _accurate_unop("sqrt", mhlo.SqrtOp,
                        of_complex=functools.partial(_as_stablehlo, name="sqrt"))
ad.defjvp2(sqrt_p, lambda g, out, x, **_: mul(g, div(_const(x, 0.5), out)))


def sqrt(x, *, accuracy=None):
  return sqrt_p.bind(x, **accuracy_lib.params(accuracy))


rsqrt_p = _accurate_unop("rsqrt", mhlo.RsqrtOp)
ad.defjvp2(rsqrt_p, lambda g, out, x, **_: mul(g, mul(_const(out, -0.5), div(out, x))))


def rsqrt(x, *, accuracy=None):
  return rsqrt_p.bind(x, **accuracy_lib.params(accuracy))


logistic_p = _accurate_unop("logistic", mhlo.LogisticOp)
ad.defjvp2(logistic_p, lambda g, out, x, accuracy=None: (
    mul(g, mul(out, logistic(neg(x), accuracy=accuracy)))
    if accuracy is accuracy_lib.AccuracyMode.HIGHEST
    else mul(g, mul(out, sub(_ones_like(out), out)))))


def logistic(x, *, accuracy=None):
  return logistic_p.bind(x, **accuracy_lib.params(accuracy))


# ---- erf
erf_p = _unop("erf", utils.is_float, "floating", mhlo.ErfOp)
ad.defjvp(erf_p, lambda g, x: mul(_const(x, 2 / np.sqrt(np.pi)), mul(g, exp(neg(square(x))))))


def erf(x):
  return erf_p.bind(x)


# ---- atan2
atan2_p = _binop("atan2", *_inexact, mhlo.Atan2Op)
ad.defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
          lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))


def atan2(x, y):
  return atan2_p.bind(*_coerce_scalars(x, y))


# ---- is_finite
def _is_finite_dtype(x):
  if not utils.is_float(x.dtype):
    utils.reject_dtype("is_finite", x.dtype, "floating")
  return dtypes.bool_


is_finite_p = utils.standard_primitive("is_finite", lambda x: x.shape, _is_finite_dtype,
                                       lambda x: False)
batching.defvectorized(is_finite_p)
mlir.register_lowering(is_finite_p, utils.nary_lowering(mhlo.IsFiniteOp),
                       splat_literals=True)
ad.defjvp(is_finite_p, None)


def is_finite(x):
  return is_finite_p.bind(x)


# ---- comparisons: bool results, not differentiable
def _compare_type(dtype) -> str:
  if utils.is_inexact(dtype):
    return "FLOAT"
  if np.issubdtype(dtype, np.unsignedinteger) or dtype == dtypes.bool_:
    return "UNSIGNED"
  return "SIGNED"


def _compare_ir(x, y, direction: str, dtype):
  return mhlo.CompareOp(x, y, mhlo.ComparisonDirectionAttr.get(direction),
                        compare_type=mhlo.ComparisonTypeAttr.get(_compare_type(dtype))).result


def _comparison(name, direction, accepted=utils.any_dtype, what=""):
  same_dtype = utils.same_dtypes_accepting(name, accepted, what)
  prim = utils.standard_primitive(
      name, utils.elementwise_shapes(name),
      lambda *avals, **_: (same_dtype(*avals), dtypes.bool_)[1], lambda *a, **_: False)
  batching.defbroadcasting(prim)
  mlir.register_lowering(prim, lambda ctx, *args: _compare_ir(
      *utils.broadcast_operands(ctx, args), direction, ctx.avals_in[0].dtype),
      splat_literals=True)
  ad.defjvp(prim, None, None)
  return prim


def _no_complex(dtype):
  return not np.issubdtype(dtype, np.complexfloating)


eq_p = _comparison("eq", "EQ")
ne_p = _comparison("ne", "NE")
lt_p = _comparison("lt", "LT", _no_complex, "real numbers")
le_p = _comparison("le", "LE", _no_complex, "real numbers")
gt_p = _comparison("gt", "GT", _no_complex, "real numbers")
ge_p = _comparison("ge", "GE", _no_complex, "real numbers")


def eq(x, y):
  return eq_p.bind(*_coerce_scalars(x, y))


def ne(x, y):
  return ne_p.bind(*_coerce_scalars(x, y))


def lt(x, y):
  return lt_p.bind(*_coerce_scalars(x, y))


def le(x, y):
  return le_p.bind(*_coerce_scalars(x, y))


def gt(x, y):
  return gt_p.bind(*_coerce_scalars(x, y))


def ge(x, y):
  return ge_p.bind(*_coerce_scalars(x, y))


# ---- logical and bitwise ops (bool or integer): not differentiable
_int_or_bool = (utils.is_int_or_bool, "integer, bool")

not_p = _unop("not", *_int_or_bool, mhlo.NotOp)
ad.defjvp(not_p, None)


def bitwise_not(x):
  return not_p.bind(x)


population_count_p = _unop("population_count", utils.is_integer, "integer",
                           mhlo.PopulationCountOp)
ad.defjvp(population_count_p, None)


def population_count(x):
  """The number of bits set in each element of the integer `x`."""
  return population_count_p.bind(x)


clz_p = _unop("clz", utils.is_integer, "integer", mhlo.ClzOp)
ad.defjvp(clz_p, None)


def clz(x):
  """The number of leading zero bits of each element of the integer `x`."""
  return clz_p.bind(x)


and_p = _binop("and", *_int_or_bool, mhlo.AndOp)
ad.defjvp(and_p, None, None)
or_p = _binop("or", *_int_or_bool, mhlo.OrOp)
ad.defjvp(or_p, None, None)
xor_p = _binop("xor", *_int_or_bool, mhlo.XorOp)
ad.defjvp(xor_p, None, None)


def bitwise_and(x, y):
  return and_p.bind(*_coerce_scalars(x, y))


def bitwise_or(x, y):
  return or_p.bind(*_coerce_scalars(x, y))


def bitwise_xor(x, y):
  return xor_p.bind(*_coerce_scalars(x, y))


not_, and_, or_, xor = bitwise_not, bitwise_and, bitwise_or, bitwise_xor

_ints = (utils.is_integer, "integer")
shift_left_p = _binop("shift_left", *_ints, mhlo.ShiftLeftOp)
shift_right_arithmetic_p = _binop("shift_right_arithmetic", *_ints, mhlo.ShiftRightArithmeticOp)
shift_right_logical_p = _binop("shift_right_logical", *_ints, mhlo.ShiftRightLogicalOp)
for _p in (shift_left_p, shift_right_arithmetic_p, shift_right_logical_p):
  ad.defjvp(_p, None, None)


def shift_left(x, y):
  return shift_left_p.bind(*_coerce_scalars(x, y))


def shift_right_arithmetic(x, y):
  return shift_right_arithmetic_p.bind(*_coerce_scalars(x, y))


def shift_right_logical(x, y):
  return shift_right_logical_p.bind(*_coerce_scalars(x, y))
