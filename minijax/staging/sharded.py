"""Staging for several devices: deciding where a computation runs, and compiling it there.

A computation runs on one device unless something asks for several: an argument that is a
sharded Array, `jit(in_shardings=..., out_shardings=...)`, or a sharding inside its jaxpr
(a `shard_map`'s mesh, a sharding constraint).  `placement` collects those, checks that
they all use one set of devices (JAX's "incompatible devices" error otherwise), and
returns a `Placement`: the device assignment (the device order of the first sharding
found), one input sharding per input of the jaxpr (the given one, else the argument's own,
else replicated), and the output shardings given (None where XLA's partitioner is to
choose).  `compiled_call` lowers the jaxpr for that placement (sharding attributes on
`main`, `lowering/spmd.py`) and compiles it as one SPMD program
(`runtime/sharded_executable.py`), once per (jaxpr, donation, placement).

The eager paths meet sharded values here too: a primitive applied to sharded Arrays runs
as a one-equation program over their devices, its results laid out as the partitioner
propagates them (`compile_primitive`); `shard_map_p` applied to concrete values runs over
its mesh (`shard_map_impl`); a sharding constraint on a concrete value moves it
(`device_put`).  Shardings are interned, so that the arrays a program returns carry the
very sharding objects the next call was compiled for, which the dispatch path compares by
identity.

Caches keyed on a jaxpr (`closed_jaxpr_shardings`, `compiled_call`) are `core.caches.WeakLRU`s:
an entry goes with its jaxpr, as the single-device ones of `staging/compiler.py` do; the
eager `shard_map` cache keeps `config.eager_cache_size` executables at most.
"""
from __future__ import annotations

import collections
import functools
from typing import Any, NamedTuple, Sequence

from minijax.config import config
from minijax.core import caches
from minijax.core import effects as effects_lib
from minijax.core import sharding as sharding_lib
from minijax.core.avals import get_aval
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic
from minijax.lax.shard_map import shard_map_p
from minijax.lax.sharding import sharding_constraint_p
from minijax.lowering.mlir import LoweringResult, lower_jaxpr_to_module
from minijax.runtime.array import Array, device_put
from minijax.runtime.sharded_executable import ShardedExecutable, compile_sharded
from minijax.staging.cache_keys import params_key
from minijax.staging import special_values

Sharding = sharding_lib.Sharding


class Placement(NamedTuple):
  devices: tuple                 # the device assignment
  mesh: Any                      # a mesh to name XLA's output layouts with, or None
  in_shardings: tuple            # one per input of the jaxpr
  out_shardings: tuple           # one per output; None: XLA's choice


_interned: dict = {}


def canonical(sharding: Sharding) -> Sharding:
  """The one instance of the shardings equal to `sharding`."""
  return _interned.setdefault(sharding, sharding)


_found_in = caches.WeakLRU(lambda closed: jaxpr_shardings(closed.jaxpr), "jit_cache_size")


def closed_jaxpr_shardings(closed: ClosedJaxpr) -> list[Sharding]:
  """`jaxpr_shardings` of `closed.jaxpr`, remembered while the jaxpr object lives (eager
  `jit_p` evaluation asks for every call)."""
  return _found_in(closed)


def jaxpr_shardings(jaxpr: Jaxpr) -> list[Sharding]:
  """The shardings a jaxpr (or one nested in it) places values by: each `shard_map`'s mesh
  and each sharding constraint."""
  found = []
  for eqn in jaxpr.eqns:
    if eqn.primitive is shard_map_p:
      found.append(sharding_lib.NamedSharding(eqn.params["mesh"], sharding_lib.PartitionSpec()))
    elif eqn.primitive is sharding_constraint_p:
      found.append(eqn.params["sharding"])
    for value in eqn.params.values():
      for inner in _jaxprs_in(value):
        found.extend(jaxpr_shardings(inner))
  return found


def _jaxprs_in(value) -> list[Jaxpr]:
  if isinstance(value, ClosedJaxpr):
    return [value.jaxpr]
  if isinstance(value, Jaxpr):
    return [value]
  if isinstance(value, (tuple, list)):
    return [j for v in value for j in _jaxprs_in(v)]
  return []


def _describe(sharding: Sharding) -> str:
  return f"with device ids {[d.id for d in sharding._device_assignment]}"


