"""What a JAX test file gets when it imports `jax._src.<anything>`.

Only the test file's own import statements are redirected: its module runs with a
`__builtins__` whose `__import__` answers `jax._src...` here (`standin_import`), so JAX
itself, minijax and the libraries keep their real modules.  For each name the test file
reaches for, in this order:

1. `OWN`: the stand-ins written for the runner (`jax._src.test_util` is `test_util.py` of
   this package; `jax._src.util`'s small pure-Python helpers; `jax._src.config` translated to
   the public `jax.config`; `jaxlib`'s own version number).
2. `PUBLIC`: a public module of the `jax` in use that has the same name (for example
   `jax._src.dtypes.float0` is `jax.dtypes.float0`, `jax._src.shard_map.shard_map` is
   `jax.shard_map`).
3. Otherwise an `Internal`: a harmless placeholder.  While the test module's top level runs,
   it can be called, subclassed and have attributes taken (decorators and module-level
   registrations go through); inside a test, using it raises `NeedsJaxInternals` naming the
   internal, so only the tests that really use JAX's internals fail.

The same answers are given whether `jax` is JAX or minijax, so running JAX itself through
this stand-in tells which tests need JAX's internals.
"""
from __future__ import annotations

import builtins
import contextlib
import enum
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import types


class NeedsJaxInternals(Exception):
  """A test used a `jax._src` object that has no public equivalent."""

  def __init__(self, what: str):
    super().__init__(f"needs JAX internals: {what}")


class MinijaxLacks(Exception):
  """A test used a public JAX name that minijax lacks (and the test file used at import)."""

  def __init__(self, what: str):
    super().__init__(f"minijax lacks {what}")


_importing = [0]  # > 0 while a test module's top level runs


class Internal:
  """A placeholder for `jax._src.<path>` (or, `missing`, for a public name minijax lacks).

  While a test module's top level runs it can be called (a call with one function, as a
  decorator does, gives a function that raises when called), subclassed and have its
  attributes taken; in a test, using it raises `NeedsJaxInternals` (or `MinijaxLacks`).
  """

  def __init__(self, path: str, missing: bool = False):
    object.__setattr__(self, "_path", path)
    object.__setattr__(self, "_missing", missing)

  def _error(self):
    return (MinijaxLacks if self._missing else NeedsJaxInternals)(self._path)

  def _fail(self, *args, **kwargs):
    raise self._error()

  def __getattr__(self, name):
    if name in ("__name__", "__qualname__"):  # test names made at import print it
      return self._path.rsplit(".", 1)[-1]
    if name.startswith("__") and name.endswith("__"):
      raise AttributeError(name)
    if name == "cache_clear":  # (a setUp clearing a private JAX cache: minijax has none)
      return lambda: None
    if self._missing:
      return Internal(f"{self._path}.{name}", missing=True)
    return resolve(self._path, name)

  def __call__(self, *args, **kwargs):
    if not _importing[0]:
      raise self._error()
    if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Internal):
      error, function = self._error(), args[0]

      @functools.wraps(function)
      def fails(*args, **kwargs):
        raise error
      return fails
    return Internal(f"{self._path}()", self._missing)

  def __mro_entries__(self, bases):
    return (type(f"Internal[{self._path}]", (_InternalBase,),
                 {"_path": self._path, "_error": self._error()}),)

  def __repr__(self):
    if self._missing:
      return f"<placeholder for {self._path}, which minijax lacks>"
    return f"<stand-in for JAX internal {self._path}>"

  __setattr__ = __enter__ = __iter__ = __len__ = __getitem__ = __setitem__ = _fail
  __bool__ = __lt__ = __le__ = __gt__ = __ge__ = __add__ = __sub__ = __mul__ = _fail
  __int__ = __float__ = __index__ = __contains__ = __instancecheck__ = _fail
  __subclasscheck__ = __array__ = _fail


class _InternalBase:
  """The base of a test class that subclasses a placeholder: it cannot be instantiated."""
  _error = NeedsJaxInternals("?")

  def __init__(self, *args, **kwargs):
    raise self._error


# ---------------------------------------------------------------- the stand-ins themselves


def _safe_map(f, *args):
  args = list(map(list, args))
  assert all(len(a) == len(args[0]) for a in args), [len(a) for a in args]
  return list(map(f, *args))


def _safe_zip(*args):
  args = list(map(list, args))
  assert all(len(a) == len(args[0]) for a in args), [len(a) for a in args]
  return list(zip(*args))


def _unzip2(pairs):
  xs, ys = [], []
  for x, y in pairs:
    xs.append(x)
    ys.append(y)
  return tuple(xs), tuple(ys)


