"""dot_general: contraction over given axes with batch axes, and `dot` for the common cases.

`precision` (a `Precision`, a string naming one, or a pair of them for lhs and rhs) and
`preferred_element_type` (the accumulation and result dtype) are params of the primitive:
the first becomes the `precision_config` of `mhlo.dot_general` (and of `mhlo.convolution`,
which shares these helpers), the second its result type.  On CPU the precision changes
nothing; it matters on accelerators, and it is kept through every transformation.

`dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`; the
result's axes are the batch axes, then lhs's free axes, then rhs's free axes (XLA's order).
It is bilinear: the jvp is the sum of the two one-sided products and the transpose with
respect to either operand is another dot_general of the cotangent with the other operand,
followed by a transpose back into the operand's axis order.
"""
from __future__ import annotations

import enum
from typing import Any, Sequence

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax.config import config
from minijax.core import dtypes, pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax import dot_algorithms
from minijax.lax.dot_algorithms import DotAlgorithm, DotAlgorithmPreset
from minijax.lax.structural import convert_to_array, transpose
from minijax.lowering import mlir

__all__ = ["dot_general", "dot", "batch_matmul", "dot_general_p", "Precision", "PrecisionLike",
           "DotDimensionNumbers", "DotAlgorithm", "DotAlgorithmPreset"]


class Precision(enum.Enum):
  """How precisely an accelerator multiplies float32 operands (no effect on CPU):
  DEFAULT (aliases 'default', 'fastest', 'bfloat16'), HIGH ('high', 'bfloat16_3x',
  'tensorfloat32'), HIGHEST ('highest', 'float32')."""
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    return _PRECISION_NAMES.get(value)

  def __repr__(self):
    return f"Precision.{self.name}"

  def __str__(self):
    return self.name


_PRECISION_NAMES = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
    None: Precision.DEFAULT,
}

PrecisionLike = Any  # None, a Precision, a string naming one, a pair of those, or an algorithm


def canonicalize_precision(precision: PrecisionLike):
  """None, one `Precision` for each operand, or a dot algorithm (`DotAlgorithm`, or a
  `DotAlgorithmPreset` or its name).  None takes the `default_matmul_precision` flag's
  value when tracing (so jaxprs show it), as JAX does."""
  if precision is None:
    default = config.default_matmul_precision
    if default is None:
      return None
    if default not in _PRECISION_NAMES:
      return dot_algorithms.preset_named(default)
    return Precision(default), Precision(default)
  if dot_algorithms.is_algorithm(precision):
    return precision
  if dot_algorithms.preset_named(precision) is not None and precision not in _PRECISION_NAMES:
    return dot_algorithms.preset_named(precision)
  if isinstance(precision, Precision):
    return precision, precision
  if isinstance(precision, str) and precision in _PRECISION_NAMES:
    return Precision(precision), Precision(precision)
  if isinstance(precision, (tuple, list)) and len(precision) == 2:
    if all(isinstance(p, Precision) for p in precision):
      return tuple(precision)
    if all(isinstance(p, str) and p in _PRECISION_NAMES for p in precision):
      return Precision(precision[0]), Precision(precision[1])
  raise ValueError(
      "Precision argument must be one of:\n- None,\n"
      f"- a string in {list(_PRECISION_NAMES)},\n- a lax.Precision value,\n"
      f"- a tuple of two lax.Precision values or strings,\n"
      f"- a lax.DotAlgorithm or lax.DotAlgorithmPreset (or its name);\ngot {precision}")


def precision_attr(precision: tuple[Precision, Precision] | None) -> ir.ArrayAttr | None:
  """The `precision_config` attribute of a dot or convolution (None: the default; an
  algorithm is no precision config)."""
  if precision is None or dot_algorithms.is_algorithm(precision):
    return None
  return ir.ArrayAttr.get([mhlo.PrecisionAttr.get(p.name) for p in precision])


def check_preferred_element_type(name: str, input_dtype, preferred) -> None:
  """JAX's rule: integers may accumulate into integers or floats (of any signedness),
  floats into floats, complex into complex, never into a narrower type."""
  if not (dtypes.is_integer(input_dtype) and dtypes.is_float(preferred)):
    for kind in (np.integer, np.floating, np.complexfloating):
      if np.issubdtype(input_dtype, kind) and not np.issubdtype(preferred, kind):
        raise TypeError(
            f"{name}: input type {input_dtype} is incompatible with "
            f"`preferred_element_type` {preferred}. The compatible combinations of "
            "(input_type, preferred_element_type) are (integral, integral), "
            "(integral, floating), (floating, floating), (complex, complex).")
    if (np.issubdtype(input_dtype, np.signedinteger)
        and not np.issubdtype(preferred, np.signedinteger)):
      raise TypeError(f"{name}: `preferred_element_type` must have the same signedness "
                      f"as the original type, got {preferred} for {input_dtype}.")
  if np.dtype(preferred).itemsize < np.dtype(input_dtype).itemsize:
    raise TypeError(f"{name}: `preferred_element_type` must not be narrower than the "
                    f"original type, got {preferred} for {input_dtype}.")


