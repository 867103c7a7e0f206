"""Bad input to the API raises JAX 0.10.2's error types with texts that say what was wrong.

JAX's own tests match these texts (`tools/jax_conformance.py`); each test here pins one of
them on minijax alone.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import tree_util

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- trees that are no prefix

def test_tree_map_names_the_key_path_where_the_trees_part():
  x = {"a": 1, "b": 2, "c": [1, 2], "d": 4}
  y = {"a": 1, "b": 2, "c": None, "d": {"d1": 4.1, "d2": 4.2}}
  expected = (r"pytree structure error: different types at key path\n    tree\['c'\]\n"
              r"where the prefix tree tree has a subtree of type <class 'list'> and the full "
              r"tree a subtree of another type, <class 'NoneType'>\.")
  with pytest.raises(ValueError, match=expected):
    minijax.tree.map(lambda a, b: (a, b), x, y, is_leaf=lambda v: v is None)
  with pytest.raises(ValueError, match=expected):
    tree_util.tree_map_with_path(lambda p, a, b: (a, b), x, y, is_leaf=lambda v: v is None)
  # a prefix is fine: each leaf of the first tree covers a subtree of the others
  assert minijax.tree.map(lambda a, b: b, {"a": 1}, {"a": [2, 3]}) == {"a": [2, 3]}


def test_prefix_errors_lists_every_place_the_trees_part():
  errors = tree_util.prefix_errors({"a": [None, None], "b": (None, None), "c": (1, 2)},
                                   {"a": 1, "b": 2, "c": (1, 2, 3)}, "spec",
                                   is_leaf=lambda v: v is None)
  assert [e.splitlines()[:2] for e in errors] == [
      ["pytree structure error: different types at key path", "    spec['a']"],
      ["pytree structure error: different types at key path", "    spec['b']"],
      ["pytree structure error: different lengths of tuple at key path", "    spec['c']"]]
  assert errors[2].endswith("has a tuple of length 2 and the full tree a tuple of length 3.")
  [keys] = tree_util.prefix_errors({"a": 0}, {"a": 1, "b": 2}, "spec")
  assert keys.endswith("has a <class 'dict'> with 1 child (keys a) and the full tree one with "
                       "2 children (keys a b).")
  assert tree_util.prefix_errors((None, [0]), (1, [np.ones(2)]), "spec",
                                is_leaf=lambda v: v is None) == []


def test_vmap_in_axes_that_is_no_prefix_shows_the_mismatch():
  with pytest.raises(ValueError, match=(
      r"vmap in_axes specification must be a tree prefix of the corresponding value; got "
      r"specification \(\[0\],\) for value tree PyTreeDef\(\(\*,\)\)\.\n"
      r"  Mismatch details \(1 found\):\n"
      r"  pytree structure error: different types at key path\n    in_axes\[0\]\n")):
    minijax.vmap(lambda x: x, in_axes=([0],))(jnp.ones(3))


def test_device_put_target_that_is_no_prefix_shows_all_mismatches():
  x = {"a": jnp.arange(2), "b": jnp.arange(3)}
  with pytest.raises(ValueError, match=(
      r"device_put device specification must be a tree prefix of the corresponding value; "
      r"(?s:.*)Mismatch details \(2 found\):\n  pytree structure error: different types at "
      r"key path\n    device\['a'\](?s:.*)device\['b'\]")):
    minijax.device_put(x, device={"a": [None, None], "b": (None, None)})
  placed = minijax.device_put(x, device={"a": None, "b": minijax.devices()[0]})
  assert np.asarray(placed["b"]).tolist() == [0, 1, 2]


# ---------------------------------------------------------------- jvp and vjp arguments

def test_jvp_argument_errors():
  f = lambda x, y: x * y  # noqa: E731
  with pytest.raises(TypeError, match=r"primal and tangent arguments to minijax\.jvp must be "
                                      r"tuples or lists; found float and tuple\."):
    minijax.jvp(f, 0., (1.,))
  with pytest.raises(TypeError, match=r"primal and tangent arguments to minijax\.jvp must have "
                                      r"the same tree structure"):
    minijax.jvp(f, (np.float32(2),), ())
  with pytest.raises(TypeError, match=r"minijax\.jvp must have the same tree structure; "
                                      r"primals have tree structure PyTreeDef\(\(\*,\)\) "
                                      r"whereas tangents have tree structure PyTreeDef\(\[\*\]\)"):
    minijax.jvp(lambda x: x, (np.float32(2),), [np.float32(2)])
  # lists on both sides are fine
  assert minijax.jvp(lambda x: 3 * x, [np.float32(2)], [np.float32(1)]) == (6, 3)
  with pytest.raises(ValueError, match=r"minijax\.jvp called with different primal and tangent "
                                       r"shapes; Got primal shape \(3,\) and tangent shape as "
                                       r"\(4,\)"):
    minijax.jvp(lambda x: x + 1, (jnp.ones(3),), (jnp.ones(4),))


def test_errors_name_the_function_as_the_user_imported_it():
  code = ("import minijax; minijax.install_as_jax(); import jax\n"
          "try:\n  jax.jvp(lambda x: x, 0., (1.,))\n"
          "except TypeError as e:\n  print(str(e).splitlines()[0])\n")
  out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT),
                       capture_output=True, text=True, timeout=300)
  assert out.stdout.strip() == ("primal and tangent arguments to jax.jvp must be tuples or "
                                "lists; found float and tuple."), out.stderr


def test_vjp_function_checks_the_cotangent_structure_and_type():
  _, pullback = minijax.vjp(lambda x, y: x * y, np.float32(3), np.float32(4))
  with pytest.raises(ValueError, match=r"unexpected tree structure of the argument to the "
                                       r"function returned by minijax\.vjp for <lambda>"):
    pullback((np.float32(7), np.float32(100)))
  with pytest.raises(ValueError, match=r"unexpected JAX type \(e\.g\. shape/dtype\) for argument "
                                       r"to VJP function: got float16\[\], but expected "
                                       r"float32\[\] because the corresponding output of the "
                                       r"differentiated function had JAX type float32\[\]"):
    pullback(np.float16(42))
  _, pullback = minijax.vjp(jnp.matmul, np.ones((2, 5), np.float32), np.ones((5, 3), np.float32))
  with pytest.raises(ValueError, match=r"got float32\[2,4\], but expected float32\[2,3\]"):
    pullback(np.ones((2, 4), np.float32))
  # a Python scalar is weakly typed and fits a float32 output; an integer output takes any
  # cotangent of its shape (its tangent type is float0)
  assert minijax.vjp(lambda x: 2 * x, np.float32(3))[1](1.0) == (2,)
  _, pullback = minijax.vjp(lambda x: (x, jnp.int32(1)), np.float32(3))
  assert pullback((np.float32(1), np.int32(0))) == (1,)


# ---------------------------------------------------------------- traced values

def test_operands_of_one_rank_that_do_not_broadcast_raise_jax_type_error():
  f = lambda x, y: x + y  # noqa: E731
  with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: \(3,\), "
                                      r"\(4,\)\."):
    f(jnp.zeros(3), jnp.zeros(4))
  with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting"):
    minijax.grad(lambda x, y: f(x, y).sum())(np.zeros(3), np.zeros(4))
  # of different ranks, numpy's broadcasting fails first: a ValueError, as in JAX
  with pytest.raises(ValueError, match=r"add: incompatible shapes for broadcasting"):
    f(jnp.zeros((2, 3)), jnp.zeros(4))


def test_int_of_a_traced_value_is_a_concretization_error():
  with pytest.raises(minijax.errors.ConcretizationTypeError,
                     match=r"^Abstract tracer value encountered where concrete value is expected: "
                           r"traced array with shape int32\[\]\nint\(\) was called on the "
                           r"traced value x \(int32\[\]\)"):
    minijax.jit(lambda x: int(x))(0)


def test_numpy_on_a_traced_value_raises_even_where_its_value_is_known():
  # np.exp would drop the tangent: a silently wrong derivative
  with pytest.raises(minijax.errors.TracerArrayConversionError,
                     match=r"^The numpy\.ndarray conversion method __array__\(\) was called on "
                           r"traced array with shape float32\[3\]"):
    minijax.grad(lambda x: np.exp(x).sum())(np.zeros(3, np.float32))


def test_sharding_of_a_traced_value_is_an_attribute_error_naming_typeof():
  seen = []

  @minijax.jit
  def f(x):
    with pytest.raises(AttributeError, match=r"The 'sharding' attribute is not available on "
                                             r"traced array with shape float32\[2\].*typeof\(x\)"):
      x.sharding
    seen.append(hasattr(x, "sharding"))
    return x
  f(jnp.arange(2.))
  assert seen == [False]


# ---------------------------------------------------------------- outputs that are not arrays

def test_jit_and_eval_shape_name_the_function_and_the_output_that_is_no_array():
  def f(x):
    return (2.0, f)
  line = f.__code__.co_firstlineno
  expected = (rf"^function f at {__file__}:{line} traced for jit returned a value of type "
              r"<class 'function'> at output component \[1\], which is not a valid JAX type\n")
  with pytest.raises(TypeError, match=expected):
    minijax.eval_shape(f, 1)
  with pytest.raises(TypeError, match=expected):
    minijax.jit(f)(1)
  with pytest.raises(TypeError, match=r"traced for jit returned a value of type <class 'str'>, "):
    minijax.jit(lambda x: "text")(1)
  # the bodies of control flow name themselves as JAX's do (they said "function being traced")
  with pytest.raises(TypeError, match=r"function f at .* traced for cond returned .* at output "
                                      r"component \[1\], which is not"):
    minijax.lax.cond(True, f, f, 1.0)
  with pytest.raises(TypeError, match=r"traced for scan returned .* component \[1\]\[1\]"):
    minijax.lax.scan(lambda c, x: (c, f(x)), 0.0, jnp.ones(2))
  with pytest.raises(TypeError, match=r"^Output from batched function 'text' with type "
                                      r"<class 'str'> is not a valid JAX type"):
    minijax.vmap(lambda x: "text")(jnp.ones(2))


# ---------------------------------------------------------------- linear_transpose

def test_linear_transpose_checks_dtypes_and_cotangents():
  with pytest.raises(TypeError, match=r"linear_transpose only supports \[float or complex\] -> "
                                      r"\[float or complex\], and integer -> integer functions, "
                                      r"but got \[int32\] -> \[float32\]"):
    minijax.linear_transpose(lambda x: 2. * x, 1)
  with pytest.raises(TypeError, match=r"cotangent tree does not match function output: the "
                                      r"transposed function takes a cotangent of the structure "
                                      r"PyTreeDef\(\[\*, \*\]\), but got PyTreeDef\(\*\)"):
    minijax.linear_transpose(lambda x: [x, x], 1.0)(1.0)
  for fun, ct, types in [(lambda x: jnp.stack([x, x]), 1.0,
                          r"\[float32\[2\]\], but got \[float32\[\]\]"),
                         (lambda x: 1j * x, 1.0, r"\[complex64\[\]\], but got \[float32\[\]\]"),
                         (lambda x: x, 1j, r"\[float32\[\]\], but got \[complex64\[\]\]")]:
    with pytest.raises(TypeError, match=r"cotangent type does not match function output: the "
                                        r"transposed function takes cotangents of type " + types):
      minijax.linear_transpose(fun, 1.0)(ct)
  assert minijax.linear_transpose(lambda x: 3 * x, 1)(2) == (6,)  # integer -> integer


def test_linear_transpose_is_a_pytree_that_jit_takes_and_returns():
  transposed = minijax.jit(lambda f, x: minijax.linear_transpose(f, x),
                           static_argnums=0)(lambda x: 2. * x, 1.)
  assert minijax.jit(lambda f, x: f(x))(transposed, 3.) == (6.,)


def test_linear_transpose_drops_what_no_output_needs():
  # `x > 0` has no transpose; the jit's output that holds it gets no cotangent
  f = minijax.jit(lambda x: (2 * x, x > 0))
  assert minijax.linear_transpose(lambda x: f(x)[0], 1.)(1.) == (2.,)
  assert minijax.linear_transpose(lambda x: (x > 0, 3 * x)[1], 1.)(1.) == (3.,)
  # and so does the transpose of a jit inside vjp (grad through the linear part)
  assert minijax.grad(lambda x: f(x)[0])(1.) == 2.


# ---------------------------------------------------------------- values that are no arrays

def test_arrays_of_non_numeric_dtype_are_not_valid_jax_types():
  with pytest.raises(TypeError, match=r"^Argument '\[1 2 3\]' of type <class 'numpy\.ndarray'> "
                                      r"is not a valid JAX type: its dtype object is not numeric"):
    minijax.grad(lambda x: x)(np.array([1, 2, 3], dtype=object))
  # a numeric dtype minijax lacks keeps its own message
  with pytest.raises(TypeError, match=r"passed to sin at position 0\. minijax does not support "
                                      r"dtype float128"):
    minijax.lax.sin(np.ones(2, np.longdouble))


def test_eager_primitive_names_the_operand_that_is_no_array():
  with pytest.raises(TypeError, match=r"^Error interpreting argument to add as a JAX value\. The "
                                      r"problematic value is of type <class 'numpy\.ndarray'> and "
                                      r"was passed to add at position 1\. Argument 'hello' .* its "
                                      r"dtype <U5 is not numeric"):
    minijax.lax.add(jnp.array(7), np.array("hello"))


# ---------------------------------------------------------------- primitives without rules

def test_missing_rules_lead_with_jax_words():
  from minijax.core.primitive import Primitive
  from minijax.interpreters import ad
  foo_p = Primitive("foo")
  foo = foo_p.bind
  cases = [(lambda: foo(1.0), "Evaluation rule for 'foo' not implemented: primitive 'foo' has "
                              "neither an impl"),
           (lambda: minijax.jit(foo)(1.0), "Abstract evaluation for 'foo' not implemented: "
                                           "primitive 'foo' has no abstract evaluation rule"),
           (lambda: minijax.grad(foo)(1.0), "Differentiation rule for 'foo' not implemented: "
                                            "primitive 'foo' has no jvp rule")]
  for thunk, lead in cases:
    with pytest.raises(NotImplementedError, match="^" + lead.replace("(", r"\(").replace(")", r"\)")):
      thunk()
  foo_p.def_abstract_eval(lambda x: x)
  with pytest.raises(NotImplementedError, match=r"^MLIR translation rule for primitive 'foo' not "
                                                r"found for platform cpu: .* no MLIR lowering rule"):
    minijax.jit(foo)(1.0)
  foo_p.def_impl(lambda x: x)
  ad.defjvp(foo_p, lambda g, x: foo(g))
  with pytest.raises(NotImplementedError, match=r"^Transpose rule \(for reverse-mode "
                                                r"differentiation\) for 'foo' not implemented"):
    minijax.grad(foo)(1.0)
  with pytest.raises(NotImplementedError, match=r"^Batching rule for 'foo' not implemented"):
    minijax.vmap(foo)(jnp.ones(2))


def test_abstract_eval_must_return_one_aval_or_a_sequence_as_multiple_results_says():
  from minijax.core.primitive import Primitive
  one_p = Primitive("one")
  one_p.def_abstract_eval(lambda x: [x])
  with pytest.raises(ValueError, match=r"^one\.abstract_eval\(\) method should return a tuple or "
                                       r"a list of avals when one\.multiple_results is set, and "
                                       r"one aval when it is not; it returned \[ShapedArray"):
    minijax.jit(one_p.bind)(1.0)
  many_p = Primitive("many")
  many_p.multiple_results = True
  many_p.def_abstract_eval(lambda x: x)
  with pytest.raises(ValueError, match=r"^many\.abstract_eval\(\) method should return a tuple"):
    minijax.jit(many_p.bind)(1.0)


def test_vmap_out_axes_none_of_a_batched_output_names_its_path():
  with pytest.raises(ValueError, match=r"^at vmap out_axes, got axis spec None but output was "
                                       r"batched on axis 0"):
    minijax.vmap(lambda x: x, out_axes=None)(jnp.array([1., 2.]))
  with pytest.raises(ValueError, match=r"^at vmap out_axes\[1\], got axis spec None but output "
                                       r"was batched on axis 1"):
    minijax.vmap(lambda x: (3., 2 * x), out_axes=(0, None), in_axes=1)(jnp.ones((2, 3)))
  # an unbatched output may be None
  assert minijax.vmap(lambda x: (x, 3.), out_axes=(0, None))(jnp.ones(2))[1] == 3.


# ---------------------------------------------------------------- __jax_array__

class _Wrapped:
  """An array-like wrapper that is no pytree: only the `__jax_array__` protocol."""

  def __init__(self, value):
    self.value = value

  def __jax_array__(self):
    return self.value


@tree_util.register_pytree_node_class
class _WrappedTree(_Wrapped):
  """A wrapper that is also a pytree (its array the one leaf), with shape and dtype."""
  shape = property(lambda self: self.value.shape)
  dtype = property(lambda self: self.value.dtype)

  def tree_flatten(self):
    return (self.value,), None

  @classmethod
  def tree_unflatten(cls, _, children):
    return cls(*children)


def test_numpy_functions_take_objects_that_define_jax_array():
  x = jnp.array([1., 2., 3.])
  for a in (_Wrapped(x), _WrappedTree(x)):
    np.testing.assert_allclose(jnp.sin(a), np.sin([1., 2., 3.]), rtol=1e-6)
    np.testing.assert_array_equal(jnp.asarray(a), x)
    np.testing.assert_array_equal(jnp.array(a), x)
    np.testing.assert_array_equal(jnp.matmul(a, a), 14.)
    np.testing.assert_array_equal(jnp.add(a, 1), x + 1)
    assert (jnp.shape(a), jnp.ndim(a), jnp.size(a), jnp.isscalar(a)) == ((3,), 1, 3, False)
  one = _Wrapped(jnp.array(1))
  assert jnp.isscalar(one)
  np.testing.assert_array_equal(jnp.array(((one, one), [one, one])), [[1, 1], [1, 1]])
  # a pytree wrapper goes through jit and grad as its leaves, and reaches jnp functions inside
  t = _WrappedTree(x)
  assert type(minijax.jit(lambda v: v)(t)) is _WrappedTree
  assert type(g := minijax.grad(minijax.jit(lambda v: jnp.sin(v).sum()))(t)) is _WrappedTree
  np.testing.assert_allclose(g.value, np.cos([1., 2., 3.]), rtol=1e-6)
  np.testing.assert_array_equal(minijax.jit(jnp.matmul)(t, t), 14.)


def test_jit_does_not_call_jax_array_on_its_arguments():
  with pytest.raises(ValueError, match=r"^Triggering __jax_array__\(\) during abstractification "
                                       r"is no longer supported: _Wrapped is passed where an "
                                       r"array is abstracted"):
    minijax.jit(lambda v: v)(_Wrapped(jnp.arange(4)))


# ---------------------------------------------------------------- stack depth

def test_grad_calls_the_function_through_no_more_frames_than_jax():
  # JAX 0.10.2's TracebackTest counts 8 frames between the call of grad(f) and f's body
  import inspect
  depth = []
  base = len(inspect.stack())

  def f(x):
    depth.append(len(inspect.stack()) - base - 1)  # the frames in between (f's excluded)
    return x
  minijax.grad(f)(1.0)
  assert depth and depth[0] <= 8, depth



def test_concretization_errors_begin_with_jaxs_first_line():
  # JAX 0.10.2's first lines, long dtype names (as api_test and friends match them)
  def first_line(f, x):
    with pytest.raises(TypeError) as info:
      minijax.jit(f)(x)
    return type(info.value).__name__, str(info.value).split("\n")[0]

  x = np.float32(1.0)
  assert first_line(lambda v: bool(v), x) == (
      "TracerBoolConversionError",
      "Attempted boolean conversion of traced array with shape float32[].")
  assert first_line(lambda v: [1, 2][v.astype(np.int32)], x) == (
      "TracerIntegerConversionError",
      "The __index__() method was called on traced array with shape int32[]")
  for method in (lambda v: float(v), lambda v: v.tolist(), lambda v: v.item(),
                 lambda v: v.tobytes()):
    assert first_line(method, x) == (
        "ConcretizationTypeError", "Abstract tracer value encountered where concrete value is "
        "expected: traced array with shape float32[]")


def test_tracers_print_as_jaxs():
  seen = []
  record = lambda x: seen.append(repr(x)) or x  # noqa: E731
  minijax.jvp(record, (1.0,), (2.0,))
  minijax.jit(lambda x: minijax.jvp(record, (x,), (x,)))(1.0)
  minijax.vmap(record)(jnp.ones((2, 3)))
  minijax.vmap(minijax.grad(record))(jnp.ones(2))
  minijax.jit(minijax.grad(record))(np.float32(1.0))
  assert seen == ["JVPTracer(primal=1.0, tangent=2.0)",
                  "JVPTracer(primal=JitTracer(~float32[]), tangent=JitTracer(~float32[]))",
                  "VmapTracer(aval=float32[3], batched=float32[2,3])",
                  "GradTracer(primal=VmapTracer(aval=float32[], batched=float32[2]), "
                  "typeof(tangent)=f32[])",
                  "GradTracer(primal=JitTracer(float32[]), typeof(tangent)=f32[])"]


def test_a_traced_shape_is_jaxs_type_error_with_where_it_came_from():
  for make in (lambda x: jnp.zeros(x[0]), lambda x: jnp.reshape(x, (x[0], 2)),
               lambda x: jnp.broadcast_to(x, (2, x[0])),
               lambda x: minijax.lax.iota(np.int32, x[0])):
    with pytest.raises(TypeError) as info:
      minijax.jit(make)(jnp.ones(2, np.int32))
    lines = str(info.value).splitlines()
    assert lines[0].startswith("Shapes must be 1D sequences of concrete values of integer type, "
                               "got (") and "JitTracer(int32[])" in lines[0]
    assert lines[1] == ("If using `jit`, try using `static_argnums` or applying `jit` to "
                        "smaller subfunctions.")
    assert lines[2].endswith("because it depends on the value of the argument x.")
