"""The state primitives: creating, reading, writing and freezing mutable array references.

`new_ref(x)` makes a `Ref` holding `x`; `get` reads part of it, `swap` writes part of it
and returns what was there (`r[i] = v` is a swap whose result is dropped), `addupdate`
adds into part of it, and `freeze` ends its life as a ref and returns the array.  Each
read, write and accumulation carries an effect naming its ref operand (`ReadEffect(0)`,
...); creating or freezing a ref carries `InternalMutableArrayEffect`.  None of them has a
lowering: a jaxpr with refs is discharged first (`interpreters.discharge`), and each
primitive below has the discharge rule that says what it does to the ref's value.

Indexing is static or dynamic per dimension: an integer (the dimension goes), a slice with
step 1 (kept) or `...`; an index that is a traced or array integer scalar is a dynamic
operand of the equation.  Writes never broadcast: the value has exactly the shape the
index selects, and the ref's dtype.  An index with integer arrays reads the whole ref and
indexes the value with numpy's rules (a write: `.at[idx].set` of the whole value).

Autodiff follows the duality of reading and accumulating: the tangent of a ref is a ref
(`new_ref` always creates one for a float ref, so local refs are differentiable), `get`
transposes to `addupdate` into the cotangent ref and `addupdate` to `get`, `swap` to
`swap`, `new_ref` to `freeze` and `freeze` to an accumulation.  Writing a differentiated
value into a ref that has no tangent (one made outside the differentiated function) is
JAX's error.  Under vmap a ref made inside is batched, and an unbatched ref from outside
cannot take batched values (JAX's error).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from minijax.core import dtypes, pretty
from minijax.core import effects as effects_lib
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.primitive import Primitive
from minijax.core.state import AbstractRef, Ref
from minijax.core.state import (check_no_returned_refs, check_ref_arguments,  # noqa: F401
                                fun_description)
from minijax.core.trace import Tracer
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters import discharge
from minijax.interpreters.discharge import discharge_rules, inline_call_rule
from minijax.lax import misc, slicing, structural

__all__ = ["new_ref", "get", "set", "swap", "addupdate", "freeze", "empty_ref", "free_ref",
           "new_ref_p", "get_p", "swap_p", "addupdate_p", "freeze_p", "Indexer"]

_MUTABLE = frozenset({effects_lib.internal_mutable_array_effect})


# ----------------------------------------------------------------------------- indexers

class Ix(NamedTuple):
  """One dimension of an index: `start` (an int, or the position of a dynamic operand
  among the index operands when `dynamic`), how many elements `size`, whether the
  dimension goes (`squeeze`, an integer index), and whether it is the whole dimension."""
  start: int
  size: int
  squeeze: bool
  dynamic: bool
  full: bool = False


class Indexer(tuple):
  """One `Ix` per dimension of the ref; a hashable param of get/swap/addupdate."""

  def is_full(self, shape=None) -> bool:
    return all(ix.full for ix in self)

  def out_shape(self) -> tuple:
    return tuple(ix.size for ix in self if not ix.squeeze)

  def __str__(self):
    if self.is_full():
      return "[...]"
    parts = []
    for ix in self:
      start = f"i{ix.start}" if ix.dynamic else str(ix.start)
      if ix.full:
        parts.append(":")
      elif ix.squeeze:
        parts.append(start)
      elif ix.dynamic:
        parts.append(f"{start}:{start}+{ix.size}")
      else:
        parts.append(f"{start}:{ix.start + ix.size}")
    while parts and parts[-1] == ":":
      parts.pop()
    return "[" + ", ".join(parts) + "]"

  __repr__ = __str__


def _full_indexer(shape) -> Indexer:
  return Indexer(Ix(0, n, False, False, True) for n in shape)


def _is_int_scalar(x) -> bool:
  if isinstance(x, (bool, np.bool_)):
    return False
  if isinstance(x, (int, np.integer)):
    return True
  aval = getattr(x, "aval", None)
  if aval is None and isinstance(x, np.ndarray):
    aval = get_aval(x)
  return (isinstance(aval, ShapedArray) and aval.shape == ()
          and dtypes.is_integer(aval.dtype))


def parse_index(shape: tuple, idx) -> tuple[Indexer, list]:
  """The `Indexer` of `r[idx]` on a ref of `shape`, and its dynamic index operands."""
  idx = idx if isinstance(idx, tuple) else (idx,)
  if sum(i is Ellipsis for i in idx) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  if Ellipsis in [i for i in idx if not isinstance(i, (Tracer, np.ndarray))]:
    pos = next(k for k, i in enumerate(idx) if i is Ellipsis)
    n_fill = len(shape) - (len(idx) - 1)
    idx = (*idx[:pos], *[slice(None)] * n_fill, *idx[pos + 1:])
  if len(idx) > len(shape):
    raise IndexError(f"Too many indices for a ref of shape {shape}: {len(idx)} given")
  dims, operands = [], []
  for i, n in zip(idx, shape):
    if isinstance(i, slice):
      start, stop, step = i.indices(n) if all(
          s is None or isinstance(s, (int, np.integer)) for s in (i.start, i.stop, i.step)) else (None,) * 3
      if start is None or step != 1:
        raise NotImplementedError(
            f"refs are indexed by slices with static bounds and step 1, got {i}; read the "
            "whole ref (`r[...]`) and slice the array instead")
      size = max(stop - start, 0)
      dims.append(Ix(start, size, False, False, start == 0 and size == n))
    elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
      i = int(i)
      if not -n <= i < n:
        raise ValueError(f"Out of bound indexer: idx={i}, dim={n}.")
      dims.append(Ix(i % n, 1, True, False))
    elif _is_int_scalar(i):
      dims.append(Ix(len(operands), 1, True, True))
      operands.append(_normalize_index(i, n))
    else:
      raise NotImplementedError(
          f"refs are indexed by integers, slices and `...`; got {type(i).__name__} "
          f"{i!r:.40}. Read the whole ref (`r[...]`) and index the array instead")
  dims.extend(Ix(0, n, False, False, True) for n in shape[len(dims):])
  return Indexer(dims), operands


def _normalize_index(i, n: int):
  """A dynamic index, counted from the end when negative, as an int32 scalar."""
  from minijax.lax import elementwise
  i = slicing._as_index(i)
  return misc.select(elementwise.lt(i, np.int32(0)), elementwise.add(i, np.int32(n)), i)


def _starts(indexer: Indexer, idx_vals):
  return [idx_vals[ix.start] if ix.dynamic else np.int32(ix.start) for ix in indexer]


def read_value(x, idx_vals, indexer: Indexer):
  """What `get` returns from a ref holding `x` (the pure meaning of a read)."""
  if indexer.is_full(get_aval(x).shape):
    return x
  sizes = [ix.size for ix in indexer]
  if any(ix.dynamic for ix in indexer):
    out = slicing.dynamic_slice(x, _starts(indexer, idx_vals), sizes,
                                allow_negative_indices=False)
  else:
    starts = [ix.start for ix in indexer]
    out = slicing.slice(x, starts, [s + n for s, n in zip(starts, sizes)])
  squeezed = tuple(d for d, ix in enumerate(indexer) if ix.squeeze)
  return structural.squeeze(out, squeezed) if squeezed else out


def write_value(x, idx_vals, indexer: Indexer, val):
  """The value of a ref holding `x` after `val` is written at `indexer` (of `x`'s type:
  a weakly typed value written whole takes the ref's strong type)."""
  if indexer.is_full(get_aval(x).shape):
    weak = get_aval(x).weak_type
    if get_aval(val).weak_type != weak:
      val = misc.convert_element_type(val, get_aval(x).dtype, weak_type=weak)
    return val
  sizes = tuple(ix.size for ix in indexer)
  if get_aval(val).shape != sizes:
    val = structural.reshape(val, sizes)
  return slicing.dynamic_update_slice(x, val, _starts(indexer, idx_vals),
                                      allow_negative_indices=False)


# ----------------------------------------------------------------------------- new_ref

new_ref_p = Primitive("new_ref")
_TANGENT = ad.TANGENT_REF_KIND
# JAX's kind of ref whose writes differentiation ignores (no tangent is written, no
# "non-differentiated array reference" error): statistics gathered in a forward pass.
NO_GRAD_NO_REMAT = "no_grad_no_remat"


def _new_ref_abstract_eval(aval, *, kind, memory_space):
  if not isinstance(aval, ShapedArray):
    raise TypeError(f"new_ref takes an array, got a value of type {aval}: a ref cannot hold "
                    "a ref (read it first with `r[...]`)")
  if kind not in (None, _TANGENT, NO_GRAD_NO_REMAT):
    raise ValueError(f"new_ref kind must be None or {NO_GRAD_NO_REMAT!r}, got {kind!r}")
  return AbstractRef(aval, None if kind == _TANGENT else kind), _MUTABLE


new_ref_p.def_effectful_abstract_eval(_new_ref_abstract_eval)


def _new_ref_jvp(primals, tangents, *, kind, memory_space):
  (x,), (t,) = primals, tangents
  # An enclosing jvp's tangent ref is this one's primal: known to its partial evaluation.
  ref = new_ref_p.bind(x, kind=None if kind == _TANGENT else kind, memory_space=memory_space)
  aval = get_aval(x)
  if not dtypes.is_inexact(aval.dtype) or kind == NO_GRAD_NO_REMAT:
    return ref, ad.Zero(get_aval(ref).tangent_aval())
  t_ref = new_ref_p.bind(ad.instantiate_zeros(t), kind=_TANGENT, memory_space=memory_space)
  return ref, t_ref


def _new_ref_transpose(ct_ref, x, *, kind, memory_space):
  if not ad.is_undefined_primal(x):
    return [None]
  if type(ct_ref) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [freeze_p.bind(ct_ref)]


def _new_ref_batch(axis_name, axis_size, vals, dims, *, kind, memory_space):
  """Under vmap every new ref is batched (at axis 0): the function may write per-lane
  values into it, and a ref's batch axis cannot move later."""
  (x,), (d,) = vals, dims
  x = batching.bdim_at_front(x, d, axis_size)
  return new_ref_p.bind(x, kind=kind, memory_space=memory_space), 0


ad.primitive_jvps[new_ref_p] = _new_ref_jvp
ad.jvp_even_when_zero.add(new_ref_p)
ad.primitive_transposes[new_ref_p] = _new_ref_transpose
batching.collective_batchers[new_ref_p] = _new_ref_batch
discharge_rules[new_ref_p] = lambda eqn, ins: ([None], [ins[0]])


def new_ref(init_val, *, kind=None, memory_space=None):
  """A new mutable array reference holding (a copy of) `init_val`."""
  if isinstance(init_val, Ref):
    raise TypeError("new_ref takes an array, not a ref: read the ref first (`new_ref(r[...])`)")
  try:
    get_aval(init_val)
  except TypeError:
    raise TypeError(
        "Error interpreting argument to new_ref as a JAX value. The problematic value is of "
        f"type {type(init_val)} and was passed to new_ref at position 0.") from None
  if isinstance(init_val, (np.ndarray, np.generic)) and not isinstance(init_val, Tracer):
    init_val = np.asarray(init_val, dtypes.canonicalize_dtype(np.asarray(init_val).dtype))
  return new_ref_p.bind(init_val, kind=kind, memory_space=memory_space)


def empty_ref(ty, *, memory_space=None):
  """A new ref of type `ty` (anything with `shape` and `dtype`); minijax fills it with
  zeros (JAX leaves it uninitialized)."""
  return new_ref(misc.full(ty.shape, 0, ty.dtype), memory_space=memory_space)


def free_ref(ref) -> None:
  """Ends `ref`'s life without reading it (a `freeze` whose value is dropped): using or
  freeing it afterwards raises."""
  _check_ref(ref, "free_ref")
  freeze_p.bind(ref)


# ----------------------------------------------------------------------------- freeze

freeze_p = Primitive("freeze")


def _freeze_abstract_eval(ref_aval):
  if type(ref_aval) is not AbstractRef:
    raise ValueError(f"`freeze` must be called on `Ref` types: {ref_aval}.")
  return ref_aval.inner_aval, _MUTABLE


freeze_p.def_effectful_abstract_eval(_freeze_abstract_eval)


def _freeze_jvp(primals, tangents):
  (ref,), (t_ref,) = primals, tangents
  out = freeze_p.bind(ref)
  if type(t_ref) is ad.Zero:
    return out, ad.Zero(get_aval(out).tangent_aval())
  return out, freeze_p.bind(t_ref)


def _freeze_transpose(ct, ct_ref):
  if type(ct) is not ad.Zero:
    addupdate_p.bind(ct_ref, ct, indexer=_full_indexer(ct_ref.aval.shape))
  return [None]


ad.primitive_jvps[freeze_p] = _freeze_jvp
ad.primitive_transposes[freeze_p] = _freeze_transpose
batching.primitive_batchers[freeze_p] = lambda vals, dims: (freeze_p.bind(*vals), dims[0])
discharge_rules[freeze_p] = lambda eqn, ins: ([None], [ins[0]])


def freeze(ref):
  """The array `ref` holds, as an immutable value; the ref's life ends (JAX's Ref guide: a
  ref is frozen in the scope that created it)."""
  _check_ref(ref, "freeze")
  if type(ref) is RefView:
    raise TypeError("freeze takes a ref, not a row of one (a scan over a ref gives its body "
                    "rows): read the row with `x[...]`")
  return freeze_p.bind(ref)


# ----------------------------------------------------------------------------- get

get_p = Primitive("get")


def _check_indices(name, idx_avals):
  for a in idx_avals:
    if not (isinstance(a, ShapedArray) and a.shape == () and dtypes.is_integer(a.dtype)):
      raise TypeError(f"`{name}` index operands must be integer scalars, got {a}")


def _get_abstract_eval(ref_aval, *idx_avals, indexer):
  if type(ref_aval) is not AbstractRef:
    raise ValueError(f"`get` must be called on `Ref` types: {ref_aval}.")
  _check_indices("get", idx_avals)
  inner = ref_aval.inner_aval
  return (ShapedArray(indexer.out_shape(), inner.dtype, inner.weak_type),
          frozenset({effects_lib.ReadEffect(0)}))


get_p.def_effectful_abstract_eval(_get_abstract_eval)


def _get_jvp(primals, tangents, *, indexer):
  ref, *idx = primals
  out = get_p.bind(ref, *idx, indexer=indexer)
  t_ref = tangents[0]
  if type(t_ref) is ad.Zero:
    return out, ad.Zero(get_aval(out).tangent_aval())
  return out, get_p.bind(t_ref, *idx, indexer=indexer)


def _get_transpose(ct, ct_ref, *idx, indexer):
  if type(ct) is not ad.Zero:
    addupdate_p.bind(ct_ref, ct, *idx, indexer=indexer)
  return [None] * (1 + len(idx))


def _get_discharge(eqn, ins):
  x, *idx = ins
  return [None] * len(ins), [read_value(x, idx, eqn.params["indexer"])]


ad.primitive_jvps[get_p] = _get_jvp
ad.primitive_transposes[get_p] = _get_transpose
discharge_rules[get_p] = _get_discharge


# ----------------------------------------------------------------------------- swap

swap_p = Primitive("swap")


def _check_value(name, ref_aval, val_aval, indexer, value_word="dtype"):
  if type(ref_aval) is not AbstractRef:
    raise ValueError(f"`{name}` must be called on `Ref` types: {ref_aval}.")
  if type(val_aval) is AbstractRef:
    raise ValueError("Cannot store a Ref into another Ref. Did you forget to load from it "
                     "using `[...]`?")
  expected = indexer.out_shape()
  if val_aval.shape != expected:
    transforms = "()" if indexer.is_full(ref_aval.shape) else f"({indexer},)"
    raise ValueError(f"Invalid shape for `{name}`. Ref shape: {ref_aval.shape}. Expected "
                     f"shape: {expected}. Value shape: {val_aval.shape}. Transforms: "
                     f"{transforms}. ")
  if val_aval.dtype != ref_aval.dtype:
    raise ValueError(f"Invalid dtype for `{name}`. Ref dtype: {ref_aval.dtype}. Value "
                     f"{value_word}: {val_aval.dtype}. ")


def _swap_abstract_eval(ref_aval, val_aval, *idx_avals, indexer):
  _check_value("swap", ref_aval, val_aval, indexer)
  _check_indices("swap", idx_avals)
  inner = ref_aval.inner_aval
  return (ShapedArray(indexer.out_shape(), inner.dtype, inner.weak_type),
          frozenset({effects_lib.WriteEffect(0)}))


swap_p.def_effectful_abstract_eval(_swap_abstract_eval)


def _nondiff_ref_error(ref):
  return Exception(
      "performing a set/swap operation with a differentiated value on a non-differentiated "
      f"array reference of type {get_aval(ref)}. Move the array reference to be an argument "
      "of the differentiated function?")


def _swap_jvp(primals, tangents, *, indexer):
  ref, val, *idx = primals
  t_ref, t_val = tangents[:2]
  if get_aval(ref).kind == NO_GRAD_NO_REMAT:  # the write's tangent is dropped
    t_ref, t_val = ad.Zero(t_ref.aval), ad.Zero(get_aval(val).tangent_aval())
  if type(t_ref) is ad.Zero:
    if type(t_val) is not ad.Zero:
      raise _nondiff_ref_error(ref)
    out = swap_p.bind(ref, val, *idx, indexer=indexer)
    return out, ad.Zero(get_aval(out).tangent_aval())
  out = swap_p.bind(ref, val, *idx, indexer=indexer)
  t_out = swap_p.bind(t_ref, ad.instantiate_zeros(t_val), *idx, indexer=indexer)
  return out, t_out


def _swap_transpose(ct_old, ct_ref, val, *idx, indexer):
  # old = r[idx]; r[idx] = val.  Backwards: the cotangent of `val` is what the cotangent
  # ref holds at idx, and the old value's cotangent takes its place.
  ct_old = ad.instantiate_zeros(ct_old)
  ct_val = swap_p.bind(ct_ref, ct_old, *idx, indexer=indexer)
  return [None, ct_val if ad.is_undefined_primal(val) else None] + [None] * len(idx)


def _swap_discharge(eqn, ins):
  x, val, *idx = ins
  indexer = eqn.params["indexer"]
  old = read_value(x, idx, indexer)
  return [write_value(x, idx, indexer, val)] + [None] * (len(ins) - 1), [old]


ad.primitive_jvps[swap_p] = _swap_jvp
ad.primitive_transposes[swap_p] = _swap_transpose
discharge_rules[swap_p] = _swap_discharge


# ----------------------------------------------------------------------------- addupdate

addupdate_p = Primitive("addupdate")
addupdate_p.multiple_results = True


def _addupdate_abstract_eval(ref_aval, val_aval, *idx_avals, indexer):
  _check_value("addupdate", ref_aval, val_aval, indexer, value_word="shape")
  _check_indices("addupdate", idx_avals)
  return [], frozenset({effects_lib.AccumEffect(0)})


addupdate_p.def_effectful_abstract_eval(_addupdate_abstract_eval)


def _addupdate_jvp(primals, tangents, *, indexer):
  ref, val, *idx = primals
  t_ref, t_val = tangents[:2]
  addupdate_p.bind(ref, val, *idx, indexer=indexer)
  if get_aval(ref).kind == NO_GRAD_NO_REMAT:
    pass
  elif type(t_ref) is ad.Zero:
    if type(t_val) is not ad.Zero:
      raise _nondiff_ref_error(ref)
  elif type(t_val) is not ad.Zero:
    addupdate_p.bind(t_ref, t_val, *idx, indexer=indexer)
  return [], []


def _addupdate_transpose(cts, ct_ref, val, *idx, indexer):
  ct_val = get_p.bind(ct_ref, *idx, indexer=indexer) if ad.is_undefined_primal(val) else None
  return [None, ct_val] + [None] * len(idx)


def _addupdate_discharge(eqn, ins):
  from minijax.lax import elementwise
  x, val, *idx = ins
  indexer = eqn.params["indexer"]
  new = write_value(x, idx, indexer, elementwise.add(read_value(x, idx, indexer), val))
  return [new] + [None] * (len(ins) - 1), []


ad.primitive_jvps[addupdate_p] = _addupdate_jvp
ad.primitive_transposes[addupdate_p] = _addupdate_transpose
discharge_rules[addupdate_p] = _addupdate_discharge


# ----------------------------------------------------------------------------- batching

def _vmapped_value_error(ref):
  return Exception(
      "performing a set/swap operation with vmapped value on an unbatched array reference "
      f"of type {get_aval(ref)}. Move the array reference to be an argument to the vmapped "
      "function?")


def _batch_state(prim, size, vals, dims, indexer, n_vals):
  """The batching rule of get (n_vals=0), swap and addupdate (n_vals=1), consulted even
  when nothing is batched (it is a `collective_batchers` entry, for the axis size)."""
  ref, vs, idx = vals[0], vals[1:1 + n_vals], vals[1 + n_vals:]
  ref_d, v_ds, idx_ds = dims[0], dims[1:1 + n_vals], dims[1 + n_vals:]
  if all(d is None for d in dims):
    out = prim.bind(*vals, indexer=indexer)
    return out, ([] if prim is addupdate_p else None)
  if ref_d is None:
    if n_vals and any(d is not None for d in (*v_ds, *idx_ds)):
      raise _vmapped_value_error(ref)
    # get of an unbatched ref at batched indices: read per lane from the whole value
    whole = get_p.bind(ref, indexer=_full_indexer(ref.aval.shape))
    return _per_lane_read(whole, None, idx, idx_ds, indexer, size)
  if ref_d == 0 and all(d is None for d in idx_ds):
    batched = Indexer((Ix(0, size, False, False, True), *indexer))
    vs = [batching.bdim_at_front(v, d, size) for v, d in zip(vs, v_ds)]
    out = prim.bind(ref, *vs, *idx, indexer=batched)
    return out, (0 if prim is not addupdate_p else [])
  # the general case: per lane, on the whole value
  full = _full_indexer(ref.aval.shape)
  whole = get_p.bind(ref, indexer=full)
  if prim is get_p:
    return _per_lane_read(whole, ref_d, idx, idx_ds, indexer, size)

  def lane(x, v, *i):
    old = read_value(x, i, indexer)
    if prim is addupdate_p:
      from minijax.lax import elementwise
      v = elementwise.add(old, v)
    return [write_value(x, i, indexer, v), old]
  new, old = batching.vmap_flat(lane, [ref_d, v_ds[0], *idx_ds], [ref_d, 0], size,
                                [whole, vs[0], *idx])
  swap_p.bind(ref, new, indexer=full)
  return (old, 0) if prim is swap_p else ([], [])


def _per_lane_read(whole, d, idx, idx_ds, indexer, size):
  out, = batching.vmap_flat(lambda x, *i: [read_value(x, i, indexer)], [d, *idx_ds], [0],
                            size, [whole, *idx])
  return out, 0


for _prim, _n in ((get_p, 0), (swap_p, 1), (addupdate_p, 1)):
  batching.collective_batchers[_prim] = (
      lambda name, size, vals, dims, *, indexer, _prim=_prim, _n=_n:
      _batch_state(_prim, size, vals, dims, indexer, _n))


# ----------------------------------------------------------------------------- printing

def _pp_ref(eqn, names, first_index: int) -> str:
  """`c[1]`, `c[...]`, `c[a:a+2]`: the ref operand and its index, as JAX prints them."""
  indexer = eqn.params["indexer"]
  ref = names(eqn.invars[0])
  if indexer.is_full():
    return f"{ref}[...]"
  parts = []
  for ix in indexer:
    start = names(eqn.invars[first_index + ix.start]) if ix.dynamic else str(ix.start)
    if ix.full:
      parts.append(":")
    elif ix.squeeze:
      parts.append(start)
    else:
      parts.append(f"{start}:{start}+{ix.size}" if ix.dynamic else f"{start}:{ix.start + ix.size}")
  while parts and parts[-1] == ":":
    parts.pop()
  return f"{ref}[{', '.join(parts)}]"


def _pp_swap(eqn, names) -> str:
  where = _pp_ref(eqn, names, 2)
  out = eqn.outvars[0]
  if names.dropped(out):
    return f"{where} <- {names(eqn.invars[1])}"
  return f"{names.binder(out)}, {where} <- {where}, {names(eqn.invars[1])}"


pretty.pp_eqn_rules[get_p] = lambda eqn, names: (
    f"{names.binder(eqn.outvars[0])} <- {_pp_ref(eqn, names, 1)}")
pretty.pp_eqn_rules[swap_p] = _pp_swap
pretty.pp_eqn_rules[addupdate_p] = lambda eqn, names: (
    f"{_pp_ref(eqn, names, 2)} += {names(eqn.invars[1])}")


# ----------------------------------------------------------------------------- the surface

def _check_ref(ref, name):
  if not isinstance(ref, Ref):
    raise TypeError(f"{name} takes a Ref, got {type(ref).__name__}")


class RefView:
  """Row `index` of the ref `base`, usable as a ref (what `scan` over a ref's leading
  axis gives its body): reads and writes go to `base[index, ...]`."""
  __slots__ = ("base", "index")

  def __init__(self, base, index):
    self.base, self.index = base, index

  @property
  def aval(self):
    inner = self.base.aval.inner_aval
    return AbstractRef(ShapedArray(inner.shape[1:], inner.dtype, inner.weak_type))

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))

  def __repr__(self):
    return f"RefView({self.aval}, row of {self.base.aval})"


