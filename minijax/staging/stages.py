"""The stages of ahead-of-time compilation, as JAX's `jax.stages`: `Traced`, `Lowered`,
`Compiled`.

`jit(f).trace(*args)` traces once (`Traced`: the jaxpr), `.lower()` emits the MHLO module
(`Lowered`) and `.compile(compiler_options=...)` compiles it (`Compiled`), lowering once.
Each stage knows the call signature it was made for: `args_info` (a pytree of `ArgInfo`,
one per argument leaf, in the structure of `(args, kwargs)` with static arguments left
out), from which `in_tree`, `in_avals` and `donate_argnums` follow, and `out_info`.  A
`Compiled` called with arguments of another structure or type raises a `TypeError` that
lists the mismatches, and refuses tracers: a transformation would change the signature it
was compiled for.

`as_text(dialect=)` / `compiler_ir(dialect=)` give the module as minijax builds it
(`"mhlo"`, the default), as StableHLO (`"stablehlo"`) or as XLA's HLO (`"hlo"`);
`cost_analysis()` is XLA's estimate, `memory_analysis()` the compiled program's sizes and
`runtime_executable()` jaxlib's loaded executable.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any

from jaxlib import _jax
from jaxlib.mlir import ir

from minijax.tree_util import internal as tree_util
from minijax.core.avals import ShapeDtypeStruct, get_aval
from minijax.core.trace import Tracer
from minijax.interpreters.discharge import jaxpr_has_state
from minijax.lowering.context import ir_context
from minijax.lowering.mlir import lower_jaxpr_to_module
from minijax.core import sharding as sharding_lib
from minijax.runtime import backend
from minijax.core.layout import Format, Layout
from minijax.staging import compiler, sharded

__all__ = ["ArgInfo", "Traced", "Lowered", "Compiled"]

_DIALECTS = ("mhlo", "stablehlo", "hlo")


@dataclasses.dataclass(frozen=True)
class ArgInfo:
  """One argument leaf of a staged call: its abstract value and whether it is donated."""
  _aval: Any
  donated: bool

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)


class _Stage:
  """What every stage knows of the call it was made for: the trace, the function's name,
  where it runs (a device, or the devices of a `placement`), the argument tree and names."""
  _no_kwargs = False  # (JAX's attribute: whether the call takes no keyword arguments)
  _platforms = ("cpu",)  # what a Lowered was lowered for

  def __init__(self, traced, name: str, device, placement=None, in_tree=None, names=None):
    self._traced = traced
    self._name = name
    self._device = device
    self._placement = placement
    self._in_tree = in_tree
    self._names = names

  @property
  def args_info(self):
    """`(args, kwargs)` with an `ArgInfo` per array leaf (static arguments left out)."""
    n = len(self._traced.consts)
    avals = self._traced.jaxpr.in_avals[n:]
    donated = self._traced.donated[n:] or (False,) * len(avals)
    return self._in_tree.unflatten([ArgInfo(a, d) for a, d in zip(avals, donated)])

  @property
  def in_tree(self):
    return self._in_tree

  @property
  def in_avals(self):
    return tree_util.tree_map(lambda info: info._aval, self.args_info,
                              is_leaf=lambda x: isinstance(x, ArgInfo))

  @property
  def donate_argnums(self) -> tuple[int, ...]:
    """The flat indices of the donated argument leaves."""
    n = len(self._traced.consts)
    return tuple(i for i, d in enumerate(self._traced.donated[n:]) if d)

  @property
  def out_tree(self):
    return self._traced.out_tree

  @property
  def out_info(self):
    """The results' shapes and dtypes, a pytree of `ShapeDtypeStruct`s."""
    return self.out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype)
                                    for a in self._traced.jaxpr.out_avals])


class Traced(_Stage):
  """`jit(f).trace(*args)`: `jaxpr` is the ClosedJaxpr `f` traced to (its constants hoisted
  to leading inputs); `lower()` lowers it without tracing again."""

  fun_name = property(lambda self: self._name)

  @property
  def jaxpr(self):
    return self._traced.jaxpr

  @property
  def out_info(self):
    """The results' shapes, dtypes and weak types, a pytree of `ShapeDtypeStruct`s."""
    return self.out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                    for a in self._traced.jaxpr.out_avals])

  def lower(self, *, lowering_platforms=None) -> Lowered:
    """The module; `lowering_platforms=("tpu",)` (one platform) lowers for another
    platform as text only: minijax's lowering rules are the CPU's, which hold for any
    platform unless they emit custom calls (refused), and it compiles for the CPU only."""
    platforms = ("cpu",) if lowering_platforms is None else tuple(lowering_platforms)
    if len(platforms) != 1 or platforms[0] not in _PLATFORMS:
      raise NotImplementedError(
          f"lowering for platforms {lowering_platforms}: minijax lowers for one of "
          f"{', '.join(map(repr, _PLATFORMS))} at a time")
    lowered = Lowered(self._traced, self.fun_name, self._device, self._placement,
                      self._in_tree, self._names)
    if platforms != ("cpu",):
      lowered._platforms = platforms
      if "custom_call" in lowered.as_text():
        raise NotImplementedError(
            f"lowering {self.fun_name} for {platforms[0]!r}: its module makes custom calls, "
            "which minijax lowers for the CPU only; lower it for ('cpu',)")
    return lowered

  def __repr__(self):
    return f"Traced({self.fun_name})"


