"""`custom_jvp` and `custom_vjp`: functions whose derivative rules the user supplies.

A call is handled by the trace that needs it, as in JAX.  Starting from the current trace,
jvp, batching and partial-evaluation traces that own none of the arguments pass the call to
their parent, as they pass on any primitive.  If the evaluation trace is reached, the
function simply runs on the concrete values (so Python control flow on them works, under
an eager `grad` too).  A jvp trace that owns an argument calls the user's rule directly
on the primals and tangents, one level down, as JAX's `process_custom_jvp_call` does (a
custom_jvp rule may then return outputs of any structure, as long as its primal and
tangent parts match; a custom_vjp's `fwd` gives the primal outputs and residuals, and the
tangents become `custom_lin_p`, below).  Any other trace (staging under `jit`, batching,
unknown values of partial evaluation) gets the function traced to a jaxpr: binding
`custom_jvp_call_p` / `custom_vjp_call_p` with that jaxpr and the user's rules, wrapped as
flat Python callables.  Partial evaluation inlines a `custom_jvp_call_p` with unknown
inputs (it builds linear functions, which need no rule), and its transpose is its
function's, as in JAX.
Evaluation and lowering (under jit) run the traced function.  The jvp rule of
`custom_jvp_call_p` calls the user's jvp rule; the jvp rule of `custom_vjp_call_p` runs
the user's `fwd` for the primal outputs and residuals and expresses the output tangents as
`custom_lin_p(residuals, tangents)`, a linear primitive whose transpose calls `bwd`, so
reverse mode (jvp, partial evaluation, transposition) uses the user's backward function
while forward mode through a custom_vjp function is an error, as in JAX.  Batching
broadcasts every argument to the batch and vmaps the traced function and the rules.
Values the function closes over are passed as leading arguments (`num_consts`) and are
not differentiated.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from minijax import api_util
from minijax import tree_util as user_tree_util
from minijax.tree_util import internal as tree_util
from minijax.core import state
from minijax.core import dtypes, pretty
from minijax.core.avals import ShapedArray
from minijax.core.effects import check_allowed
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr, hoist_consts
from minijax.core.primitive import Primitive
from minijax.core.trace import EvalTrace, current_trace, set_current_trace
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.transpose import backward_pass
from minijax.lowering import mlir

__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_gradient", "custom_jvp", "custom_vjp", "custom_jvp_call_p", "custom_vjp_call_p",
           "custom_lin_p", "linear_call", "linear_call_p", "zero_from_primal"]


_FORWARDING_TRACES = (ad.JVPTrace, batching.BatchTrace, pe.JaxprTrace)


def _trace_for(flat_args):
  """The trace that must handle a custom-derivative call on `flat_args`: the current one,
  or below it past the traces that own none of the arguments and would pass it on."""
  trace = current_trace()
  while isinstance(trace, _FORWARDING_TRACES) and not any(trace.owns(x) for x in flat_args):
    trace = trace.parent
  return trace


def _resolve_kwargs(fun, args, kwargs):
  """Keyword arguments bound to positions through `fun`'s signature (the rules take the
  arguments positionally)."""
  if not kwargs:
    return args
  import inspect
  try:
    bound = inspect.signature(fun).bind(*args, **kwargs)
  except (TypeError, ValueError) as e:
    raise TypeError(f"custom derivative function {getattr(fun, '__name__', fun)} could not "
                    f"bind its arguments to positions: {e}") from None
  bound.apply_defaults()
  if bound.kwargs:
    raise TypeError(f"custom derivative function {getattr(fun, '__name__', fun)} takes "
                    f"keyword-only arguments {sorted(bound.kwargs)}, which it cannot "
                    "differentiate; pass them positionally or close over them")
  return bound.args


def _check_tangent_outs(rule, name, outs, out_tree, t_outs, t_tree) -> None:
  if out_tree != t_tree:
    raise TypeError(f"Custom JVP rule {rule} for function {name} must produce primal and "
                    "tangent outputs with equal container (pytree) structures, but got "
                    f"{out_tree} and {t_tree} respectively.")
  for o, t in zip(outs, t_outs):
    expected = ad.get_aval(o).tangent_aval()
    got = ad.get_aval(t)
    if got.shape != expected.shape or (got.dtype != expected.dtype and not (
        dtypes.is_inexact(expected.dtype) and got.weak_type)):
      raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                      f"corresponding shapes and dtypes. Expected {expected.str_short()} "
                      f"(tangent type of {ad.get_aval(o).str_short()}) but got "
                      f"{got.str_short()}.")


def _resolve_argnums(fun, nondiff_argnums, args):
  nondiff = tuple(i % len(args) if i < 0 else i for i in nondiff_argnums)
  return nondiff, [a for i, a in enumerate(args) if i not in nondiff], [args[i] for i in nondiff]


def _rebuild(args_len, nondiff, nondiff_vals, diff_vals):
  it, nd = iter(diff_vals), dict(zip(nondiff, nondiff_vals))
  return [nd[i] if i in nd else next(it) for i in range(args_len)]


def _check_refs(fun, what, args) -> None:
  """JAX's error for one ref passed twice to a custom-derivative function."""
  leaves = tree_util.tree_leaves(args)
  if sum(isinstance(x, state.Ref) for x in leaves) > 1:
    state.check_ref_arguments(fun, what, leaves, api_util.flat_arg_names(fun, args, {}))


