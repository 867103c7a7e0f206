"""The scipy modules JAX provides beyond special/stats/linalg, compared with scipy itself:
`sparse.linalg` (cg, bicgstab, gmres: solutions, preconditioners, pytrees, jit, vmap and
implicit derivatives), `interpolate.RegularGridInterpolator`, `ndimage.map_coordinates`
(JAX's modes: "constant" and "wrap" are scipy's "grid-" ones), `cluster.vq.vq` and
`integrate.trapezoid`."""
from __future__ import annotations

import numpy as np
import pytest

sp_interp = pytest.importorskip("scipy.interpolate")  # the reference (with the test extras)
import scipy.cluster.vq
import scipy.ndimage

import minijax
import minijax.numpy as jnp
import minijax.scipy.cluster.vq
import minijax.scipy.integrate
import minijax.scipy.interpolate
import minijax.scipy.ndimage
import minijax.scipy.sparse.linalg as msl

RNG = np.random.RandomState(0)
N = 8
SPD = (lambda q: q @ q.T + N * np.eye(N))(RNG.randn(N, N))
GENERAL = RNG.randn(N, N) + N * np.eye(N)
B = RNG.randn(N)
SOLVERS = [("cg", SPD), ("bicgstab", GENERAL), ("gmres", GENERAL)]


