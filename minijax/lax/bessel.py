"""The exponentially scaled modified Bessel functions of orders 0 and 1, `bessel_i0e(x) =
e^-|x| I0(x)` and `bessel_i1e(x) = e^-|x| I1(x)` (what `numpy.i0`, `numpy.kaiser` and
`scipy.special.i0e`/`i1e` are built from), both primitives, as in JAX.

`bessel_i1e` lowers to XLA's own (CHLO's `bessel_i1e`).  XLA has no `bessel_i0e`: it lowers
to Cephes' Chebyshev expansions of `i0e` (Moshier's coefficients; in float32 the shorter
series Cephes' single-precision `i0ef` uses, float16 and bfloat16 computed in float32),
`chbevl(x/2 - 2)` up to |x| = 8 and `chbevl(32/|x| - 2) / sqrt|x|` above, evaluated
operation by operation as JAX's lowering does, so the values are JAX's bit for bit.  Its
derivative is `i1e(x) - sign(x) i0e(x)`.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
from jaxlib.mlir.dialects import chlo

from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.elementwise import _const, abs, add, div, gt, le, mul, sign, sqrt, sub
from minijax.lax.structural import convert_to_array
from minijax.lowering import mlir


__all__ = ["bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p"]


def _float_operand(name, x):
  x = convert_to_array(x)
  if not dtypes.is_float(get_aval(x).dtype):
    raise TypeError(f"{name} does not accept dtype {get_aval(x).dtype}; it accepts floating "
                    "point (convert with astype)")
  return x


def _where(c, a, b):
  from minijax.lax.misc import select
  return select(c, a, b)


# ---- bessel_i1e
bessel_i1e_p = utils.standard_primitive(
    "bessel_i1e", utils.elementwise_shapes("bessel_i1e"),
    utils.same_dtypes_accepting("bessel_i1e", utils.is_float, "floating"))
batching.defvectorized(bessel_i1e_p)
mlir.register_lowering(bessel_i1e_p, utils.nary_lowering(chlo.BesselI1eOp), splat_literals=True)


def _i1e_jvp(g, out, x):
  # i0e(x) - i1e(x) (sign(x) + 1/x), which tends to 1/2 at 0 (taken within an epsilon)
  eps = float(ml_dtypes.finfo(get_aval(x).dtype).eps)
  not_tiny = gt(abs(x), _const(x, eps))
  safe = _where(not_tiny, x, _const(x, eps))
  slope = sub(bessel_i0e(safe), mul(out, add(sign(safe), div(_const(safe, 1), safe))))
  return mul(g, _where(not_tiny, slope, _const(x, 0.5)))


ad.defjvp2(bessel_i1e_p, _i1e_jvp)


def bessel_i1e(x):
  """`e^-|x| I1(x)`, elementwise, for floating point `x`."""
  return bessel_i1e_p.bind(_float_operand("bessel_i1e", x))


# ---- bessel_i0e: Cephes' Chebyshev coefficients of e^-x I0(x), on [0, 8] in x/2 - 2 and
# on (8, inf) in 32/x - 2 (times sqrt(x)); float64 takes all, float32 the trailing ones
_I0E_SMALL = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_LARGE = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)
_FLOAT32_TERMS = (18, 7)  # (small, large): the series of Cephes' i0ef


def _chebyshev(t, coefficients):
  """Clenshaw's recurrence for `sum_k c_k T_k(t/2)`, as Cephes' `chbevl`."""
  zero = _const(t, 0)
  b0 = b1 = b2 = zero
  for c in coefficients:
    b2, b1 = b1, b0
    b0 = add(sub(mul(t, b1), b2), _const(t, c))
  return mul(_const(t, 0.5), sub(b0, b2))


def _i0e_cephes(x):
  small_terms, large_terms = ((len(_I0E_SMALL), len(_I0E_LARGE))
                              if get_aval(x).dtype == np.float64 else _FLOAT32_TERMS)
  ax = abs(x)
  small = _chebyshev(sub(mul(_const(ax, 0.5), ax), _const(ax, 2)), _I0E_SMALL[-small_terms:])
  large = div(_chebyshev(sub(div(_const(ax, 32), ax), _const(ax, 2)), _I0E_LARGE[-large_terms:]),
              sqrt(ax))
  return _where(le(ax, _const(ax, 8)), small, large)


bessel_i0e_p = utils.standard_primitive(
    "bessel_i0e", utils.elementwise_shapes("bessel_i0e"),
    utils.same_dtypes_accepting("bessel_i0e", utils.is_float, "floating"))
batching.defvectorized(bessel_i0e_p)
mlir.register_lowering(bessel_i0e_p, utils.lowering_from_function(
    lambda x: utils.in_float32_for_halves(_i0e_cephes, x)))
ad.defjvp2(bessel_i0e_p, lambda g, out, x: mul(g, sub(bessel_i1e(x), mul(sign(x), out))))


def bessel_i0e(x):
  """`e^-|x| I0(x)`, elementwise, for floating point `x`."""
  return bessel_i0e_p.bind(_float_operand("bessel_i0e", x))
