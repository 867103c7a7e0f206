"""Elementwise numpy functions: promotion and broadcasting, then lax primitives.

Where numpy and XLA disagree the numpy meaning is built from lax ops: floor division and
`remainder` round toward minus infinity (XLA truncates), `true_divide` of integers gives
floats, `add` / `multiply` of bools are logical or / and, integer `power` is exponentiation
by squaring, and `round` rounds halves to even.

Complex values: comparisons (`less`, ...) order them lexicographically as numpy does, and
`round`/`rint` round both parts; `arctan2` continues to complex values as JAX's does.
Functions that have no meaning for complex values raise a TypeError or ValueError naming
the function, as JAX's do, instead of returning a wrong number.
"""
from __future__ import annotations

import operator

import ml_dtypes
import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy import _util
from minijax.numpy._util import promote_and_broadcast as _pb
from minijax.numpy.complex_numbers import (conj, conjugate, imag, lexicographic,  # noqa: F401
                                           real, reject_complex)

def _is_bool(x):
  return _util.dtype(x) == dtypes.bool_


def _is_int(x):
  return dtypes.is_integer(_util.dtype(x))


def _binary(name, fn, inexact=False, keep_scalars=False, real_only=None):
  """A binary ufunc; `keep_scalars` when `fn` only binds elementwise lax ops (which take a
  rank-0 operand as it is) so Python scalars and rank-0 arrays are not broadcast;
  `real_only` (TypeError or ValueError) is raised for complex operands."""
  def impl(x1, x2):
    a, b = _pb(name, x1, x2, inexact=inexact, keep_scalars=keep_scalars)
    if real_only is not None:
      reject_complex(name, a, error=real_only)
    return fn(a, b)
  impl.__name__ = name
  run = _util.compiled_when_eager()(impl)

  def ufunc(x1, x2, /):
    return run(x1, x2)
  ufunc.__name__ = ufunc.__qualname__ = name
  ufunc.__doc__ = f"numpy.{name} with JAX's dtype promotion and numpy broadcasting."
  return ufunc


def _unary(name, fn, inexact=False, real_only=None):
  def impl(x):
    (a,) = _util.promote_inexact(name, x) if inexact else _util.promote(name, x)
    if real_only is not None:
      reject_complex(name, a, error=real_only)
    return fn(a)
  impl.__name__ = name
  run = _util.compiled_when_eager()(impl)

  def ufunc(x, /):
    return run(x)
  ufunc.__name__ = ufunc.__qualname__ = name
  ufunc.__doc__ = f"numpy.{name}."
  return ufunc


def _add(a, b):
  return lax.bitwise_or(a, b) if _is_bool(a) else lax.add(a, b)


def _multiply(a, b):
  return lax.bitwise_and(a, b) if _is_bool(a) else lax.mul(a, b)


def _subtract(a, b):
  if _is_bool(a):
    raise TypeError("subtract: numpy boolean subtract is not supported; use logical_xor")
  return lax.sub(a, b)


add = _binary("add", _add, keep_scalars=True)
subtract = _binary("subtract", _subtract, keep_scalars=True)
multiply = _binary("multiply", _multiply, keep_scalars=True)
true_divide = _binary("true_divide", lax.div, inexact=True, keep_scalars=True)
divide = true_divide


def _as_int_if_bool(a):
  return lax.convert_element_type(a, np.int32) if _is_bool(a) else a


def _floor_divide(a, b):
  a, b = _as_int_if_bool(a), _as_int_if_bool(b)
  if _is_int(a):
    q = lax.div(a, b)
    if np.issubdtype(_util.dtype(a), np.unsignedinteger):
      return q
    r = lax.rem(a, b)
    zero = lax.full(_util.shape(r), 0, _util.dtype(r))
    # rounded toward zero: one less where the signs differ and something remains (JAX's
    # rule, which also fixes what a division by zero gives: -1, or -2 beside a nonzero)
    adjust = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.sign(a), lax.sign(b)))
    return lax.select(adjust, lax.sub(q, lax.full(_util.shape(q), 1, _util.dtype(q))), q)
  return lax.floor(lax.div(a, b))


