"""The regularized incomplete gamma and beta functions, which XLA has no operation for,
built from `while_loop`s over the whole array (every element iterates until all have
converged; finished ones hold their value).

`igamma(a, x) = P(a, x)` and `igammac(a, x) = Q(a, x) = 1 - P(a, x)` follow the textbook
split (Numerical Recipes, §6.2):

- the power series  P(a, x) = x^a e^-x / Γ(a+1) · Σ_n x^n / ((a+1)...(a+n))  where
  x < 1 or x <= a (where it converges fast);
- Legendre's continued fraction  Q(a, x) = x^a e^-x / Γ(a) · 1/(x+1-a- 1(1-a)/(x+3-a- ...))
  elsewhere, evaluated by the modified Lentz method.

Their derivatives in `x` have a closed form (the gamma density); in `a` they come from
differentiating the series or the fraction term by term alongside it (`igamma_grad_a`).
`random_gamma_grad(a, x)` is the derivative of a Gamma(a) sample `x` with respect to `a`
at fixed quantile, -(∂P/∂a)/(∂P/∂x), computed as one ratio so that it stays finite where
the density underflows.

`betainc(a, b, x) = I_x(a, b)` is the continued fraction of Numerical Recipes §6.4 (with
the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where x is past the mean), by Lentz too.  Its
derivatives in `a` and `b` are forward-mode derivatives of that loop, taken as values
(a `jvp` with unit tangents), so that they enter the rule linearly.

Both expansions multiply a prefactor, x^a e^-x / Γ(a) or x^a (1-x)^b / B(a, b), whose
logarithm is a difference of terms of size a log a: for shapes of 20 and more it is taken
from Stirling's series instead, term against term (`_prefactor`, `_log_beta_front`), which
keeps float32's digits at shapes of 1e5 and more.

The user-facing functions are `custom_jvp` functions of those pieces: they differentiate
(to first order in the shape parameters, any order in `x`), batch and lower through the
primitives they are built from.
"""
from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.custom_derivatives import custom_jvp
from minijax.interpreters import ad
from minijax.lax.elementwise import (_const, _coerce_scalars, abs, add, div, eq, exp, ge, gt,
                                     le, log, log1p, lt, max, min, mul, ne, neg, sub,
                                     bitwise_and, bitwise_not, bitwise_or)
from minijax.lax.special import digamma, lgamma
from minijax.lax import utils

__all__ = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc"]


def _where(pred, on_true, on_false):
  from minijax.lax.misc import select_n
  return select_n(pred, on_false, on_true)


def _full_like(x, value):
  return _const(x, value)


def _any(pred):
  from minijax.lax.reductions import reduce_or
  return reduce_or(pred, tuple(range(len(get_aval(pred).shape))))


def _eps(x):
  return float(np.finfo(get_aval(x).dtype).eps)


def _log1pmx(x, a):
  """log(x/a) - (x/a - 1) = log(1 + t) - t for t = (x - a)/a, accurate near t = 0 too:
  with u = t / (2 + t), log(1 + t) = 2 atanh(u) and t - 2u = t u, so log(1 + t) - t =
  -t u + 2u (u²/3 + u⁴/5 + ...), whose terms do not cancel (|u| <= 1/3 where |t| <= 1/2).
  Far from 0, log(x/a) keeps its precision where x/a is small, as log1p(t) would not."""
  t = div(sub(x, a), a)
  u = div(t, add(t, _const(t, 2)))
  u2 = mul(u, u)
  terms = 17 if get_aval(t).dtype.itemsize == 8 else 8
  series = _const(t, 1 / (2 * terms + 1))
  for k in range(terms - 1, 0, -1):
    series = add(_const(t, 1 / (2 * k + 1)), mul(u2, series))
  near = add(neg(mul(t, u)), mul(mul(_const(t, 2), mul(u, u2)), series))
  far = sub(log(div(x, a)), t)
  return _where(lt(abs(t), _const(t, 0.5)), near, far)


