"""Core: dtypes and promotion, avals, tracing into jaxprs, the printer, the typechecker,
and the errors tracing raises."""
import gc

import numpy as np
import pytest

import minijax
from minijax import lax
import minijax.numpy as jnp
from minijax.core import dtypes
from minijax.core.avals import ShapedArray
from minijax.core.errors import ConcretizationTypeError, UnexpectedTracerError
from minijax.core.jaxpr import Jaxpr, JaxprEqn, Var, typecheck_jaxpr, JaxprTypeError


@pytest.mark.parametrize("a, b, expected", [
    ((dtypes.float16, False), (dtypes.float32, True), (dtypes.float16, False)),
    ((dtypes.int32, False), (dtypes.float32, True), (dtypes.float32, True)),
    ((dtypes.uint8, False), (dtypes.int8, False), (dtypes.int16, False)),
    ((dtypes.bool_, False), (dtypes.int32, True), (dtypes.int32, True)),
    ((dtypes.bfloat16, False), (dtypes.float16, False), (dtypes.float32, False)),
    ((dtypes.int32, False), (dtypes.float32, False), (dtypes.float32, False)),
    ((dtypes.int8, False), (dtypes.int32, True), (dtypes.int8, False)),
])
def test_promotion_follows_jax_lattice(a, b, expected):
  assert dtypes.result_type(a, b) == expected


def test_x64_off_canonicalizes_64_bit_types_to_32_bits():
  assert dtypes.canonicalize_dtype(np.float64) == np.float32
  assert dtypes.canonicalize_dtype(np.int64) == np.int32
  x = minijax.device_put(np.arange(3, dtype=np.float64))
  assert x.dtype == np.float32


def test_x64_on_keeps_64_bit_types(x64):
  assert dtypes.canonicalize_dtype(np.float64) == np.float64
  x = minijax.device_put(np.arange(3, dtype=np.int64))
  assert x.dtype == np.int64
  assert minijax.device_put(1.5).dtype == np.float64


def test_python_scalars_are_weakly_typed():
  x = minijax.device_put(2.0)
  assert x.weak_type and x.dtype == np.float32
  y = lax.add(minijax.device_put(np.ones(2, np.float16)), 1.0)
  assert y.dtype == np.float16 and not y.weak_type


def test_unknown_config_flag_is_named():
  with pytest.raises(AttributeError, match="no flag 'enable_x65'"):
    minijax.config.update("enable_x65", True)


def test_avals_print_short_and_hash_by_value():
  a = ShapedArray((2, 3), np.float32)
  assert a.str_short() == "float32[2,3]"  # as JAX's errors spell it; jaxprs print it short:
  assert a.str_short(short_dtypes=True) == "f32[2,3]"
  assert a == ShapedArray((2, 3), np.float32) and hash(a) == hash(ShapedArray((2, 3), np.float32))
  assert ShapedArray((), dtypes.bfloat16).str_short(short_dtypes=True) == "bf16[]"
  assert ShapedArray((1,), np.bool_).str_short() == "bool[1]"


def test_make_jaxpr_prints_a_short_jaxpr_on_one_line():
  x = np.ones(3, np.float32)
  assert str(minijax.make_jaxpr(lax.sin)(x)) == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"


def test_conversions_of_constants_are_folded_into_literals_as_in_jax():
  # jnp.array(2.0) and jnp.asarray(1) under tracing are literals of the dtype they end in,
  # not conversion equations (JAX's jaxpr, printed by JAX 0.10.2)
  f = lambda x: x * jnp.array(2.0) + jnp.asarray(1)  # noqa: E731
  jaxpr = minijax.make_jaxpr(f)(np.ones(2, np.float32))
  assert str(jaxpr) == ("{ lambda ; a:f32[2]. let\n    b:f32[2] = mul a 2.0:f32[]\n"
                        "    c:f32[2] = add b 1.0:f32[]\n  in (c,) }")


def test_make_jaxpr_prints_longer_jaxprs_one_equation_per_line():
  def f(x, y):
    return lax.sin(lax.mul(lax.add(x, y), y)), lax.cos(x)
  text = str(minijax.make_jaxpr(f)(np.ones(3, np.float32), np.ones(3, np.float32)))
  assert text == """\
{ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] = add a b
    d:f32[3] = mul c b
    e:f32[3] = sin d
    f:f32[3] = cos a
  in (e, f) }"""


