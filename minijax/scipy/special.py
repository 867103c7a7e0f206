"""`minijax.scipy.special`: scipy's special functions on minijax arrays.

Arguments are promoted as JAX promotes them (integers become the default float type) and
broadcast; the functions are built from lax primitives (`lgamma`, `digamma`, `erf_inv`,
`igamma`, `betainc`, ...), so they run eagerly and under every transformation.  Where the
textbook formula has a removable singularity or a derivative that autodiff would get wrong
(`xlogy` at x = 0, `logit`, `log_ndtr` in the far tail, `entr`), the function is a
`custom_jvp` with the derivative written out, as in JAX.

Some are computed differently from JAX (numbers agree to rounding, not bit for bit):
`ndtr` is 0.5 erfc(-x/√2); `ndtri` is √2 erf⁻¹(2p - 1) in the middle and, in the tails,
Newton's method on log Φ from the first terms of the asymptotic expansion (so tiny p keep
their precision), with the derivative of the inverse function as its custom jvp; `betaln` uses lgamma directly for small arguments and Stirling's series
for the difference lgamma(b) - lgamma(a + b) when b is large, where the direct sum cancels.
"""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.custom_derivatives import custom_jvp
from minijax.numpy import _util

__all__ = ["betainc", "betaln", "beta", "digamma", "entr", "erf", "erfc", "erfinv", "expit",
           "factorial", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "kl_div",
           "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "rel_entr", "softmax", "xlog1py", "xlogy", "zeta", "exp1", "expi", "i0", "i0e", "i1", "i1e",
           "bernoulli", "boxcox", "boxcox1p", "comb", "loggamma", "poch", "erfcx", "spence", "bessel_jn",
           "dawsn", "expn", "fresnel", "hyp1f1", "owens_t", "sici", "wofz", "sph_harm_y", "hyp2f1",
           "lpmn", "lpmn_values"]


def _promote(name, *args, complex_ok: bool = False):
  """The arguments as inexact arrays of one dtype and shape; complex ones are refused
  unless the function is defined for them (`complex_ok`)."""
  out = _util.promote_and_broadcast(name, *args, inexact=True)
  for x in out:
    if not complex_ok and np.issubdtype(_util.dtype(x), np.complexfloating):
      raise ValueError(f"{name} does not support complex-valued inputs")
  return out


def _c(x, value):
  """`value` as a constant of x's dtype and shape."""
  return lax.full_like(x, value)


# ----------------------------------------------------------------------------- gamma family

@_util.compiled_when_eager()
def gammaln(x):
  """log |Γ(x)|."""
  x, = _promote("gammaln", x)
  return lax.lgamma(x)


@_util.compiled_when_eager()
def gammasgn(x):
  """The sign of Γ(x): 1 for x > 0, (-1)^ceil(-x) between the poles, nan at the poles
  x = -1, -2, ...; ±1 at ±0 (the sign of the zero)."""
  x, = _promote("gammasgn", x)
  floor_x = lax.floor(x)
  between = jnp.where(jnp.equal(jnp.remainder(floor_x, 2), 0), _c(x, 1), _c(x, -1))
  out = jnp.where(jnp.greater(x, 0), _c(x, 1), between)
  out = jnp.where(jnp.equal(x, 0), jnp.copysign(_c(x, 1), x), out)
  return jnp.where(jnp.logical_and(jnp.less(x, 0), jnp.equal(floor_x, x)), _c(x, np.nan), out)


@_util.compiled_when_eager()
def gamma(x):
  """Γ(x), of real or complex x (exp of the complex loggamma)."""
  x, = _promote("gamma", x, complex_ok=True)
  if jnp.iscomplexobj(x):
    from minijax.scipy.special_elementary import loggamma
    return jnp.exp(loggamma(x))
  return jnp.multiply(gammasgn(x), lax.exp(lax.lgamma(x)))


@_util.compiled_when_eager()
def digamma(x):
  """ψ(x) = d/dx log Γ(x)."""
  x, = _promote("digamma", x)
  return lax.digamma(x)


@_util.compiled_when_eager()
def polygamma(n, x):
  """ψ^(n)(x), the n-th derivative of the digamma function (n a non-negative integer)."""
  if not np.issubdtype(_util.dtype(n), np.integer) and not isinstance(n, (int, np.integer)):
    n_dtype = _util.dtype(n)
    if not dtypes.is_float(n_dtype):
      raise TypeError(f"polygamma: n must be an integer, got dtype {n_dtype}")
  n, x = _promote("polygamma", n, x)
  return lax.polygamma(n, x)


