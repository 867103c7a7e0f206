"""Every traced jaxpr says what it was traced for, from which function, and names its
arguments and results as JAX's `DebugInfo` does (JAX 0.10.2's values, recorded here);
the lowered module names `main`'s arguments after them."""
import functools

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.api_util import DebugInfo, debug_info, fun_sourceinfo
import minijax.numpy as jnp


def _nested(closed):
  """(primitive name, param name, debug info) of every jaxpr inside `closed`, depth first."""
  found = []
  for eqn in closed.jaxpr.eqns:
    for name, value in eqn.params.items():
      for inner in value if isinstance(value, tuple) else (value,):
        if isinstance(inner, minijax.extend.core.ClosedJaxpr):
          found.append((eqn.primitive.name, name, inner.jaxpr.debug_info))
          found.extend(_nested(inner))
  return found


def my_body(c, a):
  return c + a, c * a


def my_cond(c):
  return c[0] < 3.0


def my_step(c):
  return c[0] + 1.0, c[1] * 2.0


def f(x, ys):
  c, zs = lax.scan(my_body, x, ys)
  w = lax.while_loop(my_cond, my_step, (c, x))
  b = lax.cond(x > 0, jnp.sin, jnp.cos, x)
  r = minijax.checkpoint(lambda q: jnp.sin(q))(x)
  return c, zs, w, b, r


def test_control_flow_bodies_say_what_they_were_traced_for_and_name_their_values():
  line = lambda fun: fun.__code__.co_firstlineno  # noqa: E731
  closed = minijax.make_jaxpr(f)(1.0, jnp.ones(3))
  top = closed.jaxpr.debug_info
  assert top.traced_for == "jit" and top.func_src_info == f"f at {__file__}:{line(f)}"
  assert top.func_name == "f" and top.func_filename == __file__ and top.func_lineno == line(f)
  assert top.arg_names == ("x", "ys")
  assert top.result_paths == ("result[0]", "result[1]", "result[2][0]", "result[2][1]",
                              "result[3]", "result[4]")
  seen = {(prim, param): d for prim, param, d in _nested(closed)}
  scan = seen["scan", "jaxpr"]
  assert (scan.traced_for, scan.func_name, scan.arg_names, scan.result_paths) == (
      "scan", "my_body", ("c", "a"), ("result[0]", "result[1]"))
  cond = seen["while", "cond_jaxpr"]
  assert (cond.traced_for, cond.func_name, cond.result_paths) == (
      "while_cond", "my_cond", ("result",))
  assert set(cond.arg_names) <= {"c[0]", "c[1]"}  # (the condition reads only c[0])
  body = seen["while", "body_jaxpr"]
  assert (body.traced_for, body.func_name) == ("while_body", "my_step")
  assert (body.arg_names, body.result_paths) == (("c[0]", "c[1]"), ("result[0]", "result[1]"))
  branches = [d for prim, param, d in _nested(closed) if prim == "cond"]
  assert [(d.traced_for, d.func_name) for d in branches] == [("cond", "cos"), ("cond", "sin")]
  remat = seen["checkpoint", "jaxpr"]
  assert (remat.traced_for, remat.arg_names, remat.result_paths) == (
      "checkpoint / remat", ("q",), ("result",))


def test_a_pruned_or_reordered_jaxpr_keeps_each_variables_name():
  def g(x, unused, y):
    return y, x

  closed = minijax.make_jaxpr(g)(1.0, 2.0, 3.0)
  from minijax.interpreters.partial_eval import dce_jaxpr
  pruned, used = dce_jaxpr(closed.jaxpr, [False, True])
  assert used == [True, False, False]
  assert (pruned.debug_info.arg_names, pruned.debug_info.result_paths) == (("x",), ("result[1]",))
  swapped = closed.jaxpr.replace(invars=closed.jaxpr.invars[::-1])
  assert swapped.debug_info.arg_names == ("y", "unused", "x")


def test_static_arguments_name_nothing_and_constants_are_unnamed():
  def h(n, x, *, scale):
    return x * n * scale

  jitted = minijax.jit(h, static_argnums=0, static_argnames="scale")
  assert jitted.trace(2, 3.0, scale=4.0).jaxpr.jaxpr.debug_info.arg_names == ("x",)
  constant = jnp.arange(3.0)
  closed = minijax.jit(lambda x: x + constant).trace(1.0).jaxpr
  assert closed.jaxpr.debug_info.safe_arg_names(len(closed.jaxpr.invars))[-1] == "x"


def test_a_node_without_keys_names_its_children_by_position():
  class Box:
    def __init__(self, items):
      self.items = items

  minijax.tree_util.register_pytree_node(Box, lambda b: ((b.items,), None),
                                         lambda _, children: Box(*children))
  traced = minijax.jit(lambda s: s.items[1] * 2).trace(Box([1.0, 2.0]))
  # its key is a FlattenedIndexKey, which keystr prints [<flat index 0>]; JAX's names say [0]
  assert traced.jaxpr.jaxpr.debug_info.arg_names == ("s[0][0]", "s[0][1]")


