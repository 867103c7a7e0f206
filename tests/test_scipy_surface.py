"""The scipy surface added for JAX 0.10.2's names, compared with scipy: the distributions
of `minijax.scipy.stats` (binom, geom, nbinom, betabinom, chi2, pareto, gennorm, gumbel_r/_l,
vonmises, wrapcauchy, truncnorm, dirichlet) on their supports and at their edges (float32
results against scipy's float64, within 1e-5 relative), its sample summaries (mode,
rankdata, sem), the special functions (loggamma, poch, comb, boxcox, bernoulli, erfcx,
spence) and scipy.linalg's special matrices."""
from __future__ import annotations

import numpy as np
import pytest

ss = pytest.importorskip("scipy.stats")  # (the reference; installed with the test extras' jax)

import minijax
import minijax.scipy.stats as ms

K = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 5.0, 6.0], np.float32)  # counts, off-lattice ones too
X = np.array([-2.0, -0.3, 0.0, 0.7, 1.0, 2.5, 6.5], np.float32)
Q = np.array([0.0, 0.05, 0.5, 0.95, 1.0], np.float32)

CASES = [  # (name, function of the module, arguments, scipy's function)
    ("binom.logpmf", (K, 5.0, 0.3), ss.binom.logpmf), ("binom.pmf", (K, 5.0, 0.3), ss.binom.pmf),
    ("binom.pmf loc", (K, 5.0, 0.3, 1.0), ss.binom.pmf),
    # (poisson's lattice is that of k - loc: it read k's, so a half-integer loc gave 0)
    ("poisson.pmf loc", (K + 0.5, 2.0, 0.5), ss.poisson.pmf),
    ("geom.logpmf", (K, 0.3), ss.geom.logpmf), ("geom.pmf", (K, 0.3, -1.0), ss.geom.pmf),
    ("nbinom.logpmf", (K, 4.0, 0.3), ss.nbinom.logpmf), ("nbinom.pmf", (K, 2.5, 0.6), ss.nbinom.pmf),
    ("betabinom.pmf", (K, 5.0, 2.0, 3.0), ss.betabinom.pmf),
    ("betabinom.logpmf", (K, 5.0, 0.5, 1.5), ss.betabinom.logpmf),
    ("chi2.logpdf", (X, 3.0), ss.chi2.logpdf), ("chi2.pdf", (X, 2.5, 0.5, 2.0), ss.chi2.pdf),
    ("chi2.cdf", (X, 3.0), ss.chi2.cdf), ("chi2.sf", (X, 3.0), ss.chi2.sf),
    ("chi2.logcdf", (X[3:], 3.0), ss.chi2.logcdf), ("chi2.logsf", (X, 3.0), ss.chi2.logsf),
    ("pareto.logpdf", (X, 2.0), ss.pareto.logpdf), ("pareto.pdf", (X, 2.0, -1.0, 2.0), ss.pareto.pdf),
    ("pareto.cdf", (X, 2.0), ss.pareto.cdf), ("pareto.sf", (X, 2.0), ss.pareto.sf),
    ("pareto.logsf", (X, 3.0), ss.pareto.logsf), ("pareto.logcdf", (X[5:], 3.0), ss.pareto.logcdf),
    ("pareto.ppf", (Q, 2.0, 0.5, 3.0), ss.pareto.ppf),
    ("gennorm.logpdf", (X, 1.5), ss.gennorm.logpdf), ("gennorm.pdf", (X, 0.8), ss.gennorm.pdf),
    ("gennorm.cdf", (X, 1.5), ss.gennorm.cdf),
    ("gumbel_r.logpdf", (X, 0.5, 2.0), ss.gumbel_r.logpdf), ("gumbel_r.cdf", (X,), ss.gumbel_r.cdf),
    ("gumbel_r.logcdf", (X,), ss.gumbel_r.logcdf), ("gumbel_r.sf", (X,), ss.gumbel_r.sf),
    ("gumbel_r.logsf", (X,), ss.gumbel_r.logsf), ("gumbel_r.ppf", (Q, 1.0, 2.0), ss.gumbel_r.ppf),
    ("gumbel_l.logpdf", (X, 0.5, 2.0), ss.gumbel_l.logpdf), ("gumbel_l.cdf", (X,), ss.gumbel_l.cdf),
    ("gumbel_l.logcdf", (X,), ss.gumbel_l.logcdf), ("gumbel_l.sf", (X,), ss.gumbel_l.sf),
    ("gumbel_l.logsf", (X,), ss.gumbel_l.logsf), ("gumbel_l.ppf", (Q, 1.0, 2.0), ss.gumbel_l.ppf),
    ("vonmises.logpdf", (X, 2.0), ss.vonmises.logpdf), ("vonmises.pdf", (X, 40.0), ss.vonmises.pdf),
    ("wrapcauchy.logpdf", (X, 0.5), ss.wrapcauchy.logpdf),
    ("wrapcauchy.pdf", (X, 0.2), ss.wrapcauchy.pdf),
    ("truncnorm.logpdf", (X, -0.5, 4.0), ss.truncnorm.logpdf),
    ("truncnorm.pdf", (X, -1.0, 1.0, 0.5, 2.0), ss.truncnorm.pdf),
    ("truncnorm.cdf", (X, -0.5, 4.0), ss.truncnorm.cdf),
    ("truncnorm.sf", (X, -0.5, 4.0), ss.truncnorm.sf),
    ("truncnorm.logsf", (X, -0.5, 4.0), ss.truncnorm.logsf),
    ("truncnorm.logcdf", (X, -0.5, 4.0), ss.truncnorm.logcdf),
    # far in a tail: the masses are taken from the tail they are small in
    ("truncnorm.logpdf tail", (np.float32([-11.0, -10.0]), -12.0, -9.5), ss.truncnorm.logpdf),
    ("truncnorm.logcdf tail", (np.float32([9.6, 10.0, 11.0]), 9.5, 12.0), ss.truncnorm.logcdf),
    ("truncnorm.logsf tail", (np.float32([9.6, 10.0, 11.0]), 9.5, 12.0), ss.truncnorm.logsf),
    # parameters outside their domain give NaN, as scipy's, at every x (they answered)
    ("chi2.sf df<=0", (X, np.float32([-1, 0, -2, 0, -1, -3, 0])), ss.chi2.sf),
    ("chi2.logpdf df<=0", (X, np.float32([-1, 0, -2, 0, -1, -3, 0])), ss.chi2.logpdf),
    ("chi2.logcdf df<=0", (X, -1.0), ss.chi2.logcdf),
    ("vonmises.logpdf kappa<0", (X, -2.0), ss.vonmises.logpdf),
    ("vonmises.pdf kappa=0", (X, 0.0), ss.vonmises.pdf),
    ("gamma.sf a<=0", (X, np.float32([-1, 0, -2, 0, 1, -3, 0])), ss.gamma.sf),
    ("gamma.cdf a<=0", (X, np.float32([-1, 0, -2, 0, 1, -3, 0])), ss.gamma.cdf),
    ("gamma.logpdf a<=0", (X, np.float32([-1, 0, -2, 0, 1, -3, 0])), ss.gamma.logpdf),
    ("wrapcauchy.logpdf c outside (0, 1)", (X, np.float32([0, 1, -0.5, 1.5, 0, 1, 2])),
     ss.wrapcauchy.logpdf),
    ("truncnorm.cdf a>b", (X, 1.0, -1.0), ss.truncnorm.cdf),
    ("truncnorm.logpdf a=b", (X, 0.5, 0.5), ss.truncnorm.logpdf),
    ("truncnorm.logsf a>b", (X, 2.0, 1.0), ss.truncnorm.logsf),
]


