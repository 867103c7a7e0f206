"""`pmap`: map a function over a leading axis, one slice per device, with collectives.

As in JAX 0.10.2, `pmap(f, 'i')` is `jit(shard_map(g, mesh, in_specs, out_specs,
check_vma=False))`: the mesh is the first n devices (n: the size of the mapped axes) with
the one axis `'i'`; an argument mapped along axis a gets the spec that splits dimension a
over `'i'` and `g` squeezes that dimension out of its block (size 1; with more slices
than devices the squeeze fails, or the devices do not divide the axis, as in JAX) before
calling `f`;
each output gets it back (`expand_dims`) and is laid out by its `out_axes` the same way
(`None`: replicated, the value of every device being the same).  So `pmap` has no
interpreter or primitive of its own: tracing, every transformation, the lowering (a manual
region, collectives with replica groups) and the runtime (one SPMD program over the mesh)
are `shard_map`'s and `jit`'s, and outputs are Arrays with a `NamedSharding` whose shards
have shape `(1, ...)`.

Calling a pmapped function flattens the arguments, reads the mapped size, and calls a
`jit` wrapper cached per (argument structure, axes, size, static arguments), whose fast
path takes the sharded outputs of a previous call as they are.

Several processes: every process calls the function on its local slices (mapped size = its
local device count), the mesh spans the devices of all processes in process order, and
collectives cross processes.  Arguments are assembled into global arrays from each
process's blocks, and results are handed back as the process's local part.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from minijax.tree_util import internal as tree_util
from minijax.api_util import broadcast_prefix, normalize_argnums
from minijax.core import sharding as sharding_lib
from minijax.core.avals import get_aval
from minijax.core.trace import EvalTrace, current_trace
from minijax.lax.shard_map import OutSpecsFromAvals, shard_map
from minijax.lax.structural import expand_dims, squeeze
from minijax.runtime import backend as backend_lib
from minijax.runtime import sharded
from minijax.runtime.array import Array
from minijax.staging.jit import jit

P = sharding_lib.PartitionSpec


def _spec(axis_name, ax) -> P:
  return P() if ax is None else P(*([None] * ax), axis_name)


def _broadcast_axes(axes, tree, what: str) -> list:
  def check(ax):
    if ax is not None and not isinstance(ax, int):
      raise TypeError(f"pmap {what} must be an int, None, or (nested) container with those "
                      f"types as leaves, but got {ax!r}.")
  return broadcast_prefix(axes, tree, transform="pmap", what=what, check_leaf=check)


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0,
         static_broadcasted_argnums=(), devices=None, backend=None, axis_size=None,
         donate_argnums=(), global_arg_shapes=None):
  """Runs `fun` in parallel on several devices, one per slice of axis `in_axes` of its
  arguments (see the module docstring); collectives in `fun` may name `axis_name`."""
  if not callable(fun):
    raise TypeError(f"pmap requires a callable, got {fun!r}")
  if global_arg_shapes is not None:
    raise NotImplementedError("pmap(global_arg_shapes=...) is not supported")
  if devices is not None:
    devices = tuple(devices)
    if not devices:
      raise ValueError("'devices' argument to pmap must be non-empty, or None.")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  for what, spec in (("in_axes", in_axes), ("out_axes", out_axes)):
    if not all(type(leaf) is int for leaf in tree_util.tree_leaves(spec)):  # a bool is no int
      raise TypeError(f"pmap {what} must be an int, None, or (nested) container with those "
                      f"types as leaves, but got {spec}.")
  name = sharding_lib.UnnamedAxis(fun) if axis_name is None else axis_name
  static = tuple(normalize_argnums(static_broadcasted_argnums))
  donate = frozenset(normalize_argnums(donate_argnums))
  cache: dict = {}

  def entry_for(args, kwargs):
    if any(i >= len(args) for i in static):
      raise ValueError(f"pmapped function has static_broadcasted_argnums={static} but was "
                       f"called with only {len(args)} positional argument"
                       f"{'s' if len(args) != 1 else ''}. All static broadcasted arguments "
                       "must be passed positionally.")
    static_vals = tuple((i, args[i]) for i in static)
    dyn_pos = tuple(i for i in range(len(args)) if i not in static)
    dyn_args = tuple(args[i] for i in dyn_pos)
    if isinstance(in_axes, tuple):
      if len(in_axes) != len(args):
        hint = (" Note that pmap in_axes apply to positional arguments only: each argument "
                "passed by keyword is mapped over its leading axis." if kwargs else "")
        raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                         f"corresponding value, got specification {in_axes} for value "
                         f"tree {tree_util.tree_structure(args)}.{hint}")
      arg_axes = tuple(in_axes[i] for i in dyn_pos)
    else:
      arg_axes = (in_axes,) * len(dyn_args)
    flat, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
    axes = [ax for pos, spec, arg in zip(dyn_pos, arg_axes, dyn_args)  # (errors name the arg)
            for ax in _broadcast_axes(spec, arg, f"in_axes[0][{pos}]")]
    axes += [0] * len(tree_util.tree_leaves(kwargs))
    axes, local_size = _resolve_axes(flat, axes)
    multi_process = _process_count() > 1 and isinstance(current_trace(), EvalTrace)
    donated = _donated_leaves(dyn_pos, dyn_args, donate)
    key = (in_tree, axes, local_size, static_vals, multi_process, donated)
    try:
      entry = cache.get(key)
    except TypeError:
      raise ValueError("Non-hashable static arguments are not supported: "
                       "static_broadcasted_argnums arguments of pmap must be hashable") from None
    if entry is None:
      entry = cache[key] = _build(fun, name, static_vals, in_tree, axes, out_axes, local_size,
                                  axis_size, devices, donated, multi_process)
    return entry, flat, in_tree

  def call(*args, **kwargs):
    entry, flat, _ = entry_for(args, kwargs)
    return entry(flat)

  def lower(*args, **kwargs):
    """The `jit` stage of the call: `.as_text()` shows the module for all devices; compiled,
    it is called as the pmapped function is (its arguments and results as pytrees)."""
    entry, flat, in_tree = entry_for(args, kwargs)
    return entry.jitted.lower(*flat).for_signature(in_tree, entry.out_tree())

  functools.update_wrapper(call, fun)
  call.lower = lower
  return call


def _process_count() -> int:
  return max(d.process_index for d in backend_lib.devices()) + 1


def _resolve_axes(flat, axes) -> tuple[tuple, int]:
  """The mapped axes made non-negative, and the mapped size (checked to agree)."""
  resolved, sizes = [], []
  for i, (x, ax) in enumerate(zip(flat, axes)):
    if ax is None:
      resolved.append(None)
      continue
    aval = get_aval(x)
    if not -aval.ndim <= ax < aval.ndim:
      raise ValueError(f"pmap was requested to map its argument along axis {ax}, which "
                       f"implies that its rank should be at least {max(ax, -ax - 1) + 1}, "
                       f"but is only {aval.ndim} (its shape is {aval.shape})")
    ax %= aval.ndim
    resolved.append(ax)
    sizes.append((aval.shape[ax], i, aval))
  if not sizes:
    raise ValueError("pmap requires at least one argument with a mapped axis.")
  size = sizes[0][0]
  if any(s != size for s, _, _ in sizes):
    lines = "\n".join(f"  * argument {i} of type {a.str_short()} has size {s} along its "
                      "mapped axis;" for s, i, a in sizes)
    raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped:\n{lines}")
  return tuple(resolved), size


def _donated_leaves(dyn_pos, dyn_args, donate) -> tuple:
  flags = []
  for pos, arg in zip(dyn_pos, dyn_args):
    flags.extend([pos in donate] * len(tree_util.tree_leaves(arg)))
  return tuple(flags)


def _mesh_devices(local_size: int, axis_size, devices, multi_process: bool) -> tuple:
  processes = _process_count()
  if processes == 1 and axis_size is not None and axis_size != local_size:
    raise ValueError(f"Specified axis_size {axis_size} doesn't match received axis_size "
                     f"{local_size}.")
  if axis_size is not None:
    global_size = axis_size
  elif multi_process:
    global_size = local_size * processes
  else:
    global_size = local_size
  if devices is not None:
    local = [d for d in devices if d.process_index == d.client.process_index()]
    if len(local) != local_size:
      raise ValueError(f"Leading axis size of input to pmapped function must equal the "
                       f"number of local devices passed to pmap. Got axis_size="
                       f"{local_size}, num_local_devices={len(local)}.")
    pool = devices
  elif multi_process:
    everything = backend_lib.devices()
    pool = tuple(d for p in range(processes) for d in everything if d.process_index == p)
  else:
    pool = tuple(backend_lib.local_devices())
  # (more slices than devices, as in JAX: each device's block keeps several slices, and
  # squeezing the mapped axis out of it fails, or the blocks do not divide the axis)
  return tuple(pool[:global_size])


def _build(fun, name, static_vals, in_tree, in_axes, out_axes, local_size, axis_size,
           devices, donated, multi_process):
  """The function of the flat arguments that runs one call signature of a pmap."""
  mesh_devices = _mesh_devices(local_size, axis_size, devices, multi_process)
  mesh = sharding_lib.Mesh(np.array(mesh_devices, dtype=object), (name,))
  in_specs = tuple(_spec(name, ax) for ax in in_axes)
  out_tree_box = []

  def body(*flat):
    blocks = [x if ax is None else squeeze(x, (ax,)) for x, ax in zip(flat, in_axes)]
    dyn_args, kwargs = in_tree.unflatten(blocks)
    full = list(dyn_args)
    for i, v in static_vals:
      full.insert(i, v)
    out = fun(*full, **kwargs)
    out_flat, out_tree = tree_util.tree_flatten(out)
    axes = _broadcast_axes(out_axes, out, "out_axes")
    out_tree_box[:] = [out_tree]
    return [x if ax is None else expand_dims(x, (ax % (get_aval(x).ndim + 1),))
            for x, ax in zip(out_flat, axes)]

  def out_specs(out_avals):
    """The specs of the results (`shard_map` asks once `body` is traced)."""
    axes = _broadcast_axes(out_axes, out_tree_box[0].unflatten([0] * len(out_avals)),
                           "out_axes")
    return [_spec(name, None if ax is None else ax % a.ndim) for ax, a in zip(axes, out_avals)]

  body.__name__ = getattr(fun, "__name__", "pmapped")
  mapped = shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=OutSpecsFromAvals(out_specs),
                     check_vma=False)

  def pmapped(*flat):
    return mapped(*flat)

  pmapped.__name__ = f"pmap_{body.__name__}"
  in_shardings = tuple(sharding_lib.NamedSharding(mesh, s) for s in in_specs)
  donate_argnums = tuple(i for i, d in enumerate(donated) if d)
  jitted = jit(pmapped, donate_argnums=donate_argnums,
               in_shardings=None if multi_process else in_shardings)

  if not multi_process:
    def run(flat):
      outs = jitted(*flat)
      return out_tree_box[0].unflatten(outs)
    run.jitted, run.out_tree = jitted, lambda: out_tree_box[0]
    return run

  local = [d for d in mesh_devices if d.process_index == d.client.process_index()]
  local_mesh = sharding_lib.Mesh(np.array(local, dtype=object), (name,))

  def run_across_processes(flat):
    global_args = [_to_global(x, ax, mesh, local_mesh, spec)
                   for x, ax, spec in zip(flat, in_axes, in_specs)]
    outs = jitted(*global_args)
    return out_tree_box[0].unflatten([_to_local(y, local_mesh) for y in outs])
  run_across_processes.jitted = jitted
  run_across_processes.out_tree = lambda: out_tree_box[0]
  return run_across_processes


def _to_global(x, ax, mesh, local_mesh, spec) -> Array:
  """A process-local argument as the global array it is this process's part of."""
  value = np.asarray(x)
  aval = get_aval(x)
  if ax is None:
    return sharded.put_blocks({d: value for d in local_mesh.device_list}, aval,
                              sharding_lib.NamedSharding(mesh, P()))
  processes = mesh.size // local_mesh.size
  shape = list(aval.shape)
  shape[ax] *= processes
  blocks = {d: np.take(value, [k], axis=ax) for k, d in enumerate(local_mesh.device_list)}
  return sharded.put_blocks(blocks, aval.update(shape=tuple(shape)),
                            sharding_lib.NamedSharding(mesh, spec))


def _to_local(y: Array, local_mesh) -> Array:
  """This process's part of a global result, as an Array on its local devices."""
  sharding = y._sharding
  spec = sharding.spec if isinstance(sharding, sharding_lib.NamedSharding) else P()
  local_sharding = sharding_lib.NamedSharding(local_mesh, spec)
  indices = sharding.addressable_devices_indices_map(y.aval.shape)
  parts = [(index, sharded.block_value(y, d)) for d, index in indices.items()]
  if not spec.axis_names():
    return sharded.put(parts[0][1], y.aval, local_sharding)
  dim = next(i for i, e in enumerate(spec) if e is not None)
  parts.sort(key=lambda p: p[0][dim].start)
  value = np.concatenate([v for _, v in parts], axis=dim)
  return sharded.put(value, y.aval.update(shape=value.shape), local_sharding)
