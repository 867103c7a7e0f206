"""Products: dot, matmul (`@`), vdot, inner, outer, tensordot, einsum.

All are `dot_general` with numpy's axis conventions worked out in Python.  Operands whose
contracted sizes differ raise a TypeError, as JAX's do (the message is JAX's, with the
operands' shapes); `vdot` conjugates its first operand.  In `einsum`
(without ellipses) an index repeated within an operand takes a diagonal; for two operands,
indices shared by both and kept in the output are batch axes, shared and dropped ones are
contracted, and indices private to one operand and dropped are summed first; more operands
are contracted left to right.
"""
from __future__ import annotations

import string

import numpy as np

from minijax import lax
from minijax.lax.sharding import takes_out_sharding
from minijax.core.avals import get_aval
from minijax.numpy import _util


def _operands(name, a, b):
  a, b = _util.arrays_of(name, (a, b))
  x, y = _util.promote(name, a, b)
  return x, y


def _contraction_error(name, x, y, x_sizes, y_sizes):
  raise TypeError(f"{name}: dot_general requires contracting dimensions to have the same "
                  f"shape, got {tuple(x_sizes)} and {tuple(y_sizes)} (operands of shapes "
                  f"{_util.shape(x)} and {_util.shape(y)})")


@_util.compiled_when_eager(dynamic=2)
@takes_out_sharding
def dot(a, b, *, precision=None, preferred_element_type=None):
  x, y = _operands("dot", a, b)
  nx, ny = _util.ndim(x), _util.ndim(y)
  if nx == 0 or ny == 0:
    from minijax.numpy.ufuncs import multiply
    return multiply(x, y)
  cy = 0 if ny == 1 else ny - 2
  if _util.shape(x)[-1] != _util.shape(y)[cy]:
    _contraction_error("dot", x, y, _util.shape(x)[-1:], (_util.shape(y)[cy],))
  out = lax.dot_general(x, y, (((nx - 1,), (cy,)), ((), ())), precision=precision,
                        preferred_element_type=preferred_element_type)
  return out


@_util.compiled_when_eager(dynamic=2)
@takes_out_sharding
def matmul(a, b, *, precision=None, preferred_element_type=None):
  x, y = _operands("matmul", a, b)
  nx, ny = _util.ndim(x), _util.ndim(y)
  if nx == 0 or ny == 0:
    raise ValueError(f"matmul: operands must not be scalars, got shapes {_util.shape(x)} and "
                     f"{_util.shape(y)}")
  x2 = lax.reshape(x, (1,) + _util.shape(x)) if nx == 1 else x
  y2 = lax.reshape(y, _util.shape(y) + (1,)) if ny == 1 else y
  sx, sy = _util.shape(x2), _util.shape(y2)
  if sx[-1] != sy[-2]:
    _contraction_error("matmul", x, y, sx[-1:], sy[-2:-1])
  try:
    batch = tuple(np.broadcast_shapes(sx[:-2], sy[:-2]))
  except ValueError:
    raise ValueError(f"Incompatible types for matmul arguments: {get_aval(x).str_short()} "
                     f"and {get_aval(y).str_short()} (their batch dimensions do not "
                     "broadcast)") from None
  x2 = _util.broadcast_to(x2, batch + sx[-2:])
  y2 = _util.broadcast_to(y2, batch + sy[-2:])
  nb = len(batch)
  out = lax.dot_general(x2, y2, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                        precision=precision, preferred_element_type=preferred_element_type)
  if nx == 1:
    out = lax.squeeze(out, (nb,))
  if ny == 1:
    out = lax.squeeze(out, (_util.ndim(out) - 1,))
  return out


@_util.compiled_when_eager(dynamic=2)
def vdot(a, b, *, precision=None, preferred_element_type=None):
  from minijax.numpy.complex_numbers import conjugate
  from minijax.numpy.shape import ravel
  return dot(conjugate(ravel(_util.asarray(a))), ravel(_util.asarray(b)), precision=precision,
             preferred_element_type=preferred_element_type)


