"""The user-facing transformations: `jit`, `make_jaxpr`, `grad`, `vjp`, `jvp`, `vmap`, ...

`jit(f)` keeps two caches keyed on the pytree structure of the arguments, their avals,
the static arguments and the device: traced jaxprs, and compiled executables.  Called on
concrete values (the current trace is the eval trace) it takes the fast path: flatten in
C++, look up the executable, run it.  Called under another transformation it binds
`jit_p` with the traced jaxpr, so the transformation sees one equation and the lowering
emits a `func.call`.

The autodiff and batching functions flatten pytrees, hand flat functions to the
interpreters (`ad.jvp_flat`, `ad.linearize_flat`, `ad.vjp_flat`, `batching.vmap_flat_dims`)
and unflatten the results.  Jacobians vmap a jvp or vjp over the standard basis, one vmap
per axis, so no reshapes are needed.
"""
from __future__ import annotations

import functools
import inspect
import operator
import weakref
from typing import Any, Callable

import numpy as np

from minijax import lax, tree_util
from minijax.core import dtypes
from minijax.config import config
from minijax.core import trace as trace_lib
from minijax.core.avals import PYTHON_SCALARS, python_scalar_aval, shaped_abstractify
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr
from minijax.core.errors import UnexpectedTracerError
from minijax.core.trace import Tracer
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.lax.call import compiled_call, jit_p
from minijax.lax.remat import checkpoint, checkpoint_policies, named_call, remat  # noqa: F401
from minijax.lowering.mlir import lower_jaxpr_to_module
from minijax.runtime import backend, dispatch
from minijax.runtime.array import Array, device_put


def _abstractify(x):
  if type(x) is Array:
    return x.aval
  return shaped_abstractify(x)


def _normalize_argnums(argnums, nargs=None) -> tuple[int, ...]:
  if argnums is None:
    return ()
  if isinstance(argnums, int):
    argnums = (argnums,)
  return tuple(argnums)


class _DebugInfo:
  __slots__ = ("fun_name", "arg_names")

  def __init__(self, fun_name, arg_names):
    self.fun_name = fun_name
    self.arg_names = arg_names


def _fun_name(fun) -> str:
  return getattr(fun, "__name__", None) or type(fun).__name__


def _flat_arg_names(fun, args, kwargs) -> list[str]:
  try:
    sig = inspect.signature(fun)
    bound = sig.bind_partial(*args)
    names = list(bound.arguments)
  except (TypeError, ValueError):
    names = []
  out = []
  for i, arg in enumerate(args):
    base = names[i] if i < len(names) else f"args[{i}]"
    paths, _ = tree_util.tree_flatten_with_path(arg)
    out.extend(base + "".join(str(k) for k in path) for path, _ in paths)
  for k, v in kwargs.items():
    paths, _ = tree_util.tree_flatten_with_path(v)
    out.extend(k + "".join(str(p) for p in path) for path, _ in paths)
  return out


class _Traced:
  __slots__ = ("jaxpr", "consts", "out_tree", "donated")

  def __init__(self, jaxpr, consts, out_tree, donated):
    self.jaxpr = jaxpr            # ClosedJaxpr, constants hoisted to leading inputs
    self.consts = consts
    self.out_tree = out_tree
    self.donated = donated        # one flag per input of `jaxpr`


def _hoist_consts(jaxpr: Jaxpr) -> ClosedJaxpr:
  return ClosedJaxpr(Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                           jaxpr.effects, jaxpr.debug_info), [])