@pytest.mark.parametrize("name,args,reference", CASES, ids=[c[0] for c in CASES])
def test_agrees_with_scipy(name, args, reference):
  module, function = name.split()[0].split(".")
  got = np.asarray(getattr(getattr(ms, module), function)(*args))
  want = reference(*(np.asarray(a, np.float64) for a in args))
  assert got.dtype == np.float32
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_densities_differentiate_and_batch():
  g = minijax.grad(lambda k: ms.chi2.logpdf(2.0, k))(3.0)
  eps = 1e-3
  numeric = (ss.chi2.logpdf(2.0, 3.0 + eps) - ss.chi2.logpdf(2.0, 3.0 - eps)) / (2 * eps)
  np.testing.assert_allclose(float(g), numeric, rtol=1e-3)
  batched = minijax.vmap(lambda b: ms.gumbel_r.cdf(X, 0.0, b))(np.float32([1.0, 2.0]))
  np.testing.assert_allclose(batched, [ss.gumbel_r.cdf(X, 0, s) for s in (1, 2)], rtol=1e-5)


def test_dirichlet_takes_points_along_the_first_axis():
  alpha = np.float32([1.0, 2.0, 3.0])
  points = np.float32([[0.2, 0.1], [0.3, 0.4], [0.5, 0.5]])
  exact = points.astype(np.float64) / points.astype(np.float64).sum(0)  # (scipy's check)
  np.testing.assert_allclose(ms.dirichlet.logpdf(points, alpha),
                             ss.dirichlet.logpdf(exact, alpha), rtol=1e-5)
  # K - 1 coordinates: the last is one less their sum (as JAX's)
  np.testing.assert_allclose(ms.dirichlet.logpdf(points[:2, 0], alpha),
                             ss.dirichlet.logpdf([0.2, 0.3, 0.5], alpha), rtol=1e-5)
  assert ms.dirichlet.logpdf(np.float32([0.2, 0.3, 0.6]), alpha) == -np.inf  # off the simplex
  np.testing.assert_allclose(ms.dirichlet.pdf(points, alpha), ss.dirichlet.pdf(exact, alpha),
                             rtol=1e-5)
  with pytest.raises(ValueError, match="one entry fewer"):
    ms.dirichlet.logpdf(np.ones(5, np.float32), alpha)


def test_mode_rankdata_and_sem_give_scipys_values_and_jaxs_types():
  a = np.array([[1, 2, 2], [3, 3, 1], [1, 3, 2]])
  got = ms.mode(a, axis=0)
  want = ss.mode(a, axis=0)
  assert isinstance(got, ms.ModeResult)
  assert got.mode.tolist() == want.mode.tolist() and got.count.tolist() == want.count.tolist()
  assert got.count.dtype == np.int32
  assert ms.mode(a, axis=1, keepdims=True).mode.shape == (3, 1)
  assert ms.mode(np.float32([3, 1, 1, 3, 2]), axis=None) == (1.0, 2)  # ties: the smallest
  v = np.float32([3, 1, 1, 3, 2, 7])
  for method in ("average", "min", "max", "dense", "ordinal"):
    got = ms.rankdata(v, method)
    assert got.dtype == np.float32, method  # (JAX's: floats for every method)
    np.testing.assert_array_equal(got, ss.rankdata(v, method), err_msg=method)
  m = np.float32([[3, 1, 2], [1, 1, 0]])
  np.testing.assert_array_equal(ms.rankdata(m, axis=1), ss.rankdata(m, axis=1))
  assert np.isnan(ms.rankdata(np.float32([1, np.nan, 2]))).all()
  s = np.arange(10.0, dtype=np.float32).reshape(2, 5)
  np.testing.assert_allclose(ms.sem(s, axis=1), ss.sem(s, axis=1), rtol=1e-6)
  np.testing.assert_allclose(ms.sem(s, axis=None, ddof=0), ss.sem(s, axis=None, ddof=0),
                             rtol=1e-6)
  with pytest.raises(NotImplementedError, match="nan_policy='propagate'"):
    ms.sem(s, nan_policy="omit")
  with pytest.raises(ValueError, match="unknown method"):
    ms.rankdata(v, "first")