_PLATFORMS = ("cpu", "tpu", "cuda", "rocm")


def _check_dialect(dialect) -> str:
  dialect = "mhlo" if dialect is None else dialect
  if dialect not in _DIALECTS:
    raise ValueError(f"unknown dialect {dialect!r}: expected one of {', '.join(_DIALECTS)}")
  return dialect


class Lowered(_Stage):
  """`jit(f).lower(*args)`: the MHLO module, ready to compile (for one device, or for the
  devices of a `placement`)."""

  def __init__(self, traced, name: str, device, placement=None, in_tree=None, names=None):
    super().__init__(traced, name, device, placement, in_tree, names)
    if placement is not None:
      self._result = sharded.lower(traced.jaxpr, name, traced.donated, placement)
    elif jaxpr_has_state(traced.jaxpr.jaxpr):  # lowered discharged, refs aliased in place
      pure, donated, _ = compiler.discharged_for_call(traced.jaxpr, traced.donated)
      deferred = compiler.deferred_form(pure, device)
      if deferred is not None:
        donated = compiler.deferred_donation(donated, deferred[2])
      self._result = lower_jaxpr_to_module(pure if deferred is None else deferred[0],
                                           name=name, donated_args=donated)
    else:  # taps deferred (`tap_delivery`) are outputs after the function's own
      deferred = compiler.deferred_form(traced.jaxpr, device)
      donated = traced.donated
      if deferred is not None:
        donated = compiler.deferred_donation(donated, deferred[2])
      self._result = lower_jaxpr_to_module(
          traced.jaxpr if deferred is None else deferred[0], name=name,
          donated_args=donated, runtime_tokens=compiler.runtime_tokens_wanted())

  def for_signature(self, in_tree, out_tree) -> Lowered:
    """This lowering, compiled to be called with arguments of structure `in_tree` and to
    return `out_tree` (how `pmap` wraps its program of flat arguments and results)."""
    lowered = copy.copy(self)
    t = self._traced
    lowered._traced = type(t)(t.jaxpr, t.consts, out_tree, t.donated)
    lowered._in_tree = in_tree
    lowered._names = [f"flat_args[{i}]" for i in range(in_tree.num_leaves)]
    return lowered

  def _hlo(self):
    return _jax.mlir.mlir_module_to_xla_computation(
        str(self._result.module), use_tuple_args=False, return_tuple=False)

  def _stablehlo(self) -> ir.Module:
    module = self._result.module
    with ir_context():
      return ir.Module.parse(_jax.mlir.mhlo_to_stablehlo(module.operation.get_asm(binary=True)))

  def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
    dialect = _check_dialect(dialect)
    if dialect == "hlo":
      return self._hlo().as_hlo_text()
    module = self._stablehlo() if dialect == "stablehlo" else self._result.module
    return module.operation.get_asm(enable_debug_info=debug_info)

  def compiler_ir(self, dialect: str | None = None):
    dialect = _check_dialect(dialect)
    if dialect == "hlo":
      return self._hlo()
    return self._stablehlo() if dialect == "stablehlo" else self._result.module

  def cost_analysis(self) -> dict:
    """XLA's estimate (flops, bytes accessed, ...) for the module before optimization."""
    return _jax.hlo_module_cost_analysis(backend.get_client(), self._hlo().get_hlo_module())

  def compile(self, compiler_options: dict[str, Any] | None = None) -> Compiled:
    """Compiles the module; `compiler_options` are XLA's (`{"xla_...": value}`), each
    compile with options giving a new executable."""
    if self._platforms != ("cpu",):
      raise ValueError(f"{self._name} was lowered for {self._platforms[0]!r}, and minijax "
                       "compiles for the CPU only: lower it without lowering_platforms")
    traced, options = self._traced, dict(compiler_options or {})
    if self._placement is not None:
      fn = sharded.compiled_call(traced.jaxpr, self._name, traced.donated, self._placement,
                                 lowered=self._result, compiler_options=options)
    elif options:
      fn = compiler.compile_jaxpr(traced.jaxpr, device=self._device, name=self._name,
                                  donated_args=traced.donated, lowered=self._result,
                                  compiler_options=options)
    else:
      fn = compiler.compiled_call(traced.jaxpr, self._name, traced.donated, self._device,
                                  lowered=self._result)
    return Compiled(fn, traced, self._in_tree, self._names, self._device, self._placement)


