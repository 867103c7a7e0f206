"""Settings are checked before they are stored, the environment when minijax is imported, and
errors on jit's slow path reach the user as one exception, not chained to the fast path's.

Every flag of `minijax.config.FLAGS` is tried with values it must refuse (the error names
the flag, the value and what is allowed; the old value stays and no observer hears of it)
and values it accepts (stored as the flag's type).  The environment is read by
`read_environ` on a dictionary, and once for real in a fresh interpreter.
"""
from __future__ import annotations

import math
import re
import traceback

import numpy as np
import pytest

import minijax
from minijax.config import FLAGS, MAX_DEVICES, config, read_environ
from minijax.experimental import host_callback as hcb

from tests.conftest import run_python

# (flag, values refused, values accepted -> what is stored)
BAD_AND_GOOD = [
    ("enable_x64", ["yes", 2, None, 1.0], [(True, True), (0, False), (np.bool_(True), True)]),
    ("debug_nans", ["no", -1], [(False, False)]),
    ("debug_infs", ["yes", 2], [(0, False)]),
    ("use_shardy_partitioner", [True, 1, "no"], [(False, False), (0, False)]),
    ("disable_jit", ["yes", 2], [(False, False), (np.bool_(False), False)]),
    ("check_tracer_leaks", ["on", None], [(False, False)]),
    ("explain_cache_misses", ["on"], [(False, False)]),
    ("enable_checks", ["on"], [(False, False)]),
    ("default_matmul_precision", ["fast", 3], [("float32", "float32"), (None, None)]),
    ("numpy_rank_promotion", ["never", None], [("raise", "raise"), ("allow", "allow")]),
    ("numpy_dtype_promotion", ["loose", None], [("strict", "strict"), ("standard", "standard")]),
    ("threefry_partitionable", ["yes", 2], [(True, True), (False, False)]),
    ("log_compiles", ["1"], [(1, True)]),
    ("tap_mechanism", ["fast", None, 1], [("callback", "callback"), ("native", "native")]),
    ("tap_loop_buffer", [0, "many", 2**24 + 1], [(1, 1), (4096, 4096)]),
    ("tap_delivery", ["later", None, 1], [("deferred", "deferred"), ("immediate", "immediate"),
                                          ("auto", "auto")]),
    ("host_callback_semantics", ["modern", None], [("jax", "jax"), ("seed", "seed")]),
    ("effects_ordering", ["token", None], [("stream", "stream"),
                                           ("runtime_token", "runtime_token")]),
    ("traceback_filtering", ["sometimes", 1], [("off", "off"), ("auto", "auto")]),
    ("platforms", ["tpu", 3, "gpu,tpu"], [("cpu", "cpu"), ("cpu,gpu", "cpu,gpu"), (None, None)]),
    ("cpu_collectives_implementation", ["mpi", None], [("gloo", "gloo")]),
    ("tap_queue_bytes", [0, -5, 2**63, 1.5, "100", True, 99999999999999999999],
     [(1, 1), (1 << 20, 1 << 20), (np.int64(4096), 4096)]),
    ("tap_exit_timeout", [-1, float("nan"), float("inf"), "3", True],
     [(0, 0.0), (2.5, 2.5), (np.float32(1.5), 1.5)]),
    ("eager_cache_size", [0, -1, 1.0], [(1, 1), (64, 64)]),
    ("jit_cache_size", [0, "8"], [(8, 8)]),
    ("transform_cache_size", [0, None], [(16, 16)]),
    ("default_prng_impl", ["fry", None, 1], [("rbg", "rbg"), ("threefry2x32", "threefry2x32")]),
    ("explicit_x64_dtypes", ["always", None], [("allow", "allow"), ("error", "error"),
                                                ("warn", "warn")]),
    ("allow_f16_reductions", ["no", 2], [(False, False), (True, True)]),
    ("default_device", ["gpu", 0, "tpu"], [("cpu", "cpu"), (None, None)]),
    *[(name, ["never", True, "Allow"], [("log", "log"), (None, None)])
      for name in ("transfer_guard_host_to_device", "transfer_guard_device_to_device",
                   "transfer_guard_device_to_host")],
    ("transfer_guard", ["never", 1], [(None, None)]),
    ("no_tracing", ["on", None], [(True, True), (False, False)]),
    ("no_execution", ["on", None], [(True, True), (False, False)]),
    ("legacy_prng_key", ["never", True], [("error", "error"), ("allow", "allow")]),
    ("enable_custom_prng", ["on", 2], [(True, True), (False, False)]),
    ("random_seed_offset", [1.5, "3", 2**63], [(3, 3), (-2, -2), (0, 0)]),
    ("threefry_partitionable", ["yes", 2], [(True, True), (False, False)]),
    ("debug_key_reuse", [True, "no"], [(False, False)]),
    ("softmax_custom_jvp", ["yes", 2], [(True, True), (False, False)]),
    ("use_simplified_jaxpr_constants", ["no", 2], [(True, True), (0, False)]),
    ("log_checkpoint_residuals", ["on", 2], [(True, True), (False, False)]),
    ("compilation_cache_dir", ["", 3, True], [("/tmp/c", "/tmp/c"), (None, None)]),
    ("enable_compilation_cache", ["on", 2], [(False, False), (True, True)]),
    ("persistent_cache_min_compile_time_secs", [-1, "1", float("nan")], [(0, 0.0), (1, 1.0)]),
    ("persistent_cache_min_entry_size_bytes", [-1, 1.5], [(0, 0), (4096, 4096)]),
]


