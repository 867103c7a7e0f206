"""The API behaving as JAX 0.10.2 does where its own tests (api_test.py) found minijax
differing: 64-bit dtypes asked of `minijax.numpy` without x64, and what `jit` returns."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.config import State

# Each asks for a 64-bit dtype, which without x64 is truncated (JAX's "requested in" names).
ASKING_FOR_64_BITS = {
    "array": lambda: jnp.array([1, 2, 3], dtype="float64"),
    "asarray": lambda: jnp.asarray(np.ones(2), dtype=np.float64),
    "ones": lambda: jnp.ones(3, dtype=np.float64),
    "zeros": lambda: jnp.zeros(3, dtype="int64"),
    "full": lambda: jnp.full((2, 3), 1, dtype="int64"),
    "ones_like": lambda: jnp.ones_like(3, dtype=np.int64),
    "zeros_like": lambda: jnp.zeros_like(3, dtype="float64"),
    "astype": lambda: jnp.ones(3).astype("float64"),
    "eye": lambda: jnp.eye(3, dtype=np.float64),
    "arange": lambda: jnp.arange(3, dtype=np.float64),
    "linspace": lambda: jnp.linspace(0, 3, dtype=np.float64),
    "tri": lambda: jnp.tri(2, dtype="float64"),
}
NOT_ASKING = [lambda: jnp.array([1, 2, 3], dtype=float), lambda: jnp.ones(3, dtype=float),
              lambda: jnp.zeros(3, dtype=int), lambda: jnp.arange(1.0).astype(int),
              lambda: jnp.ones_like(3, dtype=np.int32), lambda: jnp.array(np.ones(2)),
              lambda: jnp.arange(3, dtype=np.float32)]


@pytest.mark.parametrize("name", sorted(ASKING_FOR_64_BITS))
def test_numpy_warns_when_a_64_bit_dtype_asked_for_is_truncated(name):
  with pytest.warns(UserWarning, match=f"Explicitly requested dtype .*64 requested in {name} "
                    "is not available, and will be truncated to dtype"):
    out = ASKING_FOR_64_BITS[name]()
  assert out.dtype.itemsize == 4


@pytest.mark.parametrize("name", sorted(ASKING_FOR_64_BITS))
def test_numpy_raises_for_a_64_bit_dtype_under_explicit_x64_dtypes_error(name):
  with State("jax_explicit_x64_dtypes")("error"):
    with pytest.raises(ValueError, match=f"Explicitly requested dtype .*64 requested in {name} "
                       "is not available"):
      ASKING_FOR_64_BITS[name]()
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      for f in NOT_ASKING:  # Python's types ask for the defaults
        f()


# ----------------------------------------------------------------------------- jit's result

def test_jit_result_is_named_as_jax_names_it_and_binds_as_a_method():
  def my_function(x):
    return x + 1

  jitted = minijax.jit(my_function)
  assert repr(jitted) == f"<PjitFunction of {my_function!r}>"
  assert jitted.__name__ == "my_function" and jitted.__wrapped__ is my_function

  class BadRepr:
    def __call__(self):
      pass

    def __repr__(self):
      raise ValueError("invalid repr")

  assert repr(minijax.jit(BadRepr())) == "<PjitFunction>"  # the function's repr failed

  class Model:
    scale = 3.0
    apply = minijax.jit(lambda self, x: x * self.scale, static_argnums=0)

    def __hash__(self):
      return 0

    def __eq__(self, other):
      return type(other) is Model

  assert Model().apply(np.float32(2)) == 6.0  # bound to the instance, as a function is
  assert Model.apply is Model.__dict__["apply"]
  import copy
  assert copy.deepcopy({"f": jitted})["f"] is jitted and copy.copy(jitted) is jitted
