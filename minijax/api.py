"""The user-facing transformations: `make_jaxpr`, `grad`, `vjp`, `jvp`, `vmap`.

`jit` lives in `minijax.staging.jit` (re-exported here and at the top level).  The autodiff
and batching functions flatten pytrees, hand flat functions to the interpreters
(`ad.jvp_flat`, `ad.linearize_flat`, `ad.vjp_flat`, `batching.vmap_flat_dims`) and
unflatten the results.  The Jacobians, built on them, are in `minijax.jacobians`.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import numpy as np

from minijax import lax
from minijax.tree_util import internal as tree_util
from minijax.config import FlagContext, flag_context
from minijax.api_util import (argnums_partial, broadcast_prefix, broadcast_prefix_to_treedef,
                              close_specs, debug_info, flat_arg_names, normalize_argnums,
                              open_specs, public_name, wraps)
from minijax.core import dtypes
from minijax.lax.structural import scalar_constant
from minijax.core.axes import extend_axis_env
from minijax.core.avals import ShapeDtypeStruct, ShapedArray, get_aval, valid_jaxtype
from minijax.core.jaxpr import ClosedJaxpr, transformation_scope
from minijax.core.trace import Tracer
from minijax.core.traceback_util import api_boundary
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.lax.remat import checkpoint, checkpoint_policies, named_call, remat  # noqa: F401
from minijax.lax.shard_map import shard_map, smap  # noqa: F401
from minijax.staging.jit import clear_caches, jit  # noqa: F401
from minijax.staging.pmap import pmap  # noqa: F401


def make_jaxpr(fun: Callable, static_argnums=(), axis_env=None, return_shape: bool = False):
  """`make_jaxpr(f)(*args)` returns the ClosedJaxpr `f` traces to.  `axis_env`, pairs
  `(axis_name, size)`, binds names that collectives in `f` may use; with `return_shape`
  the result is `(jaxpr, pytree of ShapeDtypeStruct of f's output)`."""
  static_argnums = normalize_argnums(static_argnums)
  axis_env = [(name, int(size)) for name, size in (axis_env or ())]

  @api_boundary
  @wraps(fun)
  def make(*args, **kwargs):
    static = {i: args[i] for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]

    def dyn_fun(*d, **kw):
      it = iter(d)
      return fun(*[static[i] if i in static else next(it) for i in range(len(args))], **kw)

    debug = debug_info("jit", fun, args, kwargs, static_argnums=static_argnums)
    with extend_axis_env(axis_env):
      jaxpr, consts, _, out_tree = pe.trace_pytree_fun(dyn_fun, dyn, kwargs, debug)
    closed = ClosedJaxpr(jaxpr, consts)
    if return_shape:
      return closed, out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                         for a in jaxpr.out_avals])
    return closed
  for attr in ("__name__", "__qualname__"):  # as JAX names it: make_jaxpr(f), of its API
    if hasattr(fun, attr):
      setattr(make, attr, f"make_jaxpr({getattr(fun, attr)})")
  make.__module__ = public_name("make_jaxpr").rpartition(".")[0]  # "jax" when it stands in
  return make


# ----------------------------------------------------------------------------- autodiff

def _flat_fun_with_aux(fun, in_tree, has_aux, box):
  """`fun` on flat leaves, returning the output leaves followed by the aux leaves that are
  values (arrays, scalars, tracers); other aux leaves (any Python object, as JAX allows)
  wait in `box` for `_aux` to put them back."""
  def flat_fun(*flat):
    out = fun(*tree_util.tree_unflatten(in_tree, flat))
    if has_aux:
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError("a function with has_aux=True must return a pair (output, aux), a "
                        f"two-element tuple; got {type(out).__name__}"
                        + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""))
      out, aux = out
      aux_leaves, aux_tree = tree_util.tree_flatten(aux)
      box["aux_objects"] = {i: x for i, x in enumerate(aux_leaves) if not valid_jaxtype(x)}
      aux_leaves = [x for i, x in enumerate(aux_leaves) if i not in box["aux_objects"]]
    else:
      aux_leaves, aux_tree = [], None
    leaves, out_tree = tree_util.tree_flatten(out)
    box["out_tree"], box["aux_tree"], box["n_out"] = out_tree, aux_tree, len(leaves)
    box.get("check", lambda leaves: None)(leaves)
    return [*leaves, *aux_leaves]
  return flat_fun


def _aux(box, values):
  """The aux output: its value leaves `values`, its other objects back in their places."""
  objects, values = box["aux_objects"], iter(values)
  return box["aux_tree"].unflatten([objects[i] if i in objects else next(values)
                                    for i in range(box["aux_tree"].num_leaves)])


def _instantiate(ct):
  return ad.instantiate_zeros(ct)


@api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
  """Forward-mode derivative: `(fun(*primals), J(primals) @ tangents)` (and aux)."""
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError(f"primal and tangent arguments to {public_name('jvp')} must be tuples or "
                    f"lists; found {type(primals).__name__} and {type(tangents).__name__}.")
  flat_p, tree_p = tree_util.tree_flatten(primals)
  flat_t, tree_t = tree_util.tree_flatten(tangents)
  if tree_p != tree_t:  # (a tuple of primals with a list of tangents too, as in JAX)
    raise TypeError(f"primal and tangent arguments to {public_name('jvp')} must have the same "
                    f"tree structure; primals have tree structure {tree_p} whereas tangents have "
                    f"tree structure {tree_t}.")
  flat_t = [_check_tangent(p, t) for p, t in zip(flat_p, flat_t)]
  box = {}
  flat_fun = _flat_fun_with_aux(lambda *a: fun(*a), tree_p, has_aux, box)
  with transformation_scope("jvp"):
    outs_p, outs_t = ad.jvp_flat(flat_fun, flat_p, flat_t)
  n = box["n_out"]
  out_p = box["out_tree"].unflatten(outs_p[:n])
  out_t = box["out_tree"].unflatten([_instantiate(t) for t in outs_t[:n]])
  if has_aux:
    return out_p, out_t, _aux(box, outs_p[n:])
  return out_p, out_t


def dtype_name(dtype) -> str:
  return "float0" if dtype == dtypes.float0 else np.dtype(dtype).name


def _check_tangent(p, t):
  pa, ta = ad.get_aval(p), ad.get_aval(t)
  expected = pa.tangent_aval().dtype
  if ta.dtype != expected and not (dtypes.is_inexact(expected) and ta.weak_type):
    raise TypeError(
        f"primal and tangent arguments to {public_name('jvp')} do not match; dtypes must be "
        "equal, or in case of int/bool primal dtype the tangent dtype must be float0. Got "
        f"primal dtype {pa.dtype} and so expected tangent dtype {dtype_name(expected)}, but got "
        f"tangent dtype {dtype_name(ta.dtype)} instead.")
  if pa.shape != ta.shape:
    raise ValueError(f"{public_name('jvp')} called with different primal and tangent shapes; "
                     f"Got primal shape {pa.shape} and tangent shape as {ta.shape}")
  if expected == dtypes.float0:
    return ad.Zero(pa.tangent_aval())
  return t if hasattr(t, "aval") else lax.convert_to_array(t)  # (as JAX: an Array)


@api_boundary
def linearize(fun: Callable, *primals, has_aux: bool = False):
  """`(fun(*primals), f_jvp)` with `f_jvp(*tangents)` the linear map, evaluated from
  saved residuals without re-running `fun` (and aux when `has_aux`)."""
  flat_p, in_tree = tree_util.tree_flatten(primals)
  box = {}
  flat_fun = _flat_fun_with_aux(lambda *a: fun(*a), in_tree, has_aux, box)
  outs, out_avals, out_zero, lin = ad.linearize_flat(flat_fun, flat_p)
  n = box["n_out"]
  out_tree = box["out_tree"]
  # A pytree whose leaves are the residuals, so jit can take and return it (as vjp's).
  meta = (in_tree, out_tree, n, lin.diff, tuple(out_avals), tuple(out_zero),
          tuple(ad.get_aval(p) for p in flat_p))
  # The linear jaxpr is the first bound argument (`f_jvp.func.args[0]`), where JAX keeps it.
  f_jvp = tree_util.Partial(functools.partial(_linearized_jvp, lin.jaxpr, meta),
                            list(lin.residuals))
  out = out_tree.unflatten(outs[:n])
  if has_aux:
    return out, f_jvp, _aux(box, outs[n:])
  return out, f_jvp


@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
  """`(fun(*primals), vjp_fn)` where `vjp_fn(cotangent)` returns one cotangent per primal
  (and aux when `has_aux`).  `vjp_fn` is a `VJP`, whose residuals are in view."""
  flat_p, in_tree = tree_util.tree_flatten(primals)
  if sum(isinstance(x, lax.state.Ref) for x in flat_p) > 1:
    lax.state.check_ref_arguments(fun, "vjp", flat_p, flat_arg_names(fun, primals, {}))
  box = {}
  flat_fun = _flat_fun_with_aux(lambda *a: fun(*a), in_tree, has_aux, box)
  outs, transpose, residuals = ad.vjp_parts(flat_fun, flat_p)
  n, out_tree = box["n_out"], box["out_tree"]
  meta = (in_tree, out_tree, tuple(ad.get_aval(o) for o in outs[:n]),
          tuple(ad.get_aval(a) for a in outs[n:]), getattr(fun, "__name__", repr(fun)),
          len(flat_p))
  # Each residual is one of the primals (read from `args_res` when called) or opaque.
  position = {id(x): i for i, x in enumerate(flat_p)}
  spec, opaque = [], []
  for r in residuals:
    if id(r) in position:
      spec.append((True, position[id(r)]))
    else:
      spec.append((False, len(opaque)))
      opaque.append(r)
  read = {i for is_primal, i in spec if is_primal}
  leaves = [x if i in read else NotNeeded() for i, x in enumerate(flat_p)]
  args_res = list(in_tree.unflatten(leaves))
  vjp_fn = VJP((transpose, tuple(spec), meta), in_tree, out_tree, args_res, opaque)
  out = out_tree.unflatten(outs[:n])
  if has_aux:
    return out, vjp_fn, _aux(box, outs[n:])
  return out, vjp_fn


def fwd_and_bwd(fun: Callable, argnums, has_aux: bool = False, jitted: bool = True):
  """`(fwd, bwd)`: `fwd(*args)` is `(fun(*args), residuals)` (and `aux` third with
  `has_aux`), `bwd(residuals, cotangent)` the cotangents of the arguments at `argnums` (one,
  or a tuple for a sequence).  The residuals are a `VJP` (a pytree), so both functions jit
  once and are reused across steps (`jitted`, the default)."""
  single = isinstance(argnums, int)
  numbers = (argnums,) if single else tuple(argnums)

  def fwd(*args):
    def of_selected(*chosen):
      full = list(args)
      for i, x in zip(numbers, chosen):
        full[i] = x
      return fun(*full)
    return vjp(of_selected, *(args[i] for i in numbers), has_aux=has_aux)

  def bwd(residuals, cotangent):
    cts = residuals(cotangent)
    return cts[0] if single else cts

  if jitted:
    return jit(fwd), jit(bwd)
  return fwd, bwd


@dataclasses.dataclass(frozen=True)
class NotNeeded:
  """In a `VJP`'s `args_res`: a primal the backward pass does not read."""


