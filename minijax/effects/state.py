"""Handling the state effect: `discharge_state` and `run_state`.

`discharge_state(closed_jaxpr)` is the discharge pass itself (`interpreters.discharge`):
the result is a pure ClosedJaxpr whose ref inputs became inputs of the values they hold,
and whose outputs are followed by each ref input's final value.

`run_state(f)(init)` gives `f` fresh refs holding `init` (a pytree of arrays), runs it and
returns the refs' final values (the same pytree).  It is pure: `f` is traced with refs,
discharged, and the pure program evaluated, so jit, grad, jvp and vmap see only values.
Refs that `f` closes over (from the enclosing function) are read before and written after,
like the refs of a loop body (`lax/control_flow/refs.py`).
"""
from __future__ import annotations

from typing import Callable

from minijax.tree_util import internal as tree_util
from minijax.core.avals import get_aval
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr, hoist_consts
from minijax.core.state import AbstractRef
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.discharge import discharge_state
from minijax.lax import state as lax_state
from minijax.lax.control_flow import refs as control_flow_refs

__all__ = ["discharge_state", "run_state"]


def run_state(f: Callable) -> Callable:
  """`run_state(f)(init)`: the final values of fresh refs holding `init` after `f(refs)`."""
  def run(init):
    flat, tree = tree_util.tree_flatten(init)
    avals = [AbstractRef(get_aval(x).strip_weak_type()) for x in flat]

    def body(*refs):
      out = f(tree.unflatten(list(refs)))
      if out is not None:
        raise TypeError(f"run_state: the function should return None (it updates its refs), "
                        f"got {type(out).__name__}")
      return []

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(body, avals)
    closed, consts = hoist_consts(ClosedJaxpr(jaxpr, consts))
    outer = control_flow_refs.ref_positions(closed.in_avals[:len(consts)])
    pure = discharge_state(closed)
    values = list(consts)
    for k in outer:
      values[k] = lax_state.get(consts[k], ...)
    values += [lax_state.convert_for(a.inner_aval, x) for a, x in zip(avals, flat)]
    finals = eval_jaxpr(pure.jaxpr, pure.consts, *values)
    for k, v in zip(outer, finals):
      lax_state.set(consts[k], ..., v)
    return tree.unflatten(finals[len(outer):])
  return run
