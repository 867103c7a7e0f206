"""`shard_map`: run a function on every device of a mesh, each on its block of the data.

    @shard_map(mesh=mesh, in_specs=P('i'), out_specs=P())
    def total(block):                 # block: this device's slice of the argument
      return lax.psum(block.sum(), 'i')

`shard_map_p` is a call-like primitive.  Its params: `jaxpr` (the body, traced once for one
device: its avals are the *blocks*' avals), `mesh`, `in_specs` and `out_specs` (one
`PartitionSpec` per operand and per result), `check_vma`, and `manual_axes` (the mesh axes
the body runs over, `axis_names`: all of them by default; the specs may not name the others,
along which each device holds its values whole).  Its operands and results are global
values; the abstract evaluation scales the body's result avals up by `out_specs`.  While the
body is traced, and whenever a transformation re-traces it, the manual axes are bound in the
axis environment (`core.axes`), so collectives inside may name them.

A shard_map may nest in the body of one manual over some of the same mesh's axes, manual
over others: its region is then manual over both sets, and its layouts are written as the
outer region sees them (`spmd.region_sharding`).

Lowering emits the body once, inside a manual region (`lowering/spmd.py`): operands are
converted to their blocks, the body runs with the mesh as the lowering's axis context (its
collectives get replica groups of device positions; taps inside run on every device), and
the results are converted back.  The runtime then runs the program on all the mesh's
devices; evaluating `shard_map_p` on concrete values compiles it that way (the impl is
installed by `minijax.staging`).

Transformations rewrite the body and the specs together.  jvp: tangents get the specs of
their primals.  vmap: the batch dimension goes first and is never split (`None` is
prepended to the specs).  Partial evaluation: the known body also returns its residuals,
each stacked across devices along a new leading axis split over every manual axis, which
the unknown body takes back as its blocks; under a `checkpoint` policy the body splits by
`pe.partial_eval_jaxpr_custom` the same way, so the policy reaches inside.  Transposition
follows JAX's `check_vma=False` rule, which is exact without JAX's device-variance types: a
result cotangent is divided by the number of devices that hold the same block, and an
operand cotangent is summed over the manual axes its spec does not split (those devices all
read the same block).

`check_vma=True` checks, from the body's jaxpr, that a result whose spec leaves a mesh axis
unsplit really is the same on every device along it (the result of a `psum`, say).
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

from minijax.tree_util import internal as tree_util
from minijax.core import axes as axes_lib
from minijax.core import pretty
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.effects import must_keep, ordered_effects
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Var, eval_jaxpr, hoist_consts
from minijax.core.primitive import Primitive
from minijax.core.sharding import Mesh, NamedSharding, PartitionSpec, current_mesh
from minijax.core.trace import set_current_trace
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.transpose import transpose_jaxpr
from minijax.lax.parallel import psum_p
from minijax.lax.elementwise import div
from minijax.lax.structural import full, reshape
from minijax.lowering import mlir, spmd

__all__ = ["shard_map", "shard_map_p", "smap"]

shard_map_p = Primitive("shard_map")
shard_map_p.multiple_results = True


def mesh_axes(mesh: Mesh, manual_axes: frozenset | None = None):
  """Binds `mesh`'s manual axes (all when None) in the axis environment, as while the body
  is traced."""
  return axes_lib.extend_axis_env([(n, s, "spmd") for n, s in mesh.shape.items()
                                   if manual_axes is None or n in manual_axes])


def _manual_names(mesh: Mesh, manual_axes: frozenset) -> tuple:
  return tuple(n for n in mesh.axis_names if n in manual_axes)


def _entries(spec: PartitionSpec, ndim: int) -> list:
  return list(spec) + [None] * (ndim - len(spec))


def _factor(mesh: Mesh, entry) -> int:
  if entry is None:
    return 1
  names = entry if isinstance(entry, tuple) else (entry,)
  return math.prod(mesh.shape[n] for n in names)


def block_aval(mesh: Mesh, spec: PartitionSpec, aval: ShapedArray) -> ShapedArray:
  """The aval of one device's block of a global value of `aval` laid out by `spec`."""
  shape = tuple(s // _factor(mesh, e) for s, e in zip(aval.shape, _entries(spec, aval.ndim)))
  return aval.update(shape=shape)


def global_aval(mesh: Mesh, spec: PartitionSpec, aval: ShapedArray) -> ShapedArray:
  """The aval of the global value whose blocks, laid out by `spec`, have `aval`."""
  shape = tuple(s * _factor(mesh, e) for s, e in zip(aval.shape, _entries(spec, aval.ndim)))
  return aval.update(shape=shape)


def _unsplit_axes(mesh: Mesh, manual_axes: frozenset, spec: PartitionSpec) -> tuple:
  """The manual axes along which every device holds the same block of a value of `spec`."""
  used = spec.axis_names()
  return tuple(n for n in _manual_names(mesh, manual_axes) if n not in used)


# ----------------------------------------------------------------------------- the primitive

def _abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
  return ([global_aval(mesh, s, a) for s, a in zip(out_specs, jaxpr.out_avals)],
          jaxpr.effects)


shard_map_p.def_effectful_abstract_eval(_abstract_eval)


def _lowering(ctx, *args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes):
  mctx = ctx.module_context
  if mctx.positions is None:
    raise ValueError("internal error: shard_map lowered in a module compiled for one device")
  outer = mctx.axis_context
  if outer is not None:  # nested: manual over the outer region's axes and its own
    if outer.mesh != mesh:
      raise NotImplementedError("a shard_map nested in another over a different mesh is not "
                                "supported by minijax; nest it over the same mesh")
    if manual_axes & set(outer.axis_names):
      raise ValueError(f"a shard_map nested in another may not be manual again over the "
                       f"outer one's axes {outer.axis_names}; got axis_names="
                       f"{set(manual_axes)}")
    manual_axes = manual_axes | set(outer.axis_names)
  # (texts of the layouts as seen from outside the region, before entering it)
  in_texts = [spmd.region_sharding(mctx, mesh, s, a.ndim) for s, a in zip(in_specs, ctx.avals_in)]
  out_texts = [spmd.region_sharding(mctx, mesh, s, a.ndim)
               for s, a in zip(out_specs, ctx.avals_out)]
  # the body is a function of its own, as JAX's: inline, XLA would merge its constants with
  # equal ones outside, and a constant both {manual} and not fails its partitioner
  mctx.axis_context = spmd.ManualContext(mesh, frozenset(manual_axes))
  try:
    manual = lambda ndim: spmd.manual_sharding(mctx, ndim)  # noqa: E731
    blocks = [spmd.full_to_shard(x, mctx.ir_type(b), t, manual(a.ndim))
              for x, a, b, t in zip(args, ctx.avals_in, jaxpr.in_avals, in_texts)]
    body = mlir.lower_called_function(mctx, "shmap_body", jaxpr, ordered_effects(jaxpr.effects))
    mctx.region_bodies.add(body.sym_name.value)
    outs = mlir.call_lowered_function(ctx, "shmap_body", jaxpr, *blocks)
    if mctx.axis_context.partial:
      spmd.pin_manual(mctx, body, mctx.module)
    return [spmd.shard_to_full(y, mctx.ir_type(a), t, manual(a.ndim))
            for y, a, t in zip(outs, ctx.avals_out, out_texts)]
  finally:
    mctx.axis_context = outer


mlir.register_lowering(shard_map_p, _lowering)


def _pp(params, names, indent):
  specs = lambda ss: "(" + ", ".join(repr(tuple(s)) for s in ss) + ")"  # noqa: E731
  mesh, manual = params["mesh"], params["manual_axes"]
  partly = [f"manual_axes={_manual_names(mesh, manual)}"] if len(manual) < len(mesh.shape) else []
  return [f"mesh={dict(mesh.shape)}", f"in_specs={specs(params['in_specs'])}",
          f"out_specs={specs(params['out_specs'])}", *partly,
          pretty.pp_param("jaxpr", params["jaxpr"], names, indent)]


pretty.pp_rules[shard_map_p] = _pp


def rebind(args, params, closed: ClosedJaxpr, in_specs, out_specs):
  """Binds `shard_map_p` again with a rewritten body `closed` and its specs (the other
  params as in `params`); the body's constants become replicated operands."""
  closed, consts = hoist_consts(closed)
  in_specs = (PartitionSpec(),) * len(consts) + tuple(in_specs)
  return shard_map_p.bind(*consts, *args, **dict(params, jaxpr=closed, in_specs=in_specs,
                                                 out_specs=tuple(out_specs)))


# ---- jvp

def _jvp(primals, tangents, *, jaxpr, **params):
  mesh, in_specs, out_specs = params["mesh"], params["in_specs"], params["out_specs"]
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  with mesh_axes(mesh, params["manual_axes"]):
    jvp_closed, out_nz = ad.jvp_jaxpr(jaxpr, nonzeros, False)
  nz_tangents = [t for t, nz in zip(tangents, nonzeros) if nz]
  outs = rebind([*primals, *nz_tangents], params, jvp_closed,
                 [*in_specs, *(s for s, nz in zip(in_specs, nonzeros) if nz)],
                 [*out_specs, *(s for s, nz in zip(out_specs, out_nz) if nz)])
  n = len(out_specs)
  tangent_outs = iter(outs[n:])
  avals = [get_aval(o) for o in outs[:n]]
  return outs[:n], [next(tangent_outs) if nz else ad.Zero(a.tangent_aval())
                    for a, nz in zip(avals, out_nz)]


ad.primitive_jvps[shard_map_p] = _jvp


# ---- vmap

def _batch(args, dims, *, jaxpr, **params):
  size = batching.batch_size(args, dims)
  args = [batching.moveaxis(x, d, 0) if d is not None else x for x, d in zip(args, dims)]
  with mesh_axes(params["mesh"], params["manual_axes"]):
    batched, out_batched = batching.batch_jaxpr(jaxpr, size, [d is not None for d in dims],
                                                False)
  prepend = lambda s: PartitionSpec(None, *s)  # noqa: E731
  in_specs = [prepend(s) if d is not None else s for s, d in zip(params["in_specs"], dims)]
  out_specs = [prepend(s) if b else s for s, b in zip(params["out_specs"], out_batched)]
  outs = rebind(args, params, batched, in_specs, out_specs)
  return outs, [0 if b else None for b in out_batched]


batching.primitive_batchers[shard_map_p] = _batch


# ---- partial evaluation

def _stack_spec(mesh: Mesh, manual_axes: frozenset) -> PartitionSpec:
  return PartitionSpec(_manual_names(mesh, manual_axes))


def _partial_eval(trace, args, *, jaxpr, **params):
  mesh, in_specs, out_specs = params["mesh"], params["in_specs"], params["out_specs"]
  unknowns = [trace.owns(x) for x in args]
  with mesh_axes(mesh, params["manual_axes"]):
    known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(jaxpr, unknowns, False)
    n_known_out = len(known.out_avals) - num_res
    res_avals = known.out_avals[n_known_out:]

    def known_fun(*xs):  # residuals get a leading axis of size 1: one block per device
      outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
      res = [reshape(r, (1, *a.shape)) for r, a in zip(outs[n_known_out:], res_avals)]
      return [*outs[:n_known_out], *res]

    def unknown_fun(*xs):
      res = [reshape(r, a.shape) for r, a in zip(xs[:num_res], res_avals)]
      return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[num_res:])

    known_avals = known.in_avals
    known_j = ClosedJaxpr(*pe.trace_to_jaxpr_dynamic(known_fun, known_avals))
    stacked = [a.update(shape=(1, *a.shape)) for a in res_avals]
    unknown_j = ClosedJaxpr(*pe.trace_to_jaxpr_dynamic(
        unknown_fun, [*stacked, *unknown.in_avals[num_res:]]))
  stack = _stack_spec(mesh, params["manual_axes"])
  known_in_specs = [s for s, uk in zip(in_specs, unknowns) if not uk]
  known_out_specs = [*(s for s, uk in zip(out_specs, out_uk) if not uk), *[stack] * num_res]
  with set_current_trace(trace.parent):
    known_outs = rebind([x for x, uk in zip(args, unknowns) if not uk], params, known_j,
                         known_in_specs, known_out_specs)
  res = known_outs[n_known_out:]
  known_outs = iter(known_outs[:n_known_out])
  if not any(out_uk) and not must_keep(unknown_j.effects):
    return list(known_outs)
  unknown_closed, consts = hoist_consts(unknown_j)
  unknown_args = [*consts, *res, *(x for x, uk in zip(args, unknowns) if uk)]
  unknown_in_specs = [*(PartitionSpec(),) * len(consts), *[stack] * num_res,
                      *(s for s, uk in zip(in_specs, unknowns) if uk)]
  unknown_out_specs = [s for s, uk in zip(out_specs, out_uk) if uk]
  unknown_outs = iter(trace.stage(shard_map_p, unknown_args, dict(
      params, jaxpr=unknown_closed, in_specs=tuple(unknown_in_specs),
      out_specs=tuple(unknown_out_specs))))
  return [next(unknown_outs) if uk else next(known_outs) for uk in out_uk]