class JitWrapped:
  """The result of `jit(fun)`."""

  def __init__(self, fun: Callable, static_argnums=(), static_argnames=(), donate_argnums=(),
               device=None):
    self._fun = fun
    self._name = _fun_name(fun)
    self._static_argnums = frozenset(_normalize_argnums(static_argnums))
    self._static_argnames = frozenset((static_argnames,) if isinstance(static_argnames, str)
                                      else static_argnames or ())
    self._donate_argnums = frozenset(_normalize_argnums(donate_argnums))
    self._device = backend.get_device(device) if device is not None else None
    self._fast_ok = not (self._static_argnums or self._static_argnames)
    self._multi_device = False
    # Traces and fast-path entries, per state of the flags that change what tracing and
    # lowering produce (`_flag_state`); `_cache` and `_fast` are the current state's.
    self._by_state: dict[tuple, tuple[dict, dict]] = {}
    self._cache: dict[Any, _Traced] = {}
    self._fast: dict[Any, Callable] = {}
    self._select_state(_flag_state())
    _all_jitted.add(self)

  def _select_state(self, state: tuple) -> None:
    self._cache, self._fast = self._by_state.setdefault(state, ({}, {}))

  # -- argument handling

  def _split(self, args, kwargs):
    if not self._static_argnums and not self._static_argnames:
      return args, kwargs, ()
    dyn_args, static = [], []
    for i, a in enumerate(args):
      if i in self._static_argnums or (i - len(args)) in self._static_argnums:
        static.append((i, _check_static(a, i)))
      else:
        dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
      if k in self._static_argnames:
        static.append((k, _check_static(v, k)))
      else:
        dyn_kwargs[k] = v
    return tuple(dyn_args), dyn_kwargs, tuple(static)

  def _merge(self, static, dyn_args, dyn_kwargs):
    args, kwargs = list(dyn_args), dict(dyn_kwargs)
    for where, value in static:
      if isinstance(where, int):
        args.insert(where, value)
      else:
        kwargs[where] = value
    return args, kwargs

  def _donated_leaves(self, args, static) -> tuple[bool, ...]:
    """One flag per dynamic leaf of `(dyn_args, dyn_kwargs)`."""
    static_positions = {where for where, _ in static if isinstance(where, int)}
    flags = []
    for pos, arg in enumerate(args):
      if pos not in static_positions:
        flags.extend([pos in self._donate_argnums] * len(tree_util.tree_leaves(arg)))
    return tuple(flags)

  # -- tracing

  def _trace(self, static, dyn_args, dyn_kwargs, in_tree, avals) -> _Traced:
    out_tree_box = []

    def flat_fun(*flat):
      args, kwargs = tree_util.tree_unflatten(in_tree, flat)
      args, kwargs = self._merge(static, args, kwargs)
      out = self._fun(*args, **kwargs)
      leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return leaves

    names = _flat_arg_names(self._fun, *self._merge(static, dyn_args, dyn_kwargs)) \
        if not static else None
    debug = _DebugInfo(self._name, names if names and len(names) == len(avals) else None)
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals, debug)
    donated = self._donated_leaves(self._merge(static, dyn_args, dyn_kwargs)[0], static) \
        if self._donate_argnums else ()
    donated = (False,) * len(consts) + donated + (False,) * (len(avals) - len(donated))
    return _Traced(_hoist_consts(jaxpr), consts, out_tree_box[0], donated)

  def _traced_for(self, args, kwargs):
    dyn_args, dyn_kwargs, static = self._split(args, kwargs)
    flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    avals = tuple(map(_abstractify, flat))
    key = (in_tree, avals, static)
    traced = self._cache.get(key)
    if traced is None:
      traced = self._trace(static, dyn_args, dyn_kwargs, in_tree, avals)
      if not any(isinstance(c, Tracer) for c in traced.consts):
        self._cache[key] = traced
    return traced, flat, dyn_args, static, in_tree

  # -- calling (the fast path lives in `_jitted`, the function `jit` returns)

  def _call_slow(self, args, kwargs, fast_key=None, args_tree=None):
    """Traces (if needed), compiles (if needed) and runs.  `fast_key` is the key `jitted`
    computed for these arguments and did not find (`args_tree` is their tree structure when
    they are not all Arrays); the compiled executable is filed under it."""
    traced, flat, dyn_args, static, in_tree = self._traced_for(args, kwargs)
    if type(trace_lib._context.trace) is trace_lib.EvalTrace and not any(
        isinstance(c, Tracer) for c in traced.consts):
      leaked = next((x for x in flat if isinstance(x, Tracer)), None)
      if leaked is not None:  # no trace is active, so its trace has ended
        raise UnexpectedTracerError(leaked)
      device = self._device or dispatch.device_of(flat)
      executable = compiled_call(traced.jaxpr, self._name, traced.donated, device)
      if (fast_key is not None and self._fast_ok and not config.debug_nans
          and all(type(x) is Array or type(x) in PYTHON_SCALARS for x in flat)):
        self._remember_fast(fast_key, args_tree, device, executable, traced, flat)
      outs = executable(*traced.consts, *flat)
      if config.debug_nans:
        dispatch.check_nans_in_jaxpr(traced.jaxpr, [*traced.consts, *flat], outs, self._name)
      return traced.out_tree.unflatten(outs)
    outs = jit_p.bind(*traced.consts, *flat, jaxpr=traced.jaxpr, name=self._name,
                      donated_invars=traced.donated, device=self._device)
    return traced.out_tree.unflatten(outs)

  def _call_fallback(self, args):
    """Where a fast-path entry sends arguments that turn out not to be Arrays (a leaked
    tracer, say, whose aval matched the key) or that live on another device (an entry
    for pytree arguments gets its leaves back, and rebuilds `args` first)."""
    return self._call_slow(args, {})

  def _remember_fast(self, key, args_tree, device, executable, traced, flat):
    """Files `executable` under the fast path's `key` (see `_jitted`), which `flat`, the
    call's arguments, produced."""
    multi_device = self._device is None and backend.device_count() > 1
    if multi_device and not self._multi_device:  # `jitted` did not know to add the device
      key = (key, device)
    self._multi_device = multi_device
    if args_tree is None:
      fallback = self._call_fallback
    else:
      fallback = lambda flat: self._call_fallback(args_tree.unflatten(flat))  # noqa: E731
    consts = [c if type(c) is Array and c._device is device else device_put(c, device)
              for c in traced.consts]
    if hasattr(executable, "make_call"):
      self._fast[key] = executable.make_call(
          consts, traced.out_tree, fallback, scalars=any(type(x) in PYTHON_SCALARS for x in flat))
    else:  # a jaxpr without equations: nothing was compiled
      self._fast[key] = lambda *flat: traced.out_tree.unflatten(executable(*consts, *flat))

  def lower(self, *args, **kwargs) -> "Lowered":
    traced, flat, dyn_args, static, in_tree = self._traced_for(args, kwargs)
    return Lowered(traced, self._name, self._device or dispatch.device_of(flat))

  def trace(self, *args, **kwargs):
    traced, *_ = self._traced_for(args, kwargs)
    return traced.jaxpr

