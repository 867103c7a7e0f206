"""`jax.interpreters.mlir` for libraries: JAX's lowering API over minijax's
(`minijax.lowering.mlir`).

A rule has JAX's signature, `rule(ctx, *operands, **params)` returning a sequence of
`ir.Value`s; registering it adapts the one-result case to minijax's (a bare value).
Rules for platforms other than the CPU minijax runs on are accepted and unused.
`lower_fun(fun)` makes a rule from a Python function on arrays: it is traced at the
operands' avals and its jaxpr emitted inline."""
from __future__ import annotations

import io
from typing import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir

from minijax.interpreters import partial_eval as pe
from minijax.lowering import mlir as _mlir
from minijax.lowering.context import make_ir_context
from minijax.lowering.mlir import (LoweringRuleContext, ModuleContext, aval_to_ir_type,
                                   custom_call, dtype_to_ir_type, ir_attribute, ir_constant,
                                   jaxpr_subcomp, token_type)
from minijax.lowering.tokens import TokenSet

Value = ir.Value
Token = ir.Value  # a value of `token_type()`

LoweringRule = Callable[..., Sequence[ir.Value]]


def register_lowering(primitive, rule: LoweringRule, platform: str | None = None, *,
                      inline: bool = True, cacheable: bool = True) -> LoweringRule:
  """Registers `rule` (JAX's signature) as `primitive`'s lowering on the CPU."""
  del inline, cacheable
  if platform not in (None, "cpu"):
    return rule

  def adapted(ctx, *operands, **params):
    out = rule(ctx, *operands, **params)
    if not primitive.multiple_results and isinstance(out, (list, tuple)):
      (out,) = out
    return out

  _mlir.register_lowering(primitive, adapted)
  return rule


def lower_fun(fun: Callable, multiple_results: bool = True) -> LoweringRule:
  """A lowering rule that emits `fun(*operands, **params)` traced at the operands' avals
  (`fun` returns a sequence of arrays when `multiple_results`, else one)."""
  def rule(ctx: LoweringRuleContext, *operands, **params):
    def flat(*xs):
      out = fun(*xs, **params)
      return list(out) if multiple_results else [out]
    closed = pe.trace_to_closed_jaxpr(flat, list(ctx.avals_in))
    return _mlir.lower_call_inline(ctx, closed, *operands)
  return rule


def aval_to_ir_types(aval) -> tuple[ir.Type, ...]:
  return (aval_to_ir_type(aval),)


def ir_constants(value) -> tuple[ir.Value, ...]:
  return (ir_constant(value),)


def i32_attr(i: int) -> ir.IntegerAttr:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(i))


def i64_attr(i: int) -> ir.IntegerAttr:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(i))


def dense_int_array(xs) -> ir.DenseI64ArrayAttr:
  return ir.DenseI64ArrayAttr.get([int(x) for x in xs])


def dense_int_elements(xs) -> ir.DenseIntElementsAttr:
  values = np.asarray(xs, np.int64)
  return ir.DenseIntElementsAttr.get(
      values, type=ir.RankedTensorType.get(values.shape, ir.IntegerType.get_signless(64)))


def flatten_ir_values(xs) -> list:
  """The values of `xs`, each a value or a sequence of them, in one list."""
  out = []
  for x in xs:
    out.extend(x if isinstance(x, (list, tuple)) else [x])
  return out


flatten_ir_types = flatten_ir_values


def unflatten_ir_values_like_types(xs, types) -> list:
  """`xs` (flat) grouped as `types` is: one value per type, a list per sequence of types."""
  xs = iter(xs)
  return [[next(xs) for _ in t] if isinstance(t, (list, tuple)) else next(xs) for t in types]


def shape_tensor(sizes) -> ir.Value:
  """A 1-d int32 tensor of the (static) dimension sizes."""
  return ir_constant(np.array([int(d) for d in sizes], np.int32))


def module_to_string(module: ir.Module, enable_debug_info: bool | None = None) -> str:
  return module.operation.get_asm(enable_debug_info=bool(enable_debug_info))


def module_to_bytecode(module: ir.Module) -> bytes:
  out = io.BytesIO()
  module.operation.write_bytecode(file=out)
  return out.getvalue()


def emit_python_callback(*args, **kwargs):
  raise NotImplementedError("mlir.emit_python_callback: minijax has no such lowering "
                            "helper; use minijax.pure_callback or io_callback in the function "
                            "instead")


__all__ = ["LoweringRuleContext", "ModuleContext", "Token", "TokenSet", "Value", "aval_to_ir_type",
           "aval_to_ir_types", "custom_call", "dense_int_array", "dense_int_elements",
           "dtype_to_ir_type", "emit_python_callback", "flatten_ir_types", "flatten_ir_values",
           "i32_attr", "i64_attr", "ir", "ir_attribute", "ir_constant", "ir_constants",
           "jaxpr_subcomp", "lower_fun", "make_ir_context", "module_to_bytecode",
           "module_to_string", "register_lowering", "shape_tensor", "token_type",
           "unflatten_ir_values_like_types"]
