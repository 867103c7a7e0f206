"""`jet`: Taylor-mode automatic differentiation (JAX's `jax.experimental.jet`).

`jet(fun, primals, series)` pushes a truncated Taylor series through `fun`: each input is
`x(t) = x0 + x1 t + x2 t^2 / 2! + ... + xK t^K / K!`, given as its primal `x0` and the list
`[x1, ..., xK]` of its derivatives in t; the result is the primal output and the
derivatives `[y1, ..., yK]` of `y(t) = fun(x(t))` at 0.

The interpreter is a trace (`JetTrace`) whose tracers carry a primal and its normalized
Taylor coefficients `c_k = x_k / k!`, in which the rules are short: linear primitives map
the coefficients one by one, bilinear ones (`mul`, `dot_general`, convolutions) take the
Cauchy product `sum_i op(a_i, b_(k-i))`, and `div`, `exp`, `log`, `sin`/`cos`, `tanh`,
`logistic`, `sqrt`, `rsqrt` and `integer_pow` use the recurrences that follow from their
differential equations (`y' = y x'` for exp, ...), O(K^2) work for order K.  Calls (`jit`,
custom derivatives) are interpreted through.  Any other primitive with a jvp rule gets its
coefficients from K nested jvps of `t -> primitive(x(t))` at t = 0: exact, at a cost that
doubles with each order, and only for that primitive.  Outputs that are not floating point
(comparisons, integer results) have zero series."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.core.jaxpr import eval_jaxpr
from minijax.core.trace import Trace, Tracer, new_trace, set_current_trace
from minijax.interpreters import ad
from minijax.tree_util import internal as tree_util

__all__ = ["jet"]

Terms = list  # [c_1, ..., c_K], normalized Taylor coefficients; None: a zero series
JetRule = Callable[..., tuple[Any, Any]]
jet_rules: dict[Any, JetRule] = {}


class JetTracer(Tracer):
  __slots__ = ("primal", "terms")

  def __init__(self, trace, primal, terms: Terms):
    self._trace = trace
    self.primal = primal
    self.terms = terms

  @property
  def aval(self):
    return get_aval(self.primal)


class JetTrace(Trace):
  def __init__(self, order: int):
    super().__init__()
    self.order = order

  def to_primal_terms(self, x):
    return (x.primal, x.terms) if self.owns(x) else (x, None)

  def make(self, primal, terms):
    if terms is None or not dtypes.is_inexact(get_aval(primal).dtype):
      return primal
    return JetTracer(self, primal, terms)

  def process_primitive(self, primitive, args, params):
    primals, terms = zip(*map(self.to_primal_terms, args)) if args else ((), ())
    if all(t is None for t in terms):
      with set_current_trace(self.parent):
        return primitive.bind(*primals, **params)
    call = _CALLS.get(primitive)
    if call is not None:
      closed = params[call]
      return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    rule = jet_rules.get(primitive, _by_nested_jvps)
    terms = [_zeros(p, self.order) if t is None else t for p, t in zip(primals, terms)]
    with set_current_trace(self.parent):
      out, out_terms = rule(primitive, list(primals), terms, **params)
    if primitive.multiple_results:
      return [self.make(o, t) for o, t in zip(out, out_terms)]
    return self.make(out, out_terms)


def _zeros(primal, order: int) -> Terms:
  """A zero series for a floating-point operand; an integer operand's series is never read
  (the rules read its primal), so it holds the primal itself."""
  zero = lax.zeros_like_array(primal) if dtypes.is_inexact(get_aval(primal).dtype) else primal
  return [zero] * order


def _differentiable(x) -> bool:
  return dtypes.is_inexact(get_aval(x).dtype)


# ----------------------------------------------------------------------------- rule kinds

def _linear(primitive, primals, terms, **params):
  """Linear in its floating-point operands (indices, predicates stay as they are)."""
  out = primitive.bind(*primals, **params)
  diff = [_differentiable(p) for p in primals]
  out_terms = [primitive.bind(*[t[k] if d else p for p, t, d in zip(primals, terms, diff)],
                              **params) for k in range(len(terms[0]))]
  return out, out_terms


def _bilinear(primitive, primals, terms, **params):
  a = [primals[0], *terms[0]]
  b = [primals[1], *terms[1]]
  out = primitive.bind(a[0], b[0], **params)
  out_terms = [_sum(primitive.bind(a[i], b[k - i], **params) for i in range(k + 1))
               for k in range(1, len(a))]
  return out, out_terms


def _sum(values):
  values = list(values)
  total = values[0]
  for v in values[1:]:
    total = lax.add(total, v)
  return total


def _scaled(x, c: float):
  return lax.mul(x, lax.full_like(x, c))


def _ode(derivative_series: Callable[[list, int], Any]):
  """A unary rule for y = f(x) with y' = f'(x) x': k y_k = sum_j j x_j d_(k-j), where
  `derivative_series(ys, m)` gives d_m, the m-th coefficient of f'(x(t)), from y_0..y_m."""
  def rule(primitive, primals, terms, **params):
    x = [primals[0], *terms[0]]
    y = [primitive.bind(x[0], **params)]
    d = []
    for k in range(1, len(x)):
      d.append(derivative_series(y, k - 1, x))
      y.append(_scaled(_sum(_scaled(lax.mul(x[j], d[k - j]), j) for j in range(1, k + 1)), 1 / k))
    return y[0], y[1:]
  return rule