pe.partial_eval_rules[shard_map_p] = _partial_eval


# Under a policy (inside `checkpoint`): the body splits by `pe.partial_eval_jaxpr_custom`, so
# the policy reaches inside; the residuals leave the known shard_map stacked along a new
# leading axis split over every mesh axis, and enter the staged one with the same spec.
def _partial_eval_custom(saveable, unks_in, inst_in, eqn):
  closed, mesh = eqn.params["jaxpr"], eqn.params["mesh"]
  in_specs, out_specs = eqn.params["in_specs"], eqn.params["out_specs"]
  manual = eqn.params["manual_axes"]
  with mesh_axes(mesh, manual):
    known, staged, unks_out, inst_out, num_res = pe.partial_eval_jaxpr_custom(
        closed.jaxpr, unks_in, inst_in, False, False, saveable)
    n_known_out = len(known.outvars) - num_res
    res_avals = [v.aval for v in staged.invars[:num_res]]

    def known_fun(*xs):  # one block of each residual per device, on a new leading axis
      outs = eval_jaxpr(known, closed.consts, *xs)
      return [*outs[:n_known_out],
              *(reshape(r, (1, *a.shape)) for r, a in zip(outs[n_known_out:], res_avals))]

    def staged_fun(*xs):
      res = [reshape(r, a.shape) for r, a in zip(xs[:num_res], res_avals)]
      return eval_jaxpr(staged, closed.consts, *res, *xs[num_res:])

    known_j, known_consts = pe.trace_to_jaxpr_dynamic(known_fun, [v.aval for v in known.invars])
    stacked = [a.update(shape=(1, *a.shape)) for a in res_avals]
    staged_j, staged_consts = pe.trace_to_jaxpr_dynamic(
        staged_fun, [*stacked, *(v.aval for v in staged.invars[num_res:])])
  stack = _stack_spec(mesh, manual)
  res = [Var(global_aval(mesh, stack, a)) for a in stacked]
  known_eqn = eqn.replace(
      invars=[a for a, uk in zip(eqn.invars, unks_in) if not uk],
      outvars=[*(v for v, uk in zip(eqn.outvars, unks_out) if not uk), *res],
      params=dict(eqn.params, jaxpr=ClosedJaxpr(known_j, known_consts),
                  in_specs=tuple(s for s, uk in zip(in_specs, unks_in) if not uk),
                  out_specs=(*(s for s, uk in zip(out_specs, unks_out) if not uk),
                             *(stack,) * num_res)),
      effects=known_j.effects)
  staged_eqn = eqn.replace(
      invars=[*res, *(a for a, i in zip(eqn.invars, inst_in) if i)],
      outvars=[v for v, i in zip(eqn.outvars, inst_out) if i],
      params=dict(eqn.params, jaxpr=ClosedJaxpr(staged_j, staged_consts),
                  in_specs=(*(stack,) * num_res,
                            *(s for s, i in zip(in_specs, inst_in) if i)),
                  out_specs=tuple(s for s, i in zip(out_specs, inst_out) if i)),
      effects=staged_j.effects)
  return [known_eqn], [staged_eqn], unks_out, inst_out, res