def _resolve(ref, idx):
  """`(the ref to index, the index)`, looking through views."""
  if type(ref) is RefView:
    idx = idx if isinstance(idx, tuple) else (idx,)
    return ref.base, (ref.index, *idx)
  return ref, idx


def _value_for(ref, value, name):
  """`value` as an operand of a write: any array value (never converted: a write with
  another dtype is JAX's error, as is one of another shape)."""
  if isinstance(value, (list, tuple)):
    raise TypeError(f"{name}: the value written into a ref must be an array, got "
                    f"{type(value).__name__}")
  return value


# numpy's indexing (`x[idx]`, `x.at[idx].set(v)`), installed by the numpy layer: an index
# with integer arrays reads or writes the whole ref through it.
array_getitem: Any = None
array_setitem: Any = None


def _has_int_arrays(idx) -> bool:
  idx = idx if isinstance(idx, tuple) else (idx,)
  return any(isinstance(i, (list, np.ndarray)) or (
      getattr(i, "shape", ()) != () and not isinstance(i, (slice, type(Ellipsis))))
      for i in idx if i is not None and i is not Ellipsis and not isinstance(i, slice))


def get(ref, idx=()):
  """`ref[idx]`: the part of the array `ref` holds that `idx` selects."""
  _check_ref(ref, "get")
  ref, idx = _resolve(ref, idx)
  if _has_int_arrays(idx) and array_getitem is not None:
    return array_getitem(get(ref, ...), idx)
  indexer, operands = parse_index(ref.shape, idx)
  return get_p.bind(ref, *operands, indexer=indexer)