def _trace(fun, flat_args, debug_info=None):
  flat_fun, out_tree = tree_util.flatten_fun_nokwargs(
      fun, tree_util.tree_structure(tuple(flat_args)))
  jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, [ad.get_aval(x) for x in flat_args],
                                            debug_info)
  closed, consts = hoist_consts(ClosedJaxpr(jaxpr, consts))
  return closed, consts, out_tree()


def _check_outs(what, outs, avals):
  got = [ad.get_aval(o) for o in outs]
  if len(got) != len(avals) or any(
      g.shape != a.shape or g.dtype != a.dtype for g, a in zip(got, avals)):
    raise TypeError(f"{what} must produce outputs with the same shapes and dtypes as the "
                    f"function's outputs; expected {[a.str_short() for a in avals]}, got "
                    f"{[g.str_short() for g in got]}")


def define_call_rules(primitive: Primitive) -> None:
  """The rules every call of a user's traced function with rules of its own shares
  (custom_jvp, custom_vjp, linear_call, custom_vmap): its jaxpr, the `call_jaxpr` param,
  gives the outputs and effects (those custom derivatives allow), runs in evaluation and
  is lowered inline."""
  def abstract_eval(*avals, call_jaxpr, **params):
    if call_jaxpr.effects:
      check_allowed(call_jaxpr.effects, "custom_derivatives", params.get("name", primitive.name))
    return call_jaxpr.out_avals, call_jaxpr.effects

  def pp(params, names, indent):
    named = [f"name={params['name']}"] if "name" in params else []
    return named + [pretty.pp_param("call_jaxpr", params["call_jaxpr"], names, indent)]

  primitive.multiple_results = True
  primitive.def_effectful_abstract_eval(abstract_eval)
  primitive.def_impl(lambda *args, call_jaxpr, **params:
                     eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args))
  mlir.register_lowering(primitive, lambda ctx, *args, call_jaxpr, **params:
                         mlir.lower_call_inline(ctx, call_jaxpr, *args))
  pretty.pp_rules[primitive] = pp


def inline_partial_eval(trace, args, *, call_jaxpr, **params):
  """With an unknown input, a call is inlined: partial evaluation builds linear functions,
  which need no user rule, as in JAX (staging the call whole would leave it to transpose)."""
  with set_current_trace(trace):
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def transpose_call(cts, *args, call_jaxpr, **params):
  """A call that is linear in some inputs (one staged whole, as `linear_transpose` stages
  it) transposes as its function does, as in JAX."""
  return backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(args), list(cts))


def _batched_operands(args, dims, num_consts):
  """(operands with their batch dim first, which are batched, the batch dims of the
  non-constant ones): unbatched operands stay unbatched."""
  size = batching.batch_size(args, dims)
  in_batched = [d is not None for d in dims]
  args = [batching.bdim_at_front(x, d, size) if b else x
          for x, d, b in zip(args, dims, in_batched)]
  return size, args, in_batched, [0 if b else None for b in in_batched[num_consts:]]


# ----------------------------------------------------------------------------- custom_jvp

custom_jvp_call_p = Primitive("custom_jvp_call")
define_call_rules(custom_jvp_call_p)


