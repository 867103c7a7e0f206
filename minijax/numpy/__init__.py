"""`minijax.numpy`: the numpy API on minijax arrays, eager or traced.

Functions promote their arguments with JAX's dtype lattice (Python scalars are weakly typed),
broadcast with numpy's rules and bind lax primitives, so the same code runs eagerly and
under every transformation.  Importing this package installs the array operators and
methods on `Array` and `Tracer` (see array_methods.py).
"""
from __future__ import annotations

import ml_dtypes as _ml_dtypes
import numpy as _np

from minijax.core import dtypes as _dtypes
from minijax.core.trace import Tracer as _Tracer
from minijax.runtime.array import Array as _Array

from minijax.numpy.ufuncs import (  # noqa: F401
    add, subtract, multiply, true_divide, divide, floor_divide, remainder, mod, fmod, divmod,
    power, pow, maximum, minimum, fmax, fmin, arctan2, logaddexp, hypot, copysign,
    equal, not_equal, less, less_equal, greater, greater_equal,
    logical_and, logical_or, logical_xor, logical_not, bitwise_and, bitwise_or, bitwise_xor,
    bitwise_not, invert, left_shift, right_shift,
    negative, positive, absolute, abs, sign, floor, ceil, trunc, rint, fix, round, around,
    exp, exp2, log, log2, log10, log1p, expm1, sin, cos, tan, tanh, sqrt, sinh, cosh,
    arcsin, arccos, arctan, arctanh, arcsinh, arccosh, cbrt, deg2rad, rad2deg, radians,
    degrees, square, reciprocal, isnan, isfinite, isinf, signbit, isclose, allclose,
    array_equal, clip, where)
from minijax.numpy.complex_numbers import (  # noqa: F401
    real, imag, conjugate, conj, angle, iscomplex, isreal, iscomplexobj, isrealobj)
from minijax.numpy.creation import (  # noqa: F401
    array, asarray, full, zeros, ones, empty, zeros_like, ones_like, empty_like, full_like,
    arange, linspace, eye, identity, tri, tril, triu, meshgrid, geomspace, fromfunction)
from minijax.numpy.reductions import (  # noqa: F401
    sum, prod, max, min, amax, amin, all, any, count_nonzero, mean, var, std, argmax, argmin,
    cumsum, cumprod, cumulative_sum, cumulative_prod, ptp, average, array_equiv)
from minijax.numpy.shape import (  # noqa: F401
    reshape, ravel, transpose, permute_dims, swapaxes, moveaxis, squeeze, expand_dims,
    broadcast_to, broadcast_shapes, broadcast_arrays, atleast_1d, atleast_2d, atleast_3d,
    concatenate, concat, stack, hstack, vstack, dstack, column_stack, split, array_split,
    hsplit, vsplit, tile, repeat, flip, fliplr, flipud, roll, rot90, sort, argsort,
    take_along_axis, take, diagonal, trace, diag, rollaxis, resize, dsplit, diagflat,
    block, trim_zeros, sort_complex, lexsort, partition, argpartition)
from minijax.numpy.padding import pad  # noqa: F401
from minijax.numpy.indexing import nonzero, flatnonzero, argwhere  # noqa: F401
from minijax.numpy.extras import (  # noqa: F401
    diff, append, apply_over_axes, searchsorted, cross, kron, astype, isin, indices,
    triu_indices, tril_indices, logspace, unravel_index, select, piecewise, heaviside,
    float_power, sinc, interp, digitize, bincount, cov, corrcoef, ldexp, frexp, delete,
    insert, choose, diag_indices, ediff1d, convolve, correlate, apply_along_axis)
from minijax.numpy.statistics import (  # noqa: F401
    nan_to_num, nansum, nanprod, nanmax, nanmin, nanmean, nanvar, nanstd, nanargmax,
    nanargmin, nancumsum, nancumprod, median, quantile, percentile, nanmedian, nanquantile,
    nanpercentile)
