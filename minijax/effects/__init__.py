"""`minijax.effects`: handling effects by rewriting the programs that have them.

`discharge_state` turns a jaxpr that uses mutable array references into a pure one (the
refs' values threaded through, their final values appended to the outputs); `run_state`
runs a stateful function on fresh refs and returns their final values, as a pure function.
"""
from minijax.effects.state import discharge_state, run_state

__all__ = ["discharge_state", "run_state"]
