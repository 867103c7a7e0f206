"""minijax.nn: activations against numpy formulas and against float32 values recorded from
JAX 0.10.2 (to the bit), softmax / log_softmax / logsumexp with axes, masks and signs,
one_hot, standardize, the custom derivatives of relu and relu6, gradients to second order
and vmap; the initializers are in test_nn_initializers.py."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minijax
from minijax import nn

from tests.transform_checks import GradCheck, VmapCheck, run_together
from tests.ulps import assert_within_ulps

pytestmark = pytest.mark.usefixtures("x64_off")

X = np.array([-6.0, -2.5, -1.0, -0.25, 0.0, 0.3, 1.0, 2.5, 7.0], np.float32)
_erf = np.vectorize(math.erf)


def _sig(x):
  return 1 / (1 + np.exp(-x))


def _softplus(x):
  return np.logaddexp(x, 0)


# name -> (function, numpy reference in float64)
ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, _sig),
    "softplus": (nn.softplus, _softplus),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -_softplus(-x)),
    "silu": (nn.silu, lambda x: x * _sig(x)),
    "swish": (nn.swish, lambda x: x * _sig(x)),
    "mish": (nn.mish, lambda x: x * np.tanh(_softplus(x))),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "elu_alpha": (lambda x: nn.elu(x, 0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "celu": (lambda x: nn.celu(x, 2.0), lambda x: np.maximum(x, 0) + 2 * np.expm1(
        np.minimum(x, 0) / 2)),
    "selu": (nn.selu, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(x))),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "leaky_relu_slope": (lambda x: nn.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "gelu_tanh": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (
        x + 0.044715 * x ** 3)))),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False),
                   lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    "sparse_plus": (nn.sparse_plus, lambda x: np.where(x <= -1, 0, np.where(
        x >= 1, x, (x + 1) ** 2 / 4))),
    "sparse_sigmoid": (nn.sparse_sigmoid, lambda x: np.clip(x + 1, 0, 2) / 2),
    "identity": (nn.identity, lambda x: x),
    "tanh": (nn.tanh, np.tanh),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_matches_its_formula_eagerly_and_under_jit(name):
  fn, ref = ACTIVATIONS[name]
  out = fn(X)
  assert out.dtype == np.float32 and out.shape == X.shape
  np.testing.assert_allclose(out, ref(X.astype(np.float64)), rtol=2e-6, atol=1e-7)
  np.testing.assert_array_equal(minijax.jit(fn)(X), out)


# float32 outputs of jax.nn on X, recorded from jax 0.10.2
JAX_VALUES = {
    "softplus": (nn.softplus, [0.0024756852071732283, 0.07888973504304886, 0.3132616877555847,
                               0.575939416885376, 0.6931471824645996, 0.8543552756309509,
                               1.3132617473602295, 2.578889846801758, 7.000911235809326]),
    "gelu": (nn.gelu, [-0.0, -0.015084296464920044, -0.15880796313285828, -0.10032464563846588,
                       0.0, 0.18537092208862305, 0.8411920070648193, 2.4849157333374023, 7.0]),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False),
                   [-5.9195377488663325e-09, -0.015524164773523808, -0.15865527093410492,
                    -0.10032342374324799, 0.0, 0.1853734254837036, 0.8413447141647339,
                    2.48447585105896, 7.0]),
    "selu": (nn.selu, [-1.7537413835525513, -1.613785743713379, -1.1113307476043701,
                       -0.38889017701148987, 0.0, 0.3152103126049042, 1.0507010221481323,
                       2.6267526149749756, 7.354907035827637]),
    "log_sigmoid": (nn.log_sigmoid, [-6.002475738525391, -2.578889846801758,
                                     -1.3132617473602295, -0.825939416885376,
                                     -0.6931471824645996, -0.554355263710022,
                                     -0.3132616877555847, -0.07888973504304886,
                                     -0.000911466486286372]),
    "silu": (nn.silu, [-0.014835737645626068, -0.1896454393863678, -0.2689414322376251,
                       -0.10945587605237961, 0.0, 0.172332763671875, 0.7310585975646973,
                       2.310354471206665, 6.993622779846191]),
    "mish": (nn.mish, [-0.014854079112410545, -0.19681617617607117, -0.3034014403820038,
                       -0.12992696464061737, 0.0, 0.20800136029720306, 0.8650984764099121,
                       2.4713923931121826, 6.999989032745361]),
    "log_softmax": (nn.log_softmax, [-13.01671314239502, -9.51671314239502, -8.01671314239502,
                                     -7.266712665557861, -7.016712665557861,
                                     -6.716712474822998, -6.016712665557861,
                                     -4.516712665557861, -0.016712890937924385]),
    "softmax": (nn.softmax, [2.2228666693990817e-06, 7.361123425653204e-05,
                             0.00032990265754051507, 0.0006984039209783077,
                             0.0008967684116214514, 0.0012105109635740519,
                             0.0024376693181693554, 0.010924875736236572, 0.9834259748458862]),
    "logsumexp": (nn.logsumexp, 7.016712665557861),
}


@pytest.mark.parametrize("name", list(JAX_VALUES))
def test_values_equal_those_recorded_from_jax(name):
  fn, expected = JAX_VALUES[name]
  # (XLA's code generation may round the last bit differently on another CPU)
  got = fn(X)
  assert_within_ulps(got, np.asarray(expected, np.float32).reshape(np.shape(got)), 4, what=name)


def test_standardize_matches_numpy_and_checks_its_algorithm():
  x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
  for axis in (-1, 0, None, (0, 1)):
    for algorithm in ("fast", "stable"):
      mean = x.mean(axis=axis, keepdims=True)
      expected = (x - mean) / np.sqrt(x.var(axis=axis, keepdims=True) + 1e-5)
      np.testing.assert_allclose(nn.standardize(x, axis, algorithm=algorithm), expected,
                                 rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(nn.standardize(x, 0, mean=1.0, variance=4.0, epsilon=0.0),
                             (x - 1) / 2, rtol=1e-6)
  masked = nn.standardize(x, -1, where=x < 20)
  row = x[1][x[1] < 20]
  np.testing.assert_allclose(masked[1], (x[1] - row.mean()) / np.sqrt(row.var() + 1e-5),
                             rtol=1e-5)
  with pytest.raises(ValueError, match="Unknown algorithm 'exact'"):
    nn.standardize(x, algorithm="exact")


def _np_softmax(x, axis):
  e = np.exp(x - x.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)


def test_softmax_family_along_axes_and_with_masks():
  x = np.cos(np.arange(24.0)).reshape(2, 3, 4).astype(np.float32) * 3
  for axis in (-1, 0, (1, 2), None):
    np.testing.assert_allclose(nn.softmax(x, axis), _np_softmax(x, axis), rtol=1e-6)
    np.testing.assert_allclose(nn.log_softmax(x, axis), np.log(_np_softmax(x, axis)),
                               rtol=1e-5, atol=1e-6)
    ref = np.log(np.exp(x.astype(np.float64)).sum(axis=axis))
    np.testing.assert_allclose(nn.logsumexp(x, axis), ref, rtol=1e-6)
  mask = x > 0
  sm = np.asarray(nn.softmax(x, where=mask))
  assert np.all(sm[~mask] == 0)
  e = np.where(mask, np.exp(x), 0)
  np.testing.assert_allclose(sm, e / e.sum(-1, keepdims=True), rtol=1e-6)
  lsm = np.asarray(nn.log_softmax(x, where=mask))
  assert np.all(lsm[~mask] == -np.inf)
  np.testing.assert_allclose(lsm[mask], np.log(sm[mask]), rtol=1e-5)
  np.testing.assert_allclose(nn.logsumexp(x, axis=1, keepdims=True),
                             np.log(np.exp(x).sum(1, keepdims=True)), rtol=1e-6)
  np.testing.assert_allclose(nn.logmeanexp(x, axis=0), np.log(np.exp(x).mean(0)), rtol=1e-6)


def test_logsumexp_with_scale_factors_and_signs():
  a = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 3.0]], np.float32)
  b = np.array([[1.0, -2.0, 0.5], [-1.0, 0.0, 0.1]], np.float32)
  sums = (b * np.exp(a)).sum(1)
  out, sign = nn.logsumexp(a, axis=1, b=b, return_sign=True)
  np.testing.assert_allclose(out, np.log(np.abs(sums)), rtol=1e-5)
  np.testing.assert_array_equal(sign, np.sign(sums))
  plain = np.asarray(nn.logsumexp(a, axis=1, b=b))
  assert np.isnan(plain[sums < 0]).all()
  np.testing.assert_allclose(plain[sums > 0], np.log(sums[sums > 0]), rtol=1e-6)
  assert nn.logsumexp(np.array([-np.inf, -np.inf], np.float32)) == -np.inf


def test_relu_and_relu6_have_zero_derivatives_at_their_kinks():
  g = minijax.vmap(minijax.grad(nn.relu))(np.array([-1.0, 0.0, 1.0], np.float32))
  np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])
  g6 = minijax.vmap(minijax.grad(nn.relu6))(np.array([-1.0, 0.0, 3.0, 6.0, 7.0], np.float32))
  np.testing.assert_array_equal(g6, [0.0, 0.0, 1.0, 0.0, 0.0])
  assert minijax.grad(nn.hard_sigmoid)(-3.0) == 0.0


def test_one_hot():
  np.testing.assert_array_equal(nn.one_hot(np.array([0, 2, 5, -1]), 4),
                                np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0],
                                          [0, 0, 0, 0]], np.float32))
  out = nn.one_hot(np.array([[0, 1]]), 3, axis=0)
  assert out.shape == (3, 1, 2) and out.dtype == np.float32
  np.testing.assert_array_equal(out[:, 0, :], [[1, 0], [0, 1], [0, 0]])
  assert nn.one_hot(np.array([1]), 2, dtype=np.int32).dtype == np.int32
  traced = minijax.jit(lambda i: nn.one_hot(i, 3))(np.array([2, 0]))
  np.testing.assert_array_equal(traced, [[0, 0, 1], [1, 0, 0]])


def test_glu_splits_its_axis_in_two():
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 4
  np.testing.assert_allclose(nn.glu(x), x[:, :2] * _sig(x[:, 2:]), rtol=1e-6)
  np.testing.assert_allclose(nn.glu(x[:2], axis=0), x[:1] * _sig(x[1:2]), rtol=1e-6)
  with pytest.raises(ValueError, match="must have an even size"):
    nn.glu(x[:3], axis=0)


# gradients to second order (float64) and vmap
_G = np.array([-2.2, -0.7, 0.4, 1.3, 3.1])
_M = np.cos(np.arange(12.0)).reshape(3, 4) * 2
GRADS = {
    "softplus": (nn.softplus, (_G,)),
    "gelu": (nn.gelu, (_G,)),
    "gelu_exact": (lambda x: nn.gelu(x, False), (_G,)),
    "selu": (nn.selu, (_G,)),
    "celu": (lambda x: nn.celu(x, 0.7), (_G,)),
    "mish": (nn.mish, (_G,)),
    "log_sigmoid": (nn.log_sigmoid, (_G,)),
    "softmax": (lambda x: nn.softmax(x, axis=0), (_M,)),
    "softmax_masked": (lambda x: nn.softmax(x, where=_M > -1), (_M,)),
    "log_softmax": (nn.log_softmax, (_M,)),
    "logsumexp": (lambda x: nn.logsumexp(x, axis=1), (_M,)),
    "logsumexp_b": (lambda x, b: nn.logsumexp(x, axis=0, b=b), (_M, np.abs(_M) + 0.5)),
    "standardize": (lambda x: nn.standardize(x, algorithm="stable"), (_M,)),
    "glu": (nn.glu, (_M,)),
}


@pytest.fixture(scope="module")
def grad_results():
  import minijax as mj
  previous = mj.config.enable_x64
  mj.config.update("enable_x64", True)
  try:
    checks = {k: GradCheck(f, tuple(np.asarray(a, np.float64) for a in args), order=2)
              for k, (f, args) in GRADS.items()}
    checks.update({f"vmap_{k}": VmapCheck(f, [np.asarray(a, np.float32) for a in args],
                                          [([0] * len(args), 0), ([-1] * len(args), -1)])
                   for k, (f, args) in GRADS.items()})
    yield checks, run_together(checks)
  finally:
    mj.config.update("enable_x64", previous)


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_to_second_order_and_vmap(name, grad_results, x64):
  checks, results = grad_results
  for key in (name, f"vmap_{name}"):
    if key in results:
      checks[key].verify(results[key])
    else:
      checks[key].run()


def test_softplus_and_logaddexp_derivatives_are_nan_at_nan_and_jaxs_at_infinities():
  # JAX 0.10.2's: d logaddexp(a, b) = e^(a - out) da + e^(b - out) db, +inf read as 0
  import minijax.numpy as jnp
  nan, inf = np.nan, np.inf
  cases = [((nan, 0.0), (nan, nan)), ((0.0, nan), (nan, nan)), ((-inf, 0.0), (0.0, 1.0)),
           ((inf, 0.0), (1.0, 1.0)), ((inf, inf), (1.0, 1.0)), ((-inf, -inf), (nan, nan))]
  for (a, b), want in cases:
    a, b = np.float32(a), np.float32(b)
    got = [minijax.jvp(jnp.logaddexp, (a, b), t)[1] for t in ((np.float32(1), np.float32(0)),
                                                           (np.float32(0), np.float32(1)))]
    np.testing.assert_array_equal(got, np.float32(want), err_msg=str((a, b)))
  x = np.array([np.nan, 1.0, -2.0], np.float32)
  tangent = minijax.jvp(nn.softplus, (x,), (np.ones(3, np.float32),))[1]
  np.testing.assert_allclose(tangent, [np.nan, 0.7310586, 0.11920292], rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(lambda x: nn.log_sigmoid(x).sum())(x),
                             [np.nan, 0.26894143, 0.8807971], rtol=1e-6)


def _attention_reference(q, k, v, keep, scale):
  """numpy's float64 attention over BTNH queries and BSKH keys/values, `keep` BNTS."""
  b, t, n, h = q.shape
  kh = k.shape[2]
  k, v = np.repeat(k, n // kh, axis=2), np.repeat(v, n // kh, axis=2)
  logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
  logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
  probs = np.exp(logits - logits.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  residual = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
  return np.einsum("bnts,bsnh->btnh", probs, v), residual.transpose(0, 2, 1)


@pytest.mark.parametrize("case", ["plain", "grouped", "causal", "mask", "lengths", "window"])
def test_dot_product_attention_against_numpy(case):
  rng = np.random.default_rng(0)
  b, t, s, n, kh, h = 2, 5, 6, 4, (1 if case == "grouped" else 2), 8
  q = rng.standard_normal((b, t, n, h)).astype(np.float32)
  k, v = (rng.standard_normal((b, s, kh, h)).astype(np.float32) for _ in range(2))
  keep = np.ones((b, n, t, s), bool)
  kw = {}
  ti, si = np.arange(t)[:, None], np.arange(s)[None]
  if case == "causal":
    kw["is_causal"] = True
    keep &= si <= ti
  if case == "mask":
    kw["mask"] = rng.random((b, 1, t, s)) > 0.3
    keep &= kw["mask"]
  if case == "lengths":
    kw.update(query_seq_lengths=np.array([3, 5], np.int32),
              key_value_seq_lengths=np.array([2, 6], np.int32))
    keep &= (si < kw["key_value_seq_lengths"][:, None, None, None])
    keep &= (ti < kw["query_seq_lengths"][:, None, None, None])
  if case == "window":
    kw["local_window_size"] = (2, 0)
    keep &= (ti - 2 <= si) & (si <= ti)
  out, residual = nn.dot_product_attention(q, k, v, return_residual=True, **kw)
  want, want_residual = _attention_reference(q.astype(np.float64), k, v, keep, 1 / np.sqrt(h))
  if case == "lengths":  # padded queries give zeros
    want *= (np.arange(t)[None, :] < kw["query_seq_lengths"][:, None])[:, :, None, None]
  np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(residual, want_residual, rtol=2e-5, atol=2e-6)


def test_dot_product_attention_shapes_precision_and_errors():
  rng = np.random.default_rng(1)
  q = rng.standard_normal((5, 4, 8)).astype(np.float32)  # TNH, no batch
  k = rng.standard_normal((6, 2, 8)).astype(np.float32)
  out, residual = nn.dot_product_attention(q, k, k, return_residual=True)
  assert out.shape == (5, 4, 8) and residual.shape == (5, 4)
  # a row that nothing may attend to spreads evenly; its logsumexp is JAX's large negative
  masked, lse = nn.dot_product_attention(q, k, k, mask=np.zeros((1, 1, 5, 6), bool),
                                         return_residual=True)
  np.testing.assert_allclose(masked, np.broadcast_to(np.repeat(k, 2, 1).mean(0), (5, 4, 8)),
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(lse, -0.7 * np.finfo(np.float32).max, rtol=1e-6)
  half = nn.dot_product_attention(q.astype("bfloat16"), k.astype("bfloat16"),
                                  k.astype("bfloat16"))
  assert half.dtype == np.dtype("bfloat16")
  np.testing.assert_allclose(np.asarray(half, np.float32), out, rtol=0.05, atol=0.05)
  grad = minijax.grad(lambda q: nn.dot_product_attention(q, k, k).sum())(q)
  assert grad.shape == q.shape and np.isfinite(grad).all()
  with pytest.raises(ValueError, match="multiple of key/value heads"):
    nn.dot_product_attention(q[:, :3], k, k)
  with pytest.raises(ValueError, match="value dtype should be float32"):
    nn.dot_product_attention(q, k, k.astype(np.float16))
  with pytest.raises(RuntimeError, match="cuDNN is not detected"):  # (JAX's, without a GPU)
    nn.dot_product_attention(q, k, k, implementation="cudnn")
  with pytest.raises(ValueError, match="Unsupported implementation option: foo"):
    nn.dot_product_attention(q, k, k, implementation="foo")


def test_softmax_differentiates_through_its_operations_by_default_as_jax_0_10_2():
  # JAX 0.10.2's jax_softmax_custom_jvp is off: the gradient flows through exp, sum and
  # divide with the maximum held constant; on, softmax's own tangent rule is used
  x = np.array([0.3, 0.6, -0.3], np.float32)
  names = [e.primitive.name for e in minijax.make_jaxpr(nn.softmax)(x).eqns]
  assert "stop_gradient" in names and "custom_jvp_call" not in names
  grad = minijax.grad(lambda x: nn.softmax(x)[0])(x)
  minijax.config.update("softmax_custom_jvp", True)
  try:
    names = [e.primitive.name for e in minijax.make_jaxpr(nn.softmax)(x).eqns]
    assert names == ["custom_jvp_call"]
    np.testing.assert_allclose(minijax.grad(lambda x: nn.softmax(x)[0])(x), grad, rtol=1e-6)
  finally:
    minijax.config.update("softmax_custom_jvp", False)
  y = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
  np.testing.assert_allclose(grad, y[0] * (np.eye(3)[0] - y), rtol=1e-5)
