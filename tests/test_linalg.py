"""Linear algebra: `minijax.lax.linalg` primitives (jaxlib's LAPACK kernels, as JAX uses
them on CPU), `minijax.numpy.linalg` and `minijax.scipy.linalg`.

Values against numpy (scipy's, where numpy has no equivalent, recorded as literals), jit
against eager, derivatives against central differences (to second order for the
primitives, in float64 and complex128), vmap against a loop over slices, JAX's numbers
for its custom derivatives, and the errors for bad shapes and dtypes.
"""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
import minijax.scipy.linalg as jsl
from minijax.lax import linalg as L

from tests.conftest import run_python
from tests.transform_checks import GradCheck, VmapCheck, run_together

_rng = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
  x = _rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * _rng.standard_normal(shape)
  return x.astype(dtype)


def spd(n, dtype=np.float32, batch=()):
  a = rand(*batch, n, n, dtype=dtype)
  return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def hermitian(n, dtype=np.float32):
  a = rand(n, n, dtype=dtype)
  return ((a + np.conj(a.T)) / 2).astype(dtype)


def tri(n, dtype=np.float32, lower=True, batch=()):
  a = rand(*batch, n, n, dtype=dtype)
  a = np.tril(a) if lower else np.triu(a)
  return (a + 3 * np.eye(n)).astype(dtype)


def close(got, want, dtype, scale=1.0):
  tol = 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
  np.testing.assert_allclose(np.asarray(got), want, rtol=tol * scale, atol=tol * scale)


DTYPES = [np.float32, np.complex64]


# ----------------------------------------------------------------------------- primitives

@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_and_triangular_solve_match_numpy(dtype):
  a = spd(4, dtype, batch=(2,))
  close(L.cholesky(a), np.linalg.cholesky(a), dtype)
  t, b = tri(4, dtype, batch=(2,)), rand(2, 4, 3, dtype=dtype)
  close(L.triangular_solve(t, b, left_side=True, lower=True), np.linalg.solve(t, b), dtype)
  tu = np.conj(np.swapaxes(t, -1, -2))
  close(L.triangular_solve(tu, b, left_side=True, lower=False, transpose_a=True,
                           conjugate_a=True), np.linalg.solve(t, b), dtype)
  close(L.triangular_solve(t, np.swapaxes(b, -1, -2), left_side=False, lower=True,
                           transpose_a=True),
        np.swapaxes(np.linalg.solve(t, b), -1, -2), dtype)
  close(L.triangular_solve(t, b[..., 0], left_side=True, lower=True), np.linalg.solve(
      t, b[..., :1])[..., 0], dtype)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_reconstructs_the_matrix_with_numpys_pivoting(shape, dtype):
  a = rand(*shape, dtype=dtype)
  lu, pivots, perm = map(np.asarray, L.lu(a))
  m, n = shape[-2:]
  k = min(m, n)
  l = np.tril(lu, -1)[..., :, :k] + np.eye(m, k)
  u = np.triu(lu)[..., :k, :]
  close(l @ u, np.take_along_axis(a, perm[..., :, None], -2), dtype)
  assert pivots.dtype == perm.dtype == np.int32 and pivots.shape == (*shape[:-2], k)
  if dtype == np.float32:  # partial pivoting: |L| <= 1
    assert np.all(np.abs(l) <= 1 + 1e-6)


def test_lu_matches_scipys_factors():
  a = np.array([[2., 1., 0.5], [-1., 3., 0.25], [0.5, -0.5, 1.5], [1., 0., -2.]], np.float32)
  lu, pivots, perm = L.lu(a)
  # scipy.linalg.lu(a) gives p with rows 0, 1, 3, 2 and these l and u
  np.testing.assert_array_equal(perm, [0, 1, 3, 2])
  np.testing.assert_array_equal(pivots, [0, 1, 3])
  np.testing.assert_allclose(np.tril(lu, -1)[:, :3] + np.eye(4, 3),
                             [[1, 0, 0], [-0.5, 1, 0], [0.5, -0.1428571429, 1],
                              [0.25, -0.2142857143, -0.6803278689]], rtol=1e-6)
  np.testing.assert_allclose(np.triu(lu)[:3], [[2, 1, 0.5], [0, 3.5, 0.5], [0, 0, -2.1785714286]],
                             rtol=1e-6)


@pytest.mark.parametrize("shape,full", [((5, 3), True), ((5, 3), False), ((3, 5), True),
                                        ((2, 4, 4), False)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_matches_numpy(shape, full, dtype):
  a = rand(*shape, dtype=dtype)
  q, r = L.qr(a, full_matrices=full)
  q_np, r_np = np.linalg.qr(a, mode="complete" if full else "reduced")
  close(q, q_np, dtype, 10)
  close(r, r_np, dtype, 10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pivoted_qr_and_the_raw_mode_match_lapack_through_scipy_and_numpy(shape, dtype):
  import scipy.linalg
  a = rand(*shape, dtype=dtype)
  for full in (True, False):
    q, r, p = L.qr(a, pivoting=True, full_matrices=full)
    assert p.dtype == np.int32 and p.shape == (*shape[:-2], shape[-1])
    picked = np.take_along_axis(a, np.asarray(p)[..., None, :], axis=-1)
    close(np.asarray(q) @ np.asarray(r), picked, dtype, 10)
    for k in np.ndindex(*shape[:-2]):
      q_sp, r_sp, p_sp = scipy.linalg.qr(a[k], pivoting=True,
                                         mode="full" if full else "economic")
      np.testing.assert_array_equal(p[k], p_sp)
      close(np.abs(np.asarray(r[k])), np.abs(r_sp), dtype, 10)
  h, taus = jnp.linalg.qr(a, mode="raw")
  for k in np.ndindex(*shape[:-2]):
    h_np, taus_np = np.linalg.qr(a[k], mode="raw")
    close(h[k], h_np, dtype, 10)
    close(taus[k], taus_np, dtype, 10)
  r, p = jsl.qr(a[(0,) * (len(shape) - 2)], mode="r", pivoting=True)
  assert r.shape == shape[-2:] and p.shape == shape[-1:]


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_and_svd_match_numpy(dtype):
  h = np.stack([hermitian(4, dtype), hermitian(4, dtype)])
  v, w = L.eigh(h)
  close(w, np.linalg.eigvalsh(h), dtype, 10)
  close(np.asarray(h) @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], dtype, 10)
  for shape in [(5, 3), (3, 5)]:
    a = rand(2, *shape, dtype=dtype)
    u, s, vh = L.svd(a, full_matrices=False)
    close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
    close((np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh), a, dtype, 10)
    u, s, vh = L.svd(a)
    assert u.shape == (2, shape[0], shape[0]) and vh.shape == (2, shape[1], shape[1])
    close(L.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), dtype, 10)


def test_primitives_in_double_precision(x64):
  for dtype in (np.float64, np.complex128):
    a = spd(4, dtype)
    close(L.cholesky(a), np.linalg.cholesky(a), dtype, 100)
    q, r = L.qr(a)
    close(np.asarray(q) @ np.asarray(r), a, dtype, 100)
    close(L.eigh(a)[1], np.linalg.eigvalsh(a), dtype, 100)
    close(L.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), dtype, 100)
    lu, _, perm = L.lu(a)
    assert lu.dtype == dtype


