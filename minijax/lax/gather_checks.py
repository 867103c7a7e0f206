"""The well-formedness rules of gather's and scatter's dimension numbers.

XLA's shape inference defines them (operation semantics of Gather and Scatter).  They are
checked one at a time, in the order JAX checks them, so that the first broken rule is the one
reported, in the words JAX's errors use (its tests match them): each message names the
dimension-number field that is wrong, what it should be and what it was.
"""
from __future__ import annotations

__all__ = ["check_gather", "check_scatter"]


def _sorted(op, name, dims):
  if list(dims) != sorted(dims):
    raise TypeError(f"{name} in {op} op must be sorted; got {dims}")


def _distinct(op, name, dims):
  if len(set(dims)) != len(dims):
    raise TypeError(f"{name} in {op} op must not repeat; got: {dims}.")


def _within(op, name, dims, rank):
  bad = [d for d in dims if not 0 <= d < rank]
  if bad:
    raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); "
                    f"got: {min(bad) if min(bad) < 0 else max(bad)}.")


def _disjoint(op, name1, dims1, name2, dims2):
  if set(dims1) & set(dims2):
    raise TypeError(f"{name1} and {name2} in {op} op must be disjoint; "
                    f"got: {dims1} and {dims2}.")


def _axis_set(op, name, dims, rank, *, sorted_first=True):
  """`dims` sorted, without repeats and within [0, rank) (JAX checks the first two in either
  order, depending on the field)."""
  first, second = (_sorted, _distinct) if sorted_first else (_distinct, _sorted)
  first(op, name, dims)
  second(op, name, dims)
  _within(op, name, dims, rank)


def _index_batching(op, Op, operand, indices, operand_dims, index_dims, index_name):
  """The rules for the batching dimensions of the indices, which pair with the operand's."""
  _distinct(op, index_name, index_dims)
  _within(op, index_name, index_dims, indices.ndim)
  if indices.ndim - 1 in index_dims:
    raise TypeError(f"{Op} op cannot have the index vector dimension as a batching "
                    f"dimension; got {index_dims}.")
  if len(operand_dims) != len(index_dims):
    raise TypeError(f"{Op} op requires equal numbers of operand_batching_dims and "
                    f"{index_name}, got {operand_dims} and {index_dims}.")
  operand_batch = tuple(operand.shape[d] for d in operand_dims)
  index_batch = tuple(indices.shape[d] for d in index_dims)
  if operand_batch != index_batch:
    raise TypeError(f"{Op} op requires operand batching dimensions and indices batching "
                    f"dimensions to have the same shape, got {operand_batch} and "
                    f"{index_batch}.")
  return operand_batch


def _index_vector(Op, name, dims, indices):
  vector = indices.ndim - 1
  if len(dims) != indices.shape[vector]:
    raise TypeError(f"{Op} op has {len(dims)} elements in {name} and the bound of "
                    f"dimension index_vector_dim={vector} of indices is "
                    f"{indices.shape[vector]}. These two numbers must be equal.")


def _maps_into(name, dims, rank):
  for i, d in enumerate(dims):
    if not 0 <= d < rank:
      raise TypeError(f"Invalid {name}; domain is [0, {rank}), got: {i}->{d}.")