tree_util.register_pytree_node(NotNeeded, lambda x: ((), None), lambda _, __: NotNeeded())


class VJP:
  """The function `vjp` returns: `f_vjp(cotangent)` gives one cotangent per primal, and
  `f_vjp.with_refs(*entries)` a function that also says where each goes.

  Its residuals are in view, as JAX's are.  `args_res` has one entry per primal: the
  primal with `NotNeeded()` in place of the leaves the backward pass does not read;
  `opaque_residuals` lists the values computed on the way that it reads.  An entry of
  `args_res` may be dropped (set to None) while the function is kept and set again before
  the call (how FSDP keeps weights sharded between the passes).  A `VJP` is a pytree
  whose leaves are its residuals, so `jit` can take and return it."""
  __slots__ = ("_parts", "in_tree", "out_tree", "args_res", "opaque_residuals",
               "__weakref__")

  def __init__(self, parts, in_tree, out_tree, args_res, opaque_residuals):
    self._parts, self.in_tree, self.out_tree = parts, in_tree, out_tree
    self.args_res, self.opaque_residuals = args_res, opaque_residuals

  @property
  def jaxpr(self):
    """The linearized jaxpr the backward pass transposes (residuals, then tangents)."""
    return self._parts[0].args[0]

  def __call__(self, *args):
    return _vjp_pullback(self, args)

  def with_refs(self, *entries):
    return _vjp_with_refs(self, *entries)

  def _residuals(self):
    _, spec, meta = self._parts
    leaves = tree_util.tree_leaves(self.args_res, is_leaf=lambda x: isinstance(x, NotNeeded))
    if len(leaves) != meta[-1]:
      raise ValueError(f"the VJP function's args_res holds {len(leaves)} arrays where the "
                       f"primals had {meta[-1]}: set every entry of args_res dropped since "
                       "vjp (to None, say) back to its primal before calling the function")
    return [leaves[i] if is_primal else self.opaque_residuals[i] for is_primal, i in spec]


