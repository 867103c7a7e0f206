"""minijax.example_libraries: each optimizer's updates against the same update written in
numpy here and against values recorded from JAX's example_libraries on a fixed problem; the
optimizer state as a pytree (jit, pack/unpack); schedules; stax layers' shapes and forward
values against numpy, and a network's init params and outputs equal to JAX's for one key."""
from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import random, tree_util
from minijax.example_libraries import optimizers, stax
from tests.ulps import assert_within_ulps

pytestmark = pytest.mark.usefixtures("x64_off")

# ----------------------------------------------------------------------------- optimizers

_X0 = np.array([[0.5, -1.0], [2.0, 0.3]], np.float32)
_GRADS = [np.array([[0.2, -0.4], [1.0, 0.0]], np.float32),
          np.array([[-0.1, 0.3], [0.5, 0.25]], np.float32),
          np.array([[0.05, -0.2], [-0.3, 0.1]], np.float32)]


def _np_run(kind, lr=0.1):
  """The optimizers' update rules on _GRADS, in float64 numpy."""
  x = _X0.astype(np.float64)
  a, b = np.zeros_like(x), np.zeros_like(x)
  for i, g in enumerate(_GRADS):
    g = g.astype(np.float64)
    if kind == "sgd":
      x = x - lr * g
    elif kind == "momentum":
      a = 0.9 * a + g
      x = x - lr * a
    elif kind == "nesterov":
      a = 0.9 * a + g
      x = x - lr * (0.9 * a + g)
    elif kind == "adagrad":
      a = a + g * g
      b = 0.1 * np.where(a > 0, g / np.sqrt(np.where(a > 0, a, 1)), 0) + 0.9 * b
      x = x - lr * b
    elif kind == "rmsprop":
      a = 0.9 * a + 0.1 * g * g
      x = x - lr * g / np.sqrt(a + 1e-8)
    elif kind == "rmsprop_momentum":
      a = 0.9 * a + 0.1 * g * g
      b = 0.9 * b + lr * g / np.sqrt(a + 1e-8)
      x = x - b
    elif kind == "adam":
      a = 0.1 * g + 0.9 * a
      b = 0.001 * g * g + 0.999 * b
      x = x - lr * (a / (1 - 0.9 ** (i + 1))) / (np.sqrt(b / (1 - 0.999 ** (i + 1))) + 1e-8)
    elif kind == "adamax":
      a = 0.1 * g + 0.9 * a
      b = np.maximum(0.999 * b, np.abs(g))
      x = x - lr / (1 - 0.9 ** (i + 1)) * a / (b + 1e-8)
  return x


_MAKERS = {
    "sgd": lambda: optimizers.sgd(0.1),
    "momentum": lambda: optimizers.momentum(0.1, 0.9),
    "nesterov": lambda: optimizers.nesterov(0.1, mass=0.9),
    "adagrad": lambda: optimizers.adagrad(0.1),
    "rmsprop": lambda: optimizers.rmsprop(0.1),
    "rmsprop_momentum": lambda: optimizers.rmsprop_momentum(0.1),
    "adam": lambda: optimizers.adam(0.1),
    "adamax": lambda: optimizers.adamax(0.1),
}


@pytest.mark.parametrize("kind", list(_MAKERS))
def test_optimizer_updates_match_numpy(kind):
  init, update, get_params = _MAKERS[kind]()
  state = init(_X0)
  for i, g in enumerate(_GRADS):
    state = update(i, g, state)
  np.testing.assert_allclose(get_params(state), _np_run(kind), rtol=2e-5, atol=2e-6)


# four steps on a small regression problem; the final parameters jax's example_libraries
# (0.10.2) reached, leaves in pytree order (b, then w)
_PARAMS = {"w": np.array([[0.5, -1.0], [2.0, 0.3]], np.float32),
           "b": (np.array([0.1, -0.2], np.float32),)}