def _split_list(args, ns):
  args, out = list(args), []
  for n in ns:
    out.append(args[:n])
    args = args[n:]
  return out + [args]


def _curry(f):
  return lambda *args, **kwargs: lambda *a, **k: f(*args, *a, **{**kwargs, **k})


class _ConfigState:
  """`jax._src.config.<flag>`: a context manager and `.value`, on the public `jax.config`."""

  def __init__(self, name):
    self.name = name

  @property
  def value(self):
    """The flag's value.  While a test module's top level runs (deciding which tests to skip),
    a flag minijax lacks reads as JAX's value there (recorded by the `--jax` run), so both
    sides run the same tests."""
    try:
      value = getattr(_jax().config, self.name)
    except AttributeError:
      if not _importing[0] or self.name not in JAX_FLAGS_AT_IMPORT:
        raise
      value = JAX_FLAGS_AT_IMPORT[self.name]
      MISSING_AT_IMPORT.append(f"config {self.name} (read as JAX's {value!r})")
      return value
    if _importing[0] and isinstance(value, (bool, int, float, str, type(None))):
      FLAGS_AT_IMPORT[self.name] = value
    return value

  def __call__(self, new_value):
    from .test_util import config_context
    if isinstance(new_value, enum.Enum):
      new_value = new_value.value
    return config_context(**{self.name: new_value})

  def get_global(self):
    return self.value

  def set_global(self, new_value):
    _jax().config.update(self.name, new_value)

  def __repr__(self):
    return f"<config stand-in {self.name}>"


class _Config(types.ModuleType):
  """`jax._src.config`, translated to the public `jax.config` and its flags."""

  def __init__(self):
    super().__init__("jax._src.config")

  def __getattr__(self, name):
    if name.startswith("__"):
      raise AttributeError(name)
    if name == "parse_flags_with_absl":
      return lambda *args: None
    if name == "update":
      return lambda key, value: _jax().config.update(key, value)
    if name == "_read":
      return lambda key: getattr(_jax().config, key)
    if name == "config":
      return _jax().config
    if name[:1].isupper():
      return OWN.get(f"jax._src.config.{name}") or Internal(f"jax._src.config.{name}")
    return _ConfigState(name if name.startswith("jax_") else "jax_" + name)


FLAGS_AT_IMPORT: dict = {}  # flags the test module read at import, with their values
JAX_FLAGS_AT_IMPORT: dict = json.loads(os.environ.get("JAX_CONFORMANCE_JAX_FLAGS", "{}"))
PUBLIC_USED: dict = {}  # jax._src names answered by a public name, and that name
JAX_PUBLIC_NAMES: dict = json.loads(os.environ.get("JAX_CONFORMANCE_JAX_PUBLIC", "{}"))


def _jax():
  return sys.modules["jax"]


def _jaxlib_version():
  from jaxlib import xla_client
  return getattr(xla_client, "_version", 0)


class _Forward:
  """A module of jaxlib as JAX's internals re-export it: its names, else placeholders (the
  test files of older JAX releases use names today's jaxlib no longer has)."""

  def __init__(self, module, path):
    self._module, self._path = module, path

  def __getattr__(self, name):
    try:
      return getattr(self._module, name)
    except AttributeError:
      return Internal(f"{self._path}.{name}")


class _Namespace:
  """Given attributes, else placeholders for `path.<name>`."""

  def __init__(self, path, **attrs):
    self._path = path
    vars(self).update(attrs)

  def __getattr__(self, name):
    return Internal(f"{self._path}.{name}")


class _RuntimeTokens:
  """`jax._src.dispatch.runtime_tokens`: test classes clear JAX's ordered-effect tokens in
  tearDown; the public equivalent of that housekeeping is waiting for the effects."""

  @staticmethod
  def clear():
    _jax().effects_barrier()


_XLA_FLAGS_AT_START = os.environ.get("XLA_FLAGS") or ""


class _GetBackend:
  """`jax._src.xla_bridge.get_backend(platform)`: the backend as far as the test files use
  it (its `platform`, from the public `jax.devices`).  `cache_clear()` makes JAX create a new
  client that reads changed `XLA_FLAGS`; with the flags unchanged there is nothing to do, and
  a change needs JAX's internals (minijax's client is created once)."""

  def __call__(self, platform=None):
    return types.SimpleNamespace(platform=_jax().devices(platform)[0].platform)

  def cache_clear(self):
    if (os.environ.get("XLA_FLAGS") or "") != _XLA_FLAGS_AT_START:
      raise NeedsJaxInternals("jax._src.xla_bridge.get_backend.cache_clear (a new client "
                              "for changed XLA_FLAGS)")