def _cauchy(a: list, b: list, m: int, start: int = 0):
  """sum_(i=start)^(m-start) a_i b_(m-i)."""
  return _sum(lax.mul(a[i], b[m - i]) for i in range(start, m - start + 1))


def _one_minus_square(y, m, x):   # tanh' = 1 - tanh^2
  square = _cauchy(y, y, m)
  return lax.sub(lax.full_like(square, 1), square) if m == 0 else lax.neg(square)


def _logistic_derivative(y, m, x):  # logistic' = y (1 - y) = y - y^2
  return lax.sub(y[m], _cauchy(y, y, m))


def _div(primitive, primals, terms, **params):
  x, y = [primals[0], *terms[0]], [primals[1], *terms[1]]
  q = [lax.div(x[0], y[0])]
  for k in range(1, len(x)):
    q.append(lax.div(lax.sub(x[k], _sum(lax.mul(y[i], q[k - i]) for i in range(1, k + 1))), y[0]))
  return q[0], q[1:]


def _log(primitive, primals, terms, **params):
  x = [primals[0], *terms[0]]
  y = [primitive.bind(x[0], **params)]
  for k in range(1, len(x)):
    carried = [_scaled(lax.mul(y[j], x[k - j]), j / k) for j in range(1, k)]
    y.append(lax.div(lax.sub(x[k], _sum(carried)) if carried else x[k], x[0]))
  return y[0], y[1:]


def _sin_cos(primals, terms, accuracy=None):
  x = [primals[0], *terms[0]]
  s, c = [lax.sin(x[0], accuracy=accuracy)], [lax.cos(x[0], accuracy=accuracy)]
  for k in range(1, len(x)):
    s.append(_scaled(_sum(_scaled(lax.mul(x[j], c[k - j]), j) for j in range(1, k + 1)), 1 / k))
    c.append(_scaled(_sum(_scaled(lax.mul(x[j], s[k - j]), j) for j in range(1, k + 1)), -1 / k))
  return s, c


def _sin(primitive, primals, terms, **params):
  s, _ = _sin_cos(primals, terms, **params)
  return s[0], s[1:]


def _cos(primitive, primals, terms, **params):
  _, c = _sin_cos(primals, terms, **params)
  return c[0], c[1:]


def _sqrt(primitive, primals, terms, **params):
  x = [primals[0], *terms[0]]
  y = [primitive.bind(x[0], **params)]
  twice = _scaled(y[0], 2)
  for k in range(1, len(x)):
    rest = [lax.mul(y[i], y[k - i]) for i in range(1, k)]
    y.append(lax.div(lax.sub(x[k], _sum(rest)) if rest else x[k], twice))
  return y[0], y[1:]


def _rsqrt(primitive, primals, terms, **params):
  """y = x^(-1/2): x y' = -y x' / 2, so k x0 y_k = sum_j (-j/2 - (k - j)) x_j y_(k-j)."""
  x = [primals[0], *terms[0]]
  y = [primitive.bind(x[0], **params)]
  for k in range(1, len(x)):
    total = _sum(_scaled(lax.mul(x[j], y[k - j]), -j / 2 - (k - j)) for j in range(1, k + 1))
    y.append(lax.div(_scaled(total, 1 / k), x[0]))
  return y[0], y[1:]


def _integer_pow(primitive, primals, terms, *, y: int):
  if y < 0:
    return _by_nested_jvps(primitive, primals, terms, y=y)
  x = [primals[0], *terms[0]]
  result = [lax.full_like(x[0], 1)] + [lax.zeros_like_array(x[0])] * (len(x) - 1)
  for _ in range(y):
    result = [_cauchy(result, x, m) for m in range(len(x))]
  return result[0], result[1:]


# ----------------------------------------------------------------------------- the fallback

def _by_nested_jvps(primitive, primals, terms, **params):
  """The coefficients of t -> primitive(x(t)) from K nested jvps in t at t = 0."""
  order = len(terms[0])
  diff = [_differentiable(p) for p in primals]
  t_dtype = next((get_aval(p).dtype for p, d in zip(primals, diff) if d), np.float32)
  if dtypes.issubdtype(t_dtype, np.complexfloating):
    t_dtype = dtypes.finfo(t_dtype).dtype

  def at(t):
    args = []
    for p, ts, d in zip(primals, terms, diff):
      if d:
        tt = lax.convert_element_type(t, get_aval(p).dtype)
        power, value = tt, p
        for c in ts:
          value = lax.add(value, lax.mul(c, power))
          power = lax.mul(power, tt)
        args.append(value)
      else:
        args.append(p)
    out = primitive.bind(*args, **params)
    return list(out) if primitive.multiple_results else [out]

  def derivatives(depth: int, t):
    """[g(t), g'(t), ..., g^(depth)(t)], each a list of outputs, flattened."""
    if depth == 0:
      return at(t)
    one = lax.full((), 1, t_dtype)
    lower, tangents = ad.jvp_flat(lambda s: derivatives(depth - 1, s), [t], [one])
    n = len(lower) // depth
    return [*lower, *map(ad.instantiate_zeros, tangents[-n:])]

  flat = derivatives(order, lax.full((), 0, t_dtype))
  n = len(flat) // (order + 1)
  per_order = [flat[k * n:(k + 1) * n] for k in range(order + 1)]
  outs = per_order[0]
  out_terms = [[_scaled(per_order[k][i], 1 / math.factorial(k))
                if _differentiable(outs[i]) else None for k in range(1, order + 1)]
               for i in range(n)]
  out_terms = [None if ts and ts[0] is None else ts for ts in out_terms]
  if primitive.multiple_results:
    return outs, out_terms
  return outs[0], out_terms[0]