def test_elementary_special_functions_agree_with_scipy():
  ssp = pytest.importorskip("scipy.special")
  import minijax.nn
  from minijax.scipy import special
  x = np.float32([-2.5, -1.0, 0.0, 0.5, 3.0])
  pos = np.abs(x)
  pairs = [
      (special.loggamma(x[3:]), ssp.loggamma(x[3:].astype(np.float64))),
      (special.poch(x, 2.0), ssp.poch(x.astype(np.float64), 2.0)),  # 0 at the pole, as scipy
      (special.boxcox(pos, 0.5), ssp.boxcox(pos, 0.5)), (special.boxcox(pos, 0.0), ssp.boxcox(pos, 0.0)),
      (special.boxcox1p(pos, -0.3), ssp.boxcox1p(pos, -0.3)),
      (special.comb(5.0, np.float32([-1, 0, 2, 6])), ssp.comb(5.0, [-1, 0, 2, 6])),
      (special.comb(5.0, np.float32([0, 2, 6]), repetition=True),
       ssp.comb(5, [0, 2, 6], repetition=True)),
      (special.bernoulli(8), ssp.bernoulli(8)),
      (minijax.nn.log1mexp(np.float32([0.1, 1.0, 10.0])), np.log(-np.expm1(-np.float64([0.1, 1, 10])))),
  ]
  for got, want in pairs:
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)
  assert special.loggamma(np.float32(0.0)) == np.inf and np.isnan(special.loggamma(np.float32(-1)))
  assert minijax.nn.log1mexp(np.float32(0.0)) == -np.inf


def test_erfcx_and_spence_agree_with_scipy_in_both_precisions():
  ssp = pytest.importorskip("scipy.special")
  from minijax.scipy import special
  x = np.float32([-3, -1, -0.2, 0, 0.5, 1.5, 1.99, 2.0, 3, 5, 10, 50, 1e4])
  np.testing.assert_allclose(special.erfcx(x), ssp.erfcx(x.astype(np.float64)), rtol=2e-6)
  s = np.float32([0, 1e-3, 0.1, 0.49, 0.5, 0.9, 1.1, 1.5, 1.99, 2, 2.01, 3, 10, 100, 1e4])
  np.testing.assert_allclose(special.spence(s), ssp.spence(s.astype(np.float64)), rtol=2e-6)
  assert special.spence(np.float32(1.0)) == 0.0 and np.isnan(special.spence(np.float32(-1.0)))
  assert np.isnan(special.spence(np.float32(np.inf)))  # (scipy's; minijax gave -inf)
  # dawsn under jit gave NaN from |x| = 1e10 on (its argument reduction lost it)
  big = np.float32([49.0, 50.0, 1e3, 1e10, -1e10, 3e38])
  np.testing.assert_allclose(minijax.jit(special.dawsn)(big), ssp.dawsn(big.astype(float)),
                             rtol=1e-6, atol=1e-38)  # (XLA flushes subnormals)
  eps = 1e-4
  np.testing.assert_allclose(float(minijax.grad(special.erfcx)(3.0)),
                             (ssp.erfcx(3 + eps) - ssp.erfcx(3 - eps)) / (2 * eps), rtol=1e-4)
  with minijax.enable_x64():
    y = np.array([0.5, 2.5, 7.0, 30.0])
    np.testing.assert_allclose(special.erfcx(y), ssp.erfcx(y), rtol=1e-14)
    z = np.array([0.1, 0.7, 1.3, 5.0])
    np.testing.assert_allclose(special.spence(z), ssp.spence(z), rtol=1e-14)


SPECIAL_MATRICES = [
    ("block_diag", (np.ones((1, 1)), np.arange(6.0).reshape(2, 3), 5.0)),
    ("circulant", (np.arange(4.0),)), ("companion", (np.array([2.0, 3.0, 4.0, 5.0]),)),
    ("convolution_matrix", (np.array([1.0, 2.0, 3.0]), 5)),
    ("convolution_matrix", (np.array([1.0, 2.0, 3.0]), 5, "same")),
    ("convolution_matrix", (np.array([1.0, 2.0, 3.0, 4.0]), 2, "same")),
    ("convolution_matrix", (np.array([1.0, 2.0, 3.0, 4.0]), 2, "valid")),
    ("dft", (3, "sqrtn")), ("hadamard", (8,)), ("hankel", (np.array([1.0, 2, 3]), np.array([3.0, 4, 5, 6]))),
    ("helmert", (5,)), ("helmert", (4, True)), ("hilbert", (4,)), ("invhilbert", (5,)),
    ("pascal", (5,)), ("pascal", (4, "upper")), ("invpascal", (5,)), ("invpascal", (4, "lower")),
    ("leslie", (np.array([0.1, 2.0, 1.0, 0.1]), np.array([0.2, 0.8, 0.7]))),
    ("fiedler", (np.array([1.0, 4.0, 12.0, 45.0]),)),
    # batches along leading axes, and scalars as vectors of one (each raised)
    ("companion", (np.array([[2.0, 3.0, 4.0], [1.0, -1.0, 0.5]]),)),
    ("convolution_matrix", (np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), 4, "same")),
    ("convolution_matrix", (np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), 2, "valid")),
    ("circulant", (2.0,)), ("toeplitz", (2.0,)), ("toeplitz", (np.arange(3.0), 5.0)),
    ("fiedler", (2.0,)),
]


@pytest.mark.parametrize("name,args", SPECIAL_MATRICES,
                         ids=[f"{n}{len(a)}" for n, a in SPECIAL_MATRICES])
def test_special_matrices_are_scipys(name, args):
  sl = pytest.importorskip("scipy.linalg")
  import minijax.scipy.linalg as ml
  got = np.asarray(getattr(ml, name)(*args))
  want = getattr(sl, name)(*args)
  assert got.shape == want.shape
  assert got.dtype == {"hadamard": np.int32, "dft": np.complex64}.get(name, np.float32)
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # (exact on the host: JAX's
  # lgamma-built pascal and invhilbert are off by a few ulps)