def swap(ref, idx, value):
  """Writes `value` at `ref[idx]` and returns what was there."""
  _check_ref(ref, "swap")
  ref, idx = _resolve(ref, idx)
  if _has_int_arrays(idx) and array_setitem is not None:
    whole = get(ref, ...)
    swap(ref, ..., array_setitem(whole, idx, value))
    return array_getitem(whole, idx)
  indexer, operands = parse_index(ref.shape, idx)
  return swap_p.bind(ref, _value_for(ref, value, "swap"), *operands, indexer=indexer)


def set(ref, idx, value) -> None:  # noqa: A001
  """`ref[idx] = value`."""
  swap(ref, idx, value)


def addupdate(ref, idx, value) -> None:
  """Adds `value` into `ref[idx]` (an accumulation: it transposes to a read)."""
  _check_ref(ref, "addupdate")
  ref, idx = _resolve(ref, idx)
  indexer, operands = parse_index(ref.shape, idx)
  addupdate_p.bind(ref, _value_for(ref, value, "addupdate"), *operands, indexer=indexer)


def _ref_getitem(self, idx):
  return get(self, idx)


def _ref_setitem(self, idx, value):
  swap(self, idx, value)


def _install(cls) -> None:
  cls.__getitem__ = _ref_getitem
  cls.__setitem__ = _ref_setitem
  cls.get = lambda self, idx=(): get(self, idx)
  cls.set = lambda self, value, idx=(): set(self, idx, value)
  cls.swap = lambda self, value, idx=(): swap(self, idx, value)
  cls.addupdate = lambda self, value, idx=(): addupdate(self, idx, value)
  cls.freeze = lambda self: freeze(self)


