"""`minijax.scipy.optimize`: not implemented in minijax yet.  `minimize` exists so that
libraries importing it load; calling it raises NotImplementedError."""
from __future__ import annotations

from typing import NamedTuple, Any


class OptimizeResults(NamedTuple):
  x: Any
  success: Any
  status: Any
  fun: Any
  jac: Any
  hess_inv: Any
  nfev: Any
  njev: Any
  nit: Any


def minimize(fun, x0, args=(), *, method: str, tol=None, options=None) -> OptimizeResults:
  raise NotImplementedError(f"minijax.scipy.optimize.minimize (method={method!r}) is not "
                            "implemented in minijax; use an optimizer from optax or "
                            "minijax.example_libraries.optimizers")


__all__ = ["OptimizeResults", "minimize"]
