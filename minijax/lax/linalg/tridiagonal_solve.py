"""`tridiagonal_solve`: solves `A x = b` for a tridiagonal `A` given by its three diagonals,
lowered to jaxlib's LAPACK kernel gtsv (Gaussian elimination with partial pivoting), as JAX
lowers it on CPU; with `perturb_singular=True`, to jaxlib's kernel that perturbs a zero
pivot slightly instead (a singular system gets a finite answer, not NaN).

`dl`, `d`, `du` are `[..., m]` (row i of A is `dl[i], d[i], du[i]` around the diagonal, so
`dl[0]` and `du[m-1]` are not read) and `b` is `[..., m, n]`.  The solve is linear in `b`:
its transpose is the solve with A's transpose, whose sub-diagonal is `du` shifted down one
and super-diagonal `dl` shifted up one.  Its jvp in the diagonals is `A^-1 (db - dA x)`.
"""
from __future__ import annotations

from minijax import lax
from minijax.core.avals import ShapedArray
from minijax.core.primitive import Primitive
from minijax.interpreters import ad, batching
from minijax.lax.linalg import lapack
from minijax.lax.linalg import matrices as mx
from minijax.lowering import mlir

__all__ = ["tridiagonal_solve", "tridiagonal_solve_p"]

tridiagonal_solve_p = Primitive("tridiagonal_solve")


def _abstract_eval(dl, d, du, b, *, perturb_singular):
  mx.check_dtypes("tridiagonal_solve", dl, d, du, b)
  if (len({dl.shape, d.shape, du.shape}) != 1 or b.ndim != d.ndim + 1
      or b.shape[:-1] != d.shape or len({dl.dtype, d.dtype, du.dtype, b.dtype}) != 1):
    raise ValueError(
        "tridiagonal_solve takes dl, d, du of one shape [..., m] and b of shape [..., m, n], "
        f"all of one dtype, got {dl.str_short()}, {d.str_short()}, {du.str_short()} and "
        f"{b.str_short()}")
  return ShapedArray(b.shape, b.dtype, b.weak_type)


def _lowering(ctx, dl, d, du, b, *, perturb_singular):
  avals = ctx.avals_in
  batch = avals[3].shape[:-2]
  if perturb_singular:
    (x,) = lapack.lapack_call("tridiagonal_solve_perturbed_ffi", [dl, d, du, b], avals,
                              [avals[3]])
    return x
  *_, x, info = lapack.lapack_call(
      lapack.target("gtsv_ffi", avals[3].dtype), [dl, d, du, b], avals,
      [*avals, lapack.info_aval(batch)], aliases={0: 0, 1: 1, 2: 2, 3: 3})
  return lapack.nan_where_failed(x, avals[3], lapack.succeeded(info, batch), batch)


def _shift(v, by: int, axis: int = -1):
  """`v` moved along `axis` by `by` places (+1: toward higher indices), zero-filled."""
  config = [(0, 0, 0)] * v.ndim
  config[axis] = (by, -by, 0)
  return lax.pad(v, lax.full((), 0, v.dtype), config)


def _matvec(dl, d, du, x):
  """A x for the tridiagonal A (rows dl[i] x[i-1] + d[i] x[i] + du[i] x[i+1]), x [..., m, n]."""
  column = lambda v: lax.expand_dims(v, (v.ndim,))
  return lax.add(lax.add(lax.mul(column(dl), _shift(x, 1, -2)), lax.mul(column(d), x)),
                 lax.mul(column(du), _shift(x, -1, -2)))


def _jvp(primals, tangents, **params):
  dl, d, du, b = primals
  x = tridiagonal_solve_p.bind(*primals, **params)
  t_dl, t_d, t_du, t_b = (ad.instantiate_zeros(t) for t in tangents)
  rhs = lax.sub(t_b, _matvec(t_dl, t_d, t_du, x))
  return x, tridiagonal_solve_p.bind(dl, d, du, rhs, **params)


def _transpose(ct, dl, d, du, b, **params):
  if any(ad.is_undefined_primal(v) for v in (dl, d, du)):
    raise NotImplementedError("tridiagonal_solve is linear in b only")
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  # A^T: sub-diagonal du shifted down one, super-diagonal dl shifted up one
  return [None, None, None,
          tridiagonal_solve_p.bind(_shift(du, 1), d, _shift(dl, -1), ct, **params)]


def _batch(args, dims, **params):
  size = next(a.shape[dim] for a, dim in zip(args, dims) if dim is not None)
  return tridiagonal_solve_p.bind(
      *(batching.bdim_at_front(a, dim, size) for a, dim in zip(args, dims)), **params), 0


tridiagonal_solve_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(tridiagonal_solve_p, _lowering)
ad.primitive_jvps[tridiagonal_solve_p] = _jvp
ad.primitive_transposes[tridiagonal_solve_p] = _transpose
batching.primitive_batchers[tridiagonal_solve_p] = _batch


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
  """The solution x of A x = b for the tridiagonal A with sub-diagonal `dl`, diagonal `d`
  and super-diagonal `du` (each `[..., m]`; `dl[..., 0]` and `du[..., m-1]` are ignored),
  `b` of shape `[..., m, n]`; `perturb_singular`: see the module's docstring."""
  dl, d, du, b = (lax.convert_to_array(v) for v in (dl, d, du, b))
  return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))