_flatten = tree_util.registry.flatten

# Flags that change what tracing or lowering produces, or whether the fast path may skip
# NaN checks.  Like JAX's trace context, they key jit's caches: switching a flag back and
# forth reuses what was compiled before.
_STATE_FLAGS = ("enable_x64", "tap_mechanism", "debug_nans")


def _flag_state() -> tuple:
  return tuple(getattr(config, name) for name in _STATE_FLAGS)


_all_jitted: "weakref.WeakSet[JitWrapped]" = weakref.WeakSet()


def _on_config_change(name, value):
  if name in _STATE_FLAGS:
    state = _flag_state()
    for wrapped in list(_all_jitted):
      wrapped._select_state(state)


config.on_change(_on_config_change)
_get_aval = operator.attrgetter("aval")


def _arg_aval(x):
  """The aval of an argument on `jit`'s fast path: a Python scalar's, or an Array's
  (AttributeError for anything without an aval)."""
  if type(x) in PYTHON_SCALARS:
    return python_scalar_aval(x)
  return x.aval


def _check_static(value, where):
  try:
    hash(value)
  except TypeError:
    raise ValueError(
        f"static argument {where!r} of type {type(value).__name__} is not hashable; static "
        "arguments must be hashable (use a tuple instead of a list, or make it a dynamic "
        "argument)") from None
  return value


class Lowered:
  """`jit(f).lower(*args)`: the MHLO module, ready to compile."""

  def __init__(self, traced: _Traced, name: str, device):
    self._traced = traced
    self._name = name
    self._device = device
    self._result = lower_jaxpr_to_module(traced.jaxpr, name=name, donated_args=traced.donated)

  def as_text(self) -> str:
    return str(self._result.module)

  def compiler_ir(self):
    return self._result.module

  def compile(self) -> "Compiled":
    fn = compiled_call(self._traced.jaxpr, self._name, self._traced.donated, self._device)
    return Compiled(fn, self._traced)


class Compiled:
  def __init__(self, fn, traced: _Traced):
    self._fn = fn
    self._traced = traced

  def as_text(self) -> str:
    if hasattr(self._fn, "as_text"):
      return self._fn.as_text()
    return "(no XLA computation: the jaxpr has no equations)"

  def __call__(self, *args, **kwargs):
    flat, _ = tree_util.tree_flatten((args, kwargs))
    return self._traced.out_tree.unflatten(self._fn(*self._traced.consts, *flat))


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(),
        donate_argnums=(), device=None):
  """Compiles `fun` with XLA; usable as `@jit` or `@jit(static_argnums=...)`."""
  if fun is None:
    return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                         donate_argnums=donate_argnums, device=device)
  if not callable(fun):
    raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
  return _jitted(JitWrapped(fun, static_argnums, static_argnames, donate_argnums, device))