@_util.compiled_when_eager(dynamic=2)
def inner(a, b, *, precision=None, preferred_element_type=None):
  x, y = _operands("inner", a, b)
  nx, ny = _util.ndim(x), _util.ndim(y)
  if nx == 0 or ny == 0:
    from minijax.numpy.ufuncs import multiply
    return multiply(x, y)
  if _util.shape(x)[-1] != _util.shape(y)[-1]:
    _contraction_error("inner", x, y, _util.shape(x)[-1:], _util.shape(y)[-1:])
  return lax.dot_general(x, y, (((nx - 1,), (ny - 1,)), ((), ())), precision=precision,
                         preferred_element_type=preferred_element_type)


@_util.compiled_when_eager(dynamic=2)
def outer(a, b, out=None):
  _util.reject_out("outer", out)
  from minijax.numpy.shape import ravel
  x, y = _operands("outer", a, b)
  x, y = ravel(x), ravel(y)
  return lax.dot_general(lax.reshape(x, _util.shape(x) + (1,)),
                         lax.reshape(y, (1,) + _util.shape(y)), (((1,), (0,)), ((), ())))


@_util.compiled_when_eager(dynamic=2)
@takes_out_sharding
def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
  x, y = _operands("tensordot", a, b)
  nx, ny = _util.ndim(x), _util.ndim(y)
  if isinstance(axes, (int, np.integer)):
    ax = tuple(range(nx - axes, nx))
    bx = tuple(range(axes))
  else:
    ax, bx = axes
    ax = (ax,) if isinstance(ax, (int, np.integer)) else tuple(ax)
    bx = (bx,) if isinstance(bx, (int, np.integer)) else tuple(bx)
  ax = _util.canonicalize_axes(ax, nx)
  bx = _util.canonicalize_axes(bx, ny)
  if [_util.shape(x)[i] for i in ax] != [_util.shape(y)[i] for i in bx]:
    _contraction_error("tensordot", x, y, [_util.shape(x)[i] for i in ax],
                       [_util.shape(y)[i] for i in bx])
  return lax.dot_general(x, y, ((ax, bx), ((), ())), precision=precision,
                         preferred_element_type=preferred_element_type)


def _expand_ellipsis(in_specs, output, xs):
  """Subscripts with each `...` spelled out in letters the others do not use, aligned from
  the right as numpy broadcasts them, and the operands broadcast along those dimensions
  where one has size 1; the implicit output is the ellipsis, then the letters used once."""
  used = set("".join(in_specs) + (output or ""))
  spare = [c for c in string.ascii_letters if c not in used]
  counts = []
  for s, x in zip(in_specs, xs):
    named = len(s.replace("...", "")) if "..." in s else None
    if named is not None and _util.ndim(x) < named:
      raise ValueError(f"einsum: subscripts {s!r} name more dimensions than an operand of shape "
                       f"{_util.shape(x)} has")
    counts.append(0 if named is None else _util.ndim(x) - named)
  n = max(counts)
  ell = "".join(spare[:n])
  specs = [s.replace("...", ell[n - k:]) for s, k in zip(in_specs, counts)]
  sizes = {c: max((dict(zip(s, _util.shape(x))).get(c, 1) for s, x in zip(specs, xs)))
           for c in ell}
  xs = [_util.broadcast_to(x, tuple(sizes.get(c, d) for c, d in zip(s, _util.shape(x))))
        for s, x in zip(specs, xs)]
  if output is None:
    letters = "".join(in_specs).replace("...", "")
    output = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
  else:
    output = output.replace("...", ell)
  return specs, output, xs


