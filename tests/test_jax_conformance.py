"""The conformance runner (tools/jax_conformance.py) on a small JAX-style test file it is given.

No JAX needed: the file is written here, in the style of JAX's tests, and runs on minijax
through the runner's import hook and its stand-in for `jax._src.test_util`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "tools", "jax_conformance.py")

TEST_FILE = '''
import os
import time
from absl.testing import absltest
import numpy as np
import jax
import jax.numpy as jnp
from jax._src import config
from jax._src import dispatch
from jax._src import test_util as jtu
from jax._src.util import safe_map
import jax._src.xla_bridge as xb
from jax import not_in_minijax

config.parse_flags_with_absl()
registered = dispatch.register_something("at import")  # internals at module level still import


class SmallTest(jtu.JaxTestCase):

  def test_add(self):
    self.assertAllClose(jnp.add(1., 2.), np.float32(3.))
    self.assertEqual(safe_map(lambda x: x + 1, [1, 2]), [2, 3])

  def test_is_minijax(self):
    import minijax
    self.assertIs(jax.numpy, minijax.numpy)
    self.assertEqual(jax.__version__, "0.10.2")

  def test_uses_internals(self):
    dispatch.xla_primitive_callable.cache_info()

  def test_wrong(self):
    self.assertArraysEqual(jnp.arange(3), jnp.arange(3) + 1)

  @jtu.skip_on_devices("cpu")
  def test_not_on_cpu(self):
    pass

  @jtu.sample_product(n=[1, 2, 3])
  def test_sampled(self, n):
    self._CompileAndCheck(lambda x: x * 2, lambda: [np.ones(n, np.float32)])

  def test_uses_missing(self):
    not_in_minijax(1)

  @jax.also_not_in_minijax(False)
  def test_decorated_by_missing(self):
    pass

  def test_hangs(self):
    time.sleep(60)

  def test_x_crashes(self):
    os._exit(3)

  def test_y_after_crash(self):
    self.assertEqual(jax.device_count(), 2)


if __name__ == "__main__":
  jtu.request_cpu_devices(2)
  absltest.main()
'''


def test_runner_reports_each_test_of_a_file(tmp_path):
  path = tmp_path / "small_test.py"
  path.write_text(textwrap.dedent(TEST_FILE))
  out = tmp_path / "out.json"
  proc = subprocess.run([sys.executable, RUNNER, str(path), "--timeout", "3", "--json", str(out)],
                        capture_output=True, text=True, timeout=600, cwd=tmp_path)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  results = json.loads(out.read_text())["small_test.py"]
  outcome = {tid.split("::")[1]: tuple(v) for tid, v in results.items()}
  assert outcome["test_add"] == ("passed", "")
  assert outcome["test_is_minijax"] == ("passed", "")
  assert outcome["test_uses_internals"] == (
      "failed", "jax_standin.internals.NeedsJaxInternals: needs JAX internals: "
      "jax._src.dispatch.xla_primitive_callable.cache_info")
  assert outcome["test_wrong"][0] == "failed" and "AssertionError" in outcome["test_wrong"][1]
  assert outcome["test_not_on_cpu"] == ("skipped", "Skipped on devices with tags: cpu")
  assert [outcome[f"test_sampled{i}"] for i in range(3)] == [("passed", "")] * 3
  assert outcome["test_uses_missing"] == (
      "failed", "jax_standin.internals.MinijaxLacks: minijax lacks jax.not_in_minijax")
  assert outcome["test_decorated_by_missing"] == (
      "failed", "jax_standin.internals.MinijaxLacks: minijax lacks jax.also_not_in_minijax()")
  assert ("the file imports with placeholders for what minijax lacks (the tests using them "
          "fail): jax.also_not_in_minijax, jax.not_in_minijax") in proc.stdout
  assert outcome["test_hangs"][0] == "failed" and "per-test timeout of 3 s" in outcome["test_hangs"][1]
  assert outcome["test_x_crashes"][0] == "error"
  assert "the test process died (exit code 3)" in outcome["test_x_crashes"][1]
  # The runner resumed after the crash; the file asked for 2 CPU devices and got them.
  assert outcome["test_y_after_crash"] == ("passed", "")
  assert "minijax  passed 6  failed 5  skipped 1  error 1" in proc.stdout
  assert "no JAX figures recorded" in proc.stdout


def test_runner_needs_a_jax_checkout_for_names(tmp_path):
  env = {k: v for k, v in os.environ.items() if k != "JAX_SRC"}
  proc = subprocess.run([sys.executable, RUNNER, "api"], capture_output=True, text=True,
                        timeout=60, cwd=tmp_path, env=env)
  assert proc.returncode != 0 and "--jax-src" in proc.stderr


def test_ids_built_from_minijax_class_reprs_match_jaxs():
  sys.path.insert(0, os.path.join(ROOT, "tools"))
  try:
    from jax_standin.plugin import test_id
  finally:
    sys.path.remove(os.path.join(ROOT, "tools"))
  import minijax.numpy as jnp
  nodeid = f"tests/python_callback_test.py::PythonCallbackTest::test_io_{jnp.bfloat16}"
  assert test_id(nodeid) == "PythonCallbackTest::test_io_<class 'jax.numpy.bfloat16'>"


def test_get_backend_cache_clear_is_a_no_op_only_while_xla_flags_are_unchanged(monkeypatch):
  sys.path.insert(0, os.path.join(ROOT, "tools"))
  try:
    from jax_standin import internals
  finally:
    sys.path.remove(os.path.join(ROOT, "tools"))
  get_backend = internals._GetBackend()
  monkeypatch.setenv("XLA_FLAGS", internals._XLA_FLAGS_AT_START)
  get_backend.cache_clear()  # unchanged: nothing to clear
  monkeypatch.setenv("XLA_FLAGS", internals._XLA_FLAGS_AT_START + " --xla_dump_to=/tmp/x")
  try:
    get_backend.cache_clear()
  except internals.NeedsJaxInternals as e:
    assert "changed XLA_FLAGS" in str(e)
  else:
    raise AssertionError("a change of XLA_FLAGS needs a new client")


def test_harness_runner_compares_jaxs_own_harnesses():
  """tools/jax_harnesses.py on a few of JAX's harnesses (it needs JAX, which ships them):
  values that agree are counted as matches, out-of-bounds gather modes included."""
  import importlib.util
  import pytest
  if importlib.util.find_spec("jax") is None:
    pytest.skip("JAX is not installed (the harnesses ship with it)")
  proc = subprocess.run(
      [sys.executable, os.path.join(ROOT, "tools", "jax_harnesses.py"), "--only",
       r"^(sin_shape_float32|gather_dtypes_shape_float32_10_axis_0|lax_op_add_int8\[3\]_)"],
      capture_output=True, text=True, timeout=600)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert "match 3  differs 0  error 0" in proc.stdout, proc.stdout
