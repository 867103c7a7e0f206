"""Dead-code elimination of jaxprs (`partial_eval.dce_jaxpr` and its `dce_rules`), and how
jaxprs are built: constants shared by a cond's branches, its int32 index, invariant scan
carries, scalar conversions folded at trace time, `make_jaxpr`'s options and
`jit(inline=True)`.  The expected counts and used inputs are JAX 0.10.2's."""
import numpy as np
import pytest

import minijax
from minijax import lax
import minijax.numpy as jnp
from minijax.core.jaxpr import eval_jaxpr, typecheck_jaxpr
from minijax.extend.core import subjaxprs
from minijax.interpreters import partial_eval as pe


def _num_eqns(jaxpr):
  return len(jaxpr.eqns) + sum(_num_eqns(j.jaxpr if hasattr(j, "jaxpr") else j)
                               for j in subjaxprs(jaxpr))


def _check_dce(closed, used_outputs, expected_used_inputs, expected_num_eqns=None):
  jaxpr = closed.jaxpr
  pruned, used_inputs = pe.dce_jaxpr(jaxpr, used_outputs)
  typecheck_jaxpr(pruned)
  assert used_inputs == expected_used_inputs
  if expected_num_eqns is not None:
    assert _num_eqns(pruned) == expected_num_eqns, str(pruned)
  rng = np.random.RandomState(0)
  args = [rng.uniform(-1, 1, v.aval.shape).astype(v.aval.dtype) for v in jaxpr.invars]
  full = eval_jaxpr(jaxpr, closed.consts, *args)
  outs = eval_jaxpr(pruned, closed.consts, *(a for a, u in zip(args, used_inputs) if u))
  expected = [y for y, u in zip(full, used_outputs) if u]
  assert len(outs) == len(expected)
  for a, b in zip(outs, expected):
    np.testing.assert_allclose(a, b, rtol=1e-6)
  return pruned


# ----------------------------------------------------------------------------- scan

def _shifted_sums(lst):
  def body(c, _):
    return [c[0]] + [c1 + c2 for c1, c2 in zip(c[:-1], c[1:])], None
  return lax.scan(body, lst, None, length=len(lst))[0]


def test_scan_dce_grows_the_needed_carries_to_a_fixed_point():
  closed = minijax.make_jaxpr(_shifted_sums)([1., 2., 3., 4.])
  assert len(closed.jaxpr.eqns) == 1
  assert len(closed.jaxpr.eqns[0].params["jaxpr"].jaxpr.eqns) == 3
  # carry i reads carries i and i-1 each step: using one needs all those to its left
  _check_dce(closed, [True, True, True, False], [True, True, True, False], 1 + 2)
  _check_dce(closed, [False, False, True, False], [True, True, True, False], 1 + 2)
  _check_dce(closed, [True, True, False, False], [True, True, False, False], 1 + 1)
  pruned = _check_dce(closed, [False, False, False, True], [True, True, True, True], 1 + 3)
  eqn = pruned.eqns[0]  # (carry 0, returned unchanged, is a constant of the loop)
  assert eqn.params["num_carry"] == 3 and len(eqn.outvars) == 3


def test_scan_dce_drops_a_scan_whose_outputs_are_unused():
  def f(xs):
    return lax.scan(lambda c, x: (c * x, c), jnp.float32(1.), xs)
  closed = minijax.make_jaxpr(f)(jnp.arange(1., 5.))
  _check_dce(closed, [True, False], [True], 2)
  _check_dce(closed, [False, True], [True], 2)
  _check_dce(closed, [False, False], [False], 0)


