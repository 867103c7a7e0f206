"""Control flow behaving as JAX 0.10.2 does where its own tests (lax_control_flow_test.py)
found minijax differing: argument checks, `fori_loop`'s bounds and index, `disable_jit`,
what the jaxprs of loops and branches hold, and their lowering.  Values recorded from JAX
are literals here."""
from __future__ import annotations

import re

import numpy as np
import pytest

import minijax
from minijax import lax

f32 = np.float32


# ----------------------------------------------------------------------------- arguments

def test_associative_scan_of_a_non_callable_names_the_function():
  with pytest.raises(TypeError, match=r"lax\.associative_scan: fn argument should be "
                     "callable"):
    lax.associative_scan(42, 0)


def test_associative_scan_fn_may_return_another_container_of_as_many_arrays():
  # JAX takes the leaves of fn's result whatever holds them (dynamax returns a namedtuple
  # for a tuple); a different number of them is refused
  import collections
  Pair = collections.namedtuple("Pair", "a b")
  out = lax.associative_scan(lambda x, y: Pair(x[0] + y[0], x[1] * y[1]),
                             (np.arange(4.0, dtype=f32), np.full(4, 2.0, f32)))
  assert type(out) is tuple
  np.testing.assert_array_equal(out[0], [0, 1, 3, 6])
  np.testing.assert_array_equal(out[1], [2, 4, 8, 16])
  with pytest.raises(TypeError, match=r"as many arrays as its inputs hold \(2: .*got 1"):
    lax.associative_scan(lambda x, y: x[0] + y[0], (np.ones(3, f32), np.ones(3, f32)))


# ----------------------------------------------------------------------------- fori_loop

def test_fori_loop_index_with_concrete_bounds_is_a_weak_python_int():
  # JAX's scan carries int(lower): the index is weakly typed, so it multiplies a float32
  # carry even under strict promotion, and int16 bounds still give an int32 index.
  f = lambda x: lax.fori_loop(0, 3, lambda i, x: x * (i + 1), x)
  with minijax.numpy_dtype_promotion("strict"):
    assert f(f32(2)) == 12.0
    assert minijax.jvp(f, (f32(2),), (f32(1),)) == (12.0, 6.0)
  jaxpr = minijax.make_jaxpr(
      lambda x: lax.fori_loop(np.int16(0), np.int16(3), lambda i, c: c + i, x))(1.)
  index = jaxpr.jaxpr.eqns[0].params["jaxpr"].jaxpr.invars[0].aval
  assert (index.dtype, index.weak_type) == (np.int32, True)


def test_fori_loop_float_bounds_known_now_are_a_scan_and_traced_ones_a_while():
  # Eager jvp bounds are concrete: a scan, so reverse mode works (JAX: grad 2.0).
  func = lambda x: lax.fori_loop(x, x + 2., lambda i, c: c * i, x)
  assert minijax.grad(func)(1.) == 2.0
  assert minijax.linearize(func, 1.)[0] == 2.0
  # Traced float bounds: a while over float32 indices, which reverse mode refuses.
  jaxpr = minijax.make_jaxpr(lambda x: lax.fori_loop(x, x + 2., lambda i, c: c, x))(1.)
  (eqn,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "while"]
  assert eqn.params["cond_jaxpr"].jaxpr.invars[0].aval.dtype == np.float32
  in_cond = lambda x: lax.cond(True, lambda x, _: lax.fori_loop(x, x + 2., lambda i, c: c * 2.,
                                                                 x), lambda _, x: x, x, 1.)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                     "lax.while_loop"):
    minijax.grad(in_cond)(1.)
  assert minijax.linearize(in_cond, 1.)[0] == 4.0
  with pytest.raises(TypeError, match="fori_loop bounds must be scalars"):
    lax.fori_loop(np.zeros(2, np.int32), 3, lambda i, c: c, 0.)


def test_fori_loop_that_never_runs_returns_arrays_under_jit_and_the_value_without():
  out = lax.fori_loop(0, 0, lambda i, c: c + i, 1.)
  assert isinstance(out, minijax.Array) and out == 1.0
  with minijax.disable_jit():
    out = lax.fori_loop(0, 0, lambda i, c: c + i, 1.)
  assert type(out) is float and out == 1.0


# ----------------------------------------------------------------------------- disable_jit