def test_jit_matches_eager_and_lowers_to_lapack_kernels():
  a = spd(3)
  f = lambda a: (L.cholesky(a), L.lu(a), L.qr(a), L.eigh(a), L.svd(a),  # noqa: E731
                 L.triangular_solve(a, a, left_side=True, lower=True))
  for got, want in zip(minijax.tree_util.tree_leaves(minijax.jit(f)(a)),
                       minijax.tree_util.tree_leaves(f(a))):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
  text = minijax.jit(f).lower(a).as_text()
  for name in ("lapack_spotrf_ffi", "lapack_strsm_ffi", "lapack_sgetrf_ffi",
               "lapack_sgeqrf_ffi", "lapack_sorgqr_ffi", "lapack_ssyevd_ffi",
               "lapack_sgesdd_ffi"):
    assert name in text, name
  c = rand(3, 3, dtype=np.complex64)
  text = minijax.jit(lambda c: (L.qr(c), L.eigh(c))).lower(c).as_text()
  assert "lapack_cungqr_ffi" in text and "lapack_cheevd_ffi" in text
  assert "mhlo.cholesky" not in text and "mhlo.triangular_solve" not in text


def test_lapack_path_never_imports_jax():
  proc = run_python("""
import sys, numpy as np, minijax, minijax.numpy as jnp, minijax.scipy.linalg as sl
from minijax.lax import linalg as L
a = np.array([[4., 1.], [1., 3.]], np.float32)
out = [L.lu(a), L.qr(a), L.eigh(a), L.svd(a), jnp.linalg.solve(a, a), sl.cho_solve((a, True), a),
       minijax.grad(lambda x: jnp.sum(jnp.linalg.svd(x)[1]))(a)]
[np.asarray(x) for x in minijax.tree_util.tree_leaves(out)]
print("jax" in sys.modules, any(m == "jax" or m.startswith("jax.") for m in sys.modules))
""")
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert proc.stdout.strip() == "False False"


def test_failures_give_nans_as_in_jax():
  # (the whole lower factor, where LAPACK reports the matrix is not positive definite)
  out = np.asarray(L.cholesky(-np.eye(2, dtype=np.float32)))
  assert np.all(np.isnan(out[np.tril_indices(2)])) and out[0, 1] == 0
  batch = np.stack([np.eye(2), -np.eye(2)]).astype(np.float32)
  out = np.asarray(jnp.linalg.cholesky(batch))
  np.testing.assert_array_equal(out[0], np.eye(2))
  assert np.all(np.isnan(out[1][np.tril_indices(2)]))
  sign, logdet = jnp.linalg.slogdet(np.array([[1., 2.], [2., 4.]], np.float32))
  assert float(sign) == 0 and float(logdet) == -np.inf
  sign, logdet = jnp.linalg.slogdet(np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]],
                                             np.float32))
  assert float(sign) == 0 and float(logdet) == -np.inf


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call,error,message", [
    (lambda: L.cholesky(np.ones((2, 3), np.float32)), ValueError,
     r"The input to cholesky must be a square matrix\. Got shape \(2, 3\)\."),
    (lambda: jnp.linalg.cholesky(np.ones((2, 3), np.float32)), ValueError,
     r"The input to cholesky must be a square matrix\. Got shape \(2, 3\)\."),
    (lambda: jsl.cholesky(np.ones((4, 2))), ValueError, r"square matrix\. Got shape \(2, 4\)"),
    (lambda: L.cholesky(np.ones(3, np.float32)), TypeError,
     r"Input 0 to cholesky must have rank at least 2, but got shape=\(3,\)"),
    (lambda: L.cholesky(np.eye(3, dtype=np.int32), symmetrize_input=False), TypeError,
     r"cholesky does not accept dtype int32"),
    (lambda: L.lu(np.ones((2, 2), np.float16)), TypeError, r"lu does not accept dtype float16"),
    (lambda: L.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 2), np.float32),
                                left_side=True), ValueError,
     r"Incompatible shapes for arguments to triangular_solve: \(3, 3\) and \(2, 2\)\."),
    (lambda: L.triangular_solve(np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)),
     ValueError, r"The first input to triangular_solve must be a square matrix"),
    (lambda: L.triangular_solve(np.eye(3, dtype=np.float32), np.ones((3, 3), np.complex64)),
     TypeError, r"triangular_solve requires operands of one dtype"),
    (lambda: L.eigh(np.ones((2, 3), np.float32)), ValueError,
     r"symmetric eigendecomposition must have shape \[\.\.\., n, n\], got shape \(2, 3\)"),
    (lambda: L.qr(np.ones(3, np.float32)), TypeError, r"Input 0 to qr must have rank at least 2"),
    (lambda: L.svd(np.ones((2, 2), np.int32)), TypeError, r"svd does not accept dtype int32"),
    (lambda: jnp.linalg.solve(np.eye(3), np.ones(4)), ValueError,
     r"solve must have shapes a=\[\.\.\., m, m\] and b=\[\.\.\., m, k\] or b=\[\.\.\., m\]; "
     r"got a=\(3, 3\) and b=\(4,\)"),
    (lambda: jnp.linalg.inv(np.ones((2, 3))), ValueError,
     r"Argument to inv must have shape \[\.\.\., n, n\], got \(2, 3\)\."),
    (lambda: jnp.linalg.det(np.ones((2, 3))), ValueError,
     r"Argument to _det\(\) must have shape \[\.\.\., n, n\], got \(2, 3\)"),
    (lambda: jnp.linalg.slogdet(np.ones((2, 3))), ValueError,
     r"Argument to slogdet\(\) must have shape \[\.\.\., n, n\], got \(2, 3\)"),
    (lambda: jnp.linalg.matrix_power(np.ones((2, 3)), 2), TypeError,
     r"Last 2 dimensions of the array must be square"),
    (lambda: jnp.linalg.matrix_power(np.eye(2), 1.5), TypeError, r"exponent must be an integer"),
    (lambda: jnp.linalg.multi_dot([np.ones((2, 3)), np.ones((2, 3))]), ValueError,
     r"last dimension of each array must match"),
    (lambda: jnp.linalg.qr(np.eye(2), mode="bogus"), ValueError,
     r"Unsupported QR decomposition mode 'bogus'"),
    (lambda: jnp.linalg.eigh(np.eye(2), UPLO="X"), ValueError, r"UPLO must be one of"),
    (lambda: jnp.linalg.norm(np.eye(2), ord="bogus"), ValueError,
     r"Invalid order 'bogus' for matrix norm"),
    (lambda: jsl.solve(np.eye(2), np.ones(2), assume_a="bogus"), ValueError,
     r"Expected assume_a to be one of"),
    (lambda: jsl.solve_triangular(np.eye(2), np.ones(2), trans=3), ValueError,
     r"Invalid 'trans' value 3"),
    (lambda: jsl.expm(np.ones((2, 3))), ValueError,
     r"Expected A to be a \(batched\) square matrix, got A\.shape=\(2, 3\)"),
])
def test_bad_input_raises_a_clear_error(call, error, message):
  with pytest.raises(error, match=message):
    call()


