"""What the transformations share about the functions they wrap: argument numbers, names,
identity.

`jit`, `vmap`, `grad` and friends take `static_argnums`-style arguments, and name the
flat arguments of a traced function (`x`, `params['w']`, `args[2]`) in jaxprs and errors.

`function_key(f)` is what caches that call a function back (the tap consumer registry, the
eager cache of executables) key it on: two functions share a key only when calling one
is calling the other.  Plain functions, `functools.partial` and other callables without
an `__eq__` of their own are their own key (they compare by identity); so are bound
methods, which compare their `__self__` by identity, so that `obj.method`, a new object at
each access, finds what it found before; a callable may name its key (`_function_key()`,
as host_callback's wrappers do, from the function they wrap); any other callable (a frozen
dataclass with `__call__`, say) is keyed by identity, whatever its `__eq__` says.
"""
from __future__ import annotations

import inspect
import functools
import re
import sys
import types
from typing import Any, Callable, NamedTuple

from minijax import tree_util as user_tree_util
from minijax.tree_util import internal as tree_util


def public_name(name: str) -> str:
  """How errors name the public function `name`: `jax.<name>` when minijax stands in for
  JAX (`install_as_jax`, so the user wrote `jax.<name>`), else `minijax.<name>`."""
  module = sys.modules.get("jax")
  standing_in = module is not None and "__minijax__" in getattr(module, "__dict__", {})
  return f"{'jax' if standing_in else 'minijax'}.{name}"


def wraps(wrapped: Callable) -> Callable[[Callable], Callable]:
  """`functools.wraps` for any callable a user hands a transformation: what cannot be copied
  (an object's `__name__` that is not a string, a read-only attribute) is left out, as JAX
  leaves it out."""
  def decorate(wrapper: Callable) -> Callable:
    for attr in functools.WRAPPER_ASSIGNMENTS:
      try:
        setattr(wrapper, attr, getattr(wrapped, attr))
      except (AttributeError, TypeError):
        pass
    try:
      wrapper.__dict__.update(getattr(wrapped, "__dict__", {}))
    except (AttributeError, TypeError):
      pass
    wrapper.__wrapped__ = wrapped
    return wrapper
  return decorate


def normalize_argnums(argnums) -> tuple[int, ...]:
  """`None`, an int or a sequence of ints, as a tuple."""
  if argnums is None:
    return ()
  if isinstance(argnums, int):
    argnums = (argnums,)
  return tuple(argnums)


def argnums_partial(fun: Callable, args: tuple, argnums: tuple[int, ...],
                    kwargs: dict | None = None) -> tuple[Callable, tuple]:
  """`(partial, dynamic)`: `fun` as a function of its arguments at `argnums` in the call
  `fun(*args, **kwargs)`, the others fixed, and those arguments (what `grad`, `jacfwd` and
  `jacrev` differentiate)."""
  kwargs = kwargs or {}

  def partial(*dynamic):
    full = list(args)
    for i, a in zip(argnums, dynamic):
      full[i] = a
    return fun(*full, **kwargs)
  return partial, tuple(args[i] for i in argnums)


def prefix_pairs(prefix, tree, *, is_leaf: Callable[[Any], bool], name: str,
                 mismatch: Callable[[str], Exception]) -> list[tuple[Any, Any]]:
  """`(leaf of prefix, the subtree of tree it covers)` for each leaf of `prefix`, a tree
  prefix of `tree` (`is_leaf` says which nodes of `prefix` are leaves); when it is not a
  prefix, `mismatch(details)` is raised, `details` listing where the two part (key paths
  start with `name`)."""
  spec_leaves, spec_tree = tree_util.tree_flatten(prefix, is_leaf=is_leaf)
  try:
    subtrees = spec_tree.flatten_up_to(tree)
  except (ValueError, TypeError):
    raise mismatch(mismatch_details(prefix, tree, name, is_leaf)) from None
  return list(zip(spec_leaves, subtrees))


def mismatch_details(prefix, tree, name: str, is_leaf=None) -> str:
  """The places where `prefix` is not a tree prefix of `tree`, as lines to append to an
  error ("" if none is found)."""
  errors = tree_util.prefix_errors(prefix, tree, name, is_leaf)
  if not errors:
    return ""
  return f"\n  Mismatch details ({len(errors)} found):\n  " + "\n  ".join(errors)


