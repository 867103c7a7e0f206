"""Vectorizing map (vmap) by batching rules.

A `BatchTrace` carries a value and a batch dimension per value (`None`: not batched, the
same for every element of the batch).  Values that are not its tracers are unbatched
constants.  To process a primitive with at least one batched input it runs the primitive's
batching rule on the parent trace; with none it binds the primitive on the parent
unchanged (unless a jaxpr among its parameters holds a collective over the vmapped axis's
name).  The trace knows the axis size, for rules that must broadcast an unbatched
operand.

Rule table (filled in each primitive's block in minijax/lax/):
  primitive_batchers[p](batched_args, batch_dims, **params) -> (out, out_batch_dims)
where a batch dim is an int or `None` ("not batched").  `defvectorized` covers
elementwise unary primitives and `defbroadcasting` n-ary elementwise ones.
`batch_jaxpr` batches a whole jaxpr (for `jit_p` and control flow).  A primitive whose
rule needs the vmapped axis's name or size may register in `fancy_primitive_batchers`
instead (JAX's table for that): `rule(AxisData(name, size), batched_args, batch_dims,
**params)`; `axis_primitive_batchers[p] = rule` takes JAX's older signature, `rule(size,
name, trace_type, batched_args, batch_dims, **params)`, for libraries that still use it.

A vmap may name its axis (`vmap(f, axis_name='b')`); the name is bound in the axis
environment (`core.axes`) while `f` is traced, and collectives over it (`psum(x, 'b')`) are
rewritten into operations on the batch dimension.  Collectives therefore have rules of
their own, in a second table that the trace consults before the first, even when no operand
is batched (`axis_index('b')` has no operand at all):
  collective_batchers[p](axis_name, axis_size, batched_args, batch_dims, **params)
      -> (out, out_batch_dims)
where `axis_name` is the vmapped axis' name (None when it has none).  A rule that meets
only other names batches the collective like any primitive.  While a rule runs, the
trace's name is the one `batch_jaxpr` gives the jaxprs it batches (a `jit` or loop body
inside the vmap may hold collectives over it too).
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, NamedTuple, Sequence

from minijax.core import axes as axes_lib
from minijax.core.avals import ShapedArray, get_aval
from minijax.core.errors import MissingRuleError
from minijax.core.state import AbstractRef
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr
from minijax.core.trace import Trace, Tracer, check_no_leaks, new_trace, set_current_trace
from minijax.interpreters import array_ops

BatchRule = Callable[..., tuple[Any, Any]]

primitive_batchers: dict[Any, BatchRule] = {}
# Rules that also need the vmapped axis (JAX's signature, for libraries' primitives):
#   fancy_primitive_batchers[p](axis_data, batched_args, batch_dims, **params)
fancy_primitive_batchers: dict[Any, Callable[..., tuple[Any, Any]]] = {}
not_mapped = None


class _AxisPrimitiveBatchers:
  """`axis_primitive_batchers[p] = rule` with JAX's older signature, `rule(size, name,
  trace_type, batched_args, batch_dims, **params)`: registered in `fancy_primitive_batchers`."""

  def __setitem__(self, primitive, rule):
    def fancy(axis_data, args, dims, **params):
      return rule(axis_data.size, axis_data.name, None, args, dims, **params)
    fancy_primitive_batchers[primitive] = fancy

  def __delitem__(self, primitive):
    del fancy_primitive_batchers[primitive]

  def __contains__(self, primitive):
    return primitive in fancy_primitive_batchers


axis_primitive_batchers = _AxisPrimitiveBatchers()


class AxisData(NamedTuple):
  """The vmapped axis a `fancy_primitive_batchers` rule sees."""
  name: Any
  size: int
  spmd_name: Any = None
collective_batchers: dict[Any, Callable[..., tuple[Any, Any]]] = {}


class _RuleAxis(threading.local):
  name: Any = None
  size: int | None = None


_rule_axis = _RuleAxis()  # the axis name and size of the batch trace whose rule is running


def batch_size(args, dims) -> int:
  """The size of the batch a rule runs for: a batched operand's, else the trace's (a rule
  for an equation whose jaxpr holds a collective over the vmapped axis, with no operand
  batched)."""
  for x, d in zip(args, dims):
    if d is not None:
      return get_aval(x).shape[d]
  return _rule_axis.size


def moveaxis(x, src: int, dst: int):
  if src == dst:
    return x
  perm = [i for i in range(x.ndim) if i != src]
  perm.insert(dst, src)
  return array_ops.transpose(x, tuple(perm))


def defvectorized(primitive) -> None:
  def rule(batched_args, batch_dims, **params):
    (x,), (d,) = batched_args, batch_dims
    return primitive.bind(x, **params), d
  primitive_batchers[primitive] = rule


def bdim_at_front(x, bdim, size: int):
  """`x` with its batch dimension first, broadcasting an unbatched `x` to `size`."""
  if bdim is None:
    return _broadcast_front(x, size)
  return moveaxis(x, bdim, 0)


def _broadcast_front(x, size: int):
  """`x` (not batched) repeated `size` times along a new leading axis."""
  shape = _shape(x)
  return array_ops.broadcast_in_dim(x, (size, *shape), tuple(range(1, len(shape) + 1)))


def broadcast(x, size: int, axis: int):
  """`x` repeated `size` times along a new axis at position `axis` (JAX's helper)."""
  shape = _shape(x)
  axis = axis % (len(shape) + 1)
  dims = tuple(i if i < axis else i + 1 for i in range(len(shape)))
  return array_ops.broadcast_in_dim(x, (*shape[:axis], size, *shape[axis:]), dims)


def defreducer(primitive, ident=None) -> None:
  """A reduction whose `axes` parameter names the operand's axes it reduces: batched, the
  batch axis is left out of them (`ident` is accepted for JAX's signature)."""
  def rule(batched_args, batch_dims, *, axes, **params):
    (x,), (d,) = batched_args, batch_dims
    moved = tuple(a + (a >= d) for a in axes)
    out = primitive.bind(x, axes=moved, **params)
    return out, d - sum(a < d for a in axes)
  primitive_batchers[primitive] = rule


def defbroadcasting(primitive) -> None:
  """Elementwise n-ary (operands of one rank with sizes equal or 1 per axis, or of rank 0):
  when every batched operand has the same shape and batch dim and the unbatched ones have
  rank 0, the primitive applies as is.  Otherwise batch dims move to the front, unbatched
  operands of rank > 0 get a leading size-1 axis and batched per-element scalars trailing
  size-1 axes, and the primitive's own size-1 broadcasting does the rest (as JAX's
  batcher: the program computes what the unbatched one does, XLA's rewrites included)."""
  def rule(batched_args, batch_dims, **params):
    shape = dim = None
    fast = True
    for x, d in zip(batched_args, batch_dims):
      if d is None:
        fast = fast and not _shape(x)
      elif dim is None:
        shape, dim = _shape(x), d
      else:
        fast = fast and d == dim and _shape(x) == shape
    if fast:
      out = primitive.bind(*batched_args, **params)
      return out, (dim if not primitive.multiple_results else [dim] * len(out))
    rank = max(len(_shape(x)) - (d is not None) for x, d in zip(batched_args, batch_dims))
    args = [_batch_first(x, d, rank) for x, d in zip(batched_args, batch_dims)]
    out = primitive.bind(*args, **params)
    return out, (0 if not primitive.multiple_results else [0] * len(out))
  primitive_batchers[primitive] = rule


def _shape(x) -> tuple:
  return x.aval.shape if isinstance(x, Tracer) else get_aval(x).shape


def _batch_first(x, d, rank: int):
  """An operand of an elementwise op of per-element rank `rank` with a leading batch axis:
  its own, or one of size 1 when unbatched (an unbatched rank-0 operand stays rank 0)."""
  shape = _shape(x)
  if d is None:
    return x if not shape else array_ops.broadcast_in_dim(
        x, (1, *shape), tuple(range(1, len(shape) + 1)))
  x = moveaxis(x, d, 0)
  if len(shape) == 1 and rank:
    x = array_ops.broadcast_in_dim(x, (shape[0],) + (1,) * rank, (0,))
  return x


# ----------------------------------------------------------------------------- the batch trace

class BatchTracer(Tracer):
  __slots__ = ("val", "batch_dim")

  def __init__(self, trace, val, batch_dim: int):
    self._trace = trace
    self.val = val
    self.batch_dim = batch_dim

  @property
  def aval(self):
    aval = self.val.aval if isinstance(self.val, Tracer) else get_aval(self.val)
    shape = list(aval.shape)
    del shape[self.batch_dim]
    unbatched = ShapedArray(tuple(shape), aval.dtype, aval.weak_type)
    return AbstractRef(unbatched) if type(aval) is AbstractRef else unbatched

  def __repr__(self):  # (JAX's name)
    return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"


class BatchTrace(Trace):
  def __init__(self, axis_size: int, axis_name=None):
    super().__init__()
    self.axis_size = axis_size
    self.axis_name = axis_name

  def to_val_dim(self, x):
    if self.owns(x):
      return x.val, x.batch_dim
    return x, None

  def make(self, val, dim):
    return val if dim is None else BatchTracer(self, val, dim)

  def process_primitive(self, primitive, args, params):
    vals, dims = zip(*map(self.to_val_dim, args)) if args else ((), ())
    collective = collective_batchers.get(primitive)
    if collective is not None:
      with set_current_trace(self.parent):
        out, out_dims = collective(self.axis_name, self.axis_size, list(vals), list(dims),
                                   **params)
    else:
      if all(d is None for d in dims) and not (
          self.axis_name is not None and _holds_collective_over(params, self.axis_name)):
        with set_current_trace(self.parent):
          return primitive.bind(*vals, **params)
      rule = primitive_batchers.get(primitive)
      if rule is None:
        axis_rule = fancy_primitive_batchers.get(primitive)
        if axis_rule is None:
          raise MissingRuleError(primitive, "batching", "batching.primitive_batchers")
        rule = functools.partial(axis_rule, AxisData(self.axis_name, self.axis_size))
      previous = _rule_axis.name, _rule_axis.size
      _rule_axis.name, _rule_axis.size = self.axis_name, self.axis_size
      try:
        with set_current_trace(self.parent):
          out, out_dims = rule(list(vals), list(dims), **params)
      finally:
        _rule_axis.name, _rule_axis.size = previous
    if primitive.multiple_results:
      return [self.make(v, d) for v, d in zip(out, out_dims)]
    return self.make(out, out_dims)


def _holds_collective_over(params: dict, axis_name) -> bool:
  """Whether a jaxpr among `params` (a `jit`'s, a loop's body...) holds a collective over
  `axis_name`: its equation is batched even when no operand is (an `axis_index` over the
  vmapped axis differs along it)."""
  def in_value(value) -> bool:
    if isinstance(value, ClosedJaxpr):
      value = value.jaxpr
    if isinstance(value, (tuple, list)):
      return any(in_value(v) for v in value)
    if not isinstance(value, Jaxpr):
      return False
    for eqn in value.eqns:
      if eqn.primitive in collective_batchers:
        names = eqn.params.get("axes", eqn.params.get("axis_name"))
        if isinstance(names, tuple) and axis_name in names:
          return True
      if any(in_value(v) for v in eqn.params.values()):
        return True
    return False
  return any(in_value(v) for v in params.values())


def matchaxis(x, src: int | None, dst: int | None, size: int, what: str = "output",
              axis_name=None, sum_match: bool = False):
  """Moves the batch dim of `x` from `src` to `dst` (broadcasting if `src` is None); with
  `sum_match`, a batched `x` wanted unbatched is summed over its batch dim (the cotangent of
  an operand shared by the whole batch)."""
  if dst is None:
    if src is None:
      return x
    if sum_match:
      return array_ops.reduce_sum(x, (src,))
    named = f" (axis_name={axis_name})" if axis_name is not None else ""
    raise ValueError(f"vmap has mapped {what}{named} but out_axes is None; an output that "
                     "depends on a mapped input needs a mapped out_axes")
  if src is None:
    x = _broadcast_front(x, size)
    src = 0
  return moveaxis(x, src, dst)


# Types a library registers to be mapped by handlers of its own rather than leaf by leaf
# (JAX's `register_vmappable`, for its jumbles and MJX's Warp data).  minijax keeps the
# registration but does not map them: `vmap` refuses such an argument or result.
vmappables: dict[type, tuple[type, type]] = {}


def register_vmappable(data_type: type, spec_type: type, axis_size_type: type,
                       to_elt: Callable, from_elt: Callable, make_iota: Callable | None) -> None:
  del to_elt, from_elt, make_iota
  vmappables[data_type] = (spec_type, axis_size_type)


def is_vmappable(x) -> bool:
  return type(x) in vmappables


def _axis_binding(axis_name, axis_size: int):
  frames = [] if axis_name is None else [(axis_name, axis_size, "batch")]
  return axes_lib.extend_axis_env(frames)


def vmap_flat(fun: Callable, in_dims: Sequence[int | None], out_dims: Sequence[int | None],
              axis_size: int, args: Sequence[Any], axis_name=None) -> list[Any]:
  """Maps `fun(*args) -> list` over axis `in_dims[i]` of each arg (None: unmapped); the
  outputs' batch dims go to `out_dims` (non-negative; None: must be unmapped)."""
  trace = BatchTrace(axis_size, axis_name)
  with new_trace(trace), _axis_binding(axis_name, axis_size):
    ins = [trace.make(x, d) for x, d in zip(args, in_dims)]
    outs = fun(*ins)
    pairs = [trace.to_val_dim(o) for o in outs]
  del ins, outs
  check_no_leaks(trace)
  if callable(out_dims):
    out_dims = out_dims(len(pairs))
  return [matchaxis(v, d, od, axis_size) for (v, d), od in zip(pairs, out_dims)]


def vmap_flat_dims(fun: Callable, in_dims, axis_size: int, args, axis_name=None):
  """Like `vmap_flat`, returning `(outputs, their batch dims)` without moving them."""
  trace = BatchTrace(axis_size, axis_name)
  with new_trace(trace), _axis_binding(axis_name, axis_size):
    ins = [trace.make(x, d) for x, d in zip(args, in_dims)]
    outs = fun(*ins)
    pairs = [trace.to_val_dim(o) for o in outs]
  del ins, outs
  check_no_leaks(trace)
  return [v for v, _ in pairs], [d for _, d in pairs]


def batch_jaxpr(closed_jaxpr: ClosedJaxpr, axis_size: int, in_batched: Sequence[bool],
                instantiate: bool | Sequence[bool]) -> tuple[ClosedJaxpr, list[bool]]:
  """Batches a jaxpr.  Inputs marked in `in_batched` get a leading batch axis of size
  `axis_size`; in the result every batched output has its batch axis first.  Returns the
  batched ClosedJaxpr and `out_batched`; `instantiate` (bool or one per output) forces
  outputs to be batched (broadcast).  The batch axis takes the name of the batch trace
  whose rule is running, if any (see the module docstring)."""
  from minijax.interpreters import partial_eval as pe
  axis_name = _rule_axis.name
  n_out = len(closed_jaxpr.out_avals)
  instantiate = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
  box = []

  def fun(*args):
    outs, dims = vmap_flat_dims(
        lambda *xs: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *xs),
        [0 if b else None for b in in_batched], axis_size, args, axis_name)
    out_batched = [d is not None or inst for d, inst in zip(dims, instantiate)]
    box.append(out_batched)
    return [matchaxis(o, d, 0 if b else None, axis_size)
            for o, d, b in zip(outs, dims, out_batched)]

  avals = [ShapedArray((axis_size, *a.shape), a.dtype, a.weak_type) if b else a
           for a, b in zip(closed_jaxpr.in_avals, in_batched)]
  jaxpr, consts = pe.trace_to_jaxpr_dynamic(fun, avals)
  return ClosedJaxpr(jaxpr, consts), box[0]
