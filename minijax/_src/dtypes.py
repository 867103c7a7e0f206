"""`jax._src.dtypes` for libraries: minijax's dtype helpers, and the base classes of
extended dtypes that flax subclasses at import (`extended`, `ExtendedDType`)."""
import numpy as np

from minijax.core import dtypes as _core_dtypes
from minijax.dtypes import *  # noqa: F401,F403
from minijax.dtypes import TypePromotionError  # noqa: F401

DType = np.dtype
to_complex_dtype = _core_dtypes.to_complex_dtype  # (tinygp's ARMA kernel)
to_inexact_dtype = _core_dtypes.to_inexact_dtype

if hasattr(_core_dtypes, "ExtendedDType"):  # typed PRNG keys' dtypes (minijax.random)
  extended = _core_dtypes.extended
  ExtendedDType = _core_dtypes.ExtendedDType
else:  # a stand-in until extended dtypes land in minijax.core.dtypes
  class extended(np.generic):  # noqa: N801
    """The abstract scalar type of extended dtypes."""

  class ExtendedDType:
    """Base of extended dtypes."""
    type = extended


def supports_inf(dtype) -> bool:
  """Whether the floating dtype `dtype` has infinities."""
  return bool(np.isinf(np.array(np.inf).astype(dtype)))
