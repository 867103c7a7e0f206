"""`install_as_jax()`: answer `import jax` and `import jax.<sub>` with minijax's modules.

Unmodified JAX programs and libraries then run on minijax.  Two pieces do it:

- `sys.modules["jax"]` becomes a thin alias module (`JaxAlias`): it carries JAX's version
  (`__version__ = "0.10.2"`, the JAX API minijax implements) and forwards every other
  attribute to the `minijax` package, so `jax.jit is minijax.jit`; `minijax.__version__`
  keeps minijax's own version.
- a finder on `sys.meta_path` answers `jax.<sub>` (`jax.numpy`, `jax.lax`,
  `jax.experimental.host_callback`, ...) with the module `minijax.<sub>` itself, so
  `jax.numpy is minijax.numpy` (`RENAMED` lists the few found under another name, such as
  `jax.interpreters.mlir`, JAX's lowering API over `minijax.lowering.mlir`).  A submodule
  minijax lacks raises `ModuleNotFoundError` (an `ImportError`) saying `jax.<sub> is not
  provided by minijax`; of JAX's internals (`jax._src`) minijax has only the few modules
  that libraries import by name (`minijax._src`).

The modules are looked up by name with `importlib`, so this module imports nothing of
minijax itself: it works whatever floor the requested module lives on.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

from minijax._src.jax_version import __version__ as JAX_VERSION  # the JAX API implemented

# `jax.<sub>` modules whose minijax counterpart lives under another name.
RENAMED = {"jax.core": "minijax._src.jax_core",
           "jax.interpreters.mlir": "minijax.extend.mlir",
           "jax.lib": "minijax._src.jax_lib",
           "jax.version": "minijax._src.jax_version"}


class JaxAlias(types.ModuleType):
  """The module `jax` when minijax stands in for it: JAX's version, minijax's everything else."""

  def __init__(self, target: types.ModuleType):
    super().__init__("jax", f"minijax standing in for JAX {JAX_VERSION}")
    self.__version__ = JAX_VERSION
    self.__version_info__ = tuple(int(p) for p in JAX_VERSION.split("."))
    self.__path__ = []  # a package: `jax.<sub>` is answered by the finder below
    self.__minijax__ = target

  def __getattr__(self, name: str):
    renamed = RENAMED.get(f"jax.{name}")
    if renamed is not None:
      return importlib.import_module(renamed)
    try:
      return getattr(self.__minijax__, name)
    except AttributeError as e:
      if "has no attribute" not in str(e):
        raise  # minijax's own explanation (a name JAX removed, say)
      raise AttributeError(f"module 'jax' (minijax) has no attribute {name!r}") from None

  def __dir__(self):
    return sorted(set(dir(self.__minijax__)) | set(self.__dict__))

  def __repr__(self):
    return f"<module 'jax' (minijax {self.__minijax__.__version__} standing in for JAX {JAX_VERSION})>"


class _Loader(importlib.abc.Loader):
  """Hands the import system minijax's own module object for `jax.<sub>`."""

  def __init__(self, module: types.ModuleType):
    self.module = module
    self.original_spec = module.__spec__

  def create_module(self, spec):
    return self.module

  def exec_module(self, module):
    # The import system stamped `jax.<sub>`'s spec on the module; it stays minijax's module.
    module.__spec__ = self.original_spec


class JaxFinder(importlib.abc.MetaPathFinder):
  """Finds `jax.<sub>` as `minijax.<sub>`."""

  def find_spec(self, fullname, path=None, target=None):
    if not fullname.startswith("jax."):
      return None
    name = RENAMED.get(fullname) or "minijax" + fullname[len("jax"):]
    try:
      found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
      found = None
    if found is None:
      raise ModuleNotFoundError(f"{fullname} is not provided by minijax (no module {name})",
                                name=fullname)
    module = importlib.import_module(name)
    return importlib.machinery.ModuleSpec(fullname, _Loader(module),
                                          is_package=hasattr(module, "__path__"))


def _installed_alias():
  jax = sys.modules.get("jax")
  return jax if isinstance(jax, JaxAlias) else None


def install_as_jax() -> types.ModuleType:
  """Make `import jax` (and `jax.numpy`, `jax.lax`, ...) import minijax; returns the `jax` alias.

  Call it before anything imports JAX; calling it again is harmless.  It raises
  `RuntimeError` if the real `jax` is already imported, since modules holding it would keep
  computing with JAX.
  """
  alias = _installed_alias()
  if alias is not None:
    return alias
  if "jax" in sys.modules or any(n.startswith("jax.") for n in sys.modules):
    raise RuntimeError("install_as_jax(): the real jax is already imported; call "
                       "minijax.install_as_jax() before anything imports jax (or run the "
                       "script with `python -m minijax.run script.py`)")
  alias = JaxAlias(importlib.import_module("minijax"))
  for name, target in RENAMED.items():
    # `from jax.interpreters import mlir` looks for the attribute on the parent module.
    parent, _, child = name.partition(".")[2].rpartition(".")
    holder = importlib.import_module(f"minijax.{parent}") if parent else alias
    setattr(holder, child, importlib.import_module(target))
  if not any(isinstance(f, JaxFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, JaxFinder())
  sys.modules["jax"] = alias
  return alias
