"""Helpers that build the common shapes of primitive blocks.

`standard_primitive(name, shape_rule, dtype_rule, weak_type_rule)` gives a primitive whose
abstract evaluation derives the output aval from those rules and whose evaluation is the
runtime's compiled dispatch.  `nary_lowering(op_class)` is the lowering of an MHLO op
whose result type is the equation's output type.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive


def standard_primitive(name: str, shape_rule: Callable, dtype_rule: Callable,
                       weak_type_rule: Callable | None = None) -> Primitive:
  prim = Primitive(name)
  weak_type_rule = weak_type_rule or _all_weak

  def abstract_eval(*avals, **params):
    return ShapedArray(shape_rule(*avals, **params), dtype_rule(*avals, **params),
                       weak_type_rule(*avals, **params))
  prim.def_abstract_eval(abstract_eval)
  return prim


def _all_weak(*avals, **params) -> bool:
  return bool(avals) and all(a.weak_type for a in avals)


def same_shapes(name: str):
  def rule(*avals, **params):
    shapes = {a.shape for a in avals}
    if len(shapes) != 1:
      shown = ", ".join(a.str_short() for a in avals)
      raise TypeError(f"{name} requires arguments of the same shape, got {shown}; "
                      "broadcast them first (minijax.numpy broadcasts for you)")
    return avals[0].shape
  return rule


def same_dtypes_accepting(name: str, accepted: Callable[[np.dtype], bool], what: str):
  def rule(*avals, **params):
    dts = {a.dtype for a in avals}
    if len(dts) != 1:
      shown = ", ".join(a.str_short() for a in avals)
      raise TypeError(f"{name} requires arguments of the same dtype, got {shown}; "
                      "convert them with lax.convert_element_type (minijax.numpy promotes)")
    dtype = avals[0].dtype
    if not accepted(dtype):
      raise TypeError(f"{name} does not accept dtype {dtype}; it accepts {what}")
    return dtype
  return rule


def any_dtype(_):
  return True


def is_number(dtype):
  return dtype != dtypes.bool_


def is_inexact(dtype):
  return dtypes.is_inexact(dtype)


def is_int_or_bool(dtype):
  return dtypes.is_integer(dtype) or dtype == dtypes.bool_


def nary_lowering(op_class) -> Callable:
  def rule(ctx, *args, **params):
    return op_class(*args).result
  return rule


def is_float(dtype):
  return dtypes.is_float(dtype)


def is_integer(dtype):
  return dtypes.is_integer(dtype)


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
  return axis % ndim