class SymbolicZero:
  """The tangent a `custom_jvp` rule defined with `symbolic_zeros=True` receives for an
  input that is not differentiated (and may return for an output that is zero)."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)

  def instantiate(self):
    return ad.instantiate_zeros(ad.Zero(self.aval))

  @staticmethod
  def from_primal_value(x) -> "SymbolicZero":
    return SymbolicZero(ad.get_aval(x).tangent_aval())

  def __repr__(self):
    return f"SymbolicZero({self.aval.str_short()})"


class CustomVJPPrimal:
  """What a custom_vjp `fwd` rule defined with `symbolic_zeros=True` receives for each
  leaf of its differentiable arguments: the primal `value`, and whether it is `perturbed`
  (has a non-zero tangent: it is being differentiated)."""
  __slots__ = ("value", "perturbed")

  def __init__(self, value, perturbed: bool):
    self.value, self.perturbed = value, perturbed

  def __repr__(self):
    return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def _user_groups(tree) -> tuple[list, list[int]]:
  """The leaves of `tree` as users see them, and how many leaves of the transformations'
  view each covers (a typed key array is one user leaf over its data)."""
  leaves = user_tree_util.tree_leaves(tree)
  return leaves, [len(tree_util.tree_leaves(x)) for x in leaves]


def _cotangents_up_to(primal, ct) -> list:
  """One cotangent per user leaf of `primal` from a bwd rule's `ct`, of the same structure,
  or (as JAX lets it) of a structure whose leaves each stand for a subtree of `primal`
  that holds one leaf (a flax Variable's array for the Variable)."""
  try:
    return user_tree_util.tree_structure(primal).flatten_up_to(ct)
  except (ValueError, TypeError) as mismatch:
    leaves, tree = user_tree_util.tree_flatten(ct, is_leaf=lambda x: x is None)
    try:
      subtrees = tree.flatten_up_to(primal)
    except (ValueError, TypeError):
      raise mismatch from None
    out = []
    for leaf, subtree in zip(leaves, subtrees):
      n = len(user_tree_util.tree_leaves(subtree))
      if leaf is not None and n != 1:
        raise mismatch
      out += [leaf] * n if leaf is None else [leaf]  # (None: zeros for the whole subtree)
    return out


def _check_cotangent_shape(ct, primal, i: int, arg, j: int) -> None:
  """A bwd rule's cotangent has its primal's shape (its dtype may differ, as JAX allows):
  a cotangent of another shape would be summed into the gradient silently."""
  want, got = ad.get_aval(primal), ad.get_aval(ct)
  if want.shape != got.shape:
    path = user_tree_util.keystr(user_tree_util.tree_flatten_with_path(arg)[0][j][0])
    raise ValueError(
        "Custom VJP bwd rule must produce an output with the same type as the args tuple of "
        f"the primal function, but at output[{i}]{path} the bwd rule produced an output of "
        f"type {got.str_short()} corresponding to an input of type {want.str_short()}, so "
        "the shapes do not match")


def _symbolic_cotangents(tree):
  """A tree of cotangents (zeros as `SymbolicZero`s) with each user leaf whose data are all
  symbolic zeros as one `SymbolicZero` of float0 (a key array's cotangent, as in JAX)."""
  def leaf(x):
    if isinstance(x, SymbolicZero):
      return x
    inner = tree_util.tree_leaves(x)
    if inner and all(isinstance(z, SymbolicZero) for z in inner):
      return SymbolicZero(ShapedArray(tuple(x.shape), dtypes.float0))
    return x
  return user_tree_util.tree_map(leaf, tree, is_leaf=lambda x: isinstance(x, SymbolicZero))


def _rule_tangents(tangents, symbolic_zeros: bool) -> list:
  """The tangents a custom_jvp rule sees: zeros as arrays, or as `SymbolicZero`s."""
  if symbolic_zeros:
    return [SymbolicZero(t.aval) if type(t) is ad.Zero else t for t in tangents]
  return [ad.instantiate_zeros(t) for t in tangents]


def _instantiate_symbolic(t):
  return t.instantiate() if isinstance(t, SymbolicZero) else t


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, name):
  args = primals[num_consts:]
  tangents = list(tangents[num_consts:])
  outs, tangents_out = jvp(args, tangents)
  _check_outs(f"the custom_jvp rule of {name}", outs, call_jaxpr.out_avals)
  return outs, tangents_out


