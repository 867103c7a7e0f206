"""Vectorizing map (vmap) by batching rules.

Rule table (filled in each primitive's block in minijax/lax/):
  primitive_batchers[p](batched_args, batch_dims, **params) -> (out, out_batch_dims)
where a batch dim is an int or `None` ("not batched").  `defvectorized` covers
elementwise unary primitives and `defbroadcasting` n-ary elementwise ones.
"""
from __future__ import annotations

from typing import Any, Callable

BatchRule = Callable[..., tuple[Any, Any]]

not_mapped = None
primitive_batchers: dict[Any, BatchRule] = {}


def moveaxis(x, src: int, dst: int):
  from minijax import lax
  if src == dst:
    return x
  perm = [i for i in range(x.ndim) if i != src]
  perm.insert(dst, src)
  return lax.transpose(x, tuple(perm))


def defvectorized(primitive) -> None:
  def rule(batched_args, batch_dims, **params):
    (x,), (d,) = batched_args, batch_dims
    return primitive.bind(x, **params), d
  primitive_batchers[primitive] = rule


def bdim_at_front(x, bdim, size: int):
  """`x` with its batch dimension first, broadcasting an unbatched `x` to `size`."""
  from minijax import lax
  if bdim is None:
    x = lax.convert_to_array(x)
    return lax.broadcast(x, (size,))
  return moveaxis(x, bdim, 0)


def defbroadcasting(primitive) -> None:
  """Elementwise n-ary: batch dims move to the front and unbatched operands get a
  leading axis of size 1 so they broadcast (ranks must match for lax ops)."""
  def rule(batched_args, batch_dims, **params):
    from minijax import lax
    size = next(x.shape[d] for x, d in zip(batched_args, batch_dims) if d is not None)
    if all(d == batch_dims[0] for d in batch_dims) and len({getattr(x, "ndim", 0) for x in batched_args}) == 1:
      return primitive.bind(*batched_args, **params), batch_dims[0]
    args = [bdim_at_front(x, d, size) for x, d in zip(batched_args, batch_dims)]
    out = primitive.bind(*args, **params)
    return out, (0 if not primitive.multiple_results else [0] * len(out))
  primitive_batchers[primitive] = rule