class Compiled(_Stage):
  """`jit(f).lower(*args).compile()`: the executable, callable like `f` with arguments of
  the structure and types it was compiled for.  `input_shardings`/`output_shardings` say
  where its arguments and results live, `input_formats`/`output_formats` add the layouts
  XLA chose."""

  def __init__(self, fn, traced, in_tree=None, names=None, device=None, placement=None):
    self._fn = fn
    self._traced = traced
    self._in_tree = in_tree
    self._names = names
    self._device = device
    self._placement = placement

  def _shardings(self) -> tuple[list, list]:
    """The shardings of the flat arguments (constants left out) and of the flat results."""
    n_in, n_out = len(self._traced.jaxpr.in_avals), len(self._traced.jaxpr.out_avals)
    n_consts = len(self._traced.consts)
    if self._placement is None:
      one = sharding_lib.SingleDeviceSharding(self._device or backend.default_device())
      return [one] * (n_in - n_consts), [one] * n_out
    p = self._placement
    ins = list(getattr(self._fn, "in_shardings", p.in_shardings))
    outs = list(getattr(self._fn, "out_shardings", p.out_shardings))
    fallback = sharding_lib.replicated_like(ins[0]) if ins else None
    return ins[n_consts:], [s if s is not None else fallback for s in outs]

  def _layouts(self) -> tuple[list, list]:
    """The layouts of the flat arguments and results: the executable's when its parameters
    and results are just those (no tokens), else the row-major layout XLA gives every array
    minijax passes it."""
    in_avals = self._traced.jaxpr.in_avals[len(self._traced.consts):]
    out_avals = self._traced.jaxpr.out_avals
    exe = self.runtime_executable()
    if exe is not None:
      params, results = exe.get_parameter_layouts(), exe.get_output_layouts()
      if len(params) == len(self._traced.jaxpr.in_avals) and len(results) == len(out_avals):
        return ([Layout.from_pjrt_layout(p) for p in params[len(params) - len(in_avals):]],
                [Layout.from_pjrt_layout(r) for r in results])
    row_major = lambda a: Layout(tuple(range(a.ndim)))  # noqa: E731
    return list(map(row_major, in_avals)), list(map(row_major, out_avals))

  @property
  def input_shardings(self):
    return self._in_tree.unflatten(self._shardings()[0])

  @property
  def output_shardings(self):
    return self.out_tree.unflatten(self._shardings()[1])

  @property
  def input_formats(self):
    return self._in_tree.unflatten(map(Format, self._layouts()[0], self._shardings()[0]))

  @property
  def output_formats(self):
    return self.out_tree.unflatten(map(Format, self._layouts()[1], self._shardings()[1]))

  @property
  def out_info(self):
    """The results' shapes, dtypes, shardings and layouts, a pytree of `ShapeDtypeStruct`s."""
    return self.out_tree.unflatten([
        ShapeDtypeStruct(a.shape, a.dtype, sharding=Format(layout, s))
        for a, layout, s in zip(self._traced.jaxpr.out_avals, self._layouts()[1],
                                self._shardings()[1])])

  def as_text(self) -> str | None:
    """XLA's optimized HLO (None when nothing was compiled: the jaxpr has no equations)."""
    return self._fn.as_text() if hasattr(self._fn, "as_text") else None

  def cost_analysis(self) -> dict | None:
    return self._fn.cost_analysis() if hasattr(self._fn, "cost_analysis") else None

  def memory_analysis(self):
    exe = self.runtime_executable()
    return exe.get_compiled_memory_stats() if exe is not None else None

  def runtime_executable(self):
    """jaxlib's loaded executable (None when nothing was compiled)."""
    return getattr(self._fn, "_exe", None)

  def __call__(self, *args, **kwargs):
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    if self._in_tree is not None and in_tree != self._in_tree:
      raise TypeError("Function compiled with input pytree does not match the input pytree "
                      f"it was called with: compiled for {self._in_tree}, called with "
                      f"{in_tree}")
    for x in flat:
      if isinstance(x, Tracer):
        raise TypeError("Cannot apply JAX transformations to a function lowered and "
                        "compiled for a particular signature. Detected argument of Tracer "
                        f"type {type(x)}.")
    self._check_types(flat)
    return self._traced.out_tree.unflatten(self._fn(*self._traced.consts, *flat))

  def _check_types(self, flat) -> None:
    expected = self._traced.jaxpr.in_avals[len(self._traced.consts):]
    if len(expected) != len(flat):
      raise TypeError(f"Computation compiled for {len(expected)} inputs but called with "
                      f"{len(flat)}")
    names = self._names if self._names and len(self._names) == len(flat) else None
    errors = []
    for i, (want, x) in enumerate(zip(expected, flat)):
      got = get_aval(x)
      if (want.shape, want.dtype) != (got.shape, got.dtype):
        name = names[i] if names else f"flat argument {i}"
        errors.append(f"Argument '{name}' compiled with {want.str_short()} and called with "
                      f"{got.str_short()}")
    if errors:
      counted = "The" if len(errors) < 5 else f"The first 5 of {len(errors)}"
      raise TypeError("Argument types differ from the types for which this computation was "
                      "compiled. Perhaps you are calling the compiled executable with a "
                      "different enable_x64 mode than when it was AOT compiled? "
                      f"{counted} mismatches are:\n" + "\n".join(errors[:5]))