def broadcast_prefix(prefix, tree, *, transform: str, what: str,
                     check_leaf: Callable[[Any], None] | None = None) -> list:
  """One entry of `prefix` (an `in_axes`-like tree, `None` a leaf) for each leaf of `tree`;
  `check_leaf` is called on each of `prefix`'s leaves (and raises the transformation's
  own error for a bad one)."""
  def mismatch(details):
    return ValueError(f"{transform} {what} specification must be a tree prefix of the "
                      f"corresponding value; got specification {prefix} for value tree "
                      f"{tree_util.tree_structure(tree)}.{details}")
  out = []
  for spec, sub in prefix_pairs(prefix, tree, is_leaf=lambda x: x is None, name=what,
                                mismatch=mismatch):
    if check_leaf is not None:
      check_leaf(spec)
    out.extend([spec] * len(tree_util.tree_leaves(sub)))
  return out


def _same_node(a, b) -> bool:
  """Whether two treedefs' roots are the same kind of node with the same aux data (False
  when the aux data cannot be compared, such as arrays)."""
  try:
    return bool(a.node_data() == b.node_data())
  except Exception:  # (an array's ambiguous truth value, a custom __eq__ that raises)
    return False


def broadcast_prefix_to_treedef(prefix, treedef) -> list | None:
  """`broadcast_prefix` against a tree's structure alone (`None` a leaf of `prefix`), so
  that no node of the tree is rebuilt (`vmap`'s results, whose batch axes are not yet in
  place, would fail a custom node's checks); None where `prefix` is not a prefix of it."""
  spec_leaves, spec_tree = tree_util.tree_flatten(prefix, is_leaf=lambda x: x is None)
  out: list = []

  def walk(start: int, spec, full) -> bool:
    if spec.num_nodes == 1 and spec.num_leaves == 1:
      out.extend(spec_leaves[start:start + 1] * full.num_leaves)
      return True
    if full.num_nodes == 1 and full.num_leaves == 1 or not _same_node(spec, full):
      return False
    spec_children, full_children = spec.children(), full.children()
    if len(spec_children) != len(full_children):
      return False
    for spec_child, full_child in zip(spec_children, full_children):
      if not walk(start, spec_child, full_child):
        return False
      start += spec_child.num_leaves
    return True
  return out if walk(0, spec_tree, treedef) else None


class SameObject:
  """Compares and hashes by the identity of `obj`, which it keeps alive (so that its id
  cannot be reused while the key exists)."""
  __slots__ = ("obj",)

  def __init__(self, obj):
    self.obj = obj

  def __eq__(self, other):
    return type(other) is SameObject and other.obj is self.obj

  def __hash__(self):
    return id(self.obj)

  def __repr__(self):
    return f"SameObject({self.obj!r:.60})"


def function_key(f: Callable) -> Any:
  """A hashable key shared only by callables that are the same function (see above)."""
  cls = type(f)
  if cls is types.FunctionType or cls is types.BuiltinFunctionType or cls is types.MethodType:
    return f
  named = getattr(cls, "_function_key", None)
  if named is not None:
    return named(f)
  if cls.__eq__ is object.__eq__ and cls.__hash__ is object.__hash__:
    return f
  return SameObject(f)


def fun_name(fun: Callable) -> str:
  return getattr(fun, "__name__", None) or type(fun).__name__