def test_scan_carry_returned_unchanged_becomes_a_constant_of_the_loop():
  hidden = [1, 2, 3, 5, 8]

  def f(lst):
    def body(c, _):
      sub = [c[i] for i in hidden]
      sub = [sub[0]] + [a * b for a, b in zip(sub[:-1], sub[1:])]
      new = list(c)
      for i, v in zip(hidden, sub):
        new[i] = v
      return new, None
    return lax.scan(body, lst, np.arange(len(lst), dtype="float32"))[0]

  args = [float(i) for i in range(1, 11)]
  closed = minijax.make_jaxpr(f)(args)
  (eqn,) = closed.jaxpr.eqns
  assert eqn.params["num_carry"] == 4  # the carries 1, 2, 3, 5 change; 8 is read only
  # the unchanged carries are the jaxpr's inputs themselves
  assert closed.jaxpr.outvars[0] is closed.jaxpr.invars[0]
  assert closed.jaxpr.outvars[9] is closed.jaxpr.invars[9]
  np.testing.assert_allclose(f(args), minijax.jit(f)(args))
  used = [False] * 10
  used[8] = True
  _check_dce(closed, used, [i in hidden for i in range(10)], 1 + 4)
  used = [i in (6, 7, 9) for i in range(10)]
  _check_dce(closed, used, used, 0)
  used = [i == 3 for i in range(10)]
  _check_dce(closed, used, [i in (1, 2, 3) for i in range(10)], 1 + 2)


def test_scan_dce_prunes_a_jvp_of_a_custom_jvp_body():
  @minijax.custom_jvp
  def f(x):
    return x * np.arange(3.)

  @f.defjvp
  def f_jvp(primals, tangents):
    (x,), (xdot,) = primals, tangents
    return f(x), xdot * np.arange(3.)

  def g(x):
    return lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]

  closed = minijax.make_jaxpr(lambda x, t: minijax.jvp(g, (x,), (t,)))(
      np.arange(3.), np.arange(3.))
  _check_dce(closed, [True, True], [True, True])
  _check_dce(closed, [True, False], [True, False])


# ----------------------------------------------------------------------------- cond

def _cond_jaxpr(true_fun, false_fun):
  x = jnp.array(1., dtype="float32")
  return minijax.make_jaxpr(lambda a, b: lax.cond(a > 0, true_fun, false_fun, a, b))(x, x)


def test_cond_index_is_the_predicate_as_int32():
  closed = _cond_jaxpr(lambda a, b: (jnp.sin(a), jnp.sin(b)),
                       lambda a, b: (jnp.sin(a), jnp.sin(b)))
  gt, convert, cond = closed.jaxpr.eqns
  assert convert.primitive.name == "convert_element_type"
  assert convert.params["new_dtype"] == np.int32
  assert cond.invars[0] is convert.outvars[0]
  _check_dce(closed, [True, True], [True, True], 7)
  _check_dce(closed, [False, False], [False, False], 0)


def test_cond_dce_prunes_each_branch_and_keeps_operands_any_branch_reads():
  sin = jnp.sin
  closed = _cond_jaxpr(lambda a, b: (sin(a), sin(b)), lambda a, b: (sin(a), sin(a)))
  pruned = _check_dce(closed, [True, False], [True, False], 5)
  assert all(len(b.jaxpr.invars) == 1 for b in pruned.eqns[-1].params["branches"])
  closed = _cond_jaxpr(lambda a, b: (sin(a), sin(b)), lambda a, b: (sin(b), sin(a)))
  _check_dce(closed, [True, False], [True, True], 5)
  closed = _cond_jaxpr(lambda a, b: (sin(a), sin(a)), lambda a, b: (sin(b), sin(b)))
  _check_dce(closed, [True, True], [True, True], 7)
  _check_dce(closed, [True, False], [True, True], 5)