def test_every_flag_is_in_the_table_of_bad_and_good_values():
  assert {row[0] for row in BAD_AND_GOOD} | {"num_cpu_devices"} == set(FLAGS)


@pytest.mark.parametrize("name,bad,good", BAD_AND_GOOD, ids=[row[0] for row in BAD_AND_GOOD])
def test_a_bad_value_is_refused_before_it_is_stored_and_a_good_one_is_normalized(
    name, bad, good):
  before = getattr(config, name)
  heard = []
  config.on_change(lambda n, v: heard.append((n, v)))
  try:
    for value in bad:
      with pytest.raises(ValueError, match=rf"minijax\.config\.{name} cannot be .*: expected "
                         rf"{re.escape(FLAGS[name].allowed)}"):
        config.update(name, value)
      assert getattr(config, name) == before or (
          isinstance(before, float) and math.isnan(before))
    assert heard == []
    for value, stored in good:
      config.update(name, value)
      assert getattr(config, name) == stored and type(getattr(config, name)) is type(stored)
  finally:
    config._observers.pop()
    config.update(name, before)


def test_a_refused_queue_size_leaves_taps_working():
  with pytest.raises(ValueError, match="tap_queue_bytes cannot be 0: expected an integer "
                     "from 1 to 9223372036854775807 bytes"):
    config.update("tap_queue_bytes", 0)
  got = []
  minijax.jit(lambda x: hcb.id_tap(lambda a, t: got.append(float(a)), x))(np.float32(3))
  hcb.barrier_wait()
  assert got == [3.0]


def test_parse_flags_with_absl_parses_absls_flags_as_jaxs_does():
  """jax-cfd's tests call it at import and then absltest's `create_tempdir`, which reads an
  absl flag: under pytest, only this call has parsed absl's flags."""
  pytest.importorskip("absl")
  out = run_python("from absl import flags; from absl.testing import absltest\n"
                   "import minijax\n"
                   "before = flags.FLAGS.is_parsed()\n"
                   "minijax.config.parse_flags_with_absl()\n"
                   "print(before, flags.FLAGS.is_parsed(), flags.FLAGS.test_tmpdir != '')\n"
                   "minijax.config.parse_flags_with_absl()  # (again: harmless)\n")
  assert out.stdout.split() == ["False", "True", "True"], out.stderr


def test_an_unknown_flag_is_an_attribute_error_naming_the_known_ones():
  with pytest.raises(AttributeError, match="no flag 'enable_x32'.*enable_x64"):
    config.update("enable_x32", True)


def test_the_device_count_cannot_change_once_the_client_exists():
  n = len(minijax.devices())
  with pytest.raises(RuntimeError, match=r"^jax_num_cpu_devices config should be updated before "
                     rf"backends are initialized: num_cpu_devices cannot change to {n + 1}.*"
                     rf"already exists with {n} device\(s\).*MINIJAX_NUM_CPU_DEVICES"):
    config.update("num_cpu_devices", n + 1)
  assert config.num_cpu_devices == n
  config.update("num_cpu_devices", n)  # no change: allowed