_DATA_X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]], np.float32)
_DATA_Y = np.array([1.0, -1.0, 0.5], np.float32)
JAX_RUNS = {
    "sgd": (lambda o: o.sgd(0.1), [[-0.16706831753253937, -0.025062669068574905], [
        0.9877524971961975, -0.5228121280670166, 1.662990689277649, 0.10333575308322906]]),
    "momentum": (lambda o: o.momentum(0.1, 0.9), [[-0.4312610924243927, 0.1914994716644287], [
        1.5277787446975708, 0.04305154085159302, 1.276551365852356, -0.13139693439006805]]),
    "nesterov": (lambda o: o.nesterov(0.1, 0.9), [[-0.4117703437805176, 0.3485228419303894], [
        1.6551238298416138, 0.2688002288341522, 1.1509376764297485, -0.28947022557258606]]),
    "adagrad": (lambda o: o.adagrad(0.1), [[0.029340755194425583, -0.12902958691120148], [
        0.5700405836105347, -0.9303893446922302, 1.9301726818084717, 0.22965137660503387]]),
    "rmsprop": (lambda o: o.rmsprop(0.05), [[-0.3449634909629822, 0.29309263825416565], [
        0.9338228702545166, -0.5582088232040405, 1.571000099182129, -0.14509497582912445]]),
    "rmsprop_momentum": (lambda o: o.rmsprop_momentum(0.05), [
        [-0.9026318788528442, 0.9342000484466553],
        [1.5074172019958496, 0.0695694088935852, 0.9933075904846191, -0.6645392179489136]]),
    "adam": (lambda o: o.adam(0.05), [[-0.10053585469722748, 0.00044966861605644226], [
        0.7003526091575623, -0.7999534010887146, 1.7998073101043701, 0.09947346150875092]]),
    "adamax": (lambda o: o.adamax(0.05), [[-0.08885714411735535, -0.016962140798568726], [
        0.6951775550842285, -0.8007668256759644, 1.8026682138442993, 0.10945652425289154]]),
    "sm3": (lambda o: o.sm3(0.1), [[0.029339740052819252, -0.12904785573482513], [
        0.5700461268424988, -0.9304167032241821, 1.9301652908325195, 0.2445574700832367]]),
    "adam_exponential_decay": (lambda o: o.adam(o.exponential_decay(0.1, 2, 0.5)), [
        [-0.15626686811447144, 0.055806566029787064],
        [0.7562761306762695, -0.7439467906951904, 1.7438865900039673, 0.0435781255364418]]),
    "sgd_polynomial_decay": (lambda o: o.sgd(o.polynomial_decay(0.1, 3, 0.01)), [
        [-0.05613294616341591, -0.11230698972940445],
        [0.7783066034317017, -0.7352685332298279, 1.8092743158340454, 0.20111890137195587]]),
    "sgd_piecewise_constant": (lambda o: o.sgd(o.piecewise_constant([1, 2], [0.1, 0.05, 0.01])), [
        [-0.08431635797023773, -0.09475768357515335],
        [0.8286475539207458, -0.6870476603507996, 1.7747530937194824, 0.18085922300815582]]),
    "sgd_inverse_time_decay": (lambda o: o.sgd(o.inverse_time_decay(0.1, 2, 0.5, True)), [
        [-0.1304924488067627, -0.05889314413070679],
        [0.9149734973907471, -0.6001163721084595, 1.7146517038345337, 0.14040087163448334]]),
}


def _loss(p):
  h = jnp.tanh(_DATA_X @ p["w"] + p["b"][0])
  return ((h.sum(1) - _DATA_Y) ** 2).mean()


@pytest.fixture(scope="module")
def jax_runs():
  """Every optimizer of JAX_RUNS trained in one compiled program."""
  def train_all():
    finals = {}
    for name, (make, _) in JAX_RUNS.items():
      init, update, get_params = make(optimizers)
      state = init(_PARAMS)
      for i in range(4):
        state = update(i, minijax.grad(_loss)(get_params(state)), state)
      finals[name] = get_params(state)
    return finals
  return minijax.jit(train_all)()


@pytest.mark.parametrize("name", list(JAX_RUNS))
def test_training_reaches_the_parameters_jax_reached(name, jax_runs):
  leaves = tree_util.tree_leaves(jax_runs[name])
  b, w = JAX_RUNS[name][1]
  np.testing.assert_allclose(leaves[0], b, rtol=2e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(leaves[1]).ravel(), w, rtol=2e-5, atol=1e-6)