# ----------------------------------------------------------------------------- derivatives

def _gauge_free_eigh(x):
  v, w = L.eigh(x)
  return w, v * jnp.conj(v)  # (eigenvectors are fixed only up to a sign or phase)


def _gauge_free_svd(x):
  u, s, vh = L.svd(x, full_matrices=False)
  return s, u * jnp.conj(u), vh * jnp.conj(vh)


def _f64(dtype):
  return np.complex128 if np.issubdtype(dtype, np.complexfloating) else np.float64


def _primitive_grads():
  """name -> (function, float64/complex128 arguments, order): second order for each
  decomposition in one dtype, first order in the other."""
  c, r = np.complex128, np.float64
  return {
      "cholesky": (L.cholesky, (spd(3, r),), 2),
      "cholesky_complex": (L.cholesky, (spd(3, c),), 1),
      "triangular_solve_left": (lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True),
                                (tri(3, r), rand(3, 2, dtype=r)), 2),
      "triangular_solve_right_adjoint_complex": (
          lambda a, b: L.triangular_solve(a, b, lower=False, transpose_a=True, conjugate_a=True),
          (tri(3, c, lower=False), rand(2, 3, dtype=c)), 2),
      "lu_tall": (lambda x: L.lu(x)[0], (rand(4, 3, dtype=r),), 2),
      "lu_wide_complex": (lambda x: L.lu(x)[0], (rand(3, 4, dtype=c),), 1),
      "qr_reduced": (lambda x: L.qr(x, full_matrices=False), (rand(4, 3, dtype=r),), 2),
      "qr_wide_complex": (L.qr, (rand(3, 4, dtype=c),), 2),
      "qr_full_tall": (L.qr, (rand(4, 2, dtype=r),), 1),
      # (pivoted: the columns in geqp3's order, which small steps do not change)
      "qr_pivoted_wide": (lambda x: L.qr(x, pivoting=True)[:2], (rand(3, 5, dtype=r),), 1),
      "qr_pivoted_full_tall_complex": (lambda x: L.qr(x, pivoting=True)[:2],
                                       (rand(4, 3, dtype=c),), 1),
      "eigh": (_gauge_free_eigh, (hermitian(3, r),), 2),
      "eigh_complex": (_gauge_free_eigh, (hermitian(3, c),), 1),
      "svd_tall": (_gauge_free_svd, (rand(4, 3, dtype=r),), 2),
      "svd_wide_complex": (_gauge_free_svd, (rand(3, 4, dtype=c),), 1),
      "svdvals_wide": (lambda x: L.svd(x, compute_uv=False), (rand(3, 4, dtype=r),), 2),
  }


def _numpy_grads():
  """name -> (function, arguments, order 1)."""
  a, b, s = rand(3, 3, dtype=np.float64), rand(3, 2, dtype=np.float64), spd(3, np.float64)
  c = rand(3, 3, dtype=np.complex128)
  table = {
      "solve": (jnp.linalg.solve, (a, b)),
      "solve_complex_vector": (jnp.linalg.solve, (c, rand(3, dtype=np.complex128))),
      "inv": (jnp.linalg.inv, (a,)),
      "det_4x4": (jnp.linalg.det, (rand(4, 4, dtype=np.float64),)),
      "det_complex_5x5": (jnp.linalg.det, (rand(5, 5, dtype=np.complex128),)),
      "slogdet": (lambda x: jnp.linalg.slogdet(x)[1], (rand(4, 4, dtype=np.float64),)),
      "pinv_tall": (jnp.linalg.pinv, (rand(4, 3, dtype=np.float64) + 3 * np.eye(4, 3),)),
      "pinv_wide_complex": (jnp.linalg.pinv, (rand(2, 3, dtype=np.complex128),)),
      "lstsq": (lambda x, y: jnp.linalg.lstsq(x, y)[0], (rand(5, 3, dtype=np.float64),
                                                         rand(5, dtype=np.float64))),
      "norm_2": (lambda x: jnp.linalg.norm(x, 2), (a,)),
      # (a Cholesky factorization reads one triangle: perturb symmetrically)
      "solve_pos": (lambda x, y: jsl.solve(x + x.T, y, assume_a="pos", lower=True), (s, b)),
  }
  return {n: (f, args, 1) for n, (f, args) in table.items()}


