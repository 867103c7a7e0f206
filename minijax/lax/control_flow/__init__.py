"""Structured control flow: `cond`/`switch` (cond_p), `while_loop`/`fori_loop` (while_p) and
`scan` (scan_p), each a primitive whose params hold the traced sub-jaxprs."""
from minijax.lax.control_flow.cond import cond, cond_p, platform_dependent, switch
from minijax.lax.control_flow.loops import fori_loop, while_loop, while_p
from minijax.lax.control_flow.scan import scan, scan_p
from minijax.lax.control_flow.scan import scan_map as map  # noqa: A004  (lax.map, as in JAX)
