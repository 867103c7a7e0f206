"""The MLIR context every lowering and compilation shares.

One context per thread, with jaxlib's dialects (mhlo, chlo, stablehlo, func, ...) registered and
loaded, so that IR built by lowering rules can be handed straight to the XLA client.  A
context keeps every type and attribute it ever made (about 2 KB per compiled shape), so a
thread starts a new one after `RENEW_AFTER` lowerings (making one takes about 10 ms),
never while one is current; modules built in the old one keep it alive while they live.

A thread that Python did not start (an XLA worker running a host callback that lowers
something) gets a fresh Python thread state on every call, and clearing that state would
free a context kept in a `threading.local` where jaxlib's objects cannot be freed (a
segfault); such threads keep theirs in `_foreign`, by thread id, for the life of the process.
"""
from __future__ import annotations

import threading

from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, mhlo, stablehlo

_local = threading.local()
_foreign: dict[int, "_ContextState"] = {}


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
  stablehlo.register_dialect(context)  # for `Lowered.as_text("stablehlo")`
  return context


RENEW_AFTER = 1024


def ir_context() -> ir.Context:
  """This thread's shared MLIR context."""
  state = _local
  if isinstance(threading.current_thread(), threading._DummyThread):
    state = _foreign.setdefault(threading.get_ident(), _ContextState())
  context = getattr(state, "context", None)
  uses = getattr(state, "uses", 0) + 1
  if context is None or (uses > RENEW_AFTER and ir.Context.current is None):
    context = state.context = make_ir_context()
    uses = 1
  state.uses = uses
  return context


class _ContextState:
  __slots__ = ("context", "uses")
