"""`custom_vmap` and `sequential_vmap`: functions whose batching rule the user supplies.

`f = custom_vmap(fun)` runs `fun` as it is, except under `vmap`: there the rule given with
`f.def_vmap` is called instead, as `rule(axis_size, in_batched, *args)`, with the batched
arguments carrying the batch on axis 0 and `in_batched` a pytree of booleans like `args`;
it returns `(out, out_batched)`, `out_batched` a pytree of booleans of `out`'s structure.

Under a transformation the call is `custom_vmap_call_p`, holding the traced function
(`call_jaxpr`, which evaluation and lowering run) and the rule on flat lists.  Its batching
rule calls the user's rule.  Its jvp is again a `custom_vmap_call_p`: of the function's jvp,
with the rule's jvp as its rule (primals and tangents batched alike), so `vmap` of a
derivative still uses the user's rule, as in JAX.  Partial evaluation with unknown inputs
(linearize, grad) inlines the function, which then differentiates like any other; where JAX
refuses reverse mode here, minijax gives the derivative of `fun`.

`sequential_vmap(fun)` is the custom_vmap whose rule is a `lax.map` over the batch: a
function that cannot be vectorized (a host call, say) runs once per element."""
from __future__ import annotations

import functools
from typing import Callable

from minijax import lax
from minijax.core.primitive import Primitive
from minijax.core.trace import EvalTrace, current_trace
from minijax.custom_derivatives import (_resolve_kwargs, _trace, define_call_rules,
                                        inline_partial_eval, transpose_call)
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.tree_util import internal as tree_util

__all__ = ["custom_vmap", "sequential_vmap"]

custom_vmap_call_p = Primitive("custom_vmap_call")
define_call_rules(custom_vmap_call_p)


def _batch(args, dims, *, call_jaxpr, rule, num_consts, name):
  if any(d is not None for d in dims[:num_consts]):
    raise NotImplementedError(f"custom_vmap function {name} closes over a value batched by "
                              "this vmap; pass it to the function as an argument instead")
  size = batching.batch_size(args, dims)
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  outs, out_batched = rule(size, [d is not None for d in dims[num_consts:]], *args[num_consts:])
  return outs, [0 if b else None for b in out_batched]


def _jvp(primals, tangents, *, call_jaxpr, rule, num_consts, name):
  """A custom_vmap call of the jvp: of the function, and of the rule as its rule."""
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  consts, primals, tangents = primals[:num_consts], primals[num_consts:], tangents[num_consts:]
  n = len(primals)
  jvp_jaxpr, _ = ad.jvp_jaxpr(call_jaxpr, [False] * num_consts + [True] * n, instantiate=True)
  # the jvp jaxpr takes (consts, primals, const tangents (none), primal tangents)

  def jvp_rule(size, in_batched, *args):
    primals, tangents = args[:n], args[n:]
    batched = [p or t for p, t in zip(in_batched[:n], in_batched[n:])]
    lift = lambda x, was, now: batching.bdim_at_front(x, 0 if was else None, size) if now else x
    primals = [lift(x, b, now) for x, b, now in zip(primals, in_batched[:n], batched)]
    tangents = [lift(x, b, now) for x, b, now in zip(tangents, in_batched[n:], batched)]
    out_batched = []

    def primal_rule(*xs):
      outs, ob = rule(size, batched, *xs)
      out_batched[:] = ob
      return outs

    outs, t_outs = ad.jvp_flat(primal_rule, primals, tangents)
    t_outs = [ad.instantiate_zeros(t) for t in t_outs]
    return [*outs, *t_outs], [*out_batched, *out_batched]

  outs = custom_vmap_call_p.bind(*consts, *primals, *tangents, call_jaxpr=jvp_jaxpr,
                                 rule=jvp_rule, num_consts=num_consts, name=f"jvp({name})")
  half = len(outs) // 2
  return outs[:half], outs[half:]


batching.primitive_batchers[custom_vmap_call_p] = _batch
ad.primitive_jvps[custom_vmap_call_p] = _jvp
ad.primitive_transposes[custom_vmap_call_p] = transpose_call
pe.partial_eval_rules[custom_vmap_call_p] = inline_partial_eval


class custom_vmap:
  """A function with a custom batching rule.

    @custom_vmap
    def f(x, y): ...
    @f.def_vmap
    def f_vmap(axis_size, in_batched, x, y): return out, out_batched
  """

  def __init__(self, fun: Callable):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule: Callable | None = None

  def def_vmap(self, vmap_rule: Callable) -> Callable:
    """`vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)`."""
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", repr(self.fun))
    if self.vmap_rule is None:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} using "
                           "def_vmap.")
    args = tuple(_resolve_kwargs(self.fun, args, kwargs))  # the rule takes them by position
    flat, in_tree = tree_util.tree_flatten(args)
    if type(current_trace()) is EvalTrace:
      return self.fun(*args)
    closed, consts, out_tree = _trace(lambda *xs: self.fun(*in_tree.unflatten(xs)), flat)
    user_rule, rule_name = self.vmap_rule, getattr(self.vmap_rule, "__name__", repr(self.vmap_rule))

    def flat_rule(axis_size, in_batched, *xs):
      out, out_batched = user_rule(axis_size, list(in_tree.unflatten(in_batched)),
                                   *in_tree.unflatten(xs))
      outs, tree = tree_util.tree_flatten(out)
      flags, flags_tree = tree_util.tree_flatten(out_batched)
      if flags_tree != tree:
        raise ValueError("structure of output value and output batching specification "
                         f"returned by custom vmap rule ({rule_name}) do not match.\n"
                         f"Output values: {tree}\nBatching spec: {flags_tree}")
      if tree != out_tree:
        raise ValueError(f"the custom vmap rule ({rule_name}) of {name} returned outputs of "
                         f"structure {tree}; the function returns {out_tree}")
      return outs, [bool(b) for b in flags]

    outs = custom_vmap_call_p.bind(*consts, *flat, call_jaxpr=closed, rule=flat_rule,
                                   num_consts=len(consts), name=name)
    return out_tree.unflatten(outs)


def sequential_vmap(fun: Callable) -> custom_vmap:
  """`fun` as a custom_vmap batched by a loop (`lax.map`) over the batch."""
  f = custom_vmap(fun)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    flat, tree = tree_util.tree_flatten(args)
    flags = tree_util.tree_leaves(in_batched)
    mapped = [x for x, b in zip(flat, flags) if b]

    def one(slices):
      slices = iter(slices)
      return fun(*tree.unflatten([next(slices) if b else x for x, b in zip(flat, flags)]))

    out = lax.map(one, mapped)
    return out, tree_util.tree_map(lambda _: True, out)

  return f