_install(Ref)
_install(RefView)


def _tracer_addupdate(self, value, idx=()):
  """`r.addupdate(v, idx)` on a traced ref (other ref methods are the operators)."""
  if type(self.aval) is not AbstractRef:
    raise AttributeError(f"{type(self).__name__} of type {self.aval} has no attribute "
                         "'addupdate' (only refs do)")
  addupdate(self, idx, value)


Tracer.addupdate = _tracer_addupdate


def convert_for(aval: ShapedArray, x):
  """`x` as a value of type `aval` (a ref's contents: Python scalars take its dtype)."""
  x = misc.convert_element_type(x, aval.dtype) if get_aval(x).dtype != aval.dtype else x
  return x


# ----------------------------------------------------------------------------- calls

def _custom_call_discharge(eqn, ins):
  """A custom_jvp/custom_vjp call is discharged by inlining its function: once a program
  is discharged nothing differentiates it.  Refs among its operands would mean its rules
  (a `bwd` writing into a ref) could no longer run under a later grad, so that raises."""
  if (any(type(a.aval) is AbstractRef for a in eqn.invars)
      and not discharge.discharging_for_lowering()):
    raise NotImplementedError(
        f"{eqn.primitive} of {eqn.params.get('name')} takes a ref inside a loop, branch, "
        "checkpoint or run_state body, which minijax discharges as it traces them: its custom "
        "rules could not use the ref under differentiation. Call it outside the loop body, or "
        "pass the ref's value")
  return _inline_call(eqn, ins)


def _install_call_rules():
  from minijax import custom_derivatives
  from minijax.lax import call, remat
  for prim in (call.jit_p, remat.remat_p, remat.named_call_p):
    discharge_rules[prim] = inline_call_rule("jaxpr")
  for prim in (custom_derivatives.custom_jvp_call_p, custom_derivatives.custom_vjp_call_p):
    discharge_rules[prim] = _custom_call_discharge


_inline_call = inline_call_rule("call_jaxpr")
_install_call_rules()