@_util.compiled_when_eager()
def zeta(x, q=None):
  """The Hurwitz zeta function Σ_k (k + q)^-x (Riemann's when q is None)."""
  if q is None:
    x, = _promote("zeta", x)
    q = _c(x, 1)
  else:
    x, q = _promote("zeta", x, q)
  return lax.zeta(x, q)


@_util.compiled_when_eager()
def gammainc(a, x):
  """The regularized lower incomplete gamma function P(a, x)."""
  a, x = _promote("gammainc", a, x)
  return lax.igamma(a, x)


@_util.compiled_when_eager()
def gammaincc(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
  a, x = _promote("gammaincc", a, x)
  return lax.igammac(a, x)


@_util.compiled_when_eager(dynamic=1)
def multigammaln(a, d):
  """log of the multivariate gamma function of dimension d (a static int)."""
  import operator
  d = operator.index(d)
  a, = _promote("multigammaln", a)
  const = 0.25 * d * (d - 1) * np.log(np.pi)
  halves = np.arange(d, dtype=_util.dtype(a)) / 2
  terms = lax.lgamma(jnp.subtract(jnp.expand_dims(a, -1), halves))
  return jnp.add(jnp.sum(terms, axis=-1), _c(a, const))


def _stirling_tail(x):
  """Δ(x) = log Γ(x) - ((x - 1/2) log x - x + log(2π)/2), by the four terms of its
  asymptotic series JAX's betaln takes for x >= 8 (so betaln is JAX's bit for bit;
  `lax.incomplete` sums six, for its shapes >= 20)."""
  inv = jnp.reciprocal(x)
  inv2 = jnp.multiply(inv, inv)
  series = jnp.subtract(1 / 12, jnp.multiply(inv2, jnp.subtract(
      1 / 360, jnp.multiply(inv2, jnp.subtract(1 / 1260, jnp.multiply(inv2, 1 / 1680))))))
  return jnp.multiply(inv, series)


@_util.compiled_when_eager()
def betaln(a, b):
  """log |B(a, b)| = log Γ(a) + log Γ(b) - log Γ(a + b)."""
  a, b = _promote("betaln", a, b)
  a, b = jnp.minimum(a, b), jnp.maximum(a, b)
  direct = jnp.add(lax.lgamma(a), jnp.subtract(lax.lgamma(b), lax.lgamma(jnp.add(a, b))))
  # for b >= 8: lgamma(b) - lgamma(a + b) = -(a + b - 1/2) log1p(a/b) - a log b + a
  #                                           + Δ(b) - Δ(a + b)
  big_b = jnp.maximum(b, _c(b, 8))
  diff = jnp.add(jnp.subtract(
      jnp.negative(jnp.multiply(jnp.subtract(jnp.add(a, big_b), 0.5),
                                jnp.log1p(jnp.divide(a, big_b)))),
      jnp.multiply(a, jnp.log(big_b))), a)
  diff = jnp.add(diff, jnp.subtract(_stirling_tail(big_b), _stirling_tail(jnp.add(a, big_b))))
  return jnp.where(jnp.less(b, 8), direct, jnp.add(lax.lgamma(a), diff))


@_util.compiled_when_eager()
def beta(a, b):
  """B(a, b) = Γ(a) Γ(b) / Γ(a + b)."""
  a, b = _promote("beta", a, b)
  sign = jnp.multiply(jnp.multiply(gammasgn(a), gammasgn(b)), gammasgn(jnp.add(a, b)))
  return jnp.multiply(sign, jnp.exp(betaln(a, b)))


@_util.compiled_when_eager()
def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b)."""
  a, b, x = _promote("betainc", a, b, x)
  return lax.betainc(a, b, x)


@_util.compiled_when_eager(dynamic=1)
def factorial(n, exact=False):
  """n! as Γ(n + 1) (0 for negative n)."""
  if exact:
    raise NotImplementedError("factorial with exact=True is not supported (as in JAX)")
  n, = _promote("factorial", n)
  return jnp.where(jnp.less(n, 0), _c(n, 0), jnp.exp(lax.lgamma(jnp.add(n, 1))))


# ----------------------------------------------------------------------------- error function

@_util.compiled_when_eager()
def erf(x):
  x, = _promote("erf", x)
  return lax.erf(x)


@_util.compiled_when_eager()
def erfc(x):
  x, = _promote("erfc", x)
  return lax.erfc(x)


@_util.compiled_when_eager()
def erfinv(x):
  x, = _promote("erfinv", x)
  return lax.erf_inv(x)


@_util.compiled_when_eager()
def ndtr(x):
  """Φ(x), the standard normal CDF: (1 + erf(x/√2)) / 2 near 0, from erfc(|x|/√2) beyond
  (Cephes' split, as JAX computes it)."""
  x, = _promote("ndtr", x)
  dt = np.dtype(_util.dtype(x)).type
  half_sqrt_2 = dt(0.5) * np.sqrt(dt(2))
  w = lax.mul(x, _c(x, half_sqrt_2))
  z = lax.abs(w)
  y = lax.select(lax.lt(z, _c(z, half_sqrt_2)), lax.add(_c(w, 1), lax.erf(w)),
                 lax.select(lax.gt(w, _c(w, 0)), lax.sub(_c(z, 2), lax.erfc(z)), lax.erfc(z)))
  return lax.mul(_c(y, 0.5), y)


def _log_ndtr_bounds(dtype):
  """(lower, upper): below `lower` the asymptotic series, above `upper` log1p(-Φ(-x))."""
  return (-20., 8.) if np.dtype(dtype) == np.float64 else (-10., 5.)


def _log_ndtr_series(x):
  """log Φ(x) for x << 0: log φ(x) - log(-x) + log(1 - 1/x² + 3/x⁴ - 15/x⁶ + 105/x⁸)."""
  inv2 = jnp.reciprocal(jnp.multiply(x, x))
  series = jnp.add(1, jnp.multiply(inv2, jnp.add(-1, jnp.multiply(inv2, jnp.add(
      3, jnp.multiply(inv2, jnp.add(-15, jnp.multiply(inv2, 105))))))))
  log_pdf = jnp.subtract(jnp.multiply(-0.5, jnp.multiply(x, x)), 0.5 * np.log(2 * np.pi))
  return jnp.add(jnp.subtract(log_pdf, jnp.log(jnp.negative(x))), jnp.log(series))


@custom_jvp
def _log_ndtr(x):
  lower, upper = _log_ndtr_bounds(_util.dtype(x))
  mid = jnp.log(ndtr(jnp.clip(x, lower, upper)))
  high = jnp.log1p(jnp.negative(ndtr(jnp.negative(jnp.maximum(x, upper)))))
  low = _log_ndtr_series(jnp.minimum(x, lower))
  return jnp.where(jnp.greater(x, upper), high, jnp.where(jnp.less(x, lower), low, mid))


@_log_ndtr.defjvp
def _log_ndtr_jvp(primals, tangents):
  x, = primals
  t, = tangents
  out = _log_ndtr(x)
  # d log Φ / dx = φ(x) / Φ(x), formed from logs so that it holds in the far tail
  log_pdf = jnp.subtract(jnp.multiply(-0.5, jnp.multiply(x, x)), 0.5 * np.log(2 * np.pi))
  return out, jnp.multiply(t, jnp.exp(jnp.subtract(log_pdf, out)))


@_util.compiled_when_eager(dynamic=1)
def log_ndtr(x, series_order=3):
  """log Φ(x), accurate far into both tails."""
  if not isinstance(series_order, int) or series_order < 0:
    raise ValueError(f"series_order must be a non-negative int, got {series_order!r}")
  x, = _promote("log_ndtr", x)
  return _log_ndtr(x)


# Cephes' ndtri: rational approximations in (p - 1/2) near the middle and in 1/z, z =
# sqrt(-2 log p), in the tails (Moshier's coefficients), as JAX evaluates them
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)