def canonicalize_preferred(name: str, preferred_element_type):
  if preferred_element_type is None:
    return None
  return dtypes.canonicalize_explicit_dtype(preferred_element_type)

dot_general_p = Primitive("dot_general")


def _free(ndim, contract, batch):
  return tuple(i for i in range(ndim) if i not in contract and i not in batch)


def _check_dimension_numbers(lhs, rhs, lc, rc, lb, rb):
  """dot_general's rules for its dimension numbers, checked (and worded) as JAX does."""
  for side, x, contracting, batch in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
    if any(not 0 <= d < x.ndim for d in contracting + batch):
      raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative and "
                      f"less than the number of axes of the {side} value, got {side}_batch of "
                      f"{batch} and {side}_contracting of {contracting} for {side} of rank "
                      f"{x.ndim}")
  if len(lb) != len(rb):
    raise TypeError(f"dot_general requires equal numbers of lhs_batch and rhs_batch "
                    f"dimensions, got lhs_batch {lb} and rhs_batch {rb}.")
  for side, kind, dims in (("lhs", "batch", lb), ("rhs", "batch", rb),
                           ("lhs", "contracting", lc), ("rhs", "contracting", rc)):
    if len(set(dims)) != len(dims):
      raise TypeError(f"dot_general requires {side} {kind} dimensions to be distinct, got "
                      f"{side}_{kind} {dims}.")
  for side, contracting, batch in (("lhs", lc, lb), ("rhs", rc, rb)):
    if set(contracting) & set(batch):
      raise TypeError(f"dot_general requires {side} batch dimensions to be disjoint from "
                      f"contracting dimensions, got {side}_batch {batch} and "
                      f"{side}_contracting {contracting}.")
  for kind, l, r in (("lhs batch dimensions and rhs batch", lb, rb), ("contracting", lc, rc)):
    l_shape, r_shape = tuple(lhs.shape[d] for d in l), tuple(rhs.shape[d] for d in r)
    if l_shape != r_shape:
      raise TypeError(f"dot_general requires {kind} dimensions to have the same shape, got "
                      f"{l_shape} and {r_shape}.")


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type):
  (lc, rc), (lb, rb) = dimension_numbers
  _check_dimension_numbers(lhs, rhs, lc, rc, lb, rb)
  if lhs.dtype != rhs.dtype:
    raise TypeError(f"dot_general requires operands of one dtype, got {lhs.dtype}, "
                    f"{rhs.dtype} (minijax.numpy's functions promote them)")
  shape = (tuple(lhs.shape[a] for a in lb)
           + tuple(lhs.shape[i] for i in _free(lhs.ndim, lc, lb))
           + tuple(rhs.shape[i] for i in _free(rhs.ndim, rc, rb)))
  dtype = lhs.dtype
  if preferred_element_type is not None:
    # (JAX's dot rule, laxer than convolutions': only a non-float result may not narrow)
    bits = lambda d: (1 if d == dtypes.bool_ else ml_dtypes.finfo(d).bits if dtypes.is_inexact(d)
                      else np.iinfo(d).bits)
    if not dtypes.is_float(dtype) and bits(preferred_element_type) < bits(dtype):
      raise TypeError("dot_general: `preferred_element_type` must not be narrower than the "
                      f"original type, got {preferred_element_type} for {dtype}.")
    dtype = preferred_element_type
  return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


dot_general_p.def_abstract_eval(_dot_general_abstract_eval)


def _dot_general_pp(params, names, indent):
  """As JAX prints it: the axes as lists, the options only when set."""
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  lines = [f"dimension_numbers=(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))"]
  return lines + [f"{k}={params[k]}" for k in ("precision", "preferred_element_type")
                  if params[k] is not None]


pretty.pp_rules[dot_general_p] = _dot_general_pp