class DebugInfo(NamedTuple):
  """What a traced function was traced for (`jit`, `scan`, `cond`, `while_body`...), where it
  is (`func_src_info`: `"f at file.py:12"`, or its name alone when it has no source), the
  names of its flat arguments (`x`, `params['w']`, `args[0]`; None when unknown) and of its
  flat results (`result`, `result['a'][1]`; None until tracing has seen the output), as
  JAX's `DebugInfo` (positional fields in JAX's order)."""
  traced_for: str
  func_src_info: str
  arg_names: tuple[str, ...] | None = None
  result_paths: Any = None  # a tuple, None, or (from JAX-style callers) a thunk

  @property
  def func_name(self) -> str:
    return self.func_src_info.split(" ")[0]

  @property
  def func_filename(self) -> str | None:
    m = _SOURCE_INFO.match(self.func_src_info)
    return m.group(3) if m else None

  @property
  def func_lineno(self) -> int | None:
    m = _SOURCE_INFO.match(self.func_src_info)
    return int(m.group(4)) if m and m.group(4) is not None else None

  def replace_func_name(self, name: str) -> DebugInfo:
    return self._replace(func_src_info=" ".join([name, *self.func_src_info.split(" ")[1:]]))

  def set_result_paths(self, out) -> DebugInfo:
    """This debug info with the results named after `out`, the output's structure (a
    treedef) or the output itself."""
    if not isinstance(out, tree_util.PyTreeDef):
      out = tree_util.tree_structure(out)
    placeholder = out.unflatten(range(out.num_leaves))
    return self._replace(result_paths=tuple(
        "result" + _path_str(path)
        for path, _ in tree_util.tree_flatten_with_path(placeholder)[0]))

  def resolve_result_paths(self) -> DebugInfo:
    if callable(self.result_paths):
      return self._replace(result_paths=tuple(self.result_paths()))
    return self

  def safe_arg_names(self, expected_count: int) -> tuple[str, ...]:
    """The argument names, or `""` for each when unknown or of another count."""
    if self.arg_names is not None and len(self.arg_names) == expected_count:
      return self.arg_names
    return ("",) * expected_count

  def safe_result_paths(self, expected_count: int) -> tuple[str, ...]:
    paths = self.result_paths
    if isinstance(paths, tuple) and len(paths) == expected_count:
      return paths
    return ("",) * expected_count

  def filter_arg_names(self, keep) -> tuple[str, ...] | None:
    if self.arg_names is None:
      return None
    return tuple(n for n, k in zip(self.safe_arg_names(len(keep)), keep) if k)

  def filter_result_paths(self, keep) -> tuple[str, ...] | None:
    if not isinstance(self.result_paths, tuple):
      return None
    return tuple(n for n, k in zip(self.safe_result_paths(len(keep)), keep) if k)

  def with_unknown_names(self) -> DebugInfo:
    return self._replace(arg_names=None, result_paths=None)


_SOURCE_INFO = re.compile(r"([^ ]+)( at (.+):(\d+))?$")
_BUILTIN_NAME = re.compile(r"<built-in function (\S+)>")


def fun_sourceinfo(fun: Callable) -> str:
  """`"name at file:line"` for a Python function (through partials and wrappers), the name
  of a builtin, else `"<unknown>"` (never an object's repr: it would differ each run)."""
  while isinstance(fun, functools.partial):
    fun = fun.func
  try:
    fun = inspect.unwrap(fun)
  except ValueError:
    pass
  code = getattr(fun, "__code__", None)
  if code is not None:
    return f"{getattr(fun, '__name__', '<unknown>')} at {code.co_filename}:{code.co_firstlineno}"
  m = _BUILTIN_NAME.match(str(fun)) if isinstance(fun, types.BuiltinFunctionType) else None
  return m.group(1) if m else "<unknown>"


def flat_arg_names(fun: Callable, args, kwargs) -> list[str]:
  """One name per leaf of `(args, kwargs)`, in the order they flatten (keyword arguments by
  sorted name): the parameter's name and the leaf's path, `args[i]` for the i-th extra
  positional argument and `kw['k']` for an extra keyword one (`args` and `kw` being the
  names of the function's `*args` and `**kw`)."""
  try:
    parameters = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError):
    parameters = []
  positional = [p.name for p in parameters if p.kind in _POSITIONAL]
  var_args = next((p.name for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL),
                  "args")
  keywords = {p.name for p in parameters if p.kind in _BY_KEYWORD}
  var_kw = next((p.name for p in parameters if p.kind is inspect.Parameter.VAR_KEYWORD), None)
  out = []
  for i, arg in enumerate(args):
    base = positional[i] if i < len(positional) else f"{var_args}[{i - len(positional)}]"
    out.extend(base + _path_str(path) for path, _ in tree_util.tree_flatten_with_path(arg)[0])
  for k in sorted(kwargs):
    base = k if k in keywords or var_kw is None else f"{var_kw}[{k!r}]"
    out.extend(base + _path_str(path) for path, _ in
               tree_util.tree_flatten_with_path(kwargs[k])[0])
  return out


def _path_str(path: Any) -> str:
  """`['a'][0]`: the keys of a path, a flattened index shown as a sequence's (`[0]`, where
  the key prints `[<flat index 0>]`), as JAX names arguments and results."""
  return "".join(f"[{k.key}]" if isinstance(k, tree_util.FlattenedIndexKey) else str(k)
                 for k in path)


