"""Structured control flow: `cond`/`switch` (cond_p), `while_loop`/`fori_loop` (while_p) and
`scan` (scan_p), each a primitive whose params hold the traced sub-jaxprs; and the solvers
differentiated implicitly, `custom_linear_solve` (linear_solve_p) and `custom_root`."""
from minijax.lax.control_flow.cond import cond, cond_p, platform_dependent, switch
from minijax.lax.control_flow.loops import fori_loop, while_loop, while_p
from minijax.lax.control_flow.scan import scan, scan_p
from minijax.lax.control_flow.scan import scan_map as map  # noqa: A004  (lax.map, as in JAX)
from minijax.lax.control_flow.solves import custom_linear_solve, custom_root, linear_solve_p
