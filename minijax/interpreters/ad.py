"""Forward mode automatic differentiation, and the entry points of reverse mode.

A `JVPTrace` carries a (primal, tangent) pair per value.  To process a primitive it unwraps
its own tracers (any other value is a constant with a symbolic zero tangent), and, unless
every tangent is zero, runs the primitive's jvp rule on the parent trace: the rule binds
the primal computation and the tangent computation there, so whatever interprets the
parent (evaluation, staging, partial evaluation, another jvp) sees both.

Reverse mode follows JAX's design: `linearize` runs a jvp on top of a partial-evaluation
trace (`partial_eval.JaxprTrace`) in which primals are known (computed at once on the
parent) and tangents are unknown (recorded into a linear jaxpr whose constants are the
residuals); `vjp` transposes that linear jaxpr with `transpose.backward_pass`.

Rule tables (filled in each primitive's block in minijax/lax/):
  primitive_jvps[p](primals, tangents, **params) -> (primal_out, tangent_out)
  primitive_transposes[p](cotangents_out, *args, **params) -> cotangents_in
where tangents may be the symbolic `Zero(aval)` and transpose args that are linear inputs
are `UndefinedPrimal(aval)`.  `defjvp`, `defjvp2` and `deflinear` build the common rules.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from minijax.tree_util import internal as tree_util
from minijax.core import dtypes
from minijax.core.avals import get_aval
from minijax.core.errors import MissingRuleError
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr, transformation_scope
from minijax.core.trace import Trace, Tracer, new_trace, set_current_trace
from minijax.interpreters import array_ops

JvpRule = Callable[..., tuple[Any, Any]]
TransposeRule = Callable[..., Any]

primitive_jvps: dict[Any, JvpRule] = {}
primitive_transposes: dict[Any, TransposeRule] = {}
# Primitives whose jvp rule runs even when no input has a tangent: `new_ref`, which gives
# every float ref made under a jvp a tangent ref (so a function may write differentiated
# values into a ref it creates).
jvp_even_when_zero: set = set()
# The `kind` of a tangent ref made by `new_ref`'s jvp: partial evaluation stages its
# creation with the tangents (unknown) and the transpose treats it as linear, though its
# operand (zeros) is known.
TANGENT_REF_KIND = "tangent"


def creates_tangent_ref(eqn_params: dict) -> bool:
  return eqn_params.get("kind") == TANGENT_REF_KIND


class Zero:
  """A symbolic zero tangent or cotangent of a given aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"Zero({self.aval.str_short()})"

  @staticmethod
  def from_primal_value(x) -> "Zero":
    return Zero(get_aval(x).tangent_aval())