from minijax.numpy.products import (  # noqa: F401
    dot, matmul, vdot, inner, outer, tensordot, einsum, vecmat, matvec)
from minijax.numpy.polynomial import (  # noqa: F401
    polyval, polyadd, polysub, polymul, polydiv, polyder, polyint, poly, roots, vander,
    polyfit)
from minijax.numpy.setops import (  # noqa: F401
    unique, union1d, setdiff1d, setxor1d, intersect1d, unique_all, unique_counts, unique_inverse,
    unique_values)
from minijax.numpy.index_tricks import (  # noqa: F401
    newaxis, s_, index_exp, mgrid, ogrid, r_, c_, ix_, diag_indices_from, tril_indices_from,
    triu_indices_from, mask_indices, ravel_multi_index, put, put_along_axis, place,
    fill_diagonal, compress, extract)
from minijax.numpy.windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: F401
from minijax.numpy.histograms import (  # noqa: F401
    histogram_bin_edges, histogram, histogram2d, histogramdd)
from minijax.numpy.math_functions import (  # noqa: F401
    gcd, lcm, modf, nextafter, spacing, i0, unwrap, gradient, packbits, unpackbits)
from minijax.numpy.host_io import (  # noqa: F401
    ComplexWarning, get_printoptions, set_printoptions, array_repr, array_str, save, savez,
    load, frombuffer, fromstring, fromfile, fromiter, from_dlpack, einsum_path)
from minijax.numpy import linalg  # noqa: F401
from minijax.numpy import fft  # noqa: F401
from minijax.numpy.vectorize import vectorize  # noqa: F401
from minijax.numpy.names import *  # noqa: F401,F403
from minijax.numpy.ufunc_objects import (  # noqa: F401  (the ufuncs, with their methods)
    ufunc, frompyfunc, add, multiply, subtract, maximum, minimum, logical_and, logical_or,
    logical_xor, bitwise_and, bitwise_or, bitwise_xor, logaddexp, logaddexp2, negative)



class _ArrayMeta(type):
  def __instancecheck__(cls, obj):
    return isinstance(obj, (_Array, _Tracer))


class ndarray(metaclass=_ArrayMeta):
  """`isinstance(x, jnp.ndarray)` holds for arrays and for traced values."""


class _ScalarMeta(type):
  """`jnp.float32(x)` makes an array of that dtype (traced values included); the type
  itself works wherever numpy expects a dtype, and reprs as a class of this module does
  (`<class 'minijax.numpy.float32'>`, as JAX's `<class 'jax.numpy.float32'>`)."""

  def __call__(cls, x=0):
    return asarray(x, dtype=cls.dtype)

  # As JAX's scalar types: equal to (and hashed like) numpy's, so `np.float32 == jnp.float32`
  # and dictionaries keyed by numpy types find them.
  def __eq__(cls, other):
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other):
    return not cls == other

  def __hash__(cls):
    return hash(cls.dtype.type)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)


def _scalar_type(name, dtype):
  return _ScalarMeta(name, (object,), {"dtype": _np.dtype(dtype), "__module__": __name__})