def _stirling_tail(a):
  """log Γ(a) - ((a - 1/2) log a - a + log(2π)/2), by its asymptotic series (a >= 20)."""
  inv = div(_const(a, 1), a)
  inv2 = mul(inv, inv)
  series = _const(a, -691 / 360360)
  for c in (1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12):
    series = add(_const(a, c), mul(inv2, series))
  return mul(inv, series)


_LARGE_A = 20.0


def _prefactor(a, x):
  """log(x^a e^-x / Γ(a)), and whether its exponential underflows.  For a >= 20 it is
  a (log(x/a) - x/a + 1) + log(a/2π)/2 - stirling_tail(a), since a log x - x and log Γ(a)
  are each about a log a and their difference would lose log2(a) bits."""
  naive = sub(sub(mul(a, log(x)), x), lgamma(a))
  large = ge(a, _const(a, _LARGE_A))
  big_a = _where(large, a, _const(a, _LARGE_A))
  stable = sub(add(mul(big_a, _log1pmx(x, big_a)), mul(_const(a, 0.5), log(big_a))),
               add(_const(a, 0.5 * np.log(2 * np.pi)), _stirling_tail(big_a)))
  log_ax = _where(large, stable, naive)
  max_log = float(np.log(np.finfo(get_aval(a).dtype).max))
  return log_ax, lt(log_ax, _const(log_ax, -max_log))


def _dlog_prefactor(a, x):
  """d log(x^a e^-x / Γ(a)) / da = log x - ψ(a); for a >= 20, log(x/a) + (log a - ψ(a))
  with the second term by its asymptotic series, as the two logarithms nearly cancel."""
  naive = sub(log(x), digamma(a))
  large = ge(a, _const(a, _LARGE_A))
  big_a = _where(large, a, _const(a, _LARGE_A))
  inv = div(_const(a, 1), big_a)
  inv2 = mul(inv, inv)
  series = _const(a, -691 / 32760)
  for c in (1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12):
    series = add(_const(a, c), mul(inv2, series))
  tail = add(mul(_const(a, 0.5), inv), mul(inv2, series))
  return _where(large, add(log(div(x, big_a)), tail), naive)


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
  dtype = get_aval(a).dtype
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
  dlog = _dlog_prefactor(safe_a, safe_x)
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
  aa, xa = get_aval(a), get_aval(x)
  if aa.dtype != xa.dtype or not dtypes.is_float(aa.dtype):
    raise TypeError(f"{name} requires floating point arguments of one dtype, got "
                    f"a={aa.str_short()}, x={xa.str_short()}")
  return utils.broadcast_elementwise(name, a, x)


def igamma_grad_a(a, x):
  """∂P(a, x)/∂a, the derivative of the regularized lower incomplete gamma function."""
  a, x = _float_operands("igamma_grad_a", a, x)
  return utils.in_float32_for_halves(lambda a, x: _grad_a_parts(a, x, sample=False), a, x)


def random_gamma_grad(a, x):
  """d x / d a for a Gamma(a) sample x at a fixed quantile: -(∂P/∂a) / (∂P/∂x)."""
  a, x = _float_operands("random_gamma_grad", a, x)
  return utils.in_float32_for_halves(lambda a, x: _grad_a_parts(a, x, sample=True), a, x)


def _density(a, x):
  """∂P/∂x = x^(a-1) e^-x / Γ(a) (for a >= 20 from the prefactor's Stirling form)."""
  naive = sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a))
  stable = sub(_prefactor(a, x)[0], log(x))
  return exp(_where(ge(a, _const(a, _LARGE_A)), stable, naive))


def _make_incomplete_gamma():
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
  return utils.in_float32_for_halves(_igamma, *_float_operands("igamma", a, x))


def igammac(a, x):
  """Q(a, x) = Γ(a, x) / Γ(a) = 1 - P(a, x), the regularized upper incomplete gamma
  function."""
  return utils.in_float32_for_halves(_igammac, *_float_operands("igammac", a, x))


# ----------------------------------------------------------------------------- incomplete beta

