"""`minijax.ffi`: calling compiled foreign functions (XLA FFI handlers), as `jax.ffi` does.

    minijax.ffi.register_ffi_target("my_op", minijax.ffi.pycapsule(lib.MyOp))
    y = minijax.ffi.ffi_call("my_op", minijax.ShapeDtypeStruct(x.shape, x.dtype))(x, eps=1e-6)

A handler written against XLA's FFI headers (`include_dir()`) is registered with jaxlib's
registry of custom-call targets; `ffi_call(target, results)` returns a function whose calls
bind `ffi_call_p`, lowered to one `mhlo.custom_call` of API version 4 whose
`backend_config` carries the call's keyword arguments as the handler's attributes (typed as
`extend.mlir.ir_attribute` types them: `np.int32(1)` is an i32, a Python int an i64).
Outside `jit` the call runs as a one-equation program, as every primitive does.

Layouts are given major-to-minor, per operand and result (`None` is row-major); outputs may
alias inputs (`input_output_aliases`).  A call with `has_side_effect=True` carries the
unordered `FfiEffect`, so it runs even when its results are unused.  Differentiating a call
raises JAX's ValueError (wrap it in `custom_jvp` or `custom_vjp`); `vmap` follows
`vmap_method` as `pure_callback` does (see `minijax.callbacks.pure`).  `ffi_lowering` makes
the same custom call a lowering rule for a primitive of the user's own
(`extend.mlir.register_lowering`).
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Callable, Mapping, Sequence

import jaxlib
import numpy as np
from jaxlib import xla_client

from minijax.lax.linalg import lapack
from minijax.callbacks import common
from minijax.core.avals import AbstractToken, ShapedArray, abstract_token, get_aval
from minijax.core.effects import Effect
from minijax.core.layout import Layout
from minijax.core.primitive import Primitive
from minijax.extend import mlir as ext_mlir
from minijax.interpreters import ad, batching
from minijax.lowering import mlir

__all__ = ["build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir",
           "pycapsule", "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id", "FfiEffect", "ffi_call_p"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)

# ----------------------------------------------------------------------------- registration

def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
  """Registers `fn` (a PyCapsule holding the handler, or a dict of them by FFI stage) as the
  custom-call target `name`; API version 1 is the typed FFI, 0 the older custom calls."""
  xla_client.register_custom_call_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
  raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration: Mapping[str, Any],
                      platform: str = "cpu") -> None:
  """Registers a type for FFI handlers' state: `type_registration` holds a PyCapsule of its
  `XLA_FFI_TypeId` (`type_id`) and optionally one of its `XLA_FFI_TypeInfo`."""
  xla_client.register_custom_type(name, type_registration, platform=platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
  xla_client.register_custom_call_as_batch_partitionable(name)


def pycapsule(funcptr) -> Any:
  """A PyCapsule holding the ctypes function pointer `funcptr` (of a library loaded with
  `ctypes.cdll.LoadLibrary`), as `register_ffi_target` takes handlers."""
  destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
  new = ctypes.pythonapi.PyCapsule_New
  new.restype = ctypes.py_object
  new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
  return new(funcptr, None, destructor(0))


def include_dir() -> str:
  """The directory of the XLA FFI headers that jaxlib ships (`xla/ffi/api/ffi.h`)."""
  return os.path.join(os.path.dirname(os.path.abspath(jaxlib.__file__)), "include")


# ----------------------------------------------------------------------------- lowering

LayoutOptions = Sequence[int] | Layout | None


def _shape(aval) -> tuple[int, ...]:
  return () if isinstance(aval, AbstractToken) else tuple(aval.shape)


def _minor_to_major(aval, layout: LayoutOptions = None) -> tuple[int, ...]:
  """`layout` (minor-to-major already when a sequence) in XLA's minor-to-major order."""
  if layout is None:
    return tuple(reversed(range(len(_shape(aval)))))
  if isinstance(layout, Layout):
    if layout.tiling:
      raise ValueError("The FFI does not support layouts with tiling")
    return tuple(reversed(layout.major_to_minor))
  return tuple(layout)


def build_ffi_lowering_function(call_target_name: str, *,
                                operand_layouts: Sequence[LayoutOptions] | None = None,
                                result_layouts: Sequence[LayoutOptions] | None = None,
                                backend_config: Mapping[str, Any] | str | None = None,
                                skip_ffi_layout_processing: bool = False,
                                **lowering_args: Any) -> Callable[..., Any]:
  """A function `(ctx, *operands, **attributes)` that emits the custom call to
  `call_target_name` and returns its op.  Layouts here are minor-to-major (XLA's order); the
  attributes join `backend_config`; `lowering_args` go to `extend.mlir.custom_call`."""

  def emit(ctx, *operands, **attributes):
    kwargs = dict(lowering_args)
    kwargs.setdefault("api_version", 4)
    if kwargs["api_version"] >= 4:
      if backend_config is not None and not isinstance(backend_config, dict):
        raise ValueError("When api_version > 4, backend_config must be a dictionary.")
      kwargs["backend_config"] = {**(backend_config or {}), **attributes}
    else:
      if attributes:
        raise ValueError("The use of ffi_call attributes requires a custom call API version "
                         f"of at least 4; got api_version={kwargs['api_version']}.")
      kwargs["backend_config"] = backend_config
    kwargs.setdefault("result_types", [mlir.aval_to_ir_type(a) for a in ctx.avals_out])
    if not skip_ffi_layout_processing:
      kwargs["operand_layouts"] = [
          _minor_to_major(a, None if operand_layouts is None else operand_layouts[i])
          for i, a in enumerate(ctx.avals_in)]
      kwargs["result_layouts"] = [
          _minor_to_major(a, None if result_layouts is None else result_layouts[i])
          for i, a in enumerate(ctx.avals_out)]
    return ext_mlir.custom_call(call_target_name, operands=operands, **kwargs)

  return emit


