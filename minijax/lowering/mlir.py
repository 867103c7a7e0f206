"""Lowering jaxprs to MLIR modules in the MHLO dialect.

A module holds one public `main` and one private function per distinct nested jaxpr
(`func.call` sites share it).  Every function takes, before its array arguments, one token
per ordered effect of its jaxpr, in the fixed order of `effects.ordered_effects`, and
returns the final tokens before its array results.  `jaxpr_subcomp` walks a jaxpr's
equations, giving each lowering rule a `LoweringRuleContext` with the input and output
avals and the tokens of the equation's ordered effects (`tokens_in`).  A rule for an
effectful primitive must hand back the new tokens with `ctx.set_tokens_out`; the walker
checks that it did, and that nothing else did, and names the primitive when not.

Rules have the signature `rule(ctx, *operands: ir.Value, **params)` and return one
`ir.Value`, or a sequence of them for primitives with multiple results.  They live in the
primitive's own block (minijax/lax/...) and are registered with `register_lowering`.  They
emit MHLO (and CHLO) ops, except where XLA expands only the StableHLO form of an op into an
accurate algorithm (complex `sqrt` and `log1p`): there the StableHLO op, in the same module.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_dialect
from jaxlib.mlir.dialects import mhlo

from minijax import monitoring
from minijax.config import compile_log_level
from minijax.core import dtypes
from minijax.core.avals import AbstractToken
from minijax.core.effects import check_lowerable, needs_discharge, ordered_effects
from minijax.core.state import AbstractRef
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal
from minijax.lowering.context import ir_context
from minijax.lowering.tokens import TokenSet

LoweringRule = Callable[..., Any]
_lowerings: dict[Any, LoweringRule] = {}
_splat_literals: set = set()  # rules that take rank-0 literals splat to the result's shape


def register_lowering(primitive, rule: LoweringRule, *,
                      splat_literals: bool = False) -> LoweringRule:
  """Registers `rule` for `primitive`.  `splat_literals=True` is for elementwise rules:
  `jaxpr_subcomp` then hands them a rank-0 literal operand of a larger result already as a
  splat constant of the result's shape, and an operand with size-1 axes broadcast to it,
  their `ctx.avals_in` entries reshaped to match (other rank-0 operands stay rank 0)."""
  _lowerings[primitive] = rule
  (_splat_literals.add if splat_literals else _splat_literals.discard)(rule)
  return rule


def _find_rule(primitive) -> LoweringRule:
  rule = _lowerings.get(primitive)
  if rule is None:
    raise NotImplementedError(
        f"MLIR translation rule for primitive '{primitive}' not found for platform cpu: "
        f"primitive '{primitive}' has no MLIR lowering rule; register one with "
        f"`mlir.register_lowering({primitive.name}_p, rule)` in the primitive's block in "
        "minijax/lax/")
  return rule


# ----------------------------------------------------------------------------- types

_SCALAR_TYPES: dict[np.dtype, Callable[[], ir.Type]] = {
    dtypes.bool_: lambda: ir.IntegerType.get_signless(1),
    dtypes.float0: lambda: ir.IntegerType.get_signless(1),
    dtypes.int8: lambda: ir.IntegerType.get_signless(8),
    dtypes.int16: lambda: ir.IntegerType.get_signless(16),
    dtypes.int32: lambda: ir.IntegerType.get_signless(32),
    dtypes.int64: lambda: ir.IntegerType.get_signless(64),
    dtypes.uint8: lambda: ir.IntegerType.get_unsigned(8),
    dtypes.uint16: lambda: ir.IntegerType.get_unsigned(16),
    dtypes.uint32: lambda: ir.IntegerType.get_unsigned(32),
    dtypes.uint64: lambda: ir.IntegerType.get_unsigned(64),
    dtypes.float16: ir.F16Type.get,
    dtypes.bfloat16: ir.BF16Type.get,
    dtypes.float32: ir.F32Type.get,
    dtypes.float64: ir.F64Type.get,
    dtypes.complex64: lambda: ir.ComplexType.get(ir.F32Type.get()),
    dtypes.complex128: lambda: ir.ComplexType.get(ir.F64Type.get()),
    dtypes.int2: lambda: ir.IntegerType.get_signless(2),
    dtypes.int4: lambda: ir.IntegerType.get_signless(4),
    dtypes.uint2: lambda: ir.IntegerType.get_unsigned(2),
    dtypes.uint4: lambda: ir.IntegerType.get_unsigned(4),
    dtypes.float4_e2m1fn: ir.Float4E2M1FNType.get,
    **{d: getattr(ir, f"Float8{d.name[len('float8_'):].upper()}Type").get  # Float8E4M3FNType
       for d in dtypes.FLOAT8},
}


def dtype_to_ir_type(dtype) -> ir.Type:
  return _SCALAR_TYPES[np.dtype(dtype)]()


def aval_to_ir_type(aval) -> ir.Type:
  if isinstance(aval, AbstractToken):
    return mhlo.TokenType.get()
  return ir.RankedTensorType.get(aval.shape, dtype_to_ir_type(aval.dtype))


def token_type() -> ir.Type:
  return mhlo.TokenType.get()


# ----------------------------------------------------------------------------- constants

def ir_constant(val: Any, dtype=None) -> ir.Value:
  """An MHLO constant.  An array broadcast along zero strides is not materialized: it is
  emitted as a constant of its distinct part and a `broadcast_in_dim`, or as a splat when
  that part is a single element."""
  array = np.asarray(val, dtype=dtype)
  if array.dtype == dtypes.float0:
    array = np.zeros(array.shape, np.bool_)
  if array.ndim and array.size and 0 in array.strides:
    keep = [d for d in range(array.ndim) if array.strides[d] != 0]
    index = tuple(slice(None) if d in keep else 0 for d in range(array.ndim))
    # np.array, not np.ascontiguousarray, which would make a 0-d core 1-d
    core = np.array(array[index])
    if not keep:
      return splat_constant(core, array.shape)
    out_type = ir.RankedTensorType.get(array.shape, dtype_to_ir_type(array.dtype))
    # mhlo's builder wants a list here: it makes the DenseIntElementsAttr the op needs, where
    # a DenseI64ArrayAttr would be dropped and leave an op the verifier rejects
    return mhlo.BroadcastInDimOp(out_type, ir_constant(core), keep).result
  return mhlo.ConstantOp(_dense_attr(array, array.shape)).result


def _dense_attr(array: np.ndarray, shape: Sequence[int]) -> ir.DenseElementsAttr:
  """`array`'s elements as an attribute of `shape`: `array`'s own shape, or any shape when
  `array` holds one element, which then is splat."""
  # (bool arrays go in unpacked: the binding packs them, and reads a packed buffer of one
  # byte as a splat)
  array = np.ascontiguousarray(array)  # (makes a 0-d array 1-d, which the binding takes)
  return ir.DenseElementsAttr.get(
      array.view(_storage_view(array.dtype)) if array.dtype == dtypes.bfloat16 else array,
      type=dtype_to_ir_type(array.dtype), shape=shape)


def splat_constant(value: Any, shape: Sequence[int], dtype=None) -> ir.Value:
  """A constant of `shape` whose every element is the scalar `value` (cast to `dtype`)."""
  value = np.asarray(value, dtype=dtype)
  if 0 in shape:
    return ir_constant(np.zeros(shape, value.dtype))
  return mhlo.ConstantOp(_dense_attr(value, shape)).result


def broadcast_scalar(x: ir.Value, aval) -> ir.Value:
  """A rank-0 `x` broadcast to `aval`'s shape: a splat constant when `x` is a constant (a
  jaxpr literal, say), else a `broadcast_in_dim` with no dimensions."""
  out_type = aval_to_ir_type(aval)
  op = x.owner
  if getattr(op, "name", None) == "mhlo.constant":
    try:
      value = op.attributes["value"]
    except TypeError:  # (the binding cannot read complex element attributes back)
      value = None
    if isinstance(value, ir.DenseElementsAttr) and value.is_splat:
      # (the scalar constant may have other uses, e.g. a constvar's; a dead one is dropped
      # by the compiler)
      return mhlo.ConstantOp(ir.DenseElementsAttr.get_splat(
          out_type, value.get_splat_value())).result
  return mhlo.BroadcastInDimOp(out_type, x, []).result


def broadcast_to(x: ir.Value, aval, shape) -> ir.Value:
  """`x` (of `aval`: rank 0, or of `shape`'s rank with size-1 axes) broadcast to `shape`."""
  if not aval.shape:
    return broadcast_scalar(x, aval.update(shape=tuple(shape)))
  return mhlo.BroadcastInDimOp(aval_to_ir_type(aval.update(shape=tuple(shape))), x,
                               list(range(len(shape)))).result


def _storage_view(dtype):
  return np.uint16 if dtype.itemsize == 2 else np.uint8


# ------------------------------------------------------------ attributes and custom calls

def ir_attribute(value: Any) -> ir.Attribute:
  """An MLIR attribute of a Python value, typed as JAX types it: a Python bool, int or float
  as i1, i64 or f64; a numpy scalar or array with its own dtype; a dtype as a type
  attribute; a str or bytes as a string; a dict as a dictionary and a list or tuple as an
  array of attributes."""
  if isinstance(value, (ir.Attribute, ir.Type)):
    return value
  if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
    dtype = bool if isinstance(value, bool) else int if isinstance(value, int) else float
    return _scalar_attribute(np.array(value, {bool: np.bool_, int: np.int64,
                                              float: np.float64}[dtype]))
  if isinstance(value, (np.ndarray, np.generic)):
    array = np.asarray(value)
    if 0 in array.strides and array.size > 1:
      raise ValueError("NumPy arrays with zero strides are not supported as MLIR attributes")
    if isinstance(value, np.generic):
      return _scalar_attribute(array)
    return _dense_attr(array, array.shape)
  if isinstance(value, np.dtype):
    return ir.TypeAttr.get(dtype_to_ir_type(value))
  if isinstance(value, (str, bytes)):
    return ir.StringAttr.get(value)
  if isinstance(value, dict):
    return ir.DictAttr.get({k: ir_attribute(v) for k, v in value.items()})
  if isinstance(value, (list, tuple)):
    return ir.ArrayAttr.get([ir_attribute(v) for v in value])
  if hasattr(value, "__jax_array__"):
    return ir_attribute(value.__jax_array__())
  raise TypeError(f"No attribute handler defined for type: {type(value)}")


def _scalar_attribute(value: np.ndarray) -> ir.Attribute:
  element = dtype_to_ir_type(value.dtype)
  if isinstance(element, ir.IntegerType):
    return ir.IntegerAttr.get(element, int(value))
  if isinstance(element, ir.FloatType):
    return ir.FloatAttr.get(element, float(value))
  raise TypeError(f"Unsupported scalar attribute type: {value.dtype}")


def custom_call(call_target_name: str, *, result_types: Sequence[ir.Type],
                operands: Sequence[ir.Value], backend_config: str | bytes | dict | None = "",
                has_side_effect: bool = False, result_shapes: Sequence[ir.Value] | None = None,
                called_computations: Sequence[str] = (), api_version: int = 2,
                operand_output_aliases: dict[int, int] | None = None,
                operand_layouts: Sequence[Sequence[int]] | None = None,
                result_layouts: Sequence[Sequence[int]] | None = None,
                extra_attributes: dict[str, ir.Attribute] | None = None) -> ir.OpView:
  """An `mhlo.custom_call` to `call_target_name`, as JAX's helper builds it.  A dict
  `backend_config` holds a typed-FFI handler's attributes (and makes the call one of API
  version 4); a string is an opaque configuration for older targets.  Layouts are
  minor-to-major, one sequence per operand or result."""
  if result_shapes is not None:
    raise NotImplementedError("custom_call(result_shapes=...): minijax has no dynamic shapes")
  if backend_config is None:
    backend_config = ""
  if isinstance(backend_config, dict):
    config: ir.Attribute = ir.DictAttr.get(
        {k: ir_attribute(v) for k, v in backend_config.items()})
    api_version = 4
  elif isinstance(backend_config, (str, bytes)):
    config = ir.StringAttr.get(backend_config)
  else:
    raise ValueError(f"custom_call backend_config unexpected type: {backend_config}")
  attributes = {
      "call_target_name": ir.StringAttr.get(call_target_name),
      "has_side_effect": ir.BoolAttr.get(bool(has_side_effect)),
      "backend_config": config,
      "api_version": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), api_version),
      "called_computations": ir.ArrayAttr.get(
          [ir.FlatSymbolRefAttr.get(name) for name in called_computations]),
  }
  if operand_output_aliases:
    several = len(result_types) > 1
    attributes["output_operand_aliases"] = ir.ArrayAttr.get([
        mhlo.OutputOperandAlias.get(output_tuple_indices=[out] if several else [],
                                    operand_index=operand, operand_tuple_indices=[])
        for operand, out in operand_output_aliases.items()])
  for name, layouts in (("operand_layouts", operand_layouts),
                        ("result_layouts", result_layouts)):
    if layouts is not None:
      attributes[name] = ir.ArrayAttr.get([
          ir.DenseIntElementsAttr.get(np.atleast_1d(np.asarray(layout, np.int64)),
                                      type=ir.IndexType.get()) for layout in layouts])
  attributes.update(extra_attributes or {})
  return mhlo.CustomCallOp.build_generic(results=list(result_types), operands=list(operands),
                                         attributes=attributes)