def placement(closed: ClosedJaxpr, args: Sequence[Any], fun_name: str,
              in_shardings: Sequence[Sharding | None] | None = None,
              out_shardings: Sequence[Sharding | None] | None = None,
              arg_names: Sequence[str] | None = None) -> Placement | None:
  """Where `closed`, called on `args` (one per input), runs when that is several devices
  (or one device named by a sharding); None for the ordinary single-device path."""
  n = len(args)
  in_shardings = list(in_shardings) if in_shardings is not None else [None] * n
  out_shardings = (list(out_shardings) if out_shardings is not None
                   else [None] * len(closed.out_avals))
  found: list[tuple[Sharding, str]] = []
  names = list(arg_names or [])
  for i, (x, given) in enumerate(zip(args, in_shardings)):
    what = f"argument {names[i] if i < len(names) else i} of {fun_name}"
    if given is not None:
      _check_committed(x, given)
      found.append((given, f"{what} (in_shardings)"))
    elif type(x) is Array and x._committed:
      found.append((x.sharding, f"{what} with shape {x.aval.str_short()}"))
  found += [(s, f"out_shardings of {fun_name}") for s in out_shardings if s is not None]
  found += [(s, f"a sharding inside {fun_name}") for s in closed_jaxpr_shardings(closed)]
  if not found:
    return None
  first, first_what = found[0]
  devices = first._device_assignment
  device_set = set(devices)
  for s, what in found[1:]:
    if set(s._device_assignment) != device_set:
      raise ValueError(
          f"Received incompatible devices for jitted computation. Got {first_what} and "
          f"{_describe(first)} on platform CPU and {what} and {_describe(s)} on platform CPU")
  mesh = next((s.mesh for s, _ in found if isinstance(s, sharding_lib.NamedSharding)), None)
  replicated = canonical(sharding_lib.replicated_like(first))
  ins = []
  for x, given in zip(args, in_shardings):
    if given is not None:
      ins.append(canonical(given))
    elif type(x) is Array and x._sharding is not None:
      ins.append(canonical(x._sharding))
    else:
      ins.append(replicated)
  outs = tuple(canonical(s) if s is not None else None for s in out_shardings)
  return Placement(tuple(devices), mesh, tuple(ins), outs)


def _check_committed(x, given: Sharding) -> None:
  """As in JAX, `in_shardings` never re-lays out a committed Array (one placed by
  `device_put` or made by a computation on committed values): its layout must already be
  the given one, its blocks numbered in its own device order (it may be moved to other
  devices, as JAX does; an uncommitted one is moved and split as given)."""
  if type(x) is Array and x._committed:
    own = x.sharding
    ndim = x.aval.ndim
    if (given.tile_assignment(ndim).hlo_sharding_text()
        != own.tile_assignment(ndim).hlo_sharding_text()):
      raise ValueError(f"Sharding passed to jit does not match the sharding on the respective "
                       f"arg. Got jit sharding: {given},\narg sharding: {own} for "
                       f"arg type: {x.aval.str_short()}. Move the argument first with "
                       "device_put, or leave its in_shardings entry None.")


def single_device(p: Placement, closed: ClosedJaxpr):
  """The device to run on the ordinary path, when the placement names only one and nothing
  inside needs a mesh."""
  if len(p.devices) == 1 and not any(eqn_uses_mesh(closed.jaxpr)):
    return p.devices[0]
  return None


def eqn_uses_mesh(jaxpr: Jaxpr):
  for eqn in jaxpr.eqns:
    yield eqn.primitive is shard_map_p
    for value in eqn.params.values():
      for inner in _jaxprs_in(value):
        yield from eqn_uses_mesh(inner)


# ----------------------------------------------------------------------------- compiling

def lower(closed: ClosedJaxpr, name: str, donated: Sequence[bool], p: Placement
          ) -> LoweringResult:
  positions = {d: i for i, d in enumerate(p.devices)}
  text = lambda s, aval: s.tile_assignment(aval.ndim, positions).hlo_sharding_text()  # noqa: E731
  return lower_jaxpr_to_module(
      closed, name=name, donated_args=donated, device_assignment=p.devices,
      arg_shardings=[text(s, a) for s, a in zip(p.in_shardings, closed.in_avals)],
      result_shardings=[None if s is None else text(s, a)
                        for s, a in zip(p.out_shardings, closed.out_avals)], mesh=p.mesh)


class _CompiledSlot:
  """Where `compiled_call` files the executable of one (jaxpr, donation, placement)."""
  __slots__ = ("fn",)

  def __init__(self, *key):
    self.fn = None