tree_util.register_pytree_node(
    VJP, lambda f: ((f.args_res, f.opaque_residuals), (f._parts, f.in_tree, f.out_tree)),
    lambda meta, children: VJP(*meta, list(children[0]), list(children[1])))


def _linearized_jvp(jaxpr, meta, residuals, *tangents):
  in_tree, out_tree, n, diff, out_avals, out_zero, in_avals = meta
  flat_t, tree_t = tree_util.tree_flatten(tangents)
  if tree_t != in_tree:
    raise TypeError(f"linearized function expects tangents of structure {in_tree}, got "
                    f"{tree_t}")
  for t, p in zip(flat_t, in_avals):
    want, got = p.tangent_aval(), ad.get_aval(t)
    if (got.shape, got.dtype) != (want.shape, want.dtype):
      raise ValueError("linearized function called on tangent values inconsistent with the "
                       f"original primal values: got a tangent of type {got.str_short()} "
                       f"for a primal of type {p.str_short()}, which needs a tangent of "
                       f"type {want.str_short()}")
  lin = ad.Linearized(jaxpr, residuals, diff)
  return out_tree.unflatten(lin.jvp(flat_t, list(out_avals), list(out_zero))[:n])


@api_boundary
def _vjp_pullback(f_vjp: VJP, args, wanted=None):
  transpose, _, meta = f_vjp._parts
  in_tree, out_tree, out_avals, aux_avals, name, _ = meta
  if len(args) != 1:
    raise TypeError(f"The function returned by `vjp` applied to {name} was called with "
                    f"{len(args)} arguments, but functions returned by `vjp` must be called "
                    f"with a single argument corresponding to the single value returned by "
                    f"{name} (even if that returned value is a tuple or other container).")
  ct, = args
  flat_ct, ct_tree = tree_util.tree_flatten(ct)
  if ct_tree != out_tree:
    raise ValueError(f"unexpected tree structure of the argument to the function returned by "
                     f"{public_name('vjp')} for {name}: it must have the structure of "
                     f"{name}'s output, {out_tree}, but has {ct_tree}.")
  for c, o in zip(flat_ct, out_avals):
    if type(c) is not ad.Zero and type(o) is ShapedArray:
      _check_cotangent(ad.get_aval(c), o)
  cts = transpose(f_vjp._residuals(),
                  [*flat_ct, *(ad.Zero(a.tangent_aval()) for a in aux_avals)], wanted)
  wanted = [True] * len(cts) if wanted is None else wanted
  return in_tree.unflatten([_instantiate(c) if w else None for c, w in zip(cts, wanted)])


