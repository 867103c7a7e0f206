"""Mutable array references: their type (`AbstractRef`) and their concrete value (`Ref`).

A `Ref` is a box around one array buffer.  It is the one mutable value in minijax: the
state primitives of `minijax.lax.state` read it (`get`), write it (`swap`), add into it
(`addupdate`), and create (`new_ref`) and freeze it.  Inside a traced function a ref is a
tracer whose aval is an `AbstractRef`; its operations are equations with `Read`/`Write`/
`Accum` effects (`core.effects`), which a discharge pass (`interpreters.discharge`) turns
into pure dataflow before anything is lowered.  On concrete refs, a compiled program takes
the ref's buffer as an argument aliased to an extra result and the runtime puts the result
back into the box (`staging.compiler`).

The operators of `Ref` (`r[i]`, `r[i] = v`, `r.addupdate`) are installed by
`minijax.lax.state`, as the numpy layer installs those of arrays.
"""
from __future__ import annotations

from minijax.core.avals import AbstractValue, ShapedArray


class AbstractRef(AbstractValue):
  """The type of a ref holding an array of type `inner_aval`, printed `Ref{f32[3]}`.
  `kind` is JAX's: None, or "no_grad_no_remat" for a ref whose writes autodiff ignores
  (statistics collected while differentiating)."""
  __slots__ = ("inner_aval", "kind", "__weakref__")
  _interned: dict = {}

  def __new__(cls, inner_aval: ShapedArray, kind: str | None = None):
    # Interned, as ShapedArrays are: equal types are one object, so jit's fast path finds
    # a ref argument's entry by identity.
    key = (inner_aval, kind)
    self = cls._interned.get(key)
    if self is None:
      self = object.__new__(cls)
      self.inner_aval, self.kind = inner_aval, kind
      cls._interned[key] = self
    return self

  def __reduce__(self):
    return AbstractRef, (self.inner_aval, self.kind)

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  weak_type = property(lambda self: self.inner_aval.weak_type)
  ndim = property(lambda self: self.inner_aval.ndim)
  size = property(lambda self: self.inner_aval.size)

  def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
    return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

  def __str__(self):
    return f"Ref{{{self.dtype.name}[{','.join(map(str, self.shape))}]}}"

  __repr__ = __str__

  def tangent_aval(self) -> "AbstractRef":
    return AbstractRef(self.inner_aval.tangent_aval(), self.kind)

  def strip_weak_type(self) -> "AbstractRef":
    return AbstractRef(self.inner_aval.strip_weak_type(), self.kind)


class _RefMeta(type):
  """`isinstance(x, Ref)` holds for concrete refs and for tracers of refs."""

  def __instancecheck__(cls, x):
    return type.__instancecheck__(cls, x) or type(getattr(x, "aval", None)) is AbstractRef


class Ref(metaclass=_RefMeta):
  """A concrete mutable array reference: `_buf` is the array it holds now."""
  __slots__ = ("_buf", "_aval", "__weakref__")

  def __init__(self, buf, aval: AbstractRef):
    self._buf = buf
    self._aval = aval

  aval = property(lambda self: self._aval)
  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  ndim = property(lambda self: self._aval.ndim)
  size = property(lambda self: self._aval.size)
  weak_type = property(lambda self: self._aval.weak_type)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __array__(self, dtype=None, copy=None):
    import numpy as np
    return np.asarray(self._buf, dtype=dtype)

  def __repr__(self):
    if self._buf is None:
      return f"Ref(<frozen>, {self._aval})"
    text = repr(self._buf)
    return "Ref" + text[text.index("("):] if "(" in text else f"Ref({text})"

  __hash__ = object.__hash__


# ----------------------------------------------------------------------------- JAX's errors


def fun_description(fun) -> str:
  """`f at FILE:LINE`, as JAX names a traced function in its errors about refs."""
  fun = getattr(fun, "__wrapped__", fun)
  code = getattr(fun, "__code__", None)
  name = getattr(fun, "__name__", repr(fun))
  return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def check_no_returned_refs(fun, what: str, jaxpr, arg_names=None, out_paths=None) -> None:
  """JAX's error for a traced function (`what`: jit, scan, fori_loop, while_body, cond)
  that returns a ref: refs cannot leave the function that was traced."""
  for i, v in enumerate(jaxpr.outvars):
    aval = v.aval
    if type(aval) is not AbstractRef:
      continue
    where = ""
    if out_paths is not None:
      where = f" at output tree path {out_paths[i]}"
    if v in jaxpr.invars:
      k = jaxpr.invars.index(v)
      name = arg_names[k] if arg_names and k < len(arg_names) else f"args[{k}]"
      origin = f"was passed in as the argument {name}"
    elif v in jaxpr.constvars:
      origin = "was closed over by the function"
    else:
      src = next((e.source_info for e in jaxpr.eqns if v in e.outvars), None)
      origin = (f"was created on line {src.file}:{src.line} ({src.function})" if src
                else "was created inside the function")
    raise ValueError(
        f"function {fun_description(fun)} traced for {what} returned a mutable array "
        f"reference of type {aval}{where}, but mutable array references cannot be returned."
        f"\n\nThe returned mutable array {origin}.")


def check_ref_arguments(fun, what: str, args, arg_names, consts=()) -> None:
  """JAX's errors for a ref passed twice, or closed over and passed, to a traced function."""
  seen: dict[int, int] = {}
  const_ids = {id(c) for c in consts if isinstance(c, Ref)}
  for k, x in enumerate(args):
    if not isinstance(x, Ref):
      continue
    name = arg_names[k] if arg_names and k < len(arg_names) else f"args[{k}]"
    if id(x) in seen:
      j = seen[id(x)]
      first = arg_names[j] if arg_names and j < len(arg_names) else f"args[{j}]"
      raise ValueError(
          "only one reference to a mutable array may be passed as an argument to a function, "
          f"but when tracing {fun_description(fun)} for {what} the mutable array reference of "
          f"type {x.aval} appeared at both {first} and {name}.")
    if id(x) in const_ids:
      raise ValueError(
          f"when tracing {fun_description(fun)} for {what}, a mutable array reference of type "
          f"{x.aval} was both closed over and passed as the argument {name}")
    seen[id(x)] = k


def check_no_returned_ref_values(fun, what: str, outs, args=()) -> None:
  """`check_no_returned_refs` for a function that ran on values (eagerly): a ref among
  `outs` that is not one of `args` was created inside."""
  for x in outs:
    if isinstance(x, Ref):
      passed = any(x is a for a in args)
      raise ValueError(
          f"function {fun_description(fun)} traced for {what} returned a mutable array "
          f"reference of type {x.aval}, but mutable array references cannot be returned.\n\n"
          f"The returned mutable array was "
          f"{'passed in as an argument' if passed else 'created inside the function'}.")