def _beta_fraction(a, b, x):
  """The continued fraction 1/(1+ d1/(1+ d2/(1+ ...))) of I_x(a, b) (NR §6.4), with
  d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)) and d_{2m} = m(b-m) x / ((a+2m-1)(a+2m)),
  by the modified Lentz method."""
  from minijax.lax.control_flow import while_loop
  from minijax.lax.structural import full
  dtype = get_aval(a).dtype
  eps = _eps(a)
  tiny = float(np.finfo(dtype).tiny) / eps
  one = _const(a, 1)

  def guard(v):
    return _where(lt(abs(v), _const(v, tiny)), _const(v, tiny), v)

  def step(coef, c, d, f):
    d = div(one, guard(add(one, mul(coef, d))))
    c = guard(add(one, div(coef, c)))
    delta = mul(c, d)
    return c, d, mul(f, delta), delta

  def cond(state):
    return bitwise_and(_any(state[0]), lt(state[1], _const(state[1], 3000)))

  def body(state):
    going, m, c, d, f = state
    m = add(m, _const(m, 1))
    a2m = add(a, mul(_const(m, 2), m))
    even = div(mul(mul(m, sub(b, m)), x), mul(sub(a2m, one), a2m))
    c1, d1, f1, _ = step(even, c, d, f)
    odd = div(neg(mul(mul(add(a, m), add(add(a, b), m)), x)), mul(a2m, add(a2m, one)))
    c2, d2, f2, delta = step(odd, c1, d1, f1)
    done = le(abs(sub(delta, one)), _const(delta, eps))
    keep = lambda new, old: _where(going, new, old)
    return (bitwise_and(going, bitwise_not(done)), m, keep(c2, c), keep(d2, d), keep(f2, f))

  first = neg(div(mul(add(a, b), x), add(a, one)))  # d_1
  d0 = div(one, guard(add(one, first)))
  init = (full(np.shape(a), True, np.bool_), full((), 0, dtype), one_like(a), d0, d0)
  return while_loop(cond, body, init)[4]


def one_like(x):
  return _const(x, 1)


def _log_beta_front(a, b, x):
  """log(x^a (1-x)^b / B(a, b)).  Where a and b are both >= 20 it is a (log(x/p) - x/p + 1)
  + b (log((1-x)/q) - (1-x)/q + 1) + log(ab/(a+b))/2 - log(2π)/2 - Δ(a) - Δ(b) + Δ(a+b)
  with p = a/(a+b), q = b/(a+b) and Δ Stirling's tail (the first-order terms cancel
  exactly); where only one of them, m, is, log Γ(m) - log Γ(m+k) for the other, k, is
  -(m+k-1/2) log1p(k/m) - k log m + k + Δ(m) - Δ(m+k).  Taken apart, a log x and
  log Γ(a) are each about a log a, and their difference would lose log2(a) bits."""
  one = _const(x, 1)
  one_minus_x = sub(one, x)
  naive = sub(add(mul(a, log(x)), mul(b, log1p(neg(x)))),
              sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b))))
  big = _const(a, _LARGE_A)
  both = bitwise_and(ge(a, big), ge(b, big))
  a2, b2 = _where(both, a, big), _where(both, b, big)
  n = add(a2, b2)
  p, q = div(a2, n), div(b2, n)
  near = add(mul(a2, _log1pmx(_where(both, x, p), p)),
             mul(b2, _log1pmx(_where(both, one_minus_x, q), q)))
  near = add(near, mul(_const(a, 0.5), log(div(mul(a2, b2), n))))
  near = sub(near, add(_const(a, 0.5 * np.log(2 * np.pi)),
                       sub(add(_stirling_tail(a2), _stirling_tail(b2)), _stirling_tail(n))))
  one_big = bitwise_and(bitwise_not(both), ge(max(a, b), big))
  m = _where(one_big, max(a, b), big)
  k = _where(one_big, min(a, b), one)
  # log Γ(m) - log Γ(m + k)
  tail = add(sub(neg(mul(sub(add(m, k), _const(m, 0.5)), log1p(div(k, m)))),
                 mul(k, log(m))), k)
  tail = add(tail, sub(_stirling_tail(m), _stirling_tail(add(m, k))))
  one_sided = sub(add(mul(a, log(x)), mul(b, log1p(neg(x)))), add(lgamma(k), tail))
  return _where(both, near, _where(one_big, one_sided, naive))


