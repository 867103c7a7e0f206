"""`jit_p`: a call to a staged jaxpr (what `jit` binds when it is traced or transformed).

Params: `jaxpr` (a ClosedJaxpr with no constants; they are passed as leading arguments),
`name`, `donated_invars` and `device`.  Evaluating it compiles the jaxpr once per device
through the shared dispatch path; lowering it emits a `func.call` to one private function
per jaxpr, with the tokens of its ordered effects threaded through.
"""
from __future__ import annotations

from minijax.config import config
from minijax.core import pretty
from minijax.core.primitive import Primitive
from minijax.lowering import mlir
from minijax.runtime import dispatch

jit_p = Primitive("jit")
jit_p.multiple_results = True


def _jit_abstract_eval(*avals, jaxpr, name, donated_invars, device):
  return jaxpr.out_avals, jaxpr.effects


jit_p.def_effectful_abstract_eval(_jit_abstract_eval)

_compiled: dict = {}


def compiled_call(jaxpr, name, donated_invars, device):
  """The compiled executable for a jit_p equation (shared with the `jit` fast path)."""
  from minijax.runtime import backend
  device = backend.get_device(device) if device is not None else None
  key = (jaxpr, donated_invars, device)
  fn = _compiled.get(key)
  if fn is None:
    fn = _compiled[key] = dispatch.compile_jaxpr(
        jaxpr, device=device or backend.get_device(None), name=name, donated_args=donated_invars)
  return fn


def _jit_impl(*args, jaxpr, name, donated_invars, device):
  fn = compiled_call(jaxpr, name, donated_invars, device or _committed_device(args))
  outs = fn(*args)
  if config.debug_nans:
    dispatch.check_nans_in_jaxpr(jaxpr, args, outs, name)
  return outs


def _committed_device(args):
  from minijax.runtime.array import Array
  for x in args:
    if type(x) is Array:
      return x._device
  return None


jit_p.def_impl(_jit_impl)


def _jit_lowering(ctx, *args, jaxpr, name, donated_invars, device):
  return mlir.call_lowered_function(ctx, name, jaxpr, *args)


mlir.register_lowering(jit_p, _jit_lowering)


def _jit_pp(params, names, indent):
  lines = [f"name={params['name']}"]
  if any(params["donated_invars"]):
    lines.append(f"donated_invars={params['donated_invars']}")
  lines.append("jaxpr=" + pretty._pp_jaxpr_lines(params["jaxpr"], names, indent))
  return lines


pretty.pp_rules[jit_p] = _jit_pp