def _dot_general_lowering(ctx, lhs, rhs, *, dimension_numbers, precision,
                          preferred_element_type):
  (lc, rc), (lb, rb) = dimension_numbers
  attr = mhlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=list(lb), rhs_batching_dimensions=list(rb),
      lhs_contracting_dimensions=list(lc), rhs_contracting_dimensions=list(rc))
  out_aval = ctx.avals_out[0]
  if ctx.avals_in[0].dtype == dtypes.bool_ and out_aval.dtype == dtypes.bool_:
    # XLA has no boolean dot: multiply as int32 and test for a nonzero sum
    from minijax.lax.elementwise import _compare_ir
    i32 = lambda a: mlir.aval_to_ir_type(a.update(dtype=dtypes.int32))
    lhs = mhlo.ConvertOp(i32(ctx.avals_in[0]), lhs).result
    rhs = mhlo.ConvertOp(i32(ctx.avals_in[1]), rhs).result
    out = mhlo.DotGeneralOp(i32(out_aval), lhs, rhs, attr,
                            precision_config=precision_attr(precision)).result
    zero = mlir.ir_constant(np.zeros(out_aval.shape, np.int32))
    return _compare_ir(out, zero, "NE", dtypes.int32)
  if dot_algorithms.is_algorithm(precision):
    return dot_algorithms.lower_dot_with_algorithm(ctx, lhs, rhs, attr, precision)
  return mhlo.DotGeneralOp(mlir.aval_to_ir_type(out_aval), lhs, rhs, attr,
                          precision_config=precision_attr(precision)).result


mlir.register_lowering(dot_general_p, _dot_general_lowering)


def _dot_general_jvp(primals, tangents, *, dimension_numbers, precision,
                     preferred_element_type):
  lhs, rhs = primals
  tl, tr = tangents
  kw = dict(dimension_numbers=dimension_numbers, precision=precision,
            preferred_element_type=preferred_element_type)
  out = dot_general_p.bind(lhs, rhs, **kw)
  t = ad.Zero.from_primal_value(out)
  if type(tl) is not ad.Zero:
    t = ad.add_tangents(t, dot_general_p.bind(tl, rhs, **kw))
  if type(tr) is not ad.Zero:
    t = ad.add_tangents(t, dot_general_p.bind(lhs, tr, **kw))
  return out, t


def _transpose_to_operand(ct, other, operand_ndim, operand_contract, operand_batch,
                          other_contract, other_batch, ct_free_other, precision):
  """The cotangent of one operand: contract `ct`'s axes of the other operand's free axes
  against `other`, then permute into the operand's axis order."""
  other_free = _free(other.ndim, other_contract, other_batch)
  nb = len(operand_batch)
  dims = ((tuple(ct_free_other), other_free), (tuple(range(nb)), tuple(other_batch)))
  out = dot_general_p.bind(ct, other, dimension_numbers=dims, precision=precision,
                           preferred_element_type=None)
  # `out` axes: batch, the operand's free axes, then other's contracting axes in order
  operand_free = _free(operand_ndim, operand_contract, operand_batch)
  order = list(operand_batch) + list(operand_free)
  order += [operand_contract[list(other_contract).index(c)] for c in sorted(other_contract)]
  perm = [order.index(d) for d in range(operand_ndim)]
  return transpose(out, perm)


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type):
  from minijax.lax.misc import convert_element_type
  (lc, rc), (lb, rb) = dimension_numbers
  lhs_aval = lhs.aval if ad.is_undefined_primal(lhs) else get_aval(lhs)
  rhs_aval = rhs.aval if ad.is_undefined_primal(rhs) else get_aval(rhs)
  if type(ct) is ad.Zero:
    return [ad.Zero(lhs_aval) if ad.is_undefined_primal(lhs) else None,
            ad.Zero(rhs_aval) if ad.is_undefined_primal(rhs) else None]
  ct = convert_element_type(ct, lhs_aval.dtype)
  nb = len(lb)
  n_lfree = len(_free(lhs_aval.ndim, lc, lb))
  n_rfree = len(_free(rhs_aval.ndim, rc, rb))
  ct_lfree = range(nb, nb + n_lfree)
  ct_rfree = range(nb + n_lfree, nb + n_lfree + n_rfree)
  t_lhs = t_rhs = None
  if ad.is_undefined_primal(lhs):
    out = _transpose_to_operand(ct, rhs, lhs_aval.ndim, lc, lb, rc, rb, ct_rfree, precision)
    t_lhs = convert_element_type(out, lhs_aval.dtype)
  if ad.is_undefined_primal(rhs):
    # the other operand (lhs) is now the product's rhs: its precision goes second
    swapped = (precision if precision is None or dot_algorithms.is_algorithm(precision)
               else precision[::-1])
    out = _transpose_to_operand(ct, lhs, rhs_aval.ndim, rc, rb, lc, lb, ct_lfree, swapped)
    t_rhs = convert_element_type(out, rhs_aval.dtype)
  return [t_lhs, t_rhs]