def test_the_lowered_module_names_mains_arguments_and_results():
  def g(x, params):
    return {"out": jnp.sin(x) * params["w"]}

  text = minijax.jit(g).lower(1.0, {"w": 2.0}).as_text(debug_info=True)
  assert "%arg0: tensor<f32> loc(\"x\")" in text
  assert "%arg1: tensor<f32> loc(\"params['w']\")" in text
  assert "jax.result_info = \"result['out']\"" in text


def test_jaxs_debug_info_api():
  def g(a, b, *rest, key=None, **more):
    return a

  info = debug_info("my_transform", g, (1.0, [2.0, 3.0], 4.0), {"key": 5.0, "other": 6.0},
                    static_argnums=(0,))
  assert info.traced_for == "my_transform" and info.func_name == "g"
  assert info.arg_names == ("b[0]", "b[1]", "rest[0]", "key", "more['other']")
  assert info.safe_arg_names(2) == ("", "")  # of another count: unknown
  assert info.filter_arg_names([True, False, True, False, False]) == ("b[0]", "rest[0]")
  assert info.with_unknown_names().arg_names is None
  named = info.set_result_paths({"p": 1.0, "q": (2.0,)})
  assert named.result_paths == ("result['p']", "result['q'][0]")
  assert named.filter_result_paths([False, True]) == ("result['q'][0]",)
  assert named.replace_func_name("renamed").func_src_info.startswith("renamed at ")
  assert DebugInfo("jit", "f", None, lambda: ("result",)).resolve_result_paths().result_paths \
      == ("result",)
  assert fun_sourceinfo(functools.partial(g, 1.0)).startswith("g at ")
  assert fun_sourceinfo(len) == "len" and fun_sourceinfo(np.add) == "<unknown>"


@pytest.mark.parametrize("static", [False, True])
def test_the_jit_and_make_jaxpr_names_agree(static):
  def g(x, y):
    return x + y

  kwargs = {"static_argnums": (1,)} if static else {}
  via_jit = minijax.jit(g, **kwargs).trace(1.0, 2.0).jaxpr.jaxpr.debug_info
  via_make = minijax.make_jaxpr(g, **kwargs)(1.0, 2.0).jaxpr.debug_info
  assert via_jit.arg_names == via_make.arg_names == (("x",) if static else ("x", "y"))


def test_fori_loop_and_custom_derivatives_name_the_users_function():
  def step(i, c):
    return c * 2.0

  @minijax.custom_jvp
  def scaled(x, y):
    return x * y
  scaled.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1]))

  @minijax.custom_vjp
  def tripled(x):
    return x * 3.0
  tripled.defvjp(lambda x: (x * 3.0, None), lambda r, g: (g * 3.0,))

  closed = minijax.make_jaxpr(lambda x: (lax.fori_loop(0, 3, step, x), scaled(x, 2.0),
                                         tripled(x)))(1.0)
  found = {prim: d for prim, _, d in _nested(closed)}
  loop = found["scan"]
  assert (loop.traced_for, loop.func_name, loop.arg_names) == ("fori_loop", "step", ("i", "c"))
  jvp = found["custom_jvp_call"]
  assert (jvp.traced_for, jvp.func_name, jvp.arg_names, jvp.result_paths) == (
      "custom_jvp fun", "scaled", ("x", "y"), None)
  vjp = found["custom_vjp_call"]  # (JAX 0.10.2 names neither arguments nor results here)
  assert (vjp.traced_for, vjp.func_name, vjp.arg_names) == ("custom_vjp fun", "tripled", None)


def test_a_staging_tracer_knows_the_function_it_is_traced_in():
  seen = []

  def body(c, a):
    seen.append(a)
    return c, None

  def outer(x, ys):
    seen.append(x)
    return lax.scan(body, x, ys)[0]

  minijax.jit(outer)(1.0, jnp.ones(2))
  assert [(t._debug_info.traced_for, t._debug_info.func_name) for t in seen] == [
      ("jit", "outer"), ("scan", "body")]


def test_names_of_another_count_from_a_library_name_nothing_and_trace_every_argument():
  # (flax names its lazily traced function by the treedef of its arguments: one name)
  from minijax.interpreters.partial_eval import trace_to_jaxpr_dynamic
  from minijax.core.avals import ShapedArray
  info = debug_info("lazy_init", lambda tree: tree, (minijax.tree.structure((1, 2)),), {})
  assert info.arg_names == ("tree",)
  aval = ShapedArray((), np.float32)
  jaxpr, _ = trace_to_jaxpr_dynamic(lambda a, b: [a + b], [aval, aval], info)
  assert len(jaxpr.invars) == 2 and jaxpr.replace().debug_info.arg_names is None
