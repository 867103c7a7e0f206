"""What the three callback primitives share: flat callbacks, result types, custom calls.

`FlatCallback` turns a user's `callback(*args, **kwargs)` into a function of the flat
array leaves that the primitive carries: leaves that are not arrays (strings, functions,
anything without an aval) are kept aside as static values and merged back in order, as in
JAX.  It returns the flat result leaves (`results=True`), or its only result leaf itself
(`single=True`, which lets the native host-call handler skip the list), or nothing.

`result_avals_of` reads `result_shape_dtypes` (any pytree of objects with `.shape` and
`.dtype`), rejecting 64-bit dtypes when x64 is off; `call_eagerly` runs a value-returning
callback outside compiled code; `batch_sequentially` is the batching of a callback that
runs once per batch element.  `emit_queue_call` and `emit_host_call` build the custom
calls: to the tap queue (host functions that return nothing) and to the value-returning
host-call handler, through whichever mechanism `tap_mechanism` selects.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo

from minijax import lax
from minijax.tree_util import internal as tree_util
from minijax.core import dtypes
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.sharding import PartitionSpec
from minijax.interpreters import batching
from minijax.interpreters import partial_eval as pe
from minijax.lax import shard_map as shard_map_lib
from minijax.lowering import mlir, spmd
from minijax.runtime import host_calls, taps
from minijax.runtime.array import Array, device_put, is_concrete_array
from minijax.staging import special_values


def split_args(args: tuple, kwargs: dict) -> tuple[Any, list, tuple]:
  """`(in_tree, dynamic leaves, static leaves as ((index, value), ...))` of `(args, kwargs)`:
  a leaf is dynamic when it has an aval (arrays, tracers, Python and numpy scalars)."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  dynamic, static = [], []
  for i, leaf in enumerate(leaves):
    try:
      get_aval(leaf)
    except TypeError:
      static.append((i, leaf))
    else:
      dynamic.append(leaf)
  return in_tree, dynamic, tuple(static)


class FlatCallback:
  """`callback` as a function of the dynamic leaves of its arguments (see the module
  docstring).  Equal when built from equal parts, so that equal call sites share their
  registrations; unhashable static values fall back to identity."""
  __slots__ = ("callback", "in_tree", "static", "results", "single", "direct", "_hash",
               "deliverer", "api", "device")

  def __init__(self, callback: Callable, in_tree, static: tuple, *, results: int | None,
               single: bool = False, api: str = "pure_callback", device=None):
    self.callback, self.in_tree, self.static = callback, in_tree, static
    self.results, self.single, self.api = results, single, api
    self.device = device  # where the callback runs in a module over several devices
    # The common case calls `callback(*leaves)` with no tree work.
    self.direct = not static and in_tree == _positional_tree(in_tree)
    try:
      self._hash = hash((callback, in_tree, static, results, single, api, device))
    except TypeError:
      self._hash = None
    self.deliverer: Callable | None = None  # built by debug_callback's lowering, once

  def arguments(self, leaves) -> tuple[tuple, dict]:
    if self.direct:
      return tuple(leaves), {}
    leaves, static = iter(leaves), dict(self.static)
    merged = [static[i] if i in static else next(leaves) for i in range(self.in_tree.num_leaves)]
    return self.in_tree.unflatten(merged)

  def __call__(self, *leaves):
    if self.direct:
      out = self.callback(*leaves)
    else:
      args, kwargs = self.arguments(leaves)
      out = self.callback(*args, **kwargs)
    if self.results is None:
      return None
    if self.single and (type(out) is np.ndarray or isinstance(out, np.generic)):
      return out
    flat = tree_util.tree_leaves(out)
    host_calls.check_result_count(flat, self.results)
    return flat[0] if self.single else flat

  def __eq__(self, other):
    if type(other) is not FlatCallback:
      return NotImplemented
    if self._hash is None or other._hash is None:
      return self is other
    return (self.callback == other.callback and self.in_tree == other.in_tree
            and self.static == other.static and self.results == other.results
            and self.single == other.single and self.api == other.api
            and self.device == other.device)

  def __hash__(self):
    return id(self) if self._hash is None else self._hash

  @property
  def __name__(self):
    return getattr(self.callback, "__name__", type(self.callback).__name__)

  def __repr__(self):
    return self.__name__


def _positional_tree(in_tree):
  """The tree of `(args, {})` with every argument a leaf, for `in_tree`'s leaf count."""
  return tree_util.tree_structure(((0,) * in_tree.num_leaves, {}))


