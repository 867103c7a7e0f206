"""`minijax.numpy.vectorize`: numpy's vectorize, with generalized-ufunc `signature`s, by vmap.

A signature such as `"(m,n),(n)->(m)"` names the core dimensions of each argument and
result: the trailing dimensions the function sees.  The other (loop) dimensions of the
arguments are broadcast together with numpy's rules; every argument is broadcast to the
loop shape followed by its own core shape, the loop dimensions are flattened into one, and
the function runs once under `vmap` over it; the results get the loop shape back.  Without a
signature every argument is a scalar to the function and each result keeps whatever shape
the function gives it.  Sizes bound to one core name must agree across arguments and results,
or a ValueError names the dimension.
"""
from __future__ import annotations

import functools
import math
import re

from minijax.numpy import _util

__all__ = ["vectorize"]

_DIMS = r"\(\s*(?:\w+(?:\s*,\s*\w+)*)?\s*\)"
_SIGNATURE = re.compile(rf"^\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*->\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*$")


def _parse_signature(signature: str):
  """`"(m,n),(n)->(m)"` -> ([("m", "n"), ("n",)], [("m",)])."""
  if not _SIGNATURE.match(signature):
    raise ValueError(f"not a valid gufunc signature: {signature}")
  ins, outs = signature.split("->")
  parse = lambda side: [tuple(re.findall(r"\w+", group)) for group in re.findall(r"\(.*?\)", side)]
  return parse(ins), parse(outs)


def _bind_sizes(sizes: dict, shape: tuple, core: tuple, what: str) -> None:
  if len(shape) < len(core):
    raise ValueError(f"input with shape {shape} does not have enough dimensions for all core "
                     f"dimensions {core} ({what})")
  for name, size in zip(core, shape[len(shape) - len(core):]):
    if sizes.setdefault(name, size) != size:
      raise ValueError(f"inconsistent size for core dimension {name!r}: {size} vs "
                       f"{sizes[name]} ({what} against the arguments before it)")


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
  """`pyfunc` applied over the loop dimensions of its arguments (see the module docstring).
  `excluded` holds the positions (ints) or names (strs) of arguments passed through as they
  are."""
  if any(not isinstance(e, (int, str)) for e in excluded):
    raise TypeError("minijax.numpy.vectorize can only exclude integer or string arguments, "
                    f"but excluded={excluded!r}")
  if any(isinstance(e, int) and e < 0 for e in excluded):
    raise ValueError(f"excluded={excluded!r} contains negative numbers")
  parsed = None if signature is None else _parse_signature(signature)

  @functools.wraps(pyfunc)
  def wrapped(*args, **kwargs):
    from minijax.tree_util import internal as tree_util
    from minijax.api import vmap
    jnp = _jnp()
    none_args = {i for i, a in enumerate(args) if a is None and i not in excluded}
    if none_args and parsed is not None:
      raise ValueError(f"Cannot pass None at locations {none_args} with "
                       f"signature={signature!r}")
    dynamic = [i for i in range(len(args)) if i not in excluded and i not in none_args]
    static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
    dynamic_kwargs = [k for k in kwargs if k not in excluded]
    arrays = ([jnp.asarray(args[i]) for i in dynamic]
              + [jnp.asarray(kwargs[k]) for k in dynamic_kwargs])
    if parsed is None:
      in_cores, out_cores = [()] * len(arrays), None
    else:
      in_cores, out_cores = parsed
      if len(in_cores) != len(arrays):
        raise TypeError(f"wrong number of positional arguments: expected {len(in_cores)} for "
                        f"signature {signature}, got {len(arrays)}")
    sizes: dict = {}
    loops = []
    for k, (x, core) in enumerate(zip(arrays, in_cores)):
      shape = _util.shape(x)
      _bind_sizes(sizes, shape, core, f"argument {k}")
      loops.append(shape[:len(shape) - len(core)])
    loop_shape = _util.broadcast_shapes("vectorize", *loops) if loops else ()
    flat = [jnp.reshape(jnp.broadcast_to(x, loop_shape + _util.shape(x)[len(loop)::]),
                        (math.prod(loop_shape),) + _util.shape(x)[len(loop):])
            for x, loop in zip(arrays, loops)]

    def call(*xs):
      full = list(args)
      for i, x in zip(dynamic, xs):
        full[i] = x
      named = dict(static_kwargs, **dict(zip(dynamic_kwargs, xs[len(dynamic):])))
      out = pyfunc(*full, **named)
      if out_cores is not None:
        _check_outputs(out, out_cores, sizes, signature)
      return out

    if not loop_shape:
      return call(*arrays)
    out = vmap(call)(*flat)
    return tree_util.tree_map(lambda o: jnp.reshape(o, loop_shape + _util.shape(o)[1:]), out)
  return wrapped


def _check_outputs(out, out_cores, sizes: dict, signature: str) -> None:
  outs = out if len(out_cores) > 1 else (out,)
  if len(out_cores) > 1 and not isinstance(out, tuple):
    raise TypeError(f"output must be a tuple when multiple outputs are expected, got: "
                    f"{type(out).__name__} (signature {signature} has {len(out_cores)} outputs)")
  if len(outs) != len(out_cores):
    raise TypeError(f"wrong number of output arguments: expected {len(out_cores)}, got "
                    f"{len(outs)} (signature {signature})")
  for k, (o, core) in enumerate(zip(outs, out_cores)):
    shape = _util.shape(o)
    if len(shape) != len(core):
      raise ValueError(f"output shape {shape} does not match core dimensions {core} "
                       f"(output {k} of signature {signature})")
    _bind_sizes(sizes, shape, core, f"output {k}")


def _jnp():
  import minijax.numpy as jnp
  return jnp
