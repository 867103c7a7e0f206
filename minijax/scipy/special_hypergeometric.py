"""The Gauss hypergeometric function `hyp2f1(a, b, c, x)` for real arguments, x <= 1.

Its series `sum_k (a)_k (b)_k / (c)_k x^k / k!` converges for |x| < 1, fast only well
inside.  So x < 0 goes through Pfaff's transformation
`F(a, b; c; x) = (1 - x)^-a F(a, c - b; c; x / (x - 1))` (or its twin with a and b
exchanged, when that keeps a terminating parameter, a non-positive integer, in front),
which lands in [0, 1); past 0.9 the linear transformation to `1 - x`
`F = A F(a, b; a + b - c + 1; 1 - x) + B (1 - x)^(c - a - b) F(c - a, c - b; c - a - b + 1; 1 - x)`
with `A = G(c) G(c-a-b) / (G(c-a) G(c-b))`, `B = G(c) G(a+b-c) / (G(a) G(b))` takes over
(unless c - a - b is an integer, where it degenerates and the series is summed directly);
at x = 1 Gauss's sum `A` holds when c - a - b > 0 (else the function diverges, inf);
above 1 the function is complex and the result NaN, and a non-positive integer c that
no terminating a or b precedes is a pole (inf), as scipy gives them.  Derivatives are
taken in x (`ab/c F(a+1, b+1; c+1; x)`); in a, b or c they raise."""
from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.custom_derivatives import SymbolicZero, custom_jvp
from minijax.numpy.bessel import as_inexact


def _series(a, b, c, z):
  eps = jnp.finfo(z.dtype).eps

  def unfinished(state):
    k, term, total = state
    return (k < 50000) & jnp.any(jnp.abs(term) > eps * jnp.abs(total))

  def step(state):
    k, term, total = state
    term = term * (a + k) * (b + k) / ((c + k) * (k + 1)) * z
    return k + 1, term, total + term

  one = jnp.ones_like(z)
  return lax.while_loop(unfinished, step, (jnp.zeros((), z.dtype), one, one))[2]


def _non_positive_integer(v):
  return (v <= 0) & (v == jnp.round(v))


def _gamma_ratio(numerators, denominators):
  """prod G(n) / prod G(d), with signs; a pole in a denominator gives 0."""
  from minijax.scipy.special import gammaln, gammasgn
  log = sum(gammaln(v) for v in numerators) - sum(gammaln(v) for v in denominators)
  sign = 1.0
  for v in [*numerators, *denominators]:
    sign = sign * gammasgn(v)
  return sign * jnp.exp(log)


def _in_unit_interval(a, b, c, z):
  """F(a, b; c; z) for 0 <= z < 1."""
  s = c - a - b
  terminating = _non_positive_integer(a) | _non_positive_integer(b)
  reflect = (z > 0.9) & ~terminating & (s != jnp.round(s))
  w = jnp.where(reflect, 1 - z, 0.0)
  reflected = (_gamma_ratio([c, s], [c - a, c - b]) * _series(a, b, 1 - s, w)
               + _gamma_ratio([c, -s], [a, b]) * jnp.where(reflect, w, 1.0) ** s
               * _series(c - a, c - b, 1 + s, w))
  direct = _series(a, b, c, jnp.where(reflect, 0.0, z))
  return jnp.where(reflect, reflected, direct)


@custom_jvp
def _hyp2f1(a, b, c, x):
  negative = x < 0
  b_first = _non_positive_integer(b) & ~_non_positive_integer(a)
  # Pfaff: (1 - x)^-a F(a, c - b; c; z), or (1 - x)^-b F(c - a, b; c; z), z = x / (x - 1)
  p, q = jnp.where(b_first, c - a, a), jnp.where(b_first, b, c - b)
  front = jnp.where(negative, (1 - x) ** -jnp.where(b_first, b, a), 1.0)
  z = jnp.where(negative, x / (x - 1), jnp.where(x < 1, x, 0.0))
  value = front * _in_unit_interval(jnp.where(negative, p, a), jnp.where(negative, q, b), c, z)
  s = c - a - b
  at_one = jnp.where(s > 0, _gamma_ratio([c, jnp.where(s > 0, s, 1.0)], [c - a, c - b]), jnp.inf)
  value = jnp.where(x == 1, at_one, value)
  # c a pole (a non-positive integer) that no terminating a or b reaches first
  pole = _non_positive_integer(c) & ~((_non_positive_integer(a) & (a > c))
                                      | (_non_positive_integer(b) & (b > c)))
  value = jnp.where(pole, jnp.inf, value)
  return jnp.where((x > 1) | jnp.isnan(x), jnp.nan, value)


def _hyp2f1_jvp(primals, tangents):
  (a, b, c, x), (ta, tb, tc, tx) = primals, tangents
  if not all(isinstance(t, SymbolicZero) for t in (ta, tb, tc)):
    raise NotImplementedError("hyp2f1: derivatives in a, b or c are not implemented; "
                              "differentiate in x only")
  out = _hyp2f1(a, b, c, x)
  if isinstance(tx, SymbolicZero):
    return out, jnp.zeros_like(out)
  return out, a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x) * tx


_hyp2f1.defjvp(_hyp2f1_jvp, symbolic_zeros=True)


def hyp2f1(a, b, c, x):
  """The Gauss hypergeometric function 2F1(a, b; c; x) for real arguments."""
  args = jnp.broadcast_arrays(*(as_inexact(v) for v in (a, b, c, x)))
  dtype = jnp.result_type(*args)
  return _hyp2f1(*(v.astype(dtype) for v in args))


__all__ = ["hyp2f1"]