def ffi_lowering(call_target_name: str, *,
                 operand_layouts: Sequence[LayoutOptions] | None = None,
                 result_layouts: Sequence[LayoutOptions] | None = None,
                 backend_config: Mapping[str, Any] | str | None = None,
                 skip_ffi_layout_processing: bool = False,
                 **lowering_args: Any) -> Callable[..., Sequence[Any]]:
  """A lowering rule (JAX's signature: it returns the results) that emits the custom call
  to `call_target_name`, its keyword parameters as attributes (see
  `build_ffi_lowering_function`)."""
  emit = build_ffi_lowering_function(
      call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
      backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
      **lowering_args)
  return lambda ctx, *operands, **attributes: emit(ctx, *operands, **attributes).results


# ----------------------------------------------------------------------------- ffi_call

def _result_avals(results: Sequence[Any]) -> tuple:
  avals = []
  for i, result in enumerate(results):
    if result is abstract_token:
      avals.append(result)
    elif not hasattr(result, "shape") or not hasattr(result, "dtype"):
      raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                       f"attributes. Got {result} at position {i}.")
    else:
      avals.append(ShapedArray(tuple(result.shape), np.dtype(result.dtype)))
  return tuple(avals)


def _call_layouts(avals, layouts) -> tuple:
  """Major-to-minor `layouts` of an `ffi_call` (or None) in minor-to-major order."""
  return tuple(_minor_to_major(a, l if l is None or isinstance(l, Layout) else tuple(l)[::-1])
               for a, l in zip(avals, layouts))


class _Attribute:
  """An attribute value made hashable (a numpy array or dict by its contents), so that
  calls with equal attributes share their compiled program."""
  __slots__ = ("value", "_key")

  def __init__(self, value):
    self.value = value
    if isinstance(value, np.ndarray):
      self._key = ("array", value.dtype.str, value.shape, value.tobytes())
    else:
      self._key = ("dict", tuple(sorted((k, _hashable(k, v)) for k, v in value.items())))

  def __eq__(self, other):
    return type(other) is _Attribute and other._key == self._key

  def __hash__(self):
    return hash(self._key)

  def __repr__(self):
    return repr(self.value)


def _hashable(name: str, value):
  if isinstance(value, (np.ndarray, dict)):
    return _Attribute(value)
  try:
    hash(value)
  except TypeError as e:
    raise TypeError(f"Non-hashable keyword argument to ffi_call {name}: {value}") from e
  return value


def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None,
             input_layouts: Sequence[LayoutOptions] | None = None,
             output_layouts: LayoutOptions | Sequence[LayoutOptions] | None = None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None) -> Callable[..., Any]:
  """A function that calls the FFI target `target_name` on its positional arrays, with its
  keyword arguments as the handler's attributes, and returns results shaped like
  `result_shape_dtypes` (one object with `shape` and `dtype`, or a sequence of them, whose
  results come back as a list, or a tuple for a tuple).  Layouts are major-to-minor."""
  if vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  multiple = isinstance(result_shape_dtypes, Sequence)
  result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
  result_layouts = output_layouts if multiple else (output_layouts,)
  if custom_call_api_version >= 4 and legacy_backend_config is not None:
    raise ValueError("The use of the legacy_backend_config parameter requires "
                     f"custom_call_api_version < 4; got {custom_call_api_version}.")

  def call(*args, **attributes):
    in_avals = [get_aval(x) for x in args]
    if input_layouts is None:
      in_layouts = tuple(_minor_to_major(a) for a in in_avals)
    elif len(input_layouts) != len(in_avals):
      raise ValueError(f"The number of input arguments ({len(in_avals)}) must equal the "
                       f"number of input layouts ({len(input_layouts)}).")
    else:
      in_layouts = _call_layouts(in_avals, input_layouts)
    if result_layouts is None:
      out_layouts = tuple(_minor_to_major(a) for a in result_avals)
    elif len(result_layouts) != len(result_avals):
      raise ValueError(f"The number of outputs ({len(result_avals)}) must equal the number "
                       f"of output layouts ({len(result_layouts)}).")
    else:
      out_layouts = _call_layouts(result_avals, result_layouts)
    aliases = _checked_aliases(input_output_aliases or {}, in_avals, result_avals,
                               in_layouts, out_layouts)
    results = ffi_call_p.bind(
        *args, result_avals=result_avals, vmap_method=vmap_method, target_name=target_name,
        has_side_effect=bool(has_side_effect), input_layouts=in_layouts,
        output_layouts=out_layouts, input_output_aliases=aliases,
        custom_call_api_version=custom_call_api_version,
        legacy_backend_config=legacy_backend_config,
        attributes=tuple((k, _hashable(k, v)) for k, v in sorted(attributes.items())))
    if not multiple:
      return results[0]
    return tuple(results) if isinstance(result_shape_dtypes, tuple) else list(results)

  return call


