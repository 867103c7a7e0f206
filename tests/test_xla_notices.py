"""A compile for several devices keeps XLA's notice that GSPMD will be deprecated off the
user's stderr, and nothing else: other output written meanwhile still arrives."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from minijax.runtime import xla_notices

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_pmap_over_two_devices_prints_no_gspmd_notice():
  script = textwrap.dedent("""
      import minijax, minijax.numpy as jnp
      from minijax import lax
      out = minijax.pmap(lambda x: lax.psum(x, "i"), axis_name="i")(jnp.arange(2.0))
      print(out.tolist())
  """)
  env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="2", PYTHONPATH=_ROOT)
  done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                        text=True, timeout=300, cwd=_ROOT)
  assert done.returncode == 0, done.stderr
  assert done.stdout.strip() == "[1.0, 1.0]"
  assert "GSPMD" not in done.stderr and "Shardy" not in done.stderr, done.stderr


def test_other_output_written_during_a_compile_still_reaches_stderr(capfd):
  with xla_notices.without_notices():
    os.write(2, b"W0000 sharding_propagation.cc:1] GSPMD sharding propagation is going to be "
                b"deprecated and not supported in the future.\n")
    os.write(2, b"E0000 something.cc:2] a real problem\n")
    print("from python", file=sys.stderr)
  err = capfd.readouterr().err
  assert "a real problem" in err and "from python" in err
  assert "GSPMD" not in err