def test_cond_passes_a_constant_both_branches_close_over_once():
  def f(x):
    return lax.cond(x >= 0., lambda t, _: t + x, lambda _, e: e - x, x + 1., x + 2.)
  expected = """{ lambda ; a:f32[]. let
    b:bool[] = ge a 0.0:f32[]
    c:f32[] = add a 1.0:f32[]
    d:f32[] = add a 2.0:f32[]
    e:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
    f:f32[] = cond[
      branches=(
        { lambda ; g:f32[] h:f32[] i:f32[]. let j:f32[] = sub i g in (j,) }
        { lambda ; k:f32[] l:f32[] m:f32[]. let n:f32[] = add l k in (n,) }
      )
    ] e a c d
  in (f,) }"""
  assert str(minijax.make_jaxpr(f)(jnp.float32(3.))) == expected
  assert float(f(jnp.float32(3.))) == 7.0 and float(f(jnp.float32(-3.))) == 2.0


# ----------------------------------------------------------------------------- calls

def test_jit_dce_prunes_the_called_jaxpr_and_its_arguments():
  @minijax.jit
  def inner(x, y):
    return jnp.sin(x), jnp.cos(y)

  closed = minijax.make_jaxpr(lambda x, y: inner(x, y))(1., 2.)
  pruned = _check_dce(closed, [True, False], [True, False], 2)
  (call,) = pruned.eqns
  assert call.primitive.name == "jit" and len(call.invars) == 1
  assert call.params["donated_invars"] == (False,)
  _check_dce(closed, [False, False], [False, False], 0)


def test_transposing_a_jit_drops_what_only_zero_cotangents_reach():
  f = minijax.jit(lambda x: (2 * x, x > 0))  # a comparison has no transpose
  (ct,) = minijax.linear_transpose(lambda x: f(x)[0], 1.)(3.)
  assert float(ct) == 6.


def test_jit_inline_puts_the_equations_in_the_enclosing_jaxpr():
  f = minijax.jit(lambda x: x * 2, inline=False)
  assert "jit" in str(minijax.make_jaxpr(f)(3))
  g = minijax.jit(lambda x: x * 2, inline=True)
  closed = minijax.make_jaxpr(g)(3)
  assert "jit" not in str(closed) and [e.primitive.name for e in closed.eqns] == ["mul"]
  assert int(g(3)) == 6 and float(minijax.grad(minijax.jit(jnp.sin, inline=True))(0.)) == 1.


# ----------------------------------------------------------------------------- building

def test_scalar_conversion_is_folded_into_a_literal():
  closed = minijax.make_jaxpr(lambda: lax.convert_element_type(3., "float16"))()
  assert closed.eqns == []
  assert str(closed) == "{ lambda ; . let  in (3.0:f16[],) }"
  y = lax.convert_element_type(3.7, np.int32)
  assert isinstance(y, minijax.Array) and y.dtype == np.int32 and int(y) == 3
  # a non-finite float to an integer is left to the primitive
  closed = minijax.make_jaxpr(lambda: lax.convert_element_type(np.float32(np.inf),
                                                                 np.int32))()
  assert [e.primitive.name for e in closed.eqns] == ["convert_element_type"]


def test_jaxpr_without_equations_prints_as_jax_does():
  closed = minijax.make_jaxpr(lambda x: (x, 1., np.zeros(1, dtype=np.float32)))(
      jnp.float32(0.))
  assert str(closed) == "{ lambda a:f32[1]; b:f32[]. let  in (b, 1.0:f32[], a) }"


def test_make_jaxpr_return_shape_and_axis_env():
  _, shapes = minijax.make_jaxpr(lambda x: (x + 1, jnp.zeros(2, jnp.float32)),
                                 return_shape=True)(jnp.int32(1))
  assert shapes == (minijax.ShapeDtypeStruct((), jnp.int32),
                    minijax.ShapeDtypeStruct((2,), jnp.float32))
  closed = minijax.make_jaxpr(lambda x: x - lax.psum(x, "i"), axis_env=[("i", 4)])(2)
  assert "psum" in str(closed)
  with pytest.raises(NameError):
    minijax.make_jaxpr(lambda x: x - lax.psum(x, "i"))(2)


