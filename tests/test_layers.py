"""The floors of the package: every module imports only from floors below its own.

Each top-level package or module of `minijax` sits on one floor (`FLOORS`, lowest first).
A module may import its own package, and packages on lower floors; packages on one floor
never import each other, except on the floor marked shared (the libraries built on the
transformations, which use one another, but never in a circle: `circles` finds any ring of
packages that import each other round, however long); and a few walls stand across floors
(`WALLS`: the primitive library never imports the runtime).  Every `import` is checked,
including those inside functions, by parsing the source with `ast`.  A new package gets a
row here.
"""
from __future__ import annotations

import ast
import os
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "minijax")

FLOORS: list[tuple[str, ...]] = [
    ("config", "tree_util", "monitoring"),    # leaves: nothing of minijax
    ("core", "api_util"),                     # avals, primitives, traces, jaxprs, effects
    ("interpreters", "lowering", "runtime"),  # autodiff/vmap/partial eval; MLIR; XLA client
    ("custom_derivatives",),                  # custom_jvp / custom_vjp
    ("lax",),                                 # primitives and their rules
    ("staging",),                             # trace -> lower -> compile -> cache; jit
    ("api",),                                 # the transformations
    ("numpy", "experimental", "random", "nn", "scipy", "example_libraries", "sharding",
     "distributed", "launch", "debug", "callbacks", "placement", "test_util", "errors", "dtypes",
     "tree", "effects", "ad_checkpoint", "ref", "ad", "typing", "flatten_util", "stages",
     "extend", "_src", "jacobians", "image", "custom_batching", "dlpack", "profiler", "ops",
     "ffi"),
    ("as_jax",),                              # `import jax` answered by minijax (by name)
    ("minijax",),                             # the package itself
    ("bench", "run", "pytest_plugin"),        # the benchmark; `python -m minijax.run`
]
SHARED_FLOOR = 7  # the libraries
FLOOR = {name: i for i, names in enumerate(FLOORS) for name in names}
# Walls across floors: the primitive library never touches devices (staging joins them).
WALLS = {"lax": {"runtime"}, "custom_derivatives": {"runtime"}}


def _package_of(module: str) -> str:
  """`minijax.lax.call` -> `lax`; `minijax` -> `minijax`."""
  parts = module.split(".")
  return parts[1] if len(parts) > 1 else "minijax"