def test_companion_of_integers_is_computed_in_floats_and_hankel_wants_vectors():
  import minijax.scipy.linalg as ml
  got = ml.companion(np.array([2, 1, 4], np.uint8))  # JAX's -b/a (scipy wraps the uint8)
  np.testing.assert_array_equal(got, np.float32([[-0.5, -2], [1, 0]]))
  assert got.dtype == np.float32
  assert ml.fiedler_companion(np.float16(3)).dtype == np.float16
  with pytest.raises(ValueError, match="hankel: c and r must be at least one-dimensional"):
    ml.hankel(2.0)


def test_linalg_outer_takes_vectors_only():
  import minijax.numpy as jnp
  assert jnp.linalg.outer(np.ones(2), np.arange(3.0)).shape == (2, 3)
  with pytest.raises(ValueError, match="Input arrays must be one-dimensional"):
    jnp.linalg.outer(np.ones((2, 2)), np.ones(2))


def test_bessel_jn_stacks_the_orders_and_agrees_with_scipy():
  ssp = pytest.importorskip("scipy.special")
  from minijax.scipy import special
  z = np.float32([-3.0, 0.0, 1e-3, 0.1, 1.0, 5.0, 20.0])
  got = special.bessel_jn(z, v=4)
  assert got.shape == (5, 7) and got.dtype == np.float32
  want = np.array([ssp.jv(k, z.astype(np.float64)) for k in range(5)])
  np.testing.assert_allclose(got, want, atol=2e-7)  # (JAX's gives NaN for the small z)
  np.testing.assert_allclose(minijax.jit(lambda q: special.bessel_jn(q, v=1))(z)[1],
                             ssp.jv(1, z.astype(np.float64)), atol=2e-7)
  with pytest.raises(ValueError, match="v >= 0"):
    special.bessel_jn(z, v=-1)


def test_scipy_linalg_on_schur_and_hessenberg():
  sp_linalg = pytest.importorskip("scipy.linalg")
  import minijax.scipy.linalg as sl
  from minijax.lax import linalg as L
  rng = np.random.RandomState(0)
  a = rng.randn(4, 4)
  b, c = rng.randn(3, 3), rng.randn(4, 3)
  with minijax.enable_x64():
    t, z = sl.schur(a)
    np.testing.assert_allclose(z @ t @ z.T, a, atol=1e-12)
    assert np.allclose(np.tril(t, -2), 0)
    t, z = sl.schur(a, output="complex")
    np.testing.assert_allclose(z @ t @ np.conj(z.T), a, atol=1e-12)
    assert np.allclose(np.tril(t, -1), 0)
    h, q = sl.hessenberg(a, calc_q=True)
    np.testing.assert_allclose(q @ h @ q.T, a, atol=1e-12)
    np.testing.assert_allclose(h, sp_linalg.hessenberg(a), atol=1e-12)
    spd = a @ a.T + 4 * np.eye(4)
    np.testing.assert_allclose(sl.sqrtm(spd), sp_linalg.sqrtm(spd), atol=1e-10)
    np.testing.assert_allclose(sl.solve_sylvester(a, b, c), sp_linalg.solve_sylvester(a, b, c),
                               atol=1e-10)
    for side in ("right", "left"):
      for got, want in zip(sl.polar(a, side), sp_linalg.polar(a, side)):
        np.testing.assert_allclose(got, want, atol=1e-12)
      batch = np.stack([a, 2 * a.T])  # (it raised: the singular values scaled the rows)
      for got, want in zip(sl.polar(batch, side), sp_linalg.polar(2 * a.T, side)):
        np.testing.assert_allclose(got[1], want, atol=1e-12)
    tall, row = rng.randn(5, 3), rng.randn(2, 5)
    got, want = sl.qr_multiply(tall, row), sp_linalg.qr_multiply(tall, row)
    np.testing.assert_allclose(np.abs(got[1]), np.abs(want[1]), atol=1e-12)  # (signs free)
    np.testing.assert_allclose(got[0] @ got[1], want[0] @ want[1], atol=1e-12)
    e = rng.randn(4, 4)
    for got, want in zip(sl.expm_frechet(0.3 * a, e), sp_linalg.expm_frechet(0.3 * a, e)):
      np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    packed, taus = L.hessenberg(a[None])  # (a batch of one)
    np.testing.assert_allclose(L.householder_product(packed[:, 1:, :-1], taus)[0], q[1:, 1:],
                               atol=1e-12)


def test_expn_and_dawsn_against_scipy():
  ssp = pytest.importorskip("scipy.special")
  import minijax.scipy.special as msp
  with minijax.enable_x64():
    x = np.concatenate([np.linspace(-12, 12, 481), [0.0, 1e-3, 0.99, 1.01, 50.0]])
    np.testing.assert_allclose(msp.dawsn(x), ssp.dawsn(x), rtol=1e-13, atol=1e-300)
    for n in (0, 1, 2, 5, 30):
      x = np.concatenate([np.linspace(0, 5, 101)[1:], [0.999, 1.001, 20.0, 60.0]])
      np.testing.assert_allclose(msp.expn(n, x), ssp.expn(n, x), rtol=1e-13)
  x32 = np.linspace(-6, 6, 61).astype(np.float32)
  np.testing.assert_allclose(msp.dawsn(x32), ssp.dawsn(x32.astype(np.float64)), rtol=1e-6,
                             atol=1e-30)
  edge = msp.expn(np.array([1, 2, -1, 0]), np.array([0.0, 0.0, 1.0, 0.0], np.float32))
  np.testing.assert_array_equal(edge, ssp.expn([1, 2, -1, 0], [0.0, 0.0, 1.0, 0.0]))
  assert np.isnan(msp.expn(2.5, 1.0))
  np.testing.assert_allclose(minijax.grad(msp.dawsn)(np.float32(1.5)),
                             1 - 3 * ssp.dawsn(1.5), rtol=1e-5)
  np.testing.assert_allclose(minijax.grad(lambda x: msp.expn(2, x))(np.float32(1.5)),
                             -ssp.expn(1, 1.5), rtol=1e-5)