def check_gather(operand, indices, dn, slice_sizes):
  """Raise TypeError for the first rule `dn` and `slice_sizes` break for this gather."""
  op = "gather"
  _sorted(op, "offset_dims", dn.offset_dims)
  _distinct(op, "offset_dims", dn.offset_dims)
  out_rank = len(dn.offset_dims) + indices.ndim - 1
  for i, d in enumerate(dn.offset_dims):
    if not 0 <= d < out_rank:
      raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but "
                      f"should have been in [0, {out_rank})")
  _index_vector("Gather", "start_index_map", dn.start_index_map, indices)
  _maps_into("start_index_map", dn.start_index_map, operand.ndim)
  _distinct(op, "start_index_map", dn.start_index_map)
  _sorted(op, "collapsed_slice_dims", dn.collapsed_slice_dims)
  _within(op, "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim)
  _distinct(op, "collapsed_slice_dims", dn.collapsed_slice_dims)
  _axis_set(op, "operand_batching_dims", dn.operand_batching_dims, operand.ndim,
            sorted_first=False)
  _disjoint(op, "collapsed_slice_dims", dn.collapsed_slice_dims,
            "operand_batching_dims", dn.operand_batching_dims)
  _disjoint(op, "start_index_map", dn.start_index_map,
            "operand_batching_dims", dn.operand_batching_dims)
  _index_batching(op, "Gather", operand, indices, dn.operand_batching_dims,
                  dn.start_indices_batching_dims, "start_indices_batching_dims")
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                    f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim}")
  dropped = len(dn.collapsed_slice_dims) + len(dn.operand_batching_dims)
  if len(slice_sizes) != len(dn.offset_dims) + dropped:
    raise TypeError(
        f"All components of the offset index in a gather op must either be a offset "
        f"dimension or explicitly collapsed/batching; got len(slice_sizes)={len(slice_sizes)}, "
        f"output_slice_sizes={dn.offset_dims}, collapsed_slice_dims="
        f"{dn.collapsed_slice_dims}, operand_batching_dims={dn.operand_batching_dims}.")
  if indices.size:  # (with no indices nothing is read: slices need not fit an empty operand)
    for i, (size, bound) in enumerate(zip(slice_sizes, operand.shape)):
      if not 0 <= size <= bound:
        raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                        f"within [0, {bound} + 1), got {size}.")
  for i, d in enumerate(dn.collapsed_slice_dims):
    if slice_sizes[d] != 1:
      raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound is "
                      f"{slice_sizes[d]} for index {d} at position {i}.")
  for i, d in enumerate(dn.operand_batching_dims):
    if slice_sizes[d] > 1:
      raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, but "
                      f"bound is {slice_sizes[d]} for index {d} at position {i}.")


def check_scatter(operand, indices, updates, dn):
  """Raise TypeError for the first rule `dn` breaks for this scatter."""
  op = "scatter"
  rank = indices.ndim - 1 + len(dn.update_window_dims)
  if updates.ndim != rank:
    raise TypeError(f"Updates tensor must be of rank {rank}; got {updates.ndim}.")
  _axis_set(op, "update_window_dims", dn.update_window_dims, updates.ndim)
  _axis_set(op, "inserted_window_dims", dn.inserted_window_dims, operand.ndim)
  _axis_set(op, "operand_batching_dims", dn.operand_batching_dims, operand.ndim)
  _disjoint(op, "inserted_window_dims", dn.inserted_window_dims,
            "operand_batching_dims", dn.operand_batching_dims)
  _disjoint(op, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
            "operand_batching_dims", dn.operand_batching_dims)
  operand_batch = _index_batching(
      op, "Scatter", operand, indices, dn.operand_batching_dims,
      dn.scatter_indices_batching_dims, "scatter_indices_batching_dims")
  scatter_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  # The updates' scatter axes follow the indices' batch axes in order.
  updates_batch = tuple(updates.shape[scatter_axes[d]] for d in dn.scatter_indices_batching_dims
                        if d < len(scatter_axes))
  if operand_batch != updates_batch:
    raise TypeError(f"Scatter op requires operand batching dimensions and updates batching "
                    f"dimensions to have the same shape, got {operand_batch} and "
                    f"{updates_batch}.")
  window = (len(dn.update_window_dims) + len(dn.inserted_window_dims)
            + len(dn.operand_batching_dims))
  if window != operand.ndim:
    raise TypeError(f"Scatter op has window of size {window}; doesn't match operand of "
                    f"rank {operand.ndim}.")
  _index_vector("Scatter", "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                indices)
  _maps_into("scatter_dims_to_operand_dims mapping", dn.scatter_dims_to_operand_dims,
             operand.ndim)
  _distinct(op, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims)
  kept = [operand.shape[d] for d in range(operand.ndim)
          if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
  for d, bound in zip(dn.update_window_dims, kept):
    if updates.shape[d] > bound:
      raise TypeError(f"Bounds of the window dimensions of updates must not exceed the "
                      f"bounds of the corresponding dimensions of operand. For dimension "
                      f"{d}, updates bound is {updates.shape[d]}, operand bound is {bound}.")
  for d, bound in zip(scatter_axes, indices.shape[:-1]):
    if updates.shape[d] != bound:
      raise TypeError(f"Bounds of the scatter dimensions of updates must be the same as the "
                      f"bounds of the corresponding dimensions of scatter indices. For "
                      f"scatter dimension {d}, updates bound is {updates.shape[d]}, indices "
                      f"bound is {bound}.")
