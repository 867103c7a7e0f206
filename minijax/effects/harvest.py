"""Harvest, with Oryx's semantics: name values with `sow`, then collect them (`reap`) or
replace them (`plant`) from outside the function.

`sow(value, tag=, name=, mode=)` binds `sow_p`, the identity, whose equation names the
value and carries `SowEffect` (kept by dead-code elimination, allowed in control flow,
lowered to nothing, unseen by the runtime: a function with sows and no harvest compiles
to the program it would be without them).  `reap`, `plant`, `harvest` and `call_and_reap`
run the function under a `HarvestContext` (a `Context` of the trace-time interpreter in
`interpreter.py`) that selects the sows of one tag:

  a planted name is replaced by its value (and not reaped);
  a reaped name's value is kept (emitted) under its name: `strict` once, `clobber` the
  last one, `append` once per iteration of a `scan` (stacked);
  any other sow of the tag stays in the program, for an enclosing harvest to see.

Inside `scan`, `while_loop`, `cond` and `jit` the interpreter rebuilds the body (appended
values become stacked outputs, clobbered ones carries, planted `append` values sliced
inputs) and the errors are Oryx's: strict mode inside `scan`, a mode other than clobber
inside `while_loop`, branches of a `cond` that sow differently, a strict name sown twice.
`nest(f, scope=)` moves the names `f` sows under `{scope: {...}}`.  `handle(f, tag=,
handler=)` (in `handlers.py`) is the same context with a function in place of `plants`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Hashable, Iterable

from minijax.tree_util import internal as tree_util
from minijax.core import pretty
from minijax.core.avals import get_aval
from minijax.core.effects import Effect
from minijax.core.primitive import Primitive
from minijax.effects import interpreter
from minijax.effects.interpreter import Context, Emitted
from minijax.interpreters import ad, batching
from minijax.lowering import mlir

__all__ = ["SowEffect", "call_and_reap", "harvest", "nest", "plant", "reap", "sow", "sow_p"]

MODES = ("strict", "clobber", "append")


class SowEffect(Effect):
  """The effect of a `sow`: unordered, allowed everywhere, kept when its result is unused
  (a harvest still sees it), with nothing to do at runtime or on zero cotangents."""
  kept_when_unused = True
  runs_with_zero_cotangents = False
  tracked_at_runtime = False

  def __repr__(self):
    return "Sow"


sow_effect = SowEffect()

sow_p = Primitive("sow")
sow_p.multiple_results = True
sow_p.def_impl(lambda *args, **params: list(args))
sow_p.def_effectful_abstract_eval(lambda *avals, **params: (list(avals), frozenset({sow_effect})))
mlir.register_lowering(sow_p, lambda ctx, *args, **params: list(args))


def _sow_jvp(primals, tangents, **params):
  return sow_p.bind(*primals, **params), list(tangents)


def _sow_transpose(cts, *args, **params):
  return list(cts)


def _sow_batch(args, dims, **params):
  args = [batching.moveaxis(x, d, 0) if d is not None else x for x, d in zip(args, dims)]
  return sow_p.bind(*args, **params), [None if d is None else 0 for d in dims]


ad.primitive_jvps[sow_p] = _sow_jvp
ad.primitive_transposes[sow_p] = _sow_transpose
batching.primitive_batchers[sow_p] = _sow_batch
pretty.pp_rules[sow_p] = lambda params, names, indent: [
    f"tag={params['tag']}", f"name={show_name(params['name'])}", f"mode={params['mode']}"]


def show_name(name) -> str:
  """A sow's name; inside `nest` it is a path, shown `scope/name`."""
  return "/".join(map(str, name)) if isinstance(name, tuple) else str(name)


def sow(value, *, tag: Hashable, name: str, mode: str = "strict"):
  """Names `value` (a pytree) for the harvests of `tag`: returns it unchanged, or the
  value planted for `name`."""
  if mode not in MODES:
    raise ValueError(f"Invalid mode: {mode!r} for sow {name!r} of tag {tag!r}; use one of "
                     f"{', '.join(map(repr, MODES))}.")
  leaves, tree = tree_util.tree_flatten(value)
  out = sow_p.bind(*leaves, tag=tag, name=name, mode=mode, tree=tree)
  return tree_util.tree_unflatten(tree, out)


# ----------------------------------------------------------------------------- the context