@takes_out_sharding
def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=lax.dot_general):
  """numpy.einsum by pairwise `dot_general`s (`_dot_general`, JAX's hook for a replacement
  such as a quantized one, does each contraction), in the order `contraction_path` gives
  for `optimize`; subscripts as a string or numpy's interleaved lists."""
  _util.reject_out("einsum", out)
  if not isinstance(subscripts, str):
    subscripts, operands = interleaved_subscripts("einsum", (subscripts, *operands))
  spec = subscripts.replace(" ", "")
  inputs, arrow, output = spec.partition("->")
  in_specs = inputs.split(",")
  if len(in_specs) != len(operands):
    raise ValueError(f"einsum: {len(in_specs)} operand subscripts but {len(operands)} operands")
  _util.check("einsum", *operands)
  xs = _util.promote("einsum", *operands)
  if "..." in spec:
    in_specs, output, xs = _expand_ellipsis(in_specs, output if arrow else None, xs)
  elif not arrow:
    letters = inputs.replace(",", "")
    output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
  for s, x in zip(in_specs, xs):
    if len(s) != _util.ndim(x):
      raise ValueError(f"einsum: subscripts {s!r} do not match an operand of shape "
                       f"{_util.shape(x)}")
  in_specs, xs = map(list, zip(*(_take_diagonals(s, x) for s, x in zip(in_specs, xs))))
  if len(xs) > 2:
    # contract along the path, each step keeping the indices later operands or the output need
    specs, xs = list(in_specs), list(xs)
    path = contraction_path(",".join(specs) + "->" + output, [_util.shape(x) for x in xs],
                            optimize)
    for step in path:
      picked = sorted(step, reverse=True)
      step_specs, step_xs = [specs.pop(i) for i in picked], [xs.pop(i) for i in picked]
      later = "".join(specs) + output
      keep = "".join(c for c in dict.fromkeys("".join(step_specs)) if c in later) \
          if specs else output
      xs.append(einsum(",".join(step_specs) + "->" + keep, *step_xs, optimize=False,
                       precision=precision, preferred_element_type=preferred_element_type,
                       _dot_general=_dot_general))
      specs.append(keep)
    if len(xs) != 1:
      raise ValueError(f"einsum: the contraction path {path} leaves {len(xs)} operands, not one")
    return xs[0]
  sizes = {}
  for s, x in zip(in_specs, xs):
    for c, n in zip(s, _util.shape(x)):
      if sizes.setdefault(c, n) != n:
        raise ValueError(f"einsum: subscript {c!r} has sizes {sizes[c]} and {n}")
  if len(xs) == 1:
    (s,), (x,) = in_specs, xs
    summed = tuple(i for i, c in enumerate(s) if c not in output)
    x = lax.reduce_sum(x, summed) if summed else x
    kept = [c for c in s if c in output]
    return lax.transpose(x, tuple(kept.index(c) for c in output))
  (sa, sb), (x, y) = in_specs, xs
  # sum out indices private to one operand and absent from the output
  for which in (0, 1):
    s, other = (sa, sb) if which == 0 else (sb, sa)
    arr = x if which == 0 else y
    summed = tuple(i for i, c in enumerate(s) if c not in other and c not in output)
    if summed:
      arr = lax.reduce_sum(arr, summed)
      s = "".join(c for c in s if c in other or c in output)
    if which == 0:
      x, sa = arr, s
    else:
      y, sb = arr, s
  batch = [c for c in sa if c in sb and c in output]
  contract = [c for c in sa if c in sb and c not in output]
  free_a, free_b = [c for c in sa if c not in sb], [c for c in sb if c not in sa]
  if batch + free_b + free_a == list(output) != batch + free_a + free_b:
    (x, sa, free_a), (y, sb, free_b) = (y, sb, free_b), (x, sa, free_a)  # (no transpose)
  dn = ((tuple(sa.index(c) for c in contract), tuple(sb.index(c) for c in contract)),
        (tuple(sa.index(c) for c in batch), tuple(sb.index(c) for c in batch)))
  out = _dot_general(x, y, dn, precision=precision,
                     preferred_element_type=preferred_element_type)
  result = batch + free_a + free_b
  return lax.transpose(out, tuple(result.index(c) for c in output))


_OPTIMIZERS = {"auto": None, True: "optimal", "optimal": "optimal", "greedy": "greedy"}