def test_python_scalars_stay_rank0_literals_as_in_jax():
  x = np.ones(3, np.float32)
  assert (str(minijax.make_jaxpr(lambda x: x * 2.0)(x))
          == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }")
  assert (str(minijax.make_jaxpr(lambda x, y: x - y)(x, np.float32(2)))
          == "{ lambda ; a:f32[3] b:f32[]. let c:f32[3] = sub a b in (c,) }")
  assert (str(minijax.make_jaxpr(lambda x: lax.lt(1, x))(np.ones(2, np.int32)))
          == "{ lambda ; a:i32[2]. let b:bool[2] = lt 1:i32[] a in (b,) }")


# Golden strings from jax 0.10.2, which prints a scalar literal as the Python value of its
# item: an f32 literal shows the double nearest the f32 (1.0099999904632568), not the shortest
# f32 repr ('1.01'), while f64 literals come out short because the item is the value itself.
@pytest.mark.parametrize("fun, arg, literal", [
    (lambda x: x * 1.01, np.ones(3, np.float32), "1.0099999904632568:f32[]"),
    (lambda x: x * 1e-10, np.ones(3, np.float32), "1.000000013351432e-10:f32[]"),
    (lambda x: x * 123456789.0, np.ones(3, np.float32), "123456792.0:f32[]"),
    (lambda x: x * -0.0, np.ones(3, np.float32), "-0.0:f32[]"),
    (lambda x: x * float("inf"), np.ones(3, np.float32), "inf:f32[]"),
    (lambda x: x * 1.01, np.ones(3, np.float16), "1.009765625:f16[]"),
    (lambda x: x * 1.01, np.ones(3, dtypes.bfloat16), "1.0078125:bf16[]"),
    (lambda x: x * 3, np.ones(3, np.int32), "3:i32[]"),
    (lambda x: x * np.uint8(3), np.ones(3, np.uint8), "3:u8[]"),
    (lambda x: lax.bitwise_and(x, True), np.ones(3, bool), "True:bool[]"),
    (lambda x: x * (1 + 2j), np.ones(3, np.complex64), "(1+2j):c64[]"),
])
def test_literals_print_as_in_jax(fun, arg, literal):
  text = str(minijax.make_jaxpr(fun)(arg))
  assert text.endswith(f" a {literal} in (b,) }}"), text


@pytest.mark.parametrize("fun, arg, literal", [
    (lambda x: x * 1.01, np.ones(3, np.float64), "1.01:f64[]"),
    (lambda x: x * 1e20, np.ones(3, np.float64), "1e+20:f64[]"),
    (lambda x: x * 1.01, np.ones(3, np.float32), "1.0099999904632568:f32[]"),
    (lambda x: x * 3, np.ones(3, np.int64), "3:i64[]"),
])
def test_64bit_literals_print_as_in_jax(x64, fun, arg, literal):
  assert str(minijax.make_jaxpr(fun)(arg)).endswith(f" a {literal} in (b,) }}")


def test_closed_over_arrays_print_as_constants_and_scalars_as_literals():
  c = np.arange(3, dtype=np.float32)
  text = str(minijax.make_jaxpr(lambda x: lax.add(lax.mul(x, c), 2.0))(np.ones(3, np.float32)))
  assert text.startswith("{ lambda a:f32[3]; b:f32[3]. let")
  assert "2.0:f32[]" in text


def test_nested_jit_prints_its_jaxpr_indented():
  inner = minijax.jit(lax.sin)
  text = str(minijax.make_jaxpr(lambda x: lax.cos(inner(x)))(np.ones(2, np.float32)))
  assert text == """\
{ lambda ; a:f32[2]. let
    b:f32[2] = jit[
      name=sin
      jaxpr={ lambda ; c:f32[2]. let d:f32[2] = sin c in (d,) }
    ] a
    e:f32[2] = cos b
  in (e,) }"""


def test_results_nothing_reads_print_as_underscores_and_nested_jaxprs_break_by_width():
  # JAX 0.10.2 prints this jaxpr character for character: the loop counter and the sine
  # are read by nothing (`_`, naming no letter), and `cond_jaxpr=` with its one-line jaxpr
  # would pass the 80th column, so the jaxpr breaks
  def f(x):
    _, b = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.), (0, x))
    lax.sin(x)
    return b
  assert str(minijax.make_jaxpr(f)(1.)) == """\
{ lambda ; a:f32[]. let
    _:i32[] b:f32[] = while[
      body_jaxpr={ lambda ; c:i32[] d:f32[]. let
          e:i32[] = add c 1:i32[]
          f:f32[] = mul d 2.0:f32[]
        in (e, f) }
      body_nconsts=0
      cond_jaxpr={ lambda ; g:i32[] h:f32[]. let
          i:bool[] = lt g 3:i32[]
        in (i,) }
      cond_nconsts=0
    ] 0:i32[] a
    _:f32[] = sin a
  in (b,) }"""
  # the variables themselves are ordinary: only the text says `_`
  closed = minijax.make_jaxpr(f)(1.)
  assert all(type(v) is minijax.core.Var for e in closed.eqns for v in e.outvars)