# ----------------------------------------------------------------------------- contexts

@dataclasses.dataclass
class ModuleContext:
  """What the lowering of one module shares: `host_callbacks` are the Python callables that
  jaxlib's callback custom calls name by index (compiled with the executable); `host_calls`
  are the value-returning host calls the module makes (the runtime waits for an executable
  that makes any, so that their exceptions reach the call)."""
  module: ir.Module
  host_callbacks: list = dataclasses.field(default_factory=list)
  # Objects the compiled executable must keep alive (the tap consumers its custom calls name).
  keepalives: list = dataclasses.field(default_factory=list)
  host_calls: list = dataclasses.field(default_factory=list)
  _functions: dict = dataclasses.field(default_factory=dict)
  _symbol_table: Any = None
  _names_used: set = dataclasses.field(default_factory=set)
  _locations: dict = dataclasses.field(default_factory=dict)
  _splats: dict = dataclasses.field(default_factory=dict)
  _types: dict = dataclasses.field(default_factory=dict)
  _rules: dict = dataclasses.field(default_factory=dict)
  # Several devices (see lowering/spmd.py): each device's position in the device
  # assignment (None for one device), the mesh naming the module's shardings (or None),
  # the manual region being lowered (a `spmd.ManualContext`, or None), the functions that
  # are the bodies of manual regions, and the channels handed out to collectives.
  positions: dict | None = None
  mesh: Any = None
  axis_context: Any = None
  region_bodies: set = dataclasses.field(default_factory=set)
  channels: int = 0
  # The jaxpr being emitted (see `updatable_in_place`): the values it was handed, those of
  # them its caller replaces by its outputs (a loop body's carries), and whether it runs
  # in a loop body.
  _scope_args: frozenset = frozenset()
  _scope_carried: frozenset = frozenset()
  _scope_in_loop: bool = False
  # The name of the op whose regions are being emitted, within the current function
  # (`jit(f)/outer/cond/branch_1_fun`): the ops inside are named after it, as in JAX; a
  # called function's ops are named from its own start.
  name_prefix: str = ""

  def unique_name(self, name: str) -> str:
    candidate, n = name, 0
    while candidate in self._names_used:
      n += 1
      candidate = f"{name}_{n}"
    self._names_used.add(candidate)
    return candidate

  def ir_type(self, aval) -> ir.Type:
    """`aval_to_ir_type(aval)`, built once per module (avals are interned)."""
    t = self._types.get(aval)
    if t is None:
      t = self._types[aval] = aval_to_ir_type(aval)
    return t

  def rule(self, primitive) -> tuple[LoweringRule, bool]:
    """The primitive's rule, and whether it takes splat literals."""
    found = self._rules.get(primitive)
    if found is None:
      rule = _find_rule(primitive)
      found = self._rules[primitive] = (rule, rule in _splat_literals)
    return found