PRIMITIVE_GRADS = _primitive_grads()
NUMPY_GRADS = _numpy_grads()


def _results(table):
  previous = minijax.config.enable_x64
  minijax.config.update("enable_x64", True)
  try:
    return run_together({n: GradCheck(f, a, order=k) for n, (f, a, k) in table.items()})
  finally:
    minijax.config.update("enable_x64", previous)


@pytest.fixture(scope="module")
def primitive_grad_results():
  return _results(PRIMITIVE_GRADS)


@pytest.fixture(scope="module")
def numpy_grad_results():
  return _results(NUMPY_GRADS)


def _verify(table, results, name):
  fn, args, order = table[name]
  check = GradCheck(fn, args, order=order)
  check.verify(results[name]) if name in results else check.run()


@pytest.mark.parametrize("name", list(PRIMITIVE_GRADS))
def test_primitive_derivatives_match_finite_differences(name, primitive_grad_results, x64):
  _verify(PRIMITIVE_GRADS, primitive_grad_results, name)


@pytest.mark.parametrize("name", list(NUMPY_GRADS))
def test_numpy_and_scipy_derivatives_match_finite_differences(name, numpy_grad_results, x64):
  _verify(NUMPY_GRADS, numpy_grad_results, name)


def test_custom_derivatives_match_jax():
  singular = np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]], np.float32)
  # det of a singular matrix: the gradient is the adjugate's transpose (JAX's cofactor jvp)
  np.testing.assert_allclose(minijax.grad(jnp.linalg.det)(singular),
                             [[4, 4, -4], [-2, -2, 2], [0, 0, 0]], atol=1e-5)
  rank2 = np.array([[1., 2., 3., 4.], [2., 4., 6., 8.], [1., 0., 1., 0.], [0., 1., 1., 2.]],
                   np.float32)
  np.testing.assert_allclose(minijax.grad(jnp.linalg.det)(rank2), np.zeros((4, 4)), atol=1e-5)
  a = np.array([[2., 1., 0.5], [-1., 3., 0.25], [0.5, -0.5, 1.5], [1., 0., -2.]], np.float32)
  np.testing.assert_allclose(
      minijax.grad(lambda a: jnp.sum(jnp.linalg.pinv(a) ** 2))(a),
      [[-0.12428682, -0.04005635, -0.03470865], [0.022930767, -0.051913824, 0.0029857326],
       [-0.032759763, 0.009388181, -0.07609372], [-0.041709397, -0.015609875, 0.08831829]],
      rtol=1e-4, atol=1e-6)


# ----------------------------------------------------------------------------- vmap

def test_vmap_matches_a_loop_over_slices():
  a, s = rand(3, 3), spd(3)
  cases = {
      "cholesky": (L.cholesky, (s,)),
      "triangular_solve": (lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True),
                           (tri(3), rand(3, 2))),
      "triangular_solve_right": (lambda a, b: L.triangular_solve(a, b, lower=True,
                                                                 transpose_a=True),
                                 (tri(3), rand(2, 3))),
      "lu": (lambda x: L.lu(x), (a,)),
      "qr": (L.qr, (rand(4, 3, dtype=np.complex64),)),
      "qr_pivoted": (lambda x: L.qr(x, pivoting=True, full_matrices=False), (rand(3, 4),)),
      "eigh": (lambda x: L.eigh(x)[1], (hermitian(3),)),
      "svd": (lambda x: L.svd(x, compute_uv=False), (rand(3, 4),)),
      "solve": (jnp.linalg.solve, (a, rand(3))),
      "det": (jnp.linalg.det, (rand(4, 4),)),
      "lu_solve": (lambda x, y: jsl.lu_solve(jsl.lu_factor(x), y), (a, rand(3, 2))),
  }
  checks = {}
  for name, (fn, args) in cases.items():
    variants = [([-1] * len(args), 0)]
    if len(args) > 1:
      variants += [([None] + [0] * (len(args) - 1), -1)]
    checks[name] = VmapCheck(fn, args, variants)
  results = run_together(checks)
  for name, check in checks.items():
    check.verify(results[name]) if name in results else check.run()


# ----------------------------------------------------------------------------- numpy.linalg

A4, B42 = rand(4, 4), rand(4, 2)
S4 = spd(4)
T63 = rand(6, 3)
H4, H4C = hermitian(4), hermitian(4, np.complex64)
V6 = rand(6)


def _m(name, *args, **kwargs):
  return lambda m: getattr(m.linalg, name)(*args, **kwargs)


NUMPY_LINALG = {
    "cholesky": _m("cholesky", S4),
    "cholesky_batched_complex": _m("cholesky", spd(3, np.complex64, batch=(2,))),
    "solve": _m("solve", A4, B42),
    "solve_vector": _m("solve", A4, B42[:, 0]),
    "solve_broadcast": _m("solve", rand(2, 4, 4), B42),
    "solve_complex": _m("solve", rand(3, 3, dtype=np.complex64), rand(3, dtype=np.complex64)),
    "inv": _m("inv", A4),
    "inv_batched": _m("inv", rand(2, 3, 3)),
    "det_2x2": _m("det", A4[:2, :2]),
    "det_3x3": _m("det", A4[:3, :3]),
    "det_batched": _m("det", rand(3, 5, 5)),
    "det_complex": _m("det", rand(4, 4, dtype=np.complex64)),
    "slogdet": _m("slogdet", rand(2, 4, 4)),
    "slogdet_complex": _m("slogdet", rand(4, 4, dtype=np.complex64)),
    "eigvalsh": _m("eigvalsh", H4),
    "eigh_values": lambda m: m.linalg.eigh(H4C)[0],
    "svd_values": _m("svd", T63, compute_uv=False),
    "svd_hermitian_values": _m("svd", H4, hermitian=True, compute_uv=False),
    "qr_r": lambda m: np.abs(np.asarray(m.linalg.qr(T63, mode="r"))),
    "qr_complete_shapes": lambda m: [x.shape for x in m.linalg.qr(T63, mode="complete")],
    "lstsq": _m("lstsq", T63, rand(6, 2), rcond=None),
    "lstsq_vector": lambda m: m.linalg.lstsq(T63, V6, rcond=None)[0],
    "pinv": _m("pinv", T63),
    "pinv_complex": _m("pinv", rand(2, 3, dtype=np.complex64)),
    "matrix_rank": _m("matrix_rank", np.outer(np.arange(4.0), np.ones(3))),
    "matrix_rank_full": _m("matrix_rank", A4),
    "matrix_power_5": _m("matrix_power", A4, 5),
    "matrix_power_-2": _m("matrix_power", A4, -2),
    "matrix_power_0": _m("matrix_power", A4, 0),
    "multi_dot": _m("multi_dot", [rand(3), T63.T, T63, A4[:3, :3], rand(3, 2)]),
    "norm_fro": _m("norm", A4), "norm_nuc": _m("norm", A4, "nuc"),
    "norm_2": _m("norm", A4, 2), "norm_-2": _m("norm", A4, -2),
    "norm_1": _m("norm", A4, 1), "norm_inf": _m("norm", A4, np.inf),
    "norm_-inf_axis": _m("norm", rand(2, 3, 4), -np.inf, axis=(0, 2)),
    "norm_vector_3": _m("norm", rand(5), 3), "norm_vector_0": _m("norm", A4[0], 0),
    "norm_complex_matrix_2": _m("norm", rand(3, 3, dtype=np.complex64), 2),
}


