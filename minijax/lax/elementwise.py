"""Elementwise primitives.  Binary ops take operands of equal shape and dtype; Python
scalars are accepted and take the other operand's dtype (keeping their weak type)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import mhlo

from minijax.core import dtypes
from minijax.core.avals import shaped_abstractify
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lowering import mlir

__all__ = ["add", "sub", "mul", "neg", "sin", "cos",
           "add_p", "sub_p", "mul_p", "neg_p", "sin_p", "cos_p"]


def _coerce_scalars(*args):
  """Python scalars take the dtype of the array operands."""
  if not any(isinstance(a, (bool, int, float, complex)) for a in args):
    return args
  arrays = [a for a in args if not isinstance(a, (bool, int, float, complex))]
  if not arrays:
    return args
  dtype = shaped_abstractify(arrays[0]).dtype
  shape = shaped_abstractify(arrays[0]).shape
  from minijax.lax.structural import full
  return tuple(full(shape, a, dtype, weak_type=True) if isinstance(a, (bool, int, float, complex))
               else a for a in args)


def _binop(name, accepted, what, mhlo_op):
  prim = utils.standard_primitive(name, utils.same_shapes(name),
                                  utils.same_dtypes_accepting(name, accepted, what))
  batching.defbroadcasting(prim)
  mlir.register_lowering(prim, utils.nary_lowering(mhlo_op))
  return prim


def _unop(name, accepted, what, mhlo_op):
  prim = utils.standard_primitive(name, utils.same_shapes(name),
                                  utils.same_dtypes_accepting(name, accepted, what))
  batching.defvectorized(prim)
  mlir.register_lowering(prim, utils.nary_lowering(mhlo_op))
  return prim


# ---- add
add_p = _binop("add", utils.is_number, "numbers", mhlo.AddOp)
ad.defjvp(add_p, lambda g, x, y: g, lambda g, x, y: g)


def add(x, y):
  return add_p.bind(*_coerce_scalars(x, y))


# ---- sub
sub_p = _binop("sub", utils.is_number, "numbers", mhlo.SubtractOp)
ad.defjvp(sub_p, lambda g, x, y: g, lambda g, x, y: neg(g))


def sub(x, y):
  return sub_p.bind(*_coerce_scalars(x, y))


# ---- mul
mul_p = _binop("mul", utils.is_number, "numbers", mhlo.MulOp)
ad.defjvp(mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))


def mul(x, y):
  return mul_p.bind(*_coerce_scalars(x, y))


# ---- neg
neg_p = _unop("neg", utils.is_number, "numbers", mhlo.NegOp)
ad.deflinear(neg_p, lambda ct: [neg(ct)])


def neg(x):
  return neg_p.bind(x)


# ---- sin
sin_p = _unop("sin", utils.is_inexact, "floating point or complex", mhlo.SineOp)
ad.defjvp(sin_p, lambda g, x: mul(g, cos(x)))


def sin(x):
  return sin_p.bind(x)


# ---- cos
cos_p = _unop("cos", utils.is_inexact, "floating point or complex", mhlo.CosineOp)
ad.defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))


def cos(x):
  return cos_p.bind(x)