def _dce(used_outputs, eqn):
  if not any(used_outputs) and not must_keep(eqn.effects):
    return [False] * len(eqn.invars), None
  closed = eqn.params["jaxpr"]
  with mesh_axes(eqn.params["mesh"], eqn.params["manual_axes"]):
    pruned, used_inputs = pe.dce_closed_jaxpr(closed, used_outputs)
  params = dict(eqn.params, jaxpr=pruned,
                in_specs=tuple(s for s, u in zip(eqn.params["in_specs"], used_inputs) if u),
                out_specs=tuple(s for s, u in zip(eqn.params["out_specs"], used_outputs) if u))
  return used_inputs, eqn.replace(
      invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
      outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
      params=params, effects=pruned.effects)


pe.partial_eval_jaxpr_custom_rules[shard_map_p] = _partial_eval_custom
pe.dce_rules[shard_map_p] = _dce


# ---- transpose

def _transpose(cts, *args, jaxpr, **params):
  mesh, in_specs, out_specs = params["mesh"], params["in_specs"], params["out_specs"]
  manual = params["manual_axes"]
  linear = [ad.is_undefined_primal(x) for x in args]
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  cts = [_scale_down(ct, math.prod(mesh.shape[n] for n in _unsplit_axes(mesh, manual, s)))
         for ct, s in zip(cts, out_specs)]
  lin_specs = [s for s, lin in zip(in_specs, linear) if lin]

  with mesh_axes(mesh, manual):
    transposed = transpose_jaxpr(jaxpr, linear)

    def summed(*xs):
      outs = eval_jaxpr(transposed.jaxpr, transposed.consts, *xs)
      return [_sum_over(o, _unsplit_axes(mesh, manual, s)) for o, s in zip(outs, lin_specs)]

    trans_j = ClosedJaxpr(*pe.trace_to_jaxpr_dynamic(summed, transposed.in_avals))
  nonlin = [x for x, lin in zip(args, linear) if not lin]
  outs = iter(rebind([*nonlin, *cts], params, trans_j,
                      [*(s for s, lin in zip(in_specs, linear) if not lin), *out_specs],
                      lin_specs))
  return [next(outs) if lin else None for lin in linear]


