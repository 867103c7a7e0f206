"""minijax.ffi: foreign functions called through XLA's FFI, as `jax.ffi` calls them.

The handlers are jaxlib's own LAPACK kernels (registered by the runtime) and a small C++
handler built here against `ffi.include_dir()` (skipped without a C++ compiler)."""
from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import minijax
from minijax import ffi
from minijax.extend import mlir as ext_mlir


def geqrf(x, **kwargs):
  """LAPACK's QR factorisation of a batch of float32 matrices (column-major)."""
  nd = x.ndim
  column_major = tuple(range(nd - 2)) + (nd - 1, nd - 2)
  results = [minijax.ShapeDtypeStruct(x.shape, x.dtype),
             minijax.ShapeDtypeStruct(x.shape[:-2] + (min(x.shape[-2:]),), x.dtype)]
  return ffi.ffi_call("lapack_sgeqrf_ffi", results, input_output_aliases={0: 0},
                      input_layouts=[column_major], output_layouts=[column_major, None],
                      **kwargs)(x)


X = np.random.RandomState(0).randn(3, 4, 3).astype(np.float32)


def test_an_ffi_call_runs_a_lapack_kernel_eagerly_and_under_jit():
  r, taus = geqrf(X)
  assert r.shape == (3, 4, 3) and taus.shape == (3, 3)
  for k in range(3):
    expected = np.linalg.qr(X[k].astype(np.float64))[1]
    np.testing.assert_allclose(np.abs(np.triu(np.asarray(r[k]))[:3]), np.abs(expected),
                               rtol=1e-5, atol=1e-5)
  r2, taus2 = minijax.jit(geqrf)(X)
  np.testing.assert_allclose(r2, r, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(taus2, taus, rtol=1e-6, atol=1e-6)
  text = minijax.jit(geqrf).lower(X).as_text()
  assert "@lapack_sgeqrf_ffi" in text and "api_version = 4" in text


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_vmap_of_an_ffi_call_follows_its_vmap_method(method):
  r, taus = geqrf(X)
  r2, taus2 = minijax.vmap(lambda x: geqrf(x, vmap_method=method))(X)
  np.testing.assert_allclose(r2, r, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(taus2, taus, rtol=1e-5, atol=1e-5)


def test_an_ffi_call_is_not_batched_or_differentiated_unless_told_how():
  with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
    minijax.vmap(geqrf)(X)
  with pytest.raises(ValueError, match="`lapack_sgeqrf_ffi` cannot be differentiated"):
    minijax.grad(lambda x: geqrf(x)[0].sum())(X)


def test_keyword_arguments_become_the_handlers_typed_attributes():
  a = np.random.RandomState(1).randn(4, 4).astype(np.float32)
  a = a @ a.T + 4 * np.eye(4, dtype=np.float32)
  call = ffi.ffi_call("lapack_spotrf_ffi", (minijax.ShapeDtypeStruct(a.shape, a.dtype),
                                            minijax.ShapeDtypeStruct((), np.int32)),
                      input_layouts=[(1, 0)], output_layouts=[(1, 0), None])
  lower, info = call(a, uplo=np.uint8(ord("L")))
  assert int(info) == 0
  np.testing.assert_allclose(np.tril(np.asarray(lower)), np.linalg.cholesky(a),
                             rtol=1e-5, atol=1e-5)
  assert "uplo = 76 : ui8" in minijax.jit(lambda a: call(a, uplo=np.uint8(76))).lower(
      a).as_text()
  with pytest.raises(TypeError, match="Non-hashable keyword argument to ffi_call uplo"):
    call(a, uplo=[1, 2])


def test_ffi_call_checks_what_it_is_given():
  one = minijax.ShapeDtypeStruct((3,), np.float32)
  with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
    ffi.ffi_call("t", one, vmap_method="loop")
  with pytest.raises(ValueError, match="must have 'shape' and 'dtype' attributes. Got 3"):
    ffi.ffi_call("t", [3])
  with pytest.raises(ValueError, match="requires custom_call_api_version < 4"):
    ffi.ffi_call("t", one, legacy_backend_config="x")
  with pytest.raises(ValueError, match=r"number of input layouts \(2\)"):
    ffi.ffi_call("t", one, input_layouts=[None, None])(np.zeros(3, np.float32))
  with pytest.raises(ValueError, match=r"'0:0' referring to an input with abstract value "
                                       r"float32\[2\] and an output with a different"):
    ffi.ffi_call("t", one, input_output_aliases={0: 0})(np.zeros(2, np.float32))
  with pytest.raises(ValueError, match="output index 1 outside the range"):
    ffi.ffi_call("t", one, input_output_aliases={0: 1})(np.zeros(3, np.float32))
  with pytest.raises(ValueError, match="not supported after jaxlib version 381"):
    ffi.register_ffi_type_id("t", None)
  with pytest.raises(Exception, match="No FFI handler registered for no_such_target"):
    ffi.ffi_call("no_such_target", one)(np.zeros(3, np.float32))


def test_ir_attribute_types_values_as_jax_does():
  from jaxlib.mlir import ir
  cases = [(True, "true"), (1, "1 : i64"), (2.5, "2.500000e+00 : f64"), ("a", '"a"'),
           (np.int32(3), "3 : i32"), (np.uint8(7), "7 : ui8"),
           (np.float32(1.5), "1.500000e+00 : f32"),
           (np.array([1, 2], np.int32), "dense<[1, 2]> : tensor<2xi32>"),
           (np.array([True, False]), "dense<[true, false]> : tensor<2xi1>"),
           (np.dtype(np.float32), "f32"),
           ({"a": 1, "b": [np.int8(1)]}, "{a = 1 : i64, b = [1 : i8]}")]
  with ext_mlir.make_ir_context(), ir.Location.unknown():
    for value, text in cases:
      assert str(ext_mlir.ir_attribute(value)) == text, value
    with pytest.raises(TypeError, match="No attribute handler defined for type"):
      ext_mlir.ir_attribute(np.int16)


HANDLERS = r"""
#include <cstdint>
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;

static ffi::Error AffineImpl(ffi::Buffer<ffi::F32> x, float scale, int32_t offset,
                             ffi::ResultBuffer<ffi::F32> y) {
  if (scale < 0) return ffi::Error::InvalidArgument("scale must be non-negative");
  for (size_t i = 0; i < x.element_count(); ++i)
    y->typed_data()[i] = x.typed_data()[i] * scale + static_cast<float>(offset);
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Affine, AffineImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Attr<float>("scale")
        .Attr<int32_t>("offset").Ret<ffi::Buffer<ffi::F32>>());

static int64_t calls = 0;
static ffi::Error CountImpl() { ++calls; return ffi::Error::Success(); }
XLA_FFI_DEFINE_HANDLER_SYMBOL(Count, CountImpl, ffi::Ffi::Bind());
extern "C" int64_t count_calls() { return calls; }
"""


@pytest.fixture(scope="module")
def handlers(tmp_path_factory):
  compiler = shutil.which("g++") or shutil.which("c++")
  if compiler is None:
    pytest.skip("no C++ compiler to build an FFI handler with")
  folder = tmp_path_factory.mktemp("ffi")
  (folder / "handlers.cc").write_text(HANDLERS)
  subprocess.run([compiler, "-std=c++17", "-O1", "-shared", "-fPIC", "-w",
                  f"-I{ffi.include_dir()}", str(folder / "handlers.cc"),
                  "-o", str(folder / "handlers.so")], check=True)
  lib = ctypes.cdll.LoadLibrary(str(folder / "handlers.so"))
  ffi.register_ffi_target("test_affine", ffi.pycapsule(lib.Affine), platform="cpu")
  ffi.register_ffi_target("test_count", ffi.pycapsule(lib.Count))
  lib.count_calls.restype = ctypes.c_int64
  return lib


def test_a_handler_built_against_include_dir_runs_with_its_attributes(handlers):
  x = np.arange(6, dtype=np.float32).reshape(2, 3)

  def affine(x, scale):
    return ffi.ffi_call("test_affine", minijax.ShapeDtypeStruct(x.shape, x.dtype))(
        x, scale=np.float32(scale), offset=np.int32(1))

  np.testing.assert_array_equal(affine(x, 2.0), x * 2 + 1)
  np.testing.assert_array_equal(minijax.jit(affine, static_argnums=1)(x, 3.0), x * 3 + 1)
  with pytest.raises(Exception, match="scale must be non-negative"):
    affine(x, -1.0)


def test_only_an_ffi_call_with_side_effects_runs_when_its_results_are_unused(handlers):
  def f(x):
    ffi.ffi_call("test_count", (), has_side_effect=True)()
    ffi.ffi_call("test_count", ())()
    return x + 1

  jaxpr = minijax.make_jaxpr(f)(1.0)
  assert [e.effects for e in jaxpr.eqns[:2]] == [{ffi.ffi_effect}, set()]
  before = handlers.count_calls()
  g = minijax.jit(f)
  g(1.0)
  minijax.block_until_ready(g(2.0))
  assert handlers.count_calls() - before == 2
  assert str(ffi.ffi_effect) == "FFI"


def test_ffi_lowering_is_a_lowering_rule_for_a_users_primitive():
  from minijax.extend.core import Primitive, ShapedArray
  prim = Primitive("my_qr")
  prim.multiple_results = True
  prim.def_abstract_eval(lambda x: (x, ShapedArray(x.shape[:-1], x.dtype)))
  ext_mlir.register_lowering(prim, ffi.ffi_lowering(
      "lapack_sgeqrf_ffi", operand_layouts=[(0, 1)], result_layouts=[(0, 1), (0,)]))
  a = X[0, :3]
  r, taus = minijax.jit(prim.bind)(a)
  expected_r, expected_taus = geqrf(a)
  np.testing.assert_allclose(r, expected_r, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(taus, expected_taus, rtol=1e-6, atol=1e-6)