def _ndtri_value(p):
  dt = np.dtype(_util.dtype(p)).type

  def ratio(ps, qs, x):
    return jnp.polyval(np.array(ps, dt), x) / jnp.polyval(np.array(qs, dt), x)

  folded = jnp.where(p > dt(-np.expm1(-2.0)), dt(1.0) - p, p)  # the smaller tail
  folded = jnp.where(folded == dt(0.0), _c(p, 0.5), folded)
  w = folded - dt(0.5)
  ww = lax.square(w)
  middle = (w + w * ww * ratio(_NDTRI_P0, _NDTRI_Q0, ww)) * -dt(np.sqrt(2.0 * np.pi))
  z = lax.sqrt(dt(-2.0) * lax.log(folded))
  start = z - lax.log(z) / z
  tail = jnp.where(z >= dt(8.0), start - ratio(_NDTRI_P2, _NDTRI_Q2, 1 / z) / z,
                   start - ratio(_NDTRI_P1, _NDTRI_Q1, 1 / z) / z)
  x = jnp.where(folded > dt(np.exp(-2.0)), middle, tail)
  x = jnp.where(p > dt(1.0 - np.exp(-2.0)), x, -x)
  x = jnp.where(p == dt(0.0), _c(p, -np.inf), jnp.where(p == dt(1.0), _c(p, np.inf), x))
  return jnp.where(jnp.logical_or(p < 0, p > 1), _c(p, np.nan), x)


