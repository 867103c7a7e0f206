"""`minijax.experimental.sparse`: minijax has no sparse arrays.  The names exist so that
libraries importing them load; creating one raises NotImplementedError.  `linalg` holds
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


__all__ = ["BCOO", "linalg"]