@pytest.fixture
def simplified_constants():
  minijax.config.update("jax_use_simplified_jaxpr_constants", True)
  try:
    yield
  finally:
    minijax.config.update("jax_use_simplified_jaxpr_constants", False)


def test_simplified_jaxpr_constants_is_off_by_default():
  assert minijax.config.jax_use_simplified_jaxpr_constants is False
  closed = minijax.make_jaxpr(lambda x: (x, np.zeros(3, dtype=np.float32)))(jnp.float32(0.))
  assert str(closed) == "{ lambda a:f32[3]; b:f32[]. let  in (b, a) }"


def test_simplified_jaxpr_constants_makes_numpy_arrays_literals(simplified_constants):
  closed = minijax.make_jaxpr(lambda x: (x, np.zeros(3, dtype=np.float32)))(jnp.float32(0.))
  assert str(closed) == "{ lambda ; a:f32[]. let  in (a, [...]:f32[3]) }"
  c = np.arange(3., dtype=np.float32)
  f = lambda x: jnp.sum(jnp.sin(x * c))
  closed = minijax.make_jaxpr(f)(jnp.ones(3))
  assert closed.consts == [] and "[...]:f32[3]" in str(closed)
  x = jnp.array([0.5, 1., 2.])
  np.testing.assert_allclose(minijax.jit(f)(x), np.sum(np.sin(np.asarray(x) * c)), rtol=1e-6)
  np.testing.assert_allclose(minijax.jit(minijax.grad(f))(x),
                             c * np.cos(np.asarray(x) * c), rtol=1e-6)
  np.testing.assert_allclose(minijax.vmap(minijax.jit(f))(jnp.stack([x, x])),
                             [np.sum(np.sin(np.asarray(x) * c))] * 2, rtol=1e-6)
  body = lambda carry, _: (carry + c, None)
  out, _ = minijax.jit(lambda: lax.scan(body, jnp.zeros(3), None, length=2))()
  np.testing.assert_allclose(out, 2 * c)


def test_make_jaxpr_closes_over_a_numpy_array_once():
  c = np.ones(3, np.float32)

  def f():
    return jnp.array(c), jnp.sum(c), c, jnp.asarray(c), jnp.sum(c), c

  closed = minijax.make_jaxpr(f)()
  assert len(closed.consts) == 1 and closed.consts[0] is c
  a = closed.jaxpr.constvars[0]
  assert [closed.jaxpr.outvars[i] for i in (0, 2, 3, 5)] == [a] * 4
  outs = minijax.jit(f)()
  np.testing.assert_allclose(outs[0], c)
  np.testing.assert_allclose(outs[1], 3.)
  assert isinstance(minijax.jit(lambda: jnp.array(c))(), minijax.Array)


def test_dce_sink_keeps_what_computes_its_operand():
  def f(x):
    y = jnp.sin(x)
    lax.dce_sink(y)
    return x * 2

  closed = minijax.make_jaxpr(f)(np.float32(1.))
  pruned, used = pe.dce_jaxpr(closed.jaxpr, [True])
  assert [e.primitive.name for e in pruned.eqns] == ["sin", "dce_sink", "mul"]
  def g(x):
    jnp.sin(x)
    return x * 2
  pruned, _ = pe.dce_jaxpr(minijax.make_jaxpr(g)(np.float32(1.)).jaxpr, [True])
  assert [e.primitive.name for e in pruned.eqns] == ["mul"]
  # it runs, and passes through every transformation
  assert float(f(1.)) == 2. and float(minijax.jit(f)(1.)) == 2.
  assert float(minijax.grad(f)(1.)) == 2.
  np.testing.assert_allclose(minijax.vmap(f)(jnp.arange(3.)), [0., 2., 4.])
  with pytest.raises(NotImplementedError, match="prevent_mlir_dce"):
    minijax.jit(lambda x: lax.dce_sink(x, prevent_mlir_dce=True))(1.)