@_util.compiled_when_eager()
def ndtri(p):
  """Φ⁻¹(p), the standard normal quantile function (Cephes' rational approximations,
  differentiated through them, as JAX's); NaN outside [0, 1]."""
  p, = _promote("ndtri", p)
  return _ndtri_value(p)


# ----------------------------------------------------------------------------- logistic

@custom_jvp
def _logit(x):
  return lax.log(lax.div(x, lax.sub(_c(x, 1), x)))


_logit.defjvps(lambda t, ans, x: lax.div(t, lax.mul(x, lax.sub(_c(x, 1), x))))


@_util.compiled_when_eager()
def logit(x):
  """log(x / (1 - x))."""
  x, = _promote("logit", x, complex_ok=True)
  return _logit(x)


@_util.compiled_when_eager()
def expit(x):
  """1 / (1 + exp(-x)), of real or complex `x`."""
  x, = _util.promote_and_broadcast("expit", x, inexact=True)
  return lax.logistic(x)


# ----------------------------------------------------------------------------- x log y

@custom_jvp
def _xlogy(x, y):
  keep = jnp.logical_or(jnp.not_equal(x, 0), jnp.isnan(y))
  return jnp.where(keep, lax.mul(x, lax.log(y)), jnp.zeros_like(x))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  return _xlogy(x, y), jnp.add(jnp.multiply(tx, lax.log(y)), jnp.divide(jnp.multiply(ty, x), y))


@_util.compiled_when_eager()
def xlogy(x, y):
  """x log(y), 0 where x = 0 (unless y is nan)."""
  x, y = _promote("xlogy", x, y, complex_ok=True)
  return _xlogy(x, y)