class ExplicitX64Mode(enum.Enum):
  """The values of JAX's `jax_explicit_x64_dtypes` flag."""
  WARN = "warn"
  ERROR = "error"
  ALLOW = "allow"


# The PRNG implementations JAX 0.10.2 registers (the names `impl=` takes), in its order.
PRNG_NAMES = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg", "threefry4x32")


def _own():
  from . import test_util, lax_test_util
  return {
      "jax._src.config.ExplicitX64Mode": ExplicitX64Mode,
      "jax._src.random.prng.prngs": {
          name: Internal(f"jax._src.random.prng.prngs[{name!r}]") for name in PRNG_NAMES},
      "jax._src.dispatch.runtime_tokens": _RuntimeTokens,
      # lax_control_flow_test's setUp empties two private caches of JAX's control flow so
      # that tests do not share them: housekeeping with no public equivalent, done nothing.
      "jax._src.lax.control_flow.common": _Namespace(
          "jax._src.lax.control_flow.common",
          _dedup_consts=_Namespace("_dedup_consts", cache_clear=lambda: None),
          _pad_constvars=_Namespace("_pad_constvars", cache_clear=lambda: None)),
      "jax._src.debugging.debug_print": _jax().debug.print,
      "jax._src.debugging.debug_callback": _jax().debug.callback,
      "jax._src.test_util": test_util,
      "jax._src.internal_test_util.lax_test_util": lax_test_util,
      "jax._src.config": _Config(),
      "jax._src.util.safe_map": _safe_map,
      "jax._src.util.safe_zip": _safe_zip,
      "jax._src.util.unzip2": _unzip2,
      "jax._src.util.split_list": _split_list,
      "jax._src.util.curry": _curry,
      "jax._src.util.clear_all_caches": lambda: _jax().clear_caches(),
      "jax._src.lib.jaxlib_extension_version": _jaxlib_version(),
      # The runner runs on CPU, whose client is in-process, not a PJRT C API plugin.
      "jax._src.xla_bridge.using_pjrt_c_api": lambda: False,
      "jax._src.xla_bridge.get_backend": _GetBackend(),
      "jax._src.lib.xla_client": _Forward(importlib.import_module("jaxlib.xla_client"),
                                          "jax._src.lib.xla_client"),
      "jax._src.sharding_impls.make_single_device_sharding":
          lambda device, **kw: _jax().sharding.SingleDeviceSharding(device, **kw),
  }


OWN: dict = {}

# `jax._src.<module>` -> the public modules whose names it shares, searched in order.
PUBLIC = {
    "jax._src.api": ("jax",),
    "jax._src.dtypes": ("jax.dtypes",),
    "jax._src.core": ("jax.extend.core", "jax.core", "jax.ref"),
    "jax._src.random": ("jax.random",),
    "jax._src.random.prng": ("jax.extend.random",),
    "jax._src.lax": ("jax.lax",),
    "jax._src.lax.lax": ("jax.lax",),
    "jax._src.lax.control_flow": ("jax.lax",),
    "jax._src.lax.parallel": ("jax.lax",),
    "jax._src.shard_map": ("jax",),
    "jax._src.sharding": ("jax.sharding",),
    "jax._src.sharding_impls": ("jax.sharding",),
    "jax._src.stages": ("jax.stages",),
    "jax._src.debugging": ("jax.debug",),
    "jax._src.ad_checkpoint": ("jax.ad_checkpoint", "jax.checkpoint_policies"),
    "jax._src.tree_util": ("jax.tree_util",),
    "jax._src.errors": ("jax.errors",),
    "jax._src.linear_util": ("jax.extend.linear_util",),
    "jax._src.interpreters.ad": ("jax.interpreters.ad",),
    "jax._src.interpreters.batching": ("jax.interpreters.batching",),
    "jax._src.interpreters.mlir": ("jax.interpreters.mlir",),
    "jax._src.interpreters.partial_eval": ("jax.interpreters.partial_eval",),
}


def _public_module(name):
  """The public module (or namespace, such as `jax.checkpoint_policies`) called `name`."""
  try:
    return importlib.import_module(name)
  except ImportError:
    parent, _, attr = name.rpartition(".")
    found = _public_module(parent) if parent else None
    return getattr(found, attr, None)