def _nonzero_divisor(b):
  """Integer divisors with 0 read as 1 (so x % 0 is 0, as in JAX)."""
  if not _is_int(b):
    return b
  return lax.select(lax.eq(b, lax.full_like(b, 0)), lax.full_like(b, 1), b)


def _remainder(a, b):
  a, b = _as_int_if_bool(a), _nonzero_divisor(_as_int_if_bool(b))
  r = lax.rem(a, b)
  zero = lax.full(_util.shape(r), 0, _util.dtype(r))
  adjust = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(b, zero)))
  return lax.select(adjust, lax.add(r, b), r)


floor_divide = _binary("floor_divide", _floor_divide, real_only=TypeError)
remainder = _binary("remainder", _remainder, real_only=TypeError)
mod = remainder


def fmod(x1, x2, /):
  a, b = _pb("fmod", x1, x2)
  reject_complex("fmod", a)
  return lax.rem(_as_int_if_bool(a), _nonzero_divisor(_as_int_if_bool(b)))


def divmod(x1, x2, /):
  return floor_divide(x1, x2), remainder(x1, x2)


def _int_power(a, b):
  """a ** b for integer arrays, by squaring over the bits of b (negative b gives 0 unless
  |a| == 1, as integer division would)."""
  dt = _util.dtype(a)
  shp = _util.shape(a)
  one = lax.full(shp, 1, dt)
  zero = lax.full(shp, 0, dt)
  acc, base, e = one, a, b
  bits = dt.itemsize * 8
  for _ in range(bits):
    acc = lax.select(lax.ne(lax.bitwise_and(e, one), zero), lax.mul(acc, base), acc)
    base = lax.mul(base, base)
    e = lax.shift_right_logical(e, one)
  if np.issubdtype(dt, np.signedinteger):
    neg = lax.lt(b, zero)
    minus_one = lax.neg(one)
    inv = lax.select(lax.eq(a, one), one,
                     lax.select(lax.eq(a, minus_one), lax.select(
                         lax.eq(lax.bitwise_and(b, one), zero), one, minus_one), zero))
    acc = lax.select(neg, inv, acc)
  return acc


def _static_exponent(x2) -> int | None:
  """`x2` as an int when it is a concrete integer scalar: JAX then computes `x1 ** x2` by
  `integer_pow` (multiplications, which refuse negative powers of integers)."""
  if isinstance(x2, (int, np.integer, np.bool_)):
    return int(x2)
  if (isinstance(x2, (float, complex)) or _util.ndim(x2) != 0
      or not (_is_int(x2) or _is_bool(x2))):
    return None
  value = _util.concrete_value(x2)
  return None if value is None else int(value)


def power(x1, x2, /):
  _util.check("power", x1, x2)
  exponent = _static_exponent(x2)
  if exponent is not None:
    (a,) = _util.promote("power", x1)
    return lax.integer_pow(_as_int_if_bool(a), exponent)
  a, b = _pb("power", x1, x2, keep_scalars=True)  # (a rank-0 exponent stays a literal)
  if _is_bool(a) or _is_int(a):
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    a, b = (_util.broadcast_to(_as_int_if_bool(v), shape) for v in (a, b))
    return _int_power(a, b)
  return lax.pow(a, b)


pow = power


def _max(a, b):
  return lax.bitwise_or(a, b) if _is_bool(a) else lax.max(a, b)


def _min(a, b):
  return lax.bitwise_and(a, b) if _is_bool(a) else lax.min(a, b)


maximum = _binary("maximum", _max, keep_scalars=True)
minimum = _binary("minimum", _min, keep_scalars=True)


def _fmax(a, b):
  """The larger, NaNs ignored; a tie goes to `b` (whose side gets the derivative, as in
  JAX)."""
  if not dtypes.is_inexact(_util.dtype(a)):
    return _max(a, b)
  if np.issubdtype(_util.dtype(a), np.complexfloating):
    return lax.select(lax.ne(b, b), a, lax.select(lax.ne(a, a), b, lax.max(a, b)))
  return lax.select(lax.bitwise_or(lax.gt(a, b), lax.ne(b, b)), a, b)