_compiled = caches.WeakLRU(_CompiledSlot, "jit_cache_size")


def compiled_call(closed: ClosedJaxpr, name: str, donated: Sequence[bool], p: Placement,
                  lowered: LoweringResult | None = None, compiler_options: dict | None = None):
  """The executable of `closed` for placement `p` (and XLA's `compiler_options`), compiled
  on first use."""
  options = dict(compiler_options or {})
  slot = _compiled(closed, tuple(donated), p, tuple(sorted(options.items())))
  fn = slot.fn
  if fn is None:
    if not closed.jaxpr.eqns:  # (the inner jaxpr: the cache is weak on `closed`)
      fn = functools.partial(_run_trivial, closed.jaxpr, tuple(closed.consts), p)
    else:
      if lowered is None:
        lowered = lower(closed, name, donated, p)
      fn = compile_sharded(
          lowered.module, devices=p.devices, name=name, in_avals=lowered.in_avals,
          out_avals=lowered.out_avals, in_shardings=p.in_shardings,
          out_shardings=list(p.out_shardings),
          donated_args=tuple(donated), host_callbacks=lowered.host_callbacks,
          ordered_effects=lowered.ordered_effects,
          unordered_effects=effects_lib.unordered_effects(closed.jaxpr.effects), mesh=p.mesh,
          keepalive=lowered.keepalives, compiler_options=options)
      fn = _intern_outputs(fn)
    slot.fn = fn
  return fn


def _intern_outputs(exe: ShardedExecutable) -> ShardedExecutable:
  """`exe` with its output shardings interned (see the module docstring)."""
  exe.out_shardings = tuple(canonical(s) for s in exe.out_shardings)
  exe.call = exe.make_call()
  return exe


def _run_trivial(jaxpr: Jaxpr, consts, p: Placement, *args) -> list:
  env = dict(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  in_sharding = dict(zip(jaxpr.invars, p.in_shardings))
  outs = []
  for v, s in zip(jaxpr.outvars, p.out_shardings):
    x = v.val if type(v) is Literal else env[v]
    target = s if s is not None else in_sharding.get(v) or canonical(
        sharding_lib.replicated_like(p.in_shardings[0] if p.in_shardings else
                                     sharding_lib.HloShardingWrapper(p.devices, None)))
    outs.append(device_put(x, target))
  return outs


# ----------------------------------------------------------------------------- eager paths

def compile_primitive(primitive, params, avals, args) -> Any:
  """A one-equation program applying `primitive` to `args`, some of them sharded, over
  their devices; results laid out as XLA propagates the inputs' layouts."""
  def fun(*xs):
    out = primitive.bind(*xs, **params)
    return out if primitive.multiple_results else [out]

  jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals)
  closed = ClosedJaxpr(jaxpr, consts)
  p = placement(closed, args, primitive.name)
  return compiled_call(closed, primitive.name, (False,) * len(args), p)


_shard_map_cache: collections.OrderedDict = collections.OrderedDict()  # least recent first


def shard_map_impl(*args, **params):
  """`shard_map_p` on concrete values: compiled over its mesh, once per params and avals."""
  avals = tuple(get_aval(x) for x in args)
  key = (params_key(params), avals)
  fn = _shard_map_cache.get(key)
  if fn is None:
    def fun(*xs):
      return shard_map_p.bind(*xs, **params)

    jaxpr, consts = trace_to_jaxpr_dynamic(fun, avals)
    closed = ClosedJaxpr(jaxpr, consts)
    mesh = params["mesh"]
    named = lambda spec: canonical(sharding_lib.NamedSharding(mesh, spec))  # noqa: E731
    p = Placement(mesh.device_list, mesh, tuple(named(s) for s in params["in_specs"]),
                  tuple(named(s) for s in params["out_specs"]))
    fn = _shard_map_cache[key] = compiled_call(closed, "shard_map", (False,) * len(args), p)
    while len(_shard_map_cache) > config.eager_cache_size:
      _shard_map_cache.popitem(last=False)
  else:
    _shard_map_cache.move_to_end(key, last=True)
  outs = fn(*args)
  if special_values.checking():
    special_values.check_sharded(outs)
  return outs


shard_map_p.def_impl(shard_map_impl)
sharding_constraint_p.def_impl(lambda x, *, sharding: device_put(x, sharding))
