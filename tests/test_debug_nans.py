"""`debug_nans` and `debug_infs` as JAX 0.10.2 has them: the flags and their context
managers, the de-optimized re-run that names the operation, donated arguments, and
computations over a mesh (the messages were recorded from jax 0.10.2)."""
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax import numpy as jnp
from minijax.sharding import Mesh, PartitionSpec as P


@pytest.fixture
def nans():
  with minijax.debug_nans(True):
    yield


@pytest.fixture
def infs():
  with minijax.debug_infs(True):
    yield


def test_the_context_managers_set_the_flags_for_their_block_only():
  assert not minijax.config.debug_nans and not minijax.config.debug_infs
  with minijax.debug_nans(True), minijax.debug_infs(True):
    assert minijax.config.jax_debug_nans and minijax.config.debug_infs
  assert not minijax.config.debug_nans and not minijax.config.debug_infs
  assert float(jnp.float32(1.0) / 0.0) == np.inf  # no check outside the block


def test_debug_infs_names_the_primitive_and_ignores_nans(infs):
  with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
    1.0 / jnp.array(0.0)
  assert np.isnan(float(jnp.array(0.0) / 0.0))


def test_a_jitted_nan_is_traced_to_the_operation_by_the_de_optimized_function(nans):
  def f(x):
    return lax.cond(x == 1, lambda _: np.nan, lambda _: 2.0, operand=None)
  jitted = minijax.jit(f)
  assert float(jitted(2)) == 2.0
  with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in cond"):
    jitted(1)
  with pytest.raises(ZeroDivisionError):  # the Python function itself divides by zero
    minijax.jit(lambda x: 0.0 / x)(0.0)


@pytest.mark.parametrize("f, arg", [
    (lambda x: (jnp.nan, x + 2), 3),  # a nan literal among the results
    (lambda x: x * 3.0, np.nan),      # a nan input, Python arithmetic without jit
])
def test_when_the_de_optimized_function_is_clean_the_error_says_so(nans, f, arg):
  with pytest.raises(FloatingPointError, match="the de-optimized function did not produce "
                     "invalid values.*literal.*input"):
    minijax.jit(f)(arg)


def test_a_donated_argument_is_still_there_for_the_de_optimized_run(nans):
  a = jnp.array(0.0)
  with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in div"):
    minijax.jit(lambda x: 0.0 / x, donate_argnums=(0,))(a)
  assert float(a) == 0.0


def test_nans_inside_shard_map_are_reported_as_a_sharded_computation(nans):
  mesh = Mesh(np.array(minijax.devices()[:1]), ("x",))
  f = minijax.shard_map(lambda x: 0.0 / x, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
  np.testing.assert_array_equal(f(jnp.array([1.0])), [0.0])
  with pytest.raises(FloatingPointError,
                     match=r"Invalid value \(nan\) encountered in sharded computation"):
    f(jnp.array([0.0]))
  g = minijax.shard_map(minijax.jit(lambda x: jnp.log(x ** 2)), mesh=mesh, in_specs=P("x"),
                        out_specs=P("x"))
  _, g_vjp = minijax.vjp(g, jnp.zeros([1]))
  with pytest.raises(FloatingPointError, match=r"Invalid value \(nan\) encountered"):
    g_vjp(jnp.ones([1]))
