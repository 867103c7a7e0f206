"""`custom_linear_solve` and `custom_root`: solvers whose derivatives come from the problem,
not from differentiating the solver's iterations.

`custom_linear_solve(matvec, b, solve, transpose_solve)` is x = A^-1 b for the linear map
A = `matvec`, computed by `solve(matvec, b)`.  It binds `linear_solve_p`, whose operands are
the constants of the four functions it holds (`matvec`, `vecmat` = A^T, `solve`,
`transpose_solve`, each a const-free jaxpr) followed by b:

* jvp: dx = A^-1 (db - dA x), where dA x is the tangent of `matvec` at x in its constants
  (closed-over parameters), and A^-1 is the primitive bound again, linear in its b;
* transpose (in b): b_bar = A^-T x_bar, the primitive with the roles of A and A^T, and of
  `solve` and `transpose_solve`, exchanged (so a gradient needs `transpose_solve`, or
  `symmetric=True`);
* batching: every jaxpr batched in its constants and its vector;
* lowering: a call of the `solve` jaxpr, so XLA runs only the solver.

`custom_root(f, initial_guess, solve, tangent_solve)` is x* = solve(f, initial_guess) with
f(x*) = 0; its derivatives follow from the implicit function theorem: with J = df/dx at x*
and the tangent df of f in its closed-over parameters, dx* = -J^-1 df, J^-1 applied by
`tangent_solve(J, ·)` through `custom_linear_solve` (so reverse mode transposes it).  The
solvers' own iterations are never differentiated (they see stopped gradients).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from minijax import tree_util
from minijax.core import pretty
from minijax.core.jaxpr import ClosedJaxpr, eval_jaxpr
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.interpreters.transpose import transpose_jaxpr
from minijax.lax.control_flow.common import trace_fun
from minijax.lax import elementwise as lax
from minijax.lowering import mlir

linear_solve_p = Primitive("custom_linear_solve")
linear_solve_p.multiple_results = True

_ROLES = ("matvec", "vecmat", "solve", "transpose_solve")


def _split(operands, const_lengths):
  consts, start = {}, 0
  for role, n in zip(_ROLES, const_lengths):
    consts[role] = list(operands[start:start + n])
    start += n
  return consts, list(operands[start:])


def _abstract_eval(*avals, const_lengths, jaxprs, num_aux):
  return jaxprs[2].out_avals


linear_solve_p.def_abstract_eval(_abstract_eval)


def _lowering(ctx, *args, const_lengths, jaxprs, num_aux):
  consts, b = _split(args, const_lengths)
  return mlir.call_lowered_function(ctx, "custom_linear_solve", jaxprs[2],
                                    *consts["solve"], *b)


mlir.register_lowering(linear_solve_p, _lowering)


def _run(jaxpr: ClosedJaxpr, consts, args) -> list:
  return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *args)


def _jvp(primals, tangents, *, const_lengths, jaxprs, num_aux):
  params = dict(const_lengths=const_lengths, jaxprs=jaxprs, num_aux=num_aux)
  outs = linear_solve_p.bind(*primals, **params)
  n_out = len(outs) - num_aux
  x = outs[:n_out]
  consts, _ = _split(primals, const_lengths)
  const_tangents, b_tangents = _split(tangents, const_lengths)
  aux_tangents = [ad.Zero(a.tangent_aval()) for a in jaxprs[2].out_avals[n_out:]]
  moving = [type(t) is not ad.Zero for t in const_tangents["matvec"]]
  if not any(moving) and all(type(t) is ad.Zero for t in b_tangents):
    return outs, [ad.Zero(a.tangent_aval()) for a in jaxprs[2].out_avals]
  rhs = [ad.instantiate_zeros(t) for t in b_tangents]
  if any(moving):  # db - dA x, dA x being matvec's tangent at x in its constants
    jvp_closed, _ = ad.jvp_jaxpr(jaxprs[0], [*moving, *[False] * len(x)], True)
    tangent_outs = eval_jaxpr(jvp_closed.jaxpr, jvp_closed.consts, *consts["matvec"], *x,
                              *(t for t in const_tangents["matvec"] if type(t) is not ad.Zero))
    rhs = [lax.sub(r, d) for r, d in zip(rhs, tangent_outs[len(x):])]
  x_dot = linear_solve_p.bind(*primals[:sum(const_lengths)], *rhs, **params)[:n_out]
  return outs, [*x_dot, *aux_tangents]


def _transpose(cts, *args, const_lengths, jaxprs, num_aux):
  n_consts = sum(const_lengths)
  if any(ad.is_undefined_primal(c) for c in args[:n_consts]):
    raise ValueError("custom_linear_solve is linear only in its right-hand side b, not in "
                     "the parameters its functions close over")
  if jaxprs[3] is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                    "of custom_linear_solve")
  n_out = len(cts) - num_aux
  cts = [ad.instantiate_zeros(ct) for ct in cts[:n_out]]
  consts, _ = _split(args, const_lengths)
  swapped = (jaxprs[1], jaxprs[0], jaxprs[3], jaxprs[2])
  lengths = (const_lengths[1], const_lengths[0], const_lengths[3], const_lengths[2])
  b_bar = linear_solve_p.bind(*consts["vecmat"], *consts["matvec"],
                              *consts["transpose_solve"], *consts["solve"], *cts,
                              const_lengths=lengths, jaxprs=swapped, num_aux=num_aux)[:n_out]
  return [None] * n_consts + list(b_bar)


def _batch(args, dims, *, const_lengths, jaxprs, num_aux):
  size = batching.batch_size(args, dims)
  args = [batching.moveaxis(x, d, 0) if d is not None else x for x, d in zip(args, dims)]
  consts, b = _split(args, const_lengths)
  const_dims, _ = _split(dims, const_lengths)
  b = [x if d is not None else batching.bdim_at_front(x, None, size)
       for x, d in zip(b, dims[sum(const_lengths):])]
  batched = []
  for role, jaxpr, n in zip(_ROLES, jaxprs, const_lengths):
    if jaxpr is None:
      batched.append(None)
      continue
    flags = [d is not None for d in const_dims[role]] + [True] * (len(jaxpr.in_avals) - n)
    batched.append(batching.batch_jaxpr(jaxpr, size, flags, True)[0])
  outs = linear_solve_p.bind(*(c for role in _ROLES for c in consts[role]), *b,
                             const_lengths=const_lengths, jaxprs=tuple(batched),
                             num_aux=num_aux)
  return outs, [0] * len(outs)


def _pp(params, names, indent):
  lines = [f"const_lengths={params['const_lengths']}"]
  for role, jaxpr in zip(_ROLES, params["jaxprs"]):
    if jaxpr is not None:
      lines.append(pretty.pp_param(role, jaxpr, names, indent))
  return lines


ad.primitive_jvps[linear_solve_p] = _jvp
ad.primitive_transposes[linear_solve_p] = _transpose
batching.primitive_batchers[linear_solve_p] = _batch
pretty.pp_rules[linear_solve_p] = _pp


# ----------------------------------------------------------------------------- the API

def _stop(tree):
  from minijax.lax.misc import stop_gradient
  return tree_util.tree_map(stop_gradient, tree)


def _trace(fun: Callable, tree, avals, name: str, want_tree=None):
  """`fun(x)` traced for `x` of structure `tree` and leaves of `avals`."""
  args_tree = tree_util.tree_structure((tree_util.tree_unflatten(tree, avals),))
  closed, consts, out_tree = trace_fun(fun, args_tree, avals, name)
  if want_tree is not None and out_tree != want_tree:
    raise TypeError(f"custom_linear_solve: matvec must return the structure of b, "
                    f"{want_tree}, got {out_tree}")
  return closed, consts, out_tree


def _as_function(closed: ClosedJaxpr, consts, tree, out_tree) -> Callable:
  def fun(x):
    leaves, in_tree = tree_util.tree_flatten(x)
    if in_tree != tree:
      raise TypeError(f"expected a value of structure {tree}, got {in_tree}")
    return tree_util.tree_unflatten(out_tree, _run(closed, consts, leaves))
  return fun


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False):
  """x = A^-1 b for the linear map `matvec` = A (b a pytree), computed by `solve(matvec,
  b)`, differentiated implicitly (see the module docstring).  `transpose_solve(vecmat, b)`
  solves with A^T (needed for reverse mode, unless `symmetric`).  With `has_aux`, `solve`
  (and `transpose_solve`) return `(x, aux)` and so does this function."""
  from minijax.lax.structural import convert_to_array
  from minijax.core.avals import get_aval
  b_leaves, tree = tree_util.tree_flatten(b)
  b_leaves = [convert_to_array(x) for x in b_leaves]
  avals = [get_aval(x).strip_weak_type() if hasattr(get_aval(x), "strip_weak_type")
           else get_aval(x) for x in b_leaves]
  matvec_jaxpr, matvec_consts, _ = _trace(matvec, tree, avals, "custom_linear_solve", tree)
  matvec_fn = _as_function(matvec_jaxpr, matvec_consts, tree, tree)

  def solution(solver, operator):
    @functools.wraps(solver)  # (errors name the user's solver)
    def run(rhs):
      out = solver(operator, rhs)
      return out if has_aux else (out, ())
    return run

  solve_jaxpr, solve_consts, solve_tree = _trace(solution(solve, matvec_fn), tree, avals,
                                                 "custom_linear_solve solve")
  x_tree, aux_tree = solve_tree.children()
  if x_tree != tree:
    raise TypeError(f"custom_linear_solve: solve must return the structure of b, {tree}, "
                    f"got {x_tree}")
  num_aux = aux_tree.num_leaves
  if symmetric:
    vecmat_jaxpr, vecmat_consts = matvec_jaxpr, matvec_consts
    tsolve_jaxpr, tsolve_consts = solve_jaxpr, solve_consts
  elif transpose_solve is not None:
    n = len(matvec_consts)
    vecmat_jaxpr = transpose_jaxpr(matvec_jaxpr, [False] * n + [True] * len(avals))
    vecmat_consts = matvec_consts
    vecmat_fn = _as_function(vecmat_jaxpr, vecmat_consts, tree, tree)
    tsolve_jaxpr, tsolve_consts, _ = _trace(solution(transpose_solve, vecmat_fn), tree, avals,
                                            "custom_linear_solve transpose_solve")
  else:
    vecmat_jaxpr = tsolve_jaxpr = None
    vecmat_consts = tsolve_consts = []
  operands = [*matvec_consts, *vecmat_consts, *solve_consts, *tsolve_consts]
  lengths = (len(matvec_consts), len(vecmat_consts), len(solve_consts), len(tsolve_consts))
  outs = linear_solve_p.bind(*operands, *b_leaves, const_lengths=lengths,
                             jaxprs=(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tsolve_jaxpr),
                             num_aux=num_aux)
  x = tree_util.tree_unflatten(tree, outs[:len(b_leaves)])
  if has_aux:
    return x, tree_util.tree_unflatten(aux_tree, outs[len(b_leaves):])
  return x


def _jvp_of(closed: ClosedJaxpr, primals, moving, tangents) -> list:
  """The output tangents of `closed` at `primals`, for `tangents` of the inputs marked
  `moving` (the others held fixed)."""
  jvp_closed, _ = ad.jvp_jaxpr(closed, moving, True)
  outs = eval_jaxpr(jvp_closed.jaxpr, jvp_closed.consts, *primals, *tangents)
  return outs[len(closed.out_avals):]


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
  """x* = `solve(f, initial_guess)`, a root of `f` (f(x*) = 0), differentiated by the
  implicit function theorem: `tangent_solve(g, y)` solves the linear system g(x) = y for the
  linearization g of `f` at x* (see the module docstring).  With `has_aux`, `solve`
  returns `(x*, aux)` and so does this function."""
  from minijax.core.avals import get_aval
  from minijax.custom_derivatives import custom_jvp
  from minijax.lax.structural import convert_to_array
  guess_leaves, tree = tree_util.tree_flatten(initial_guess)
  guess_leaves = [convert_to_array(x) for x in guess_leaves]
  avals = [get_aval(x) for x in guess_leaves]
  f_jaxpr, f_consts, out_tree = _trace(f, tree, avals, "custom_root")
  if out_tree != tree:
    raise TypeError(f"custom_root: f must return the structure of its input, {tree}, got "
                    f"{out_tree}")
  n_consts = len(f_consts)
  guess = [_stop(x) for x in guess_leaves]
  # `solve` is traced once (it may close over the caller's traced values), its constants
  # passed to the custom_jvp function as operands; neither they nor the guess are
  # differentiated.
  stopped_f = _as_function(f_jaxpr, _stop(list(f_consts)), tree, tree)

  @functools.wraps(solve)  # (errors name the user's solve)
  def solve_from(x0):
    out = solve(stopped_f, x0)
    return out if has_aux else (out, ())

  solve_jaxpr, solve_consts, solve_tree = _trace(solve_from, tree, avals, "custom_root solve")
  x_tree, aux_tree = solve_tree.children()
  if x_tree != tree:
    raise TypeError(f"custom_root: solve must return the structure of initial_guess, {tree}, "
                    f"got {x_tree}")
  n_x = tree.num_leaves

  # `tangent_solve` is traced here too, with the linearization J of `f` at a root x and
  # with its transpose (for reverse mode): it may close over the caller's traced values,
  # which become operands of the root, where the jvp rule, one level down, could not use them
  def linearize_and_solve(transposed):
    def run(x_and_b):
      x, b = x_and_b
      x_now = tree_util.tree_leaves(x)

      def jacobian(v):
        return tree_util.tree_unflatten(tree, _jvp_of(
            f_jaxpr, [*_stop(list(f_consts)), *x_now], [False] * n_consts + [True] * n_x,
            tree_util.tree_leaves(v)))
      if transposed:
        j_jaxpr, j_consts, _ = _trace(jacobian, tree, avals, "custom_root tangent_solve")
        jt_jaxpr = transpose_jaxpr(j_jaxpr, [False] * len(j_consts) + [True] * n_x)
        jacobian = _as_function(jt_jaxpr, j_consts, tree, tree)
      return tangent_solve(jacobian, b)
    return run

  pair_tree = tree_util.tree_structure(((tree_util.tree_unflatten(tree, avals),) * 2,))
  ls_jaxpr, ls_consts, _ = trace_fun(linearize_and_solve(False), pair_tree, [*avals, *avals],
                                     "custom_root tangent_solve")
  lst_jaxpr, lst_consts, _ = trace_fun(linearize_and_solve(True), pair_tree, [*avals, *avals],
                                       "custom_root tangent_solve")
  n_solve, n_ls = len(solve_consts), len(ls_consts)

  def solved(*operands):
    outs = _run(solve_jaxpr, _stop(list(operands[n_consts:n_consts + n_solve])), guess)
    return tuple(_stop(outs))

  root = custom_jvp(solved)

  def root_jvp(primals, tangents):
    outs = root(*primals)
    x_leaves, consts = list(outs[:n_x]), list(primals[:n_consts])
    zeros = [ad.instantiate_zeros(ad.Zero(get_aval(o).tangent_aval())) for o in outs]
    tangents = tangents[:n_consts]  # (solve's constants are not differentiated)
    moving = [type(t) is not ad.Zero and not ad.is_float0(t) for t in tangents]
    if not any(moving):
      return outs, tuple(zeros)
    # df = f's tangent in its constants at x*;  J v = f's tangent in x at x*
    df = _jvp_of(f_jaxpr, [*consts, *x_leaves], [*moving, *[False] * n_x],
                 [t for t, m in zip(tangents, moving) if m])

    def jacobian(v):
      return tree_util.tree_unflatten(tree, _jvp_of(
          f_jaxpr, [*consts, *x_leaves], [False] * n_consts + [True] * n_x,
          tree_util.tree_leaves(v)))

    ls_values = list(primals[n_consts + n_solve:n_consts + n_solve + n_ls])
    lst_values = list(primals[n_consts + n_solve + n_ls:])

    def traced_solve(jaxpr, values):  # (tangent_solve with J or J^T at x*, traced above)
      return lambda _, y: tree_util.tree_unflatten(
          tree, _run(jaxpr, values, [*x_leaves, *tree_util.tree_leaves(y)]))

    dx = custom_linear_solve(jacobian, tree_util.tree_unflatten(tree, df),
                             solve=traced_solve(ls_jaxpr, ls_values),
                             transpose_solve=traced_solve(lst_jaxpr, lst_values))
    dx_leaves = [lax.neg(d) for d in tree_util.tree_leaves(dx)]
    return outs, (*dx_leaves, *zeros[n_x:])

  root.defjvp(root_jvp)
  outs = root(*f_consts, *solve_consts, *ls_consts, *lst_consts)
  x = tree_util.tree_unflatten(tree, list(outs[:n_x]))
  return (x, tree_util.tree_unflatten(aux_tree, list(outs[n_x:]))) if has_aux else x