@dataclasses.dataclass(slots=True)
class LoweringRuleContext:
  module_context: ModuleContext
  primitive: Any
  avals_in: Sequence[Any]
  avals_out: Sequence[Any]
  tokens_in: TokenSet
  tokens_out: TokenSet | None = None
  source_info: Any = None
  replaced_operands: dict[int, ir.Value] | None = None

  def set_tokens_out(self, tokens_out: TokenSet) -> None:
    self.tokens_out = tokens_out

  def replace_operand(self, index: int, value: ir.Value) -> None:
    """Makes the equations after this one read operand `index` as `value`, which must
    hold the same contents: a rule whose op returns an operand aliased in place (a tap)
    orders every later reader after the op, so XLA need not copy the operand for it."""
    if self.replaced_operands is None:
      self.replaced_operands = {}
    self.replaced_operands[index] = value


def updatable_in_place(mctx: ModuleContext, value: ir.Value) -> bool:
  """Whether an op in a loop body may alias `value` as an output (`output_operand_aliases`)
  without making XLA copy it first: a value the jaxpr being emitted computed itself (not a
  constant), or one of its loop carries (`jaxpr_subcomp`'s `carried`).  Not any other value
  it was handed: a function's argument (the caller's buffer), a loop invariant (which the
  loop passes on unchanged), a value of the enclosing jaxpr (which may read it later).
  Outside loops nothing is: XLA reuses buffers in place mostly for a loop's carry, and an
  alias would make every later reader of the value wait for the op."""
  if not mctx._scope_in_loop:
    return False
  if value in mctx._scope_args:
    return value in mctx._scope_carried
  owner = value.owner
  if isinstance(owner, ir.Block):  # a block argument not handed to this jaxpr
    return False
  owner = owner.operation
  return (owner.block == ir.InsertionPoint.current.block
          and not owner.name.endswith(".constant"))


