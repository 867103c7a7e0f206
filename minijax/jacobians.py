"""Jacobians and Hessians: `jacfwd`, `jacrev` (alias `jacobian`), `hessian`.

Built on the transformations of `minijax.api`: `jacfwd` vmaps a jvp over the standard basis
of each input, `jacrev` a vjp over that of each output, one vmap per axis, so no reshapes
are needed; each Jacobian entry takes the weak type of the leaf whose dtype it has, as in
JAX.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from minijax import lax
from minijax.api import (check_input_dtype_revderiv, check_output_dtype_revderiv, dtype_name,
                         is_complex, jvp, vjp, vmap)
from minijax.api_util import argnums_partial, public_name, wraps
from minijax.core import dtypes
from minijax.core.traceback_util import api_boundary
from minijax.interpreters import ad
from minijax.tree_util import internal as tree_util


def _std_basis(aval) -> np.ndarray:
  """The identity map of `aval`'s space, shaped `aval.shape * 2`."""
  n = aval.size
  return np.eye(n, dtype=aval.dtype).reshape(aval.shape + aval.shape)


def _nested_vmap(f, ndim: int, out_axis_of):
  """Maps `f` over the leading `ndim` axes of its argument (one vmap per axis)."""
  for k in reversed(range(ndim)):
    f = vmap(f, in_axes=0, out_axes=out_axis_of(k))
  return f


def _weak_like(x, weak: bool):
  """`x`, weakly typed when `weak` (a Jacobian entry takes the weak type of the leaf whose
  dtype it has, as in JAX)."""
  return lax.convert_element_type(x, ad.get_aval(x).dtype, True) if weak else x


def _jac_assemble(per_input, in_tree, out_tree, argnums):
  """`per_input[j][i]` (input leaf j, output leaf i) into out-tree-of-in-tree form."""
  rows = [in_tree.unflatten([col[i] for col in per_input]) for i in range(out_tree.num_leaves)]
  rows = [r[0] if isinstance(argnums, int) else r for r in rows]
  return out_tree.unflatten(rows)


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Jacobian by forward mode: one jvp per input element, batched with vmap."""
  int_argnums = isinstance(argnums, int)
  argnums_t = (argnums,) if int_argnums else tuple(argnums)

  @api_boundary
  @wraps(fun)  # its signature, so that jit's static_argnames can name parameters
  def jac_f(*args, **kwargs):  # (keyword arguments are passed through, not differentiated)
    partial_fun, dyn = argnums_partial(fun, args, argnums_t, kwargs)
    flat, in_tree = tree_util.tree_flatten(dyn)

    def flat_fun(*leaves):
      return partial_fun(*in_tree.unflatten(leaves))

    out_box = {}

    def push(j, t):
      tangents = [t if k == j else ad.zeros_like_aval(ad.get_aval(x).tangent_aval())
                  for k, x in enumerate(flat)]
      res = jvp(flat_fun, tuple(flat), tuple(tangents), has_aux=has_aux)
      out_box["tree"] = tree_util.tree_structure(res[0])
      out_box["outs"] = tree_util.tree_leaves(res[0])
      if has_aux:
        out_box["aux"] = res[2]
      return tree_util.tree_leaves(res[1])

    for x in flat:
      _check_input_dtype_jacfwd(holomorphic, x)
    cols = []
    for j, x in enumerate(flat):
      aval = ad.get_aval(x)
      basis = _std_basis(aval)
      cols.append(_nested_vmap(functools.partial(push, j), aval.ndim,
                               lambda k, n=aval.ndim: k - n)(basis))
    if not flat:
      raise TypeError("jacfwd needs at least one differentiable input")
    if holomorphic:
      for o in out_box["outs"]:
        if not is_complex(ad.get_aval(o).dtype):
          raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, "
                          f"but got {dtype_name(ad.get_aval(o).dtype)}.")
    out_weak = [ad.get_aval(o).weak_type for o in out_box["outs"]]
    cols = [[_weak_like(c, w) for c, w in zip(col, out_weak)] for col in cols]
    jac = _jac_assemble(cols, in_tree, out_box["tree"], argnums)
    return (jac, out_box["aux"]) if has_aux else jac
  return jac_f


def _check_input_dtype_jacfwd(holomorphic, x):
  dtype = ad.get_aval(x).dtype
  if holomorphic:
    if not is_complex(dtype):
      raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, but "
                      f"got {dtype_name(dtype)}.")
  elif not dtypes.is_float(dtype):
    raise TypeError(
        "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
        f"but got {dtype_name(dtype)}. For holomorphic differentiation, pass holomorphic=True. "
        "For differentiation of non-holomorphic functions involving complex inputs or integer "
        f"inputs, use {public_name('jvp')} directly.")


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
  """The Jacobian by reverse mode: one vjp per output element, batched with vmap."""
  int_argnums = isinstance(argnums, int)
  argnums_t = (argnums,) if int_argnums else tuple(argnums)

  @api_boundary
  @wraps(fun)  # its signature, so that jit's static_argnames can name parameters
  def jac_f(*args, **kwargs):  # (keyword arguments are passed through, not differentiated)
    partial_fun, dyn = argnums_partial(fun, args, argnums_t, kwargs)
    for x in tree_util.tree_leaves(dyn):
      check_input_dtype_revderiv("jacrev", holomorphic, allow_int, x)

    res = vjp(partial_fun, *dyn, has_aux=has_aux)
    out, pullback = res[0], res[1]
    out_leaves, out_tree = tree_util.tree_flatten(out)
    for o in out_leaves:
      check_output_dtype_revderiv("jacrev", holomorphic, o)
    in_tree = tree_util.tree_structure(dyn)
    rows = []
    for i, o in enumerate(out_leaves):
      aval = ad.get_aval(o)

      def pull(ct, i=i):
        cts = [ct if k == i else ad.zeros_like_aval(ad.get_aval(x).tangent_aval())
               for k, x in enumerate(out_leaves)]
        return tree_util.tree_leaves(pullback(out_tree.unflatten(cts)))

      rows.append(_nested_vmap(pull, aval.ndim, lambda k: 0)(_std_basis(aval)))
    in_weak = [ad.get_aval(x).weak_type for x in tree_util.tree_leaves(dyn)]
    per_input = [[_weak_like(row[j], in_weak[j]) for row in rows]
                 for j in range(in_tree.num_leaves)]
    jac = _jac_assemble(per_input, in_tree, out_tree, argnums)
    return (jac, res[2]) if has_aux else jac
  return jac_f


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Hessian, as `jacfwd(jacrev(fun))`."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)


jacobian = jacrev