def _jitted(wrapped: JitWrapped) -> Callable:
  """The function `jit` returns.  Its fast path serves calls without keyword arguments on
  concrete Arrays and Python scalars from `wrapped._fast`, whose entries run an executable
  and unflatten its results (`Executable.make_call`).  When every argument is an Array the
  key is their avals (the aval itself for one argument), with no flattening; with Python
  scalars among them, the tuple of avals (a scalar's is weakly typed, as in JAX); for other
  pytrees it is the tree structure and the leaves' avals; with several devices and no
  `device=`, the first argument's device is added.  An entry hands arguments that are
  neither (anything else with an `aval`) back to `wrapped._call_slow`, which also serves
  every first call and files the new entry under the key computed here, the one place that
  defines it."""
  slow = wrapped._call_slow
  context, EvalTrace = trace_lib._context, trace_lib.EvalTrace
  get_aval, arg_aval = _get_aval, _arg_aval

  def jitted(*args, **kwargs):
    if not kwargs and type(context.trace) is EvalTrace:
      flat, in_tree = args, None
      try:
        key = args[0].aval if len(args) == 1 else (*map(get_aval, args),)
      except AttributeError:
        try:
          key = (*map(arg_aval, args),)  # Python scalars among the Arrays
        except AttributeError:
          flat, in_tree = _flatten(args)
          try:
            key = (in_tree, *map(arg_aval, flat))
          except AttributeError:
            return slow(args, kwargs)
      if wrapped._multi_device:
        key = (key, dispatch.device_of(flat))
      entry = wrapped._fast.get(key)
      if entry is not None:
        return entry(*flat)
      return slow(args, kwargs, key, in_tree)
    return slow(args, kwargs)

  functools.update_wrapper(jitted, wrapped._fun)
  jitted.lower = wrapped.lower
  jitted.trace = wrapped.trace
  jitted._wrapped = wrapped
  return jitted


def make_jaxpr(fun: Callable, static_argnums=()):
  """`make_jaxpr(f)(*args)` returns the ClosedJaxpr `f` traces to."""
  static_argnums = _normalize_argnums(static_argnums)

  @functools.wraps(fun)
  def make(*args, **kwargs):
    static = {i: args[i] for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]

    def dyn_fun(*d, **kw):
      it = iter(d)
      return fun(*[static[i] if i in static else next(it) for i in range(len(args))], **kw)

    jaxpr, consts, _, _ = pe.trace_pytree_fun(dyn_fun, dyn, kwargs, _abstractify)
    return ClosedJaxpr(jaxpr, consts)
  return make


# ----------------------------------------------------------------------------- autodiff

def _flat_fun_with_aux(fun, in_tree, has_aux, box):
  """`fun` on flat leaves, returning the output leaves followed by the aux leaves."""
  def flat_fun(*flat):
    out = fun(*tree_util.tree_unflatten(in_tree, flat))
    if has_aux:
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError("a function with has_aux=True must return a pair (output, aux), "
                        f"got {type(out).__name__}")
      out, aux = out
      aux_leaves, aux_tree = tree_util.tree_flatten(aux)
    else:
      aux_leaves, aux_tree = [], None
    leaves, out_tree = tree_util.tree_flatten(out)
    box["out_tree"], box["aux_tree"], box["n_out"] = out_tree, aux_tree, len(leaves)
    box.get("check", lambda leaves: None)(leaves)
    return [*leaves, *aux_leaves]
  return flat_fun


def _instantiate(ct):
  return ad.instantiate_zeros(ct)


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
  """Forward-mode derivative: `(fun(*primals), J(primals) @ tangents)` (and aux)."""
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to minijax.jvp must be tuples or lists; "
                    f"found {type(primals).__name__} and {type(tangents).__name__}.")
  flat_p, tree_p = tree_util.tree_flatten(tuple(primals))
  flat_t, tree_t = tree_util.tree_flatten(tuple(tangents))
  if tree_p != tree_t:
    raise TypeError("primal and tangent arguments to minijax.jvp must have the same tree "
                    f"structure; primals have tree structure {tree_p} whereas tangents have "
                    f"tree structure {tree_t}.")
  flat_t = [_check_tangent(p, t) for p, t in zip(flat_p, flat_t)]
  box = {}
  flat_fun = _flat_fun_with_aux(lambda *a: fun(*a), tree_p, has_aux, box)
  outs_p, outs_t = ad.jvp_flat(flat_fun, flat_p, flat_t)
  n = box["n_out"]
  out_p = box["out_tree"].unflatten(outs_p[:n])
  out_t = box["out_tree"].unflatten([_instantiate(t) for t in outs_t[:n]])
  if has_aux:
    return out_p, out_t, box["aux_tree"].unflatten(outs_p[n:])
  return out_p, out_t


