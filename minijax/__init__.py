"""minijax: a small, readable reimplementation of JAX's core stack with fast host taps."""
import os as _os

# As JAX does: jaxlib's C++ INFO logs (device counts, ...) stay quiet unless the user asked.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
from minijax.config import config
from minijax.runtime.array import Array
from minijax.runtime.backend import (devices, local_devices, process_index, process_count,
                                    process_indices, host_count, host_id, host_ids)
from minijax.runtime.barrier import effects_barrier
from minijax import staging as _staging  # installs the eager and jit_p impls
from minijax import lax
from minijax import numpy  # installs the array operators and methods
from minijax.api import (jit, clear_caches, pmap, shard_map, smap, make_jaxpr, grad,
                         value_and_grad, vjp, jvp, linearize, vmap, fwd_and_bwd, eval_shape,
                         linear_transpose, closure_convert, ShapeDtypeStruct, checkpoint,
                         checkpoint_policies, remat, named_call)
from minijax.jacobians import jacfwd, jacrev, jacobian, hessian
from minijax.custom_derivatives import custom_gradient, custom_jvp, custom_vjp
from minijax.api import (typeof, disable_jit, check_tracer_leaks, checking_leaks,
                         explain_cache_misses, default_matmul_precision, numpy_rank_promotion,
                         numpy_dtype_promotion, enable_checks, allow_f16_reductions,
                         no_tracing, no_execution, enable_x64)
from minijax.config import make_user_context
from minijax.dtypes import float0
from minijax.placement import (device_put, device_get, block_until_ready, copy_to_host_async,
                               device_count, make_array_from_callback,
                               make_array_from_single_device_arrays, live_arrays,
                               make_array_from_process_local_data,
                               local_device_count, default_backend, print_environment_info)
from minijax.core.jaxpr import named_scope
from minijax.runtime.sharded import Shard
from minijax.core.trace import ensure_compile_time_eval
from minijax.runtime.backend import Device
from minijax import tree, tree_util, errors, dtypes, test_util
from minijax import sharding
from minijax.sharding import NamedSharding, PartitionSpec as P, make_mesh, set_mesh
from minijax import distributed
from minijax.callbacks import pure_callback
from minijax import debug
from minijax import ad_checkpoint
from minijax.as_jax import install_as_jax
from minijax import typing, flatten_util, stages, extend  # JAX's public modules libraries use
from minijax import custom_batching, dlpack, ffi, monitoring
from minijax import ref, ad, effects, ops
from minijax.ref import Ref, new_ref, freeze, empty_ref, free_ref

__version__ = "0.1.0"
from minijax import random  # noqa: E402
from minijax import scipy  # noqa: E402
from minijax import nn  # noqa: E402
from minijax import image  # noqa: E402
from minijax import profiler  # noqa: E402  (after the client's module: jaxlib's profiler then logs quietly)
from minijax.config import flag_context as _flag_context  # noqa: E402
default_prng_impl = _flag_context("jax_default_prng_impl")
legacy_prng_key = _flag_context("jax_legacy_prng_key")
enable_custom_prng = _flag_context("jax_enable_custom_prng")
debug_key_reuse = _flag_context("jax_debug_key_reuse")
debug_nans = _flag_context("jax_debug_nans")
debug_infs = _flag_context("jax_debug_infs")
log_compiles = _flag_context("jax_log_compiles")
threefry_partitionable = _flag_context("jax_threefry_partitionable")
default_device = _flag_context("jax_default_device")
tap_delivery = _flag_context("tap_delivery")  # minijax's own: when taps reach the host
from minijax.config import transfer_guard  # noqa: E402
transfer_guard_host_to_device = _flag_context("jax_transfer_guard_host_to_device")
transfer_guard_device_to_device = _flag_context("jax_transfer_guard_device_to_device")
transfer_guard_device_to_host = _flag_context("jax_transfer_guard_device_to_host")


_DEPRECATED = {"device_put_sharded": "jax.device_put(xs, NamedSharding(mesh, P('i')))",
               "device_put_replicated": "jax.device_put(x, NamedSharding(mesh, P()))"}


def __getattr__(name):
  if name == "experimental":  # (as `jax.experimental` after `import jax`; imported on use)
    import importlib
    return importlib.import_module("minijax.experimental")
  if name in _DEPRECATED:  # removed from JAX 0.10.2's top level, with this message
    raise AttributeError(f"jax.{name} is deprecated and not provided by minijax; use "
                         f"{_DEPRECATED[name]} instead.")
  raise AttributeError(f"module 'minijax' has no attribute {name!r}")