# (flag, environment, the flag's value read from it or None when it must be refused, the
# variable an error names)
ENVIRONMENT = [
    ("enable_x64", {"MINIJAX_ENABLE_X64": "1"}, True, None),
    ("enable_x64", {"MINIJAX_ENABLE_X64": " Off "}, False, None),
    ("enable_x64", {"MINIJAX_ENABLE_X64": "maybe"}, None, "MINIJAX_ENABLE_X64='maybe'"),
    ("enable_x64", {"MINIJAX_ENABLE_X64": ""}, False, None),
    ("enable_x64", {"JAX_ENABLE_X64": "true"}, True, None),
    ("enable_x64", {"JAX_ENABLE_X64": "yes please"}, None, "JAX_ENABLE_X64='yes please'"),
    ("enable_x64", {"MINIJAX_ENABLE_X64": "0", "JAX_ENABLE_X64": "bad"}, False, None),
    ("debug_nans", {"MINIJAX_DEBUG_NANS": "true"}, True, None),
    ("debug_infs", {"JAX_DEBUG_INFS": "1"}, True, None),
    ("disable_jit", {"JAX_DISABLE_JIT": "1"}, True, None),
    ("log_compiles", {"MINIJAX_LOG_COMPILES": "2"}, None, "MINIJAX_LOG_COMPILES='2'"),
    ("tap_mechanism", {"MINIJAX_TAP_MECHANISM": "callback"}, "callback", None),
    ("tap_mechanism", {"MINIJAX_TAP_MECHANISM": "fast"}, None, "MINIJAX_TAP_MECHANISM='fast'"),
    ("tap_delivery", {"MINIJAX_TAP_DELIVERY": "deferred"}, "deferred", None),
    ("tap_delivery", {"MINIJAX_TAP_DELIVERY": "soon"}, None, "MINIJAX_TAP_DELIVERY='soon'"),
    ("tap_queue_bytes", {"MINIJAX_TAP_QUEUE_BYTES": "1000000"}, 1000000, None),
    ("tap_queue_bytes", {"MINIJAX_TAP_QUEUE_BYTES": "abc"}, None,
     "MINIJAX_TAP_QUEUE_BYTES='abc'"),
    ("tap_queue_bytes", {"MINIJAX_TAP_QUEUE_BYTES": "0"}, None, "MINIJAX_TAP_QUEUE_BYTES='0'"),
    ("tap_queue_bytes", {"MINIJAX_TAP_QUEUE_BYTES": "99999999999999999999"}, None,
     "MINIJAX_TAP_QUEUE_BYTES='99999999999999999999'"),
    ("tap_exit_timeout", {"MINIJAX_TAP_EXIT_TIMEOUT": "0.5"}, 0.5, None),
    ("tap_exit_timeout", {"MINIJAX_TAP_EXIT_TIMEOUT": "-1"}, None,
     "MINIJAX_TAP_EXIT_TIMEOUT='-1'"),
    ("num_cpu_devices", {"MINIJAX_NUM_CPU_DEVICES": "2048"}, 2048, None),
    ("num_cpu_devices", {"MINIJAX_NUM_CPU_DEVICES": "2049"}, None,
     "MINIJAX_NUM_CPU_DEVICES='2049'"),
    ("num_cpu_devices", {"MINIJAX_NUM_CPU_DEVICES": "four"}, None,
     "MINIJAX_NUM_CPU_DEVICES='four'"),
    ("num_cpu_devices", {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}, 3, None),
    ("num_cpu_devices", {"XLA_FLAGS": "--xla_force_host_platform_device_count=0"}, None,
     "--xla_force_host_platform_device_count=0"),
    ("host_callback_semantics", {"MINIJAX_HOST_CALLBACK_SEMANTICS": "jax"}, "jax", None),
    ("host_callback_semantics", {"MINIJAX_HOST_CALLBACK_SEMANTICS": "new"}, None,
     "MINIJAX_HOST_CALLBACK_SEMANTICS='new'"),
    ("traceback_filtering", {"JAX_TRACEBACK_FILTERING": "off"}, "off", None),
    ("platforms", {"JAX_PLATFORMS": "tpu"}, None, "JAX_PLATFORMS='tpu'"),
    ("eager_cache_size", {"MINIJAX_EAGER_CACHE_SIZE": "10"}, 10, None),
    ("jit_cache_size", {"MINIJAX_JIT_CACHE_SIZE": "-3"}, None, "MINIJAX_JIT_CACHE_SIZE='-3'"),
    ("transform_cache_size", {"MINIJAX_TRANSFORM_CACHE_SIZE": "1e3"}, None,
     "MINIJAX_TRANSFORM_CACHE_SIZE='1e3'"),
]


@pytest.mark.parametrize("name,environ,expected,named", ENVIRONMENT,
                         ids=[",".join(f"{k}={v!r}" for k, v in e.items())
                              for _, e, _, _ in ENVIRONMENT])
def test_each_environment_variable_is_checked_and_a_bad_one_names_itself(name, environ,
                                                                          expected, named):
  flag = FLAGS[name]
  if expected is None:
    allowed = re.escape(flag.env_allowed or flag.allowed)
    with pytest.raises(ValueError, match=rf"{re.escape(named)}.* is not valid for minijax\."
                       rf"config\.{name}: expected {allowed}$"):
      read_environ(environ)
  else:
    assert read_environ(environ)[name] == expected