@pytest.mark.parametrize("name", list(NUMPY_LINALG))
def test_numpy_linalg_matches_numpy(name):
  fn = NUMPY_LINALG[name]
  got, want = fn(jnp), fn(np)
  for g, w in zip(minijax.tree_util.tree_leaves(got), minijax.tree_util.tree_leaves(
      tuple(want) if isinstance(want, tuple) else want)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=5e-5, atol=5e-5)


def test_numpy_linalg_results_are_named_like_jax():
  h = hermitian(3)
  out = jnp.linalg.eigh(h)
  assert type(out).__name__ == "EighResult" and out.eigenvalues.shape == (3,)
  out = jnp.linalg.svd(T63, full_matrices=False)
  assert type(out).__name__ == "SVDResult" and out.U.shape == (6, 3) and out.Vh.shape == (3, 3)
  out = jnp.linalg.qr(T63)
  assert type(out).__name__ == "QRResult" and out.Q.shape == (6, 3) and out.R.shape == (3, 3)
  out = jnp.linalg.slogdet(A4)
  assert type(out).__name__ == "SlogdetResult" and out.sign.shape == ()
  assert jnp.linalg.matrix_rank(A4).dtype == np.int32
  np.testing.assert_allclose(jnp.linalg.cholesky(S4, upper=True), np.linalg.cholesky(S4).T,
                             rtol=1e-5)
  u, s, vh = jnp.linalg.svd(H4, hermitian=True)
  np.testing.assert_allclose((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), H4, rtol=1e-5,
                             atol=1e-5)
  assert np.all(np.diff(np.asarray(s)) <= 0)


# ----------------------------------------------------------------------------- scipy.linalg

M3 = np.array([[0.5, -1.0, 0.25], [0.75, 0.1, -0.6], [-0.3, 0.8, 0.2]])


