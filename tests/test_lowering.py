"""Lowering: how constants and jaxpr literals become MHLO, checked on the module text (which
must verify) and by compiling and running what was lowered."""
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.lowering import mlir
from minijax.runtime import backend
from minijax.staging import compiler


def _lower_and_run(fun, *args):
  """Lowers `fun`'s jaxpr with its closed-over arrays left as constants of the module (jit
  would hoist them into arguments), checks the module verifies, and runs it."""
  closed = minijax.make_jaxpr(fun)(*args)
  assert closed.consts, "the function should close over an array"
  module = mlir.lower_jaxpr_to_module(closed, name="consts").module
  assert module.operation.verify()
  text = module.operation.get_asm(large_elements_limit=64)
  run = compiler.compile_jaxpr(closed, device=backend.default_device(), name="consts")
  return text, [np.asarray(out) for out in run(*args)]


STRIDE0 = [
    np.broadcast_to(np.float32(2.0), (1000, 1000)),
    np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3)),
    np.broadcast_to(np.arange(4, dtype=np.float32)[:, None], (4, 3)),
    np.broadcast_to(np.arange(6, dtype=np.int32).reshape(2, 1, 3), (2, 500, 3)),
    np.broadcast_to(np.arange(6, dtype=np.float16).reshape(2, 3)[:, None, :], (2, 5, 3)),
]


@pytest.mark.parametrize("const", STRIDE0, ids=lambda c: f"{c.dtype}{list(c.shape)}")
def test_stride0_constants_lower_to_a_broadcast_of_their_distinct_part(const):
  x = np.ones(const.shape[-1:], const.dtype)
  text, [out] = _lower_and_run(lambda x: x + const, x)
  np.testing.assert_array_equal(out, x + const)
  assert "mhlo.constant" in text and "__elided__" not in text
  assert len(text) < 2000, text
  distinct = const[tuple(slice(None) if s else 0 for s in const.strides)]
  if distinct.ndim:
    assert "mhlo.broadcast_in_dim" in text
    assert f"tensor<{'x'.join(map(str, distinct.shape))}x" in text
  else:
    assert "dense<2.000000e+00> : tensor<1000x1000xf32>" in text


@pytest.mark.parametrize("const", [
    np.broadcast_to(np.float32(1.0), (0, 3)),
    np.broadcast_to(np.arange(3, dtype=np.float32), (0, 3)),
])
def test_empty_stride0_constants_lower_to_an_empty_literal(const):
  text, [out] = _lower_and_run(lambda x: x + const, np.ones(3, np.float32))
  assert out.shape == (0, 3)
  assert "dense<> : tensor<0x3xf32>" in text


def test_jit_closing_over_stride0_arrays_matches_numpy():
  big = np.broadcast_to(np.float32(2.0), (1000, 1000))
  row = np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3))
  out = minijax.jit(lambda x: (x * big, x[:4, :3] - row))(np.ones((1000, 1000), np.float32))
  np.testing.assert_array_equal(np.asarray(out[0]), np.full((1000, 1000), 2.0, np.float32))
  np.testing.assert_array_equal(np.asarray(out[1]), 1.0 - row)


@pytest.mark.parametrize("const", [
    np.array([True, False]),
    np.array([False, True, True]),
    np.arange(20) % 3 == 0,
    np.broadcast_to(np.array([True, False]), (3, 2)),
    np.broadcast_to(np.array(True), (4, 5)),
])
def test_bool_constants_keep_every_element(const):
  x = np.zeros(const.shape, bool)
  text, [out] = _lower_and_run(lambda x: lax.bitwise_or(x, const), x)
  np.testing.assert_array_equal(out, const)


def test_scan_lowering_emits_a_valid_module():
  # (the scan's stacked outputs start from a stride-0 array of zeros)
  fun = lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)
  xs = np.arange(5, dtype=np.float32)
  module = mlir.lower_jaxpr_to_module(minijax.make_jaxpr(fun)(xs)).module
  assert module.operation.verify()
  assert "dense<0.000000e+00> : tensor<5xf32>" in str(module)
  carry, ys = minijax.jit(fun)(xs)
  np.testing.assert_array_equal(np.asarray(ys), [0, 0, 2, 9, 24])


def test_rank0_literals_of_elementwise_ops_lower_to_splats_of_the_result_shape():
  f = minijax.jit(lambda x: lax.add(lax.mul(lax.sin(x), 1.01), 0.5) * 1.01)
  text = f.lower(np.ones(1024, np.float32)).as_text()
  assert text.count("mhlo.constant dense<1.010000e+00> : tensor<1024xf32>") == 2
  assert "mhlo.constant dense<5.000000e-01> : tensor<1024xf32>" in text
  assert "broadcast_in_dim" not in text and "tensor<f32>" not in text
  x = np.linspace(-3, 3, 1024, dtype=np.float32)
  expected = (np.sin(x) * np.float32(1.01) + 0.5) * np.float32(1.01)
  np.testing.assert_allclose(np.asarray(f(x)), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fun, x", [
    (lambda x: lax.mul(x, -0.0) + lax.mul(x, 0.0), np.arange(4, dtype=np.float32) - 2),
    (lambda x: lax.div(1.0, x), np.array([-0.0, 0.0, 2.0], np.float32)),
    (lambda x: lax.lt(x, 2), np.arange(5, dtype=np.int32)),
    (lambda x: lax.bitwise_and(x, True) ^ lax.bitwise_or(x, False), np.array([True, False])),
    (lambda x: lax.max(x, np.uint8(200)), np.arange(250, 256, dtype=np.uint8)),
    (lambda x: lax.add(x, 1 + 2j), np.ones(3, np.complex64)),
    (lambda x: lax.add(x, 1.0), np.ones((0, 3), np.float32)),
    (lambda x: lax.add(x, 1.5), np.ones(3, np.float16)),
])
def test_splat_literals_compute_what_the_ops_compute_on_scalars(fun, x):
  # (each op run eagerly lowers with its literal an operand of rank 0, not a splat)
  module = mlir.lower_jaxpr_to_module(minijax.make_jaxpr(fun)(x)).module
  assert module.operation.verify()
  out, expected = np.asarray(minijax.jit(fun)(x)), np.asarray(fun(x))
  np.testing.assert_array_equal(out, expected)
  if out.dtype.kind == "f":
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("name", ["exp", "exp2", "sinh", "cosh"])
def test_an_exponential_of_a_nan_the_compiler_can_see_is_nan(name, dtype):
  # XLA's CPU exponential returns garbage for these (JAX 0.10.2 does: exp(x + nan) was
  # -1.2e-03, 3.1e-41, ...); the lowering passes a NaN operand through a select instead
  fun = getattr(lax, name)
  nan = np.array(np.nan, jnp.dtype(dtype))
  x = np.arange(8).astype(jnp.dtype(dtype))
  assert np.isnan(np.asarray(minijax.jit(lambda v: fun(v + nan))(x), np.float32)).all()
  never = minijax.jit(lambda b: fun(jnp.where(b.astype(dtype) > 2, 1, nan).astype(dtype)))
  assert np.isnan(np.asarray(never(np.ones(6, bool)), np.float32)).all()
  finite = np.asarray(minijax.jit(fun)(x), np.float64)
  np.testing.assert_allclose(finite, getattr(np, name)(x.astype(np.float64)), rtol=2e-2)
