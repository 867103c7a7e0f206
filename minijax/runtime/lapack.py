"""jaxlib's CPU LAPACK kernels, registered with the XLA client as custom-call targets.

jaxlib ships XLA FFI handlers for the LAPACK routines JAX uses on CPU (getrf, geqrf,
orgqr/ungqr, syevd/heevd, gesdd, trsm, potrf, ...): `jaxlib.cpu._lapack.registrations()`
maps each target name (`lapack_sgetrf_ffi`, `lapack_zheevd_ffi`, ...) to a PyCapsule holding
its handler.  They are typed FFI handlers (the module calls them with `api_version = 4` and
their attributes in `backend_config`), registered here for the CPU platform as soon as the
client exists, like minijax's own tap handler; the lowering rules of `minijax.lax.linalg`
only name them.  Registering costs microseconds: the kernels look up the LAPACK routines
themselves the first time a module that calls them is lowered (`lax.linalg` asks jaxlib to).
"""
from __future__ import annotations

from jaxlib import xla_client

from minijax.runtime import backend


def targets() -> dict:
  """Target name -> FFI handler capsule, for every LAPACK kernel jaxlib provides."""
  from jaxlib.cpu import _lapack
  return dict(_lapack.registrations())


def _register_targets(client) -> None:
  for name, capsule in targets().items():
    xla_client.register_custom_call_target(name, capsule, platform="cpu", api_version=1)


backend.on_client_created(_register_targets)
