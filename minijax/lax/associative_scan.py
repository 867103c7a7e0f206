"""`associative_scan`: all prefix combinations of an associative function in O(log n) steps.

The scan combines neighbouring pairs (elements 0 and 1, 2 and 3, ...), scans that half-length
sequence recursively (which yields the prefixes ending at every odd position), combines each
of those prefixes with the next even element to get the prefixes ending at even positions,
and interleaves the two.  Every step is slicing, concatenation and calls of `fn` on whole
arrays, so the scan is a plain function of existing primitives: jit, vmap and both modes of
differentiation apply through its parts.  `fn` must be associative (`fn(fn(a, b), c) ==
fn(a, fn(b, c))`) and vectorized over the scanned axis; it is not required to commute.
"""
from __future__ import annotations

from typing import Callable

from minijax.tree_util import internal as tree_util
from minijax.core.avals import get_aval
from minijax.lax import utils
from minijax.lax.slicing import slice_in_dim
from minijax.lax.structural import concatenate, convert_to_array, expand_dims, reshape, rev

__all__ = ["associative_scan"]


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
  """Inclusive scan of `elems` (an array or a pytree of arrays with one length along
  `axis`) with the associative `fn(a, b)`; `reverse=True` scans from the end."""
  if not callable(fn):
    raise TypeError("lax.associative_scan: fn argument should be callable.")
  flat, tree = tree_util.tree_flatten(elems)
  if not flat:
    return elems
  flat = [convert_to_array(x) for x in flat]
  avals = [get_aval(x) for x in flat]
  axis = utils.canonicalize_axis(axis, avals[0].ndim)
  lengths = [a.shape[axis] if a.ndim > axis else None for a in avals]
  if any(n != lengths[0] for n in lengths):
    raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[a.shape for a in avals]})")

  def combine(a_flat, b_flat):
    out = fn(tree_util.tree_unflatten(tree, a_flat), tree_util.tree_unflatten(tree, b_flat))
    out_flat, out_tree = tree_util.tree_flatten(out)
    if out_tree.num_leaves != tree.num_leaves:  # (any container of as many, as in JAX)
      raise TypeError(f"associative_scan's fn must return as many arrays as its inputs hold "
                      f"({tree.num_leaves}: {tree}), got {out_tree.num_leaves}: {out_tree}")
    return out_flat

  def take(xs, start, stop, step=1):
    return [slice_in_dim(x, start, stop, step, axis) for x in xs]

  def scan(xs):
    n = get_aval(xs[0]).shape[axis]
    if n < 2:
      return xs
    pairs = combine(take(xs, 0, n - 1, 2), take(xs, 1, n, 2))
    odd = scan(pairs)  # the prefixes ending at positions 1, 3, 5, ...
    m = len(range(2, n, 2))
    even_tail = combine(take(odd, 0, m), take(xs, 2, n, 2)) if m else take(xs, 0, 0)
    even = [concatenate([x0, e], axis) for x0, e in zip(take(xs, 0, 1), even_tail)]
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]

  if reverse:
    flat = [rev(x, (axis,)) for x in flat]
  out = scan(flat)
  if reverse:
    out = [rev(x, (axis,)) for x in out]
  return tree_util.tree_unflatten(tree, out)


def _interleave(a, b, axis: int):
  """a[0], b[0], a[1], b[1], ... along `axis`, where `a` is as long as `b` or one longer."""
  na, nb = get_aval(a).shape[axis], get_aval(b).shape[axis]
  if na > nb:  # pad b with any element; the extra slot is cut off below
    b = concatenate([b, slice_in_dim(a, 0, 1, 1, axis)], axis)
  pairs = concatenate([expand_dims(a, (axis + 1,)), expand_dims(b, (axis + 1,))], axis + 1)
  shape = list(get_aval(a).shape)
  shape[axis] = 2 * na
  return slice_in_dim(reshape(pairs, tuple(shape)), 0, na + nb, 1, axis)