def _fmin(a, b):
  """The smaller, NaNs ignored; a tie goes to `b`."""
  if not dtypes.is_inexact(_util.dtype(a)):
    return _min(a, b)
  if np.issubdtype(_util.dtype(a), np.complexfloating):
    return lax.select(lax.ne(b, b), a, lax.select(lax.ne(a, a), b, lax.min(a, b)))
  return lax.select(lax.bitwise_or(lax.lt(a, b), lax.ne(b, b)), a, b)


fmax = _binary("fmax", _fmax)
fmin = _binary("fmin", _fmin)
def _arctan2(y, x):
  """atan2, and for complex values JAX's continuation: -i log((x + i y) / sqrt(x^2 + y^2))."""
  if not np.issubdtype(_util.dtype(y), np.complexfloating):
    return lax.atan2(y, x)
  i = lax.full((), 1j, _util.dtype(y))
  z = lax.add(x, lax.mul(i, y))
  radius = lax.sqrt(lax.add(lax.mul(x, x), lax.mul(y, y)))
  return lax.mul(lax.neg(i), lax.log(lax.div(z, radius)))


arctan2 = _binary("arctan2", _arctan2, inexact=True)


def _logaddexp_value(a, b):
  # JAX's formula (so softplus and friends agree to the bit): max + log1p(exp(-|a - b|)),
  # and a + b where a - b is NaN (a NaN, or infinities of one sign).  Complex operands:
  # the larger (by real part, then imaginary) plus log1p(exp(the other - it)), the phase
  # brought back into [-pi, pi).
  if dtypes.issubdtype(_util.dtype(a), np.complexfloating):
    amax = lax.select(_complex_greater_equal(a, b), a, b)
    other = lax.sub(lax.add(a, b), amax)
    out = lax.add(amax, lax.log1p(lax.exp(lax.sub(other, amax))))
    shifted = lax.add(lax.imag(out), lax.full_like(lax.imag(out), np.pi))
    two_pi = lax.full_like(shifted, 2 * np.pi)
    wrapped = lax.sub(shifted, lax.mul(two_pi, lax.floor(lax.div(shifted, two_pi))))
    return lax.complex(lax.real(out), lax.sub(wrapped, lax.full_like(shifted, np.pi)))
  delta = lax.sub(a, b)
  out = lax.add(lax.max(a, b), lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
  return lax.select(lax.ne(delta, delta), lax.add(a, b), out)


def _finite(x):
  """`x` with +inf read as 0 (in the exponents of the tangents' weights)."""
  return lax.select(lax.eq(x, lax.full_like(x, np.inf)), lax.full_like(x, 0), x)


def _make_logaddexp(name, value, power):
  """`log_b(b^a1 + b^a2)` computed by `value`, with the tangent rule d = b^(a1 - out) da1 +
  b^(a2 - out) da2 (`power`: b^x), +inf read as 0 in the exponents (so that inf - inf gives
  weight 1); a NaN anywhere gives NaN, as in JAX.  The rule differentiates the function
  itself, so higher derivatives go through it again, as JAX's."""
  from minijax.custom_derivatives import custom_jvp

  def function(a, b):
    return value(a, b)
  function.__name__ = function.__qualname__ = name  # (as jaxprs name the custom_jvp call)
  fn = custom_jvp(function)

  @fn.defjvp
  def _jvp(primals, tangents):
    a, b = primals
    out = fn(a, b)
    weight_a = power(lax.sub(_finite(a), _finite(out)))
    weight_b = power(lax.sub(_finite(b), _finite(out)))
    return out, lax.add(lax.mul(tangents[0], weight_a), lax.mul(tangents[1], weight_b))
  return fn


logaddexp = _binary("logaddexp", _make_logaddexp("logaddexp", _logaddexp_value, lax.exp), inexact=True)


def _logaddexp2_value(a, b):
  # JAX's formula: max + log1p(2^-|a - b|) / log(2); a + b where a - b is NaN.  Complex
  # operands: by logaddexp of a log(2) and b log(2)
  ln2 = np.log(2)
  if dtypes.issubdtype(_util.dtype(a), np.complexfloating):
    scale = lax.full((), ln2, _util.dtype(a))
    return lax.div(_logaddexp_value(lax.mul(a, scale), lax.mul(b, scale)), scale)
  delta = lax.sub(a, b)
  inv_ln2 = np.array(1 / ln2, _util.dtype(a))
  out = lax.add(lax.max(a, b), lax.mul(inv_ln2, lax.log1p(lax.exp2(lax.neg(lax.abs(delta))))))
  return lax.select(lax.ne(delta, delta), lax.add(a, b), out)


logaddexp2 = _binary("logaddexp2", _make_logaddexp("logaddexp2", _logaddexp2_value, lax.exp2),
                     inexact=True)


def _complex_greater_equal(a, b):
  ra, rb = lax.real(a), lax.real(b)
  return lax.select(lax.eq(ra, rb), lax.ge(lax.imag(a), lax.imag(b)), lax.gt(ra, rb))


def _hypot(a, b):
  # JAX's scaled form: big * sqrt(1 + (small / big)^2), so squares neither overflow nor
  # underflow (hypot(1e30, 1e30) is 1.41e30, not inf), and inf where either is infinite
  a, b = lax.abs(a), lax.abs(b)
  infinite = lax.bitwise_or(lax.eq(a, lax.full_like(a, np.inf)),
                            lax.eq(b, lax.full_like(b, np.inf)))
  big, small = lax.max(a, b), lax.min(a, b)
  zero = lax.eq(big, lax.full_like(big, 0))
  ratio = lax.div(small, lax.select(zero, lax.full_like(big, 1), big))
  scaled = lax.mul(big, lax.sqrt(lax.add(lax.full_like(ratio, 1), lax.square(ratio))))
  out = lax.select(zero, big, scaled)
  return lax.select(infinite, lax.full_like(out, np.inf), out)


hypot = _binary("hypot", _hypot, inexact=True, real_only=ValueError)


def _copysign(a, b):
  return lax.select(_signbit(b), lax.neg(lax.abs(a)), lax.abs(a))


def _signbit(x):
  """The sign bit, set for -0.0 and negative NaNs too: the float's bits read as a signed
  integer of its width are negative."""
  dt = _util.dtype(x)
  bits = ml_dtypes.finfo(dt).bits if dtypes.is_float(dt) else 0
  if bits >= 8:
    x = lax.bitcast_convert_type(x, np.dtype(f"int{bits}"))
  return lax.lt(x, lax.full(_util.shape(x), 0, _util.dtype(x)))


copysign = _binary("copysign", _copysign, inexact=True, real_only=TypeError)

# ---- comparisons
equal = _binary("equal", lax.eq, keep_scalars=True)
not_equal = _binary("not_equal", lax.ne, keep_scalars=True)
less = _binary("less", lexicographic(lax.lt), keep_scalars=True)
less_equal = _binary("less_equal", lexicographic(lax.le), keep_scalars=True)
greater = _binary("greater", lexicographic(lax.gt), keep_scalars=True)
greater_equal = _binary("greater_equal", lexicographic(lax.ge), keep_scalars=True)


# ---- logical and bitwise
def _to_bool(x):
  return x if _is_bool(x) else lax.ne(x, lax.full(_util.shape(x), 0, _util.dtype(x)))


def logical_and(x1, x2, /):
  a, b = _pb("logical_and", x1, x2)
  return lax.bitwise_and(_to_bool(a), _to_bool(b))


def logical_or(x1, x2, /):
  a, b = _pb("logical_or", x1, x2)
  return lax.bitwise_or(_to_bool(a), _to_bool(b))


def logical_xor(x1, x2, /):
  a, b = _pb("logical_xor", x1, x2)
  return lax.bitwise_xor(_to_bool(a), _to_bool(b))


def logical_not(x, /):
  (a,) = _util.promote("logical_not", x)
  return lax.bitwise_not(_to_bool(a))


def _int_or_bool_only(name, fn):
  def wrapped(a, b):
    if not (_is_int(a) or _is_bool(a)):
      raise TypeError(f"{name} is only defined for integer and bool arrays, got "
                      f"{_util.dtype(a)}")
    return fn(a, b)
  return wrapped


bitwise_and = _binary("bitwise_and", _int_or_bool_only("bitwise_and", lax.bitwise_and),
                       keep_scalars=True)
bitwise_or = _binary("bitwise_or", _int_or_bool_only("bitwise_or", lax.bitwise_or),
                      keep_scalars=True)
bitwise_xor = _binary("bitwise_xor", _int_or_bool_only("bitwise_xor", lax.bitwise_xor),
                       keep_scalars=True)
def _left_shift(a, b):
  a, b = _as_int_if_bool(a), _as_int_if_bool(b)  # (booleans shift as int32, as in JAX)
  return lax.shift_left(a, b)


left_shift = _binary("left_shift", _left_shift, keep_scalars=True)


def _right_shift(a, b):
  a, b = _as_int_if_bool(a), _as_int_if_bool(b)
  if np.issubdtype(_util.dtype(a), np.unsignedinteger):
    return lax.shift_right_logical(a, b)
  return lax.shift_right_arithmetic(a, b)


right_shift = _binary("right_shift", _right_shift, keep_scalars=True)


def invert(x, /):
  (a,) = _util.promote("invert", x)
  if not (_is_int(a) or _is_bool(a)):
    raise TypeError(f"invert is only defined for integer and bool arrays, got {_util.dtype(a)}")
  return lax.bitwise_not(a)


bitwise_not = invert


# ---- unary arithmetic
def _negative(a):
  if _is_bool(a):
    raise TypeError("negative: the numpy boolean negative is not supported; use logical_not")
  return lax.neg(a)


negative = _unary("negative", _negative)
positive = _unary("positive", lambda a: a)


def _abs(a):
  if _is_bool(a) or np.issubdtype(_util.dtype(a), np.unsignedinteger):
    return a
  return lax.abs(a)


absolute = _unary("absolute", _abs)
abs = absolute


def _sign(a):
  if _is_bool(a):
    raise TypeError("sign does not accept dtype bool. Accepted dtypes are subtypes of "
                    "integer, floating, complexfloating.")
  return lax.sign(a)


sign = _unary("sign", _sign)


def _exact_passthrough(fn):
  return lambda a: a if not dtypes.is_inexact(_util.dtype(a)) else fn(a)


floor = _unary("floor", _exact_passthrough(lax.floor))
ceil = _unary("ceil", _exact_passthrough(lax.ceil))
trunc = _unary("trunc", _exact_passthrough(
    lambda a: lax.select(lax.lt(a, lax.full(_util.shape(a), 0, _util.dtype(a))),
                         lax.ceil(a), lax.floor(a))), real_only=TypeError)


def _per_part(fn):
  """`fn` of a real array, applied to the real and imaginary parts of a complex one."""
  def apply(a):
    if not np.issubdtype(_util.dtype(a), np.complexfloating):
      return fn(a)
    return lax.complex(fn(lax.real(a)), fn(lax.imag(a)))
  return apply


def _rint(a):
  if not dtypes.is_inexact(_util.dtype(a)):  # (as JAX's: in the default float type)
    a = lax.convert_element_type(a, dtypes.default_float_dtype())
  return _per_part(lambda v: lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN))(a)


