"""A stand-in for `jax._src.internal_test_util.lax_test_util`: its dtype tables."""
from .test_util import dtypes

float_dtypes = dtypes.all_floating
complex_elem_dtypes = dtypes.floating
complex_dtypes = dtypes.complex
inexact_dtypes = dtypes.all_inexact
int_dtypes = dtypes.all_integer
uint_dtypes = dtypes.all_unsigned
bool_dtypes = dtypes.boolean
default_dtypes = float_dtypes + int_dtypes
number_dtypes = float_dtypes + complex_dtypes + int_dtypes + uint_dtypes
all_dtypes = number_dtypes + bool_dtypes
python_scalar_types = [bool, int, float, complex]