def _betainc_value(a, b, x):
  """I_x(a, b) by the fraction, at x or (by symmetry) at 1 - x, whichever converges; at
  a = 0 (b = 0) all the mass is at x = 0 (x = 1), as in scipy and JAX."""
  is_nan = bitwise_or(bitwise_or(ne(a, a), ne(b, b)), ne(x, x))
  zero, one = _const(x, 0), _const(x, 1)
  a_zero, b_zero = eq(a, _const(a, 0)), eq(b, _const(b, 0))
  bad = bitwise_or(bitwise_or(lt(a, _const(a, 0)), lt(b, _const(b, 0))),
                   bitwise_or(bitwise_or(lt(x, zero), gt(x, one)), is_nan))
  bad = bitwise_or(bad, bitwise_and(a_zero, b_zero))
  ends = bitwise_or(eq(x, zero), eq(x, one))
  live = bitwise_not(bitwise_or(bitwise_or(bad, ends), bitwise_or(a_zero, b_zero)))
  flip = gt(x, div(add(a, one), add(add(a, b), _const(a, 2))))
  safe_x = _where(live, x, _const(x, 0.5))
  aa, bb = _where(flip, b, a), _where(flip, a, b)
  xx = _where(flip, sub(one, safe_x), safe_x)
  log_front = sub(_log_beta_front(aa, bb, xx), log(aa))
  value = mul(exp(log_front), _beta_fraction(aa, bb, xx))
  value = _where(flip, sub(one, value), value)
  value = _where(ends, x, value)
  value = _where(a_zero, _where(gt(x, zero), one, zero), value)
  value = _where(b_zero, _where(lt(x, one), zero, one), value)
  return _where(bad, _const(x, np.nan), value)


def _three_float_operands(name, a, b, x):
  from minijax.lax.structural import convert_to_array
  args = [convert_to_array(v) for v in _coerce_scalars(a, b, x)]
  avals = [get_aval(v) for v in args]
  shown = ", ".join(f"{n}={v.str_short()}" for n, v in zip("abx", avals))
  if len({v.dtype for v in avals}) != 1 or not dtypes.is_float(avals[0].dtype):
    raise TypeError(f"{name} requires floating point arguments of one dtype, got {shown}")
  return utils.broadcast_elementwise(name, *args)


def _make_betainc():
  @custom_jvp
  def betainc_(a, b, x):
    return _betainc_value(a, b, x)

  @betainc_.defjvp
  def _jvp(primals, tangents):
    a, b, x = primals
    ta, tb, tx = tangents
    out = betainc_(a, b, x)
    zeros, ones = _const(a, 0), _const(a, 1)
    # ∂I/∂a and ∂I/∂b as values: the loop's forward derivative along unit directions
    flat = lambda *args: [_betainc_value(*args)]
    da = ad.jvp_flat(flat, [a, b, x], [ones, zeros, zeros])[1][0]
    db = ad.jvp_flat(flat, [a, b, x], [zeros, ones, zeros])[1][0]
    naive = sub(add(mul(sub(a, ones), log(x)), mul(sub(b, ones), log1p(neg(x)))),
                sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b))))
    stable = sub(_log_beta_front(a, b, x), add(log(x), log1p(neg(x))))
    large = ge(max(a, b), _const(a, _LARGE_A))
    dx = exp(_where(large, stable, naive))
    return out, add(add(mul(ta, da), mul(tb, db)), mul(tx, dx))

  return betainc_


_betainc = _make_betainc()


def betainc(a, b, x):
  """I_x(a, b) = B(x; a, b) / B(a, b), the regularized incomplete beta function."""
  return utils.in_float32_for_halves(_betainc, *_three_float_operands("betainc", a, b, x))