def test_scipy_linalg_matches_numpy_and_scipys_numbers():
  s, b = S4, B42
  np.testing.assert_allclose(jsl.cholesky(s), np.linalg.cholesky(s).T, rtol=1e-5)
  np.testing.assert_allclose(jsl.cholesky(s, lower=True), np.linalg.cholesky(s), rtol=1e-5)
  for lower in (False, True):
    np.testing.assert_allclose(jsl.cho_solve(jsl.cho_factor(s, lower=lower), b),
                               np.linalg.solve(s, b), rtol=1e-4, atol=1e-5)
  t = tri(4, lower=False)
  for trans, op in ((0, t), ("T", t.T), (2, t.T)):
    np.testing.assert_allclose(jsl.solve_triangular(t, b, trans=trans), np.linalg.solve(op, b),
                               rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(jsl.solve_triangular(t.T, b[:, 0], lower=True, unit_diagonal=True),
                             np.linalg.solve(np.tril(t.T, -1) + np.eye(4), b[:, 0]), rtol=1e-4)
  for assume_a in ("gen", "sym", "her", "pos"):
    np.testing.assert_allclose(jsl.solve(s, b, assume_a=assume_a), np.linalg.solve(s, b),
                               rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(jsl.inv(A4), np.linalg.inv(A4), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(jsl.det(A4), np.linalg.det(A4), rtol=1e-5)
  lu_piv = jsl.lu_factor(A4)
  for trans, op in ((0, A4), (1, A4.T), (2, A4.T)):
    np.testing.assert_allclose(jsl.lu_solve(lu_piv, b, trans=trans), np.linalg.solve(op, b),
                               rtol=1e-4, atol=1e-5)
  a = np.array([[2., 1., 0.5], [-1., 3., 0.25], [0.5, -0.5, 1.5], [1., 0., -2.]])
  p, l, u = jsl.lu(a)  # scipy.linalg.lu's factors, recorded
  np.testing.assert_array_equal(p, np.eye(4)[:, [0, 1, 3, 2]])
  np.testing.assert_allclose(l, [[1, 0, 0], [-0.5, 1, 0], [0.5, -0.1428571429, 1],
                                 [0.25, -0.2142857143, -0.6803278689]], rtol=1e-6)
  np.testing.assert_allclose(u, [[2, 1, 0.5], [0, 3.5, 0.5], [0, 0, -2.1785714286]], rtol=1e-6)
  pl, u2 = jsl.lu(a, permute_l=True)
  np.testing.assert_allclose(np.asarray(pl) @ np.asarray(u2), a, rtol=1e-6, atol=1e-6)
  lu_, piv = jsl.lu_factor(a[:3])  # scipy.linalg.lu_factor's, recorded
  np.testing.assert_array_equal(piv, [0, 1, 2])
  np.testing.assert_allclose(lu_, [[2, 1, 0.5], [-0.5, 3.5, 0.5], [0.25, -0.2142857143,
                                                                  1.4821428571]], rtol=1e-6)
  q, r = jsl.qr(T63)
  assert q.shape == (6, 6) and r.shape == (6, 3)
  q, r = jsl.qr(T63, mode="economic")
  np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), T63, rtol=1e-5, atol=1e-5)
  (r,) = jsl.qr(T63, mode="r")
  assert r.shape == (6, 3)
  w, v = jsl.eigh(H4)
  np.testing.assert_allclose(w, np.linalg.eigvalsh(H4), rtol=1e-5, atol=1e-5)
  assert jsl.eigh(H4, eigvals_only=True).shape == (4,)
  u, s_, vh = jsl.svd(T63)
  assert u.shape == (6, 6) and vh.shape == (3, 3)
  np.testing.assert_allclose(jsl.svd(T63, compute_uv=False), np.linalg.svd(T63, compute_uv=False),
                             rtol=1e-5)


def test_expm_matches_scipys_values():
  np.testing.assert_allclose(jsl.expm(M3.astype(np.float32)), [
      [1.1023976454, -0.9706817776, 0.6390414573], [0.9217927173, 0.4293250214, -0.4370730285],
      [0.0082757876, 0.9057330115, 0.9168920489]], rtol=2e-6, atol=1e-6)
  np.testing.assert_allclose(jsl.expm((M3 * 7).astype(np.float32)), [
      [4.0888776389, -4.7515021728, 5.0503897458], [5.4519669064, -0.5870112128, -1.434646096],
      [1.4928934124, 5.0600952561, 3.6934307745]], rtol=2e-5, atol=2e-5)
  np.testing.assert_allclose(jsl.expm((M3 + 0.5j * M3.T).astype(np.complex64)), [
      [1.0191867553 + 0.8386657672j, -1.1262417292 - 0.1343628448j, 0.7134377128 - 0.3442475913j],
      [1.1380728582 - 0.2976834984j, 0.4360190091 + 0.6460232867j, -0.5796853636 + 0.0590795526j],
      [-0.0430196448 - 0.3044441779j, 1.0186047835 - 0.126399045j, 0.9150293193 + 0.3875361042j]],
      rtol=2e-6, atol=2e-6)
  np.testing.assert_allclose(jsl.expm(np.triu(M3).astype(np.float32), upper_triangular=True),
                             jsl.expm(np.triu(M3).astype(np.float32)), rtol=1e-6, atol=1e-6)
  batched = jsl.expm(np.stack([M3, 7 * M3]).astype(np.float32))
  np.testing.assert_allclose(batched[0], jsl.expm(M3.astype(np.float32)), rtol=1e-6)
  assert np.all(np.isnan(np.asarray(jsl.expm((M3 * 1e6).astype(np.float32), max_squarings=4))))


def test_expm_derivative_is_the_frechet_derivative():
  # expm([[A, E], [0, A]]) = [[expm(A), L(A, E)], [0, expm(A)]], with L(A, E) the derivative
  # of expm at A in the direction E
  a, e = (M3 * 3).astype(np.float32), rand(3, 3)
  _, tangent = minijax.jvp(jsl.expm, (a,), (e,))
  block = jsl.expm(np.block([[a, e], [np.zeros((3, 3)), a]]).astype(np.float32))
  np.testing.assert_allclose(tangent, np.asarray(block)[:3, 3:], rtol=2e-4, atol=2e-4)
  cot = rand(3, 3)
  (grad,) = minijax.vjp(jsl.expm, a)[1](cot)
  # <cot, L(A, E)> = <L^T(cot), E> for the transposed (pullback) map
  np.testing.assert_allclose(np.sum(cot * np.asarray(tangent)), np.sum(np.asarray(grad) * e),
                             rtol=1e-4)


def test_expm_in_double_precision(x64):
  np.testing.assert_allclose(jsl.expm(M3 * 7), [
      [4.0888776389, -4.7515021728, 5.0503897458], [5.4519669064, -0.5870112128, -1.434646096],
      [1.4928934124, 5.0600952561, 3.6934307745]], rtol=1e-9)


def test_tridiagonal_solve_against_the_dense_solve():
  """LAPACK's gtsv, as JAX calls it; its gradients are the dense solve's."""
  rng = np.random.RandomState(0)
  dl, d, du = rng.randn(3, 2, 5).astype(np.float32)
  d = d + 4
  dl[:, 0] = du[:, -1] = 0
  b = rng.randn(2, 5, 3).astype(np.float32)
  dense = lambda dl, d, du: (jnp.apply_along_axis(jnp.diag, -1, d)
                             + jnp.apply_along_axis(lambda v: jnp.diag(v[1:], -1), -1, dl)
                             + jnp.apply_along_axis(lambda v: jnp.diag(v[:-1], 1), -1, du))
  x = L.tridiagonal_solve(dl, d, du, b)
  np.testing.assert_allclose(x, np.linalg.solve(np.asarray(dense(dl, d, du)), b), rtol=1e-5,
                             atol=1e-6)
  loss = lambda solve: lambda *args: (solve(*args) ** 2).sum()
  grads = minijax.grad(loss(L.tridiagonal_solve), argnums=(0, 1, 2, 3))(dl, d, du, b)
  expected = minijax.grad(loss(lambda dl, d, du, b: jnp.linalg.solve(dense(dl, d, du), b)),
                          argnums=(0, 1, 2, 3))(dl, d, du, b)
  for got, want in zip(grads, expected):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
  batched = minijax.vmap(L.tridiagonal_solve, in_axes=(0, 0, 0, None))(dl, d, du, b[0])
  np.testing.assert_allclose(batched[1], L.tridiagonal_solve(dl[1], d[1], du[1], b[0]),
                             rtol=1e-6)
  with pytest.raises(ValueError, match="tridiagonal_solve takes dl, d, du of one shape"):
    L.tridiagonal_solve(dl, d, du[:, :4], b)
  # perturb_singular: a zero pivot is nudged (JAX 0.10.2's values, recorded), under vmap too
  singular = [np.float32(v) for v in ([0, 1, 1], [0, 0, 1], [0, 0, 0], [[1], [2], [3]])]
  np.testing.assert_allclose(L.tridiagonal_solve(*singular, perturb_singular=True),
                             [[2.0], [8388611.0], [-8388608.0]], rtol=1e-6)  # (LAPACK rounds)
  assert np.isnan(np.asarray(L.tridiagonal_solve(*singular))).all()
  twice = minijax.vmap(lambda b: L.tridiagonal_solve(*singular[:3], b, perturb_singular=True))
  np.testing.assert_allclose(twice(np.stack([singular[3]] * 2))[1],
                             [[2.0], [8388611.0], [-8388608.0]], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_reduction_is_unitarily_similar(dtype, lower):
  """LAPACK's sytrd/hetrd, as JAX calls them: T (real symmetric tridiagonal: d, e) has A's
  eigenvalues, and from the lower triangle Q T Q^H = A, with Q the product of the packed
  reflectors; the other triangle is not touched."""
  rng = np.random.RandomState(1)
  a = rng.randn(2, 4, 4) + (1j * rng.randn(2, 4, 4) if dtype == np.complex128 else 0)
  a = (a + np.conj(np.swapaxes(a, -1, -2))).astype(dtype)
  with minijax.enable_x64(dtype == np.complex128):
    arr, d, e, taus = L.tridiagonal(a, lower=lower)
    assert d.dtype == e.dtype == np.finfo(dtype).dtype and taus.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    t = np.zeros_like(a)
    t[..., range(4), range(4)] = d
    t[..., range(1, 4), range(3)] = t[..., range(3), range(1, 4)] = e
    np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a), atol=tol)
    untouched = np.triu(np.ones((4, 4), bool), 1) if lower else np.tril(np.ones((4, 4), bool), -1)
    np.testing.assert_array_equal(np.asarray(arr)[..., untouched], a[..., untouched])
    if lower:
      q = np.pad(np.asarray(L.householder_product(arr[..., 1:, :-1], taus)),
                 ((0, 0), (1, 0), (1, 0)))
      q[..., 0, 0] = 1
      np.testing.assert_allclose(q @ t @ np.conj(np.swapaxes(q, -1, -2)), a, atol=tol)
    np.testing.assert_allclose(minijax.vmap(lambda m: L.tridiagonal(m, lower=lower)[1])(a), d)