def resolve(module: str, name: str):
  """`jax._src.<module>.<name>` as the test file sees it."""
  if not OWN:
    OWN.update(_own())
  full = f"{module}.{name}"
  if full in OWN:
    return OWN[full]
  if full not in PUBLIC:
    for public in PUBLIC.get(module, ()):
      found = _public_module(public)
      if found is not None and hasattr(found, name):
        PUBLIC_USED[full] = f"{public}.{name}"
        value = getattr(found, name)
        if LENIENT[0] and _importing[0] and isinstance(value, types.ModuleType):
          return _Lenient(value, f"{public}.{name}")  # (its missing names: placeholders)
        return value
    if full in JAX_PUBLIC_NAMES:  # public in JAX, lacking in minijax
      return Internal(JAX_PUBLIC_NAMES[full], missing=True)
  return Internal(full)


def lookup(name: str):
  """The module object `import jax._src.<...>` gives."""
  if not OWN:
    OWN.update(_own())
  return OWN.get(name) or Internal(name)


class _JaxWithSrc(types.ModuleType):
  """`jax` as bound by `import jax._src.x as y`: the real `jax` with the stand-in `_src`."""

  def __init__(self):
    super().__init__("jax")
    self._src = lookup("jax._src")

  def __getattr__(self, name):
    return getattr(_jax(), name)


MISSING_AT_IMPORT: list[str] = []  # the public names placeholders stood in for
LENIENT = [False]  # True with minijax behind `jax`


class _Lenient(types.ModuleType):
  """A `jax` module as the test module sees it with minijax: while the module's top level
  runs, a name minijax lacks gives a placeholder (so the file imports, and only the tests
  that use the name fail, with `MinijaxLacks`); afterwards it raises as the module does."""

  def __init__(self, target: types.ModuleType, name: str):
    super().__init__(name)
    self.__dict__["_target"] = target

  def __getattr__(self, name):
    try:
      value = getattr(self._target, name)
    except AttributeError:
      if not _importing[0] or name.startswith("__"):
        raise
      MISSING_AT_IMPORT.append(f"{self.__name__}.{name}")
      return Internal(f"{self.__name__}.{name}", missing=True)
    if isinstance(value, types.ModuleType) and not isinstance(value, _Lenient):
      return _Lenient(value, f"{self.__name__}.{name}")
    return value

  def __dir__(self):
    return dir(self._target)


def standin_import(name, globals=None, locals=None, fromlist=(), level=0):
  if level == 0 and (name == "jax._src" or name.startswith("jax._src.")):
    if not sys.modules.get("jax"):
      importlib.import_module("jax")
    return lookup(name) if fromlist else _JaxWithSrc()
  if LENIENT[0] and _importing[0] and level == 0 and (name == "jax" or name.startswith("jax.")):
    try:
      top = builtins.__import__(name, globals, locals, (), level)
    except ImportError:
      MISSING_AT_IMPORT.append(name)
      return Internal(name if fromlist else name.split(".")[0], missing=True)
    if not fromlist:
      return _Lenient(top, "jax")
    module = sys.modules[name]
    for item in fromlist:  # `from jax.x import sub`: import what is a submodule
      if item != "*" and not hasattr(module, item):
        try:
          importlib.import_module(f"{name}.{item}")
        except ImportError:
          pass  # then a placeholder, from _Lenient
    return _Lenient(module, name)
  return builtins.__import__(name, globals, locals, fromlist, level)


_BUILTINS = dict(vars(builtins), __import__=standin_import)


class _TestModuleLoader(importlib.machinery.SourceFileLoader):
  """Runs a JAX test file with `standin_import` as its `__import__`."""

  def exec_module(self, module):
    module.__dict__["__builtins__"] = _BUILTINS
    _importing[0] += 1
    try:
      super().exec_module(module)
    finally:
      _importing[0] -= 1
    for name, value in list(vars(module).items()):  # the tests see the real modules
      if isinstance(value, _Lenient):
        setattr(module, name, value._target)


class TestFileFinder(importlib.abc.MetaPathFinder):
  """Finds the JAX test files given to it (by path) under their module names."""

  def __init__(self, paths):
    self.names = {p.rsplit("/", 1)[-1][:-3]: p for p in paths}

  def find_spec(self, fullname, path=None, target=None):
    file = self.names.get(fullname.rsplit(".", 1)[-1])
    if file is None:
      return None
    return importlib.util.spec_from_file_location(fullname, file,
                                                  loader=_TestModuleLoader(fullname, file))


def install_test_files(paths) -> None:
  sys.meta_path.insert(0, TestFileFinder(paths))


@contextlib.contextmanager
def importing():
  """Treat the block as a test module's top level (placeholders may be called)."""
  _importing[0] += 1
  try:
    yield
  finally:
    _importing[0] -= 1
