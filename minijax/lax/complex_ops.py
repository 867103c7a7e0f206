"""Complex numbers: the `real`, `imag`, `conj` and `complex` primitives, and the
lexicographic order that max, min, clamp, the max/min reductions and sort give complex values.

All four primitives are linear over the reals, and their transposes follow JAX's convention
for complex cotangents: a transpose never conjugates, so the pairing between a tangent `t`
and a cotangent `c` is `Re(sum(c * t))` (not `Re(sum(conj(c) * t))`).  Under that pairing
`real` transposes to `complex(ct, 0)`, `imag` to `complex(0, -ct)`, `complex(x, y)` to
`(real(ct), -imag(ct))` and `conj` to `conj(ct)`; `grad` of a real function of `z = x + iy`
then returns `df/dx - i df/dy`, as JAX does.

`conj` of a real operand is complex, as in JAX (`minijax.numpy.conjugate` keeps real values
real instead); it carries the operand's dtype as `input_dtype` so that its transpose knows
whether to conjugate or to take the real part.  `complex` takes float32 or float64 operands
only (JAX's rule); the others take complex operands only, and every rule rejects other
dtypes with a TypeError naming the primitive.

XLA's own `max`/`min`/`clamp` and `compare` do not order complex values as numpy does (they
compare real parts only, or refuse): `lexicographic_compare` and `lexicographic_select`
build numpy's order (real parts first, imaginary parts on a tie) from real-valued compares,
and the lowerings of those primitives use them for complex operands.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lowering import mlir

__all__ = ["real", "imag", "conj", "complex", "real_p", "imag_p", "conj_p", "complex_p"]


def is_complex(dtype) -> bool:
  return np.issubdtype(dtype, np.complexfloating)


def complex_dtype_of(dtype) -> np.dtype:
  """The complex dtype whose parts have `dtype` (complex64 for float32, and so on)."""
  return dtypes.complex128 if np.dtype(dtype) == dtypes.float64 else dtypes.complex64


def real_dtype_of(dtype) -> np.dtype:
  """The dtype of the parts of complex `dtype`."""
  return dtypes.float64 if np.dtype(dtype) == dtypes.complex128 else dtypes.float32


def _complex_operand_rule(name):
  def rule(x, **params):
    if not is_complex(x.dtype):
      utils.reject_dtype(name, x.dtype, "complexfloating")
    return real_dtype_of(x.dtype)
  return rule


def _unop(name, dtype_rule, mhlo_op):
  prim = utils.standard_primitive(name, utils.elementwise_shapes(name), dtype_rule)
  batching.defvectorized(prim)
  if mhlo_op is not None:
    mlir.register_lowering(prim, utils.nary_lowering(mhlo_op), splat_literals=True)
  return prim


def _zeros(x, dtype=None):
  from minijax.lax.structural import full
  aval = get_aval(x)
  return full(aval.shape, 0, dtype or aval.dtype)


# ---- real
real_p = _unop("real", _complex_operand_rule("real"), mhlo.RealOp)
ad.deflinear(real_p, lambda ct: [complex(ct, _zeros(ct))])


def real(x):
  """The real part of a complex array."""
  return real_p.bind(x)


# ---- imag
imag_p = _unop("imag", _complex_operand_rule("imag"), mhlo.ImagOp)


def _imag_transpose(ct):
  from minijax.lax.elementwise import neg
  return [complex(_zeros(ct), neg(ct))]


ad.deflinear(imag_p, _imag_transpose)


def imag(x):
  """The imaginary part of a complex array."""
  return imag_p.bind(x)


# ---- complex(x, y) = x + i y
def _complex_dtype_rule(x, y):
  for position, operand in enumerate((x, y)):
    if operand.dtype not in (dtypes.float32, dtypes.float64):
      raise TypeError(f"complex does not accept dtype {operand.dtype} at position {position}. "
                      f"Accepted dtypes at position {position} are subtypes of float32, "
                      "float64.")
  utils.check_same_dtypes("complex", x, y)
  return complex_dtype_of(x.dtype)


complex_p = utils.standard_primitive("complex", utils.elementwise_shapes("complex"),
                                     _complex_dtype_rule)
batching.defbroadcasting(complex_p)
mlir.register_lowering(complex_p, utils.nary_lowering(mhlo.ComplexOp), splat_literals=True)


def _complex_jvp(primals, tangents):
  out = complex_p.bind(*primals)
  if all(type(t) is ad.Zero for t in tangents):
    return out, ad.Zero.from_primal_value(out)
  return out, complex_p.bind(*map(ad.instantiate_zeros, tangents))


def _complex_transpose(ct, x, y):
  from minijax.lax.elementwise import neg
  if type(ct) is ad.Zero:
    return [ad.Zero(a.aval) if ad.is_undefined_primal(a) else None for a in (x, y)]
  return [utils.unbroadcast(real(ct), x.aval) if ad.is_undefined_primal(x) else None,
          utils.unbroadcast(neg(imag(ct)), y.aval) if ad.is_undefined_primal(y)
          else None]


ad.primitive_jvps[complex_p] = _complex_jvp
ad.primitive_transposes[complex_p] = _complex_transpose


def complex(x, y):
  """`x + i y` from real arrays of one dtype (float32 or float64)."""
  from minijax.lax.elementwise import _coerce_scalars
  return complex_p.bind(*_coerce_scalars(x, y))


# ---- conj
def _conj_dtype_rule(x, *, input_dtype):
  if not (is_complex(x.dtype) or dtypes.is_float(x.dtype)):
    utils.reject_dtype("conj", x.dtype, "floating, complexfloating")
  return x.dtype if is_complex(x.dtype) else complex_dtype_of(x.dtype)


conj_p = _unop("conj", _conj_dtype_rule, None)


def _conj_lowering(ctx, x, *, input_dtype):
  aval = ctx.avals_in[0]
  if is_complex(aval.dtype):
    re, im = mhlo.RealOp(x).result, mhlo.ImagOp(x).result
    return mhlo.ComplexOp(re, mhlo.NegOp(im).result).result
  part = real_dtype_of(ctx.avals_out[0].dtype)
  if aval.dtype != part:
    x = mhlo.ConvertOp(mlir.aval_to_ir_type(aval.update(dtype=part)), x).result
  return mhlo.ComplexOp(x, mlir.splat_constant(0, aval.shape, part)).result


mlir.register_lowering(conj_p, _conj_lowering)


def _conj_transpose(ct, *, input_dtype):
  if is_complex(input_dtype):
    return [conj(ct)]
  from minijax.lax.misc import convert_element_type
  return [convert_element_type(real(ct), input_dtype)]


ad.deflinear(conj_p, _conj_transpose)


def conj(x):
  """The complex conjugate (complex even for a real operand, as in JAX)."""
  from minijax.lax.structural import convert_to_array
  x = convert_to_array(x)
  return conj_p.bind(x, input_dtype=get_aval(x).dtype)


# ---- numpy's order of complex values, for lowering rules
def _parts(x):
  return mhlo.RealOp(x).result, mhlo.ImagOp(x).result


def _float_compare(x, y, direction):
  return mhlo.CompareOp(x, y, mhlo.ComparisonDirectionAttr.get(direction),
                        compare_type=mhlo.ComparisonTypeAttr.get("FLOAT")).result


def lexicographic_compare(x: ir.Value, y: ir.Value, direction: str) -> ir.Value:
  """`x <direction> y` for complex IR values (LT, LE, GT, GE, EQ, NE), comparing real
  parts first and imaginary parts when the real parts are equal."""
  if direction in ("EQ", "NE"):
    return _float_compare(x, y, direction)
  (xr, xi), (yr, yi) = _parts(x), _parts(y)
  strict = direction[0] + "T"
  return mhlo.SelectOp(_float_compare(xr, yr, "EQ"), _float_compare(xi, yi, direction),
                       _float_compare(xr, yr, strict)).result


def lexicographic_select(x: ir.Value, y: ir.Value, which: str) -> ir.Value:
  """The larger (`which="max"`) or smaller (`"min"`) of complex IR values x and y."""
  pick_x = lexicographic_compare(x, y, "GT" if which == "max" else "LT")
  return mhlo.SelectOp(pick_x, x, y).result