# ----------------------------------------------------------------------------- lowering

@dataclasses.dataclass
class LoweringResult:
  module: ir.Module
  ordered_effects: tuple
  host_callbacks: list
  in_avals: list
  out_avals: list
  keepalives: list = dataclasses.field(default_factory=list)
  host_calls: list = dataclasses.field(default_factory=list)
  runtime_tokens: bool = True  # `main` takes and returns one token per ordered effect


def lower_jaxpr_to_module(closed_jaxpr: ClosedJaxpr, *, name: str = "main",
                          donated_args: Sequence[bool] = (),
                          device_assignment: Sequence[Any] | None = None,
                          arg_shardings: Sequence[str | None] | None = None,
                          result_shardings: Sequence[str | None] | None = None,
                          runtime_tokens: bool = True, mesh: Any = None) -> LoweringResult:
  """Lowers a closed jaxpr to a module whose public `main` takes and returns tokens first
  (with `runtime_tokens`; without, `main` makes its tokens itself, `mhlo.create_token`,
  and returns only the arrays: its order across calls is then the runtime's business).

  With a `device_assignment` the module is one SPMD program for all its devices
  (`mhlo.num_partitions`; one device too, for a `shard_map` over a mesh of one), its arguments and results annotated with the HLO text of
  their shardings (`arg_shardings`, `result_shardings`; None leaves one to XLA); `mesh` is
  the mesh that names those shardings, when one does."""
  if needs_discharge(closed_jaxpr.effects) or any(
      type(a) is AbstractRef for a in closed_jaxpr.in_avals):
    raise ValueError(
        f"cannot lower {name}: its jaxpr uses mutable array references (effects "
        f"{sorted(map(repr, closed_jaxpr.effects))}, inputs "
        f"{[a.str_short() for a in closed_jaxpr.in_avals]}); refs must be discharged before "
        "lowering (minijax.effects.discharge_state)")
  check_lowerable(closed_jaxpr.effects)
  start = time.perf_counter()
  with ir_context(), ir.Location.unknown():
    module = ir.Module.create()
    module.operation.attributes["sym_name"] = ir.StringAttr.get(f"jit_{name}")
    mctx = ModuleContext(module)
    mctx._names_used.add("main")
    if device_assignment is not None:
      mctx.positions = {d: i for i, d in enumerate(device_assignment)}
      mctx.mesh = mesh
    i32 = ir.IntegerType.get_signless(32)  # (as JAX's modules say, for one device too)
    module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(
        i32, 1 if device_assignment is None else len(device_assignment))
    module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, 1)
    fn = lower_jaxpr_to_fun(mctx, "main", closed_jaxpr, public=True, donated_args=donated_args,
                            internal_tokens=not runtime_tokens, name_prefix=f"jit({name})")
    num_tokens = len(ordered_effects(closed_jaxpr.effects)) if runtime_tokens else 0
    if mctx.positions is not None:
      _set_sharding_attrs(fn, num_tokens, arg_shardings, result_shardings)
    paths = getattr(closed_jaxpr.jaxpr.debug_info, "result_paths", None)
    if paths is not None and len(paths) == len(closed_jaxpr.out_avals):
      _add_attrs(fn, "res", num_tokens,
                 [{"jax.result_info": ir.StringAttr.get(p)} for p in paths])
  seconds = time.perf_counter() - start
  monitoring.record_event_duration_secs("/jax/core/compile/jaxpr_to_mlir_module_duration",
                                        seconds, fun_name=f"jit({name})")
  level = compile_log_level()
  if level:
    logging.getLogger("minijax").log(
        level, "Finished jaxpr to MLIR module conversion jit(%s) in %.9f sec", name, seconds)
  return LoweringResult(module, ordered_effects(closed_jaxpr.effects), mctx.host_callbacks,
                        closed_jaxpr.in_avals, closed_jaxpr.out_avals,
                        keepalives=mctx.keepalives, host_calls=mctx.host_calls,
                        runtime_tokens=runtime_tokens)