def test_optimizer_state_is_a_pytree_that_jit_passes_and_unpacks():
  init, update, get_params = optimizers.adam(0.1)
  state = init(_PARAMS)
  assert isinstance(state, optimizers.OptimizerState)
  assert len(tree_util.tree_leaves(state)) == 2 * 3  # (x, m, v) for each of b and w
  step = minijax.jit(lambda i, s: update(i, minijax.grad(_loss)(get_params(s)), s))
  jitted = step(0, state)
  eager = update(0, minijax.grad(_loss)(_PARAMS), state)
  for a, b in zip(tree_util.tree_leaves(jitted), tree_util.tree_leaves(eager)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
  unpacked = optimizers.unpack_optimizer_state(jitted)
  assert isinstance(unpacked["w"], optimizers.JoinPoint)
  x, m, v = unpacked["b"][0].subtree
  np.testing.assert_array_equal(x, get_params(jitted)["b"][0])
  repacked = optimizers.pack_optimizer_state(unpacked)
  assert repacked.tree_def == jitted.tree_def and repacked.subtree_defs == jitted.subtree_defs
  for a, b in zip(tree_util.tree_leaves(repacked), tree_util.tree_leaves(jitted)):
    np.testing.assert_array_equal(a, b)
  with pytest.raises(TypeError, match="did not match the parameter tree structure"):
    update(0, {"w": _X0}, state)


def test_schedules_and_gradient_utilities():
  assert optimizers.constant(0.3)(7) == 0.3
  assert optimizers.make_schedule(0.2)(5) == 0.2
  np.testing.assert_allclose(optimizers.exponential_decay(1.0, 2, 0.5)(3), 0.5 ** 1.5,
                             rtol=1e-6)
  np.testing.assert_allclose(optimizers.inverse_time_decay(1.0, 2, 0.5)(3), 1 / 1.75,
                             rtol=1e-6)
  np.testing.assert_allclose(optimizers.inverse_time_decay(1.0, 2, 0.5, staircase=True)(3),
                             1 / 1.5, rtol=1e-6)
  poly = optimizers.polynomial_decay(1.0, 4, 0.2, power=2.0)
  np.testing.assert_allclose([poly(i) for i in (0, 2, 4, 9)],
                             [1.0, 0.25 * 0.8 + 0.2, 0.2, 0.2], rtol=1e-6)
  piecewise = optimizers.piecewise_constant([2, 5], [1.0, 0.5, 0.1])
  np.testing.assert_allclose([piecewise(i) for i in (0, 2, 3, 5, 6)],
                             [1.0, 1.0, 0.5, 0.5, 0.1])
  with pytest.raises(ValueError, match="one shorter than values"):
    optimizers.piecewise_constant([1, 2], [1.0, 0.5])
  with pytest.raises(TypeError):
    optimizers.make_schedule([0.1, 0.2])
  tree = {"a": np.array([3.0, 0.0], np.float32), "b": np.array([[4.0]], np.float32)}
  np.testing.assert_allclose(optimizers.l2_norm(tree), 5.0)
  clipped = optimizers.clip_grads(tree, 1.0)
  np.testing.assert_allclose(clipped["a"], [0.6, 0.0], rtol=1e-6)
  np.testing.assert_allclose(optimizers.clip_grads(tree, 10.0)["b"], [[4.0]])


# ----------------------------------------------------------------------------- stax

_KEY = random.PRNGKey(0)
_IMG = np.cos(np.arange(2 * 6 * 6 * 3, dtype=np.float32)).reshape(2, 6, 6, 3)


def _np_pool(x, k, s, reduce):
  n, h, w, c = x.shape
  oh, ow = (h - k) // s + 1, (w - k) // s + 1
  out = np.empty((n, oh, ow, c), x.dtype)
  for i in range(oh):
    for j in range(ow):
      out[:, i, j] = reduce(x[:, i * s:i * s + k, j * s:j * s + k], axis=(1, 2))
  return out


def test_layer_shapes_and_forward_values_match_numpy():
  init, apply = stax.Dense(4)
  shape, (W, b) = init(_KEY, (5, 3))
  assert shape == (5, 4) and W.shape == (3, 4) and b.shape == (4,)
  x = _IMG[0, 0]
  np.testing.assert_allclose(apply((W, b), x), x @ np.asarray(W) + np.asarray(b), rtol=1e-5)

  init, apply = stax.Conv(4, (3, 3), strides=(2, 1), padding="SAME")
  shape, (W, b) = init(_KEY, _IMG.shape)
  assert shape == (2, 3, 6, 4) and W.shape == (3, 3, 3, 4) and b.shape == (1, 1, 1, 4)
  assert apply((W, b), _IMG).shape == shape

  init, apply = stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME")
  shape, params = init(_KEY, _IMG.shape)
  assert shape == (2, 12, 12, 2) and apply(params, _IMG).shape == shape

  for layer, reduce in ((stax.MaxPool, np.max), (stax.SumPool, np.sum), (stax.AvgPool, np.mean)):
    init, apply = layer((2, 2), strides=(2, 2))
    shape, params = init(_KEY, _IMG.shape)
    assert shape == (2, 3, 3, 3) and params == ()
    np.testing.assert_allclose(apply(params, _IMG), _np_pool(_IMG, 2, 2, reduce), rtol=1e-5,
                               atol=1e-6)
  # SAME average pooling divides by the number of real (unpadded) elements of each window
  init, apply = stax.AvgPool((3, 3), padding="SAME")
  out = np.asarray(apply((), _IMG))
  np.testing.assert_allclose(out[:, 0, 0], _IMG[:, :2, :2].mean((1, 2)), rtol=1e-5)

  init, apply = stax.BatchNorm()
  shape, (beta, gamma) = init(_KEY, _IMG.shape)
  assert shape == _IMG.shape and beta.shape == gamma.shape == (3,)
  mean, var = _IMG.mean((0, 1, 2)), _IMG.var((0, 1, 2))
  params = (beta + 0.5, gamma * 2)
  np.testing.assert_allclose(apply(params, _IMG), 2 * (_IMG - mean) / np.sqrt(var + 1e-5) + 0.5,
                             rtol=1e-4, atol=1e-4)

  init, apply = stax.Flatten
  assert init(_KEY, _IMG.shape) == ((2, 108), ())
  np.testing.assert_array_equal(apply((), _IMG), _IMG.reshape(2, -1))
  for layer, ref in ((stax.Relu, lambda v: np.maximum(v, 0)), (stax.Tanh, np.tanh),
                     (stax.Exp, np.exp), (stax.Sigmoid, lambda v: 1 / (1 + np.exp(-v))),
                     (stax.Softplus, lambda v: np.log1p(np.exp(v))),
                     (stax.LogSoftmax, lambda v: v - np.log(np.exp(v).sum(-1, keepdims=True)))):
    init, apply = layer
    assert init(_KEY, (2, 3)) == ((2, 3), ())
    np.testing.assert_allclose(apply((), _IMG), ref(_IMG), rtol=1e-5, atol=1e-6)


def test_combinators():
  init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                            stax.FanInConcat())
  shape, params = init(_KEY, (4, 2))
  assert shape == (4, 5) and params[1][1] == ()
  x = _IMG[0, :4, 0, :2]
  W, b = params[1][0]
  np.testing.assert_allclose(apply(params, x),
                             np.concatenate([x @ np.asarray(W) + np.asarray(b), x], -1),
                             rtol=1e-5)
  init, apply = stax.serial(stax.FanOut(3), stax.parallel(stax.Tanh, stax.Relu, stax.Identity),
                            stax.FanInSum)
  assert init(_KEY, (2, 2))[0] == (2, 2)
  np.testing.assert_allclose(apply(((), [(), (), ()], ()), x),
                             np.tanh(x) + np.maximum(x, 0) + x, rtol=1e-6)
  made = []
  init, apply = stax.shape_dependent(lambda s: made.append(s) or stax.Dense(s[-1] * 2))
  shape, params = init(_KEY, (4, 3))
  assert shape == (4, 6) and made == [(4, 3)]
  assert apply(params, x[:, :2].repeat(2, 1)[:, :3]).shape == (4, 6)