def test_typecheck_accepts_traced_jaxprs():
  closed = minijax.make_jaxpr(lambda x: lax.sin(lax.mul(x, x)))(np.ones(2, np.float32))
  typecheck_jaxpr(closed.jaxpr)


def test_typecheck_names_the_offending_equation():
  a = Var(ShapedArray((2,), np.float32))
  b = Var(ShapedArray((3,), np.float32))
  from minijax.lax import sin_p
  jaxpr = Jaxpr([], [a], [b], [JaxprEqn([a], [b], sin_p, {}, frozenset(), None)])
  with pytest.raises(JaxprTypeError,
                     match=r"declares outputs \['float32\[3\]'\].*produces \['float32\[2\]'\]"):
    typecheck_jaxpr(jaxpr)


def test_typecheck_rejects_undefined_variables():
  a, b, c = (Var(ShapedArray((2,), np.float32)) for _ in range(3))
  from minijax.lax import sin_p
  jaxpr = Jaxpr([], [a], [c], [JaxprEqn([b], [c], sin_p, {}, frozenset(), None)])
  with pytest.raises(JaxprTypeError, match="used before it is defined"):
    typecheck_jaxpr(jaxpr)


def test_traced_value_used_as_python_bool_names_the_argument():
  def f(x):
    if lax.sin(x):
      return x
    return x
  with pytest.raises(ConcretizationTypeError, match=r"(?s)bool\(\).*static_argnums.*lax.cond"):
    minijax.jit(f)(1.0)


def test_a_concretization_error_names_the_arguments_the_value_depends_on():
  # JAX's account of where the value came from, through pytrees, keywords and static args
  def compare(f, *args, **kwargs):
    with pytest.raises(ConcretizationTypeError) as info:
      f(*args, **kwargs)
    return str(info.value)
  binary = minijax.jit(lambda x, y, z: x if x > z else y)
  assert "on the values of the arguments x and z." in compare(binary, 1.0, 2.0, z=3.0)
  tree = minijax.jit(lambda xy, z: xy[0] if xy[1] > 0 else z)
  message = compare(tree, (1.0, 2.0), 3.0)
  assert "on the value of the argument xy[1]." in message
  assert "while tracing the function <lambda> at " in message and " for jit." in message
  static = minijax.jit(lambda n, x: x if x + n > 0 else x, static_argnums=0)
  assert "on the value of the argument x." in compare(static, 1, 2.0)
  kw = minijax.jit(lambda **kw: kw["a"] if kw["b"] > kw["c"] else 0.0)
  assert "arguments kw['b'] and kw['c']." in compare(kw, a=1.0, b=2.0, c=3.0)
  body = lambda c, a: (c if a > 0 else c, None)  # noqa: E731
  message = compare(lambda x: lax.scan(body, x, np.ones(3, np.float32)), 1.0)
  assert "for scan. This concrete value" in message and "the argument a." in message


def test_a_value_made_of_constants_names_the_lines_that_made_it():
  def f():
    total = jnp.zeros(())
    for _ in range(6):
      total = total + jnp.ones(())
    return total if total > 0 else total
  with pytest.raises(ConcretizationTypeError) as info:
    minijax.jit(f)()
  message = str(info.value)
  assert "due to JAX operations on these lines" in message
  assert message.count("  operation ") == 5  # of the seven, five are shown
  assert "(Additional originating lines are not shown.)" in message


def test_traced_argument_used_as_python_int_names_it():
  with pytest.raises(ConcretizationTypeError, match=r"int\(\) was called on the traced value n"):
    minijax.jit(lambda x, n: lax.mul(x, int(n)))(1.0, 2)


def test_leaked_tracer_is_reported_when_used_after_its_trace_ended():
  leaked = []
  minijax.jit(lambda x: leaked.append(x) or x)(1.0)
  with pytest.raises(UnexpectedTracerError, match="leaked tracer"):
    lax.sin(leaked[0])