def lower_jaxpr_to_fun(mctx: ModuleContext, name: str, closed_jaxpr: ClosedJaxpr, *,
                       public: bool = False, donated_args: Sequence[bool] = (),
                       effects: Sequence[Any] | None = None,
                       internal_tokens: bool = False, name_prefix: str = "") -> func_dialect.FuncOp:
  """Emits `func.func @name(tokens..., args...) -> (tokens..., outs...)` (with
  `internal_tokens`, `@name(args...) -> (outs...)`, the tokens made inside); its ops'
  location names start with `name_prefix`."""
  jaxpr = closed_jaxpr.jaxpr
  effects = ordered_effects(jaxpr.effects) if effects is None else tuple(effects)
  made_inside = effects if internal_tokens else ()
  if internal_tokens:
    effects = ()
  n = len(effects)
  in_types = [token_type()] * n + [aval_to_ir_type(a) for a in jaxpr.in_avals]
  out_types = [token_type()] * n + [aval_to_ir_type(v.aval) for v in jaxpr.outvars]
  with ir.InsertionPoint(mctx.module.body):
    fn = func_dialect.FuncOp(name, ir.FunctionType.get(in_types, out_types))
  fn.attributes["sym_visibility"] = ir.StringAttr.get("public" if public else "private")
  if donated_args and any(type(d) is int or d for d in donated_args):  # int: result index
    _set_aliasing_attrs(fn, jaxpr, donated_args, n)
  block = fn.add_entry_block(_argument_locations(jaxpr, n) if public else None)
  with ir.InsertionPoint(block):
    if made_inside:
      tokens = TokenSet.from_lists(made_inside, [mhlo.CreateTokenOp().result
                                                 for _ in made_inside])
    else:
      tokens = TokenSet.from_lists(effects, list(block.arguments[:n]))
    with _names_after(mctx, name_prefix):
      outs, tokens_out = lower_closed_jaxpr(mctx, closed_jaxpr, tokens, *block.arguments[n:])
    func_dialect.ReturnOp([*(() if made_inside else tokens_out.tokens()), *outs])
  return fn


