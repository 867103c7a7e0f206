"""`minijax.numpy.linalg`."""
from __future__ import annotations

from minijax.numpy.products import matmul, norm, outer, tensordot  # noqa: F401