def _custom_jvp_call_batch(args, dims, *, call_jaxpr, jvp, num_consts, name):
  """Unbatched operands stay unbatched (in the function and in its rule, which may test
  them: equinox's errors take an unbatched predicate); every output is batched."""
  size, args, in_batched, arg_dims = _batched_operands(args, dims, num_consts)
  batched, _ = batching.batch_jaxpr(call_jaxpr, size, in_batched, instantiate=True)
  batched, consts = hoist_consts(batched)
  n = len(args) - num_consts

  def batched_jvp(primals, tangents):
    # a tangent is batched as its primal is; symbolic zero tangents stay out of the vmap
    # (they are no values) and are made again, per example, for the rule
    is_zero = [type(t) is ad.Zero for t in tangents]
    live = [t for t, z in zip(tangents, is_zero) if not z]
    live_dims = [d for d, z in zip(arg_dims, is_zero) if not z]

    def flat(*xs):
      example, given = xs[:n], iter(xs[n:])
      ts = [ad.Zero.from_primal_value(p) if z else next(given)
            for p, z in zip(example, is_zero)]
      o, t = jvp(example, ts)
      return [*o, *(ad.instantiate_zeros(x) for x in t)]
    outs = batching.vmap_flat(flat, [*arg_dims, *live_dims], lambda k: [0] * k, size,
                              [*primals, *live])
    return outs[:len(outs) // 2], outs[len(outs) // 2:]

  outs = custom_jvp_call_p.bind(*consts, *args, call_jaxpr=batched, jvp=batched_jvp,
                                num_consts=num_consts + len(consts), name=name)
  return outs, [0] * len(outs)


ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp
ad.primitive_transposes[custom_jvp_call_p] = transpose_call
pe.partial_eval_rules[custom_jvp_call_p] = inline_partial_eval
batching.primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch


class custom_jvp:
  """A function with a custom forward-mode rule, usable in reverse mode too (the rule's
  tangent computation is linearized and transposed like any other).

    @custom_jvp
    def f(x): ...
    @f.defjvp
    def f_jvp(primals, tangents): return f(*primals), tangent_out
  """

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.jvp: Callable | None = None
    self.symbolic_zeros = False

  def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
    """`jvp(primals, tangents) -> (primal_out, tangent_out)`.  With `symbolic_zeros`, the
    tangent of an input that is not differentiated is a `SymbolicZero` (else an array of
    zeros), and the rule may return `SymbolicZero`s."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps: Callable | None) -> None:
    """One function per argument: `jvp_i(tangent_i, primal_out, *primals)`."""
    def jvp(primals, tangents):
      out = self(*primals)
      out_leaves, out_tree = tree_util.tree_flatten(out)
      total = [ad.Zero.from_primal_value(o) for o in out_leaves]
      for fn, t in zip(jvps, tangents):
        if fn is not None:
          contrib = tree_util.tree_leaves(fn(t, out, *primals))
          total = [ad.add_tangents(a, b) for a, b in zip(total, contrib)]
      return out, out_tree.unflatten([ad.instantiate_zeros(t) for t in total])
    self.jvp = jvp

  def __call__(self, *args, **kwargs):
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} using "
                           "defjvp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nondiff, diff_args, nondiff_vals = _resolve_argnums(self.fun, self.nondiff_argnums, args)
    flat, in_tree = tree_util.tree_flatten(tuple(diff_args))
    _check_refs(self.fun, "custom_jvp", args)
    trace = _trace_for(flat)
    if type(trace) is EvalTrace:
      out = self.fun(*args)
      state.check_no_returned_ref_values(self.fun, "custom_jvp", tree_util.tree_leaves(out),
                                         tree_util.tree_leaves(args))
      return out
    if isinstance(trace, ad.JVPTrace):
      return self._jvp_on(trace, flat, in_tree, nondiff_vals)
    fun = lambda *xs: self.fun(*_rebuild(len(args), nondiff, nondiff_vals,
                                         tree_util.tree_unflatten(in_tree, xs)))
    named = [None if i in nondiff else a for i, a in enumerate(args)]  # (as JAX names them)
    closed, consts, out_tree = _trace(fun, flat, api_util.debug_info(
        "custom_jvp fun", self.fun, named, {}))
    user_jvp, name, symbolic_zeros = self.jvp, self.__name__, self.symbolic_zeros

    def flat_jvp(primals, tangents):
      p = tuple(tree_util.tree_unflatten(in_tree, primals))
      t = tuple(tree_util.tree_unflatten(in_tree, _rule_tangents(tangents, symbolic_zeros)))
      out, t_out = user_jvp(*nondiff_vals, p, t)
      outs, tree = tree_util.tree_flatten(out)
      t_outs, t_tree = tree_util.tree_flatten(t_out)
      t_outs = [_instantiate_symbolic(x) for x in t_outs]
      if tree != out_tree or t_tree != out_tree:
        raise TypeError(f"the custom_jvp rule of {name} must return a pair (primal_out, "
                        f"tangent_out) whose parts have the function's output structure "
                        f"{out_tree}; got {tree} and {t_tree}")
      return outs, t_outs

    outs = custom_jvp_call_p.bind(*consts, *flat, call_jaxpr=closed, jvp=flat_jvp,
                                  num_consts=len(consts), name=name)
    return tree_util.tree_unflatten(out_tree, outs)

  def _jvp_on(self, trace, flat, in_tree, nondiff_vals):
    """The call under a jvp trace that owns an argument: the user's rule, run one level
    down on the primals and (instantiated) tangents.  Its outputs need only agree with each
    other, not with the function's (which is never traced here), as in JAX."""
    pairs = [trace.to_primal_tangent(x) for x in flat]
    with set_current_trace(trace.parent):
      primals = tuple(tree_util.tree_unflatten(in_tree, [p for p, _ in pairs]))
      tangents = tuple(tree_util.tree_unflatten(
          in_tree, _rule_tangents([t for _, t in pairs], self.symbolic_zeros)))
      out = self.jvp(*nondiff_vals, primals, tangents)
      rule = getattr(self.jvp, "__name__", repr(self.jvp))
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"Custom JVP rule {rule} for function {self.__name__} must produce a "
                        "pair (list or tuple of length two) representing primal and tangent "
                        f"outputs, but got {out}.")
      outs, out_tree = tree_util.tree_flatten(out[0])
      t_outs, t_tree = tree_util.tree_flatten(out[1])
      t_outs = [_instantiate_symbolic(t) for t in t_outs]
      _check_tangent_outs(rule, self.__name__, outs, out_tree, t_outs, t_tree)
    return out_tree.unflatten([trace.make(o, t) for o, t in zip(outs, t_outs)])


