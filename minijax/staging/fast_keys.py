"""The keys of `jit`'s fast path: per shape of call (how many positional arguments, which
keyword names, which static positions), a function generated once in unrolled code that
reads each argument's aval, committed bit and buffer in one frame (`key_function`); its
variants for calls that also pass Python scalars (`mixed_key_function`) or pytrees
(`pytree_key`).  `staging/jit.py` looks entries up by these keys; `csrc/fast_path.cc`
builds the same keys in C for calls on Arrays (and static arguments), and a change here
must be made there too (`tests/test_dispatch.py` checks that those calls never miss)."""
from __future__ import annotations

import operator
from typing import Any, Callable

from minijax.tree_util import internal as tree_util
from minijax.core.avals import python_scalar_aval
from minijax.core.dtypes import PYTHON_SCALARS
from minijax.runtime.array import Array

_flatten = tree_util.registry.flatten


def _arg_aval(x):
  """The aval of an argument on `jit`'s fast path: a Python scalar's, or an Array's
  (AttributeError for anything without an aval)."""
  if type(x) in PYTHON_SCALARS:
    return python_scalar_aval(x)
  return x.aval


def _any_committed(values) -> bool:
  return any(type(x) is Array and x._committed for x in values)


_key_functions: dict[tuple, Callable] = {}
_UNROLL_LIMIT = 256  # beyond this many arguments, keys are built by `map` (see `_by_map`)
_aval_of, _buffer_of = operator.attrgetter("aval"), operator.attrgetter("_buffer")
_committed_of = operator.attrgetter("_committed")


def _by_map(args, kwargs=None):
  return ((*map(_aval_of, args), any(map(_committed_of, args))),
          list(map(_buffer_of, args)))


class _CallShape:
  """The head of the fast path's keys for calls with keyword arguments: one object per
  number of positional arguments and set of keyword names, hashed by identity (cheaper
  than a tuple of them)."""
  __slots__ = ("n", "kw_names")

  def __init__(self, n: int, kw_names: tuple):
    self.n, self.kw_names = n, kw_names

  def __repr__(self):
    return f"<call shape: {self.n} positional, keywords {', '.join(self.kw_names)}>"


def key_function(n: int, static: frozenset, with_static: bool, kw_names: tuple = (),
                  static_kw: frozenset = frozenset()) -> Callable:
  """The fast path's key and argument buffers for a call with `n` positional arguments
  (and keyword arguments named `kw_names`, in any order), in unrolled code (three
  attribute reads per argument, no loop, one frame), generated once per shape of call.
  Without static or keyword arguments, `key(args)` is `(avals, buffers)`: the tuple of the
  arguments' avals, ended by whether any of them is committed to its device, and the list
  of their buffers.  Otherwise (`with_static`: the static ones are at the positions
  `static` and named `static_kw`) `key(args, kwargs)` is `(key, dynamic arguments, their
  buffers)`: the key holds the shape of call (`n`, or an object standing for `n` and the
  keyword names), each static value and its type (so `1` and `1.0` are two keys, as in
  JAX), each dynamic argument's aval and whether any is committed; the dynamic arguments
  are in the order of the traced jaxpr's inputs (positional ones, then keyword ones by
  name).  AttributeError for a dynamic argument that is not an Array (no aval, or no
  buffer); KeyError when the call's keyword names are not `kw_names`."""
  cache_key = (n, static, with_static, kw_names, static_kw)
  fn = _key_functions.get(cache_key)
  if fn is None:
    if not (with_static or kw_names) and n > _UNROLL_LIMIT:
      return _by_map
    kw_names = tuple(sorted(kw_names))
    names = [f"a{i}" for i in range(n)]
    kws = [f"k{i}" for i in range(len(kw_names))]
    namespace: dict = {"SHAPE": _CallShape(n, kw_names)}
    if with_static or kw_names:
      head = "SHAPE" if kw_names else str(n)
      parts = [head] + [f"{a}, type({a})" if i in static else f"{a}.aval"
                        for i, a in enumerate(names)]
      parts += [f"{k}, type({k})" if name in static_kw else f"{k}.aval"
                for k, name in zip(kws, kw_names)]
      dynamic = [a for i, a in enumerate(names) if i not in static]
      dynamic += [k for name, k in zip(kw_names, kws) if name not in static_kw]
      parts.append(" or ".join(f"{d}._committed" for d in dynamic) or "False")
      result = (f"({', '.join(parts)}), ({''.join(d + ', ' for d in dynamic)}), "
                f"[{''.join(d + '._buffer, ' for d in dynamic)}]")
    else:
      committed = " or ".join(f"{a}._committed" for a in names) or "False"
      result = ("(" + "".join(f"{a}.aval, " for a in names) + f"{committed}), ["
                + "".join(f"{a}._buffer, " for a in names) + "]")
    unpack = f"  {''.join(a + ', ' for a in names)}= args\n" if n else ""
    if kws:  # by name, so that any order of the same names gives the same key
      unpack += f"  if len(kwargs) != {len(kws)}:\n    raise KeyError\n"
      unpack += "".join(f"  {k} = kwargs[{name!r}]\n" for k, name in zip(kws, kw_names))
    exec(f"def key(args, kwargs=None):\n{unpack}  return {result}\n", namespace)  # noqa: S102
    fn = _key_functions[cache_key] = namespace["key"]
  return fn


