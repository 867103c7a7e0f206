"""`jax.interpreters.mlir` for libraries: JAX's lowering API over minijax's
(`minijax.lowering.mlir`).

A rule has JAX's signature, `rule(ctx, *operands, **params)` returning a sequence of
`ir.Value`s; registering it adapts the one-result case to minijax's (a bare value).
Rules for platforms other than the CPU minijax runs on are accepted and unused.
`lower_fun(fun)` makes a rule from a Python function on arrays: it is traced at the
operands' avals and its jaxpr emitted inline."""
from __future__ import annotations

from typing import Callable, Sequence

from jaxlib.mlir import ir

from minijax.interpreters import partial_eval as pe
from minijax.lowering import mlir as _mlir
from minijax.lowering.mlir import (LoweringRuleContext, ModuleContext, aval_to_ir_type,
                                   dtype_to_ir_type, ir_constant, jaxpr_subcomp, token_type)

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


def emit_python_callback(*args, **kwargs):
  raise NotImplementedError("mlir.emit_python_callback: minijax has no such lowering "
                            "helper; use minijax.pure_callback or io_callback in the function "
                            "instead")


__all__ = ["LoweringRuleContext", "ModuleContext", "aval_to_ir_type", "aval_to_ir_types",
           "dtype_to_ir_type", "emit_python_callback", "ir", "ir_constant", "ir_constants",
           "jaxpr_subcomp", "lower_fun", "register_lowering", "token_type"]
