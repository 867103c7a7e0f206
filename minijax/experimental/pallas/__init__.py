"""`jax.experimental.pallas` names, for libraries that import their kernels at load time.

minijax has no Pallas (kernels written against refs to blocks of memory, compiled for a
GPU or TPU, or interpreted).  Libraries such as jax-md import their accelerator kernels
when their modules load and call them only on a GPU, so the names exist and loading
works; calling any of them raises `NotImplementedError` rather than computing anything.
"""
from __future__ import annotations

__all__ = ["BlockSpec", "GridSpec", "load", "num_programs", "pallas_call", "program_id",
           "store", "triton"]


def unsupported(name: str):
  """A stand-in for Pallas's `name` that raises when called."""
  def refuse(*_args, **_kwargs):
    raise NotImplementedError(f"minijax has no Pallas kernels (jax.experimental.pallas."
                              f"{name}); write the computation with minijax.numpy and lax")
  refuse.__name__ = refuse.__qualname__ = name
  return refuse


pallas_call = unsupported("pallas_call")
program_id = unsupported("program_id")
num_programs = unsupported("num_programs")
load = unsupported("load")
store = unsupported("store")
BlockSpec = unsupported("BlockSpec")
GridSpec = unsupported("GridSpec")

from minijax.experimental.pallas import triton  # noqa: E402,F401  (uses `unsupported`)