def test_disable_jit_runs_loops_and_branches_in_python_with_concrete_values():
  seen = []

  def body(c, x):
    seen.append(float(c))  # a concrete value: no tracer reaches the function
    return c + x, c * x

  with minijax.disable_jit():
    carry, ys = lax.scan(body, f32(0), np.arange(3, dtype=f32))
    assert seen == [0.0, 0.0, 1.0]
    assert carry == 3.0 and ys.tolist() == [0.0, 0.0, 2.0]
    carry, ys = lax.scan(lambda c, x: (c + x, c), f32(0), np.arange(3, dtype=f32),
                         reverse=True)
    assert carry == 3.0 and ys.tolist() == [3.0, 2.0, 0.0]
    assert lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0) == 3
    assert lax.cond(True, lambda: 1., lambda: 2.) == 1.0  # the branch's own Python value
    assert lax.switch(5, [lambda: 1., lambda: 2.]) == 2.0  # the index clamped
    # A predicate that is not concrete (vmap) stages the loop instead.
    out = minijax.vmap(lambda x: lax.while_loop(lambda c: c < x, lambda c: c + 1, 0))(
        np.arange(3))
    assert out.tolist() == [0, 1, 2]


def test_zero_length_scan_works_under_jit_and_raises_without():
  f = lambda: lax.scan(lambda c, x: (c + x, x), 0., np.array([], f32))[0]
  assert f() == 0.0
  with minijax.disable_jit():
    with pytest.raises(ValueError, match="zero-length scan is not supported in "
                       r"disable_jit\(\) mode"):
      f()


# ----------------------------------------------------------------------------- cond

def test_cond_passing_a_python_scalar_through_returns_an_array():
  y = lax.cond(True, lambda x: x, lambda x: x, 1.0)
  assert isinstance(y, minijax.Array) and y == 1.0


def test_switch_branches_share_residual_slots_of_one_type():
  # JAX's counts: the forward cond of grad returns the primal and one slot per residual of
  # a type that some branch needs at once; the backward cond reads them.  sinh's jvp
  # needs one residual (cosh x), as sin's and cos's do, so a third branch adds no slot; a
  # branch needing sin x and cos x together adds one.
  import minijax.numpy as jnp
  branches = [jnp.sin, jnp.cos]
  sizes = []
  for extra in ([], [jnp.sinh], [jnp.sinh, lambda x: jnp.sin(x) + jnp.cos(x)]):
    bs = branches + extra
    jaxpr = minijax.make_jaxpr(minijax.grad(lambda x, i: lax.switch(i + 1, bs, x)))(0., 0)
    fwd, bwd = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "cond"]
    sizes.append((len(fwd.params["branches"][0].jaxpr.outvars),
                  len(bwd.params["branches"][0].jaxpr.invars)))
  assert sizes == [(2, 2), (2, 2), (3, 3)]
  # and the values are right for every branch
  for i, d in enumerate([np.cos(0.5), -np.sin(0.5), np.cosh(0.5), np.cos(0.5) - np.sin(0.5)]):
    g = minijax.grad(lambda x: lax.switch(i, branches + [jnp.sinh,
                                                         lambda x: jnp.sin(x) + jnp.cos(x)], x))
    np.testing.assert_allclose(g(f32(0.5)), d, rtol=1e-6)


@pytest.mark.parametrize("under_jit", [False, True])
def test_weak_types_of_outputs_are_branch_zeros_and_the_loop_bodys(under_jit):
  # JAX's: a cond's outputs have the types of branch 0 (false_fun, or switch's first
  # branch), weak types included; a loop's carry out has the body's.  A sampler whose state
  # starts as a Python float keeps it weakly typed through `cond(accept, new, old)`, and
  # its jitted step is traced once (blackjax's test_compilation counts it).
  import minijax.numpy as jnp
  weak = lambda f: (minijax.jit(f) if under_jit else f)().weak_type
  strong = lambda: jnp.float32(2)
  assert weak(lambda: lax.cond(True, strong, lambda: 1.0)) is True
  assert weak(lambda: lax.cond(False, lambda: 1.0, strong)) is False
  assert weak(lambda: lax.switch(1, [lambda: 1.0, strong])) is True
  assert weak(lambda: lax.switch(0, [strong, lambda: 1.0])) is False
  assert weak(lambda: lax.cond(True, lambda x: x, lambda x: jnp.float32(3), 1.0)) is False
  assert weak(lambda: lax.scan(lambda c, x: (1.0, x), f32(1), jnp.arange(3.))[0]) is True
  assert weak(lambda: lax.fori_loop(0, 3, lambda i, c: 2.0, f32(1))) is True
  assert weak(lambda: lax.while_loop(lambda c: c < 3, lambda c: f32(5), f32(1))) is False


# ----------------------------------------------------------------------------- typechecking

