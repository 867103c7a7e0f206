"""The public names and behaviours JAX's libraries rely on (issue 24 items 2-4), checked
without the libraries: tracers are `Array`s, pytree registration with keys, OrderedDict
nodes, `ravel_pytree`, the special functions and array-API names libraries import,
`custom_gradient` and symbolic zeros, eager `checkify`, and the extension API
(`minijax.extend`, JAX's rule signatures over minijax's rule tables)."""
from __future__ import annotations

import collections
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.fft
import scipy.linalg
import scipy.special
import scipy.stats

import minijax
import minijax.numpy as jnp
from minijax import lax, tree_util
from minijax.custom_derivatives import SymbolicZero
from minijax.experimental import checkify
from minijax.extend import core as ext_core
from minijax.extend import linear_util as lu
from minijax.extend import mlir as ext_mlir
from minijax.flatten_util import ravel_pytree
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.runtime.array import is_concrete_array
from minijax.scipy import special

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------- Array, pytrees

def test_tracers_are_arrays_inside_every_transformation():
  seen = []

  def f(x):
    seen.append((isinstance(x, minijax.Array), is_concrete_array(x)))
    return x * 2

  minijax.jit(f)(1.0)
  minijax.grad(f)(1.0)
  minijax.vmap(f)(jnp.ones(2))
  assert seen == [(True, False)] * 3
  assert isinstance(jnp.ones(2), minijax.Array) and is_concrete_array(jnp.ones(2))
  assert not isinstance(np.ones(2), minijax.Array) and not isinstance(1.0, minijax.Array)


def test_ordered_dict_is_a_pytree_node_keeping_insertion_order():
  d = collections.OrderedDict([("b", 1.0), ("a", 2.0)])
  leaves, treedef = tree_util.tree_flatten(d)
  assert leaves == [1.0, 2.0]
  out = tree_util.tree_map(lambda x: x * 10, d)
  assert type(out) is collections.OrderedDict and list(out.items()) == [("b", 10.0), ("a", 20.0)]
  paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(d)[0]]
  assert paths == ["['b']", "['a']"]
  g = minijax.grad(lambda t: t["b"] * t["a"])(d)
  assert type(g) is collections.OrderedDict and [float(v) for v in g.values()] == [2.0, 1.0]


def test_defaultdict_is_a_pytree_node_with_sorted_keys_and_its_factory():
  d = collections.defaultdict(list, {"b": 1, "a": 2})
  assert tree_util.tree_leaves(d) == [2, 1]
  out = tree_util.tree_map(lambda x: x + 1, d)
  assert type(out) is collections.defaultdict and out.default_factory is list
  assert dict(out) == {"a": 3, "b": 2}


def test_register_pytree_with_keys_names_the_children_in_paths():
  class Pair:
    def __init__(self, x, y):
      self.x, self.y = x, y

  tree_util.register_pytree_with_keys(
      Pair, lambda p: (((tree_util.GetAttrKey("x"), p.x), (tree_util.GetAttrKey("y"), p.y)), None),
      lambda _, c: Pair(*c))
  paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(Pair(1, [2]))[0]]
  assert paths == [".x", ".y[0]"]
  assert tree_util.tree_map(lambda v: v * 3, Pair(1, 2)).y == 6

  @tree_util.register_pytree_with_keys_class
  class Box:
    def __init__(self, v):
      self.v = v

    def tree_flatten_with_keys(self):
      return ((tree_util.GetAttrKey("v"), self.v),), "aux"

    @classmethod
    def tree_unflatten(cls, aux, children):
      assert aux == "aux"
      return cls(*children)

  assert tree_util.keystr(tree_util.tree_flatten_with_path(Box(5))[0][0][0]) == ".v"
  assert minijax.jit(lambda b: b.v + 1)(Box(1.0)) == 2.0


def test_register_static_makes_instances_part_of_the_structure():
  @tree_util.register_static
  class Mode(str):
    pass

  assert tree_util.tree_leaves([Mode("add"), 1.0]) == [1.0]
  f = minijax.jit(lambda x, m: x + 1 if m == "add" else x - 1)
  assert f(1.0, Mode("add")) == 2.0 and f(1.0, Mode("sub")) == 0.0


def test_ravel_pytree_flattens_to_the_common_dtype_and_back():
  tree = {"a": jnp.ones((2, 2), jnp.float32), "b": (jnp.arange(3, dtype=jnp.int32),)}
  flat, unravel = ravel_pytree(tree)
  assert flat.shape == (7,) and flat.dtype == np.float32
  back = unravel(flat * 2)
  assert back["b"][0].dtype == np.int32 and back["b"][0].tolist() == [0, 2, 4]
  np.testing.assert_array_equal(back["a"], 2 * np.ones((2, 2)))
  with pytest.raises(ValueError, match=r"expected an array of shape \(7,\)"):
    unravel(jnp.ones(6))
  empty, unravel_empty = ravel_pytree({})
  assert empty.shape == (0,) and unravel_empty(empty) == {}


# ----------------------------------------------------------------------------- numbers