def contraction_path(subscripts: str, shapes, optimize) -> list[tuple[int, ...]]:
  """The order `einsum` contracts its operands in, as numpy's `einsum_path` gives it: each
  step's operand positions, their result appended last.  `optimize` is "auto" (JAX's
  default: the cheapest order for up to four operands, else greedy), True or "optimal",
  "greedy", False (left to right) or such a path itself; intermediates are never capped."""
  if optimize is False:
    return [(0, 1)] * (len(shapes) - 1)
  if isinstance(optimize, (list, tuple)):
    path = list(optimize)
    return path[1:] if path and path[0] == "einsum_path" else path
  if not isinstance(optimize, (str, bool)) or optimize not in _OPTIMIZERS:
    raise ValueError(f"einsum: optimize must be 'auto', 'optimal', 'greedy', True, False or "
                     f"a contraction path, got {optimize!r}")
  kind = _OPTIMIZERS[optimize] or ("optimal" if len(shapes) <= 4 else "greedy")
  return np.einsum_path(subscripts, *shape_stand_ins(shapes), optimize=(kind, 2 ** 62))[0][1:]


def shape_stand_ins(shapes) -> list[np.ndarray]:
  """numpy arrays of `shapes` holding no memory (one broadcast element), for numpy functions
  that read only shapes (`einsum_path`)."""
  return [np.broadcast_to(np.empty((), np.float32), s) for s in shapes]


def interleaved_subscripts(name: str, args: tuple) -> tuple[str, tuple]:
  """numpy's other form, `(x, [0, 1], y, [1, 2], [0, 2])` (operands each followed by its
  axes' integer labels, the output's last and optional), as a subscripts string and the
  operands; labels 0-51 read as the letters A-Z then a-z, `...` as an ellipsis."""
  paired, output = (args, None) if len(args) % 2 == 0 else (args[:-1], args[-1])
  operands, sublists = paired[0::2], paired[1::2]

  def letters(sublist):
    labels = None if isinstance(sublist, str) or not hasattr(sublist, "__iter__") \
        else list(sublist)
    if labels is None or not all(l is Ellipsis or (isinstance(l, (int, np.integer)) and
                                                   0 <= l < 52) for l in labels):
      raise TypeError(f"{name}: subscripts must be a string, or a list of integers 0-51 (or "
                      f"...) after each operand, got {sublist!r}")
    return "".join("..." if l is Ellipsis else string.ascii_letters[(l + 26) % 52]
                   for l in labels)

  inputs = ",".join(map(letters, sublists))
  return inputs + ("" if output is None else "->" + letters(output)), operands


def _take_diagonals(spec: str, x):
  """Resolves an index repeated within one operand ('ii') by taking that diagonal."""
  from minijax.numpy.shape import diagonal
  while len(set(spec)) != len(spec):
    c = next(c for c in spec if spec.count(c) > 1)
    p = spec.index(c)
    q = spec.index(c, p + 1)
    x = diagonal(x, 0, p, q)
    spec = spec[:p] + spec[p + 1:q] + spec[q + 1:] + c
  return spec, x


def vecmat(x1, x2, /):
  """Σ conj(x1[..., i]) x2[..., i, j]: vector-matrix products over the last axes."""
  a, b = _util.promote("vecmat", x1, x2)
  if _util.ndim(a) < 1 or _util.ndim(b) < 2:
    raise ValueError(f"vecmat: x1 needs at least 1 axis and x2 at least 2 (signature "
                     f"(n),(n,m)->(m)), got shapes {_util.shape(a)} and {_util.shape(b)}")
  import minijax.numpy as jnp
  return jnp.matmul(jnp.conj(a)[..., None, :], b)[..., 0, :]


def matvec(x1, x2, /):
  """Σ x1[..., i, j] x2[..., j]: matrix-vector products over the last axes."""
  a, b = _util.promote("matvec", x1, x2)
  if _util.ndim(a) < 2 or _util.ndim(b) < 1:
    raise ValueError(f"matvec: x1 needs at least 2 axes and x2 at least 1 (signature "
                     f"(n,m),(m)->(n)), got shapes {_util.shape(a)} and {_util.shape(b)}")
  import minijax.numpy as jnp
  return jnp.matmul(a, b[..., None])[..., 0]
