"""`minijax.ad_checkpoint`: `checkpoint` (remat), `checkpoint_name` and the checkpoint
policies, under the names of `jax.ad_checkpoint` (defined in `minijax.lax.remat`), and
`saved_residuals` / `print_saved_residuals`: what reverse mode saves of a function for its
backward pass, read off the jaxpr of its `vjp` (the residuals are the leaves of the
returned function)."""
import inspect

from minijax.tree_util import internal as tree_util
from minijax.api import vjp
from minijax.core.jaxpr import ClosedJaxpr
from minijax.interpreters.partial_eval import trace_pytree_fun
from minijax.lax.remat import (checkpoint, checkpoint_name, checkpoint_policies,
                               dots_saveable, dots_with_no_batch_dims_saveable,
                               everything_saveable, name_p, nothing_saveable, remat,
                               save_any_names_but_these, save_from_both_policies,
                               save_only_these_names, saved_residuals_of)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "dots_saveable",
           "dots_with_no_batch_dims_saveable", "everything_saveable", "name_p",
           "nothing_saveable", "print_saved_residuals", "remat", "save_any_names_but_these",
           "save_from_both_policies", "save_only_these_names", "saved_residuals"]


def saved_residuals(f, *args, **kwargs) -> list[tuple]:
  """`(aval, where it comes from)` for each value that `vjp(f, ...)` saves for the backward
  pass at these arguments: "from the argument x[0]", "output of sin from f.py:3 (f)",
  "named 'z' from ...", "from a constant", "from a literal"."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))

  def flat_f(*leaves):  # (keyword arguments are differentiated too)
    a, k = tree_util.tree_unflatten(in_tree, leaves)
    return f(*a, **k)

  def residuals(*leaves):
    return tree_util.tree_leaves(vjp(flat_f, *leaves)[1])

  jaxpr, consts, _, _ = trace_pytree_fun(residuals, leaves)
  closed = ClosedJaxpr(jaxpr, consts)
  return saved_residuals_of(closed.jaxpr, closed.jaxpr.outvars, _arg_names(f, args, kwargs))


def print_saved_residuals(f, *args, **kwargs) -> None:
  """Prints `saved_residuals(f, *args, **kwargs)`, one residual a line."""
  for aval, source in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {source}")


def _arg_names(f, args, kwargs) -> list | None:
  """The name of each leaf of `(args, kwargs)` in `f`'s signature (`x[0]`, `y`)."""
  try:
    params = [p for p in inspect.signature(f).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  except (TypeError, ValueError):
    return None
  names = []
  for path, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]:
    which, key, *rest = path
    if which.idx == 1:
      name = key.key
    elif key.idx < len(params):
      name = params[key.idx].name
    else:
      return None  # (a *args parameter: JAX names these by index too)
    names.append(name + tree_util.keystr(rest))
  return names