bool_ = _scalar_type("bool_", _np.bool_)
int8, int16, int32, int64 = (_scalar_type(n, n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_scalar_type(n, n) for n in ("uint8", "uint16", "uint32",
                                                              "uint64"))
float16, float32, float64 = (_scalar_type(n, n) for n in ("float16", "float32", "float64"))
complex64, complex128 = _scalar_type("complex64", "complex64"), _scalar_type("complex128",
                                                                              "complex128")
bfloat16 = _scalar_type("bfloat16", _dtypes.bfloat16)
# ml_dtypes' narrow types under JAX's names (computing with them is the dtypes' business).
(float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,
 float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn, int2, int4, uint2, uint4) = (
    _scalar_type(n, getattr(_ml_dtypes, n)) for n in (
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
        "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int2", "int4",
        "uint2", "uint4"))
# Named as in JAX (promotion, limits, itemsize_bits); arrays of them are refused.
int1, uint1, float6_e2m3fn, float6_e3m2fn = (
    _scalar_type(n, getattr(_ml_dtypes, n))
    for n in ("int1", "uint1", "float6_e2m3fn", "float6_e3m2fn"))
float_ = float64
# numpy's C-style names for the same types.
double, single, half = float64, float32, float16
cdouble, csingle, complex_ = complex128, complex64, complex128
uint = uint64
generic, character, flexible, object_ = _np.generic, _np.character, _np.flexible, _np.object_
int_ = int64
bool = bool_  # noqa: A001
printoptions = _np.printoptions
dtype = _np.dtype
iinfo = _ml_dtypes.iinfo  # (numpy's, and the narrow integers')


def finfo(dtype):
  """Machine limits of a floating point type, bfloat16 included."""
  import ml_dtypes
  return ml_dtypes.finfo(_np.dtype(dtype))


def issubdtype(arg1, arg2) -> bool:
  """numpy's `issubdtype`, which knows ml_dtypes' types (see `minijax.dtypes.issubdtype`)."""
  return _dtypes.issubdtype(arg1, arg2)


isdtype = _dtypes.isdtype
integer, floating, inexact, number, signedinteger, unsignedinteger, complexfloating = (
    _np.integer, _np.floating, _np.inexact, _np.number, _np.signedinteger,
    _np.unsignedinteger, _np.complexfloating)
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None


def _unwrap(a):
  """The array of an object that defines `__jax_array__` (JAX's protocol), else `a`."""
  return a.__jax_array__() if hasattr(a, "__jax_array__") and not hasattr(a, "aval") else a


def ndim(a) -> int:
  return _np.ndim(_unwrap(a)) if not hasattr(a, "aval") else a.ndim


def shape(a) -> tuple:
  return _np.shape(_unwrap(a)) if not hasattr(a, "aval") else a.shape


def size(a, axis=None) -> int:
  s = shape(a)
  if axis is None:
    return int(_np.prod(s))
  return int(_np.prod([s[i] for i in (axis if isinstance(axis, tuple) else (axis,))]))


def result_type(*args):
  """The dtype JAX's promotion gives for these values or dtypes."""
  if not args:
    raise ValueError("at least one array or dtype is required")
  typed = []
  for a in args:
    if a is int or a is float or a is complex:  # weak, as values of these types are
      typed.append((_dtypes.python_scalar_dtype(a(0)), True))
    elif isinstance(a, (type, _np.dtype, str)) and not isinstance(a, _dtypes.PYTHON_SCALARS):
      typed.append((_np.dtype(a), False))
    else:
      typed.append(_dtypes.dtype_and_weak_type(a))
  return _dtypes.result_type(*typed)[0]


def promote_types(a, b):
  """The dtype a binary operation gives operands of dtypes `a` and `b` (not canonicalized)."""
  return _dtypes.promote_types(a, b)


def can_cast(from_, to, casting="safe"):
  return _np.can_cast(from_, to, casting)


def isscalar(element) -> bool:
  element = _unwrap(element)
  return _np.isscalar(element) or (hasattr(element, "aval") and element.ndim == 0)


def copy(a, order=None):
  """A copy of `a` (an Array gets a new buffer)."""
  if order not in (None, "K"):
    raise NotImplementedError("Only implemented for order='K'")
  return asarray(a).copy()


def __getattr__(name):
  if hasattr(_np, name):
    raise AttributeError(f"minijax.numpy does not implement numpy.{name} yet; build it from "
                         "the functions it has, or from minijax.lax")
  raise AttributeError(f"module 'minijax.numpy' has no attribute {name!r}")


from minijax.numpy import array_methods as _array_methods  # noqa: E402

_array_methods.install_all()
