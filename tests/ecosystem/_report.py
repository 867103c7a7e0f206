"""Shared by the ecosystem programs: prints their results as one JSON line, saying which
library computed them (`backend`): minijax through `install_as_jax`, or JAX itself when
the numbers are recorded.  On minijax it also lists any module answering a `jax` name
that is not minijax's own (`foreign`, empty when minijax did all the work) and the types
of the arrays the program computed (`array_types`)."""
import json
import sys

import numpy as np


def report(**results):
  jax = sys.modules["jax"]
  out = {k: np.asarray(v, dtype=np.float64).tolist() for k, v in results.items()}
  out["array_types"] = sorted({f"{type(v).__module__}.{type(v).__name__}"
                               for v in results.values() if hasattr(v, "shape")
                               and not isinstance(v, (np.ndarray, np.generic))})
  if type(jax).__name__ == "JaxAlias":
    out["backend"] = "minijax"
    out["foreign"] = sorted(n for n, m in list(sys.modules.items())
                            if (n == "jax" or n.startswith("jax.")) and m is not None
                            and m is not jax and not m.__name__.startswith("minijax"))
  else:
    out["backend"] = "jax"
  print("RESULTS " + json.dumps(out))