def test_sici_and_fresnel_against_scipy():
  ssp = pytest.importorskip("scipy.special")
  import minijax.scipy.special as msp
  with minijax.enable_x64():
    x = np.concatenate([np.linspace(-30, 30, 601), [1e-8, 1.49, 1.51, 1.999, 2.001, 100.0]])
    for name in ("sici", "fresnel"):
      for got, want in zip(getattr(msp, name)(x), getattr(ssp, name)(x)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    si, ci = msp.sici(0.0)
    assert si == 0 and ci == -np.inf
  x32 = np.linspace(-10, 10, 101).astype(np.float32)
  for got, want in zip(msp.fresnel(x32), ssp.fresnel(x32.astype(np.float64))):
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


def test_hyp1f1_and_its_gradients():
  ssp = pytest.importorskip("scipy.special")
  import minijax.scipy.special as msp
  rng = np.random.RandomState(0)
  with minijax.enable_x64():
    a, b, x = rng.uniform(0.1, 10, 200), rng.uniform(0.1, 10, 200), rng.uniform(-10, 30, 200)
    np.testing.assert_allclose(msp.hyp1f1(a, b, x), ssp.hyp1f1(a, b, x), rtol=1e-11)
    h = 1e-6
    for i in range(3):
      grads = minijax.vmap(minijax.grad(msp.hyp1f1, argnums=i))(a, b, x)
      up, down = [a, b, x], [a, b, x]
      up[i], down[i] = up[i] + h, down[i] - h
      np.testing.assert_allclose(grads, (ssp.hyp1f1(*up) - ssp.hyp1f1(*down)) / (2 * h),
                                 rtol=1e-5, atol=1e-8)
    assert msp.hyp1f1(0.0, 0.0, 2.0) == 1.0  # (JAX's convention)
    # a non-positive integer a: scipy's polynomial, for either sign of x, also where b is a
    # negative integer below a (these were NaN)
    a, b = np.array([-3.0, -2, -3, -3, -3, -4]), np.array([-3.0, -3, -5, 2, -3, -4.5])
    for x in (-3.0, 3.0, 0.5):
      np.testing.assert_allclose(msp.hyp1f1(a, b, x), ssp.hyp1f1(a, b, x), rtol=1e-12)
  # JAX 0.10.2's gradients at (1.5, 2.5, 0.7)
  np.testing.assert_allclose(minijax.grad(msp.hyp1f1, argnums=(0, 1, 2))(1.5, 2.5, 0.7),
                             [0.42270303, -0.26072598, 0.999878], rtol=2e-6)


def test_funm_and_eigh_tridiagonal_against_scipy():
  sp_linalg = pytest.importorskip("scipy.linalg")
  import minijax.numpy as jnp
  import minijax.scipy.linalg as sl
  rng = np.random.RandomState(0)
  a = rng.randn(4, 4)
  d, e = rng.randn(6), rng.randn(5)
  with minijax.enable_x64():
    for f, g in ((jnp.sin, np.sin), (jnp.exp, np.exp)):
      np.testing.assert_allclose(sl.funm(a, f), sp_linalg.funm(a, g), atol=1e-10)
    np.testing.assert_allclose(sl.eigh_tridiagonal(d, e, eigvals_only=True),
                               sp_linalg.eigh_tridiagonal(d, e, eigvals_only=True), atol=1e-12)
    np.testing.assert_allclose(
        sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3)),
        sp_linalg.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3)),
        atol=1e-12)
  with pytest.raises(NotImplementedError, match="eigvals_only=True"):
    sl.eigh_tridiagonal(d, e)


def test_fiedler_companion_against_scipy():
  sp_linalg = pytest.importorskip("scipy.linalg")
  import minijax.scipy.linalg as sl
  for coefficients in ([1.0, -16, 86, -176, 105], [2.0, 2, 3, 4, 5, 6], [1.0, 3, -1, 2, 5, 6, 7],
                       [2.0, 4]):
    a = np.array(coefficients, np.float32)
    np.testing.assert_allclose(sl.fiedler_companion(a), sp_linalg.fiedler_companion(a),
                               rtol=1e-6)
  p = np.poly(np.arange(1, 9, 2)).astype(np.float32)
  np.testing.assert_allclose(np.sort(np.linalg.eigvals(sl.fiedler_companion(p)).real),
                             [1, 3, 5, 7], rtol=1e-4)


def test_rsf2csf_against_scipy():
  sp_linalg = pytest.importorskip("scipy.linalg")
  import minijax.scipy.linalg as sl
  a = np.random.RandomState(0).randn(5, 5)  # (two complex pairs among its eigenvalues)
  t, z = sp_linalg.schur(a)
  with minijax.enable_x64():
    got_t, got_z = (np.asarray(v) for v in sl.rsf2csf(t, z))
  want_t, want_z = sp_linalg.rsf2csf(t, z)
  np.testing.assert_allclose(got_t, want_t, atol=1e-12)
  np.testing.assert_allclose(got_z, want_z, atol=1e-12)
  np.testing.assert_allclose(got_z @ got_t @ np.conj(got_z.T), a, atol=1e-12)
  with minijax.enable_x64():  # a batch (it raised)
    batch_t, batch_z = sl.rsf2csf(np.stack([np.eye(5), t]), np.stack([np.eye(5), z]))
  np.testing.assert_allclose(batch_t[1], want_t, atol=1e-12)
  np.testing.assert_allclose(batch_z[0], np.eye(5), atol=1e-12)