rint = _unary("rint", _rint)
fix = trunc


@_util.compiled_when_eager(dynamic=1)
def round(a, decimals: int = 0, out=None):
  """Half to even at `decimals` digits, scaling by a power of ten as JAX does: float16 in
  float32, one compiled call when eager (XLA divides by the power as a multiply by its
  reciprocal, and JAX's jitted round rounds so)."""
  (x,) = _util.promote("round", a)
  decimals = operator.index(decimals)
  if _is_bool(x):
    raise ValueError("round: data type bool not inexact (round numbers, not booleans)")
  if np.issubdtype(_util.dtype(x), np.complexfloating):
    return lax.complex(round(lax.real(x), decimals), round(lax.imag(x), decimals))
  if not dtypes.is_inexact(_util.dtype(x)):
    if decimals >= 0:
      return x
    # round half to even in floating point, then back to the integer type
    dt = _util.dtype(x)
    fx = lax.convert_element_type(x, dtypes.default_float_dtype())
    factor = lax.full(_util.shape(x), 10.0 ** (-decimals), _util.dtype(fx))
    rounded = lax.round(lax.div(fx, factor), lax.RoundingMethod.TO_NEAREST_EVEN)
    return lax.convert_element_type(lax.mul(rounded, factor), dt)
  even = lax.RoundingMethod.TO_NEAREST_EVEN
  if decimals == 0:
    return lax.round(x, even)
  dtype = _util.dtype(x)
  if dtype == np.float16:
    x = lax.convert_element_type(x, np.float32)
  factor = lax.full(_util.shape(x), 10.0 ** decimals, _util.dtype(x))
  return lax.convert_element_type(lax.div(lax.round(lax.mul(x, factor), even), factor), dtype)