def _argument_locations(jaxpr: Jaxpr, num_tokens: int) -> list[ir.Location] | None:
  """Locations naming a public function's arguments after the traced function's (`loc("x")`,
  `loc("params['w']")`), as JAX's modules do; None when the jaxpr does not name them."""
  names = getattr(jaxpr.debug_info, "arg_names", None)
  if names is None or len(names) != len(jaxpr.invars):
    return None
  unknown = ir.Location.unknown()
  return [unknown] * num_tokens + [ir.Location.name(n) if n else unknown for n in names]


def _to_numpy(x):
  return np.asarray(x)


def _add_attrs(fn, which: str, offset: int, entries) -> None:
  """Merges `entries` (a dict of attributes, or None, per value) into the attributes of
  `fn`'s arguments (`which="arg"`) or results (`"res"`), from position `offset` on (past
  the tokens)."""
  count = len(fn.type.inputs if which == "arg" else fn.type.results)
  current = list(fn.attributes[f"{which}_attrs"]) if f"{which}_attrs" in fn.attributes \
      else [None] * count
  merged = [{named.name: named.attr for named in ir.DictAttr(a)} if a is not None else {}
            for a in current]
  for i, entry in enumerate(entries):
    merged[offset + i].update(entry or {})
  value = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in merged])
  if which == "arg":
    fn.arg_attrs = value
  else:
    fn.result_attrs = value


def _set_sharding_attrs(fn, num_tokens: int, arg_shardings, result_shardings) -> None:
  """Adds `mhlo.sharding` to the array arguments and results of `main` (tokens excluded)."""
  def entries(shardings):
    return [None if text is None else {"mhlo.sharding": ir.StringAttr.get(text)}
            for text in shardings or ()]
  _add_attrs(fn, "arg", num_tokens, entries(arg_shardings))
  _add_attrs(fn, "res", num_tokens, entries(result_shardings))


def _set_aliasing_attrs(fn, jaxpr: Jaxpr, donated_args, num_tokens: int) -> None:
  """Marks donated arguments with the result they may reuse: the first free result of
  their type, or the result given by index when a `donated_args` entry is an int (a
  discharged ref's final value, aliased to the ref's buffer)."""
  explicit = {d for d in donated_args if type(d) is int}
  available: dict[Any, list[int]] = {}
  for i, v in enumerate(jaxpr.outvars):
    if i not in explicit:
      available.setdefault(v.aval.strip_weak_type(), []).append(num_tokens + i)
  arg_attrs = [ir.DictAttr.get({}) for _ in range(num_tokens)]
  unusable = []
  for donated, aval in zip(donated_args, jaxpr.in_avals):
    if type(donated) is int:
      outs = [num_tokens + donated]
    else:
      outs = available.get(aval.strip_weak_type()) if donated else None
    if outs:
      attr = {"tf.aliasing_output": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), outs.pop(0))}
      arg_attrs.append(ir.DictAttr.get(attr))
    else:
      arg_attrs.append(ir.DictAttr.get({}))
      if donated is True:
        unusable.append(aval)
  fn.arg_attrs = ir.ArrayAttr.get(arg_attrs)
  if unusable:  # as JAX warns: the argument stays alive, no result reuses its buffer
    names = ", ".join(f"ShapedArray({a.dtype.name}[{','.join(map(str, a.shape))}])"
                      for a in unusable)
    warnings.warn(f"Some donated buffers were not usable: {names}."
                  "\nSee an explanation at "
                  "https://docs.jax.dev/en/latest/faq.html#buffer-donation.", stacklevel=2)