# ----------------------------------------------------------------------------- custom_vjp

custom_vjp_call_p = Primitive("custom_vjp_call")
define_call_rules(custom_vjp_call_p)

custom_lin_p = Primitive("custom_lin")
custom_lin_p.multiple_results = True


def _custom_lin_abstract_eval(*avals, num_res, bwd, out_avals, name):
  return [a.tangent_aval() for a in out_avals]


custom_lin_p.def_abstract_eval(_custom_lin_abstract_eval)


def _custom_lin_impl(*args, name, **params):
  raise TypeError(f"can't apply forward-mode autodiff (jvp) to a custom_vjp function "
                  f"({name}); use reverse mode (grad, vjp) or define it with custom_jvp")


custom_lin_p.def_impl(_custom_lin_impl)
mlir.register_lowering(custom_lin_p, lambda ctx, *args, **params: _custom_lin_impl(**params))


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name):
  res = args[:num_res]
  cts_in = bwd(res, list(cts))  # (zeros as ad.Zero: the rule instantiates or keeps them)
  return [None] * num_res + list(cts_in)


ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, name):
  args = primals[num_consts:]
  perturbed = [type(t) is not ad.Zero and not ad.is_float0(t) for t in tangents[num_consts:]]
  outs, res = fwd(args, perturbed)
  _check_outs(f"the custom_vjp fwd rule of {name}", outs, call_jaxpr.out_avals)
  tangents = [ad.instantiate_zeros(t) for t in tangents[num_consts:]]
  diff_tangents = [t for t in tangents if not ad.is_float0(t)]
  tangents_out = custom_lin_p.bind(*res, *diff_tangents, num_res=len(res), bwd=bwd,
                                   out_avals=tuple(call_jaxpr.out_avals), name=name)
  return outs, tangents_out


def _custom_vjp_call_batch(args, dims, *, call_jaxpr, fwd, bwd, num_consts, name):
  """Unbatched operands stay unbatched (in the function, fwd and bwd, as with custom_jvp);
  their cotangents are summed over the batch.  Outputs and residuals are batched."""
  size, args, in_batched, arg_dims = _batched_operands(args, dims, num_consts)
  batched, _ = batching.batch_jaxpr(call_jaxpr, size, in_batched, instantiate=True)
  batched, consts = hoist_consts(batched)
  all0 = lambda k: [0] * k
  # bwd gives a cotangent for each argument whose tangent is not float0
  ct_dims = [d for d, a in zip(arg_dims, call_jaxpr.in_avals[num_consts:])
             if a.tangent_aval().dtype != dtypes.float0]
  res_count = []

  def batched_fwd(xs, perturbed=None):
    def flat(*ys):
      o, r = fwd(ys, perturbed)
      res_count.append(len(r))
      return [*o, *r]
    outs = batching.vmap_flat(flat, arg_dims, all0, size, xs)
    n_out = len(outs) - res_count[-1]
    return outs[:n_out], outs[n_out:]

  def batched_bwd(res, cts):
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    outs, out_dims = batching.vmap_flat_dims(
        lambda *ys: [ad.instantiate_zeros(c) for c in bwd(ys[:len(res)], ys[len(res):])],
        [0] * (len(res) + len(cts)), size, [*res, *cts])
    return [batching.matchaxis(ct, d, want, size, sum_match=True)
            for ct, d, want in zip(outs, out_dims, ct_dims)]

  outs = custom_vjp_call_p.bind(*consts, *args, call_jaxpr=batched, fwd=batched_fwd,
                                bwd=batched_bwd, num_consts=num_consts + len(consts), name=name)
  return outs, [0] * len(outs)


ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp
batching.primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch


class custom_vjp:
  """A function with a custom reverse-mode rule.

    @custom_vjp
    def f(x): ...
    def f_fwd(x): return f(x), residuals
    def f_bwd(residuals, g): return (cotangent_x,)
    f.defvjp(f_fwd, f_bwd)

  With `nondiff_argnums`, `bwd` takes those arguments first: `bwd(*nondiff, res, g)`.
  """

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.fwd: Callable | None = None
    self.bwd: Callable | None = None
    self.symbolic_zeros = False

  def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
    """With `symbolic_zeros`, `fwd` receives each leaf of the differentiable arguments as a
    `CustomVJPPrimal` (`.value`, `.perturbed`), `bwd` receives zero output cotangents as
    `SymbolicZero`s, and may return `SymbolicZero`s or None for zero input cotangents."""
    self.fwd, self.bwd = fwd, bwd
    self.symbolic_zeros = symbolic_zeros

  def __call__(self, *args, **kwargs):
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} using "
                           "defvjp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nondiff, diff_args, nondiff_vals = _resolve_argnums(self.fun, self.nondiff_argnums, args)
    flat, in_tree = tree_util.tree_flatten(tuple(diff_args))
    _check_refs(self.fun, "custom_vjp", args)
    trace = _trace_for(flat)
    if type(trace) is EvalTrace:
      out = self.fun(*args)
      state.check_no_returned_ref_values(self.fun, "custom_vjp", tree_util.tree_leaves(out),
                                         tree_util.tree_leaves(args))
      return out
    rebuild_diff = lambda diff: _rebuild(len(args), nondiff, nondiff_vals, diff)
    rebuild = lambda xs: rebuild_diff(tree_util.tree_unflatten(in_tree, xs))
    if isinstance(trace, ad.JVPTrace):
      out_tree, flat_fwd, flat_bwd = self._flat_rules(rebuild_diff, in_tree, diff_args, flat,
                                                      nondiff_vals, None)
      return self._jvp_on(trace, flat, out_tree, flat_fwd, flat_bwd)
    # (its arguments unnamed, as JAX's are)
    debug = api_util.DebugInfo("custom_vjp fun", api_util.fun_sourceinfo(self.fun))
    closed, consts, out_tree = _trace(lambda *xs: self.fun(*rebuild(xs)), flat, debug)
    state.check_no_returned_refs(self.fun, "custom_vjp", closed.jaxpr)
    _, flat_fwd, flat_bwd = self._flat_rules(rebuild_diff, in_tree, diff_args, flat,
                                             nondiff_vals, out_tree)
    outs = custom_vjp_call_p.bind(*consts, *flat, call_jaxpr=closed, fwd=flat_fwd, bwd=flat_bwd,
                                  num_consts=len(consts), name=self.__name__)
    return tree_util.tree_unflatten(out_tree, outs)

  def _jvp_on(self, trace, flat, out_tree, flat_fwd, flat_bwd):
    """The call under a jvp trace that owns an argument: `fwd` on the primals, one level
    down, and the output tangents as `custom_lin_p` of the residuals and input tangents
    (whose transpose calls `bwd`), as in JAX's `process_custom_vjp_call`."""
    pairs = [trace.to_primal_tangent(x) for x in flat]
    with set_current_trace(trace.parent):
      outs, res = flat_fwd([p for p, _ in pairs],
                           [type(t) is not ad.Zero and not ad.is_float0(t) for _, t in pairs])
      tangents = [ad.instantiate_zeros(t) for _, t in pairs]
      diff_tangents = [t for t in tangents if not ad.is_float0(t)]
      out_avals = tuple(ad.get_aval(o) for o in outs)
      t_outs = custom_lin_p.bind(*res, *diff_tangents, num_res=len(res), bwd=flat_bwd,
                                 out_avals=out_avals, name=self.__name__)
    return out_tree[0].unflatten([trace.make(o, t) for o, t in zip(outs, t_outs)])

  def _flat_rules(self, rebuild_diff, in_tree, diff_args, flat, nondiff_vals, out_tree):
    """`fwd` and `bwd` on flat lists.  With `out_tree` (the traced function's), `fwd` must
    produce it; without, `fwd` defines it (stored in the returned box)."""
    user_fwd, user_bwd, name = self.fwd, self.bwd, self.__name__
    symbolic_zeros = self.symbolic_zeros
    in_avals = [ad.get_aval(x) for x in flat]
    res_tree_box = []
    out_tree_box = [out_tree]

    def primals_for_fwd(xs, perturbed):
      diff = tree_util.tree_unflatten(in_tree, xs)
      if symbolic_zeros:  # each user leaf boxed, perturbed if any of its data is
        perturbed = ([not ad.is_float0(x) for x in xs] if perturbed is None
                     else list(perturbed))
        leaves, groups = _user_groups(diff)
        flags, i = [], 0
        for n in groups:
          flags.append(any(perturbed[i:i + n]))
          i += n
        diff = user_tree_util.tree_unflatten(
            user_tree_util.tree_structure(diff),
            [CustomVJPPrimal(x, p) for x, p in zip(leaves, flags)])
      return rebuild_diff(diff)

    def flat_fwd(xs, perturbed=None):
      pair = user_fwd(*primals_for_fwd(xs, perturbed))
      if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        fwd_name = getattr(user_fwd, "__name__", repr(user_fwd))
        raise TypeError(
            f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair (list or "
            "tuple of length two) where the first element represents the primal output (equal "
            f"to those of the custom_vjp-decorated function {name}) and the second element "
            "represents residuals (i.e. values stored from the forward pass for use on the "
            f"backward pass), but instead of a pair the fwd rule {fwd_name} produced {pair}.")
      out, res = pair
      outs, tree = tree_util.tree_flatten(out)
      if out_tree_box[0] is None:
        out_tree_box[0] = tree
      elif tree != out_tree_box[0]:
        raise TypeError(f"the custom_vjp fwd rule of {name} must return (output, residuals) "
                        f"with output of structure {out_tree_box[0]}, got {tree}")
      res_leaves, res_tree = tree_util.tree_flatten(res)
      for r in res_leaves:
        if isinstance(r, state.Ref) and not any(r is x for x in xs):
          raise ValueError(
              f"custom_vjp fwd function {name} returned a mutable array reference of type "
              f"{r.aval} among its residuals that is not one of its arguments: a ref created "
              "in the fwd function cannot outlive it (return its value, `r[...]`)")
      res_tree_box.append(res_tree)
      return outs, res_leaves

    def flat_bwd(res, cts):
      r = tree_util.tree_unflatten(res_tree_box[-1], res)
      if symbolic_zeros:
        cts = [SymbolicZero(ad.get_aval(ct).tangent_aval()) if ad.is_float0(ct) else
               SymbolicZero(ct.aval) if type(ct) is ad.Zero else ct for ct in cts]
        g = _symbolic_cotangents(tree_util.tree_unflatten(out_tree_box[0], cts))
      else:
        g = tree_util.tree_unflatten(out_tree_box[0], [ad.instantiate_zeros(ct) for ct in cts])
      cts_in = user_bwd(*nondiff_vals, r, g)
      if not isinstance(cts_in, (tuple, list)) or len(cts_in) != len(diff_args):
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) "
            "structure as the args tuple of the primal function, and in particular must "
            "produce a tuple of length equal to the number of arguments to the primal "
            "function, but got bwd output structure "
            f"{user_tree_util.tree_structure(cts_in)} for primal input structure "
            f"{user_tree_util.tree_structure(tuple(diff_args))}.")
      leaves = []
      for i, (ct, a) in enumerate(zip(cts_in, diff_args)):
        # per user leaf of the argument (a key array: one, over its data): None or a
        # SymbolicZero is a zero for all its data
        xs, groups = _user_groups(a)
        user_cts = [None] * len(xs) if ct is None else _cotangents_up_to(a, ct)
        for j, (c, n) in enumerate(zip(user_cts, groups)):
          zero = c is None or isinstance(c, SymbolicZero)
          if not zero:
            _check_cotangent_shape(c, xs[j], i, a, j)
          leaves += [None] * n if zero else tree_util.tree_leaves(c)
      if len(leaves) != len(in_avals):
        raise TypeError(f"the custom_vjp bwd rule of {name} returned cotangents that do not "
                        f"match its differentiable arguments: {cts_in!r:.200}")
      return [ad.Zero(a.tangent_aval()) if ct is None else ct
              for ct, a in zip(leaves, in_avals) if a.tangent_aval().dtype != dtypes.float0]

    return out_tree_box, flat_fwd, flat_bwd