def _scale_down(ct, n: int):
  if n == 1:
    return ct
  aval = get_aval(ct)
  return div(ct, full((), n, aval.dtype))


def _sum_over(x, names: tuple):
  return psum_p.bind(x, axes=names, axis_index_groups=None)[0] if names else x


ad.primitive_transposes[shard_map_p] = _transpose


# ----------------------------------------------------------------------------- check_vma

def _varying(jaxpr: Jaxpr, in_varying: Sequence[frozenset], all_axes: frozenset
             ) -> list[frozenset]:
  """For each output of `jaxpr`, the mesh axes along which it may differ between devices,
  given those of its inputs: collectives that reduce over axes make their results the same
  along them (an `all_gather` only with `to="invarying"`, as JAX counts), `axis_index`
  differs along its axes, a `jit` is looked into, anything else
  varies wherever one of its operands does (and, when it holds a jaxpr with an
  `axis_index`, everywhere); `scan`, `while` and `cond` are followed through their bodies,
  a loop's carry until its axes stop growing."""
  from minijax.lax import parallel
  env = dict(zip(jaxpr.invars, in_varying))
  env.update((v, frozenset()) for v in jaxpr.constvars)
  read = lambda a: env.get(a, frozenset())  # noqa: E731  (literals do not vary)
  reducing = {parallel.psum_p, parallel.pmax_p, parallel.pmin_p}
  for eqn in jaxpr.eqns:
    ins = [read(a) for a in eqn.invars]
    union = frozenset().union(*ins)
    p = eqn.primitive
    # (with axis_index_groups, each group gets its own result: it still varies)
    grouped = eqn.params.get("axis_index_groups") is not None
    if p in reducing:
      outs = [v - (set() if grouped else set(eqn.params["axes"])) for v in ins]
    elif p is parallel.all_gather_p and eqn.params["to"] == "invarying":
      outs = [union - set(eqn.params["axis_name"])]
    elif p is parallel.axis_index_p:
      outs = [frozenset(eqn.params["axis_name"])]
    elif p.name in _CONTROL_FLOW:
      outs = _CONTROL_FLOW[p.name](eqn.params, ins, all_axes)
    elif (body := _called_jaxpr(eqn)) is not None:  # jit, checkpoint, custom_jvp_call...
      outs = _varying(body, ins, all_axes)
    else:
      if any(_uses_axis_index(v) for v in eqn.params.values()):
        union = all_axes
      outs = [union] * len(eqn.outvars)
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def _called_jaxpr(eqn) -> Jaxpr | None:
  """The one jaxpr an equation calls on its operands, giving its results, if it is so."""
  bodies = [v for v in eqn.params.values() if isinstance(v, (Jaxpr, ClosedJaxpr))]
  if len(bodies) != 1:
    return None
  body = bodies[0].jaxpr if isinstance(bodies[0], ClosedJaxpr) else bodies[0]
  if len(body.invars) == len(eqn.invars) and len(body.outvars) == len(eqn.outvars):
    return body
  return None