@dataclasses.dataclass(frozen=True)
class SowSelector:
  """Selects the sows of `tag` (of every tag when `tag` is `ANY`)."""
  tag: Any

  def __call__(self, primitive, params) -> bool:
    return primitive is sow_p and (self.tag is ANY or params["tag"] == self.tag)


ANY = object()


class HarvestContext(Context):
  """The sows of one tag: planted from `plants` (a dict, or None), replaced by
  `handler(name, value)` (or None), reaped when `reap` (see the module docstring)."""

  def __init__(self, tag, *, allowlist=None, blocklist=(), plants=None, reap=False,
               handler: Callable | None = None):
    super().__init__()
    self.tag = tag
    self.selector = SowSelector(tag)
    self.allowlist = None if allowlist is None else frozenset(allowlist)
    self.blocklist = frozenset(blocklist)
    self.plants = plants
    self.reap = reap
    self.handler = handler
    self.construct: str | None = None  # the body this context handles ("scan", ...)
    self.parent: HarvestContext | None = None
    self._new_slice = None
    self._planted: set = set()
    self._plant_cache: dict = {}
    self.replaying = False  # in a checkpoint's recomputation: plant again, reap nothing

  def describe(self) -> str:
    return f"the harvest of tag {self.tag!r}"

  def child(self, construct, new_slice):
    child = HarvestContext(self.tag, allowlist=self.allowlist, blocklist=self.blocklist,
                           plants=self.plants, reap=self.reap, handler=self.handler)
    child.construct, child.parent, child._new_slice = construct, self, new_slice
    child.replaying = self.replaying or construct == "recompute"
    return child

  def _allowed(self, name) -> bool:
    top = name[0] if isinstance(name, tuple) else name
    return (self.allowlist is None or top in self.allowlist) and top not in self.blocklist

  def check_mode(self, name, mode) -> None:
    if self.construct == "scan" and mode == "strict":
      raise ValueError(f"Cannot use strict mode for '{show_name(name)}' inside `scan`.")
    if self.construct == "while_loop" and mode != "clobber":
      raise ValueError(f"Must use clobber or cond_clobber mode for '{show_name(name)}' "
                       "inside of a `while_loop`.")

  def process(self, primitive, args, params):
    name, mode, tree = params["name"], params["mode"], params["tree"]
    if mode not in MODES:
      raise ValueError(f"Invalid mode: {mode!r} for sow {show_name(name)!r} of tag "
                       f"{self.tag!r}")
    if not self._allowed(name):
      return list(args)
    self.check_mode(name, mode)
    if self.handler is not None:
      value = self.handler(name, tree_util.tree_unflatten(tree, list(args)))
      return _leaves_like(self, name, tree, args, value, "the handler's value")
    planted = self.plant_value(name, mode, tree, args)
    if planted is not None:
      _leaves_like(self, name, tree, args, tree_util.tree_unflatten(tree, planted),
                   "the planted value")
      if mode != "clobber":
        if name in self._planted:
          raise ValueError(f"Variable has already been planted: {show_name(name)}")
        self._planted.add(name)
      return planted
    if self.replaying:
      return list(args)
    if self.reap:
      self.absorb(Emitted(name, mode, tree, list(args)))
      return list(args)
    return sow_p.bind(*args, **params)

  def plant_value(self, name, mode, tree, args):
    """The leaves planted for `name`, in this context's trace (None if not planted)."""
    if self.parent is None:
      found, value = _lookup(self.plants, name)
      return _leaves_like(self, name, tree, args, value, "the planted value") if found else None
    if self._new_slice is None or mode != "append":
      return self.parent.plant_value(name, mode, tree, args)
    if name not in self._plant_cache:
      outer = self.parent.plant_value(name, mode, tree, None)
      self._plant_cache[name] = None if outer is None else [
          self._new_slice(x, get_aval(x).update(shape=get_aval(x).shape[1:])) for x in outer]
    return self._plant_cache[name]

  def absorb(self, emitted: Emitted) -> None:
    self.check_mode(emitted.key, emitted.mode)
    previous = self.emitted.get(emitted.key)
    if previous is not None and {emitted.mode, previous.mode} - {"clobber"}:
      raise ValueError(f"Variable has already been reaped: {show_name(emitted.key)}")
    self.emitted[emitted.key] = emitted

  def reaped(self) -> dict:
    """The reaped values, by name (nested dicts for the names of `nest`)."""
    out: dict = {}
    for e in self.emitted.values():
      path = e.key if isinstance(e.key, tuple) else (e.key,)
      d = out
      for k in path[:-1]:
        d = d.setdefault(k, {})
      d[path[-1]] = tree_util.tree_unflatten(e.tree, e.leaves)
    return out