around = round
exp = _unary("exp", lax.exp, inexact=True)
exp2 = _unary("exp2", lax.exp2, inexact=True)
log = _unary("log", lax.log, inexact=True)
def _log_in_base(rescale):
  """The logarithm of another base, as JAX's: `rescale` (of the natural logarithm) applied
  to the real and imaginary parts of a complex one apart."""
  def log_in_base(a):
    r = lax.log(a)
    if dtypes.issubdtype(_util.dtype(a), np.complexfloating):
      return lax.complex(rescale(lax.real(r)), rescale(lax.imag(r)))
    return rescale(r)
  return log_in_base


# log2 divides by log(2) computed by the same log; log10 multiplies by 1 / log(10) rounded
log2 = _unary("log2", _log_in_base(
    lambda r: lax.div(r, lax.log(np.array(2, _util.dtype(r))))), inexact=True)
log10 = _unary("log10", _log_in_base(
    lambda r: lax.mul(r, np.array(0.4342944819032518, _util.dtype(r)))), inexact=True)
log1p = _unary("log1p", lax.log1p, inexact=True)
expm1 = _unary("expm1", lax.expm1, inexact=True)
sin = _unary("sin", lax.sin, inexact=True)
cos = _unary("cos", lax.cos, inexact=True)
tan = _unary("tan", lax.tan, inexact=True)
tanh = _unary("tanh", lax.tanh, inexact=True)
sqrt = _unary("sqrt", lax.sqrt, inexact=True)


