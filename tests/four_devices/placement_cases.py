"""Placement on 4 CPU devices: the committed bit of Arrays (which device a computation runs
on, when `jit` refuses an argument), copies of sharded Arrays, and building Arrays from
blocks (`make_array_from_callback`, `make_array_from_single_device_arrays`)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.sharding import NamedSharding, PartitionSpec as P


def test_copies_of_sharded_arrays_copy_each_block_on_its_device(devices, mesh, mesh2d):
  x = minijax.device_put(jnp.ones(4), NamedSharding(mesh, P("i")))
  y = minijax.device_put(jnp.arange(8.).reshape(2, 4), NamedSharding(mesh2d, P("y", "x")))
  for a in (x, y):
    b = jnp.copy(a)
    assert b.sharding == a.sharding
    np.testing.assert_array_equal(b, a)
    for s, t in zip(a.addressable_shards, b.addressable_shards):
      assert (s.device, s.index, s.replica_id) == (t.device, t.index, t.replica_id)
      np.testing.assert_array_equal(s.data, t.data)
      assert s.data.unsafe_buffer_pointer() != t.data.unsafe_buffer_pointer()
  a.delete()
  assert not b.is_deleted()
  replicated = minijax.pmap(lambda v: v, in_axes=0, out_axes=None)(jnp.arange(4))
  out = jnp.copy(replicated)
  assert isinstance(out.sharding, NamedSharding) and int(out) == 0


def test_jax_was_never_imported():
  assert "jax" not in sys.modules
