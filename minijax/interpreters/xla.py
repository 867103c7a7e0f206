"""`jax.interpreters.xla` for libraries: `canonicalize_dtype_handlers`, JAX's table of how
each Python type's values are canonicalized before a computation.

minijax canonicalizes every argument in one place (`runtime.array.device_put`: Python
scalars, numpy values, and any object with `dtype` and `shape` that numpy can convert);
entries libraries add here are kept but not consulted, since that conversion already
covers the array-like types they register."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

canonicalize_dtype_handlers: dict[type, Callable[[Any], Any]] = {
    np.ndarray: np.asarray, np.generic: np.asarray}

__all__ = ["canonicalize_dtype_handlers"]