def flat_callback(callback: Callable, args: tuple, kwargs: dict, *, results: int | None,
                  single: bool = False, api: str = "pure_callback", sharding=None
                  ) -> tuple[FlatCallback, list]:
  """The flat form of `callback(*args, **kwargs)` and its dynamic leaves; `api` names the
  callback's API in the log of its failures, `sharding` (checked by `callback_device`) says
  on which device it runs."""
  in_tree, dynamic, static = split_args(args, kwargs)
  device = callback_device(sharding, api)
  return (FlatCallback(callback, in_tree, static, results=results, single=single, api=api,
                       device=device), dynamic)


def result_avals_of(result_shape_dtypes: Any) -> tuple[list[ShapedArray], Any]:
  """The flat result avals and tree of `result_shape_dtypes`; ValueError for a 64-bit dtype
  when x64 is disabled, as JAX does."""
  leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
  avals = []
  for leaf in leaves:
    try:
      shape, dtype = tuple(leaf.shape), np.dtype(leaf.dtype)
    except (AttributeError, TypeError) as e:
      raise TypeError("result_shape_dtypes must be a pytree whose leaves have `shape` and "
                      f"`dtype` attributes (jax.ShapeDtypeStruct, arrays), got "
                      f"{type(leaf).__name__}: {leaf!r:.60}") from e
    if dtypes.canonicalize_dtype(dtype) != dtype:
      raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                       "`jax_enable_x64` is disabled")
    avals.append(ShapedArray(shape, dtype))
  return avals, tree


def check_callable(callback, name: str) -> None:
  if not callable(callback):
    raise TypeError(f"first argument to {name} must be callable, but got an object of type "
                    f"{type(callback)}")


def callback_device(sharding, name: str):
  """The device of a callback's `sharding=` (a single-device sharding, as in JAX), or None."""
  if sharding is None:
    return None
  devices = getattr(sharding, "_device_assignment", None)
  if devices is None or len(devices) != 1:
    raise NotImplementedError(
        f"{name}(sharding=...) takes a single-device sharding (the device the callback runs "
        f"on in a computation over several devices), got {sharding!r}")
  return devices[0]


def call_eagerly(callback: FlatCallback, result_avals, args) -> list:
  """Runs a value-returning callback outside compiled code: Array arguments, results
  converted by the rules of compiled calls and put on the arguments' device."""
  device = next((a._device for a in args if type(a) is Array), None)
  try:
    out = callback(*host_args(args))
  except Exception as e:
    host_calls.log_call_failure(callback.api)
    raise host_calls.call_error(e) from e
  leaves = [out] if callback.single else list(out)
  results = [device_put(host_calls.convert_result(result_avals, leaf, i), device)
             for i, leaf in enumerate(leaves)]
  if special_values.checking():  # (as a primitive applied eagerly: a de-optimized run names it)
    special_values.check_primitive(callback.api, results)
  return results


