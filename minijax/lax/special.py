"""Special functions that XLA computes: the hyperbolic functions and their inverses, the
inverse error function, the complementary error
function, the log-gamma function and its derivatives (digamma, polygamma), Hurwitz's zeta,
and `nextafter`.

Each is a primitive lowered to the XLA operation of the CHLO dialect (`sinh`, ..., `erf_inv`, `erfc`,
`lgamma`, `digamma`, `polygamma`, `zeta`, `next_after`), so its numbers are XLA's, the ones
JAX gets; each primitive's block holds every rule it has.  The incomplete gamma and beta
functions, which XLA lacks, are in `incomplete.py`.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import chlo

from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.elementwise import (_const, _coerce_scalars, add, div, exp, mul, neg,
                                     reciprocal, rsqrt, square, sub)
from minijax.lowering import mlir

__all__ = ["asin", "acos", "atan", "asin_p", "acos_p", "atan_p",
           "sinh", "cosh", "asinh", "acosh", "atanh", "sinh_p", "cosh_p", "asinh_p", "acosh_p",
           "atanh_p", "erf_inv", "erfc", "lgamma", "digamma", "polygamma", "zeta", "nextafter",
           "erf_inv_p", "erfc_p", "lgamma_p", "digamma_p", "polygamma_p", "zeta_p",
           "nextafter_p"]

_floats = (utils.is_float, "floating")


def _chlo_unop(name, op_class, accepted=_floats, nan_through=False):
  prim = utils.standard_primitive(name, utils.elementwise_shapes(name),
                                  utils.same_dtypes_accepting(name, *accepted))
  batching.defvectorized(prim)
  lowering = utils.nary_lowering(op_class)
  if nan_through:  # (an exponential inside: see utils.nan_through)
    def lowering(ctx, x, _plain=lowering):
      return utils.nan_through(ctx, x, _plain(ctx, x))
  mlir.register_lowering(prim, lowering, splat_literals=True)
  return prim


def _chlo_binop(name, op_class):
  prim = utils.standard_primitive(name, utils.elementwise_shapes(name),
                                  utils.same_dtypes_accepting(name, *_floats))
  batching.defbroadcasting(prim)
  mlir.register_lowering(prim, utils.nary_lowering(op_class), splat_literals=True)
  return prim


# ---- erf_inv
erf_inv_p = _chlo_unop("erf_inv", chlo.ErfInvOp)
ad.defjvp2(erf_inv_p, lambda g, out, x: mul(_const(x, np.sqrt(np.pi) / 2),
                                            mul(g, exp(square(out)))))


def erf_inv(x):
  """The inverse of the error function, elementwise."""
  return erf_inv_p.bind(x)


# ---- erfc
erfc_p = _chlo_unop("erfc", chlo.ErfcOp)
ad.defjvp(erfc_p, lambda g, x: mul(_const(x, -2 / np.sqrt(np.pi)),
                                   mul(g, exp(neg(square(x))))))


def erfc(x):
  """The complementary error function 1 - erf(x), accurate where erf(x) is near 1."""
  return erfc_p.bind(x)


# ---- lgamma, digamma, polygamma
lgamma_p = _chlo_unop("lgamma", chlo.LgammaOp)
ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))


def lgamma(x):
  """log |Γ(x)|, elementwise."""
  return lgamma_p.bind(x)


digamma_p = _chlo_unop("digamma", chlo.DigammaOp)
ad.defjvp(digamma_p, lambda g, x: mul(g, polygamma(_const(x, 1), x)))


def digamma(x):
  """ψ(x) = d/dx log Γ(x), elementwise."""
  return digamma_p.bind(x)


polygamma_p = _chlo_binop("polygamma", chlo.PolygammaOp)


def _polygamma_jvp_m(g, m, x):
  raise ValueError("polygamma is not differentiable with respect to its order m; "
                   "pass m as a constant (it is an integer-valued order)")


ad.defjvp(polygamma_p, _polygamma_jvp_m,
          lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))


def polygamma(m, x):
  """ψ^(m)(x), the m-th derivative of the digamma function (m a whole number)."""
  return polygamma_p.bind(*_coerce_scalars(m, x))


# ---- zeta (Hurwitz): Σ_k (k + q)^-x
zeta_p = _chlo_binop("zeta", chlo.ZetaOp)


def _zeta_jvp_x(g, x, q):
  raise ValueError("zeta is not differentiable with respect to x (its exponent) in "
                   "minijax, as in JAX; only with respect to q")


ad.defjvp(zeta_p, _zeta_jvp_x,
          lambda g, x, q: mul(g, mul(neg(x), zeta(add(x, _const(x, 1)), q))))


def zeta(x, q):
  """The Hurwitz zeta function Σ_{k>=0} (k + q)^-x."""
  return zeta_p.bind(*_coerce_scalars(x, q))


# ---- nextafter: the next representable number after x1 in the direction of x2
nextafter_p = _chlo_binop("nextafter", chlo.NextAfterOp)
ad.defjvp(nextafter_p, None, None)


def nextafter(x1, x2):
  return nextafter_p.bind(*_coerce_scalars(x1, x2))


# ---- hyperbolic functions, the inverse trigonometric and hyperbolic ones
# All take complex numbers: XLA computes them (chlo's decompositions), with numpy's branch
# cuts.
_inexact = (utils.is_inexact, "floating, complexfloating")
sinh_p = _chlo_unop("sinh", chlo.SinhOp, _inexact, nan_through=True)
cosh_p = _chlo_unop("cosh", chlo.CoshOp, _inexact, nan_through=True)
asinh_p = _chlo_unop("asinh", chlo.AsinhOp, _inexact)
acosh_p = _chlo_unop("acosh", chlo.AcoshOp, _inexact)
atanh_p = _chlo_unop("atanh", chlo.AtanhOp, _inexact)
asin_p = _chlo_unop("asin", chlo.AsinOp, _inexact)
acos_p = _chlo_unop("acos", chlo.AcosOp, _inexact)
atan_p = _chlo_unop("atan", chlo.AtanOp, _inexact)
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), _const(x, 1)))))
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(square(x), _const(x, 1)))))
ad.defjvp(atanh_p, lambda g, x: mul(reciprocal(add(_const(x, 1), x)), div(g, sub(_const(x, 1), x))))
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), square(x)))))
ad.defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(sub(_const(x, 1), square(x))))))
ad.defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), square(x))))


def asin(x):
  return asin_p.bind(x)


def acos(x):
  return acos_p.bind(x)


def atan(x):
  return atan_p.bind(x)


def sinh(x):
  return sinh_p.bind(x)


def cosh(x):
  return cosh_p.bind(x)


def asinh(x):
  return asinh_p.bind(x)


def acosh(x):
  return acosh_p.bind(x)


def atanh(x):
  return atanh_p.bind(x)
