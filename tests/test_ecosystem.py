"""JAX's libraries run on minijax: each program in tests/ecosystem/ trains or samples with
optax, flax.linen, flax.nnx, equinox, numpyro, distrax or blackjax through `python -m minijax.run`
(`import jax` answered by minijax), and its numbers are JAX's.

The expected numbers are computed in the same test by running the same program with JAX
itself (`python tests/ecosystem/<program>.py`, JAX and the libraries from the `ecosystem`
extra), on the same CPU: a few training steps amplify rounding, which differs between CPUs,
so no number is recorded from another machine.  They are float32 results compared with rtol
1e-4.  Each run also proves minijax did the work: no module answering a `jax` name is JAX's
(`foreign`) and the arrays computed are minijax's.  NUTS after a long adaptive warmup
amplifies float32 rounding (the step size adapts on every draw), so there only the posterior
means are compared closely, while a short-warmup chain is compared draw by draw.  The tests
skip when the libraries are not installed (`pip install -e .[ecosystem]`).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "ecosystem")
# Top-level packages only: importing a library (or flax.linen) would import JAX itself.
LIBRARIES = {"optax_regression": ["jax", "optax"], "flax_linen": ["jax", "flax", "optax"],
             "flax_nnx": ["jax", "flax", "optax"],
             "equinox_mlp": ["jax", "equinox"], "numpyro_inference": ["jax", "numpyro"],
             "distrax_blackjax": ["jax", "distrax", "blackjax"]}
# Compared loosely: NUTS draws after 100 adaptive warmup steps (see the docstring).
LOOSE = {"nuts_mean": 0.02, "nuts_first": 0.1, "nuts_last": 0.1}

def _missing(program: str) -> list[str]:
  return [lib for lib in LIBRARIES[program] if importlib.util.find_spec(lib) is None]


def _run(program: str, on_minijax: bool) -> dict:
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + PROGRAMS)
  runner = ["-m", "minijax.run"] if on_minijax else []
  out = subprocess.run([sys.executable, *runner, f"{program}.py"], cwd=PROGRAMS,
                       env=env, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  line = [s for s in out.stdout.splitlines() if s.startswith("RESULTS ")][-1]
  return json.loads(line[len("RESULTS "):])


@pytest.mark.parametrize("program", sorted(LIBRARIES))
def test_library_program_gives_jaxs_numbers_on_minijax(program):
  missing = _missing(program)
  if missing:
    pytest.skip(f"{', '.join(missing)} not installed (pip install -e .[ecosystem])")
  expected = _run(program, on_minijax=False)
  assert expected.pop("backend") == "jax", expected
  del expected["array_types"]
  got = _run(program, on_minijax=True)
  assert got["backend"] == "minijax" and got["foreign"] == [], got
  assert got["array_types"] == ["minijax.runtime.array.Array"], got["array_types"]
  for name, want in expected.items():
    if name in LOOSE:
      np.testing.assert_allclose(got[name], want, atol=LOOSE[name], err_msg=name)
    else:
      np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-6, err_msg=name)