class UndefinedPrimal:
  """A linear input of a transpose rule: its value is unknown, only its aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
  return type(x) is UndefinedPrimal


def is_float0(x) -> bool:
  return get_aval(x).dtype == dtypes.float0


def zeros_like_aval(aval):
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  return array_ops.zeros(aval)


def instantiate_zeros(tangent):
  """A concrete zeros array in place of a symbolic `Zero`."""
  if type(tangent) is Zero:
    return zeros_like_aval(tangent.aval)
  return tangent


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  if is_float0(x):
    return x
  return array_ops.add_any(x, y)


# ----------------------------------------------------------------------------- the jvp trace

class JVPTracer(Tracer):
  __slots__ = ("primal", "tangent")

  def __init__(self, trace, primal, tangent):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent

  @property
  def aval(self):
    return get_aval(self.primal)

  def to_concrete_value(self):
    p = self.primal
    return p.to_concrete_value() if isinstance(p, Tracer) else p

  def __repr__(self):
    """JAX's names: a GradTracer when the tangent is being staged apart from the primal
    (grad, linearize), a JVPTracer otherwise."""
    tangent = self.tangent
    staged = getattr(tangent, "_trace", None)
    if staged is not None and staged is not getattr(self.primal, "_trace", None):
      tangent_type = get_aval(tangent).str_short(short_dtypes=True)
      return f"GradTracer(primal={self.primal!s}, typeof(tangent)={tangent_type})"
    return f"JVPTracer(primal={self.primal!s}, tangent={tangent!s})"


class JVPTrace(Trace):
  def to_primal_tangent(self, x):
    if self.owns(x):
      return x.primal, x.tangent
    return x, Zero.from_primal_value(x)

  def make(self, primal, tangent):
    if tangent is None or type(tangent) is Zero:
      return primal
    return JVPTracer(self, primal, tangent)

  def process_primitive(self, primitive, args, params):
    primals, tangents = [], []
    for x in args:
      if self.owns(x):
        primals.append(x.primal)
        tangents.append(x.tangent)
      else:
        primals.append(x)
        tangents.append(None)
    if (all(t is None or type(t) is Zero for t in tangents)
        and primitive not in jvp_even_when_zero):
      with set_current_trace(self.parent):
        return primitive.bind(*primals, **params)
    rule = primitive_jvps.get(primitive)
    if rule is None:
      raise MissingRuleError(primitive, "jvp", "ad.primitive_jvps")
    tangents = [Zero.from_primal_value(p) if t is None else t
                for p, t in zip(primals, tangents)]
    with set_current_trace(self.parent):
      primal_out, tangent_out = rule(primals, tangents, **params)
    if primitive.multiple_results:
      if tangent_out is None:
        return list(primal_out)
      return [self.make(p, t) for p, t in zip(primal_out, tangent_out)]
    return self.make(primal_out, tangent_out)


def jvp_flat(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
  """`fun(*primals) -> list`, with `tangents` (arrays or `Zero`) pushed forward.
  Returns `(primals_out, tangents_out)`; output tangents may be `Zero`."""
  trace = JVPTrace()
  with new_trace(trace):
    ins = [trace.make(p, t) for p, t in zip(primals, tangents)]
    outs = fun(*ins)
    pairs = [trace.to_primal_tangent(o) for o in outs]
  return [p for p, _ in pairs], [t for _, t in pairs]


def _broadcast_flags(flags, n: int) -> list[bool]:
  return [bool(flags)] * n if isinstance(flags, bool) else list(flags)


def jvp_jaxpr(closed_jaxpr: ClosedJaxpr, nonzeros: Sequence[bool],
              instantiate: bool | Sequence[bool]) -> tuple[ClosedJaxpr, list[bool]]:
  """Differentiates a jaxpr in forward mode.

  `nonzeros[i]` says whether input i has a (non-symbolically-zero) tangent.  The result
  takes `[*primals, *tangents of the nonzero inputs]` and returns
  `[*primal outputs, *tangents of the nonzero outputs]`; `out_nonzeros` (the second result)
  marks those outputs, forced True where `instantiate` (bool or one per output) says so.
  """
  from minijax.interpreters import partial_eval as pe
  n = len(closed_jaxpr.in_avals)
  instantiate = _broadcast_flags(instantiate, len(closed_jaxpr.out_avals))
  out_nz_box = []

  def fun(*args):
    primals, rest = args[:n], iter(args[n:])
    tangents = [next(rest) if nz else Zero(a.tangent_aval())
                for a, nz in zip(closed_jaxpr.in_avals, nonzeros)]
    outs_p, outs_t = jvp_flat(
        lambda *xs: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *xs), primals, tangents)
    out_nz = [(type(t) is not Zero or inst) and get_aval(p).tangent_aval().dtype != dtypes.float0
              for p, t, inst in zip(outs_p, outs_t, instantiate)]
    out_nz_box.append(out_nz)
    return [*outs_p, *(instantiate_zeros(t) for t, nz in zip(outs_t, out_nz) if nz)]

  in_avals = [*closed_jaxpr.in_avals,
              *(a.tangent_aval() for a, nz in zip(closed_jaxpr.in_avals, nonzeros) if nz)]
  jaxpr, consts = pe.trace_to_jaxpr_dynamic(fun, in_avals)
  return ClosedJaxpr(jaxpr, consts), out_nz_box[0]


# ----------------------------------------------------------------------------- reverse mode

def linearize_flat(fun: Callable, primals: Sequence[Any]):
  """Runs `fun` forward and records its linearization.

  Returns `(primals_out, out_tangent_avals, out_zero, lin)`.  `lin` is a `Linearized`:
  `lin.jaxpr` has the residuals `lin.residuals` as constants, takes the tangents of the
  differentiable (inexact) inputs, marked in `lin.diff`, and returns the output tangents
  that are not symbolically zero (`out_zero[i]` marks the others).  A primal output that
  depended on a tangent would mean a jvp rule mixed them up, and is an internal error.
  """
  from minijax.interpreters import partial_eval as pe
  trace = pe.JaxprTrace()
  with new_trace(trace):
    diff = [dtypes.is_inexact(get_aval(p).dtype) for p in primals]
    tangents = [trace.new_arg(get_aval(p).tangent_aval()) if d else Zero.from_primal_value(p)
                for p, d in zip(primals, diff)]
    with transformation_scope("jvp"):
      primals_out, tangents_out = jvp_flat(fun, primals, tangents)
    for p in primals_out:
      if trace.owns(p):
        raise RuntimeError("internal error: a primal output depends on tangents")
    out_zero = [type(t) is Zero for t in tangents_out]
    jaxpr, residuals = trace.to_jaxpr([t for t, z in zip(tangents_out, out_zero) if not z])
  out_avals = [get_aval(p).tangent_aval() for p in primals_out]
  return primals_out, out_avals, out_zero, Linearized(jaxpr, residuals, diff)


class Linearized:
  """A linear jaxpr from `linearize_flat`, with its residuals."""
  __slots__ = ("jaxpr", "residuals", "diff")

  def __init__(self, jaxpr, residuals, diff):
    self.jaxpr, self.residuals, self.diff = jaxpr, residuals, diff

  def jvp(self, tangents, out_avals, out_zero):
    """Evaluates the linear map on one tangent per input (non-diff ones are ignored)."""
    ins = [instantiate_zeros(t) for t, d in zip(tangents, self.diff) if d]
    outs = iter(eval_jaxpr(self.jaxpr, self.residuals, *ins))
    return [zeros_like_aval(a) if z else next(outs) for a, z in zip(out_avals, out_zero)]

  def transpose(self, cts, in_avals, out_zero, wanted=None):
    """Cotangents of the inputs (`Zero` where zero) from cotangents of the outputs; with
    `wanted` (a flag per input), only the wanted inputs' cotangents are computed."""
    from minijax.interpreters.transpose import backward_pass
    lin_cts = [ct for ct, z in zip(cts, out_zero) if not z]
    args = [UndefinedPrimal(v.aval) for v in self.jaxpr.invars]
    if wanted is not None:
      wanted = [w for w, d in zip(wanted, self.diff) if d]
    cts_in = iter(backward_pass(self.jaxpr, self.residuals, args, lin_cts, wanted,
                                transform_stack=True))
    return [next(cts_in) if d else Zero(a.tangent_aval()) for a, d in zip(in_avals, self.diff)]


