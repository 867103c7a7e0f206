"""These modules need a client with 4 CPU devices: tests/test_parallel.py runs them in one
subprocess with MINIJAX_NUM_CPU_DEVICES=4 (their file names keep the main run from
collecting them).  Every module ends by checking that `jax` was never imported."""
import numpy as np
import pytest

import minijax


@pytest.fixture(scope="session")
def devices():
  found = minijax.devices()
  assert len(found) == 4, "run with MINIJAX_NUM_CPU_DEVICES=4 (see tests/test_parallel.py)"
  return found


@pytest.fixture(scope="session")
def mesh(devices):
  return minijax.sharding.Mesh(np.array(devices), ("i",))


@pytest.fixture(scope="session")
def mesh2d(devices):
  return minijax.sharding.Mesh(np.array(devices).reshape(2, 2), ("x", "y"))