X = np.concatenate([np.linspace(-30, 30, 601), [0.0, 1e-3, 14.99, 15.01, 39.9, 40.1]])


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "expi", "exp1"])
def test_bessel_and_exponential_integrals_match_scipy(name):
  x = X.astype(np.float32)
  if name == "exp1":
    x = np.abs(x)
  want = getattr(scipy.special, name)(x.astype(np.float64))
  got = np.asarray(minijax.jit(getattr(special, name))(x))
  finite = np.isfinite(want)
  np.testing.assert_allclose(got[finite], want[finite], rtol=3e-6, atol=1e-30)
  assert np.array_equal(np.isinf(got), np.isinf(want))


def test_bessel_and_expi_derivatives_are_the_closed_forms():
  np.testing.assert_allclose(minijax.grad(special.i0e)(2.0),
                             scipy.special.i1e(2.0) - scipy.special.i0e(2.0), rtol=1e-5)
  np.testing.assert_allclose(minijax.grad(special.i1e)(2.0),
                             scipy.special.i0e(2.0) - 1.5 * scipy.special.i1e(2.0), rtol=1e-5)
  np.testing.assert_allclose(minijax.grad(special.expi)(1.5), np.exp(1.5) / 1.5, rtol=1e-6)


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_dct_and_idct_match_scipy(norm):
  x = np.random.RandomState(0).normal(size=(3, 6)).astype(np.float32)
  for axis in (0, -1):
    np.testing.assert_allclose(minijax.scipy.fft.dct(x, norm=norm, axis=axis),
                               scipy.fft.dct(x, norm=norm, axis=axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(minijax.scipy.fft.idct(x, norm=norm, axis=axis),
                               scipy.fft.idct(x, norm=norm, axis=axis), rtol=1e-5, atol=1e-5)
  with pytest.raises(NotImplementedError, match="only DCT type 2"):
    minijax.scipy.fft.dct(x, type=3)
  with pytest.raises(ValueError, match="norm='forward' is not implemented"):
    minijax.scipy.fft.dct(x, norm="forward")


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_dct_sizes_and_dctn_match_scipy(norm):
  x = np.random.RandomState(1).normal(size=(3, 5))
  with minijax.enable_x64():
    for n in (2, 5, 8):
      np.testing.assert_allclose(minijax.scipy.fft.dct(x, n=n, norm=norm),
                                 scipy.fft.dct(x, n=n, norm=norm), rtol=1e-12, atol=1e-12)
      np.testing.assert_allclose(minijax.scipy.fft.idct(x, n=n, axis=0, norm=norm),
                                 scipy.fft.idct(x, n=n, axis=0, norm=norm), rtol=1e-12, atol=1e-12)
    for s, axes in [(None, None), ((2, 6), None), ((4,), None), (None, [0]), ((7,), [-2])]:
      np.testing.assert_allclose(minijax.scipy.fft.dctn(x, s=s, axes=axes, norm=norm),
                                 scipy.fft.dctn(x, s=s, axes=axes, norm=norm), rtol=1e-12, atol=1e-12)
      np.testing.assert_allclose(minijax.scipy.fft.idctn(x, s=s, axes=axes, norm=norm),
                                 scipy.fft.idctn(x, s=s, axes=axes, norm=norm), rtol=1e-12, atol=1e-12)
    assert minijax.scipy.fft.dctn(np.arange(4)).dtype == np.float64
  for half in (np.float16, minijax.numpy.bfloat16):  # JAX's: in float32, through its FFT
    assert minijax.scipy.fft.idct(x.astype(half)).dtype == np.float32
    assert minijax.scipy.fft.dctn(x.astype(half)).dtype == np.float32
  with pytest.raises(ValueError, match="s and axes must have the same length"):
    minijax.scipy.fft.dctn(x, s=(2,), axes=(0, 1))


def test_toeplitz_and_gaussian_kde_match_scipy():
  np.testing.assert_array_equal(minijax.scipy.linalg.toeplitz(np.array([1, 2, 3])),
                                scipy.linalg.toeplitz([1, 2, 3]))
  np.testing.assert_array_equal(
      minijax.scipy.linalg.toeplitz(np.array([1.0, 2, 3]), np.array([1.0, -5, -6, 7])),
      scipy.linalg.toeplitz([1.0, 2, 3], [1.0, -5, -6, 7]))
  rng = np.random.RandomState(0)
  data, points = rng.normal(size=(2, 50)), rng.normal(size=(2, 7))
  weights = rng.uniform(size=50)
  np.testing.assert_allclose(
      minijax.scipy.stats.gaussian_kde(data.astype(np.float32), "silverman", weights).logpdf(
          points.astype(np.float32)),
      scipy.stats.gaussian_kde(data, "silverman", weights).logpdf(points), rtol=1e-5)


def test_array_api_names_and_bit_counts():
  x = np.array([-3, 7, 0, 255], np.int32)
  np.testing.assert_array_equal(jnp.bitwise_count(x), np.bitwise_count(x))
  assert jnp.bitwise_count(x).dtype == np.uint8
  np.testing.assert_array_equal(lax.population_count(np.array([-1], np.int32)), [32])
  assert jnp.acos is jnp.arccos and jnp.bitwise_invert is jnp.invert and jnp.double is jnp.float64
  np.testing.assert_allclose(jnp.logaddexp2(1.0, 2.0), np.logaddexp2(1.0, 2.0), rtol=1e-6)
  np.testing.assert_allclose(jnp.trapezoid(np.arange(5.0) ** 2), np.trapezoid(np.arange(5.0) ** 2))
  np.testing.assert_allclose(jnp.vecdot(np.ones((2, 3)), np.arange(3.0)), [3.0, 3.0])
  assert [a.tolist() for a in jnp.unstack(np.arange(4).reshape(2, 2))] == [[0, 1], [2, 3]]
  assert lax.broadcast_shapes((2, 1), (1, 3)) == (2, 3)


@pytest.mark.parametrize("name,ref", [("sinh", np.sinh), ("cosh", np.cosh), ("asinh", np.arcsinh),
                                      ("atanh", np.arctanh), ("square", np.square)])
def test_hyperbolic_and_square_primitives(name, ref):
  x = np.array([0.1, 0.5, 0.9], np.float32)
  np.testing.assert_allclose(getattr(lax, name)(x), ref(x), rtol=1e-6)
  h = 1e-3
  fd = (ref(np.float64(0.5) + h) - ref(np.float64(0.5) - h)) / (2 * h)
  np.testing.assert_allclose(minijax.grad(getattr(lax, name))(0.5), fd, rtol=1e-4)
  assert getattr(lax, f"{name}_p") in [e.primitive for e in
                                       minijax.make_jaxpr(getattr(lax, name))(x).eqns]


# ----------------------------------------------------------------------------- custom rules

def test_custom_gradient_differentiates_by_the_given_vjp():
  @minijax.custom_gradient
  def f(x, y):
    return x * y, lambda g: (g * 10.0, g * 20.0)

  assert minijax.grad(f, (0, 1))(2.0, 3.0) == (10.0, 20.0)
  assert minijax.jit(minijax.grad(f))(2.0, 3.0) == 10.0
  assert f(2.0, 3.0) == 6.0


def test_symbolic_zeros_reach_the_rule_for_undifferentiated_inputs():
  @minijax.custom_jvp
  def f(x, y):
    return x * y

  kinds = []

  def f_jvp(primals, tangents):
    kinds.append(tuple(isinstance(t, SymbolicZero) for t in tangents))
    x, y = primals
    tx, ty = tangents
    out = f(x, y)
    if isinstance(tx, SymbolicZero):
      return out, ty * x
    if isinstance(ty, SymbolicZero):
      return out, tx * y
    return out, tx * y + ty * x

  f.defjvp(f_jvp, symbolic_zeros=True)
  assert minijax.grad(f)(2.0, 3.0) == 3.0 and minijax.grad(f, 1)(2.0, 3.0) == 2.0
  assert minijax.jit(minijax.grad(f))(2.0, 3.0) == 3.0
  assert kinds[:2] == [(False, True), (True, False)]

  @minijax.custom_jvp
  def g(x, y):
    return x + y

  g.defjvp(lambda p, t: (g(*p), SymbolicZero(minijax.typeof(p[0]).at_least_vspace())),
           symbolic_zeros=True)
  assert minijax.grad(g)(1.0, 2.0) == 0.0  # a symbolic zero output becomes zeros


def test_checkify_checks_eagerly_and_collects_the_first_failure():
  checkify.check(True, "never")
  with pytest.raises(checkify.JaxRuntimeError, match=r"x must be positive, got -1 \(`check` failed\)"):
    checkify.check(-1 > 0, "x must be positive, got {}", -1)

  def f(x):
    checkify.check(x > 0, "x must be positive")
    return x * 2

  err, out = checkify.checkify(f)(-1.0)
  assert err.get() == "x must be positive (`check` failed)" and out == -2.0
  assert issubclass(checkify.JaxRuntimeError, ValueError)
  with pytest.raises(checkify.JaxRuntimeError, match="x must be positive"):
    err.throw()
  assert checkify.checkify(f)(1.0)[0].get() is None
  with pytest.raises(ValueError, match="Cannot abstractly evaluate a checkify.check which "
                     "was not functionalized"):
    minijax.jit(f)(1.0)
  # debug_check: a check inside checkify, dropped elsewhere (eagerly and under jit)
  checkify.debug_check(False, "dropped")
  minijax.jit(lambda x: checkify.debug_check(x > 0, "dropped") or x)(-1.0)

  def g(x):
    checkify.debug_check(x > 0, "x must be positive")
    return x
  assert checkify.checkify(g)(-1.0)[0].get() == "x must be positive (`check` failed)"


def test_checkify_functionalizes_checks_of_traced_values():
  # JAX's numbers/messages (0.10.2): the check under jit, grad and vmap lands in the Error.
  def f(x):
    checkify.check(x > 0, "x must be positive {}", x)
    return x * 2
  jf = minijax.jit(f)
  err, out = checkify.checkify(jf)(-1.0)
  assert err.get() == "x must be positive -1.0 (`check` failed)" and float(out) == -2.0
  err, out = checkify.checkify(jf)(1.0)  # the cached computation, checked again
  assert err.get() is None and float(out) == 2.0
  err, _ = checkify.checkify(jf)(-3.0)
  assert err.get() == "x must be positive -3.0 (`check` failed)"
  with pytest.raises(checkify.JaxRuntimeError, match="x must be positive -3.0"):
    err.throw()
  err, g = checkify.checkify(minijax.grad(f))(-1.0)
  assert err.get() == "x must be positive -1.0 (`check` failed)" and float(g) == 2.0
  err, out = checkify.checkify(minijax.vmap(f))(jnp.array([1.0, 2.0]))
  assert err.get() is None
  np.testing.assert_array_equal(out, [2.0, 4.0])
  err, _ = checkify.checkify(minijax.vmap(f))(jnp.array([1.0, -2.0]))
  assert "x must be positive -2.0 (`check` failed)" in err.get()


# ----------------------------------------------------------------------------- extension API

def _logaddexp_primitive():
  """A primitive defined as JAX's libraries define theirs, through minijax.extend."""
  p = ext_core.Primitive("test_softplus_pair")
  p.def_impl(lambda x: jnp.logaddexp(x, 0.0))
  p.def_abstract_eval(lambda x: ext_core.ShapedArray(x.shape, x.dtype))
  ad.primitive_jvps[p] = lambda primals, tangents: (
      p.bind(*primals), tangents[0] * minijax.nn.sigmoid(primals[0]))
  batching.primitive_batchers[p] = lambda args, dims: (p.bind(*args), dims[0])
  ext_mlir.register_lowering(p, ext_mlir.lower_fun(lambda x: jnp.logaddexp(x, 0.0),
                                                    multiple_results=False))
  ext_mlir.register_lowering(p, lambda ctx, x: 1 / 0, platform="tpu")  # not this platform
  return p


def test_a_primitive_defined_through_extend_jits_differentiates_and_batches():
  p = _logaddexp_primitive()
  x = np.array([-1.0, 0.0, 2.0], np.float32)
  want = np.logaddexp(x, 0)
  np.testing.assert_allclose(p.bind(x), want, rtol=1e-6)
  np.testing.assert_allclose(minijax.jit(p.bind)(x), want, rtol=1e-6)
  np.testing.assert_allclose(minijax.vmap(p.bind)(x), want, rtol=1e-6)
  np.testing.assert_allclose(minijax.grad(lambda v: p.bind(v).sum())(x), 1 / (1 + np.exp(-x)),
                             rtol=1e-6)
  assert ext_core.primitives.add_p is lax.add_p and ext_core.primitives.closed_call_p is lax.jit_p


def test_bilinear_reducer_and_linear_rule_helpers_as_jax():
  """ad.defbilinear / deflinear2 / get_primitive_transpose and batching.defreducer /
  broadcast: how libraries give their primitives rules."""
  product = ext_core.Primitive("test_bilinear_product")
  product.def_abstract_eval(lambda x, y: ext_core.ShapedArray(x.shape, x.dtype))
  ext_mlir.register_lowering(product, ext_mlir.lower_fun(lambda x, y: x * y,
                                                          multiple_results=False))
  ad.defbilinear(product, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
  x, y = np.float32([1, 2]), np.float32([3, 4])
  grads = minijax.grad(lambda a, b: product.bind(a, b).sum(), argnums=(0, 1))(x, y)
  np.testing.assert_array_equal(grads[0], y)
  np.testing.assert_array_equal(grads[1], x)
  _, tangent = minijax.jvp(lambda a: product.bind(a, a), (x,), (np.ones(2, np.float32),))
  np.testing.assert_array_equal(tangent, 2 * x)

  scale = ext_core.Primitive("test_linear_scale")
  scale.def_abstract_eval(lambda x: x)
  ext_mlir.register_lowering(scale, ext_mlir.lower_fun(lambda x: 3 * x, multiple_results=False))
  seen = []
  ad.deflinear2(scale, lambda ct, arg: (seen.append(ad.is_undefined_primal(arg)), [3 * ct])[1])
  assert float(minijax.grad(lambda a: scale.bind(a))(2.0)) == 3.0 and seen == [True]
  assert ad.get_primitive_transpose(scale) is ad.primitive_transposes[scale]
  with pytest.raises(NotImplementedError, match="Transpose rule .* for 'test_bilinear_sum'"):
    ad.get_primitive_transpose(ext_core.Primitive("test_bilinear_sum"))

  total = ext_core.Primitive("test_reducer")
  total.def_abstract_eval(lambda x, axes: ext_core.ShapedArray(
      tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype))
  ext_mlir.register_lowering(total, ext_mlir.lower_fun(lambda x, axes: lax.reduce_sum(x, axes),
                                                        multiple_results=False))
  batching.defreducer(total, lambda *_: 0)
  z = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  np.testing.assert_array_equal(minijax.vmap(lambda v: total.bind(v, axes=(1,)), in_axes=1)(z),
                                z.sum(2).T)
  assert batching.broadcast(np.ones((2, 3)), 5, 1).shape == (2, 5, 3)


def test_axis_primitive_batchers_see_the_vmapped_axis():
  p = ext_core.Primitive("test_axis_rule")
  p.def_impl(lambda x: x)
  p.def_abstract_eval(lambda x: x)
  seen = []

  def rule(axis_data, args, dims):
    seen.append((axis_data.name, axis_data.size))
    return args[0] + 1, dims[0]

  batching.fancy_primitive_batchers[p] = rule
  np.testing.assert_array_equal(minijax.vmap(p.bind, axis_name="i")(np.zeros(3)), np.ones(3))
  assert seen == [("i", 3)]

  # JAX's older table, with the older signature (equinox's primitives register there)
  def old_rule(size, name, trace_type, args, dims):
    seen.append((name, size, trace_type))
    return args[0] + 2, dims[0]

  batching.axis_primitive_batchers[p] = old_rule
  np.testing.assert_array_equal(minijax.vmap(p.bind, axis_name="j")(np.zeros(4)), 2 * np.ones(4))
  assert seen[1:] == [("j", 4, None)]


def test_trace_queries_and_partial_evaluation_for_libraries():
  states = []

  def f(x):
    states.append(ext_core.get_opaque_trace_state())
    return x

  f(1.0)
  f(2.0)
  minijax.jit(f)(1.0)
  assert states[0] == states[1] and states[0] != states[2]
  assert ext_core.mapped_aval(3, 0, ext_core.ShapedArray((3, 2), np.float32)).shape == (2,)
  assert ext_core.unmapped_aval(3, 1, ext_core.ShapedArray((2,), np.float32)).shape == (2, 3)
  assert ext_core.valid_jaxtype(1.0) and not ext_core.valid_jaxtype("a")

  known = jnp.asarray(2.0)
  fun = lu.wrap_init(lambda a, b: (a * 3, a * b))
  jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(
      fun, [pe.PartialVal.known(known), pe.PartialVal.unknown(ext_core.ShapedArray((), np.float32))])
  assert out_pvals[0].is_known() and out_pvals[0].get_known() == 6.0
  assert not out_pvals[1].is_known() and len(jaxpr.eqns) == 1


def test_libraries_reach_the_extension_api_through_import_jax(tmp_path):
  script = tmp_path / "prog.py"
  script.write_text(textwrap.dedent("""
      import jax
      from jax.extend import core, linear_util
      from jax.interpreters import ad, batching, mlir
      import jax._src.traceback_util as tb
      from jax._src.dtypes import TypePromotionError
      from jax._src.tree_util import _registry
      import minijax
      assert mlir is minijax.extend.mlir and ad is minijax.interpreters.ad
      assert core.Primitive is minijax.core.Primitive and jax.core.Tracer is minijax.core.Tracer
      assert dict in _registry and int not in _registry
      tb.register_exclusion(__file__)
      import sys
      assert not tb.include_frame(sys._getframe())  # (this file is now excluded)
      # lineax registers a transpose for stop_gradient; equinox compares Trace.main
      from jax._src.ad_util import stop_gradient_p
      assert stop_gradient_p is minijax.lax.stop_gradient_p
      mains = []
      jax.jvp(lambda x: mains.append(core.find_top_trace([x]).main) or x, (1.0,), (1.0,))
      assert mains[0] is not None
      print("ok", jax.stages.Lowered is minijax.stages.Lowered, jax.typing.ArrayLike is not None)
  """))
  out = subprocess.run([sys.executable, "-m", "minijax.run", str(script)], cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["ok", "True", "True"]


def test_cond_takes_jaxs_five_argument_form():
  # numpyro's NUTS calls cond(pred, true_operand, true_fun, false_operand, false_fun).
  assert lax.cond(True, 2.0, lambda x: x + 1, 3.0, lambda x: x - 1) == 3.0
  assert minijax.jit(lambda p: lax.cond(p, 2.0, lambda x: x + 1, 3.0, lambda x: x - 1))(False) == 2.0


def test_device_queries_take_jaxs_backend_argument():
  assert minijax.devices("cpu") == minijax.devices() == minijax.local_devices(backend="cpu")
  assert minijax.local_devices(process_index=0) == minijax.local_devices()
  with pytest.raises(RuntimeError, match="Unknown backend: 'tpu'"):
    minijax.devices("tpu")
  err, _ = checkify.checkify(lambda: checkify.check(False, "bad"))()
  with pytest.raises(checkify.JaxRuntimeError, match="bad"):
    checkify.check_error(err)


def test_products_take_precision_and_preferred_element_type():
  a, b = np.arange(3.0, dtype=np.float32), np.ones(3, np.float32)
  for f in (jnp.vdot, jnp.inner):
    assert f(a, b, precision="highest", preferred_element_type=np.float32) == 3.0
  assert jnp.tensordot(np.ones((2, 3)), b, 1, precision="highest").tolist() == [3.0, 3.0]


def test_typed_key_arrays_are_arrays():
  key = minijax.random.key(0)
  assert isinstance(key, minijax.Array) and isinstance(key, jnp.ndarray)
  assert not is_concrete_array(key)
  seen = []
  minijax.jit(lambda k: seen.append(isinstance(k, minijax.Array)))(key)
  assert seen == [True]


def test_flax_nnx_import_time_names_map_onto_minijax():
  # flax.nnx imports these at module level (variablelib, transforms, rnglib, linear).
  from minijax._src.state.types import AbstractRef
  from minijax._src import checkify as checkify_lib
  from minijax.experimental import hijax as hjx
  assert AbstractRef is minijax.core.state.AbstractRef
  assert checkify_lib.checkify is checkify.checkify and checkify_lib.user_checks
  assert isinstance(minijax.typeof(minijax.new_ref(jnp.zeros(2))), AbstractRef)

  class Effect:
    pass
  hjx.control_flow_allowed_effects.add_type(Effect)
  assert hjx.control_flow_allowed_effects.contains(Effect())
  assert not hjx.is_undefined_primal(1.0)

  class MyPrim(hjx.HiPrimitive):
    pass

  class MyType(hjx.MutableHiType):
    get = hjx.aval_method(lambda self: 1)
  with pytest.raises(NotImplementedError, match="hijax is not implemented"):
    MyPrim("p").bind(1.0)
  with pytest.raises(NotImplementedError, match="flax_hijax_variable"):
    MyType()
  a = jnp.ones((2, 3))
  out = lax.dot_general(a, a, (((1,), (1,)), ((), ())), out_sharding=None)
  np.testing.assert_array_equal(out, np.full((2, 2), 3.0, np.float32))
  with pytest.raises(NotImplementedError, match="out_sharding is not supported"):
    lax.dot_general(a, a, (((1,), (1,)), ((), ())), out_sharding="x")


def test_an_array_types_sharding_is_jaxs_unsharded_one():
  # chex's assert_tree_is_on_device/_on_host/_sharded read jax.typeof(x).sharding.
  s = minijax.typeof(jnp.ones((2, 3))).sharding
  assert s.is_fully_replicated and s.mesh.empty and s.spec == minijax.sharding.PartitionSpec(None, None)
  assert minijax.typeof(1.0).sharding.spec == minijax.sharding.PartitionSpec()
  assert minijax.sharding.AbstractMesh((2,), ("x",)).shape == {"x": 2}

  @minijax.jit
  def f(x):
    assert minijax.typeof(x).sharding.is_fully_replicated
    return x
  f(jnp.ones(2))


def _checked(fn, errors="all"):
  return checkify.checkify(fn, errors=getattr(checkify, errors + "_checks"))


def _positive(x):
  checkify.check(x > 0, "x must be positive, got {}", x)
  return x * 2


def _while_check(x):
  def body(c):
    i, v = c
    checkify.check(v < 10, "v too large: {}", v)
    return i + 1, v * 2
  return lax.while_loop(lambda c: c[0] < 5, body, (0, x))


OOB3 = ("out-of-bounds indexing for array of shape (3,): index 5 is out of bounds for axis 0 "
        "with size 3. ")
# checkify's outcomes, each recorded from JAX 0.10.2 on the same program and arguments
CHECKIFY_CASES = {
    "user": (_positive, (np.float32(-1),), "user",
             "x must be positive, got -1.0 (`check` failed)"),
    "user passes": (_positive, (np.float32(1),), "user", None),
    "user under jit": (minijax.jit(_positive), (np.float32(-1),), "user",
                       "x must be positive, got -1.0 (`check` failed)"),
    "nested jits": (minijax.jit(lambda x: minijax.jit(_positive)(x) + 1), (np.float32(-3),),
                    "user", "x must be positive, got -3.0 (`check` failed)"),
    "nan": (jnp.sin, (np.float32(np.inf),), "all", "nan generated by primitive: sin."),
    "nan under jit": (minijax.jit(jnp.log), (np.float32(-1),), "all",
                      "nan generated by primitive: log."),
    "division": (lambda x, y: x // y, (jnp.array([1, 2]), jnp.array([1, 0])), "all",
                 "division by zero"),
    "float division": (lambda x: x / (x - 2), (jnp.arange(4),), "div", "division by zero"),
    # f is traced closed over its arguments: numpy ones compute in numpy, unchecked
    "numpy arguments": (lambda x, y: x // y, (np.array([1, 2]), np.array([1, 0])), "all",
                        None),
    "0/0 is a division first": (lambda x: x / x, (jnp.float32(0),), "all", "division by zero"),
    "nan of dot_general": (lambda a: a @ a, (jnp.array([[np.inf, 0], [0, 1]], np.float32),),
                           "nan", "nan generated by primitive: dot_general."),
    "nan of pad": (lambda a: lax.pad(a, np.float32(np.nan), [(1, 0, 0)]),
                   (jnp.ones(2, np.float32),), "nan", "nan generated by primitive: pad."),
    "nan of cumsum": (jnp.cumsum, (jnp.array([np.inf, -np.inf], np.float32),), "nan",
                      "nan generated by primitive: cumsum."),
    "a nan through max is not checked": (jnp.max, (jnp.array([np.nan, 1], np.float32),), "nan",
                                         None),
    "integer rem by zero is not checked": (lambda x, y: x % y,
                                           (jnp.array([1, 2]), jnp.array([1, 0])), "all", None),
    "gather": (lambda x, i: x[i], (jnp.arange(3.0), 5), "all", OOB3),
    "gather axis 1": (lambda x, i: x[:, i], (jnp.arange(6.0).reshape(2, 3), 4), "all",
                      "out-of-bounds indexing for array of shape (2, 3): index 4 is out of "
                      "bounds for axis 1 with size 3. "),
    "gather in bounds": (lambda x, i: x[i], (jnp.arange(3.0), 2), "all", None),
    "scatter": (lambda x, i: x.at[i].set(1.0), (jnp.arange(3.0), 5), "all", OOB3),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i,), (2,)), (np.arange(3.0), 5),
                      "all", OOB3),
    "cond taken": (lambda p, x: lax.cond(p, jnp.log, jnp.sin, x), (True, np.float32(-1)),
                   "all", "nan generated by primitive: log."),
    "cond not taken": (lambda p, x: lax.cond(p, jnp.log, jnp.sin, x), (False, np.float32(-1)),
                       "all", None),
    "while": (_while_check, (np.float32(1),), "user", "v too large: 16.0 (`check` failed)"),
    "while passes": (_while_check, (np.float32(0.1),), "user", None),
    "scan": (lambda xs: lax.scan(lambda c, x: (c + jnp.log(x), c), 0.0, xs),
             (np.array([1.0, 2.0, -1.0, 3.0], np.float32),), "all",
             "nan generated by primitive: log."),
    "fori_loop": (lambda x: lax.fori_loop(0, 3, lambda i, v: jnp.log(v - 2.0), x),
                  (np.float32(10),), "all", "nan generated by primitive: log."),
    "grad": (minijax.grad(jnp.log), (np.float32(-1),), "all", "nan generated by primitive: log."),
    "first failure wins": (lambda x: (jnp.log(x), jnp.sin(jnp.inf * x)), (np.float32(-1),),
                           "all", "nan generated by primitive: log."),
    "vmap of a check": (minijax.vmap(_positive), (np.array([1.0, -2.0, -3.0], np.float32),),
                        "user", "x must be positive, got -3.0 (`check` failed)"),
}


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # numpy's own, unchecked
@pytest.mark.parametrize("case", sorted(CHECKIFY_CASES))
def test_checkify_finds_what_jax_finds(case):
  fn, args, errors, want = CHECKIFY_CASES[case]
  err, _ = _checked(fn, errors)(*args)
  assert err.get() == want
  if want is not None:
    with pytest.raises(checkify.JaxRuntimeError):
      err.throw()


def test_checkify_errors_are_values_that_jit_and_vmap_return():
  err, out = minijax.jit(_checked(jnp.log, "nan"))(np.float32(-1))
  assert err.get() == "nan generated by primitive: log." and np.isnan(out)
  assert isinstance(err.get_exception(), checkify.NaNError)
  err, _ = minijax.vmap(_checked(jnp.log, "nan"))(np.array([1.0, -1.0, -2.0], np.float32))
  assert err.get() == ("at mapped index 1: nan generated by primitive: log.\n"
                       "at mapped index 2: nan generated by primitive: log.")
  err, _ = _checked(lambda x: x[1], "index")(np.arange(3.0))
  assert err.get() is None and err.get_exception() is None
  with pytest.raises(TypeError, match="need to be PyTrees of arrays"):
    _checked(lambda x: checkify.check(x > 0, "{}", 1.5))(np.float32(1))
  # as in JAX, f is traced closed over its arguments: Python control flow on them works
  branchy = _checked(lambda x, n: jnp.log(x) if n > 0 else x, "nan")
  assert branchy(-1.0, 1)[0].get() == "nan generated by primitive: log."
  assert branchy(-1.0, 0)[0].get() is None


def test_one_level_flattening_node_queries_and_associative_reduction():
  assert tree_util.flatten_one_level({"a": 1, "b": (2, 3)}) == ((1, (2, 3)), ("a", "b"))
  (key_a, one), _ = tree_util.flatten_one_level_with_keys({"a": 1, "b": (2, 3)})[0]
  assert key_a == tree_util.DictKey("a") and one == 1
  assert tree_util.flatten_one_level(None) == ((), None)
  with pytest.raises(ValueError, match="can't tree-flatten type"):
    tree_util.flatten_one_level(1)
  assert tree_util.is_tree_node(tuple) and tree_util.is_tree_node(type(None))
  assert not tree_util.is_tree_node(int)
  pair = lambda a, b: (a, b)
  assert tree_util.tree_reduce_associative(pair, [1, 2, 3, 4, 5]) == ((1, 2), (3, (4, 5)))
  assert minijax.tree.reduce_associative(lambda a, b: a + b, [1, 2, 3, (4, 5)]) == 15
  assert minijax.tree.reduce_associative(lambda a, b: a + b, [], identity=0) == 0
  with pytest.raises(TypeError, match="Must specify identity"):
    minijax.tree.reduce_associative(lambda a, b: a + b, [])

  import dataclasses

  @tree_util.register_dataclass
  @dataclasses.dataclass
  class Op:
    x: object
    name: str = minijax.tree.static(default="add")

  leaves, treedef = minijax.tree.flatten(Op(1.0))
  assert leaves == [1.0] and minijax.tree.unflatten(treedef, [2.0]) == Op(2.0, "add")


def test_mesh_utils_shape_the_devices_for_a_mesh():
  from minijax.experimental import mesh_utils
  devices = minijax.devices()
  n = len(devices)
  mesh = mesh_utils.create_device_mesh((n, 1))
  assert mesh.shape == (n, 1) and list(mesh.ravel()) == devices
  hybrid = mesh_utils.create_hybrid_device_mesh((n,), (1,), process_is_granule=True)
  assert list(hybrid) == devices
  assert minijax.sharding.Mesh(mesh, ("x", "y")).shape == {"x": n, "y": 1}
  with pytest.raises(ValueError, match="must equal the product of mesh_shape"):
    mesh_utils.create_device_mesh((n + 1,))
  with pytest.raises(ValueError, match="does not have attribute slice_index"):
    mesh_utils.create_hybrid_device_mesh((n,), (1,))


def test_monitoring_reports_compile_durations_and_users_events():
  from minijax import monitoring
  durations, events, scalars = [], [], []
  on_duration = lambda event, seconds, **kw: durations.append((event, kw, seconds >= 0))
  monitoring.register_event_duration_secs_listener(on_duration)
  monitoring.register_event_listener(lambda event, **kw: events.append((event, kw)))
  monitoring.register_scalar_listener(lambda event, value, **kw: scalars.append((event, value)))
  try:
    minijax.jit(lambda x: x * 3 + 1, static_argnums=())(np.float32(2.0))
    names = [(e, kw["fun_name"]) for e, kw, ok in durations if ok]
    assert ("/jax/core/compile/jaxpr_trace_duration", "<lambda>") in names
    assert ("/jax/core/compile/jaxpr_to_mlir_module_duration", "jit(<lambda>)") in names
    assert ("/jax/core/compile/backend_compile_duration", "jit(<lambda>)") in names
    monitoring.record_event("/my/event", step=3)
    monitoring.record_scalar("/my/loss", 0.5)
    assert events == [("/my/event", {"step": 3})] and scalars == [("/my/loss", 0.5)]
    monitoring.unregister_event_duration_listener(on_duration)
    with pytest.raises(AssertionError, match="not a registered"):
      monitoring.unregister_event_duration_listener(on_duration)
  finally:
    monitoring.clear_event_listeners()


def test_init_error_eval_context_and_dims():
  from minijax import core
  assert checkify.init_error.get() is None and repr(checkify.init_error) == "Error(None)"
  assert core.max_dim(2, 3) == 3 and core.min_dim(2, 3) == 2
  seen = []

  def f(x):
    with core.eval_context():
      seen.append(is_concrete_array(jnp.ones(2) * 3))  # computed now, though under jit
    return x

  minijax.jit(f)(1.0)
  assert seen == [True]


def test_the_mlir_extension_api_builds_attributes_and_threads_tokens():
  from jaxlib.mlir import ir
  with ext_mlir.make_ir_context(), ir.Location.unknown():
    assert str(ext_mlir.i32_attr(3)) == "3 : i32"
    assert str(ext_mlir.dense_int_array([1, 2])) == "array<i64: 1, 2>"
    assert str(ext_mlir.ir_attribute([True, 1, "a"])) == '[true, 1, "a"]'
    module = ir.Module.parse("func.func @f() { return }")
    assert "func.func @f" in ext_mlir.module_to_string(module)
    assert ext_mlir.module_to_bytecode(module).startswith(b"ML\xefR")
  assert ext_mlir.unflatten_ir_values_like_types([1, 2, 3], [0, [0, 0]]) == [1, [2, 3]]
  assert ext_mlir.flatten_ir_values([1, [2, 3]]) == [1, 2, 3]
  assert ext_mlir.TokenSet is not None and ext_mlir.Token is ir.Value


def test_jax_md_and_e3nn_import_time_names_map_onto_minijax():
  # jax-md asks `jax.extend.backend.get_backend().platform` and imports its Pallas (triton)
  # kernels at module level; e3nn-jax imports `infer_argnums_and_argnames`, `BCOO` and
  # `sparsify`.  What minijax cannot run raises when used, never computes something else.
  import inspect
  from minijax._src.api_util import infer_argnums_and_argnames
  from minijax.experimental import pallas as pl, sparse
  from minijax.experimental.pallas import triton as plt
  from minijax.extend import backend
  assert backend.get_backend().platform == "cpu"
  assert backend.get_backend("cpu") is backend.backends()["cpu"]
  assert backend.get_default_device() == minijax.devices()[0]
  with pytest.raises(RuntimeError, match="Unknown backend: 'tpu'"):
    backend.get_backend("tpu")

  def f(x, y, *, z):
    pass
  assert infer_argnums_and_argnames(inspect.signature(f), (1,), None) == ((1,), ("y",))
  with pytest.raises(NotImplementedError, match="pallas.pallas_call"):
    pl.pallas_call(lambda ref: None, out_shape=None)
  with pytest.raises(NotImplementedError, match="pallas.triton.load"):
    plt.load(None)
  einsum = sparse.sparsify(lambda a, b: jnp.einsum("ij,j->i", a, b))
  with pytest.raises(NotImplementedError, match="sparsify of '<lambda>'"):
    einsum(jnp.eye(2), jnp.ones(2))
