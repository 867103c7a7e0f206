"""Dot algorithms: `precision=` given as the types a dot multiplies and accumulates in.

`DotAlgorithm(lhs_precision_type, rhs_precision_type, accumulation_type, ...)` names one
exactly; `DotAlgorithmPreset` names the common ones (JAX's enum, JAX's values).  Either is
a `dot_general`'s `precision` param, as in JAX, and its lowering (`lower_dot_with_algorithm`)
is what JAX emits on the CPU: the operands converted to the preset's input type when theirs
is not among the types it takes, `mhlo.dot_general` carrying the `algorithm` attribute, and
the result converted back to the equation's type.  XLA's CPU compiler takes only DEFAULT,
F16_F16_F16, BF16_BF16_F32 (also _X3, _X6), F32_F32_F32 and F64_F64_F64; the others, and
explicit `DotAlgorithm`s, raise as they do in JAX."""
from __future__ import annotations

import enum
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.lowering import mlir

_f16, _bf16, _f32, _f64 = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16),
                           np.dtype(np.float32), np.dtype(np.float64))
_F8 = tuple(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e4m3fn", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e4m3b11fnuz"))


class DotAlgorithm(NamedTuple):
  """The types in which a dot multiplies its operands and accumulates, how many components
  each operand is split into and how many products are summed (XLA's DotAlgorithm)."""
  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
  """JAX's named dot algorithms: `<lhs>_<rhs>_<accumulation>[_X<products>]`."""
  DEFAULT = 1
  ANY_F8_ANY_F8_F32 = 2
  ANY_F8_ANY_F8_F32_FAST_ACCUM = 3
  ANY_F8_ANY_F8_ANY = 4
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = 5
  F16_F16_F16 = 6
  F16_F16_F32 = 7
  BF16_BF16_BF16 = 8
  BF16_BF16_F32 = 9
  BF16_BF16_F32_X3 = 10
  BF16_BF16_F32_X6 = 11
  BF16_BF16_F32_X9 = 12
  TF32_TF32_F32 = 13
  TF32_TF32_F32_X3 = 14
  F32_F32_F32 = 15
  F64_F64_F64 = 16

  def __repr__(self):
    return self.name

  def __str__(self):
    return self.name

  @property
  def supported_lhs_types(self) -> tuple | None:
    return _PRESETS[self][0]

  @property
  def supported_rhs_types(self) -> tuple | None:
    return _PRESETS[self][0]

  @property
  def accumulation_type(self):
    return _PRESETS[self][1]

  def supported_output_types(self, lhs_dtype, rhs_dtype) -> tuple | None:
    """The result types the preset gives for operands of these types."""
    if self.accumulation_type is None:
      return None
    if np.dtype(lhs_dtype) in (self.supported_lhs_types or ()):
      return (np.dtype(lhs_dtype),) if self.accumulation_type != np.dtype(lhs_dtype) \
          else (self.accumulation_type,)
    return (self.accumulation_type,)