def _carry_fixpoint(body: Jaxpr, before: list, carry: list, after: list, all_axes,
                    num_carry: int) -> list[frozenset]:
  """A loop body's outputs' axes of variation once its carry's have stopped growing (a
  carry varies where its initial value or any iteration's result may)."""
  while True:
    outs = _varying(body, [*before, *carry, *after], all_axes)
    grown = [c | o for c, o in zip(carry, outs[:num_carry])]
    if grown == carry:
      return outs
    carry = grown


def _scan_varying(params, ins, all_axes):
  n_consts, n_carry = params["num_consts"], params["num_carry"]
  consts, carry, xs = ins[:n_consts], ins[n_consts:n_consts + n_carry], ins[n_consts + n_carry:]
  outs = _carry_fixpoint(params["jaxpr"].jaxpr, consts, carry, xs, all_axes, n_carry)
  return [c | o for c, o in zip(carry, outs[:n_carry])] + outs[n_carry:]


def _while_varying(params, ins, all_axes):
  nc, nb = params["cond_nconsts"], params["body_nconsts"]
  cond_consts, body_consts, carry = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
  while True:
    outs = _carry_fixpoint(params["body_jaxpr"].jaxpr, body_consts, carry, [], all_axes,
                           len(carry))
    carry = [c | o for c, o in zip(carry, outs)]
    # where the condition may differ, so may the number of iterations: every carry does
    (pred,) = _varying(params["cond_jaxpr"].jaxpr, [*cond_consts, *carry], all_axes)
    grown = [c | pred for c in carry]
    if grown == carry:
      return carry
    carry = grown