def lower_called_function(mctx: ModuleContext, name: str, closed_jaxpr: ClosedJaxpr,
                          effects: Sequence[Any]) -> func_dialect.FuncOp:
  """The private function for `closed_jaxpr`, emitted once per module and reused."""
  key = (id(closed_jaxpr.jaxpr), tuple(map(id, closed_jaxpr.consts)), tuple(effects),
         mctx.axis_context)
  cached = mctx._functions.get(key)
  if cached is None:
    fn = lower_jaxpr_to_fun(mctx, mctx.unique_name(name), closed_jaxpr, effects=effects)
    cached = mctx._functions[key] = (fn, closed_jaxpr)
  return cached[0]


def call_lowered_function(ctx: LoweringRuleContext, name: str, closed_jaxpr: ClosedJaxpr,
                          *args: ir.Value) -> list[ir.Value]:
  """`func.call`s the function for `closed_jaxpr`, threading the call's tokens."""
  effects = ordered_effects(closed_jaxpr.effects)
  fn = lower_called_function(ctx.module_context, name, closed_jaxpr, effects)
  tokens_in = ctx.tokens_in.subset(effects)
  call = func_dialect.CallOp(fn, [*tokens_in.tokens(), *args])
  results = list(call.results)
  if effects:
    ctx.set_tokens_out(TokenSet.from_lists(effects, results[:len(effects)]))
  return results[len(effects):]


def op_name(mctx: ModuleContext, eqn: JaxprEqn) -> str:
  """JAX's name for the op of `eqn`: the enclosing op's, the equation's name stack and its
  primitive (`jit(f)/model/jvp(layer)/sin`; a call is named after its function, `jit(g)`)."""
  primitive = eqn.primitive.name
  if primitive == "jit" and "name" in eqn.params:
    primitive = f"jit({eqn.params['name']})"
  info = eqn.source_info
  stack = str(info.name_stack) if info is not None and info.name_stack else ""
  return "/".join(part for part in (mctx.name_prefix, stack, primitive) if part)


def _location(mctx: ModuleContext, eqn: JaxprEqn, name: str) -> ir.Location:
  info = eqn.source_info
  key = (name, info.file, info.line) if info is not None else name
  loc = mctx._locations.get(key)
  if loc is None:
    if info is None:
      loc = ir.Location.name(name)
    else:
      loc = ir.Location.name(name, childLoc=ir.Location.file(info.file, info.line, 0))
    mctx._locations[key] = loc
  return loc


def named_region(mctx: ModuleContext, name: str):
  """Names the ops of a region being emitted after it (`cond/branch_0_fun`, `while/body`)."""
  outer = mctx.name_prefix
  return _names_after(mctx, f"{outer}/{name}" if outer else name)


@contextlib.contextmanager
def _names_after(mctx: ModuleContext, prefix: str):
  """The ops emitted in the block are named after `prefix`."""
  outer, mctx.name_prefix = mctx.name_prefix, prefix
  try:
    yield
  finally:
    mctx.name_prefix = outer


_NO_TOKENS = TokenSet()


def jaxpr_subcomp(mctx: ModuleContext, jaxpr: Jaxpr, tokens: TokenSet,
                  consts: Sequence[ir.Value], *args: ir.Value,
                  carried: Sequence[ir.Value] = ()) -> tuple[list[ir.Value], TokenSet]:
  """Emits the ops of `jaxpr` at the current insertion point; returns outputs and tokens.
  `carried` are the arguments the caller replaces by the outputs (a loop body's carries),
  which ops may update in place (`updatable_in_place`)."""
  scope = mctx._scope_args, mctx._scope_carried, mctx._scope_in_loop
  mctx._scope_args = frozenset((*consts, *args))
  mctx._scope_carried = frozenset(carried)
  mctx._scope_in_loop = mctx._scope_in_loop or bool(carried)
  try:
    return _emit_eqns(mctx, jaxpr, tokens, consts, args)
  finally:
    mctx._scope_args, mctx._scope_carried, mctx._scope_in_loop = scope