def _one(a):
  return lax.full(_util.shape(a), 1, _util.dtype(a))


sinh = _unary("sinh", lax.sinh, inexact=True)
cosh = _unary("cosh", lax.cosh, inexact=True)
arcsin = _unary("arcsin", lax.asin, inexact=True)
arccos = _unary("arccos", lax.acos, inexact=True)
arctan = _unary("arctan", lax.atan, inexact=True)
arctanh = _unary("arctanh", lax.atanh, inexact=True)
arcsinh = _unary("arcsinh", lax.asinh, inexact=True)
arccosh = _unary("arccosh", lax.acosh, inexact=True)
cbrt = _unary("cbrt", lax.cbrt, inexact=True, real_only=TypeError)
deg2rad = _unary("deg2rad", lambda a: lax.mul(a, lax.full(_util.shape(a), np.pi / 180,
                                                          _util.dtype(a))), inexact=True)
rad2deg = _unary("rad2deg", lambda a: lax.mul(a, lax.full(_util.shape(a), 180 / np.pi,
                                                          _util.dtype(a))), inexact=True)
radians, degrees = deg2rad, rad2deg


def _square(a):
  if _is_bool(a):  # as JAX: booleans square as int32
    a = lax.convert_element_type(a, dtypes.int32)
  return lax.square(a)


square = _unary("square", _square)
reciprocal = _unary("reciprocal", lambda a: lax.integer_pow(a, -1), inexact=True)


def _isnan(a):
  if not dtypes.is_inexact(_util.dtype(a)):
    return lax.full(_util.shape(a), False, dtypes.bool_)
  return lax.ne(a, a)


def _isfinite(a):
  if not dtypes.is_inexact(_util.dtype(a)):
    return lax.full(_util.shape(a), True, dtypes.bool_)
  if np.issubdtype(_util.dtype(a), np.complexfloating):
    return lax.bitwise_and(lax.is_finite(lax.real(a)), lax.is_finite(lax.imag(a)))
  return lax.is_finite(a)