@custom_jvp
def _xlog1py(x, y):
  keep = jnp.logical_or(jnp.not_equal(x, 0), jnp.isnan(y))
  return jnp.where(keep, lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  return _xlog1py(x, y), jnp.add(jnp.multiply(tx, lax.log1p(y)),
                                 jnp.divide(jnp.multiply(ty, x), jnp.add(1, y)))


@_util.compiled_when_eager()
def xlog1py(x, y):
  """x log(1 + y), 0 where x = 0 (unless y is nan)."""
  x, y = _promote("xlog1py", x, y, complex_ok=True)
  return _xlog1py(x, y)


@custom_jvp
def _xlogx(x):
  return _xlogy(x, x)


_xlogx.defjvp(lambda primals, tangents: (
    _xlogx(primals[0]), jnp.multiply(tangents[0], jnp.add(lax.log(primals[0]), 1))))


@_util.compiled_when_eager()
def entr(x):
  """-x log x for x > 0, 0 at 0, -inf below."""
  x, = _promote("entr", x)
  return jnp.where(jnp.less(x, 0), _c(x, -np.inf), jnp.negative(_xlogx(x)))


@_util.compiled_when_eager()
def rel_entr(p, q):
  """p log(p / q) for p, q > 0; 0 where p = 0 and q >= 0; inf otherwise."""
  p, q = _promote("rel_entr", p, q)
  both_pos = jnp.logical_and(jnp.greater(p, 0), jnp.greater(q, 0))
  safe_p = jnp.where(both_pos, p, _c(p, 1))
  safe_q = jnp.where(both_pos, q, _c(q, 1))
  value = jnp.multiply(safe_p, jnp.log(jnp.divide(safe_p, safe_q)))
  zero_p = jnp.logical_and(jnp.equal(p, 0), jnp.greater_equal(q, 0))
  return jnp.where(both_pos, value, jnp.where(zero_p, _c(p, 0), _c(p, np.inf)))


@_util.compiled_when_eager()
def kl_div(p, q):
  """p log(p / q) - p + q for p, q > 0; q where p = 0 and q >= 0; inf otherwise.  The
  `- p + q` is outside the cases, so its derivatives (-1 and 1) hold everywhere, as JAX's."""
  p, q = _promote("kl_div", p, q)
  both_pos = jnp.logical_and(jnp.greater(p, 0), jnp.greater(q, 0))
  safe_p = jnp.where(both_pos, p, _c(p, 1))
  safe_q = jnp.where(both_pos, q, _c(q, 1))
  zero_p = jnp.logical_and(jnp.equal(p, 0), jnp.greater_equal(q, 0))
  log_ratio = jnp.where(both_pos, jnp.multiply(safe_p, jnp.log(jnp.divide(safe_p, safe_q))),
                        jnp.where(zero_p, _c(p, 0), _c(p, np.inf)))
  return jnp.add(jnp.subtract(log_ratio, p), q)


# ----------------------------------------------------------------------------- log-sum-exp

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """log Σ b exp(a) over `axis`, computed around the maximum so that it neither overflows
  nor underflows.  With `return_sign`, (log |Σ|, sign of Σ); otherwise a negative sum
  gives nan."""
  if isinstance(axis, list):
    axis = tuple(axis)
  return _logsumexp(a, b, where, axis, bool(keepdims), bool(return_sign))


@_util.compiled_when_eager(dynamic=3)
def _logsumexp(a, b, where, axis, keepdims, return_sign):
  if where is not None:
    a = jnp.where(where, a, 0)
  if b is not None:
    a, b = _util.promote_inexact("logsumexp", a, b)
    a = jnp.where(jnp.not_equal(b, 0), a, -np.inf)
  else:
    a, = _util.promote_inexact("logsumexp", a)
  ndim = _util.ndim(a)
  dims = _util.canonicalize_axes(axis, ndim)
  complex_ = dtypes.issubdtype(a.dtype, np.complexfloating)
  # (of a complex `a`, the real parts' maximum: the shift keeps each term's phase)
  amax = jnp.max(jnp.real(a) if complex_ else a, axis=dims, keepdims=keepdims, where=where,
                 initial=-np.inf)
  amax = lax.stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
  amax_kept = amax if keepdims else jnp.expand_dims(amax, dims)
  exp_a = lax.exp(jnp.subtract(a, amax_kept))
  if b is not None:
    exp_a = jnp.multiply(exp_a, b)
  total = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
  sign = jnp.sign(total)
  if return_sign or not complex_:
    total = jnp.abs(total)  # (a complex sum keeps its phase: the complex log, as JAX)
  out = jnp.add(jnp.log(total), amax.astype(total.dtype))
  if return_sign:
    return out, sign
  if b is not None and not complex_:  # (a complex sum has its complex log, whatever its sign)
    out = jnp.where(jnp.less(sign, 0), _c(out, np.nan), out)
  return out


@_util.compiled_when_eager(dynamic=1)
def softmax(x, axis=None):
  """exp(x) / Σ exp(x) over `axis` (all axes by default)."""
  x, = _util.promote_inexact("softmax", x)
  dims = _util.canonicalize_axes(axis, _util.ndim(x))
  shifted = jnp.subtract(x, lax.stop_gradient(jnp.max(x, axis=dims, keepdims=True)))
  unnormalized = jnp.exp(shifted)
  return jnp.divide(unnormalized, jnp.sum(unnormalized, axis=dims, keepdims=True))


@_util.compiled_when_eager(dynamic=1)
def log_softmax(x, axis=None):
  """x - logsumexp(x) over `axis` (all axes by default)."""
  x, = _util.promote_inexact("log_softmax", x)
  dims = _util.canonicalize_axes(axis, _util.ndim(x))
  shifted = jnp.subtract(x, lax.stop_gradient(jnp.max(x, axis=dims, keepdims=True)))
  return jnp.subtract(shifted, jnp.log(jnp.sum(jnp.exp(shifted), axis=dims, keepdims=True)))


from minijax.scipy.special_series import (  # noqa: E402
    bessel_jn, erfcx, exp1, expi, i0, i0e, i1, i1e, spence)
from minijax.scipy.special_elementary import (  # noqa: E402
    bernoulli, boxcox, boxcox1p, comb, loggamma, poch)
from minijax.scipy.special_integrals import (  # noqa: E402
    dawsn, expn, fresnel, hyp1f1, owens_t, sici, wofz)
from minijax.scipy.special_harmonics import lpmn, lpmn_values, sph_harm_y  # noqa: E402
from minijax.scipy.special_hypergeometric import hyp2f1  # noqa: E402
