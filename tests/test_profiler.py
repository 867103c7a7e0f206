"""`minijax.profiler` records real profiles with jaxlib's profiler: a trace of a jitted
computation and its annotations is written where JAX writes one, the annotations nest and
decorate, and a second trace or a stray stop is refused as in JAX."""
from __future__ import annotations

import gzip
import json
import os

import pytest

import minijax
import minijax.numpy as jnp
from minijax import profiler


def test_a_trace_records_the_computation_and_its_annotations(tmp_path):
  @profiler.annotate_function
  def step(x):
    return minijax.jit(lambda v: jnp.sin(v) @ v)(x).block_until_ready()

  with profiler.trace(tmp_path):
    with profiler.StepTraceAnnotation("train", step_num=1):
      with profiler.TraceAnnotation("outer_region"):
        step(jnp.ones((32, 32)))
  runs = list((tmp_path / "plugins" / "profile").iterdir())
  assert len(runs) == 1
  files = os.listdir(runs[0])
  assert any(f.endswith(".xplane.pb") for f in files)
  trace_file = next(f for f in files if f.endswith(".trace.json.gz"))
  with gzip.open(runs[0] / trace_file) as f:
    names = {e.get("name") for e in json.load(f)["traceEvents"]}
  assert {"outer_region", "train"} <= names
  assert any("step" in (n or "") for n in names)  # the decorated function's annotation


def test_one_trace_at_a_time_and_memory_profiles(tmp_path):
  profiler.start_trace(tmp_path)
  try:
    with pytest.raises(RuntimeError, match="already been started"):
      profiler.start_trace(tmp_path)
  finally:
    profiler.stop_trace()
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  with pytest.raises(NotImplementedError, match="create_perfetto_link"):
    profiler.start_trace(tmp_path, create_perfetto_link=True)
  jnp.ones(1000).block_until_ready()
  assert isinstance(profiler.device_memory_profile(), bytes)
  profiler.save_device_memory_profile(tmp_path / "memory.prof")
  assert (tmp_path / "memory.prof").stat().st_size > 0