def _isinf(a):
  if not dtypes.is_inexact(_util.dtype(a)):
    return lax.full(_util.shape(a), False, dtypes.bool_)
  if np.issubdtype(_util.dtype(a), np.complexfloating):
    return lax.bitwise_or(_isinf(lax.real(a)), _isinf(lax.imag(a)))
  return lax.eq(lax.abs(a), lax.full(_util.shape(a), np.inf, _util.dtype(a)))


isnan = _unary("isnan", _isnan)
isfinite = _unary("isfinite", _isfinite)
isinf = _unary("isinf", _isinf)
signbit = _unary("signbit", lambda a: _signbit(a) if not _is_bool(a) else lax.full(
    _util.shape(a), False, dtypes.bool_), real_only=ValueError)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """|a - b| <= atol + rtol |b| in the inexact dtype of a and b (integers too, as in JAX and
  numpy); the tolerances may be arrays that broadcast with a and b."""
  x, y = _pb("isclose", a, b)
  if dtypes.is_extended(_util.dtype(x)):
    return lax.eq(x, y)
  x, y = _util.promote_inexact("isclose", x, y)
  dt = _util.dtype(lax.abs(x))  # the real dtype of a complex x
  rtol, atol = (lax.convert_element_type(_util.asarray(t), dt) for t in (rtol, atol))
  shp = _util.broadcast_shapes("isclose", *(_util.shape(v) for v in (x, rtol, atol)))
  x, y, rtol, atol = (_util.broadcast_to(v, shp) for v in (x, y, rtol, atol))
  diff = lax.abs(lax.sub(x, y))
  tol = lax.add(atol, lax.mul(rtol, lax.abs(y)))
  in_range = lax.bitwise_and(_isfinite(y), lax.le(diff, tol))
  close = lax.bitwise_or(in_range, lax.eq(x, y))
  if equal_nan:
    close = lax.bitwise_or(close, lax.bitwise_and(_isnan(x), _isnan(y)))
  return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  from minijax.numpy.reductions import all as _all
  return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
  from minijax.numpy.reductions import all as _all
  if _util.shape(a1) != _util.shape(a2):
    return False
  same = equal(a1, a2)
  if equal_nan:
    same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
  return _all(same)


def clip(arr=None, /, min=None, max=None):
  """JAX 0.10.2's signature: numpy's older `a_min`/`a_max` are a TypeError, as in JAX."""
  if arr is None:
    raise ValueError("No input was provided to the clip function.")
  for v in (arr, min, max):
    if v is not None and np.issubdtype(_util.dtype(v), np.complexfloating):
      raise ValueError("clip received a complex value (in the input or the bounds); complex "
                       "values have no order and cannot be clipped. Convert them to real "
                       "values first, e.g. with real(x) or abs(x)")
  return _clip(arr, min, max)


@_util.compiled_when_eager(name="clip")
def _clip(a, lo, hi):
  out = a
  if lo is not None:
    out = maximum(out, lo)
  if hi is not None:
    out = minimum(out, hi)
  if lo is None and hi is None:
    (out,) = _util.promote("clip", a)
  return out


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  """`x` where `condition` holds, else `y`; with neither, `nonzero(condition)` (which takes
  `size` and `fill_value`)."""
  if x is None and y is None:
    from minijax.numpy.indexing import nonzero
    return nonzero(condition, size=size, fill_value=fill_value)
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value are only valid when x and y are not given")
  if x is None or y is None:
    raise ValueError("where: either both or neither of x and y must be given")
  return _where3(condition, x, y)


def _where_impl(condition, x, y):
  _util.check("where", condition, x, y)
  a, b = _util.promote("where", x, y)
  (c,) = _util.promote("where", condition)
  c = _to_bool(c)
  shp = _util.broadcast_shapes("where", _util.shape(c), _util.shape(a), _util.shape(b))
  c, a, b = (_util.broadcast_to(v, shp) for v in (c, a, b))
  return lax.select(c, a, b)


_where3 = _util.compiled_when_eager(name="where")(_where_impl)