def test_dropout_needs_a_key_and_keeps_inputs_scaled():
  init, apply = stax.Dropout(0.75)
  assert init(_KEY, (3,)) == ((3,), ())
  with pytest.raises(ValueError, match="Dropout layer requires apply_fun to be called with"):
    apply((), _IMG)
  out = np.asarray(apply((), _IMG, rng=random.PRNGKey(3)))
  kept = out != 0
  np.testing.assert_allclose(out[kept], _IMG[kept] / 0.75, rtol=1e-6)
  assert 0.6 < kept.mean() < 0.9
  np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), _IMG, rng=_KEY), _IMG)


# A small classifier initialized with PRNGKey(0), as jax.example_libraries.stax (0.10.2)
# initialized it: every parameter, and the log-probabilities of one image
_NET = lambda: stax.serial(stax.Conv(2, (2, 2), padding="SAME"), stax.Relu,  # noqa: E731
                           stax.MaxPool((2, 2), strides=(2, 2)), stax.Flatten, stax.Dense(3),
                           stax.LogSoftmax)
JAX_PARAMS = [
    [0.08806364238262177, -0.33787110447883606, -0.5405365824699402, -0.18142105638980865,
     -0.4375835955142975, 0.1267857849597931, 0.43296149373054504, 0.21990135312080383],
    [-1.3356250292417826e-06, -3.5256303476671746e-07],
    [0.3594449460506439, -0.618691086769104, 0.6149998903274536, 0.532406210899353,
     -0.19988510012626648, 0.0720243901014328, 0.6713135838508606, 0.24882778525352478,
     0.3455580770969391, 0.1509137749671936, 0.14966981112957, 0.09601453691720963,
     0.5561211109161377, -0.0107876593247056, 0.1849476397037506, -0.46089041233062744,
     -0.22037380933761597, -0.019547242671251297, 0.40954744815826416, -0.3424258828163147,
     0.40905359387397766, -0.4307445287704468, -0.14586658775806427, -0.2602998614311218],
    [0.002179612871259451, -0.005734775681048632, 0.008453142829239368],
]
JAX_LOGPROBS = [-0.7461352944374084, -2.209052801132202, -0.8770706057548523]


