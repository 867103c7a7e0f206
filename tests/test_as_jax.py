"""`python -m minijax.run` and `install_as_jax`: `import jax` answered by minijax (no JAX needed)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = """
import sys
import jax, jax.numpy as jnp
from jax import lax
import jax.experimental.host_callback as hcb
import minijax

assert jnp is minijax.numpy and lax is minijax.lax and jax.jit is minijax.jit
assert hcb is sys.modules["minijax.experimental.host_callback"]
assert hcb.__spec__.name == "minijax.experimental.host_callback"
from jax.experimental.host_callback import _deprecated_id_print  # JAX 0.4.34's tests use it
assert _deprecated_id_print is hcb.id_print
assert jax.make_jaxpr(jnp.sin).__module__ == "jax"  # the module users imported
y = jax.jit(lambda x: jnp.sin(x) * 2.0)(jnp.arange(3.0))
assert type(y) is minijax.Array, type(y)  # minijax computed it
assert type(jax).__name__ == "JaxAlias" and "jax._src" not in sys.modules  # no JAX loaded
print("value", [round(float(v), 5) for v in y])
from jax.version import __version__ as version_module_says  # (libraries read it there too)
assert version_module_says == jax.__version__ == jax.version._version
print("version", jax.__version__, jax.__version_info__, minijax.__version__)
for name in ("jax.foo", "jax._src.pjit"):
  try:
    __import__(name)
  except ImportError as e:
    print("ImportError", type(e).__name__, e)
print("argv", sys.argv[1:], "path0", sys.path[0] == __import__("os").path.dirname(__file__))
"""


def _run(args, cwd):
  env = dict(os.environ, PYTHONPATH=ROOT)
  return subprocess.run([sys.executable, "-m", "minijax.run", *args], cwd=cwd, env=env,
                        capture_output=True, text=True, timeout=300)


def test_run_answers_import_jax_with_minijax(tmp_path):
  script = tmp_path / "prog.py"
  script.write_text(textwrap.dedent(SCRIPT))
  out = _run([str(script), "a", "--b"], cwd=tmp_path)
  assert out.returncode == 0, out.stderr
  lines = out.stdout.splitlines()
  assert lines[0] == "value [0.0, 1.68294, 1.81859]"
  import minijax
  assert lines[1] == f"version 0.10.2 (0, 10, 2) {minijax.__version__}"
  assert minijax.__version__ != "0.10.2"
  assert lines[2] == ("ImportError ModuleNotFoundError jax.foo is not provided by minijax "
                      "(no module minijax.foo)")
  # minijax offers the few `jax._src` modules libraries import (minijax._src), no others.
  assert lines[3] == ("ImportError ModuleNotFoundError jax._src.pjit is not provided by "
                      "minijax (no module minijax._src.pjit)")
  assert lines[4] == "argv ['a', '--b'] path0 True"


def test_run_module_and_errors(tmp_path):
  (tmp_path / "mod_prog.py").write_text("import jax\nprint(jax.__version__, jax.numpy.zeros(2).shape)\n")
  out = _run(["-m", "mod_prog"], cwd=tmp_path)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "0.10.2 (2,)"
  missing = _run([str(tmp_path / "nope.py")], cwd=tmp_path)
  assert missing.returncode == 2 and "no such file" in missing.stderr


def test_install_refuses_when_real_jax_is_loaded(tmp_path):
  # A stand-in `jax` module already imported (as the real one would be) is refused.
  code = ("import sys, types; sys.modules['jax'] = types.ModuleType('jax')\n"
          "import minijax\n"
          "try:\n  minijax.install_as_jax()\nexcept RuntimeError as e: print(e)\n")
  out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
  assert "the real jax is already imported" in out.stdout, out.stderr


def test_install_in_process_is_idempotent(tmp_path):
  code = ("import minijax, sys\n"
          "a = minijax.install_as_jax(); b = minijax.install_as_jax()\n"
          "import jax, jax.random\n"
          "print(a is b is jax, jax.random is minijax.random, minijax.__version__ != jax.__version__)\n")
  out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
  assert out.stdout.strip() == "True True True", out.stderr


def test_run_pytest_with_workers_runs_every_worker_on_minijax(tmp_path):
  """pytest-xdist's workers are fresh interpreters: `minijax.run` reaches them through
  MINIJAX_AS_JAX=1 and the `pytest11` plugin (minijax.pytest_plugin), so no test silently
  runs on the real JAX."""
  (tmp_path / "test_on_minijax.py").write_text(textwrap.dedent("""
      import os, sys
      import jax

      def test_a():
        assert type(jax).__name__ == "JaxAlias" and "jax._src" not in sys.modules

      def test_b():
        assert os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw")
        assert type(jax.numpy.ones(2)).__module__.startswith("minijax")
      """))
  out = _run(["-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-o", "addopts=", "-q",
              "test_on_minijax.py"], cwd=tmp_path)
  assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout[-3000:] + out.stderr
