"""Ragged dots: `dot_general` where one dimension of `lhs` is cut into consecutive groups of
`group_sizes` [g] entries (entries past the groups count as zeros), as JAX's
`ragged_dot_general` and its common case `ragged_dot`.

The kind of the lhs ragged dimension decides what a group does:

1. a free (non-contracting) dimension m: each group of rows is multiplied by its own slice
   of `rhs` along its group dimension: `[b, m, k] x [g, b, k, n] -> [b, m, n]`;
2. a contracting dimension k: each group contracts over its own stretch of k, one result
   per group, stacked first: `[b, m, k] x [b, k, n] -> [g, b, m, n]`;
3. a batch dimension: each batch entry's product does not depend on its group, so this is
   the plain batched product (group_sizes unused, as in JAX).

Cases 1 and 2 are computed as one `dot_general` of `lhs` masked group by group (a leading
axis of g copies), summed over the groups in case 1: memory g times the operand's.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from minijax.core.avals import get_aval
from minijax.lax.dot import DotDimensionNumbers, dot_general
from minijax.lax.elementwise import bitwise_and, ge, lt, sub
from minijax.lax.misc import broadcasted_iota, convert_element_type, select
from minijax.lax.reductions import cumsum, reduce_sum
from minijax.lax.structural import broadcast_in_dim, convert_to_array, full, transpose

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
  """The dot's dimension numbers, the lhs ragged dimension and the rhs group dimension
  (none unless the ragged dimension is a free one)."""
  dot_dimension_numbers: DotDimensionNumbers
  lhs_ragged_dimensions: Sequence[int]
  rhs_group_dimensions: Sequence[int]

  def __post_init__(self):
    (lc, rc), (lb, rb) = self.dot_dimension_numbers
    object.__setattr__(self, "dot_dimension_numbers",
                       ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(self.lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(self.rhs_group_dimensions))


def _groups(group_sizes, size: int):
  """bool [g, size]: entry i of the ragged dimension is in group j."""
  sizes = convert_element_type(group_sizes, np.int32)
  ends = cumsum(sizes, 0)
  starts = sub(ends, sizes)
  g = get_aval(sizes).shape[0]
  index = broadcasted_iota(np.int32, (g, size), 1)
  return bitwise_and(ge(index, broadcast_in_dim(starts, (g, size), (0,))),
                     lt(index, broadcast_in_dim(ends, (g, size), (0,))))


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers,
                       precision=None, preferred_element_type=None, group_offset=None,
                       out_sharding=None):
  """The ragged product (see the module docstring) of `lhs` and `rhs`."""
  if group_offset is not None:
    raise NotImplementedError("ragged_dot_general: group_offset is not implemented by minijax")
  if out_sharding is not None:
    raise NotImplementedError("ragged_dot_general: out_sharding is not supported by minijax")
  numbers = ragged_dot_dimension_numbers
  if not isinstance(numbers, RaggedDotDimensionNumbers):
    raise TypeError("ragged_dot_general: ragged_dot_dimension_numbers must be a "
                    f"RaggedDotDimensionNumbers, got {numbers!r}")
  lhs, rhs, group_sizes = map(convert_to_array, (lhs, rhs, group_sizes))
  la, ga = get_aval(lhs), get_aval(group_sizes)
  (lc, rc), (lb, rb) = numbers.dot_dimension_numbers
  if len(numbers.lhs_ragged_dimensions) != 1:
    raise ValueError("ragged_dot_general takes exactly one lhs ragged dimension, got "
                     f"{numbers.lhs_ragged_dimensions}")
  (ragged,) = numbers.lhs_ragged_dimensions
  ragged %= la.ndim
  if ga.ndim != 1 or not np.issubdtype(ga.dtype, np.integer):
    raise NotImplementedError(
        "ragged_dot_general: minijax takes group_sizes of shape [g] of integers, got "
        f"{ga.str_short()}")
  g = ga.shape[0]
  free = ragged not in lc and ragged not in lb
  if free != (len(numbers.rhs_group_dimensions) == 1) or len(numbers.rhs_group_dimensions) > 1:
    raise ValueError("ragged_dot_general: rhs has one group dimension when the lhs ragged "
                     "dimension is a free one, and none otherwise; got ragged dimension "
                     f"{ragged} and group dimensions {numbers.rhs_group_dimensions}")
  mask = _groups(group_sizes, la.shape[ragged])
  dot = lambda a, b, dims: dot_general(a, b, dims, precision=precision,  # noqa: E731
                                       preferred_element_type=preferred_element_type)
  if ragged in lb:  # 3
    return dot(lhs, rhs, numbers.dot_dimension_numbers)
  copies = (g, *la.shape)
  masked = select(broadcast_in_dim(mask, copies, (0, ragged + 1)),
                  broadcast_in_dim(lhs, copies, tuple(range(1, la.ndim + 1))),
                  full(copies, 0, la.dtype))
  shift = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731
  if free:  # 1: group j's rows times rhs's slice j, summed over the groups
    (group,) = numbers.rhs_group_dimensions
    out = dot(masked, rhs, ((shift(lc), rc), ((0, *shift(lb)), (group, *rb))))
    return reduce_sum(out, (0,))
  # 2: one product per group, over its stretch of the contracting dimension, groups first
  out = dot(masked, rhs, ((shift(lc), rc), (shift(lb), rb)))
  order = list(range(get_aval(out).ndim))
  order.insert(0, order.pop(len(lb)))
  return transpose(out, order)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None):
  """A matrix product by groups of rows: `lhs` [m, k] is cut into consecutive groups of
  `group_sizes` [g] rows, group i multiplied by `rhs[i]` ([g, k, n]); rows past the groups
  give zeros."""
  la, ra, ga = (get_aval(convert_to_array(v)) for v in (lhs, rhs, group_sizes))
  if la.ndim != 2 or ra.ndim != 3 or ga.shape != (ra.shape[0],) or la.shape[1] != ra.shape[1]:
    raise TypeError(f"ragged_dot takes lhs [m, k], rhs [g, k, n] and group_sizes [g], got "
                    f"{la.str_short()}, {ra.str_short()} and {ga.str_short()}")
  numbers = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
  return ragged_dot_general(lhs, rhs, group_sizes, numbers, precision=precision,
                            preferred_element_type=preferred_element_type,
                            group_offset=group_offset)