def _lookup(plants, name):
  if not plants:
    return False, None
  d = plants
  for k in (name if isinstance(name, tuple) else (name,)):
    if not isinstance(d, dict) or k not in d:
      return False, None
    d = d[k]
  return True, d


def _leaves_like(context, name, tree, args, value, what):
  leaves, got = tree_util.tree_flatten(value)
  if got != tree:
    raise ValueError(f"{what} for {show_name(name)!r} (tag {context.tag!r}) has the structure "
                     f"{got}, but the sow's value has {tree}")
  if args is not None:
    for x, a in zip(leaves, args):
      xa, aa = get_aval(x), get_aval(a)
      if xa.shape != aa.shape:
        raise ValueError(f"{what} for {show_name(name)!r} (tag {context.tag!r}) has shape "
                         f"{xa.shape}, but the sown value has shape {aa.shape}")
  return leaves


# ----------------------------------------------------------------------------- the API

def _filters(allowlist, blocklist):
  return dict(allowlist=allowlist, blocklist=blocklist)


def call_and_reap(f: Callable, *, tag: Hashable, allowlist: Iterable[str] | None = None,
                  blocklist: Iterable[str] = ()) -> Callable:
  """`f` returning `(its output, the dict name -> value of the values it sows of tag)`."""
  def wrapped(*args, **kwargs):
    context = HarvestContext(tag, reap=True, **_filters(allowlist, blocklist))
    out = interpreter.run(context, lambda: f(*args, **kwargs))
    return out, context.reaped()
  return wrapped


def reap(f: Callable, *, tag: Hashable, allowlist: Iterable[str] | None = None,
         blocklist: Iterable[str] = ()) -> Callable:
  """`f` returning the dict name -> value of the values it sows of `tag`."""
  reaping = call_and_reap(f, tag=tag, allowlist=allowlist, blocklist=blocklist)
  return lambda *args, **kwargs: reaping(*args, **kwargs)[1]


def plant(f: Callable, *, tag: Hashable, allowlist: Iterable[str] | None = None,
          blocklist: Iterable[str] = ()) -> Callable:
  """`f` taking a first argument `plants` (name -> value): each planted name's value
  replaces what `f` sows under that name (for `append` sows in a `scan`, one value per
  iteration, stacked)."""
  def wrapped(plants, *args, **kwargs):
    context = HarvestContext(tag, plants=dict(plants), **_filters(allowlist, blocklist))
    return interpreter.run(context, lambda: f(*args, **kwargs))
  return wrapped


def harvest(f: Callable, *, tag: Hashable, allowlist: Iterable[str] | None = None,
            blocklist: Iterable[str] = ()) -> Callable:
  """`plant` and `call_and_reap` at once: `harvest(f, tag=)(plants, *args)` returns
  `(output, reaped)`; planted names are not reaped."""
  def wrapped(plants, *args, **kwargs):
    context = HarvestContext(tag, plants=dict(plants), reap=True,
                             **_filters(allowlist, blocklist))
    out = interpreter.run(context, lambda: f(*args, **kwargs))
    return out, context.reaped()
  return wrapped


class NestContext(Context):
  """Moves the name of every sow (of any tag) under `scope`."""

  def __init__(self, scope):
    super().__init__()
    self.scope = scope
    self.selector = SowSelector(ANY)

  def describe(self) -> str:
    return f"nest(scope={self.scope!r})"

  def child(self, construct, new_slice):
    return NestContext(self.scope)

  def process(self, primitive, args, params):
    name = params["name"]
    path = name if isinstance(name, tuple) else (name,)
    return sow_p.bind(*args, **dict(params, name=(self.scope, *path)))


def nest(f: Callable, *, scope: str) -> Callable:
  """`f`, whose sown names live under `scope`: harvests see `{scope: {name: value}}`."""
  def wrapped(*args, **kwargs):
    return interpreter.run(NestContext(scope), lambda: f(*args, **kwargs))
  return wrapped