def test_multinomial_and_detrend_against_scipy():
  sg = pytest.importorskip("scipy.signal")
  import minijax.scipy.signal as msg
  p = np.array([0.2, 0.3, 0.5])
  np.testing.assert_allclose(ms.multinomial.logpmf(np.array([1, 2, 3]), 6, p),
                             ss.multinomial.logpmf([1, 2, 3], 6, p), rtol=1e-6)
  assert ms.multinomial.pmf(np.array([1, 2, 2]), 6, p) == 0  # (the counts must sum to n)
  with pytest.raises(ValueError, match="x and n must be of integer type"):
    ms.multinomial.logpmf(np.array([1.0, 2, 3]), 6, p)
  with minijax.enable_x64():
    x = np.arange(10.0) ** 2
    y = np.random.RandomState(0).randn(5, 7)
    # (pieces of two samples: a clamp on the spread halved their slope)
    for kw in ({}, {"type": "constant"}, {"bp": [4]}, {"bp": [3, 7]}, {"bp": [2, 3, 8]}):
      np.testing.assert_allclose(msg.detrend(x, **kw), sg.detrend(x, **kw), atol=1e-12)
    np.testing.assert_allclose(msg.detrend(y, axis=0), sg.detrend(y, axis=0), atol=1e-12)
    np.testing.assert_allclose(msg.detrend(y[:2], axis=0), sg.detrend(y[:2], axis=0), atol=1e-12)