def _check_cotangent(got, out) -> None:
  """A cotangent has its output's shape and tangent dtype (any dtype for an integer output,
  whose tangents are float0; a weak type is no difference)."""
  want = out.tangent_aval()
  if got.shape == want.shape and (got.dtype == want.dtype or want.dtype == dtypes.float0):
    return
  def typ(a):
    return f"{dtype_name(a.dtype)}[{','.join(map(str, a.shape))}]"
  raise ValueError("unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
                   f"{typ(got)}, but expected {typ(want)} because the corresponding output of "
                   f"the differentiated function had JAX type {typ(out)}")


# What `vjp(...)`'s function `.with_refs(*entries)` takes, one entry per primal (or a
# pytree of entries matching it): a `Ref`, into which the cotangent is accumulated
# (`GradRef()` stands in its place in the result), `GradValue()` (the cotangent is
# returned) or `DontWant()` (`DidntWant()` is returned).

@dataclasses.dataclass(frozen=True)
class GradValue:
  pass


@dataclasses.dataclass(frozen=True)
class GradRef:
  pass


@dataclasses.dataclass(frozen=True)
class DontWant:
  pass


@dataclasses.dataclass(frozen=True)
class DidntWant:
  pass


tree_util.register_pytree_node(GradRef, lambda x: ((), None), lambda _, __: GradRef())
tree_util.register_pytree_node(DidntWant, lambda x: ((), None), lambda _, __: DidntWant())


def _vjp_with_refs(f_vjp: VJP, *entries):
  in_tree = f_vjp.in_tree
  primal_trees = in_tree.children()
  if len(entries) != len(primal_trees):
    raise TypeError(f"with_refs takes one entry per primal ({len(primal_trees)}), got "
                    f"{len(entries)}")
  is_entry = lambda x: isinstance(x, (GradValue, DontWant, lax.state.Ref))  # noqa: E731
  # (the cotangents of the primals not wanted are not computed at all)
  wanted = []
  for e, tree in zip(entries, primal_trees):
    flags = ([e] * tree.num_leaves if is_entry(e)
             else tree_util.tree_leaves(e, is_leaf=is_entry))
    wanted += [not isinstance(x, DontWant) for x in flags]
  if len(wanted) != in_tree.num_leaves:
    wanted = None

  def apply(entry, ct):
    if isinstance(entry, GradValue):
      return ct
    if not isinstance(entry, lax.state.Ref):  # DontWant(), or any other placeholder
      return DidntWant()
    lax.state.addupdate(entry, ..., ct)
    return GradRef()

  def pullback(ct):
    cts = _vjp_pullback(f_vjp, (ct,), wanted)
    return tuple(apply(e, c) if is_entry(e) else tree_util.tree_map(apply, e, c, is_leaf=is_entry)
                 for e, c in zip(entries, cts))
  return pullback


