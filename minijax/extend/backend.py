"""`jax.extend.backend`: the XLA client behind the devices, for libraries that ask which
platform they run on (`get_backend().platform`) or reach the client itself.

minijax has one client, the CPU's (`minijax.runtime.backend`); naming any other platform
is the error JAX gives for a platform that is not present."""
from __future__ import annotations

from minijax.runtime import backend as _runtime


def get_backend(platform=None):
  """The XLA client of `platform` (a name such as "cpu", a client, or None: the default)."""
  _runtime._check_backend(platform)
  return _runtime.get_client()


def backends() -> dict:
  """Every platform's client, by name."""
  return {"cpu": _runtime.get_client()}


def get_default_device():
  """Where values without a device go (`jax.default_device`, else device 0)."""
  return _runtime.default_device()