def _dot_general_batch(args, dims, *, dimension_numbers, precision, preferred_element_type):
  (lhs, rhs), (dl, dr) = args, dims
  (lc, rc), (lb, rb) = dimension_numbers
  kw = dict(precision=precision, preferred_element_type=preferred_element_type)
  shift = lambda ds: tuple(d + 1 for d in ds)
  if dl is not None and dr is not None:
    lhs, rhs = batching.moveaxis(lhs, dl, 0), batching.moveaxis(rhs, dr, 0)
    dn = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **kw), 0
  if dl is not None:
    lhs = batching.moveaxis(lhs, dl, 0)
    dn = ((shift(lc), rc), (shift(lb), rb))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **kw), len(lb)
  rhs = batching.moveaxis(rhs, dr, 0)
  dn = ((lc, shift(rc)), (lb, shift(rb)))
  n_lfree = len(_free(np.ndim(lhs), lc, lb))
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **kw), len(lb) + n_lfree


ad.primitive_jvps[dot_general_p] = _dot_general_jvp
ad.primitive_transposes[dot_general_p] = _dot_general_transpose
batching.primitive_batchers[dot_general_p] = _dot_general_batch


def _precision_rank(dtype) -> tuple:
  """How XLA ranks a dot's operand types (its HigherPrecisionType, as JAX reads it):
  complex over real, then the float exponent range, then the mantissa, then the bit width,
  then signed over unsigned; integers and booleans rank below every float."""
  dtype = np.dtype(dtype)
  complex_ = np.issubdtype(dtype, np.complexfloating)
  real = np.dtype(np.zeros((), dtype).real.dtype) if complex_ else dtype
  info = ml_dtypes.finfo(real) if dtypes.is_float(real) else None
  bits = 1 if real == dtypes.bool_ else real.itemsize * 8
  return (complex_, info.maxexp if info else -1, info.nmant if info else -1, bits,
          not np.issubdtype(real, np.unsignedinteger))


def operand_dtype(lhs_dtype, rhs_dtype):
  """The one dtype a dot of two operand dtypes computes in: the higher-precision one."""
  if lhs_dtype == rhs_dtype:
    return lhs_dtype
  return max(lhs_dtype, rhs_dtype, key=_precision_rank)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
  """XLA's DotGeneral.  Operands of two dtypes are computed in the higher-precision one
  (`operand_dtype`), as JAX and XLA do."""
  if out_sharding is not None:
    raise NotImplementedError("dot_general: out_sharding is not supported by minijax (one "
                              "device per computation)")
  lhs, rhs = convert_to_array(lhs), convert_to_array(rhs)
  (lc, rc), (lb, rb) = dimension_numbers
  dn = ((tuple(int(d) for d in lc), tuple(int(d) for d in rc)),
        (tuple(int(d) for d in lb), tuple(int(d) for d in rb)))
  pet = canonicalize_preferred("dot_general", preferred_element_type)
  la, ra = get_aval(lhs), get_aval(rhs)
  if la.dtype != ra.dtype:
    from minijax.lax.misc import convert_element_type
    common = operand_dtype(la.dtype, ra.dtype)
    lhs, rhs = (convert_element_type(x, common) for x in (lhs, rhs))
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                            precision=canonicalize_precision(precision),
                            preferred_element_type=pet)


# what `dimension_numbers` of a dot_general is: ((lhs contracting, rhs contracting),
# (lhs batch, rhs batch)), four sequences of axes
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, dimension_numbers=None):
  """`dot_general` whose dimension numbers default to the plain vector-vector,
  matrix-vector or matrix-matrix product of rank-1 or rank-2 operands."""
  lhs, rhs = convert_to_array(lhs), convert_to_array(rhs)
  if dimension_numbers is None:
    la, ra = get_aval(lhs), get_aval(rhs)
    if not (1 <= la.ndim <= 2 and 1 <= ra.ndim <= 2) or la.shape[-1] != ra.shape[0]:
      raise ValueError(
          "lax.dot: dimension_numbers must be specified when not performing simple un-batched "
          "matrix-matrix, matrix-vector, or vector-vector products (rank-1 or rank-2 operands "
          f"with matching inner sizes); got lhs_shape={la.shape} rhs_shape={ra.shape}")
    dimension_numbers = (((la.ndim - 1,), (0,)), ((), ()))
  return dot_general(lhs, rhs, dimension_numbers, precision=precision,
                     preferred_element_type=preferred_element_type)


def batch_matmul(lhs, rhs, precision=None, preferred_element_type=None):
  """Matrix products over the last two axes, batched over the leading (equal) axes."""
  lhs, rhs = convert_to_array(lhs), convert_to_array(rhs)
  nd = get_aval(lhs).ndim
  batch = tuple(range(nd - 2))
  return dot_general(lhs, rhs, (((nd - 1,), (nd - 2,)), (batch, batch)), precision=precision,
                     preferred_element_type=preferred_element_type)