def _dtype_name(dtype) -> str:
  return "float0" if dtype == dtypes.float0 else np.dtype(dtype).name


def _check_tangent(p, t):
  pa, ta = ad.get_aval(p), ad.get_aval(t)
  expected = pa.tangent_aval().dtype
  if ta.dtype != expected and not (dtypes.is_inexact(expected) and ta.weak_type):
    raise TypeError(
        "primal and tangent arguments to minijax.jvp do not match; dtypes must be equal, or "
        "in case of int/bool primal dtype the tangent dtype must be float0. Got primal dtype "
        f"{pa.dtype} and so expected tangent dtype {_dtype_name(expected)}, but got "
        f"tangent dtype {_dtype_name(ta.dtype)} instead.")
  if pa.shape != ta.shape:
    raise ValueError("minijax.jvp called with different primal and tangent shapes; Got "
                     f"primal shape {pa.shape} and tangent shape as {ta.shape}")
  return ad.Zero(pa.tangent_aval()) if expected == dtypes.float0 else t


def linearize(fun: Callable, *primals, has_aux: bool = False):
  """`(fun(*primals), f_jvp)` with `f_jvp(*tangents)` the linear map, evaluated from
  saved residuals without re-running `fun` (and aux when `has_aux`)."""
  flat_p, in_tree = tree_util.tree_flatten(primals)
  box = {}
  flat_fun = _flat_fun_with_aux(lambda *a: fun(*a), in_tree, has_aux, box)
  outs, out_avals, out_zero, lin = ad.linearize_flat(flat_fun, flat_p)
  n = box["n_out"]
  out_tree = box["out_tree"]

  def f_jvp(*tangents):
    flat_t, tree_t = tree_util.tree_flatten(tangents)
    if tree_t != in_tree:
      raise TypeError(f"linearized function expects tangents of structure {in_tree}, got "
                      f"{tree_t}")
    return out_tree.unflatten(lin.jvp(flat_t, out_avals, out_zero)[:n])

  out = out_tree.unflatten(outs[:n])
  if has_aux:
    return out, f_jvp, box["aux_tree"].unflatten(outs[n:])
  return out, f_jvp


def vjp(fun: Callable, *primals, has_aux: bool = False):
  """`(fun(*primals), vjp_fn)` where `vjp_fn(cotangent)` returns one cotangent per primal
  (and aux when `has_aux`)."""
  flat_p, in_tree = tree_util.tree_flatten(primals)
  box = {}
  flat_fun = _flat_fun_with_aux(lambda *a: fun(*a), in_tree, has_aux, box)
  outs, vjp_flat = ad.vjp_flat(flat_fun, flat_p)
  n, out_tree = box["n_out"], box["out_tree"]
  aux_avals = [ad.get_aval(a) for a in outs[n:]]

  def vjp_fn(ct):
    flat_ct, ct_tree = tree_util.tree_flatten(ct)
    if ct_tree != out_tree:
      raise TypeError(f"Tree structure of cotangent input {ct_tree}, does not match structure "
                      f"of primal output {out_tree}.")
    for c, o in zip(flat_ct, outs[:n]):
      if ad.get_aval(c).shape != ad.get_aval(o).shape:
        raise ValueError(f"Shape of cotangent input to vjp pullback function "
                         f"{ad.get_aval(c).shape} must be the same as the shape of "
                         f"corresponding primal input {ad.get_aval(o).shape}.")
    cts = vjp_flat([*flat_ct, *(ad.Zero(a.tangent_aval()) for a in aux_avals)])
    return in_tree.unflatten([_instantiate(c) for c in cts])

  out = out_tree.unflatten(outs[:n])
  if has_aux:
    return out, vjp_fn, box["aux_tree"].unflatten(outs[n:])
  return out, vjp_fn


def _is_complex(dtype) -> bool:
  return np.issubdtype(dtype, np.complexfloating)