def _emit_eqns(mctx: ModuleContext, jaxpr: Jaxpr, tokens: TokenSet,
               consts: Sequence[ir.Value], args: Sequence[ir.Value]):
  env: dict[Any, ir.Value] = {}

  def read(atom):
    if type(atom) is Literal:
      return ir_constant(atom.val, atom.aval.dtype)
    return env[atom]

  if len(args) != len(jaxpr.invars):
    raise ValueError(f"jaxpr_subcomp: {len(jaxpr.invars)} inputs expected, got {len(args)}")
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    rule, splat = mctx.rule(eqn.primitive)
    eqn_effects = ordered_effects(eqn.effects) if eqn.effects else ()
    avals_out = [v.aval for v in eqn.outvars]
    avals_in = [a.aval for a in eqn.invars]
    ctx = LoweringRuleContext(mctx, eqn.primitive, avals_in, avals_out,
                              tokens.subset(eqn_effects) if eqn_effects else _NO_TOKENS,
                              None, eqn.source_info)
    name = op_name(mctx, eqn)
    with _location(mctx, eqn, name), _names_after(mctx, name):  # (regions inside: after it)
      try:
        shape = avals_out[0].shape if splat else ()
        if shape:
          operands = []
          for i, atom in enumerate(eqn.invars):
            if atom.aval.shape == shape:
              operands.append(read(atom))
            elif type(atom) is Literal:
              operands.append(_splat_literal(mctx, atom, shape))
              avals_in[i] = atom.aval.update(shape=shape)
            elif atom.aval.shape:  # size-1 axes broadcast (rank-0 operands: the rule's)
              operands.append(broadcast_to(read(atom), atom.aval, shape))
              avals_in[i] = atom.aval.update(shape=shape)
            else:
              operands.append(read(atom))
        else:
          operands = map(read, eqn.invars)
        out = rule(ctx, *operands, **eqn.params)
      except Exception as e:
        e.add_note(f"while lowering the equation '{eqn.primitive}'"
                   + (f" from {eqn.source_info}" if eqn.source_info else ""))
        raise
    if ctx.replaced_operands:
      for i, value in ctx.replaced_operands.items():
        if type(eqn.invars[i]) is not Literal:
          env[eqn.invars[i]] = value
    if eqn_effects or ctx.tokens_out is not None:
      _check_tokens_out(ctx, eqn_effects)
      if eqn_effects:
        tokens = tokens.update_tokens(ctx.tokens_out)
    if not eqn.primitive.multiple_results and len(eqn.outvars) == 1:
      env[eqn.outvars[0]] = out
      continue
    outs = list(out) if eqn.primitive.multiple_results else [out]
    if len(outs) != len(eqn.outvars):
      raise ValueError(f"lowering rule for '{eqn.primitive}' returned {len(outs)} values "
                       f"for {len(eqn.outvars)} outputs")
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars], tokens


def _splat_literal(mctx: ModuleContext, literal: Literal, shape) -> ir.Value:
  # a literal recurs across a jaxpr (the 1.0 of every `x + 1.0`): its attribute is built once
  value = np.asarray(literal.val, literal.aval.dtype)
  key = (value.dtype, value.tobytes(), shape)
  attr = mctx._splats.get(key)
  if attr is None:
    if 0 in shape:
      return ir_constant(np.zeros(shape, value.dtype))
    attr = mctx._splats[key] = _dense_attr(value, shape)
  return ir.Operation.create("mhlo.constant", results=[attr.type],
                             attributes={"value": attr}).result


def emit_elementwise(ctx: LoweringRuleContext, op_name: str, operands) -> ir.Value:
  """The op `op_name` (no attributes, one result of the equation's output type) built
  directly: the dialect's generated builder would infer a type we already know."""
  return ir.Operation.create(op_name, results=[ctx.module_context.ir_type(ctx.avals_out[0])],
                             operands=operands).result


def _check_tokens_out(ctx: LoweringRuleContext, eqn_effects: tuple) -> None:
  if eqn_effects and ctx.tokens_out is None:
    raise ValueError(
        f"lowering rule for '{ctx.primitive}' has ordered effects {list(eqn_effects)} but "
        "did not call ctx.set_tokens_out(...) with their new tokens")
  if ctx.tokens_out is not None and tuple(ctx.tokens_out.effects()) != eqn_effects:
    raise ValueError(
        f"lowering rule for '{ctx.primitive}' set output tokens for "
        f"{list(ctx.tokens_out.effects())}, but the equation's ordered effects are "
        f"{list(eqn_effects)}")


# ----------------------------------------------------------------------------- helpers for rules

def lower_closed_jaxpr(mctx: ModuleContext, closed: ClosedJaxpr, tokens: TokenSet,
                       *args: ir.Value, carried: Sequence[ir.Value] = ()
                       ) -> tuple[list[ir.Value], TokenSet]:
  """Emits `closed` at the current insertion point (in a region or not), its constants as
  MHLO constants, threading `tokens`; returns its outputs and the final tokens.  `carried`:
  as for `jaxpr_subcomp`."""
  consts = [ir_constant(_to_numpy(c)) for c in closed.consts]
  return jaxpr_subcomp(mctx, closed.jaxpr, tokens, consts, *args, carried=carried)


def lower_call_inline(ctx: LoweringRuleContext, closed: ClosedJaxpr,
                      *args: ir.Value) -> list[ir.Value]:
  """The lowering of a call-like equation whose body `closed` is emitted inline (remat,
  custom derivatives): the body reads the equation's tokens and hands back the new ones."""
  outs, tokens = lower_closed_jaxpr(ctx.module_context, closed, ctx.tokens_in, *args)
  if len(ctx.tokens_in):
    ctx.set_tokens_out(tokens)
  return outs
