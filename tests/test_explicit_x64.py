"""`jax_explicit_x64_dtypes='allow'`: explicit 64-bit dtypes are honoured without x64.

Under 'allow' a dtype the program names (`astype`, `lax.convert_element_type`, `full`,
`iota`, `jnp.zeros(dtype=)`, `jnp.array(dtype=)`, the samplers' `dtype=`) is kept 64-bit,
and arithmetic on such arrays stays 64-bit, while defaults and values (Python scalars,
numpy arrays) stay 32-bit, as in JAX 0.10.2.  The 64-bit bits were recorded from JAX 0.10.2
under the same flag (threefry's are integer arithmetic, rbg's XLA's bit generator on CPU).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax, random
from minijax.config import State

pytestmark = pytest.mark.usefixtures("x64_off")

allow = lambda: State("jax_explicit_x64_dtypes")("allow")  # noqa: E731

_BITS64 = {  # random.bits(key(1701, impl=...), (3,), uint64), from jax 0.10.2 under 'allow'
    "threefry2x32": [3182764935064573181, 366096495144982249, 241365115613244543],
    "rbg": [2436515601188908477, 14956486593509556310, 1085863245873123167],
    "unsafe_rbg": [2436515601188908477, 14956486593509556310, 1085863245873123167],
}


@pytest.mark.parametrize("impl", sorted(_BITS64))
def test_uint64_bits_under_allow_are_jaxs(impl):
  with allow():
    bits = random.bits(random.key(1701, impl=impl), (3,), np.uint64)
    assert bits.dtype == np.uint64
    assert bits.tolist() == _BITS64[impl]
    legacy = random.bits(random.PRNGKey(1701), (3,), np.uint64)
    assert legacy.tolist() == _BITS64["threefry2x32"]
  # and the default mode still truncates, with JAX's warning
  with pytest.warns(UserWarning, match="truncated to dtype uint32"):
    assert random.bits(random.key(1701, impl=impl), (3,), np.uint64).dtype == np.uint32


def test_uniform_float64_under_allow():
  with allow():
    u = random.uniform(random.key(1701), (2,), np.float64)
  assert u.dtype == np.float64
  np.testing.assert_allclose(np.asarray(u), [0.17253803285538472, 0.019846130768775838],
                             rtol=4e-16)


def test_explicit_dtypes_stay_64_bit_and_defaults_32_bit():
  with allow():
    x = jnp.arange(3).astype(jnp.int64)
    assert jnp.arange(3).dtype == np.int32  # a default
    assert x.dtype == np.int64
    for y in (x + 1, x * x, x + jnp.int32(1), jnp.sum(x), minijax.jit(lambda v: v + 1)(x)):
      assert y.dtype == np.int64
    assert lax.convert_element_type(jnp.float32(1.5), np.float64).dtype == np.float64
    assert jnp.zeros(2, jnp.float64).dtype == np.float64
    assert jnp.asarray(np.arange(3, dtype=np.int64)).dtype == np.int32  # a value
    # host data of an explicit 64-bit dtype keep every bit
    big = jnp.array([1, 2**40 + 3], dtype=jnp.int64)
    assert big.dtype == np.int64 and big.tolist() == [1, 2**40 + 3]
    assert jnp.full((2,), 2**40 + 3, jnp.int64).tolist() == [2**40 + 3] * 2
    assert jnp.array([0.1], dtype=jnp.float64)[0].item() == 0.1
    assert jnp.array([1 + 2j], dtype=jnp.complex128).tolist() == [1 + 2j]
    assert (big * 2).tolist() == [2, 2 * (2**40 + 3)]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert jnp.arange(3).astype(jnp.int64).dtype == np.int32  # 'warn' (the default)


def test_jit_traces_again_when_the_flag_changes():
  f = minijax.jit(lambda v: lax.convert_element_type(v, np.float64))
  assert f(jnp.ones(2)).dtype == np.float32
  with allow():
    assert f(jnp.ones(2)).dtype == np.float64
  assert f(jnp.ones(2)).dtype == np.float32