def batch_by_vmap_method(name: str, vmap_method, args, dims, bind_each: Callable,
                         bind_all: Callable) -> tuple[list, list]:
  """The batching rule of a call whose `vmap_method` says how it maps (`pure_callback`,
  `ffi_call`; see `callbacks/pure.py`): "sequential" and "sequential_unrolled" bind
  `bind_each(*xs)` once per element; "expand_dims", "broadcast_all" and
  "legacy_vectorized" bind `bind_all(operands, size)` once, every batched operand's batch
  axis first and the others given a leading axis of size 1, of the batch size, or none;
  None raises JAX's NotImplementedError.  Results come out batched along axis 0."""
  if vmap_method in ("sequential", "sequential_unrolled"):
    outs = batch_sequentially(bind_each, args, dims,
                              unrolled=vmap_method == "sequential_unrolled")
    return outs, [0] * len(outs)
  if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
    raise NotImplementedError(
        f"vmap is only supported for the {name} primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  moved = [a if d is None else batching.moveaxis(a, d, 0) for a, d in zip(args, dims)]
  if vmap_method != "legacy_vectorized":
    lead = size if vmap_method == "broadcast_all" else 1
    moved = [lax.broadcast(a, (lead,)) if d is None else a for a, d in zip(moved, dims)]
  outs = bind_all(moved, size)
  return outs, [0] * len(outs)


def batch_sequentially(bind: Callable, args, dims, *, unrolled: bool = False) -> list:
  """`bind(*args)` once per batch element, in order, the results stacked along a new
  leading axis: a `scan` over the batched arguments, or a Python loop when `unrolled`."""
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  moved = [a if d is None else batching.moveaxis(a, d, 0) for a, d in zip(args, dims)]
  batched = [a for a, d in zip(moved, dims) if d is not None]

  def one(slices):
    it = iter(slices)
    return bind(*[a if d is None else next(it) for a, d in zip(moved, dims)])

  if not unrolled:
    return list(lax.map(one, batched))
  rows = [one([lax.index_in_dim(b, i, keepdims=False) for b in batched]) for i in range(size)]
  return [lax.concatenate([lax.expand_dims(r[k], (0,)) for r in rows], 0)
          for k in range(len(rows[0]))] if rows and rows[0] else []


def pp_callback_params(params, names, indent) -> list[str]:
  """`callback=name` and the other params, result avals in short form."""
  lines = [f"callback={params['callback'].__name__}"]
  for key, value in params.items():
    if key == "callback":
      continue
    if key == "result_avals":
      value = "(" + ", ".join(a.str_short(short_dtypes=True) for a in value) + ")"
    lines.append(f"{key}={value}")
  return lines


def host_args(args) -> list[Array]:
  """Concrete arguments as Arrays, as host functions receive them in compiled code (for the
  eager implementations): Arrays as they are, numpy values and Python scalars put on the
  default device (not weakly typed, as the host copies of compiled code are not)."""
  return [a if is_concrete_array(a) else device_put(np.asarray(a)) for a in args]


# ----------------------------------------------------------------------------- custom calls

def custom_call(target: str, token, operands, result_types, attributes: dict,
                has_side_effect: bool, row_major_layouts: bool = False):
  """A typed-FFI custom call to `target` with `attributes`, taking and returning `token`
  first when there is one; with `row_major_layouts` its operands and results say they are
  row-major (a call XLA's partitioner rebuilds needs them)."""
  takes_token = token is not None
  result_types = ([mlir.token_type()] if takes_token else []) + list(result_types)
  operands = ([token] if takes_token else []) + list(operands)
  layouts = {}
  if row_major_layouts:
    row_major = lambda t: tuple(range(getattr(t, "rank", 0) - 1, -1, -1))  # noqa: E731
    layouts = dict(operand_layouts=[row_major(x.type) for x in operands],
                   result_layouts=[row_major(t) for t in result_types])
  return mlir.custom_call(target, result_types=result_types, operands=operands,
                          backend_config=attributes, has_side_effect=has_side_effect,
                          **layouts)


def partly_manual(ctx) -> bool:
  """Whether `ctx` lowers inside a shard_map manual over only some of its mesh's axes."""
  context = ctx.module_context.axis_context
  return context is not None and context.partial


def lower_once_per_block(ctx, primitive, args, params: dict, *, returns_args: bool):
  """Lowers the side effect `primitive(*args, **params)` in a region manual over only some
  mesh axes, as JAX lowers a debug callback there: a shard_map nested over the automatic
  axes runs it on the first device along them, once for each block of the manual ones.
  Returns `args` when the primitive hands its operands back (a tap), else nothing."""
  context = ctx.module_context.axis_context
  mesh = context.mesh
  automatic = tuple(n for n in mesh.axis_names if n not in context.axis_names)

  def once(*xs):
    def first():
      primitive.bind(*xs, **params)
    lax.cond(lax.axis_index(automatic) == 0, first, lambda: None)

  def run(*xs):
    shard_map_lib.shard_map(once, mesh=mesh, in_specs=(PartitionSpec(),) * len(xs),
                            out_specs=None, axis_names=frozenset(automatic),
                            check_vma=False)(*xs)
    return list(xs) if returns_args else []

  with shard_map_lib.mesh_axes(mesh, frozenset(context.axis_names)):
    closed = pe.trace_to_closed_jaxpr(run, list(ctx.avals_in))
  return mlir.lower_call_inline(ctx, closed, *args)


def emit_queue_call(ctx, consumer_id: int, operands, token, *,
                    sharding: str | None = None) -> ir.Value | None:
  """A custom call that copies `operands` into the device's tap queue for the consumer
  `consumer_id` (registered with `runtime.taps.register_consumer`); returns the next token
  when it takes one.  `sharding` is the call's `mhlo.sharding` in a module for several
  devices (`spmd.side_effect_sharding`).

  In a loop body of a single-device module the native call also hands back, aliased in
  place, each operand that XLA may update in place (`mlir.updatable_in_place`), and the
  equations after it read that operand from the call (`ctx.replace_operand`).  This orders
  every later writer of the operand's buffer after the tap: otherwise XLA copies a tapped
  carry for the tap, since the loop updates its buffer in place, a second copy of every
  tapped byte.  The handler only reads its operands."""
  mctx = ctx.module_context
  in_place = spmd.side_effect_sharding(mctx) is None
  if sharding is None:
    sharding = spmd.side_effect_sharding(mctx)
  return emit_tap_call(consumer_id, token, operands, host_callbacks=mctx.host_callbacks,
                       sharding=sharding, ctx=ctx if in_place else None)


def emit_tap_call(consumer_id: int, token, operands, *, host_callbacks: list,
                  sharding: str | None = None, ctx=None) -> ir.Value | None:
  """Emits, at the current insertion point, the custom call that sends `operands` to the
  consumer `consumer_id` (from `register_consumer`) through the tap mechanism in use:

      %t1 = mhlo.custom_call @minijax_tap(%t0, %x, %y) {api_version = 4 : i32,
          has_side_effect = true, backend_config = {consumer = 7 : i64}}
          : (!mhlo.token, tensor<3xf32>, tensor<i32>) -> !mhlo.token

  With a `token` (an ordered tap) the call is sequenced after it and returns the next
  token; without one it returns no token, and `has_side_effect` keeps XLA from dropping
  it.  For the callback mechanism the target is jaxlib's Python callback, and the host
  callable is appended to `host_callbacks` (the module's list, compiled with the
  executable).  Given a rule's `ctx`, operands are aliased in place as `emit_queue_call`
  says; without one nothing is.  `sharding`: as for `emit_queue_call`."""
  operands = list(operands)
  aliased: list[int] = []
  if taps.mechanism() == "native":
    target = taps.NATIVE_TARGET
    attributes = {taps.NATIVE_CONSUMER_ATTRIBUTE: consumer_id}
    if ctx is not None:
      aliased = [i for i, v in enumerate(operands)
                 if operands.count(v) == 1 and mlir.updatable_in_place(ctx.module_context, v)]
  else:
    target = taps.CALLBACK_TARGET
    attributes = {"index": np.uint64(len(host_callbacks))}
    placement = _callback_placement(sharding)
    if placement == taps.PER_PARTITION:  # the host callable reads which device runs it
      operands.insert(0, mhlo.PartitionIdOp().result)
    host_callbacks.append(taps.TapCallback(consumer_id, token is not None, placement))
  op = custom_call(target, token, operands, [operands[i].type for i in aliased], attributes,
                    has_side_effect=True)
  ntok = 0 if token is None else 1
  if aliased:
    single = ntok + len(aliased) == 1  # a single result is not a tuple
    op.attributes["output_operand_aliases"] = ir.ArrayAttr.get([
        mhlo.OutputOperandAlias.get([] if single else [ntok + k], ntok + i, [])
        for k, i in enumerate(aliased)])
    for k, i in enumerate(aliased):
      ctx.replace_operand(i, op.results[ntok + k])
  if sharding is not None:
    op.attributes["mhlo.sharding"] = spmd.sharding_attr(sharding)
  return op.results[0] if token is not None else None


def _callback_placement(sharding: str | None) -> int | str:
  """`TapCallback.placement` for a tap call of `sharding` (`spmd.side_effect_sharding`'s)."""
  if sharding == spmd.MANUAL:
    return taps.PER_PARTITION
  if sharding is None or sharding == spmd.FIRST_DEVICE:
    return 0
  raise NotImplementedError(f"a tap call with sharding {sharding} under the callback "
                            "mechanism (it runs taps on the first device or in manual regions)")


def _wide(dtype: np.dtype) -> np.dtype:
  """The byte-sized type a sub-byte `dtype` crosses to the host as (exactly)."""
  if dtypes.is_float(dtype):
    return dtypes.float32
  return dtypes.int8 if dtype.name.startswith("int") else dtypes.uint8


class _SubbyteCall:
  """A host function whose sub-byte operands and results cross the custom call widened
  (`lower_host_call`): it narrows the operands back and widens the results of `func`, the
  results of the declared sub-byte type, so that others still fail the usual checks."""
  __slots__ = ("func", "narrow_args", "narrow_results", "single")

  def __init__(self, func: FlatCallback, narrow_args: tuple, narrow_results: tuple):
    self.func, self.narrow_args, self.narrow_results = func, narrow_args, narrow_results
    self.single = func.single

  def __call__(self, *leaves):
    out = self.func(*(x if d is None else np.asarray(x).astype(d)
                      for x, d in zip(leaves, self.narrow_args)))
    outs = [out] if self.single else list(out)
    for i, d in enumerate(self.narrow_results):
      value = np.asarray(outs[i])
      if d is not None and value.dtype == d:
        outs[i] = value.astype(_wide(d))
    return outs[0] if self.single else outs

  def __eq__(self, other):
    return (type(other) is _SubbyteCall and self.func == other.func
            and self.narrow_args == other.narrow_args
            and self.narrow_results == other.narrow_results)

  def __hash__(self):
    return hash((self.func, self.narrow_args, self.narrow_results))


def lower_host_call(ctx, callback: FlatCallback, args, result_avals, token, *,
                    has_side_effect: bool) -> tuple[list[ir.Value], ir.Value | None]:
  """Registers the call site of `callback` and emits its custom call (`emit_host_call`).
  Sub-byte operands and results (int4, float4_e2m1fn, ...), which XLA packs, cross it
  widened to a byte-sized type, converted exactly on the device and back on the host."""
  if partly_manual(ctx):
    raise NotImplementedError("callbacks are only supported in spmd computations when all mesh "
                              "axes are partitioned manually (no partial automatic sharding).")
  narrow = lambda avals: tuple(a.dtype if a.dtype in dtypes.SUBBYTE_BITS else None
                               for a in avals)
  narrow_args, narrow_results = narrow(ctx.avals_in), narrow(result_avals)
  func, arg_avals = callback, ctx.avals_in
  if any(narrow_args) or any(narrow_results):
    func = _SubbyteCall(callback, narrow_args, narrow_results)
    widen = lambda a, d: a if d is None else ShapedArray(a.shape, _wide(d))
    arg_avals = [widen(a, d) for a, d in zip(ctx.avals_in, narrow_args)]
    result_avals = [widen(a, d) for a, d in zip(result_avals, narrow_results)]
    args = [x if d is None else mhlo.ConvertOp(ctx.module_context.ir_type(a), x).result
            for x, a, d in zip(args, arg_avals, narrow_args)]
  call = host_calls.register_host_call(
      func, single=callback.single, arg_avals=arg_avals, result_avals=result_avals,
      direct=callback.callback if callback.direct and func is callback else None,
      api=callback.api)
  mctx = ctx.module_context
  sharding = spmd.side_effect_sharding(mctx) if has_side_effect else None
  if callback.device is not None and mctx.axis_context is None and mctx.positions:
    sharding = f"{{maximal device={mctx.positions[callback.device]}}}"
  results, token = emit_host_call(ctx, call, args, token, has_side_effect=has_side_effect,
                                  sharding=sharding)
  results = [r if d is None else mhlo.ConvertOp(
      ctx.module_context.ir_type(ShapedArray(a.shape, d)), r).result
      for r, a, d in zip(results, result_avals, narrow_results)]
  return results, token


def emit_host_call(ctx, call: host_calls.HostCall, operands, token, *, has_side_effect: bool,
                   sharding: str | None = None) -> tuple[list[ir.Value], ir.Value | None]:
  """A custom call that runs the registered host call `call` on `operands` and returns its
  results (and the next token when it takes one); `sharding`: as for `emit_queue_call`."""
  mctx = ctx.module_context
  mctx.host_calls.append(call)
  if host_calls.mechanism() == "native":
    target = host_calls.NATIVE_TARGET
    attributes = {host_calls.NATIVE_CALLBACK_ATTRIBUTE: call.id}
  else:
    target = host_calls.CALLBACK_TARGET
    attributes = {"index": np.uint64(len(mctx.host_callbacks))}
    mctx.host_callbacks.append(host_calls.PythonHostCallback(call, token is not None))
  result_types = [mctx.ir_type(a) for a in call.result_avals]
  op = custom_call(target, token, operands, result_types, attributes, has_side_effect)
  if sharding is not None:
    op.attributes["mhlo.sharding"] = spmd.sharding_attr(sharding)
  results = list(op.results)
  if token is not None:
    return results[1:], results[0]
  return results, None