def _cond_varying(params, ins, all_axes):
  index, operands = ins[0], ins[1:]
  per_branch = [_varying(b.jaxpr, operands, all_axes) for b in params["branches"]]
  return [index.union(*outs) for outs in zip(*per_branch)]


_CONTROL_FLOW = {"scan": _scan_varying, "while": _while_varying, "cond": _cond_varying}


def _uses_axis_index(value) -> bool:
  from minijax.lax import parallel
  if isinstance(value, ClosedJaxpr):
    value = value.jaxpr
  if isinstance(value, Jaxpr):
    return any(e.primitive is parallel.axis_index_p
               or any(_uses_axis_index(v) for v in e.params.values()) for e in value.eqns)
  if isinstance(value, (tuple, list)):
    return any(_uses_axis_index(v) for v in value)
  return False


def _check_replication(fun_name: str, mesh: Mesh, manual_axes: frozenset, jaxpr: Jaxpr,
                       in_specs, out_specs) -> None:
  all_axes = manual_axes
  varying = _varying(jaxpr, [frozenset(s.axis_names()) for s in in_specs], all_axes)
  for i, (v, spec) in enumerate(zip(varying, out_specs)):
    missing = sorted((v & all_axes) - set(spec.axis_names()), key=mesh.axis_names.index)
    if missing:
      raise ValueError(
          f"shard_map applied to the function '{fun_name}' was given out_specs which require "
          f"replication which can't be statically inferred given the mesh:\n\n"
          f"The mesh given has shape {tuple(mesh.devices.shape)} with corresponding axis "
          f"names {mesh.axis_names}.\n\nout_specs leaf {i} is {spec}, which implies that the "
          f"corresponding output value is replicated across mesh axes {tuple(missing)}, but "
          f"could not infer replication over any axes.\n\nCheck if these output values are "
          f"meant to be replicated over those mesh axes. If not, consider revising the "
          f"corresponding out_specs entries. If so, consider disabling the check by passing "
          f"the check_vma=False argument to `jax.shard_map`.")


# ----------------------------------------------------------------------------- the API

class OutSpecsFromAvals:
  """Out specs computed from the traced results' avals: `fn(out_avals) -> flat specs`.
  An internal form, for `pmap`, whose negative `out_axes` depend on the results' ranks."""

  def __init__(self, fn):
    self.fn = fn


class _Infer:
  def __repr__(self):
    return "Infer"


Infer = _Infer()


def _is_spec(x) -> bool:
  return x is None or isinstance(x, PartitionSpec)