def mixed_key_function(n: int) -> Callable:
  """Like `key_function(n, ...)` without static or keyword arguments, for calls that
  also pass Python scalars (the eager `x + 1`): `(avals, buffers)` when all `n` arguments
  are Arrays, else `(avals, None)`, a scalar's aval being `python_scalar_aval`'s (and the
  avals ended by whether an Array among them is committed), and AttributeError only for
  an argument that is neither.  A type check per argument costs
  less than the AttributeError that a scalar raises in `key_function`'s code; `jit` takes
  this one for `n` arguments once a call with `n` raised that."""
  fn = _key_functions.get(("mixed", n))
  if fn is None:
    if n > _UNROLL_LIMIT:
      def fn(args, kwargs=None):
        if all(type(a) is Array for a in args):
          return _by_map(args)
        return (*map(_arg_aval, args), _any_committed(args)), None
      return fn
    names = [f"a{i}" for i in range(n)]
    code = (f"def key(args, kwargs=None):\n  {''.join(a + ', ' for a in names)}= args\n"
            f"  if {' and '.join(f'type({a}) is Array' for a in names)}:\n"
            f"    return ({''.join(a + '.aval, ' for a in names)}"
            f"{' or '.join(a + '._committed' for a in names)}), "
            f"[{''.join(a + '._buffer, ' for a in names)}]\n"
            f"  return ({''.join(f'aval({a}), ' for a in names)}committed(args)), None\n")
    namespace: dict = {"Array": Array, "aval": _arg_aval, "committed": _any_committed}
    exec(code, namespace)  # noqa: S102
    fn = _key_functions[("mixed", n)] = namespace["key"]
  return fn


def pytree_key(args) -> tuple[Any, tuple, list | None]:
  """`(key, flat, buffers)` of the fast path for arguments that are not all Arrays (see
  `staging.jit._jitted`); the key is None when some leaf has no aval, `buffers` the leaves' buffers
  when they are all Arrays, else None.  A function of its own, so that the slow path is
  never called inside an `except` block: its errors would be chained to the fast path's
  AttributeErrors."""
  try:
    return (*map(_arg_aval, args), _any_committed(args)), args, None  # Python scalars too
  except AttributeError:
    pass
  flat, in_tree = _flatten(args)
  try:
    avals, buffers = key_function(len(flat), frozenset(), False)(flat)
    return (in_tree, avals), flat, buffers
  except AttributeError:
    pass
  try:
    return (in_tree, *map(_arg_aval, flat), _any_committed(flat)), flat, None
  except AttributeError:
    return None, flat, None
