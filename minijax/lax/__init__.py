"""`minijax.lax`: primitives, one block per primitive holding every rule it has.

Importing it also hands the interpreters the array operations they build on
(`interpreters.array_ops`)."""
from minijax.lax.call import jit_p
from minijax.lax.accuracy import AccuracyMode, Tolerance  # noqa: F401
from minijax.lax.elementwise import *  # noqa: F401,F403
from minijax.lax.complex_ops import *  # noqa: F401,F403
from minijax.lax.structural import *  # noqa: F401,F403
from minijax.lax.misc import *  # noqa: F401,F403
from minijax.lax.markers import *  # noqa: F401,F403
from minijax.lax.slicing import *  # noqa: F401,F403
from minijax.lax.gather import *  # noqa: F401,F403
from minijax.lax.reductions import *  # noqa: F401,F403
from minijax.lax.reductions import take_along_axis  # noqa: F401
from minijax.lax.dot import *  # noqa: F401,F403
from minijax.lax.ragged_dot import *  # noqa: F401,F403
from minijax.lax.convolution import *  # noqa: F401,F403
from minijax.lax.windowed_reductions import *  # noqa: F401,F403
from minijax.lax.fft import FftType, fft, fft_p  # noqa: F401
from minijax.lax.associative_scan import associative_scan  # noqa: F401
from minijax.lax.prng import *  # noqa: F401,F403
from minijax.lax.special import *  # noqa: F401,F403
from minijax.lax.incomplete import *  # noqa: F401,F403
from minijax.lax.bessel import *  # noqa: F401,F403
from minijax.lax.generic_reduce import *  # noqa: F401,F403
from minijax.lax.shape_ops import *  # noqa: F401,F403
from minijax.lax.parallel import *  # noqa: F401,F403
from minijax.lax.sharding import sharding_constraint_p, with_sharding_constraint  # noqa: F401
from minijax.lax.shard_map import shard_map_p  # noqa: F401
from minijax.lax.control_flow import cond, cond_p, fori_loop, map, platform_dependent, scan, scan_p, switch, while_loop, while_p  # noqa: F401,A004
from minijax.lax.control_flow import custom_linear_solve, custom_root, linear_solve_p  # noqa: F401
from minijax.lax import linalg  # noqa: F401,E402

from minijax.lax import state  # noqa: F401,E402

from minijax.interpreters import array_ops as _array_ops  # noqa: E402

_array_ops.install(zeros=lambda aval: full(aval.shape, 0, aval.dtype), add_any=add_any,
                   broadcast_in_dim=broadcast_in_dim, transpose=transpose,
                   reduce_sum=reduce_sum,
                   new_ref=lambda x: state.new_ref_p.bind(x, kind=None, memory_space=None),
                   freeze=state.freeze_p.bind,
                   addupdate=lambda ref, x: state.addupdate(ref, ..., x))