def is_complex(dtype) -> bool:
  return np.issubdtype(dtype, np.complexfloating)


def check_input_dtype_revderiv(name, holomorphic, allow_int, x):
  dtype = ad.get_aval(x).dtype
  if holomorphic and not is_complex(dtype):
    raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but got "
                    f"{dtype_name(dtype)}.")
  if not dtypes.is_inexact(dtype) and not allow_int:
    raise TypeError(
        f"{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
        f"np.inexact), but got {dtype_name(dtype)}. If you want to use Boolean- or "
        "integer-valued inputs, use vjp or set allow_int to True.")


def check_output_dtype_revderiv(name, holomorphic, x):
  dtype = ad.get_aval(x).dtype
  if holomorphic:
    if not is_complex(dtype):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                      f"but got {dtype_name(dtype)}.")
  elif is_complex(dtype):
    raise TypeError(
        f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
        f"np.floating), but got {dtype_name(dtype)}. For holomorphic differentiation, pass "
        "holomorphic=True. For differentiation of non-holomorphic functions involving complex "
        f"outputs, use {public_name('vjp')} directly.")
  elif not dtypes.is_float(dtype):
    raise TypeError(
        f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
        f"np.floating), but got {dtype_name(dtype)}. For differentiation of functions with "
        f"integer outputs, use {public_name('vjp')} directly.")


def _scalar_output_check(holomorphic):
  def check(leaves):
    if len(leaves) != 1:
      raise TypeError("Gradient only defined for scalar-output functions. Output was a "
                      f"pytree with {len(leaves)} leaves.")
    aval = ad.get_aval(leaves[0])
    if aval.shape != ():
      raise TypeError("Gradient only defined for scalar-output functions. Output had shape: "
                      f"{aval.shape}.")
    check_output_dtype_revderiv("grad", holomorphic, leaves[0])
  return check


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False):
  """`f(*args) -> (value, gradient w.r.t. args[argnums])` (value is `(out, aux)` with aux).

  The gradient follows JAX's convention for complex numbers: it is the cotangent that the
  output's cotangent 1 pulls back, so for a real `f` of `z = x + iy` it is
  `df/dx - i df/dy`, and with `holomorphic=True` (complex inputs and output) it is `f'(z)`.
  """
  return api_boundary(_value_and_grad(fun, argnums, has_aux, holomorphic, allow_int))


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int):
  """`value_and_grad`'s function without its API boundary (`grad` has its own)."""
  int_argnums = isinstance(argnums, int)
  argnums_t = (argnums,) if int_argnums else tuple(argnums)

  @wraps(fun)
  def value_and_grad_f(*args, **kwargs):
    if max(argnums_t, default=-1) >= len(args):
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                      f"{max(argnums_t) + 1} positional arguments to be passed by the caller, "
                      f"but got only {len(args)} positional arguments.")
    partial_fun, dyn = argnums_partial(fun, args, argnums_t, kwargs)
    flat, in_tree = tree_util.tree_flatten(dyn)
    for x in flat:
      check_input_dtype_revderiv("grad", holomorphic, allow_int, x)

    box = {"check": _scalar_output_check(holomorphic)}
    flat_fun = _flat_fun_with_aux(partial_fun, in_tree, has_aux, box)
    outs, transpose, residuals = ad.vjp_parts(flat_fun, flat)
    value = outs[0]
    value_aval = ad.get_aval(value)
    one = _cotangent_seed(value_aval)
    cts = transpose(residuals, [one, *(ad.Zero.from_primal_value(a) for a in outs[1:])])
    g = in_tree.unflatten([_instantiate(c) for c in cts])
    g = g[0] if int_argnums else g
    if has_aux:
      return (value, _aux(box, outs[1:])), g
    return value, g
  return value_and_grad_f


def _cotangent_seed(aval):
  """The 1 a gradient's backward pass starts from: an array (a literal in jaxprs, as JAX's),
  weakly typed like the value when it is."""
  if not aval.weak_type:
    return scalar_constant(np.ones((), aval.dtype))
  for one in (1, 1.0, 1 + 0j):
    if dtypes.dtype_and_weak_type(one) == (aval.dtype, True):
      return scalar_constant(one)
  return lax.full((), 1, aval.dtype, weak_type=True)


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False):
  """The gradient of scalar-valued `fun` with respect to `args[argnums]`."""
  vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @api_boundary
  @wraps(fun)
  def grad_f(*args, **kwargs):
    (value, g) = vg(*args, **kwargs)
    if has_aux:
      return g, value[1]
    return g
  return grad_f