def test_typecheck_names_a_control_flow_param_of_the_wrong_type():
  from minijax.extend import core
  import minijax.numpy as jnp

  def eqn_of(f, *args, name):
    jaxpr = minijax.make_jaxpr(f)(*args).jaxpr
    return jaxpr, next(e for e in jaxpr.eqns if e.primitive.name == name)

  jaxpr, eqn = eqn_of(lambda x: lax.switch(0, [jnp.sin, jnp.cos], x), 1., name="cond")
  eqn.params["branches"] = (4, 2)
  with pytest.raises(core.JaxprTypeError, match=re.escape(
      "invalid cond param branches of type tuple, tuple of ClosedJaxpr required: (4, 2)")):
    core.check_jaxpr(jaxpr)
  scan_fun = lambda c, xs: lax.scan(lambda c, x: (c * x, x), c, xs)
  for name, value, required in [("reverse", 4, "bool"), ("num_consts", -3, "non-negative int"),
                                ("num_carry", 1.5, "non-negative int"),
                                ("length", -1, "non-negative int")]:
    jaxpr, eqn = eqn_of(scan_fun, f32(1), np.ones(3, f32), name="scan")
    core.check_jaxpr(jaxpr)
    eqn.params[name] = value
    with pytest.raises(core.JaxprTypeError, match=re.escape(
        f"invalid scan param {name} of type {type(value).__name__}, {required} required: "
        f"{value}")):
      core.check_jaxpr(jaxpr)


# ----------------------------------------------------------------------------- forwarding

def test_scan_returns_an_x_the_body_passes_through_as_the_xs_itself():
  g = lambda x: lax.scan(lambda c, x: (c + 1, x), 0, x)
  xs = minijax.numpy.arange(3.)
  jaxpr = minijax.make_jaxpr(g)(xs)
  assert len(jaxpr.eqns[0].params["jaxpr"].jaxpr.outvars) == 1  # only the carry
  carry, ys = g(xs)
  assert carry == 3 and ys is xs
  carry, ys = g(np.arange(3., dtype=f32))  # a numpy xs comes back an Array
  assert isinstance(ys, minijax.Array) and ys.tolist() == [0., 1., 2.]
  carry, ys = minijax.jit(g)(xs)
  assert ys.tolist() == [0., 1., 2.]


def test_vjp_of_scan_reads_an_extensive_input_as_its_residual_without_a_copy():
  def cumprod(x):
    s = minijax.numpy.ones((2, 3), f32)
    return lax.scan(lambda s, x: (x * s, s), s, x)

  x_np = np.random.RandomState(0).randn(4, 2, 3).astype(f32)
  x = minijax.numpy.asarray(x_np)
  _, vjp_fun = minijax.vjp(cumprod, x)
  (ext_res,) = vjp_fun.args_res
  assert ext_res is x
  _, vjp_np = minijax.vjp(cumprod, x_np)  # a numpy array is put on the device instead
  assert all(isinstance(r, minijax.Array) for r in vjp_np.opaque_residuals)
  ct = (np.ones((2, 3), f32), np.ones((4, 2, 3), f32))
  expected = minijax.vjp(lambda x: cumprod(x * 1), x)[1](ct)[0]
  for f in (vjp_fun, vjp_np):
    np.testing.assert_allclose(f(ct)[0], expected, rtol=1e-6)


def test_while_carry_the_body_returns_unchanged_and_the_cond_ignores_stays_unbatched():
  def foo(w, x, c_max):
    def body(val):
      c, x, w = val
      return c + 1, x @ w, w
    _, x, w = lax.while_loop(lambda val: val[0] < c_max, body, (0, x, w))
    return w, x

  w = minijax.numpy.ones((2, 2))
  w_, x = minijax.vmap(foo, in_axes=(None, 0, 0), out_axes=(None, 0))(
      w, minijax.numpy.ones((4, 2)), minijax.numpy.arange(4))
  assert w_ is w
  assert x.tolist() == [[1., 1.], [2., 2.], [4., 4.], [8., 8.]]
  (eqn,) = minijax.make_jaxpr(foo)(w, np.ones(2, f32), 3).jaxpr.eqns
  assert eqn.params["body_nconsts"] == 1 and len(eqn.outvars) == 2
  # read by the condition: stays a carry
  g = lambda w: lax.while_loop(lambda v: v[1].sum() < 10, lambda v: (v[0] + 1, v[1]), (0, w))
  (eqn,) = minijax.make_jaxpr(g)(w).jaxpr.eqns
  assert len(eqn.outvars) == 2
