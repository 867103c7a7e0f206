"""The MLIR context every lowering and compilation shares.

One context per thread, with jaxlib's dialects (mhlo, chlo, stablehlo, func, ...) registered and
loaded, so that IR built by lowering rules can be handed straight to the XLA client.
"""
from __future__ import annotations

import threading

from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, mhlo

_local = threading.local()


def make_ir_context() -> ir.Context:
  context = ir.Context()
  registry = ir.DialectRegistry()
  _jax_mlir_ext.register_dialects(registry)
  context.append_dialect_registry(registry)
  context.load_all_available_dialects()
  mhlo.register_mhlo_dialect(context)
  # CHLO (XLA's ops without an HLO instruction: erf_inv, lgamma, ...) must be registered
  # here too: built in a context without it, its ops verify as other CHLO ops
  chlo.register_dialect(context)
  return context


def ir_context() -> ir.Context:
  """This thread's shared MLIR context."""
  context = getattr(_local, "context", None)
  if context is None:
    context = _local.context = make_ir_context()
  return context
