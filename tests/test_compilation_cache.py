"""The persistent compilation cache: a second process loads what the first compiled (JAX's
cache counters say so, and the values agree), programs that call back into the process are
never stored, a corrupt entry is compiled again, and short compilations are not kept
unless asked."""
from __future__ import annotations

import json
import os
import textwrap

import minijax

from tests.conftest import run_python

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import minijax, minijax.numpy as jnp
    from minijax.experimental.compilation_cache import compilation_cache
    events, named = [], []
    def listen(event, fun_name=None, **_):
      events.append(event.rsplit("/", 1)[-1])
      named.append(fun_name)
    minijax.monitoring.register_event_listener(listen)
    compilation_cache.set_cache_dir(sys.argv[1])
    minijax.config.update("jax_persistent_cache_min_compile_time_secs", float(sys.argv[2]))

    @minijax.jit
    def f(x):
      for i in range(4):
        x = jnp.sin(x) @ x.T + i
      return x

    @minijax.jit
    def g(x):
      minijax.debug.print("x={}", x.sum())
      return x * 2

    x = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    y = f(x)
    counts = {e: events.count(e) for e in set(events)}
    g(x)  # (an effect: never looked up nor stored)
    minijax.effects_barrier()
    print(json.dumps({"y": np.asarray(y).tolist(), "events": counts, "names": named}))
""")


def _run(directory, min_seconds=0.0):
  proc = run_python(f"import sys; sys.argv = ['', {str(directory)!r}, {str(min_seconds)!r}]\n"
                    + PROGRAM)
  assert proc.returncode == 0, proc.stderr
  return json.loads(proc.stdout.strip().splitlines()[-1]), proc


def test_a_second_process_loads_what_the_first_compiled(tmp_path):
  first, _ = _run(tmp_path)
  entries = sorted(os.listdir(tmp_path))
  assert entries and all(e.startswith("minijax-") for e in entries)
  assert first["events"].get("cache_misses", 0) >= 1 and "cache_hits" not in first["events"]
  second, _ = _run(tmp_path)
  assert second["events"].get("cache_hits", 0) == first["events"]["cache_misses"]
  assert "cache_misses" not in second["events"]
  assert second["y"] == first["y"]
  assert "jit(f)" in second["names"] and "jit(g)" not in second["names"]  # (g has an effect)
  assert sorted(os.listdir(tmp_path)) == entries


def test_a_corrupt_entry_is_compiled_again(tmp_path):
  first, _ = _run(tmp_path)
  for entry in os.listdir(tmp_path):
    with open(tmp_path / entry, "wb") as f:
      f.write(b"not an executable")
  again, proc = _run(tmp_path)
  assert again["y"] == first["y"]
  assert "cache_hits" not in again["events"]
  assert "could not be loaded" in proc.stderr


def test_short_compilations_are_not_kept_by_default(tmp_path):
  _run(tmp_path, min_seconds=1e9)
  assert os.listdir(tmp_path) == []


def test_the_flags_and_jaxs_functions_set_the_same_directory(tmp_path):
  from minijax.experimental.compilation_cache import compilation_cache
  try:
    compilation_cache.set_cache_dir(tmp_path)
    assert minijax.config.jax_compilation_cache_dir == str(tmp_path)
    assert minijax.config.persistent_cache_min_compile_time_secs == 1.0
  finally:
    compilation_cache.reset_cache()
  assert minijax.config.compilation_cache_dir is None