@pytest.mark.parametrize("name,A", SOLVERS)
def test_krylov_solvers_solve_as_matrices_functions_and_preconditioned(name, A, x64):
  solver = getattr(msl, name)
  expected = np.linalg.solve(A, B)
  x, info = solver(A, B, tol=1e-10)
  np.testing.assert_allclose(x, expected, rtol=1e-8, atol=1e-10)
  assert info is None if name != "gmres" else int(info) == 0
  jacobi = np.diag(1 / np.diag(A))
  x, _ = solver(lambda v: jnp.dot(A, v), B, tol=1e-10, M=jacobi)
  np.testing.assert_allclose(x, expected, rtol=1e-8, atol=1e-10)
  x, _ = minijax.jit(lambda b: solver(A, b, tol=1e-10))(B)
  np.testing.assert_allclose(x, expected, rtol=1e-8, atol=1e-10)
  xs, _ = minijax.vmap(lambda b: solver(A, b, tol=1e-10))(np.stack([B, -2 * B]))
  np.testing.assert_allclose(xs[1], -2 * expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name,A", SOLVERS)
def test_krylov_solvers_take_pytrees_and_differentiate_implicitly(name, A, x64):
  solver = getattr(msl, name)
  expected = np.linalg.solve(A, B)

  def matvec(t):
    v = A @ jnp.concatenate([t["a"], t["b"][0]])
    return {"a": v[:3], "b": v[3:][None]}

  x, _ = solver(matvec, {"a": B[:3], "b": B[3:][None]}, tol=1e-10)
  np.testing.assert_allclose(jnp.concatenate([x["a"], x["b"][0]]), expected, rtol=1e-8)
  grad = minijax.grad(lambda b: solver(A, b, tol=1e-10)[0] @ np.arange(N))(B)
  np.testing.assert_allclose(grad, np.linalg.solve(A.T, np.arange(N)), rtol=1e-7)


@pytest.mark.parametrize("name", ["bicgstab", "gmres"])
def test_krylov_solvers_solve_complex_systems(name, x64):
  A = GENERAL + 1j * RNG.randn(N, N)
  b = B + 1j * RNG.randn(N)
  x, _ = getattr(msl, name)(A, b, tol=1e-10)
  np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)
  x, _ = msl.cg(SPD + 0j, b, tol=1e-10)
  np.testing.assert_allclose(x, np.linalg.solve(SPD, b), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("method", ["incremental", "batched"])
def test_gmres_restarts_until_converged(method, x64):
  x, info = msl.gmres(GENERAL, B, tol=1e-10, restart=3, solve_method=method)
  np.testing.assert_allclose(x, np.linalg.solve(GENERAL, B), rtol=1e-8, atol=1e-10)
  x, info = msl.gmres(np.eye(3), np.zeros(3))
  assert np.asarray(x).tolist() == [0, 0, 0] and int(info) == 0


def test_krylov_solvers_stop_after_maxiter_and_reject_bad_input():
  one_step, _ = msl.cg(SPD, B, maxiter=1)
  assert np.linalg.norm(SPD @ one_step - B) > 1e-3  # one CG step is not the solution
  with pytest.raises(ValueError, match="must be a square matrix, got shape"):
    msl.cg(np.ones((2, 3)), np.ones(2))
  with pytest.raises(ValueError, match="same shapes"):
    msl.cg(SPD, B, x0=B[:3])
  with pytest.raises(ValueError, match="invalid solve_method"):
    msl.gmres(SPD, B, solve_method="qr")
  with pytest.raises(TypeError, match="must be a function, an array"):
    msl.bicgstab("A", B)


# ----------------------------------------------------------------------------- interpolation

@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("fill_value", [np.nan, None, 1.5])
def test_regular_grid_interpolator_matches_scipy(method, fill_value, x64):
  grid = (np.sort(RNG.rand(5)), np.sort(RNG.rand(4)) * 3)
  values = RNG.randn(5, 4, 2)
  q = np.stack([RNG.uniform(grid[0][0] - 0.05, grid[0][-1] + 0.05, 20),
                RNG.uniform(grid[1][0] - 0.1, grid[1][-1] + 0.1, 20)], -1)
  ours = minijax.scipy.interpolate.RegularGridInterpolator(grid, values, method, False, fill_value)
  theirs = sp_interp.RegularGridInterpolator(grid, values, method, False, fill_value)
  np.testing.assert_allclose(ours(q), theirs(q), rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(minijax.jit(lambda r, q: r(q))(ours, q), theirs(q), rtol=1e-12,
                             atol=1e-12)  # a pytree
  np.testing.assert_allclose(ours((q[:, 0].reshape(4, 5), q[:, 1].reshape(4, 5))),
                             theirs(q).reshape(4, 5, 2), rtol=1e-12, atol=1e-12)


def test_regular_grid_interpolator_rejects_what_it_cannot_do():
  with pytest.raises(NotImplementedError, match="bounds_error"):
    minijax.scipy.interpolate.RegularGridInterpolator(([0.0, 1.0],), np.ones(2), bounds_error=True)
  with pytest.raises(ValueError, match="method 'cubic' is not defined"):
    minijax.scipy.interpolate.RegularGridInterpolator(([0.0, 1.0],), np.ones(2), method="cubic")
  r = minijax.scipy.interpolate.RegularGridInterpolator(([0.0, 1.0], [0.0, 1.0]), np.ones((2, 2)))
  with pytest.raises(ValueError, match="have dimension 3, but the grid has dimension 2"):
    r(np.ones((4, 3)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_map_coordinates_linear_matches_scipy(dtype, mode, x64):
  scipy_mode = {"constant": "grid-constant", "wrap": "grid-wrap"}.get(mode, mode)
  for shape in [(5,), (4, 3), (1, 4), (3, 2, 4)]:
    x = (RNG.randn(*shape) * 10).astype(dtype)
    coordinates = [RNG.uniform(-3, s + 3, size=7) for s in shape]
    ours = minijax.scipy.ndimage.map_coordinates(x, coordinates, 1, mode=mode, cval=2.5)
    theirs = scipy.ndimage.map_coordinates(x, np.array(coordinates), order=1, mode=scipy_mode,
                                           cval=2.5)
    assert ours.dtype == dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1 if dtype == np.int32 else 1e-4)


def test_map_coordinates_nearest_rounds_halves_away_from_zero():
  x = np.arange(5.0) * 10
  out = minijax.scipy.ndimage.map_coordinates(x, [np.array([0.5, 1.5, 2.4, -0.5, 4.6, 7.0])], 0,
                                              mode="nearest")
  assert np.asarray(out).tolist() == [10, 20, 20, 0, 40, 40]
  with pytest.raises(NotImplementedError, match="order 0 .* and 1"):
    minijax.scipy.ndimage.map_coordinates(x, [np.zeros(2)], 3)
  with pytest.raises(NotImplementedError, match="mode='grid-wrap' is not supported"):
    minijax.scipy.ndimage.map_coordinates(x, [np.zeros(2)], 1, mode="grid-wrap")
  with pytest.raises(ValueError, match="one array per axis"):
    minijax.scipy.ndimage.map_coordinates(x, [np.zeros(2)] * 2, 1)


def test_vq_and_trapezoid_match_scipy():
  obs, book = RNG.randn(6, 3), RNG.randn(4, 3)
  code, dist = minijax.scipy.cluster.vq.vq(obs, book)
  expected_code, expected_dist = scipy.cluster.vq.vq(obs, book)
  assert np.asarray(code).tolist() == expected_code.tolist()
  np.testing.assert_allclose(dist, expected_dist, rtol=1e-6)
  code, dist = minijax.scipy.cluster.vq.vq(obs[:, 0], book[:, 0])
  assert np.asarray(code).tolist() == scipy.cluster.vq.vq(obs[:, 0], book[:, 0])[0].tolist()
  with pytest.raises(ValueError, match="same rank"):
    minijax.scipy.cluster.vq.vq(obs, book[:, 0])
  y = RNG.randn(3, 5)
  np.testing.assert_allclose(minijax.scipy.integrate.trapezoid(y, dx=0.5, axis=0),
                             np.trapezoid(y, dx=0.5, axis=0), rtol=1e-6)


# ----------------------------------------------------------------------------- rotations

def _same_rotation_quats(ours, theirs):
  ours, theirs = np.asarray(ours), np.asarray(theirs)
  sign = np.where(np.sum(ours * theirs, axis=-1, keepdims=True) < 0, -1, 1)
  np.testing.assert_allclose(ours * sign, theirs, rtol=1e-9, atol=1e-12)


def test_rotation_conversions_match_scipy(x64):
  from scipy.spatial.transform import Rotation as SR

  from minijax.scipy.spatial.transform import Rotation
  quats = RNG.randn(6, 4)
  ours, theirs = Rotation.from_quat(quats), SR.from_quat(quats)
  np.testing.assert_allclose(ours.as_quat(canonical=True), theirs.as_quat(canonical=True), rtol=1e-12)
  np.testing.assert_allclose(ours.as_matrix(), theirs.as_matrix(), rtol=1e-12, atol=1e-14)
  np.testing.assert_allclose(ours.as_rotvec(degrees=True), theirs.as_rotvec(degrees=True), rtol=1e-10)
  np.testing.assert_allclose(ours.as_mrp(), theirs.as_mrp(), rtol=1e-10)
  np.testing.assert_allclose(ours.magnitude(), theirs.magnitude(), rtol=1e-12)
  _same_rotation_quats(Rotation.from_matrix(theirs.as_matrix()).as_quat(), theirs.as_quat())
  rotvecs = np.concatenate([RNG.randn(3, 3), [[1e-5, 0, 0]]])
  _same_rotation_quats(Rotation.from_rotvec(rotvecs).as_quat(), SR.from_rotvec(rotvecs).as_quat())
  mrps = RNG.randn(2, 3)
  _same_rotation_quats(Rotation.from_mrp(mrps).as_quat(), SR.from_mrp(mrps).as_quat())
  vectors = RNG.randn(6, 3)
  np.testing.assert_allclose(ours.apply(vectors), theirs.apply(vectors), rtol=1e-10)
  np.testing.assert_allclose(ours[2].apply(vectors, inverse=True),
                             theirs[2].apply(vectors, inverse=True), rtol=1e-10)
  _same_rotation_quats((ours * ours[0]).as_quat(), (theirs * theirs[0]).as_quat())
  _same_rotation_quats(ours.inv().as_quat(), theirs.inv().as_quat())
  _same_rotation_quats(ours.mean(np.arange(6.0)).as_quat(), theirs.mean(np.arange(6.0)).as_quat())
  assert np.asarray(Rotation.from_quat(quats[0]).as_quat(scalar_first=True)).tolist() == \
      np.asarray(np.roll(ours[0].quat, 1)).tolist()


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "xzx", "YXY", "zyz", "yxz", "ZXY"])
def test_euler_angles_match_scipy_including_gimbal_lock(seq, x64):
  from scipy.spatial.transform import Rotation as SR

  from minijax.scipy.spatial.transform import Rotation
  angles = RNG.uniform(-3, 3, (5, 3))
  _same_rotation_quats(Rotation.from_euler(seq, angles).as_quat(), SR.from_euler(seq, angles).as_quat())
  _same_rotation_quats(Rotation.from_euler(seq, np.rad2deg(angles), degrees=True).as_quat(),
                       SR.from_euler(seq, angles).as_quat())
  quats = RNG.randn(5, 4)
  np.testing.assert_allclose(Rotation.from_quat(quats).as_euler(seq),
                             SR.from_quat(quats).as_euler(seq), rtol=1e-9, atol=1e-12)
  locked = np.array([0.3, np.pi / 2 if seq[0] != seq[2] else 0.0, 0.2])
  rotation = Rotation.from_euler(seq, locked)
  back = Rotation.from_euler(seq, rotation.as_euler(seq))  # another triple, the same rotation
  np.testing.assert_allclose(back.as_matrix(), rotation.as_matrix(), atol=1e-6)
  assert float(rotation.as_euler(seq)[2]) == 0.0  # scipy's convention at gimbal lock


def test_rotations_are_pytrees_and_reject_bad_sequences(x64):
  from scipy.spatial.transform import Rotation as SR
  from scipy.spatial.transform import Slerp as SSlerp

  from minijax.scipy.spatial.transform import Rotation, Slerp
  grad = minijax.grad(lambda a: Rotation.from_euler("xyz", a).as_matrix()[0, 1])(np.array([0.1, 0.2, 0.3]))
  eps = 1e-6
  numeric = [(SR.from_euler("xyz", [0.1, 0.2, 0.3] + eps * np.eye(3)[i]).as_matrix()[0, 1] -
              SR.from_euler("xyz", [0.1, 0.2, 0.3] - eps * np.eye(3)[i]).as_matrix()[0, 1]) / (2 * eps)
             for i in range(3)]
  np.testing.assert_allclose(grad, numeric, rtol=1e-6)
  quats = RNG.randn(3, 4)
  times = np.array([0.0, 0.5, 1, 2.5, 3])
  ours = minijax.jit(lambda s, t: s(t).as_quat())(Slerp.init([0.0, 1, 3], Rotation.from_quat(quats)), times)
  _same_rotation_quats(ours, SSlerp([0.0, 1, 3], SR.from_quat(quats))(times).as_quat())
  assert Slerp.init([0.0, 1, 3], Rotation.from_quat(quats))(0.7).single
  assert len(Rotation.from_euler("z", np.array([0.1, 0.2]))) == 2 and Rotation.from_euler("z", 0.1).single
  for bad, match in [("xxy", "consecutive axes"), ("xYz", "from"), ("xyzx", "1 or 2 or 3 axes")]:
    with pytest.raises(ValueError, match=match):
      Rotation.from_euler(bad, np.zeros(3))
  with pytest.raises(TypeError, match="Single rotation has no len"):
    len(Rotation.identity())
  assert Rotation.random(minijax.random.key(0), 5).as_matrix().shape == (5, 3, 3)
