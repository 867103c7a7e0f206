"""Special functions: the inverse error function, the complementary error function, the
log-gamma function and its derivatives (digamma, polygamma), Hurwitz's zeta, `nextafter`,
and the regularized incomplete gamma functions.

Where XLA has an operation (the CHLO dialect: `erf_inv`, `erfc`, `lgamma`, `digamma`,
`polygamma`, `zeta`, `next_after`), the function is a primitive lowered to it, so its
numbers are XLA's, the ones JAX gets; each primitive's block holds every rule it has.

The incomplete gamma functions have no XLA operation.  `igamma(a, x) = P(a, x)` and
`igammac(a, x) = Q(a, x) = 1 - P(a, x)` are built here from the math with `while_loop`s
over the whole array (every element iterates until all have converged; finished ones
hold their value), following the textbook split (Numerical Recipes, §6.2):

- the power series  P(a, x) = x^a e^-x / Γ(a+1) · Σ_n x^n / ((a+1)...(a+n))  where
  x < a + 1 (where it converges fast);
- Legendre's continued fraction  Q(a, x) = x^a e^-x / Γ(a) · 1/(x+1-a- 1(1-a)/(x+3-a- ...))
  elsewhere, evaluated by the modified Lentz method.

Their derivatives in `x` have a closed form (the gamma density); in `a` they come from
differentiating the series or the fraction term by term alongside it (`igamma_grad_a`).
`random_gamma_grad(a, x)` is the derivative of a Gamma(a) sample `x` with respect to `a`
at fixed quantile, -(∂P/∂a)/(∂P/∂x), computed as one ratio so that it stays finite where
the density underflows.  The user-facing `igamma`/`igammac` are `custom_jvp` functions of
those pieces, so they differentiate (to first order in `a`, any order in `x`), batch and
lower through the primitives they are built from.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import chlo

from minijax.core import dtypes
from minijax.core.avals import shaped_abstractify
from minijax.interpreters import ad, batching
from minijax.lax import utils
from minijax.lax.elementwise import (_const, _coerce_scalars, abs, add, div, eq, exp, ge, gt,
                                     le, log, lt, mul, ne, neg, sub, bitwise_and, bitwise_not,
                                     bitwise_or, square)
from minijax.lowering import mlir

__all__ = ["erf_inv", "erfc", "lgamma", "digamma", "polygamma", "zeta", "nextafter",
           "igamma", "igammac", "igamma_grad_a", "random_gamma_grad",
           "erf_inv_p", "erfc_p", "lgamma_p", "digamma_p", "polygamma_p", "zeta_p",
           "nextafter_p"]

_floats = (utils.is_float, "floating point")


def _chlo_unop(name, op_class):
  prim = utils.standard_primitive(name, utils.elementwise_shapes(name),
                                  utils.same_dtypes_accepting(name, *_floats))
  batching.defvectorized(prim)
  mlir.register_lowering(prim, utils.nary_lowering(op_class), splat_literals=True)
  return prim


def _chlo_binop(name, op_class):
  prim = utils.standard_primitive(name, utils.elementwise_shapes(name),
                                  utils.same_dtypes_accepting(name, *_floats))
  batching.defbroadcasting(prim)
  mlir.register_lowering(prim, utils.nary_lowering(op_class), splat_literals=True)
  return prim


# ---- erf_inv
erf_inv_p = _chlo_unop("erf_inv", chlo.ErfInvOp)
ad.defjvp2(erf_inv_p, lambda g, out, x: mul(g, mul(_const(out, np.sqrt(np.pi) / 2),
                                                   exp(square(out)))))


def erf_inv(x):
  """The inverse of the error function, elementwise."""
  return erf_inv_p.bind(x)


# ---- erfc
erfc_p = _chlo_unop("erfc", chlo.ErfcOp)
ad.defjvp(erfc_p, lambda g, x: mul(g, mul(_const(x, -2 / np.sqrt(np.pi)),
                                          exp(neg(square(x))))))


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


# ----------------------------------------------------------------------------- incomplete gamma

def _where(pred, on_true, on_false):
  from minijax.lax.misc import select_n
  return select_n(pred, on_false, on_true)


def _full_like(x, value):
  return _const(x, value)


def _any(pred):
  from minijax.lax.reductions import reduce_or
  return reduce_or(pred, tuple(range(len(shaped_abstractify(pred).shape))))


def _eps(x):
  return float(np.finfo(shaped_abstractify(x).dtype).eps)


def _prefactor(a, x):
  """log(x^a e^-x / Γ(a)), and whether its exponential underflows."""
  log_ax = sub(sub(mul(a, log(x)), x), lgamma(a))
  max_log = float(np.log(np.finfo(shaped_abstractify(a).dtype).max))
  return log_ax, lt(log_ax, _const(log_ax, -max_log))


def _series(a, x, active, with_derivative):
  """S = Σ_n c_n with c_0 = 1, c_n = c_{n-1} x / (a + n), so that P(a, x) = x^a e^-x /
  Γ(a+1) · S; also dS/da when asked.  Stops where the last term is below eps·S."""
  from minijax.lax.control_flow import while_loop
  eps = _eps(a)

  def cond(state):
    return _any(state[0])

  def body(state):
    going, n, term, total, dterm, dtotal = state
    n1 = add(n, _const(n, 1))
    ratio = div(x, add(a, n1))
    # d/da [term * x / (a + n1)] = dterm * ratio - term * ratio / (a + n1)
    new_dterm = sub(mul(dterm, ratio), div(mul(term, ratio), add(a, n1)))
    new_term = mul(term, ratio)
    new_total = add(total, new_term)
    new_dtotal = add(dtotal, new_dterm)
    if with_derivative:
      small = le(abs(new_dterm), mul(_const(a, eps), abs(new_dtotal)))
      small = bitwise_and(small, le(new_term, mul(_const(a, eps), new_total)))
    else:
      small = le(new_term, mul(_const(a, eps), new_total))
    keep = lambda new, old: _where(going, new, old)
    return (bitwise_and(going, bitwise_not(small)), keep(n1, n), keep(new_term, term),
            keep(new_total, total), keep(new_dterm, dterm), keep(new_dtotal, dtotal))

  zero, one = _full_like(a, 0), _full_like(a, 1)
  _, _, _, total, _, dtotal = while_loop(cond, body, (active, zero, one, one, zero, zero))
  return total, dtotal


def _continued_fraction(a, x, active, with_derivative):
  """F = 1/(b_0 - 1(1-a)/(b_1 - 2(2-a)/(b_2 - ...))) with b_k = x + 2k + 1 - a, so that
  Q(a, x) = x^a e^-x / Γ(a) · F, by the modified Lentz method (Numerical Recipes §5.2),
  carrying the derivatives in `a` of its auxiliary quantities when asked."""
  from minijax.lax.control_flow import while_loop
  dtype = shaped_abstractify(a).dtype
  eps = _eps(a)
  tiny = float(np.finfo(dtype).tiny) / eps
  max_steps = 2000

  def guard(v):  # Lentz's rule: a vanishing denominator is replaced by a tiny one
    return _where(lt(abs(v), _const(v, tiny)), _const(v, tiny), v)

  def cond(state):
    return bitwise_and(_any(state[0]), lt(state[1], _const(state[1], max_steps)))

  def body(state):
    going, k, b, c, d, f, dc, dd, df = state
    k1 = add(k, _const(k, 1))
    coef = mul(neg(k1), sub(k1, a))          # a_k = -k (k - a);  da_k/da = k
    dcoef = k1
    b1 = add(b, _const(b, 2))                # b_k = x + 2k + 1 - a;  db_k/da = -1
    d_raw = add(b1, mul(coef, d))
    new_d = div(_const(d_raw, 1), guard(d_raw))
    c_raw = add(b1, div(coef, c))
    new_c = guard(c_raw)
    delta = mul(new_c, new_d)
    new_f = mul(f, delta)
    # derivatives: d' = -d^2 (b' + a_k' d_old + a_k d_old'),  c' = b' + a_k'/c - a_k c'/c^2
    new_dd = mul(neg(mul(new_d, new_d)),
                 add(add(_const(b, -1), mul(dcoef, d)), mul(coef, dd)))
    new_dc = sub(add(_const(b, -1), div(dcoef, c)), div(mul(coef, dc), mul(c, c)))
    new_df = add(mul(df, delta), mul(f, add(mul(new_dc, new_d), mul(new_c, new_dd))))
    small = le(abs(sub(delta, _const(delta, 1))), _const(delta, eps))
    if with_derivative:
      small = bitwise_and(small, le(abs(sub(new_df, df)), mul(_const(df, eps), abs(new_df))))
    keep = lambda new, old: _where(going, new, old)
    return (bitwise_and(going, bitwise_not(small)), k1, keep(b1, b), keep(new_c, c),
            keep(new_d, d), keep(new_f, f), keep(new_dc, dc), keep(new_dd, dd),
            keep(new_df, df))

  b0 = add(sub(x, a), _const(x, 1))
  d0 = div(_const(b0, 1), guard(b0))
  c0 = _full_like(a, 1 / tiny)
  # f0 = d0 (= 1/b0); with b0' = -1: d0' = d0^2; c0 is a constant
  from minijax.lax.structural import full
  init = (active, full((), 0, dtype), b0, c0, d0, d0, _full_like(a, 0), mul(d0, d0),
          mul(d0, d0))
  out = while_loop(cond, body, init)
  return out[5], out[8]


def _domain(a, x):
  """(nan inputs or a domain error, x == 0, x == inf) for P and Q."""
  is_nan = bitwise_or(ne(a, a), ne(x, x))
  x_zero, a_zero = eq(x, _const(x, 0)), eq(a, _const(a, 0))
  bad = bitwise_or(bitwise_or(lt(x, _const(x, 0)), lt(a, _const(a, 0))),
                   bitwise_or(bitwise_and(a_zero, x_zero), is_nan))
  return bad, x_zero, eq(x, _const(x, np.inf)), a_zero


def _igamma_parts(a, x):
  """(P, Q) computed by whichever expansion converges at each element."""
  bad, x_zero, x_inf, a_zero = _domain(a, x)
  use_fraction = bitwise_and(ge(x, _const(x, 1)), gt(x, a))
  log_ax, underflow = _prefactor(a, x)
  skip = bitwise_or(bitwise_or(bad, x_zero), bitwise_or(x_inf, bitwise_or(underflow, a_zero)))
  live = bitwise_not(skip)
  safe_a = _where(live, a, _const(a, 1))
  safe_x = _where(live, x, _const(x, 1))
  series, _ = _series(safe_a, safe_x, bitwise_and(live, bitwise_not(use_fraction)), False)
  fraction, _ = _continued_fraction(safe_a, safe_x, bitwise_and(live, use_fraction), False)
  ax = exp(_where(live, log_ax, _const(log_ax, 0)))
  p_series = div(mul(ax, series), safe_a)
  q_fraction = mul(ax, fraction)
  one = _const(a, 1)
  p = _where(use_fraction, sub(one, q_fraction), p_series)
  q = _where(use_fraction, q_fraction, sub(one, p_series))
  # underflow of the prefactor: P is 0 below the mode and 1 above it
  p = _where(underflow, _where(use_fraction, one, _const(a, 0)), p)
  q = _where(underflow, sub(one, p), q)
  p = _where(bitwise_or(x_zero, a_zero), _where(a_zero, one, _const(a, 0)), p)
  q = _where(bitwise_or(x_zero, a_zero), sub(one, p), q)
  p = _where(x_inf, one, p)
  q = _where(x_inf, _const(a, 0), q)
  nan = _const(a, np.nan)
  return _where(bad, nan, p), _where(bad, nan, q)


def _grad_a_parts(a, x, sample):
  """∂P/∂a (`sample=False`) or -(∂P/∂a)/(∂P/∂x) (`sample=True`), by the expansion that
  converges at each element."""
  is_nan = bitwise_or(ne(a, a), ne(x, x))
  x_zero = eq(x, _const(x, 0))
  bad = bitwise_or(bitwise_or(lt(x, _const(x, 0)), le(a, _const(a, 0))), is_nan)
  use_fraction = bitwise_and(gt(x, _const(x, 1)), gt(x, a))
  log_ax, underflow = _prefactor(a, x)
  # (the sample derivative is a ratio free of the prefactor, so it survives its underflow)
  dead = x_zero if sample else bitwise_or(x_zero, underflow)
  live = bitwise_not(bitwise_or(bad, dead))
  safe_a = _where(live, a, _const(a, 1))
  safe_x = _where(live, x, _const(x, 1))
  s, ds = _series(safe_a, safe_x, bitwise_and(live, bitwise_not(use_fraction)), True)
  f, dfa = _continued_fraction(safe_a, safe_x, bitwise_and(live, use_fraction), True)
  dlog = sub(log(safe_x), digamma(safe_a))  # d log(x^a e^-x / Γ(a)) / da
  # P = ax S / a:  dP/da = ax/a (S (dlog - 1/a) + dS);  Q = ax F:  dQ/da = ax (F dlog + dF)
  inv_a = div(_const(safe_a, 1), safe_a)
  series_inner = add(mul(s, sub(dlog, inv_a)), ds)
  fraction_inner = add(mul(f, dlog), dfa)
  if sample:
    # ∂P/∂x = ax / x, so the ratio drops the prefactor: -(x/a) inner (series);
    # +x inner (fraction, since ∂P/∂a = -∂Q/∂a)
    by_series = neg(mul(div(safe_x, safe_a), series_inner))
    by_fraction = mul(safe_x, fraction_inner)
  else:
    ax = exp(_where(live, log_ax, _const(log_ax, 0)))
    by_series = mul(div(ax, safe_a), series_inner)
    by_fraction = neg(mul(ax, fraction_inner))
  out = _where(use_fraction, by_fraction, by_series)
  out = _where(dead, _const(a, 0), out)
  return _where(bad, _const(a, np.nan), out)


def _float_operands(name, a, x):
  from minijax.lax.structural import convert_to_array
  a, x = (convert_to_array(v) for v in _coerce_scalars(a, x))
  aa, xa = shaped_abstractify(a), shaped_abstractify(x)
  if aa.dtype != xa.dtype or not dtypes.is_float(aa.dtype):
    raise TypeError(f"{name} requires floating point arguments of one dtype, got "
                    f"a={aa.str_short()}, x={xa.str_short()}")
  if aa.shape != xa.shape and aa.shape and xa.shape:
    raise TypeError(f"{name} requires arguments of one shape (rank-0 ones broadcast), got "
                    f"a={aa.str_short()}, x={xa.str_short()}")
  shape = aa.shape or xa.shape
  from minijax.lax.structural import broadcast_in_dim
  if aa.shape != shape:
    a = broadcast_in_dim(a, shape, ())
  if xa.shape != shape:
    x = broadcast_in_dim(x, shape, ())
  return a, x


def igamma_grad_a(a, x):
  """∂P(a, x)/∂a, the derivative of the regularized lower incomplete gamma function."""
  a, x = _float_operands("igamma_grad_a", a, x)
  return _grad_a_parts(a, x, sample=False)


def random_gamma_grad(a, x):
  """d x / d a for a Gamma(a) sample x at a fixed quantile: -(∂P/∂a) / (∂P/∂x)."""
  a, x = _float_operands("random_gamma_grad", a, x)
  return _grad_a_parts(a, x, sample=True)


def _density(a, x):
  """∂P/∂x = x^(a-1) e^-x / Γ(a)."""
  return exp(sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a)))


def _make_incomplete_gamma():
  from minijax.custom_derivatives import custom_jvp

  @custom_jvp
  def igamma_(a, x):
    return _igamma_parts(a, x)[0]

  @igamma_.defjvp
  def _igamma_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    out = igamma_(a, x)
    t = add(mul(ta, _grad_a_parts(a, x, False)), mul(tx, _density(a, x)))
    return out, t

  @custom_jvp
  def igammac_(a, x):
    return _igamma_parts(a, x)[1]

  @igammac_.defjvp
  def _igammac_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    out = igammac_(a, x)
    t = neg(add(mul(ta, _grad_a_parts(a, x, False)), mul(tx, _density(a, x))))
    return out, t

  return igamma_, igammac_


_igamma, _igammac = _make_incomplete_gamma()


def igamma(a, x):
  """P(a, x) = γ(a, x) / Γ(a), the regularized lower incomplete gamma function."""
  return _igamma(*_float_operands("igamma", a, x))


def igammac(a, x):
  """Q(a, x) = Γ(a, x) / Γ(a) = 1 - P(a, x), the regularized upper incomplete gamma
  function."""
  return _igammac(*_float_operands("igammac", a, x))