def vjp_parts(fun: Callable, primals: Sequence[Any]):
  """`(primals_out, transpose, residuals)`: `transpose(residuals, cts_out, wanted=None)`
  returns one cotangent per input (entries may be `Zero`; with `wanted`, a flag per input,
  the others are not computed).  `residuals` are values `fun` computed, or its inputs
  themselves (the same objects)."""
  primals_out, out_avals, out_zero, lin = linearize_flat(fun, primals)
  in_avals = tuple(get_aval(p) for p in primals)
  transpose = functools.partial(_transpose, lin.jaxpr, lin.diff, in_avals, tuple(out_zero))
  return primals_out, transpose, list(lin.residuals)


def vjp_flat(fun: Callable, primals: Sequence[Any]):
  """`(primals_out, vjp_fn)` where `vjp_fn(cts_out) -> cts_in` (entries may be `Zero`).
  `vjp_fn` is a `tree_util.Partial` whose leaves are the residuals, so that it can be
  passed to and returned from `jit`, as JAX's can."""
  primals_out, transpose, residuals = vjp_parts(fun, primals)
  return primals_out, tree_util.Partial(transpose, residuals)


def _transpose(jaxpr, diff, in_avals, out_zero, residuals, cts, wanted=None):
  return Linearized(jaxpr, residuals, diff).transpose(list(cts), in_avals, out_zero, wanted)