# ----------------------------------------------------------------------------- static / donated

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_BY_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _str_tuple(names) -> tuple[str, ...]:
  if names is None:
    return ()
  return (names,) if isinstance(names, str) else tuple(names)


def infer_argnums_and_argnames(sig: inspect.Signature | None, argnums, argnames):
  """Completes `(argnums, argnames)` as JAX does: when only one of them is given (not None),
  the other names the same parameters, those that may be passed either way (positional or
  keyword).  `static_argnames="x"` then also covers `x` passed by position, and
  `static_argnums=1` the second parameter passed by keyword."""
  if argnums is None and argnames is None:
    return (), ()
  if sig is None or (argnums is not None and argnames is not None):
    return normalize_argnums(argnums), _str_tuple(argnames)
  params = list(sig.parameters.items())
  either = inspect.Parameter.POSITIONAL_OR_KEYWORD
  if argnums is None:
    argnames = _str_tuple(argnames)
    argnums = tuple(i for i, (k, p) in enumerate(params) if p.kind == either and k in argnames)
  else:
    argnums = normalize_argnums(argnums)
    argnames = tuple(k for i, (k, p) in enumerate(params) if p.kind == either and i in argnums)
  return argnums, argnames


def _validate_argnums(sig: inspect.Signature, argnums, what: str) -> None:
  n = 0
  for p in sig.parameters.values():
    if p.kind in _POSITIONAL:
      n += 1
    elif p.kind is inspect.Parameter.VAR_POSITIONAL:
      return
  if argnums and (-min(argnums) > n or max(argnums) >= n):
    raise ValueError(f"Jitted function has {what}={argnums}, but only accepts {n} positional "
                     "arguments.")


def _validate_argnames(sig: inspect.Signature, argnames, what: str) -> None:
  valid, positional_only, var_kwargs = set(), set(), False
  for name, p in sig.parameters.items():
    if p.kind in _BY_KEYWORD:
      valid.add(name)
    elif p.kind is inspect.Parameter.VAR_KEYWORD:
      var_kwargs = True
    else:
      positional_only.add(name)
  if bad := positional_only & set(argnames):
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are "
                     "positional-only")
  if not var_kwargs and (bad := set(argnames) - valid):
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function does "
                     "not take these args.")


def resolve_argnums(fun: Callable, static_argnums, static_argnames, donate_argnums,
                    donate_argnames):
  """`(static_argnums, static_argnames, donate_argnums, donate_argnames)` for `jit(fun)`:
  completed through `fun`'s signature and checked against it (ValueError naming what does
  not exist)."""
  try:
    sig = inspect.signature(fun)
  except (TypeError, ValueError):
    sig = None  # some builtins have none: take the numbers and names as given
  if sig is None and donate_argnames is not None:
    raise ValueError(f"Getting the signature of function {fun} failed. Pass donate_argnums "
                     "instead of donate_argnames.")
  static_argnums, static_argnames = infer_argnums_and_argnames(sig, static_argnums,
                                                               static_argnames)
  donate_argnums, donate_argnames = infer_argnums_and_argnames(sig, donate_argnums,
                                                               donate_argnames)
  if sig is not None:
    _validate_argnums(sig, static_argnums, "static_argnums")
    _validate_argnames(sig, static_argnames, "static_argnames")
    _validate_argnums(sig, donate_argnums, "donate_argnums")
    _validate_argnames(sig, donate_argnames, "donate_argnames")
  if both := set(static_argnames) & set(donate_argnames):
    raise ValueError("static_argnames and donate_argnames cannot intersect. Argument names "
                     f"{both} appear in both static_argnames and donate_argnames")
  return static_argnums, static_argnames, donate_argnums, donate_argnames


# ----------------------------------------------------------------------------- JAX's public api_util
# For libraries that drive the transformations themselves (`jax.api_util`): a function and
# its pytree arguments as a flat function, JAX's names and signatures.

