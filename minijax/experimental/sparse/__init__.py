"""`minijax.experimental.sparse`: minijax has no sparse arrays.  The names exist so that
libraries importing them load; creating one, or calling a `sparsify`-ed function, raises
NotImplementedError.  `linalg` holds
JAX's dense-operator eigensolver, `lobpcg_standard`."""
from __future__ import annotations

from minijax.experimental.sparse import linalg  # noqa: F401


class BCOO:
  """JAX's batched-COO sparse array (not implemented in minijax)."""

  def __init__(self, *args, **kwargs):
    raise NotImplementedError("minijax has no sparse arrays (jax.experimental.sparse.BCOO); "
                              "use a dense array")

  @classmethod
  def fromdense(cls, *args, **kwargs):
    cls()

  @classmethod
  def from_scipy_sparse(cls, *args, **kwargs):
    cls()


def sparsify(f, use_tracer=False):
  """JAX's transformation of `f` to take sparse arrays (not implemented in minijax): the
  returned function raises when called."""
  del use_tracer

  def sparsified(*args, **kwargs):
    raise NotImplementedError(f"minijax has no sparse arrays (jax.experimental.sparse."
                              f"sparsify of {getattr(f, '__name__', f)!r}); call the function "
                              f"on dense arrays instead")
  return sparsified


__all__ = ["BCOO", "linalg", "sparsify"]