# ----------------------------------------------------------------------------- rule helpers

def _fit_tangent(t, shape):
  """A contribution to an output tangent of `shape`, broadcast to it when an elementwise
  op broadcast its operand (rank 0, or size-1 axes; e.g. `add`'s tangent `g`)."""
  t_shape = get_aval(t).shape
  if t_shape == shape or not shape:
    return t
  if is_float0(t):
    return np.zeros(shape, dtypes.float0)
  return array_ops.broadcast_in_dim(t, shape, tuple(range(len(t_shape))))


def defjvp(primitive, *jvp_fns: Callable | None) -> None:
  """One function per argument: `fn(tangent, *primals, **params)` gives that argument's
  contribution to the output tangent; `None` marks a non-differentiable argument."""
  def rule(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    if primitive.multiple_results:
      total = [Zero.from_primal_value(o) for o in out]
      for fn, t in zip(jvp_fns, tangents):
        if fn is not None and type(t) is not Zero:
          total = [add_tangents(a, b) for a, b in zip(total, fn(t, *primals, **params))]
      return out, total
    total = Zero.from_primal_value(out)
    shape = total.aval.shape
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        total = add_tangents(total, _fit_tangent(fn(t, *primals, **params), shape))
    return out, total
  primitive_jvps[primitive] = rule


def defjvp2(primitive, *jvp_fns: Callable | None) -> None:
  """Like `defjvp`, with the primal output: `fn(tangent, out, *primals, **params)`."""
  def rule(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    total = Zero.from_primal_value(out)
    shape = total.aval.shape
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        total = add_tangents(total, _fit_tangent(fn(t, out, *primals, **params), shape))
    return out, total
  primitive_jvps[primitive] = rule


def deflinear(primitive, transpose_rule: Callable) -> None:
  """A primitive linear in all its arguments: its jvp applies it to the tangents.
  `transpose_rule(cotangent, **params)` returns one cotangent per argument."""
  def jvp(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      return out, Zero.from_primal_value(out)
    return out, primitive.bind(*map(instantiate_zeros, tangents), **params)

  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, **params)

  primitive_jvps[primitive] = jvp
  primitive_transposes[primitive] = transpose


def deflinear2(primitive, transpose_rule: Callable) -> None:
  """As `deflinear`, but `transpose_rule(cotangent, *args, **params)` also sees the
  arguments (`UndefinedPrimal` for the linear ones), as JAX's."""
  deflinear(primitive, lambda ct, **params: None)
  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, *args, **params)
  primitive_transposes[primitive] = transpose


def defbilinear(primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
  """A primitive linear in each of its two arguments separately (a product): its jvp is
  `f(dx, y) + f(x, dy)`; `lhs_rule(ct, x, y, **params)` transposes it in x (an
  `UndefinedPrimal`), `rhs_rule` in y."""
  def jvp(primals, tangents, **params):
    (x, y), (tx, ty) = primals, tangents
    out = primitive.bind(x, y, **params)
    total = Zero.from_primal_value(out)
    if type(tx) is not Zero:
      total = add_tangents(total, primitive.bind(tx, y, **params))
    if type(ty) is not Zero:
      total = add_tangents(total, primitive.bind(x, ty, **params))
    return out, total

  def transpose(ct, x, y, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in (x, y)]
    return [lhs_rule(ct, x, y, **params) if is_undefined_primal(x) else None,
            rhs_rule(ct, x, y, **params) if is_undefined_primal(y) else None]

  primitive_jvps[primitive] = jvp
  primitive_transposes[primitive] = transpose


def get_primitive_transpose(primitive) -> TransposeRule:
  """The transpose rule of `primitive`; NotImplementedError naming it when it has none."""
  try:
    return primitive_transposes[primitive]
  except KeyError as err:
    raise NotImplementedError(
        f"Transpose rule (for reverse-mode differentiation) for '{primitive}' not "
        "implemented") from err