def custom_gradient(fun: Callable) -> Callable:
  """`fun(*args)` returns `(value, vjp)`, `vjp(cotangent)` the cotangents of `args` (a
  tuple, or one value for one argument).  The result computes `value` and differentiates
  by `vjp`; the backward pass calls `fun` again to get `vjp` where it runs."""
  @custom_vjp
  def wrapped(*args):
    return fun(*args)[0]

  def fwd(*args):
    return fun(*args)[0], args

  def bwd(args, ct):
    cts = fun(*args)[1](ct)
    return cts if isinstance(cts, tuple) else (cts,)

  wrapped.defvjp(fwd, bwd)
  return wrapped


# ----------------------------------------------------------------------------- linear_call

linear_call_p = Primitive("linear_call")
define_call_rules(linear_call_p)


def _linear_call_jvp(primals, tangents, *, call_jaxpr, transpose, num_consts, num_res):
  fixed = num_consts + num_res
  if any(type(t) is not ad.Zero for t in tangents[:fixed]):
    raise NotImplementedError("linear_call: derivatives with respect to residual_args (or "
                              "values the function closes over) are not supported; the "
                              "function is linear in linear_args only")
  params = dict(call_jaxpr=call_jaxpr, transpose=transpose, num_consts=num_consts,
                num_res=num_res)
  outs = linear_call_p.bind(*primals, **params)
  if all(type(t) is ad.Zero for t in tangents[fixed:]):
    return outs, [ad.Zero.from_primal_value(o) for o in outs]
  lin = [ad.instantiate_zeros(t) for t in tangents[fixed:]]
  return outs, linear_call_p.bind(*primals[:fixed], *lin, **params)