def _checked_aliases(aliases: dict, in_avals, out_avals, in_layouts, out_layouts) -> tuple:
  checked = []
  for i, o in sorted((int(i), int(o)) for i, o in aliases.items()):
    where = f"input_output_aliases contains the mapping '{i}:{o}'"
    if i >= len(in_avals):
      raise ValueError(f"{where} with input index {i} outside the range [0, {len(in_avals)}).")
    if o >= len(out_avals):
      raise ValueError(f"{where} with output index {o} outside the range "
                       f"[0, {len(out_avals)}).")
    a, b = in_avals[i], out_avals[o]
    if _shape(a) != _shape(b) or getattr(a, "dtype", None) != getattr(b, "dtype", None):
      raise ValueError(f"{where} referring to an input with abstract value {a} and an output "
                       f"with a different abstract value {b}.")
    if in_layouts[i] != out_layouts[o]:
      raise ValueError(f"{where} referring to an input with layout {in_layouts[i]} and an "
                       f"output with a different layout {out_layouts[o]}.")
    checked.append((i, o))
  return tuple(checked)


# ----------------------------------------------------------------------------- the primitive
# Params: target_name, result_avals, has_side_effect, vmap_method, input_layouts and
# output_layouts (minor-to-major), input_output_aliases ((input, output) pairs),
# custom_call_api_version, legacy_backend_config, attributes ((name, hashable value) pairs).

class FfiEffect(Effect):
  """An FFI call with side effects: it runs even when its results are unused."""

  def __str__(self):
    return "FFI"


ffi_effect = FfiEffect()

ffi_call_p = Primitive("ffi_call")
ffi_call_p.multiple_results = True


def _ffi_call_abstract_eval(*avals, result_avals, has_side_effect, **_):
  return list(result_avals), frozenset([ffi_effect] if has_side_effect else [])


ffi_call_p.def_effectful_abstract_eval(_ffi_call_abstract_eval)


def _ffi_call_lowering(ctx, *operands, target_name, has_side_effect, input_layouts,
                       output_layouts, input_output_aliases, custom_call_api_version,
                       legacy_backend_config, attributes, **_):
  lapack.prepare_kernel(target_name)  # a call of one of jaxlib's LAPACK kernels
  rule = ffi_lowering(target_name, has_side_effect=has_side_effect,
                      operand_layouts=input_layouts, result_layouts=output_layouts,
                      operand_output_aliases=dict(input_output_aliases),
                      api_version=custom_call_api_version,
                      backend_config=legacy_backend_config)
  return list(rule(ctx, *operands, **{k: v.value if isinstance(v, _Attribute) else v
                                      for k, v in attributes}))


mlir.register_lowering(ffi_call_p, _ffi_call_lowering)


def _not_differentiable(*args, target_name, **_):
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                   "`minijax.custom_jvp` or `minijax.custom_vjp` to add support.")


ad.primitive_jvps[ffi_call_p] = lambda primals, tangents, **params: _not_differentiable(
    **params)
ad.primitive_transposes[ffi_call_p] = lambda cts, *args, **params: _not_differentiable(
    **params)


def _shifted(layouts) -> tuple:
  """Minor-to-major layouts of operands or results that gained a leading batch axis."""
  return tuple(tuple(n + 1 for n in layout) + (0,) for layout in layouts)


def _ffi_call_batching(args, dims, *, vmap_method, result_avals, **params):
  def bind_all(operands, size):
    # the batch axis is the slowest: layouts gain it as their most major dimension
    ins = params["input_layouts"]
    if vmap_method == "legacy_vectorized":  # (unbatched operands keep their shapes)
      ins = tuple(l if d is None else _shifted([l])[0] for l, d in zip(ins, dims))
    else:
      ins = _shifted(ins)
    batched = tuple(a if isinstance(a, AbstractToken) else
                    ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
    return ffi_call_p.bind(*operands, **dict(
        params, vmap_method=vmap_method, result_avals=batched, input_layouts=ins,
        output_layouts=_shifted(params["output_layouts"])))
  return common.batch_by_vmap_method(
      "ffi_call", vmap_method, args, dims,
      lambda *xs: ffi_call_p.bind(*xs, vmap_method=vmap_method, result_avals=result_avals,
                                  **params), bind_all)


batching.primitive_batchers[ffi_call_p] = _ffi_call_batching