# ----------------------------------------------------------------------------- vmap

def _broadcast_prefix(prefix, tree, what: str) -> list:
  def check(spec):
    if spec is not None and not isinstance(spec, int):
      raise ValueError(f"vmap {what} must be an int, None, or a (nested) tuple of those; "
                       f"got {spec!r}")
  return broadcast_prefix(prefix, tree, transform="vmap", what=what, check_leaf=check)


def _inconsistent_sizes(fun, args, kwargs, flat, sizes, axis_size) -> str:
  """JAX's message for mapped axes of different sizes: the most common size first, with an
  example argument for each size."""
  n_pos = len(tree_util.tree_leaves(args))
  names = flat_arg_names(fun, args, kwargs)
  kw_paths = [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path(kwargs)]

  def where(i):
    aval = ad.get_aval(flat[i])
    if i < n_pos:
      name = names[i] if i < len(names) else f"args[{i}]"
      name = name if name.startswith("args[") else f"argument {name}"
    else:
      name = f"kwargs{kw_paths[i - n_pos]}"
    return f"{name} of type {aval.dtype.name}[{','.join(map(str, aval.shape))}]"

  counts: dict[int, list] = {}
  for s, a, i in sizes:
    counts.setdefault(s, []).append((a, i))
  order = sorted(counts, key=lambda s: -len(counts[s]))  # stable: ties keep first-seen order
  lines = [f"  * the `axis_size` argument was {axis_size}"] if axis_size is not None else []
  for k, s in enumerate(order):
    (a, i), n = counts[s][0], len(counts[s])
    if n == 1:
      lines.append(f"  * one axis had size {s}: axis {a} of {where(i)}")
    else:
      lines.append(f"  * {'most' if k == 0 else 'some'} axes ({n} of them) had size {s}, "
                   f"e.g. axis {a} of {where(i)}")
  return "vmap got inconsistent sizes for array axes to be mapped:\n" + ";\n".join(lines)


def _check_axes_types(in_axes, out_axes) -> None:
  """JAX's eager checks of `vmap`'s axis specifications (a bool is not an int here)."""
  if not (in_axes is None or type(in_axes) in (int, tuple)):
    raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                    "to the positional arguments passed to the function, but got "
                    f"{in_axes}.")
  for what, spec in (("in_axes", in_axes), ("out_axes", out_axes)):
    if not all(type(leaf) is int for leaf in tree_util.tree_leaves(spec)):
      raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those "
                      f"types as leaves, but got {spec}.")