def _check_input_dtype_revderiv(name, holomorphic, allow_int, x):
  dtype = ad.get_aval(x).dtype
  if holomorphic and not _is_complex(dtype):
    raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but got "
                    f"{_dtype_name(dtype)}.")
  if not dtypes.is_inexact(dtype) and not allow_int:
    raise TypeError(
        f"{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
        f"np.inexact), but got {_dtype_name(dtype)}. If you want to use Boolean- or "
        "integer-valued inputs, use vjp or set allow_int to True.")


def _check_output_dtype_revderiv(name, holomorphic, x):
  dtype = ad.get_aval(x).dtype
  if holomorphic:
    if not _is_complex(dtype):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                      f"but got {_dtype_name(dtype)}.")
  elif _is_complex(dtype):
    raise TypeError(
        f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
        f"np.floating), but got {_dtype_name(dtype)}. For holomorphic differentiation, pass "
        "holomorphic=True. For differentiation of non-holomorphic functions involving complex "
        "outputs, use minijax.vjp directly.")
  elif not dtypes.is_float(dtype):
    raise TypeError(
        f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
        f"np.floating), but got {_dtype_name(dtype)}. For differentiation of functions with "
        "integer outputs, use minijax.vjp directly.")


def _scalar_output_check(holomorphic):
  def check(leaves):
    if len(leaves) != 1:
      raise TypeError("Gradient only defined for scalar-output functions. Output was a "
                      f"pytree with {len(leaves)} leaves.")
    aval = ad.get_aval(leaves[0])
    if aval.shape != ():
      raise TypeError("Gradient only defined for scalar-output functions. Output had shape: "
                      f"{aval.shape}.")
    _check_output_dtype_revderiv("grad", holomorphic, leaves[0])
  return check


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False):
  """`f(*args) -> (value, gradient w.r.t. args[argnums])` (value is `(out, aux)` with aux).

  The gradient follows JAX's convention for complex numbers: it is the cotangent that the
  output's cotangent 1 pulls back, so for a real `f` of `z = x + iy` it is
  `df/dx - i df/dy`, and with `holomorphic=True` (complex inputs and output) it is `f'(z)`.
  """
  int_argnums = isinstance(argnums, int)
  argnums_t = (argnums,) if int_argnums else tuple(argnums)

  @functools.wraps(fun)
  def value_and_grad_f(*args, **kwargs):
    if max(argnums_t, default=-1) >= len(args):
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                      f"{max(argnums_t) + 1} positional arguments to be passed by the caller, "
                      f"but got only {len(args)} positional arguments.")
    dyn = tuple(args[i] for i in argnums_t)
    flat, in_tree = tree_util.tree_flatten(dyn)
    for x in flat:
      _check_input_dtype_revderiv("grad", holomorphic, allow_int, x)

    def partial_fun(*dyn_args):
      full = list(args)
      for i, a in zip(argnums_t, dyn_args):
        full[i] = a
      return fun(*full, **kwargs)

    box = {"check": _scalar_output_check(holomorphic)}
    flat_fun = _flat_fun_with_aux(partial_fun, in_tree, has_aux, box)
    outs, vjp_flat = ad.vjp_flat(flat_fun, flat)
    value = outs[0]
    one = lax.full((), 1, ad.get_aval(value).dtype)
    cts = vjp_flat([one, *(ad.Zero.from_primal_value(a) for a in outs[1:])])
    g = in_tree.unflatten([_instantiate(c) for c in cts])
    g = g[0] if int_argnums else g
    if has_aux:
      return (value, box["aux_tree"].unflatten(outs[1:])), g
    return value, g
  return value_and_grad_f


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False):
  """The gradient of scalar-valued `fun` with respect to `args[argnums]`."""
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @functools.wraps(fun)
  def grad_f(*args, **kwargs):
    (value, g) = vg(*args, **kwargs)
    if has_aux:
      return g, value[1]
    return g
  return grad_f


def _std_basis(aval) -> np.ndarray:
  """The identity map of `aval`'s space, shaped `aval.shape * 2`."""
  n = aval.size
  return np.eye(n, dtype=aval.dtype).reshape(aval.shape + aval.shape)


def _nested_vmap(f, ndim: int, out_axis_of):
  """Maps `f` over the leading `ndim` axes of its argument (one vmap per axis)."""
  for k in reversed(range(ndim)):
    f = vmap(f, in_axes=0, out_axes=out_axis_of(k))
  return f


