"""The exponentially scaled modified Bessel functions of orders 0 and 1, `bessel_i0e(x) =
e^-|x| I0(x)` and `bessel_i1e(x) = e^-|x| I1(x)` (what `numpy.i0`, `numpy.kaiser` and
`scipy.special.i0e`/`i1e` are built from).

`bessel_i1e` is XLA's own (CHLO's `bessel_i1e`), a primitive, so its numbers are JAX's.
XLA has no `bessel_i0e`: it is evaluated in the input's floating dtype in two regimes joined
by `select`, the power series `I0(x) = sum_k (x^2/4)^k / (k!)^2` up to |x| = 15 and the
large-argument expansion `e^|x| / sqrt(2 pi |x|) sum_k a_k / |x|^k` above, with the closed
form derivative `i1e(x) - sign(x) i0e(x)` (`custom_jvp`).
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import chlo

from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.custom_derivatives import custom_jvp
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.elementwise import (_const, abs, add, div, eq, exp, le, mul, neg, sign, sqrt,
                                     sub)
from minijax.lax.structural import convert_to_array
from minijax.lowering import mlir

__all__ = ["bessel_i0e", "bessel_i1e", "bessel_i1e_p"]

_SWITCH = 15.0  # |x| where the asymptotic expansion takes over
_SERIES_TERMS = 60


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
    utils.same_dtypes_accepting("bessel_i1e", utils.is_float, "floating point"))
batching.defvectorized(bessel_i1e_p)
mlir.register_lowering(bessel_i1e_p, utils.nary_lowering(chlo.BesselI1eOp), splat_literals=True)


def _i1e_jvp(g, out, x):
  # i0e(x) - i1e(x) (sign(x) + 1/x), which is 1/2 at 0
  zero = eq(x, _const(x, 0))
  safe = _where(zero, _const(x, 1), x)
  slope = sub(bessel_i0e(x), mul(out, add(sign(x), div(_const(x, 1), safe))))
  return mul(g, _where(zero, _const(x, 0.5), slope))


ad.defjvp2(bessel_i1e_p, _i1e_jvp)


def bessel_i1e(x):
  """`e^-|x| I1(x)`, elementwise, for floating point `x`."""
  return bessel_i1e_p.bind(_float_operand("bessel_i1e", x))


# ---- bessel_i0e
def _i0_series(x):
  """`I0(x)` by its power series (`_SERIES_TERMS` terms)."""
  from minijax.lax.control_flow import fori_loop
  from minijax.lax.misc import convert_element_type
  q = div(mul(x, x), _const(x, 4))

  def body(k, carry):
    term, total = carry
    kk = convert_element_type(k, get_aval(x).dtype)
    term = div(mul(term, q), mul(kk, kk))
    return term, add(total, term)

  one = _const(x, 1)
  return fori_loop(1, _SERIES_TERMS, body, (one, one))[1]


def _i0e_asymptotic(ax):
  """`e^-|x| I0(|x|)` for large |x|: the first twelve terms of the expansion."""
  total = term = _const(ax, 1)
  for k in range(1, 12):
    term = mul(term, div(_const(ax, (2 * k - 1) ** 2 / (8 * k)), ax))
    total = add(total, term)
  return div(total, sqrt(mul(_const(ax, 2 * np.pi), ax)))


@custom_jvp
def _i0e(x):
  ax = abs(x)
  small = le(ax, _const(ax, _SWITCH))
  series = mul(_i0_series(_where(small, x, _const(x, 0))),
               exp(neg(_where(small, ax, _const(ax, 0)))))
  large = _i0e_asymptotic(_where(small, _const(ax, 2 * _SWITCH), ax))
  return _where(small, series, large)


@_i0e.defjvp
def _i0e_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  out = _i0e(x)
  return out, mul(t, sub(bessel_i1e(x), mul(sign(x), out)))


def bessel_i0e(x):
  """`e^-|x| I0(x)`, elementwise, for floating point `x`."""
  return utils.in_float32_for_halves(_i0e, _float_operand("bessel_i0e", x))