def test_a_network_initializes_and_computes_as_in_jax():
  init, apply = _NET()
  shape, params = init(random.PRNGKey(0), (1, 4, 4, 1))
  assert shape == (1, 3)
  leaves = tree_util.tree_leaves(params)
  assert [p.shape for p in leaves] == [(2, 2, 1, 2), (1, 1, 1, 2), (8, 3), (3,)]
  for p, expected in zip(leaves, JAX_PARAMS):
    # (initializers: XLA's code generation may round the last bit differently on another CPU)
    assert_within_ulps(np.asarray(p).ravel(), np.asarray(expected, np.float32), 4)
  x = (np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1) - 7) / 4
  np.testing.assert_allclose(apply(params, x)[0], JAX_LOGPROBS, rtol=1e-6)
  # a transposed-convolution stack with batch norm and dropout (jax: shapes, sums)
  init, apply = stax.serial(stax.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME"),
                            stax.BatchNorm(), stax.Gelu, stax.AvgPool((2, 2)), stax.Dropout(0.5))
  shape, params = init(random.PRNGKey(1), (2, 3, 3, 2))
  assert shape == (2, 5, 5, 3)
  sums = [float(np.asarray(p).sum()) for p in tree_util.tree_leaves(params)]
  np.testing.assert_allclose(sums, [1.1516886949539185, -1.9738279206649167e-06, 0.0, 3.0],
                             rtol=1e-6)
  out = np.asarray(apply(params, np.cos(np.arange(36, dtype=np.float32)).reshape(2, 3, 3, 2),
                         rng=random.PRNGKey(5)))
  np.testing.assert_allclose(out.sum(), 46.041255950927734, rtol=1e-5)
  np.testing.assert_allclose((out * np.sin(np.arange(out.size)).reshape(out.shape)).sum(),
                             -3.4104553945768785, rtol=1e-4)