def debug_info(traced_for: str, fun: Callable, args, kwargs, *, static_argnums=(),
               static_argnames=(), result_paths_thunk=None, sourceinfo=None,
               signature=None) -> DebugInfo:
  """The `DebugInfo` of `fun` traced for `traced_for` on example `args` and `kwargs`, the
  static ones (by `static_argnums`, `static_argnames`; or None in their place) naming no
  argument, unless `fun` carries its own (`__fun_debug_info__`: a wrapper speaking for the
  function it wraps)."""
  del signature
  found = getattr(fun, "__fun_debug_info__", None)
  if found is not None:
    return found
  n = len(args)
  static = {i % n for i in static_argnums if -n <= i < n} if n else set()
  named_args = [None if i in static else a for i, a in enumerate(args)]
  named_kwargs = {k: v for k, v in kwargs.items() if k not in set(static_argnames)}
  return DebugInfo(traced_for, fun_sourceinfo(fun) if sourceinfo is None else sourceinfo,
                   tuple(flat_arg_names(fun, named_args, named_kwargs)), result_paths_thunk)


def _extended(dtype) -> bool:
  # (core's ExtendedDType, told by its method: api_util and core share a floor)
  return hasattr(dtype, "spec_value")


def open_specs(tree, spec_type: type):
  """`tree` with its specs (`spec_type`: ShapeDtypeStruct) of extended dtypes (typed keys)
  replaced by what tracing takes for them (their dtype's `spec_value`)."""
  def open_spec(x):
    if type(x) is spec_type and _extended(x.dtype):
      return x.dtype.spec_value(x)
    return x
  return user_tree_util.tree_map(open_spec, tree)


def close_specs(tree, spec_type: type):
  """`tree`, results built from specs (`spec_type`), with each user leaf of extended dtype
  (a key array over specs of its data) as one spec of its own shape and dtype."""
  def close(x):
    if type(x) is not spec_type and _extended(getattr(x, "dtype", None)):
      return spec_type(x.shape, x.dtype)
    return x
  return user_tree_util.tree_map(close, tree)


def flatten_fun(f: Callable, in_tree):
  """`(flat_f, out_tree)`: `flat_f(*leaves)` calls `f(*args, **kwargs)` with `in_tree`
  the tree of `(args, kwargs)`, and returns the result's leaves, whose tree `out_tree()`
  gives after the call.  A `WrappedFun` (`linear_util.wrap_init`) gives one, as in JAX."""
  return _rewrapped(tree_util.flatten_fun, f, in_tree)


def flatten_fun_nokwargs(f: Callable, in_tree):
  """Like `flatten_fun`, `in_tree` the tree of the positional arguments' tuple."""
  return _rewrapped(tree_util.flatten_fun_nokwargs, f, in_tree)


def _rewrapped(flatten, f, in_tree):
  if not hasattr(f, "call_wrapped"):  # (a plain function)
    return flatten(f, in_tree)
  flat, out_tree = flatten(f.call_wrapped, in_tree)
  return type(f)(flat, debug_info=f.debug_info), out_tree


def safe_map(f: Callable, *args) -> list:
  """`list(map(f, *args))`, the sequences required to have one length."""
  lengths = {len(a) for a in args}
  if len(lengths) > 1:
    raise ValueError(f"safe_map: sequences of different lengths {[len(a) for a in args]}")
  return list(map(f, *args))


def fun_signature(fun: Callable) -> inspect.Signature | None:
  try:
    return inspect.signature(fun)
  except (TypeError, ValueError):
    return None


class DeferredSignature(inspect.Signature):
  """`fun`'s signature, computed when first read: what `inspect.signature` of a function
  `jit` returns gives, as in JAX (libraries read it to map keyword arguments onto
  positions), without making every `jit` call pay for it.  A function without one
  (a builtin, say) reads as `(*args, **kwargs)`."""
  __slots__ = ("_fun", "_resolved")

  def __init__(self, fun: Callable):  # (Signature's own slots stay unset: nothing reads them)
    self._fun, self._resolved = fun, None

  def _signature(self) -> inspect.Signature:
    if self._resolved is None:
      self._resolved = fun_signature(self._fun) or inspect.Signature([
          inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
          inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
    return self._resolved

  def __getattr__(self, name):  # Signature's unset slots (_parameters, ...): the resolved ones
    if name.startswith("__") or name in DeferredSignature.__slots__:
      raise AttributeError(name)
    return getattr(self._signature(), name)

  def replace(self, **changes) -> inspect.Signature:  # (Signature's builds type(self))
    return self._signature().replace(**changes)
