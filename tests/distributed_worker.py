"""Run by tests/test_distributed.py in each process of `python -m minijax.launch -n 2`.

Prints one JSON line with what this process saw: its devices, the results of a pmap whose
psum, all_gather and axis_index cross the two processes, the taps its receivers got, its
blocks of a jit of a shard_map over the global mesh, and whether `jax` was imported.  With the argument `fail`, process 1 exits with code 3 before
the collective, which process 0 then waits for in vain.  Each process first prints its pid
(so that the test can check that none is left running)."""
import json
import os
import sys

import numpy as np

import minijax
from minijax import lax
from minijax.experimental import host_callback as hcb
from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P

minijax.distributed.initialize()  # a no-op: minijax.launch initialized the process
index = minijax.process_index()
print(json.dumps({"pid": os.getpid()}), flush=True)
if sys.argv[1:] == ["fail"] and index == 1:
  os._exit(3)

taps = []


def record(x, transforms, device):
  taps.append([device.id, x.tolist()])


def step(x):
  x = hcb.id_tap(record, x)
  return lax.psum(x, "i"), lax.all_gather(x, "i"), lax.axis_index("i")


local = np.arange(2, dtype=np.float32) + 10 * index  # one value per local device
total, gathered, where = minijax.pmap(step, axis_name="i")(local)
hcb.barrier_wait()

# jit of a shard_map over the global mesh: every process passes the global value and keeps
# its own devices' blocks
mesh = Mesh(np.array(minijax.devices()), ("d",))
x = minijax.device_put(np.arange(8, dtype=np.float32), NamedSharding(mesh, P("d")))
cumulative = minijax.jit(minijax.shard_map(
    lambda b: b + lax.psum(b.sum(), "d") * lax.axis_index("d"), mesh=mesh, in_specs=P("d"),
    out_specs=P("d")))(x)
blocks = {s.device.id: np.asarray(s.data).tolist() for s in cumulative.addressable_shards}

# multihost_utils: host values across processes, and process-local parts of global arrays
from minijax.experimental import multihost_utils as mh  # noqa: E402
stacked = mh.process_allgather({"v": np.array([index, 7])})["v"]
tiled = mh.process_allgather(np.array([index]), tiled=True)
from_0 = mh.broadcast_one_to_all(np.array([index + 5.0]))
from_1 = mh.broadcast_one_to_all(np.array(index * 3), is_source=index == 1)
mh.sync_global_devices("after the gathers")
try:
  mh.assert_equal(np.array(index), "the processes differ")
  unequal_raised = False
except AssertionError:
  unequal_raised = True
global_x = mh.host_local_array_to_global_array(np.arange(2.0) + 2 * index, mesh, P("d"))
host_local = mh.global_array_to_host_local_array(global_x, mesh, P("d"))
print(json.dumps({
    "process_index": index,
    "process_count": minijax.process_count(),
    "devices": [d.id for d in minijax.devices()],
    "local_devices": [d.id for d in minijax.local_devices()],
    "counts": [minijax.device_count(), minijax.local_device_count()],
    "initialized": minijax.distributed.is_initialized(),
    "psum": np.asarray(total).tolist(),
    "all_gather": np.asarray(gathered).tolist(),
    "axis_index": np.asarray(where).tolist(),
    "taps": sorted(taps),
    "shard_map_blocks": blocks,
    "fully_addressable": cumulative.is_fully_addressable,
    "multihost": {
        "stacked": stacked.tolist(), "tiled": tiled.tolist(), "from_0": from_0.tolist(),
        "from_1": from_1.tolist(), "unequal_raised": unequal_raised,
        "global_shape": list(global_x.shape),
        "global_blocks": {s.device.id: np.asarray(s.data).tolist()
                          for s in global_x.addressable_shards},
        "gathered_global": mh.process_allgather(global_x, tiled=True).tolist(),
        "host_local": np.asarray(host_local).tolist()},
    "jax_imported": "jax" in sys.modules,
}), flush=True)
minijax.distributed.shutdown()