def _broadcast_specs(specs, tree, what: str, fun_name: str) -> list[PartitionSpec | None]:
  leaves, spec_tree = tree_util.tree_flatten(specs, is_leaf=_is_spec)
  try:
    subtrees = spec_tree.flatten_up_to(tree)
  except (ValueError, TypeError):
    raise ValueError(f"shard_map applied to the function '{fun_name}' was given {what} "
                     f"{specs} whose tree structure is not a prefix of the "
                     f"{'arguments' if what == 'in_specs' else 'outputs'} tree "
                     f"{tree_util.tree_structure(tree)}") from None
  out = []
  for spec, sub in zip(leaves, subtrees):
    n = len(tree_util.tree_leaves(sub))
    if spec is None and n == 0:
      continue  # None over no values (a function returning None), as JAX accepts
    if spec is None and what == "in_specs":
      out.extend([None] * n)  # static arguments
      continue
    if not isinstance(spec, PartitionSpec):
      raise TypeError(f"shard_map {what} leaves must be PartitionSpecs, got {spec!r}")
    out.extend([spec] * n)
  return out


def _manual_axes(mesh: Mesh, axis_names) -> frozenset:
  """The axes a shard_map's body is manual over: `axis_names`, or every axis when empty."""
  if not isinstance(axis_names, (frozenset, set)):
    raise TypeError("`axis_names` argument of shard_map should be of type `frozenset` or "
                    f"`set`. Got type: {type(axis_names)}")
  if not axis_names:
    return frozenset(mesh.axis_names)
  if not set(axis_names) <= set(mesh.axis_names):
    raise ValueError(f"jax.shard_map requires axis_names={frozenset(axis_names)} to be a "
                     f"subset of mesh.axis_names={frozenset(mesh.axis_names)}")
  return frozenset(axis_names)


def _check_specs(mesh: Mesh, manual: frozenset, specs, avals, what: str,
                 fun_name: str) -> None:
  for i, (spec, aval) in enumerate(zip(specs, avals)):
    for name in spec.axis_names():
      if name not in mesh.axis_names:
        raise ValueError(f"shard_map applied to the function '{fun_name}' was given {what} "
                         f"{spec} (leaf {i}), which refers to the axis name {name!r}, not in "
                         f"the mesh's axis names {mesh.axis_names}")
      if name not in manual:
        raise ValueError(f"shard_map {what} argument must refer to an axis marked as manual "
                         f"({manual}), but:\n\n  {what} leaf {i} refers to {name!r}\n\n"
                         f"Check the {what} values passed to shard_map.")
    if len(set(spec.axis_names())) != len(spec.axis_names()):
      raise ValueError(f"shard_map {what} leaf {i}: {spec} uses a mesh axis more than once")
    if len(spec) > aval.ndim:
      raise ValueError(f"shard_map applied to the function '{fun_name}' was given {what} "
                       f"leaf {i} = {spec} of length {len(spec)} for a value of rank "
                       f"{aval.ndim} ({aval.str_short()})")
    if what == "in_specs":
      for dim, (entry, size) in enumerate(zip(_entries(spec, aval.ndim), aval.shape)):
        if size % _factor(mesh, entry):
          raise ValueError(
              f"shard_map applied to the function '{fun_name}' was given argument arrays "
              f"with axis sizes that are not evenly divisible by the corresponding mesh "
              f"axis sizes: argument {i} of shape {aval.shape} has dimension {dim} of size "
              f"{size}, split by {entry!r} of size {_factor(mesh, entry)}")


def _infer_in_specs(mesh: Mesh, flat, fun_name: str) -> list[PartitionSpec]:
  specs = []
  for x in flat:
    sharding = getattr(x, "_sharding", None)
    if isinstance(sharding, NamedSharding) and sharding.mesh == mesh:
      specs.append(sharding.spec)
    else:
      raise ValueError(f"shard_map applied to the function '{fun_name}' was not given "
                       "in_specs, and not every argument is an Array with a NamedSharding on "
                       "its mesh to infer them from; pass in_specs=...")
  return specs