# preset: (the input types it takes, its accumulation type, XLA's algorithm: lhs and rhs
# precision types, accumulation type, number of products)
_PRESETS: dict[DotAlgorithmPreset, tuple] = {
    DotAlgorithmPreset.DEFAULT: (None, None, None),
    DotAlgorithmPreset.ANY_F8_ANY_F8_F32: (None, _f32, None),
    DotAlgorithmPreset.ANY_F8_ANY_F8_F32_FAST_ACCUM: (None, _f32, None),
    DotAlgorithmPreset.ANY_F8_ANY_F8_ANY: (None, None, None),
    DotAlgorithmPreset.ANY_F8_ANY_F8_ANY_FAST_ACCUM: (None, None, None),
    DotAlgorithmPreset.F16_F16_F16: ((_f16,), _f16, ("f16", "f16", "f16", 1)),
    DotAlgorithmPreset.F16_F16_F32: ((_f16,), _f32, ("f16", "f16", "f32", 1)),
    DotAlgorithmPreset.BF16_BF16_BF16: ((_bf16, _f32), _bf16, ("bf16", "bf16", "bf16", 1)),
    DotAlgorithmPreset.BF16_BF16_F32: ((_bf16, _f32), _f32, ("bf16", "bf16", "f32", 1)),
    DotAlgorithmPreset.BF16_BF16_F32_X3: ((_f32,), _f32, ("bf16", "bf16", "f32", 3)),
    DotAlgorithmPreset.BF16_BF16_F32_X6: ((_f32,), _f32, ("bf16", "bf16", "f32", 6)),
    DotAlgorithmPreset.BF16_BF16_F32_X9: ((_f32,), _f32, ("bf16", "bf16", "f32", 9)),
    DotAlgorithmPreset.TF32_TF32_F32: ((_f32,), _f32, ("tf32", "tf32", "f32", 1)),
    DotAlgorithmPreset.TF32_TF32_F32_X3: ((_f32,), _f32, ("tf32", "tf32", "f32", 3)),
    DotAlgorithmPreset.F32_F32_F32: ((_f32,), _f32, ("f32", "f32", "f32", 1)),
    DotAlgorithmPreset.F64_F64_F64: ((_f64,), _f64, ("f64", "f64", "f64", 1)),
}
_ON_CPU = {DotAlgorithmPreset.DEFAULT, DotAlgorithmPreset.F16_F16_F16,
           DotAlgorithmPreset.BF16_BF16_F32, DotAlgorithmPreset.BF16_BF16_F32_X3,
           DotAlgorithmPreset.BF16_BF16_F32_X6, DotAlgorithmPreset.F32_F32_F32,
           DotAlgorithmPreset.F64_F64_F64}


def is_algorithm(precision) -> bool:
  return isinstance(precision, (DotAlgorithm, DotAlgorithmPreset))


def preset_named(name):
  """The preset called `name` (any case), or None."""
  if isinstance(name, str):
    return DotAlgorithmPreset.__members__.get(name.upper())
  return None


def lower_dot_with_algorithm(ctx, lhs, rhs, dimension_numbers_attr, algorithm):
  """`mhlo.dot_general` under `algorithm`, as JAX lowers it on the CPU."""
  if algorithm not in _ON_CPU:
    raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")
  out_aval = ctx.avals_out[0]
  if algorithm is DotAlgorithmPreset.DEFAULT:
    return mhlo.DotGeneralOp(mlir.aval_to_ir_type(out_aval), lhs, rhs,
                             dimension_numbers_attr).result
  takes, accumulation, (lhs_type, rhs_type, acc_type, products) = _PRESETS[algorithm]
  operand_dtype = ctx.avals_in[0].dtype
  dot_dtype = operand_dtype if operand_dtype in takes else accumulation
  if operand_dtype not in takes:
    converted = ctx.avals_in[0].update(dtype=takes[0])
    lhs = mhlo.ConvertOp(mlir.aval_to_ir_type(converted), lhs).result
    rhs = mhlo.ConvertOp(mlir.aval_to_ir_type(ctx.avals_in[1].update(dtype=takes[0])), rhs).result
  attr = ir.Attribute.parse(
      f"#mhlo.dot_algorithm<lhs_precision_type = {lhs_type}, rhs_precision_type = {rhs_type}, "
      f"accumulation_type = {acc_type}, lhs_component_count = 1, rhs_component_count = 1, "
      f"num_primitive_operations = {products}, allow_imprecise_accumulation = false>")
  dot_aval = out_aval.update(dtype=dot_dtype)
  out = mhlo.DotGeneralOp(mlir.aval_to_ir_type(dot_aval), lhs, rhs, dimension_numbers_attr,
                          algorithm=attr).result
  if dot_dtype != out_aval.dtype:
    out = mhlo.ConvertOp(mlir.aval_to_ir_type(out_aval), out).result
  return out


__all__ = ["DotAlgorithm", "DotAlgorithmPreset"]
