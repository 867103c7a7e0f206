"""`minijax.typing`: the annotations JAX code writes (`jax.typing.ArrayLike`, `DTypeLike`).

They are for type checkers and `isinstance`-free annotations only; nothing checks them at
run time."""
from __future__ import annotations

from typing import Any, Union

import numpy as np

from minijax.runtime.array import Array

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
"""A value a minijax function accepts as an array: an Array (or tracer), a numpy array or
scalar, or a Python scalar."""

DTypeLike = Union[str, type, np.dtype, Any]
"""A value accepted as a dtype: a name, a scalar type or a numpy dtype."""

__all__ = ["ArrayLike", "DTypeLike"]