def test_pinv_takes_an_array_of_rtols_one_per_matrix():
  """JAX 0.10.2's ranks for these cut-offs (rtol broadcasts over the batch)."""
  a = np.random.RandomState(0).randn(3, 4, 4).astype(np.float32)
  a[:, :, 0] *= 1e-4
  rtol = np.array([1e-5, 1e-3, 0.5], np.float32)
  assert jnp.linalg.matrix_rank(a, rtol=rtol).tolist() == [4, 3, 3]
  p = jnp.linalg.pinv(a, rtol=rtol)
  for k in range(3):
    np.testing.assert_allclose(p[k], jnp.linalg.pinv(a[k], rtol=float(rtol[k])), rtol=1e-5,
                               atol=1e-6)
  assert minijax.jit(lambda a, r: jnp.linalg.pinv(a, rtol=r))(a, rtol).shape == (3, 4, 4)


def test_triangular_solve_of_half_floats_in_float32():
  """LAPACK has no half floats: solved in float32 and rounded back (JAX's XLA solve, in
  float16 throughout, loses more: 7.3e-4 where the exact first entry is 6.59e-4)."""
  a = np.triu(np.random.RandomState(0).rand(3, 3) + 2).astype(np.float16)
  b = np.ones((3, 2), np.float16)
  for half in (np.float16, jnp.bfloat16):
    out = L.triangular_solve(a.astype(half), b.astype(half), left_side=True)
    assert out.dtype == half
    exact = np.linalg.solve(a.astype(half).astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(np.asarray(out, np.float64), exact, rtol=1e-2)


def test_svd_algorithms_and_eigensolver_choices_as_on_jaxs_cpu(x64):
  from minijax.lax import linalg as ll
  x = np.random.RandomState(0).randn(4, 3)
  expected = np.linalg.svd(x, compute_uv=False)
  for algorithm in (None, ll.SvdAlgorithm.DEFAULT, ll.SvdAlgorithm.QR,
                    ll.SvdAlgorithm.DIVIDE_AND_CONQUER):
    u, s, vt = ll.svd(x, full_matrices=False, algorithm=algorithm)
    np.testing.assert_allclose(s, expected, rtol=1e-12)
    np.testing.assert_allclose((u * s) @ vt, x, atol=1e-12)
  assert "gesvd" in minijax.jit(lambda x: ll.svd(x, algorithm=ll.SvdAlgorithm.QR)).lower(x).as_text()
  # bound without an algorithm, as JAX's harnesses bind svd_p: the default
  (s,) = minijax.jit(lambda x: ll.svd_p.bind(x, full_matrices=False, compute_uv=False))(x)
  np.testing.assert_allclose(s, expected, rtol=1e-12)
  for algorithm in (ll.SvdAlgorithm.JACOBI, ll.SvdAlgorithm.POLAR):
    with pytest.raises(NotImplementedError, match="not implemented on CPU"):
      ll.svd(x, algorithm=algorithm)
  with pytest.raises(NotImplementedError, match="only supported on TPU"):
    ll.eigh(x[:3] @ x[:3].T, implementation=ll.EighImplementation.QDWH)
  with pytest.raises(ValueError, match="Only the lapack implementation"):
    ll.eig(x[:3], implementation=ll.EigImplementation.MAGMA)
  np.testing.assert_allclose(ll.eigh(x[:3] @ x[:3].T, implementation=ll.EighImplementation.QR)[1],
                             np.linalg.eigvalsh(x[:3] @ x[:3].T), rtol=1e-12)


def test_symmetric_product_cholesky_update_and_ormqr_match_numpy(x64):
  import scipy.linalg

  from minijax.lax import linalg as ll
  rng = np.random.RandomState(1)
  a, c, w = rng.randn(4, 3), rng.randn(4, 4), rng.randn(4)
  out = ll.symmetric_product(a, c, alpha=2.0, beta=0.5)
  np.testing.assert_allclose(out, 2 * a @ a.T + 0.5 * c, rtol=1e-12)
  sym = np.asarray(ll.symmetric_product(a, c, alpha=2.0, beta=0.5, symmetrize_output=True))
  np.testing.assert_allclose(sym, np.tril(out) + np.tril(out, -1).T, rtol=1e-12)
  with pytest.raises(ValueError, match=r"c of shape \[..., m, m\], got \(4, 3\) and \(4, 1\)"):
    ll.symmetric_product(a, c[:, :1])  # (it broadcast c)
  with pytest.raises(TypeError, match="floating point matrices, got int32 at position 0"):
    ll.symmetric_product(a.astype(np.int32), c)
  spd = c @ c.T + 4 * np.eye(4)
  updated = np.asarray(ll.cholesky_update(np.linalg.cholesky(spd).T, w))
  np.testing.assert_allclose(updated, np.triu(updated), atol=0)
  np.testing.assert_allclose(updated.T @ updated, spd + np.outer(w, w), rtol=1e-12)
  for shape in [(4, 3), (4, 4), (3, 5)]:
    x = rng.randn(*shape)
    packed, taus = scipy.linalg.lapack.dgeqrf(x)[:2]
    q = scipy.linalg.qr(x)[0]
    m = shape[0]
    np.testing.assert_allclose(ll.ormqr(packed, taus, np.eye(m)), q, atol=1e-12)
    np.testing.assert_allclose(ll.ormqr(packed, taus, np.eye(m), left=False, transpose=True), q.T,
                               atol=1e-12)


def test_symmetrized_integer_matrices_are_factored_in_floats_as_jax():
  # (x + x^H) / 2 is a true division in JAX: cholesky and eigh take integers then (they
  # raised), and symmetrize no longer floors [[1, 2], [3, 4]]'s 2.5 to 2
  np.testing.assert_allclose(L.cholesky(np.int32([[4, 2], [2, 3]])),
                             [[2, 0], [1, np.sqrt(2)]], rtol=1e-6)
  v, w = L.eigh(np.int32([[4, 2], [2, 3]]))
  assert v.dtype == w.dtype == np.float32
  np.testing.assert_allclose(w, np.linalg.eigvalsh([[4.0, 2], [2, 3]]), rtol=1e-6)
  np.testing.assert_array_equal(L.symmetrize(np.int32([[1, 2], [3, 4]])), [[1, 2.5], [2.5, 4]])


def test_qdwh_gives_the_polar_decomposition_in_jaxs_number_of_steps():
  sp_linalg = pytest.importorskip("scipy.linalg")
  rng = np.random.RandomState(0)
  for shape, dtype in [((5, 3), np.float32), ((4, 4), np.float32), ((6, 4), np.complex64)]:
    x = rng.randn(*shape).astype(dtype)
    if dtype == np.complex64:
      x = x + 1j * rng.randn(*shape).astype(np.float32)
    u, h, num_iters, converged = L.qdwh(x)
    want_u, want_h = sp_linalg.polar(x.astype(np.complex128 if dtype == np.complex64 else
                                              np.float64))
    np.testing.assert_allclose(u, want_u, atol=2e-5)
    np.testing.assert_allclose(h, want_h, atol=5e-5)
    assert (int(num_iters), bool(converged)) == (4, True)  # (JAX 0.10.2's for these)
  x = rng.randn(4, 3).astype(np.float32)
  assert [int(v) for v in L.qdwh(x, max_iterations=3)[2:]] == [3, 0]  # stopped, unconverged
  batched = minijax.vmap(L.qdwh)(np.stack([x, 2 * x]))
  np.testing.assert_allclose(batched[0][1], L.qdwh(2 * x)[0], atol=1e-6)
  assert int(minijax.jit(lambda x: L.qdwh(x)[2])(x)) == 4
  with pytest.raises(ValueError, match="M x N matrix with M >= N"):
    L.qdwh(x.T)


def test_lobpcg_finds_the_top_eigenpairs_of_a_matrix_or_a_linear_map():
  from minijax.experimental.sparse import linalg as sparse_linalg
  rng = np.random.default_rng(0)
  n, k = 60, 4
  q, _ = np.linalg.qr(rng.normal(size=(n, n)))
  spectrum = np.linspace(1, 10, n)
  spectrum[-k:] = [20, 25, 30, 40]
  a = ((q * spectrum) @ q.T).astype(np.float32)
  x = rng.normal(size=(n, k)).astype(np.float32)
  for operator in (a, lambda v: jnp.asarray(a) @ v):
    theta, u, steps = sparse_linalg.lobpcg_standard(operator, x, m=100)
    np.testing.assert_allclose(theta, [40, 30, 25, 20], rtol=1e-5)
    u = np.asarray(u, np.float64)
    np.testing.assert_allclose(a @ u, u * np.asarray(theta), atol=1e-3)
    np.testing.assert_allclose(u.T @ u, np.eye(k), atol=1e-5)
    assert 0 < int(steps) < 100
  with pytest.raises(ValueError, match=r"search dim \* 5 < matrix dim"):
    sparse_linalg.lobpcg_standard(a, np.ones((n, 12), np.float32))
  with pytest.raises(ValueError, match="same dtypes"):
    sparse_linalg.lobpcg_standard(a, x.astype(np.float16))
  with pytest.raises(ValueError, match="must be real floating"):  # (not silently wrong)
    sparse_linalg.lobpcg_standard(a.astype(np.complex64), x.astype(np.complex64))


def test_empty_matrices_give_numpys_empty_answers():
  # (the LU's permutation of no pivots failed to trace: inv, det, slogdet and solve raised)
  m = np.zeros((0, 0), np.float32)
  assert jnp.linalg.inv(m).shape == (0, 0)
  assert float(jnp.linalg.det(m)) == 1.0
  assert tuple(map(float, jnp.linalg.slogdet(m))) == (1.0, 0.0)
  assert jnp.linalg.solve(m, np.zeros(0, np.float32)).shape == (0,)
  assert jnp.linalg.inv(np.zeros((3, 0, 0), np.float32)).shape == (3, 0, 0)
  x, resid, rank, s = jnp.linalg.lstsq(np.zeros((0, 2), np.float32), np.zeros(0, np.float32))
  np.testing.assert_array_equal(x, [0, 0])
  assert int(rank) == 0 and s.shape == (0,)
  assert float(jnp.linalg.norm(np.zeros(0, np.float32), ord=np.inf)) == 0.0