def test_every_flag_read_from_the_environment_reads_a_minijax_variable():
  assert all(f.env.startswith("MINIJAX_") for f in FLAGS.values() if f.env)
  assert MAX_DEVICES == 2048


def test_a_bad_variable_fails_the_import_with_its_name_value_and_the_limit():
  for env, message in [
      ({"MINIJAX_TAP_QUEUE_BYTES": "abc"},
       "MINIJAX_TAP_QUEUE_BYTES='abc' is not valid for minijax.config.tap_queue_bytes: "
       "expected an integer from 1 to 9223372036854775807 bytes"),
      ({"MINIJAX_NUM_CPU_DEVICES": "2049"},
       "MINIJAX_NUM_CPU_DEVICES='2049' is not valid for minijax.config.num_cpu_devices: "
       "expected an integer from 1 to 2048 devices (the native tap queues' limit)")]:
    proc = run_python("import minijax", env=env)
    assert proc.returncode != 0
    assert f"ValueError: the environment variable {message}" in proc.stderr, proc.stderr


def test_the_device_count_is_read_when_the_backend_starts_not_at_import():
  code = ("import os, minijax\n"
          "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=3'\n"
          "print(minijax.device_count())")
  proc = run_python(code, env={"MINIJAX_NUM_CPU_DEVICES": "", "XLA_FLAGS": ""})
  assert proc.returncode == 0 and proc.stdout.split()[-1] == "3", proc.stderr
  late_bad = ("import os, minijax\nos.environ['MINIJAX_NUM_CPU_DEVICES'] = 'four'\n"
              "minijax.numpy.ones(2)")
  proc = run_python(late_bad)
  assert proc.returncode != 0
  assert "MINIJAX_NUM_CPU_DEVICES='four' is not valid for minijax.config.num_cpu_devices" in (
      proc.stderr)
  updated = ("import os, minijax\nminijax.config.update('num_cpu_devices', 2)\n"
             "os.environ['MINIJAX_NUM_CPU_DEVICES'] = '4'\nprint(minijax.device_count())")
  proc = run_python(updated)
  assert proc.returncode == 0 and proc.stdout.split()[-1] == "2", proc.stderr  # update wins


# ----------------------------------------------------------------------------- clean errors

def _raise_mine(*args):
  raise ValueError("mine")


@pytest.mark.parametrize("arg", [np.ones(3, np.float32), "abc", {"a": np.ones(2)},
                                 (minijax.numpy.ones(2), 1.0), [np.float32(1)]],
                         ids=["numpy", "string", "dict", "tuple", "list"])
def test_an_error_on_jits_slow_path_is_not_chained_to_the_fast_paths(arg):
  f = minijax.jit(_raise_mine if not isinstance(arg, str) else lambda s: s)
  with pytest.raises((ValueError, TypeError)) as info:
    f(arg)
  e = info.value
  assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__)
  text = "".join(traceback.format_exception(e))
  assert "During handling of the above exception" not in text
  assert "AttributeError" not in text


def test_an_eager_error_on_a_numpy_argument_is_not_chained_either():
  with pytest.raises(TypeError) as info:
    minijax.lax.add(np.ones(2, np.float32), "x")
  e = info.value
  assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__)


def test_a_boolean_flags_context_manager_without_a_value_sets_it_true():
  assert minijax.config.jax_enable_custom_prng is False
  with minijax.enable_custom_prng():
    assert minijax.config.jax_enable_custom_prng is True
    key = minijax.random.PRNGKey(123)  # a typed key while the flag is on
  assert minijax.config.jax_enable_custom_prng is False
  assert key.shape == ()
  with pytest.raises(TypeError, match="Context manager for default_prng_impl config option "
                     "requires an argument"):
    minijax.default_prng_impl()


def test_config_read_and_x64_enabled_as_jax_names_them():
  assert minijax.config.read("jax_enable_x64") is minijax.config.x64_enabled is False
  with minijax.enable_x64(True):
    assert minijax.config.read("jax_enable_x64") is minijax.config.x64_enabled is True
  with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such_flag"):
    minijax.config.read("jax_no_such_flag")
  # JAX's `config.values`: every flag by its JAX name (kfac-jax tests a flag's presence)
  assert minijax.config.values["jax_enable_x64"] is False
  with minijax.enable_x64(True):
    assert minijax.config.values["jax_enable_x64"] is True
  assert "jax_pmap_shmap_merge" not in minijax.config.values  # (not in JAX 0.10.2 either)