def test_unexpected_tracer_error_also_takes_a_message_as_jaxs_does():
  # (haiku re-raises a leak with its own hint: UnexpectedTracerError(hint) from e)
  with pytest.raises(UnexpectedTracerError, match="^a library's hint$"):
    raise minijax.errors.UnexpectedTracerError("a library's hint")


def test_equation_carries_the_users_source_location():
  closed = minijax.make_jaxpr(lambda x: lax.sin(x))(1.0)
  info = closed.jaxpr.eqns[0].source_info
  assert info.file == __file__ and info.function == "<lambda>"


def test_leaked_tracer_passed_to_a_jitted_function_is_reported():
  leaked = []
  minijax.jit(lambda x: leaked.append(x) or x)(np.float32(1.0))
  f = minijax.jit(lambda x: x + 1)
  assert float(f(minijax.device_put(np.float32(1.0)))) == 2.0  # fills the fast path for f32[]
  with pytest.raises(UnexpectedTracerError, match="leaked tracer"):
    f(leaked[0])
  g = minijax.jit(lambda pair: pair[0] + pair[1])
  one = minijax.device_put(np.float32(1.0))
  assert float(g((one, one))) == 2.0
  with pytest.raises(UnexpectedTracerError, match="leaked tracer"):
    g((one, leaked[0]))


def test_checking_leaks_names_a_tracer_that_outlives_jit_scan_or_vmap(frozen_heap):
  kept = []

  def keep(x):
    kept.append(x)
    return x

  with minijax.checking_leaks():
    with pytest.raises(Exception, match="Leaked trace DynamicJaxprTrace"):
      minijax.jit(keep)(3.0)
    with pytest.raises(Exception, match="Leaked trace DynamicJaxprTrace"):
      minijax.lax.scan(lambda c, x: (keep(c) * 2, None), 1.0, np.arange(3.0))
    with pytest.raises(Exception, match=r"(?s)Leaked trace BatchTrace.*<BatchTracer \d+> is "
                                        r"referred to by <list \d+>"):
      minijax.vmap(keep)(np.arange(3.0))
    # no false alarms from what the transformations keep themselves
    f = minijax.jit(lambda x: x * 2)
    assert float(f(3.0)) == 6.0 and float(minijax.grad(f)(3.0)) == 2.0
    minijax.vmap(f)(np.arange(3.0))
    minijax.lax.scan(lambda c, x: (c + x, None), 0.0, np.arange(3.0))
  kept.clear()
  minijax.jit(keep)(3.0)  # without the flag nothing is checked
  assert len(kept) == 1 and not minijax.config.check_tracer_leaks


def test_enable_checks_typechecks_every_traced_jaxpr():
  from minijax.core.primitive import Primitive
  calls = []
  fickle = Primitive("fickle")  # its output type changes between abstract evaluations

  @fickle.def_abstract_eval
  def _(x):
    calls.append(1)
    return ShapedArray((len(calls),), np.float32)

  trace = lambda: minijax.make_jaxpr(lambda x: fickle.bind(x))(1.0)
  trace()  # unchecked: the first answer is taken
  with minijax.enable_checks(True):
    with pytest.raises(JaxprTypeError, match="declares outputs"):
      trace()


def test_an_unexpected_tracer_error_says_where_the_leaked_value_was_made():
  saved = []

  def body(carry, _):
    saved.append(jnp.add(carry, 1))  # leaks
    return carry, None
  lax.scan(body, 1, None, length=2)
  with pytest.raises(UnexpectedTracerError, match=r"(?s)Encountered an unexpected tracer.*global "
                     r"state.*created on line .*test_core.py:\d+ \(body\)"):
    minijax.jit(jnp.add)(jnp.ones(()), saved[0])


def test_jaxprs_and_primitives_carry_the_attributes_libraries_walk_them_by():
  """distrax inverts functions by walking their jaxprs with JAX's names: a closed jaxpr's
  `literals` (its consts), `invars`/`outvars`/`constvars`, and a primitive's
  `call_primitive`/`map_primitive` (no minijax primitive keeps its jaxpr in `call_jaxpr`)."""
  closed = minijax.make_jaxpr(lambda x: x * np.array([1.0, 2.0], np.float32))(np.ones(2, np.float32))
  assert closed.literals is closed.consts and len(closed.literals) == len(closed.constvars)
  assert closed.invars == closed.jaxpr.invars and closed.outvars == closed.jaxpr.outvars
  assert all(not e.primitive.call_primitive and not e.primitive.map_primitive
             for e in closed.eqns)