def shard_map(f: Callable | None = None, /, *, out_specs, in_specs=Infer, mesh=None,
              axis_names=frozenset(), check_vma: bool = True):
  """Maps `f` over the blocks of its arguments on every device of `mesh` (see the module
  docstring).  Usable as a decorator: `@shard_map(mesh=..., in_specs=..., out_specs=...)`."""
  if f is None:
    return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                               axis_names=axis_names, check_vma=check_vma)
  if not callable(f):
    raise TypeError(f"shard_map requires a callable for its first argument, but got {f!r}")
  fun_name = getattr(f, "__name__", type(f).__name__)

  @functools.wraps(f)
  def wrapped(*args):
    the_mesh = mesh if mesh is not None else current_mesh()
    if the_mesh is None:
      raise ValueError("The context mesh cannot be empty. Pass mesh= to shard_map, or enter "
                       "a mesh context with `with mesh:`")
    if not isinstance(the_mesh, Mesh):
      raise TypeError(f"shard_map requires mesh to be a minijax.sharding.Mesh, got "
                      f"{type(the_mesh).__name__}")
    manual = _manual_axes(the_mesh, axis_names)
    flat, in_tree = tree_util.tree_flatten(args)
    if in_specs is Infer:
      specs = _infer_in_specs(the_mesh, flat, fun_name)
    elif in_specs is None:
      specs = [None] * len(flat)
    else:
      specs = _broadcast_specs(in_specs, args, "in_specs", fun_name)
    # arguments under a None spec are static: the body gets them as they are, untraced
    dynamic = [s is not None for s in specs]
    static = [x for x, d in zip(flat, dynamic) if not d]
    flat = [x for x, d in zip(flat, dynamic) if d]
    flat_in_specs = [s for s in specs if s is not None]
    avals = [get_aval(x) for x in flat]
    _check_specs(the_mesh, manual, flat_in_specs, avals, "in_specs", fun_name)
    blocks = [block_aval(the_mesh, s, a) for s, a in zip(flat_in_specs, avals)]
    all_leaves_fun, out_tree = tree_util.flatten_fun_nokwargs(f, in_tree)

    def flat_fun(*traced):
      traced, given = iter(traced), iter(static)
      return all_leaves_fun(*(next(traced) if d else next(given) for d in dynamic))

    with mesh_axes(the_mesh, manual), the_mesh:  # (a shard_map nested inside takes it)
      jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, blocks)
    out_tree = out_tree()
    closed = ClosedJaxpr(jaxpr, consts)
    if isinstance(out_specs, OutSpecsFromAvals):
      flat_out_specs = list(out_specs.fn(closed.out_avals))
    else:
      flat_out_specs = _broadcast_specs(out_specs,
                                        out_tree.unflatten([0] * out_tree.num_leaves),
                                        "out_specs", fun_name)
    _check_specs(the_mesh, manual, flat_out_specs, closed.out_avals, "out_specs", fun_name)
    if check_vma:
      _check_replication(fun_name, the_mesh, manual, jaxpr, flat_in_specs, flat_out_specs)
    params = dict(mesh=the_mesh, check_vma=bool(check_vma), manual_axes=manual)
    outs = rebind(flat, params, closed, flat_in_specs, flat_out_specs)
    return out_tree.unflatten(outs)
  return wrapped


def _axis_spec(axis_name, axis) -> PartitionSpec:
  """The spec that splits dimension `axis` (None: none) over `axis_name` (JAX's rule, by
  which a negative `axis` splits the first dimension)."""
  return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


def smap(f: Callable | None = None, /, *, in_axes=Infer, out_axes, axis_name):
  """A shard_map manual over the one mesh axis `axis_name` of the mesh in force, written
  as `vmap` is: `in_axes` and `out_axes` name the dimension of each argument and result
  split over it (None: not split)."""
  if f is None:
    return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
  if isinstance(axis_name, (list, tuple)):
    raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
  if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
    raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                    "entries corresponding to the positional arguments passed to the "
                    f"function, but got {in_axes}.")
  if in_axes is not Infer and not all(isinstance(a, int)
                                      for a in tree_util.tree_leaves(in_axes)):
    raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) "
                    f"container with those types as leaves, but got {in_axes}.")
  if not all(isinstance(a, int) for a in tree_util.tree_leaves(out_axes)):
    raise TypeError("smap out_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {out_axes}.")
  to_spec = functools.partial(_axis_spec, axis_name)
  is_none = lambda x: x is None  # noqa: E731
  in_specs = (Infer if in_axes is Infer else
              tree_util.tree_map(to_spec, in_axes, is_leaf=is_none))
  out_specs = tree_util.tree_map(to_spec, out_axes, is_leaf=is_none)
  return shard_map(f, mesh=None, in_specs=in_specs, out_specs=out_specs,
                   axis_names={axis_name}, check_vma=True)