def _refuse_vmappables(tree, what: str) -> None:
  if batching.vmappables:
    for leaf in tree_util.tree_leaves(tree, is_leaf=batching.is_vmappable):
      if batching.is_vmappable(leaf):
        raise NotImplementedError(
            f"vmap of a {what} of type {type(leaf).__name__}, registered with "
            "batching.register_vmappable: minijax does not map such types by their own "
            "handlers; pass its arrays instead")


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None,
         axis_name=None, spmd_axis_name=None, sum_match: bool = False):
  """Vectorizes `fun` over the axes `in_axes` of its arguments, stacking its results
  along `out_axes`.  With `axis_name`, collectives inside `fun` may reduce over the mapped
  axis by that name (`lax.psum(x, axis_name)` sums over the batch).  With `sum_match`, an
  output that is mapped where `out_axes` says None is summed over the batch.
  `spmd_axis_name` (the mesh axes that would shard the batch inside `shard_map` or `jit`)
  places values, never changes them; minijax computes the same values without it."""
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  _check_axes_types(in_axes, out_axes)

  @api_boundary
  @wraps(fun)
  def vmapped(*args, **kwargs):
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                       "corresponding to the positional arguments passed to the function, "
                       f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    _refuse_vmappables((args, kwargs), "argument")
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    flat_axes = _broadcast_prefix(axes, args, "in_axes")
    flat_kw, kw_tree = tree_util.tree_flatten(kwargs)
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    flat_axes += [0] * len(flat_kw)
    names = flat_arg_names(fun, args, kwargs)
    lax.state.check_ref_arguments(fun, "vmap", flat, names)
    dims, sizes = [], []
    for i, (x, a) in enumerate(zip(flat, flat_axes)):
      if a is None:
        dims.append(None)
        continue
      aval = ad.get_aval(x)
      if not -aval.ndim <= a < aval.ndim:
        raise ValueError(f"vmap was requested to map its argument along axis {a}, which "
                         f"implies that its rank should be at least {max(a, -a - 1) + 1}, "
                         f"but is only {aval.ndim} (its shape is {aval.shape})")
      a = a % aval.ndim
      dims.append(a)
      sizes.append((aval.shape[a], a, i))
    size = axis_size
    if size is None:
      if not flat:
        raise ValueError("vmap wrapped function must be passed at least one argument "
                         "containing an array or axis_size must be specified, got empty "
                         f"*args={args} and **kwargs={kwargs}")
      if not sizes:
        raise ValueError("vmap must have at least one non-None value in in_axes, or be "
                         "given axis_size")
      size = sizes[0][0]
    if any(s != size for s, _, _ in sizes):
      raise ValueError(_inconsistent_sizes(fun, args, kwargs, flat, sizes, axis_size))
    flat_fun, out_tree = tree_util.flatten_fun(fun, in_tree)
    with transformation_scope("vmap"):
      outs, out_dims = batching.vmap_flat_dims(flat_fun, dims, size, flat, axis_name)
    out_tree = out_tree()
    for o in outs:
      if not valid_jaxtype(o):
        raise TypeError(f"Output from batched function {o!r} with type {type(o)} is not a "
                        "valid JAX type")
    # Results are rebuilt only with their batch axes in place: a custom node may check
    # its leaves' shapes (for errors, the batch axes go first, as out_axes=0 places them).
    stacked = lambda: out_tree.unflatten(
        [o if d is None else batching.moveaxis(o, d, 0) for o, d in zip(outs, out_dims)])
    flat_out_axes = broadcast_prefix_to_treedef(out_axes, out_tree)
    if flat_out_axes is None:  # not a prefix: the error names where
      flat_out_axes = _broadcast_prefix(out_axes, stacked(), "out_axes")
    results = []
    for i, (o, d, a) in enumerate(zip(outs, out_dims, flat_out_axes)):
      if a is not None:
        a = a % (ad.get_aval(o).ndim + (d is None))
      elif d is not None and axis_name is None and not sum_match:
        path = tree_util.keystr(tree_util.tree_flatten_with_path(stacked())[0][i][0])
        raise ValueError(f"at vmap out_axes{path}, got axis spec None but output was batched on "
                         f"axis {d}; an output that depends on a mapped input needs a mapped "
                         "out_axes")
      results.append(batching.matchaxis(o, d, a, size, axis_name=axis_name,
                                        sum_match=sum_match))
    out = out_tree.unflatten(results)
    _refuse_vmappables(out, "result")
    return out
  name = getattr(fun, "__name__", type(fun).__name__)
  vmapped.__doc__ = (f"Vectorized version of {name}. Takes similar arguments as {name} but "
                     f"with additional array axes over which {name} is mapped.")
  if getattr(fun, "__doc__", None):
    vmapped.__doc__ += "\n\nOriginal documentation:\n\n" + fun.__doc__
  return vmapped


# ----------------------------------------------------------------------------- debugging

def disable_jit(disable: bool = True):
  """Inside, `jit`- and `pmap`-decorated functions run as plain Python, operation by
  operation, so that prints and debuggers see concrete values (the flag `disable_jit`,
  JAX's `jax_disable_jit`, set for the duration)."""
  return FlagContext("disable_jit", disable)


def check_tracer_leaks(new_val: bool = True):
  """Inside, `jit`, `pmap`, `scan` and `vmap` raise when a tracer of theirs outlives them
  (the flag `check_tracer_leaks`, JAX's `jax_check_tracer_leaks`)."""
  return FlagContext("check_tracer_leaks", new_val)


def checking_leaks():
  """`check_tracer_leaks()`, as JAX names it in its own tests."""
  return FlagContext("check_tracer_leaks", True)


explain_cache_misses = flag_context("jax_explain_cache_misses")
enable_checks = flag_context("jax_enable_checks")
default_matmul_precision = flag_context("jax_default_matmul_precision")
numpy_rank_promotion = flag_context("jax_numpy_rank_promotion")
numpy_dtype_promotion = flag_context("jax_numpy_dtype_promotion")
allow_f16_reductions = flag_context("jax_allow_f16_reductions")
no_tracing = flag_context("jax_no_tracing")
no_execution = flag_context("jax_no_execution")
enable_x64 = flag_context("jax_enable_x64")


# ----------------------------------------------------------------------------- shapes, transposes

@api_boundary
def eval_shape(fun: Callable, *args, **kwargs):
  """The shapes and dtypes of `fun(*args, **kwargs)`, found by tracing (nothing runs);
  arguments may be arrays or `ShapeDtypeStruct`s."""
  args, kwargs = open_specs((args, kwargs), ShapeDtypeStruct)
  jaxpr, _, _, out_tree = pe.trace_pytree_fun(fun, args, kwargs,
                                              debug_info("jit", fun, args, kwargs))
  return close_specs(out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                         for a in jaxpr.out_avals]), ShapeDtypeStruct)