def _linear_call_transpose(cts, *args, call_jaxpr, transpose, num_consts, num_res):
  fixed = num_consts + num_res
  if any(ad.is_undefined_primal(x) for x in args[:fixed]):
    raise NotImplementedError("linear_call: transposing with respect to residual_args is "
                              "not supported")
  lin_cts = transpose(list(args[num_consts:fixed]), [ad.instantiate_zeros(c) for c in cts])
  return [None] * fixed + list(lin_cts)


ad.primitive_jvps[linear_call_p] = _linear_call_jvp
ad.primitive_transposes[linear_call_p] = _linear_call_transpose


def linear_call(fun: Callable, fun_transpose: Callable, residual_args, linear_args):
  """`fun(residual_args, linear_args)`, a function linear in `linear_args`, whose transpose
  is `fun_transpose(residual_args, out_cotangents)` (the cotangents of `linear_args`):
  reverse mode and `linear_transpose` use it instead of transposing `fun`."""
  res, res_tree = tree_util.tree_flatten(residual_args)
  lin, lin_tree = tree_util.tree_flatten(linear_args)
  n_res = len(res)

  def callee(*xs):
    return fun(res_tree.unflatten(xs[:n_res]), lin_tree.unflatten(xs[n_res:]))

  closed, consts, out_tree = _trace(callee, [*res, *lin])
  lin_avals = [ad.get_aval(x) for x in lin]

  def flat_transpose(res_vals, cts):
    out = fun_transpose(res_tree.unflatten(res_vals), out_tree.unflatten(cts))
    leaves, tree = tree_util.tree_flatten(out)
    if tree != lin_tree:
      raise TypeError(f"linear_call: fun_transpose must return cotangents with the structure "
                      f"of linear_args, {lin_tree}; got {tree}")
    _check_outs("linear_call's fun_transpose", leaves, lin_avals)
    return leaves

  outs = linear_call_p.bind(*consts, *res, *lin, call_jaxpr=closed, transpose=flat_transpose,
                            num_consts=len(consts), num_res=n_res)
  return out_tree.unflatten(outs)


def zero_from_primal(val, symbolic_zeros: bool = False):
  """Zeros in the shapes and tangent dtypes of the pytree `val` (float0 for integers);
  with `symbolic_zeros`, `SymbolicZero`s."""
  def zero(x):
    aval = ad.get_aval(x).tangent_aval()
    return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)
  return user_tree_util.tree_map(zero, val)