def test_welch_csd_and_stft_against_scipy():
  sg = pytest.importorskip("scipy.signal")
  import minijax.scipy.signal as msg
  rng = np.random.RandomState(0)
  x, y = rng.randn(2, 600), rng.randn(2, 600)
  with minijax.enable_x64():
    for kw in ({}, {"nperseg": 64, "noverlap": 16, "nfft": 100}, {"scaling": "spectrum"},
               {"detrend": "linear", "window": "hamming"},
               {"return_onesided": False, "nperseg": 50}):
      for got, want in zip(msg.welch(x, fs=10.0, **kw), sg.welch(x, fs=10.0, **kw)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
      for got, want in zip(msg.csd(x, y, **kw), sg.csd(x, y, **kw)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    for kw in ({}, {"nperseg": 64, "noverlap": 16},
               {"boundary": None, "padded": False, "nperseg": 50}, {"nperseg": 51}):
      for got, want in zip(msg.stft(x, fs=10.0, **kw), sg.stft(x, fs=10.0, **kw)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    with pytest.warns(UserWarning, match="greater than input length"):  # (scipy's)
      want = sg.stft(x[:, :200])
    for got, want in zip(msg.stft(x[:, :200]), want):  # nperseg becomes the input's length
      np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    cube = rng.randn(40, 12, 2)  # the frequencies replace the transformed axis (axis=0 put
    for axis in (0, 1, -3):      # them after the other axes)
      got, want = msg.stft(cube, axis=axis, nperseg=8)[2], sg.stft(cube, axis=axis, nperseg=8)[2]
      assert got.shape == want.shape
      np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for kw in ({}, {"nperseg": 64, "noverlap": 16}, {"nperseg": 50}):
      z = sg.stft(x, fs=10.0, **kw)[2]
      for got, want in zip(msg.istft(z, fs=10.0, **kw), sg.istft(z, fs=10.0, **kw)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
  with pytest.raises(ValueError, match="The 'kaiser' window needs one or more parameters"):
    msg.welch(x, window="kaiser")  # (as scipy's get_window: kaiser needs its beta)


def test_wofz_against_scipy():
  ssp = pytest.importorskip("scipy.special")
  import minijax.scipy.special as msp
  rng = np.random.RandomState(0)
  with minijax.enable_x64():
    z = rng.uniform(-8, 8, 500) + 1j * rng.uniform(-3, 8, 500)  # (both half-planes)
    np.testing.assert_allclose(msp.wofz(z), ssp.wofz(z), rtol=1e-13)
    x = np.linspace(-10, 10, 41)
    np.testing.assert_allclose(msp.wofz(x), ssp.wofz(x), rtol=1e-13)
  z32 = (rng.uniform(-5, 5, 50) + 1j * rng.uniform(0, 5, 50)).astype(np.complex64)
  assert msp.wofz(z32).dtype == np.complex64
  np.testing.assert_allclose(msp.wofz(z32), ssp.wofz(z32.astype(complex)), rtol=2e-6)


def test_owens_t_against_scipy_with_its_derivatives(x64):
  import scipy.special as sp
  from minijax.scipy import special
  h, a = np.meshgrid(np.linspace(-8, 8, 41), [-20, -3, -1, -0.5, 0, 0.3, 0.67, 1, 1.1, 2, 50])
  ours, theirs = np.asarray(special.owens_t(h, a)), sp.owens_t(h, a)
  np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-300)
  dh, da = minijax.grad(special.owens_t, argnums=(0, 1))(0.7, 0.4)
  eps = 1e-6
  np.testing.assert_allclose(dh, (sp.owens_t(0.7 + eps, 0.4) - sp.owens_t(0.7 - eps, 0.4)) / (2 * eps), rtol=1e-7)
  np.testing.assert_allclose(da, (sp.owens_t(0.7, 0.4 + eps) - sp.owens_t(0.7, 0.4 - eps)) / (2 * eps), rtol=1e-7)
  assert np.isnan(special.owens_t(np.nan, 1.0))


def test_sph_harm_y_against_scipy(x64):
  import scipy.special as sp
  from minijax.scipy import special
  rng = np.random.RandomState(0)
  n = rng.randint(0, 12, 200)
  m = np.array([rng.randint(-k, k + 1) for k in n])
  theta, phi = rng.uniform(0, np.pi, 200), rng.uniform(0, 2 * np.pi, 200)
  np.testing.assert_allclose(special.sph_harm_y(n, m, theta, phi), sp.sph_harm_y(n, m, theta, phi),
                             atol=1e-13)
  jitted = minijax.jit(lambda n, m, t, p: special.sph_harm_y(n, m, t, p, n_max=5))
  np.testing.assert_allclose(jitted(np.array([3]), np.array([-2]), np.array([0.4]), np.array([1.0])),
                             [sp.sph_harm_y(3, -2, 0.4, 1.0)], atol=1e-14)
  with pytest.raises(NotImplementedError, match="diff_n"):
    special.sph_harm_y(1, 0, 0.1, 0.2, diff_n=1)


def test_lpmn_and_lpmn_values_against_scipy_with_exact_slopes_at_the_poles(x64):
  # JAX's deprecated associated Legendre functions (e3nn-jax's spherical harmonics read
  # lpmn_values): [m, l, z] arrays, Condon-Shortley phase, as scipy's assoc_legendre_p_all
  import scipy.special as sp
  from minijax.scipy import special
  z = np.r_[np.linspace(-0.99, 0.99, 23), -1.0, 1.0]
  with pytest.warns(DeprecationWarning, match="lpmn is deprecated"):
    p, d = special.lpmn(5, 5, z)
  values, slopes = sp.assoc_legendre_p_all(5, 5, z, diff_n=1)
  np.testing.assert_allclose(p, np.transpose(values[:, :6], (1, 0, 2)), rtol=1e-13, atol=1e-13)
  np.testing.assert_allclose(d[..., :-2], np.transpose(slopes[:, :6, :-2], (1, 0, 2)), rtol=1e-10)
  # at z = 1: P_l' = l (l + 1) / 2, P_l^1' infinite, P_l^2' = -(l - 1) l (l + 1) (l + 2) / 4
  np.testing.assert_array_equal(d[0, :, -1], [0, 1, 3, 6, 10, 15])
  assert np.isposinf(d[1, 1:, -1]).all()
  np.testing.assert_array_equal(d[2, 2:, -1], [-6, -30, -90, -210])
  np.testing.assert_array_equal(d[3:, :, -1], 0)
  norm = np.array([[np.sqrt((2 * l + 1) / (4 * np.pi) * sp.factorial(l - m) / sp.factorial(l + m))
                    if m <= l else 0 for l in range(6)] for m in range(6)])
  with pytest.warns(DeprecationWarning, match="lpmn_values is deprecated"):
    normalized = minijax.jit(lambda z: special.lpmn_values(5, 5, z, True))(z)
  np.testing.assert_allclose(normalized, p * norm[..., None], rtol=1e-12, atol=1e-14)
  with pytest.raises(NotImplementedError, match="m!=n"):
    special.lpmn(2, 3, z)
  with pytest.raises(ValueError, match="z must be a 1D array"):
    special.lpmn_values(2, 2, z.reshape(5, 5), False)
  with pytest.raises(TypeError, match="z.dtype=int"):
    special.lpmn(2, 2, np.arange(3))


def test_hyp2f1_against_scipy_on_every_region(x64):
  import scipy.special as sp
  from minijax.scipy import special
  rng = np.random.RandomState(0)
  a, b, c, x = (rng.uniform(-3, 3, 300), rng.uniform(-3, 3, 300), rng.uniform(-3, 4, 300),
                rng.uniform(-5, 1, 300))
  a[:20] = np.round(a[:20])                    # terminating series
  b[20:40] = -np.round(np.abs(b[20:40]))
  x[40:60] = rng.uniform(0.9, 0.999, 20)       # the transformation to 1 - x
  x[60:65] = 1.0                               # Gauss's sum
  theirs = sp.hyp2f1(a, b, c, x)
  finite = np.isfinite(theirs) & (np.abs(theirs) < 1e12)
  ours = np.asarray(special.hyp2f1(a, b, c, x))
  np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-10, atol=1e-12)
  cases = [(1, 1, 2, 0.95), (0.5, 0.5, 1, 0.97), (-3, 2, -5, 0.5), (1, 1, 2, -20.0), (1, 2, -3, 0.2),
           (1, 1, 2, 1.5)]
  got = [float(special.hyp2f1(*case)) for case in cases]
  np.testing.assert_allclose(got[:4], [sp.hyp2f1(*case) for case in cases[:4]], rtol=1e-12)
  assert got[4] == np.inf and np.isnan(got[5])  # a pole at c = -3; complex above x = 1
  np.testing.assert_allclose(minijax.grad(special.hyp2f1, argnums=3)(0.5, 1.5, 2.5, 0.3),
                             0.5 * 1.5 / 2.5 * sp.hyp2f1(1.5, 2.5, 3.5, 0.3), rtol=1e-12)
  with pytest.raises(NotImplementedError, match="differentiate in x only"):
    minijax.grad(special.hyp2f1)(0.5, 1.5, 2.5, 0.3)


def test_special_functions_at_the_edges_the_sweep_found_are_jaxs():
  # recorded from JAX 0.10.2 (and scipy): all of the incomplete beta's mass sits at x = 0
  # when a = 0 and at x = 1 when b = 0; 1F1 is infinite at b = 0; poch(z, 0) = 1
  from minijax.scipy import special as sp
  f = np.float32
  assert [float(sp.betainc(f(a), f(b), f(x))) for a, b, x in
          [(0, 1, .5), (0, 1, 0), (0, 1, 1), (1, 0, .5), (1, 0, 1), (0, 2, .3), (2, 0, .3)]] == [
              1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
  assert np.isnan(float(sp.betainc(f(0), f(0), f(.5))))
  assert [float(sp.hyp1f1(f(a), f(b), f(x))) for a, b, x in
          [(1, 0, 1), (0, 0, 1), (2, 0, -1), (1, 0, 0), (2, -3, 0)]] == [np.inf, 1.0, np.inf,
                                                                          np.inf, 1.0]
  assert [float(sp.poch(f(z), f(0))) for z in (0, -1, 3, np.nan)] == [1.0] * 4
  s, c = sp.fresnel(np.float16(0.5))
  assert s.dtype == np.float16 and abs(float(s) - 0.06476) < 1e-3 and abs(float(c) - 0.49243) < 1e-3
  si, ci = sp.sici(np.float16(0.5))
  assert si.dtype == np.float16 and abs(float(si) - 0.49307) < 1e-3 and abs(float(ci) + 0.17778) < 1e-3


def test_special_functions_defined_for_complex_numbers_take_them():
  # recorded from JAX 0.10.2
  from minijax.scipy import special as sp
  z = np.array([0.5 + 0.5j, 2 - 1j], np.complex64)
  for fn, expected in [(sp.logit, [1.5708j, 0.45815 - 2.81984j]),
                       (sp.erfcx, [0.53316 - 0.23049j, 0.21849 + 0.093j]),
                       (lambda v: sp.xlogy(v, v), [-0.56599 + 0.21941j, 1.14579 - 1.73201j]),
                       (lambda v: sp.boxcox(v, v), [-0.32223 + 0.5694j, 0.0189 - 1.54262j])]:
    out = fn(z)
    assert out.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(out), expected, atol=2e-5)
  with pytest.raises(ValueError, match="gammaln does not support complex-valued inputs"):
    sp.gammaln(z)


def test_complex_loggamma_is_scipys_principal_branch():
  ssp = pytest.importorskip("scipy.special")
  from minijax.scipy import special as sp
  rng = np.random.RandomState(0)
  z = np.concatenate([rng.randn(400) * 10 + 1j * rng.randn(400) * 10,  # both half planes,
                      rng.randn(50) * 3 + 0.01j, [1e-3 + 1e-3j, 100 + 100j, -100.3 + 1j, 3j]])
  with minijax.enable_x64():  # (the reflection left of 1/2, Stirling's series to the right)
    np.testing.assert_allclose(sp.loggamma(z), ssp.loggamma(z), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(sp.gamma(z[:100] / 5), ssp.gamma(z[:100] / 5), rtol=1e-12)
  got = sp.loggamma(z.astype(np.complex64))
  assert got.dtype == np.complex64
  np.testing.assert_allclose(got, ssp.loggamma(z), rtol=5e-6, atol=5e-6)
  assert np.isnan(np.asarray(sp.loggamma(np.complex64([0, -3])))).all()  # the poles
  # JAX 0.10.2's values, recorded
  np.testing.assert_allclose(sp.gamma(np.complex64([1 + 1j, -5.5 + 2j])),
                             [0.4980159 - 0.1549497j, -5.0125098e-05 - 2.6087035e-05j], rtol=5e-6)


def test_gradients_outside_the_support_are_jaxs():
  from minijax.scipy import special as sp
  # gamma.cdf below 0 is flat: gradient 0 (it was NaN for a < 1, through igamma at 0)
  grad_cdf = minijax.grad(lambda x: ms.gamma.cdf(x, 0.5))
  assert float(grad_cdf(-1.0)) == 0.0
  assert np.isnan(float(ms.gamma.cdf(-1.0, -0.5)))  # (a <= 0: NaN below 0 too, as JAX)
  np.testing.assert_allclose(grad_cdf(1.0), ss.gamma.pdf(1.0, 0.5), rtol=1e-5)
  # E1's derivative is NaN where E1 is (x < 0), -e^-x / x elsewhere
  assert np.isnan(float(minijax.grad(sp.exp1)(-1.0)))
  np.testing.assert_allclose(minijax.grad(sp.exp1)(0.5), -np.exp(-0.5) / 0.5, rtol=1e-6)
  # kl_div's - p + q holds everywhere: JAX 0.10.2's (-1, 1) where p <= 0 or q <= 0
  for p, q in [(0.0, 1.0), (-1.0, 2.0), (1.0, -1.0)]:
    assert [float(g) for g in minijax.grad(sp.kl_div, argnums=(0, 1))(p, q)] == [-1.0, 1.0]
  np.testing.assert_allclose(minijax.grad(sp.kl_div, argnums=(0, 1))(2.0, 1.0),
                             [np.log(2.0), -1.0], rtol=1e-6)


def test_the_edges_the_stats_probe_found(x64):
  # the Cauchy quantile's derivative at the median is π scale (it was 0: a `where` pinned
  # the median's value and cut its gradient)
  for fn, sign in ((ms.cauchy.ppf, 1), (ms.cauchy.isf, -1)):
    g = minijax.grad(fn)(0.5, 0.0, 2.0)
    np.testing.assert_allclose(g, sign * 2 * np.pi, rtol=1e-6)
  q = np.array([1e-6, 0.1, 0.3, 0.5, 0.7, 0.9, 1 - 1e-6])
  np.testing.assert_allclose(ms.cauchy.ppf(q), ss.cauchy.ppf(q), rtol=1e-12)
  # the Cauchy tails keep their relative precision and end at 0 (JAX's: 3.1888e-06 at -1e5)
  x = np.array([-np.inf, -1e30, -1e5, -3.0, 0.0, 3.0, 1e5, np.inf])
  np.testing.assert_allclose(ms.cauchy.cdf(x), ss.cauchy.cdf(x), rtol=1e-12)
  np.testing.assert_allclose(ms.cauchy.logsf(x), ss.cauchy.logsf(x), rtol=1e-12)
  np.testing.assert_allclose(ms.cauchy.cdf(x.astype(np.float32)), ss.cauchy.cdf(x), rtol=3e-7)
  # a density at NaN is NaN (the gamma's was 0, and so the chi-squared's)
  for density in (ms.gamma.pdf(np.nan, 2.5), ms.chi2.pdf(np.nan, 3.0),
                  ms.gamma.logpdf(np.nan, 2.5)):
    assert np.isnan(density)
  assert ms.gamma.logpdf(-1.0, 2.5) == -np.inf
  # the normal's quantiles come in the default float dtype, as JAX's
  assert ms.norm.ppf(np.float32(0.3)).dtype == np.float64
  below = ms.pareto.cdf(0.5, 1.5, 0.1, 0.5)
  assert below == 0 and not np.signbit(below)
  with pytest.raises(ValueError, match="x.dtype=float64, n.dtype=float64"):
    ms.multinomial.logpmf(np.array([2.0, 3.0, 5.0]), 10, np.array([0.2, 0.3, 0.5]))
  p32 = np.float32([0.2, 0.3, 0.5])
  assert ms.multinomial.logpmf(np.array([2, 3, 5]), 10, p32).dtype == np.float32
  assert ms.mode(np.array([1, 1, 2])).count.dtype == np.int64