def _jac_assemble(per_input, in_tree, out_tree, argnums):
  """`per_input[j][i]` (input leaf j, output leaf i) into out-tree-of-in-tree form."""
  rows = [in_tree.unflatten([col[i] for col in per_input]) for i in range(out_tree.num_leaves)]
  rows = [r[0] if isinstance(argnums, int) else r for r in rows]
  return out_tree.unflatten(rows)


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Jacobian by forward mode: one jvp per input element, batched with vmap."""
  int_argnums = isinstance(argnums, int)
  argnums_t = (argnums,) if int_argnums else tuple(argnums)

  def jac_f(*args):
    dyn = tuple(args[i] for i in argnums_t)
    flat, in_tree = tree_util.tree_flatten(dyn)

    def flat_fun(*leaves):
      full = list(args)
      for i, a in zip(argnums_t, in_tree.unflatten(leaves)):
        full[i] = a
      return fun(*full)

    out_box = {}

    def push(j, t):
      tangents = [t if k == j else ad.zeros_like_aval(ad.get_aval(x).tangent_aval())
                  for k, x in enumerate(flat)]
      res = jvp(flat_fun, tuple(flat), tuple(tangents), has_aux=has_aux)
      out_box["tree"] = tree_util.tree_structure(res[0])
      out_box["outs"] = tree_util.tree_leaves(res[0])
      if has_aux:
        out_box["aux"] = res[2]
      return tree_util.tree_leaves(res[1])

    for x in flat:
      _check_input_dtype_jacfwd(holomorphic, x)
    cols = []
    for j, x in enumerate(flat):
      aval = ad.get_aval(x)
      basis = _std_basis(aval)
      cols.append(_nested_vmap(functools.partial(push, j), aval.ndim,
                               lambda k, n=aval.ndim: k - n)(basis))
    if not flat:
      raise TypeError("jacfwd needs at least one differentiable input")
    if holomorphic:
      for o in out_box["outs"]:
        if not _is_complex(ad.get_aval(o).dtype):
          raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, "
                          f"but got {_dtype_name(ad.get_aval(o).dtype)}.")
    jac = _jac_assemble(cols, in_tree, out_box["tree"], argnums)
    return (jac, out_box["aux"]) if has_aux else jac
  return jac_f


def _check_input_dtype_jacfwd(holomorphic, x):
  dtype = ad.get_aval(x).dtype
  if holomorphic:
    if not _is_complex(dtype):
      raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, but "
                      f"got {_dtype_name(dtype)}.")
  elif not dtypes.is_float(dtype):
    raise TypeError(
        "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
        f"but got {_dtype_name(dtype)}. For holomorphic differentiation, pass holomorphic=True. "
        "For differentiation of non-holomorphic functions involving complex inputs or integer "
        "inputs, use minijax.jvp directly.")


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
  """The Jacobian by reverse mode: one vjp per output element, batched with vmap."""
  int_argnums = isinstance(argnums, int)
  argnums_t = (argnums,) if int_argnums else tuple(argnums)

  def jac_f(*args):
    dyn = tuple(args[i] for i in argnums_t)
    for x in tree_util.tree_leaves(dyn):
      _check_input_dtype_revderiv("jacrev", holomorphic, allow_int, x)

    def partial_fun(*dyn_args):
      full = list(args)
      for i, a in zip(argnums_t, dyn_args):
        full[i] = a
      return fun(*full)

    res = vjp(partial_fun, *dyn, has_aux=has_aux)
    out, pullback = res[0], res[1]
    out_leaves, out_tree = tree_util.tree_flatten(out)
    for o in out_leaves:
      _check_output_dtype_revderiv("jacrev", holomorphic, o)
    in_tree = tree_util.tree_structure(dyn)
    rows = []
    for i, o in enumerate(out_leaves):
      aval = ad.get_aval(o)

      def pull(ct, i=i):
        cts = [ct if k == i else ad.zeros_like_aval(ad.get_aval(x).tangent_aval())
               for k, x in enumerate(out_leaves)]
        return tree_util.tree_leaves(pullback(out_tree.unflatten(cts)))

      rows.append(_nested_vmap(pull, aval.ndim, lambda k: 0)(_std_basis(aval)))
    per_input = [[row[j] for row in rows] for j in range(in_tree.num_leaves)]
    jac = _jac_assemble(per_input, in_tree, out_tree, argnums)
    return (jac, res[2]) if has_aux else jac
  return jac_f


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Hessian, as `jacfwd(jacrev(fun))`."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)


# ----------------------------------------------------------------------------- vmap

def _broadcast_prefix(prefix, tree, what: str) -> list:
  spec_leaves, spec_tree = tree_util.tree_flatten(prefix, is_leaf=lambda x: x is None)
  try:
    subtrees = spec_tree.flatten_up_to(tree)
  except (ValueError, TypeError):
    raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                     f"value, got specification {prefix} for value tree "
                     f"{tree_util.tree_structure(tree)}.") from None
  out = []
  for spec, sub in zip(spec_leaves, subtrees):
    if spec is not None and not isinstance(spec, int):
      raise ValueError(f"vmap {what} must be an int, None, or a (nested) tuple of those; "
                       f"got {spec!r}")
    out.extend([spec] * len(tree_util.tree_leaves(sub)))
  return out


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None,
         axis_name=None):
  """Vectorizes `fun` over the axes `in_axes` of its arguments, stacking its results
  along `out_axes`."""
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)

  @functools.wraps(fun)
  def vmapped(*args, **kwargs):
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                       "corresponding to the positional arguments passed to the function, "
                       f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    flat_axes = _broadcast_prefix(axes, args, "in_axes")
    flat_kw, kw_tree = tree_util.tree_flatten(kwargs)
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    flat_axes += [0] * len(flat_kw)
    names = _flat_arg_names(fun, args, kwargs)
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
      name = names[i] if i < len(names) else f"args[{i}]"
      sizes.append((aval.shape[a], f"axis {a} of argument {name} of type {aval.str_short()}"))
    size = axis_size
    if size is None:
      if not sizes:
        raise ValueError("vmap must have at least one non-None value in in_axes, or be "
                         "given axis_size")
      size = sizes[0][0]
    if any(s != size for s, _ in sizes):
      lines = "\n".join(f"  * one axis had size {s}: {where};" for s, where in sizes)
      raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped:\n{lines}"
                       + (f"\n  (axis_size={axis_size})" if axis_size is not None else ""))
    box = {}

    def flat_fun(*xs):
      a, kw = tree_util.tree_unflatten(in_tree, xs)
      leaves, box["out_tree"] = tree_util.tree_flatten(fun(*a, **kw))
      return leaves

    outs, out_dims = batching.vmap_flat_dims(flat_fun, dims, size, flat)
    out_tree = box["out_tree"]
    out = out_tree.unflatten(outs)
    flat_out_axes = _broadcast_prefix(out_axes, out, "out_axes")
    results = []
    for o, d, a in zip(outs, out_dims, flat_out_axes):
      if a is not None:
        a = a % (ad.get_aval(o).ndim + (d is None))
      results.append(batching.matchaxis(o, d, a, size))
    return out_tree.unflatten(results)
  return vmapped


# ----------------------------------------------------------------------------- shapes, transposes

class ShapeDtypeStruct:
  """The shape and dtype of a value, as `eval_shape` returns them."""
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type: bool = False):
    self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type

  def __repr__(self):
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype)

  def __hash__(self):
    return hash((self.shape, self.dtype))


def _aval_of(x):
  if isinstance(x, ShapeDtypeStruct):
    from minijax.core.avals import ShapedArray
    return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type)
  return _abstractify(x)


def eval_shape(fun: Callable, *args, **kwargs):
  """The shapes and dtypes of `fun(*args, **kwargs)`, found by tracing (nothing runs);
  arguments may be arrays or `ShapeDtypeStruct`s."""
  jaxpr, _, _, out_tree = pe.trace_pytree_fun(fun, args, kwargs, _aval_of)
  return out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                for a in jaxpr.out_avals])


def linear_transpose(fun: Callable, *primals):
  """The transpose of `fun`, which must be linear in its arguments: `primals` give their
  shapes and dtypes, and the result maps an output cotangent to one cotangent per
  argument."""
  flat, in_tree = tree_util.tree_flatten(primals)
  box = {}

  def flat_fun(*xs):
    leaves, box["tree"] = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, xs)))
    return leaves
  in_avals = [_aval_of(x) for x in flat]
  jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, in_avals)
  out_tree = box["tree"]

  def transposed(out_ct):
    flat_ct, ct_tree = tree_util.tree_flatten(out_ct)
    if ct_tree != out_tree:
      raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not match the "
                      f"function's output structure {out_tree}")
    from minijax.interpreters.transpose import backward_pass
    cts = backward_pass(jaxpr, consts, [ad.UndefinedPrimal(a) for a in in_avals], flat_ct)
    return in_tree.unflatten([_instantiate(c) for c in cts])
  return transposed