def _imported_packages(path: str, module: str) -> list[tuple[int, str]]:
  """(line, package) for every minijax package that `path` imports, anywhere in it."""
  tree = ast.parse(open(path).read(), path)
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "minijax"]
    elif isinstance(node, ast.ImportFrom):
      if node.level:  # relative: resolve against this module's package
        package = module.split(".")[:None if path.endswith("__init__.py") else -1]
        base = package[:len(package) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
      else:
        target = node.module or ""
      if target.split(".")[0] != "minijax":
        continue
      if target == "minijax":  # `from minijax import lax`: the names are the packages
        found += [(node.lineno, f"minijax.{a.name}") for a in node.names]
      else:
        found.append((node.lineno, target))
  return [(line, _package_of(name)) for line, name in found]


def _modules():
  for dirpath, _, filenames in os.walk(PACKAGE):
    for filename in sorted(filenames):
      if filename.endswith(".py"):
        path = os.path.join(dirpath, filename)
        rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
        yield path, rel.removesuffix(".__init__")


def violations(modules=None) -> list[str]:
  """One line per import that breaks the floors (or per package missing from FLOORS)."""
  out = []
  for path, module in modules if modules is not None else _modules():
    own = _package_of(module)
    if own not in FLOOR:
      out.append(f"{os.path.relpath(path, ROOT)}: package {own!r} has no floor in "
                 "tests/test_layers.py FLOORS; add it")
      continue
    for line, imported in _imported_packages(path, module):
      if imported == own:
        continue
      where = f"{os.path.relpath(path, ROOT)}:{line} imports minijax.{imported}"
      if imported not in FLOOR:
        out.append(f"{where}, which has no floor in FLOORS")
      elif FLOOR[imported] > FLOOR[own]:
        out.append(f"{where}: {own} (floor {FLOOR[own]}) may not import upward "
                   f"(floor {FLOOR[imported]})")
      elif FLOOR[imported] == FLOOR[own] and FLOOR[own] != SHARED_FLOOR:
        out.append(f"{where}: {own} and {imported} share floor {FLOOR[own]} and never "
                   "import each other")
      elif imported in WALLS.get(own, ()):
        out.append(f"{where}: a wall separates {own} from {imported}")
  return out


def circles(modules=None) -> list[str]:
  """One line per ring of packages that import each other round (a strongly connected
  component of the package import graph), naming the imports that close it."""
  imports: dict[str, dict[str, str]] = {}
  for path, module in modules if modules is not None else _modules():
    own = _package_of(module)
    for line, imported in _imported_packages(path, module):
      if imported != own:
        imports.setdefault(own, {}).setdefault(imported, f"{os.path.relpath(path, ROOT)}:{line}")
  reach = {p: _reachable(imports, p) for p in imports}
  rings = {frozenset(q for q in reach[p] if p in reach.get(q, ())) | {p}
           for p in imports if p in reach[p]}
  out = []
  for ring in sorted(rings, key=sorted):
    edges = [f"{a} -> {b} ({where})" for a in sorted(ring)
             for b, where in sorted(imports[a].items()) if b in ring]
    out.append(f"packages {', '.join(sorted(ring))} import each other in a circle: "
               + "; ".join(edges))
  return out


def _reachable(imports: dict, start: str) -> set[str]:
  seen, todo = set(), list(imports.get(start, ()))
  while todo:
    package = todo.pop()
    if package not in seen:
      seen.add(package)
      todo.extend(imports.get(package, ()))
  return seen


def test_every_import_goes_down_a_floor():
  assert violations() == []


def test_no_packages_import_each_other_in_a_circle():
  assert circles() == []


def test_a_circle_is_reported_with_every_import_that_closes_it(tmp_path):
  sources = {"numpy": "from minijax import placement", "placement": "import minijax.random",
             "random": "from minijax.numpy import zeros", "nn": "from minijax import random"}
  modules = []
  for package, source in sources.items():
    path = tmp_path / f"{package}.py"
    path.write_text(source)
    modules.append((str(path), f"minijax.{package}.mod"))
  (found,) = circles(modules)
  assert found.startswith("packages numpy, placement, random import each other in a circle")
  assert "placement -> random (" in found and "nn" not in found


@pytest.mark.parametrize("package, source, message", [
    ("lax", "from minijax.runtime import backend", "a wall separates lax from runtime"),
    ("lax", "from minijax.staging import jit", "lax (floor 4) may not import upward"),
    ("runtime", "def f():\n  from minijax.lowering import mlir",
     "runtime and lowering share floor 2"),
    ("core", "import minijax.api", "core (floor 1) may not import upward"),
    ("lowering", "from minijax import lax", "lowering (floor 2) may not import upward"),
    ("custom_derivatives", "import minijax.lax", "custom_derivatives (floor 3) may not import"),
    ("newthing", "import numpy", "package 'newthing' has no floor"),
])
def test_a_broken_rule_is_reported_with_the_file_and_the_import(tmp_path, package, source,
                                                                 message):
  path = tmp_path / "mod.py"
  path.write_text(textwrap.dedent(source))
  found = violations([(str(path), f"minijax.{package}.mod")])
  assert len(found) == 1 and message in found[0], found
  assert "mod.py" in found[0]


def test_the_architecture_page_draws_every_package_on_its_floor():
  """docs/architecture.md's diagram lists each package of the tree on the floor FLOORS gives."""
  text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
  drawn: dict[int, str] = {}
  floor = None
  for line in text.split("```")[1].splitlines():
    head = line.strip().split()
    if head[:1] == ["floor"]:
      floor = int(head[1])
    if floor is not None:
      drawn[floor] = drawn.get(floor, "") + " " + line
  present = {_package_of(module) for _, module in _modules()}
  for package in present - {"minijax"}:
    name = package + ("/" if os.path.isdir(os.path.join(PACKAGE, package)) else ".py")
    assert name in drawn.get(FLOOR[package], ""), (package, FLOOR[package])
