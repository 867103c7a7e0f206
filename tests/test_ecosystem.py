"""JAX's libraries run on minijax: each program in tests/ecosystem/ trains or samples with
optax, flax.linen, flax.nnx, equinox, numpyro, distrax or blackjax through `python -m minijax.run`
(`import jax` answered by minijax), and its numbers are JAX 0.10.2's.

The expected numbers were recorded by running the same programs with JAX 0.10.2 and the
libraries of the `ecosystem` extra (`python tests/ecosystem/<program>.py`); they are float32
results compared with rtol 1e-4.  Each run also proves minijax did the work: no module
answering a `jax` name is JAX's (`foreign`) and the arrays computed are minijax's.  NUTS
after a long adaptive warmup amplifies float32 rounding (the step size adapts on every
draw), so there only the posterior means are compared closely, while a short-warmup chain is
compared draw by draw.  The tests skip when the libraries are not installed
(`pip install -e .[ecosystem]`).
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
LIBRARIES = {"optax_regression": ["optax"], "flax_linen": ["flax", "optax"],
             "flax_nnx": ["flax", "optax"],
             "equinox_mlp": ["equinox"], "numpyro_inference": ["numpyro"],
             "distrax_blackjax": ["distrax", "blackjax"]}
# Compared loosely: NUTS draws after 100 adaptive warmup steps (see the docstring).
LOOSE = {"nuts_mean": 0.02, "nuts_first": 0.1, "nuts_last": 0.1}

RECORDED = {'optax_regression': {'final_loss': 0.06950043141841888,
                      'first_loss': 3.960413932800293,
                      'w2': [0.4015951454639435,
                             0.362783819437027,
                             0.339836061000824,
                             -0.02930550090968609],
                      'global_norm': 5.305682182312012},
 'flax_linen': {'mlp_loss': 0.059729043394327164,
                'mlp_logits': [[2.902134656906128, -1.6933459043502808, -0.1668114960193634],
                               [-3.291114091873169,
                                1.621514916419983,
                                -0.18936383724212646]],
                'cnn_loss': 0.30013006925582886,
                'cnn_logits': [[2.88301944732666, -0.855729877948761, -4.091159820556641],
                               [-2.3457138538360596,
                                -0.6370911002159119,
                                0.9262442588806152]],
                'bn_mean': [-0.41060322523117065,
                            -0.3592761754989624,
                            0.33106857538223267,
                            0.1812940537929535],
                'n_params': 779.0},
 'flax_nnx': {'first_loss': 2.17834210395813,
              'final_loss': 0.6031345129013062,
              'out': [-0.9187293648719788, -0.2179972529411316],
              'grad_sum': 7.7927045822143555,
              'n_params': 50.0},
 'equinox_mlp': {'first_loss': 0.2031896561384201,
                 'final_loss': 0.1489184945821762,
                 'out': [-0.008370034396648407],
                 'w0': [-0.2852016091346741, 0.3729075491428375]},
 'numpyro_inference': {'svi_final_loss': 30.7946834564209,
                       'svi_loc': [1.5496022701263428, -0.8368026614189148],
                       'nuts_mean': [1.542313814163208,
                                     -0.9000637531280518,
                                     0.4245513677597046],
                       'nuts_first': [1.503556728363037, -0.91740483045578],
                       'nuts_last': [1.5949348211288452, -0.915247917175293],
                       'nuts_short_w': [-0.6558941602706909,
                                        -0.5093860030174255,
                                        -0.24246057868003845,
                                        0.3948659598827362,
                                        0.6235602498054504,
                                        1.7248895168304443,
                                        1.6728274822235107,
                                        1.6877468824386597]},
 'distrax_blackjax': {'tanh_log_prob': [-0.9223004579544067, -1.3860596418380737],
                      'samples': [[0.9717416763305664, -0.373445063829422],
                                  [0.06630812585353851, -0.7713227868080139],
                                  [0.5889722108840942, -0.8595520257949829]],
                      'sample_log_probs': [[0.6520273685455322, -1.6156177520751953],
                                           [-1.00853431224823, 1.1856613159179688],
                                           [-0.5084354877471924, 1.1551380157470703]],
                      'mvn_log_prob': -3.7724175453186035,
                      'mvn_entropy': 2.5501949787139893,
                      'kl': 1.162682056427002,
                      'rmh_mean': [0.02236136421561241, 0.03195338323712349],
                      'rmh_last': [-0.8726910948753357, -0.7143035531044006],
                      'hmc_mean': [0.07220940291881561, 0.020846037194132805],
                      'hmc_last': [1.1413261890411377, 0.6362584233283997]}}


def _missing(program: str) -> list[str]:
  return [lib for lib in LIBRARIES[program] if importlib.util.find_spec(lib) is None]


def _run(program: str) -> dict:
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + PROGRAMS)
  out = subprocess.run([sys.executable, "-m", "minijax.run", f"{program}.py"], cwd=PROGRAMS,
                       env=env, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  line = [s for s in out.stdout.splitlines() if s.startswith("RESULTS ")][-1]
  return json.loads(line[len("RESULTS "):])


@pytest.mark.parametrize("program", sorted(RECORDED))
def test_library_program_gives_jaxs_numbers_on_minijax(program):
  missing = _missing(program)
  if missing:
    pytest.skip(f"{', '.join(missing)} not installed (pip install -e .[ecosystem])")
  got = _run(program)
  assert got["backend"] == "minijax" and got["foreign"] == [], got
  assert got["array_types"] == ["minijax.runtime.array.Array"], got["array_types"]
  for name, want in RECORDED[program].items():
    if name in LOOSE:
      np.testing.assert_allclose(got[name], want, atol=LOOSE[name], err_msg=name)
    else:
      np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-6, err_msg=name)