# ----------------------------------------------------------------------------- the table

def _register():
  from minijax.custom_batching import custom_vmap_call_p
  from minijax.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p, linear_call_p
  from minijax.lax.call import jit_p
  _CALLS.update({jit_p: "jaxpr", custom_jvp_call_p: "call_jaxpr", custom_vjp_call_p: "call_jaxpr",
                 custom_vmap_call_p: "call_jaxpr", linear_call_p: "call_jaxpr"})
  for name in ["add", "sub", "neg", "reshape", "broadcast_in_dim", "transpose", "squeeze",
               "slice", "concatenate", "reduce_sum", "select_n", "dynamic_slice",
               "dynamic_update_slice", "gather", "pad", "rev", "cumsum", "real", "imag",
               "conj", "complex", "scatter_add", "reduce_window_sum", "add_any", "copy"]:
    primitive = getattr(lax, name + "_p", None)
    if primitive is not None:
      jet_rules[primitive] = _linear
  jet_rules[lax.convert_element_type_p] = _linear  # (float to int: zero series, by `make`)
  for name in ["mul", "dot_general", "conv_general_dilated"]:
    jet_rules[getattr(lax, name + "_p")] = _bilinear
  jet_rules.update({
      lax.div_p: _div, lax.log_p: _log, lax.sin_p: _sin, lax.cos_p: _cos,
      lax.sqrt_p: _sqrt, lax.rsqrt_p: _rsqrt, lax.integer_pow_p: _integer_pow,
      lax.exp_p: _ode(lambda y, m, x: y[m]),
      lax.tanh_p: _ode(_one_minus_square),
      lax.logistic_p: _ode(_logistic_derivative),
  })


_CALLS: dict[Any, str] = {}
_register()


# ----------------------------------------------------------------------------- jet

def jet(fun: Callable, primals, series):
  """`(primal_out, series_out)`: `fun(*primals)` and the derivatives of
  `t -> fun(x(t))` at 0 up to the order of `series` (one list of derivatives per primal;
  see the module docstring).  `series_out` has `primal_out`'s structure, each leaf a list."""
  if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
    raise TypeError("jet: primals and series must be tuples (or lists), one entry per "
                    f"argument of fun; got {type(primals).__name__} and {type(series).__name__}")
  if len(primals) != len(series):
    raise ValueError(f"jet: got {len(primals)} primals but {len(series)} series; give one "
                     "list of terms per primal")
  for i, p in enumerate(primals):
    if not (isinstance(p, (int, float, complex, np.ndarray, np.generic)) or hasattr(p, "aval")
            or hasattr(p, "__jax_array__")):
      raise ValueError(f"jet: primal value at position {i} is not an array")
  orders = {len(s) for s in series}
  if len(orders) > 1:
    raise ValueError("jet terms have inconsistent lengths for different arguments")
  order = orders.pop() if orders else 0
  primals = [lax.convert_to_array(p) for p in primals]
  coefficients = []
  for i, (p, s) in enumerate(zip(primals, series)):
    terms = []
    for k, term in enumerate(s, 1):
      term = lax.convert_element_type(lax.convert_to_array(term), get_aval(p).dtype)
      if get_aval(term).shape != get_aval(p).shape:
        raise ValueError(f"jet: term {k} of argument {i} has shape {get_aval(term).shape}, "
                         f"its primal {get_aval(p).shape}")
      terms.append(_scaled(term, 1 / math.factorial(k)))
    coefficients.append(terms if _differentiable(p) else None)
  trace = JetTrace(order)
  with new_trace(trace):
    ins = [trace.make(p, c) for p, c in zip(primals, coefficients)]
    out = fun(*ins)
    leaves, out_tree = tree_util.tree_flatten(out)
    pairs = [trace.to_primal_terms(x) for x in leaves]
  outs, out_series = [], []
  for p, c in pairs:
    p = lax.convert_to_array(p)
    outs.append(p)
    if c is None:
      out_series.append([lax.zeros_like_array(p)] * order)
    else:
      out_series.append([_scaled(term, math.factorial(k)) for k, term in enumerate(c, 1)])
  return out_tree.unflatten(outs), out_tree.unflatten(out_series)