def closure_convert(fun: Callable, *example_args):
  """`(converted, consts)`: `fun` with the floating point tracers it closes over (values of
  an enclosing transformation, which a derivative may perturb) taken as trailing arguments
  instead, `converted(*args, *consts)`, as custom derivatives need them; found by tracing
  `fun` at `example_args`.  Concrete arrays stay closed over, as in JAX."""
  from minijax.core.jaxpr import eval_jaxpr
  flat, in_tree = tree_util.tree_flatten(example_args)
  flat_fun, out_tree = tree_util.flatten_fun_nokwargs(fun, in_tree)
  jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, [get_aval(x) for x in flat])
  out_tree = out_tree()
  hoisted = [isinstance(c, Tracer) and dtypes.is_inexact(get_aval(c).dtype) for c in consts]
  n = sum(hoisted)

  def converted(*args):
    args, given = (args[:len(args) - n], args[len(args) - n:]) if n else (args, ())
    flat_args, tree = tree_util.tree_flatten(args)
    if tree != in_tree:
      raise TypeError(f"closure_convert: the converted function takes arguments of the "
                      f"example's structure {in_tree} (and the {n} constants), got {tree}")
    it = iter(given)
    values = [next(it) if h else c for c, h in zip(consts, hoisted)]
    return out_tree.unflatten(eval_jaxpr(jaxpr, values, *flat_args))
  return converted, [c for c, h in zip(consts, hoisted) if h]


def linear_transpose(fun: Callable, *primals):
  """The transpose of `fun`, which must be linear in its arguments: `primals` give their
  shapes and dtypes, and the result maps an output cotangent to one cotangent per
  argument.  The result is a pytree (`tree_util.Partial`, its leaves the constants of
  `fun`), so that jitted functions can take and return it."""
  flat, in_tree = tree_util.tree_flatten(primals)
  flat_fun, out_tree = tree_util.flatten_fun_nokwargs(fun, in_tree)
  in_avals = [get_aval(x) for x in flat]
  jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, in_avals)
  # what no output needs may be non-linear (`x > 0`, computed and dropped): no transpose
  jaxpr, _ = pe.dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars), True)
  out_avals = tuple(ClosedJaxpr(jaxpr, consts).out_avals)
  in_dtypes = [a.dtype for a in in_avals]
  out_dtypes = [a.dtype for a in out_avals]
  if not (all(dtypes.is_inexact(d) for d in in_dtypes + out_dtypes) or
          all(np.issubdtype(d, np.integer) for d in in_dtypes + out_dtypes)):
    names = lambda ds: "[" + ", ".join(map(dtype_name, ds)) + "]"  # noqa: E731
    raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], "
                    f"and integer -> integer functions, but got {names(in_dtypes)} -> "
                    f"{names(out_dtypes)}: a linear function keeps its values' kind of number.")
  meta = (jaxpr, in_tree, tuple(in_avals), out_tree(), out_avals)
  return tree_util.Partial(functools.partial(_linear_transposed, meta), list(consts))


def _linear_transposed(meta, consts, out_ct):
  from minijax.interpreters.transpose import backward_pass
  jaxpr, in_tree, in_avals, out_tree, out_avals = meta
  flat_ct, ct_tree = tree_util.tree_flatten(out_ct)
  if ct_tree != out_tree:
    raise TypeError(f"cotangent tree does not match function output: the transposed function "
                    f"takes a cotangent of the structure {out_tree}, but got {ct_tree}")
  ct_avals = [get_aval(ct) for ct in flat_ct]
  if any((c.shape, c.dtype) != (a.shape, a.dtype) for c, a in zip(ct_avals, out_avals)):
    shown = lambda avals: "[" + ", ".join(a.str_short() for a in avals) + "]"  # noqa: E731
    raise TypeError(f"cotangent type does not match function output: the transposed function "
                    f"takes cotangents of type {shown(out_avals)}, but got {shown(ct_avals)}")
  cts = backward_pass(jaxpr, consts, [ad.UndefinedPrimal(a) for a in in_avals], flat_ct,
                      transform_stack=True)
  return in_tree.unflatten([_instantiate(c) for c in cts])


# ----------------------------------------------------------------------------- JAX's utilities



def typeof(x):
  """The abstract value (shape, dtype, weak type) of `x`: `typeof(1.0)` is a weakly typed
  `f32[]`."""
  return get_aval(x)
