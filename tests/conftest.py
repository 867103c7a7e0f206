import contextlib
import gc
import logging
import os
import sys
from typing import Callable

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_addoption(parser):
  parser.addoption("--soak-seconds", type=float, default=4.0,
                   help="how long tests/test_soak.py dispatches (4 s, short enough for CI; "
                        "try 300 locally)")


@pytest.fixture
def soak_seconds(request) -> float:
  return request.config.getoption("--soak-seconds")


def _with_x64(enabled: bool):
  import minijax
  previous = minijax.config.enable_x64
  minijax.config.update("enable_x64", enabled)
  try:
    yield
  finally:
    minijax.config.update("enable_x64", previous)


@pytest.fixture
def immediate_taps():
  """Runs a test of the immediate tap path's machinery (queues, consumer ids, delivery
  during a computation) with `tap_delivery="immediate"`, whatever MINIJAX_TAP_DELIVERY
  says."""
  import minijax
  with minijax.tap_delivery("immediate"):
    yield


@pytest.fixture
def runtime_token_lowering():
  """Runs a test that reads `main`'s token parameters under the runtime-token ordering
  (`effects_ordering="runtime_token"`), whatever MINIJAX_EFFECTS_ORDERING says."""
  import minijax
  saved = minijax.config.effects_ordering
  minijax.config.update("effects_ordering", "runtime_token")
  yield
  minijax.config.update("effects_ordering", saved)


@pytest.fixture(params=["runtime_token", "stream"])
def effects_ordering(request):
  """Runs a test under each way of ordering calls with ordered effects."""
  import minijax
  saved = minijax.config.effects_ordering
  minijax.config.update("effects_ordering", request.param)
  yield request.param
  minijax.config.update("effects_ordering", saved)


@pytest.fixture
def x64():
  """Runs a test with 64-bit types enabled, restoring the flag afterwards."""
  yield from _with_x64(True)


@pytest.fixture
def x64_off():
  """Runs a test with 64-bit types disabled, whatever MINIJAX_ENABLE_X64 says."""
  yield from _with_x64(False)


def run_python(code: str, env: dict | None = None, timeout: float = 120):
  """Runs `code` in a fresh interpreter (for device counts, exit handlers, sys.modules)."""
  import subprocess
  full_env = dict(os.environ, **(env or {}))
  full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        env=full_env, timeout=timeout)


def compiles(caplog, fn) -> list[str]:
  """The compilations `fn()` logs (its "Finished XLA compilation of jit(...)" lines)."""
  import minijax
  minijax.config.update("log_compiles", True)
  try:
    with caplog.at_level(logging.WARNING, logger="minijax"):
      caplog.clear()
      fn()
    return [r.getMessage() for r in caplog.records
            if "Finished XLA compilation" in r.getMessage()]
  finally:
    minijax.config.update("log_compiles", False)


def using_tap_mechanism(name: str, barrier: Callable[[], None], ignore=()):
  """A fixture body that runs a test under tap mechanism `name` ("native" or "callback"):
  `barrier()` before and after (what the test left pending is waited for; exceptions of
  the types in `ignore` are dropped there), then the previous mechanism restored."""
  import minijax
  previous = minijax.config.tap_mechanism
  minijax.config.update("tap_mechanism", name)
  barrier()
  try:
    yield name
  finally:
    try:
      barrier()
    except ignore:
      pass
    finally:
      minijax.config.update("tap_mechanism", previous)


@contextlib.contextmanager
def heap_frozen():
  """Moves every object that exists now into the collector's permanent generation while
  the block runs: `gc.collect()` and `gc.get_referrers` in it then scan the block's own
  objects only, not the heap of every test an xdist worker ran before (up to seconds a
  collection there).  What the block checks is freed must be created in the block."""
  gc.collect()
  gc.freeze()
  try:
    yield
  finally:
    gc.unfreeze()


@pytest.fixture
def frozen_heap():
  """The test runs with the heap before it frozen (see `heap_frozen`)."""
  with heap_frozen():
    yield
