"""Pictures of jaxprs as SVG written by minijax: equations as boxes in program order, data
edges, one token chain per ordered effect through the equations that have it, sow sites
and operations as boxes of their own kind, loop and branch bodies as nested frames."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.effects import Handler, define_effect, draw, handle, picture, sow
from minijax.experimental import host_callback as hcb

SVG = "{http://www.w3.org/2000/svg}"


def tapped(x):
  x = hcb.id_tap(lambda *a: None, x)
  y = sow(jnp.sin(x), tag="t", name="y")

  def body(c, x):
    c = hcb.id_tap(lambda *a: None, c + x)
    return c, c * 2.
  c, ys = lax.scan(body, y, jnp.arange(3.))
  minijax.debug.print("{}", c, ordered=True)
  return ys


def _parse(pic):
  root = ET.fromstring(pic.svg)
  boxes = {g.get("id"): g for g in root.iter(f"{SVG}g") if "eqn" in (g.get("class") or "")}
  ids = {el.get("id") for el in root.iter() if el.get("id")}
  chains = [(c.get("data-effect"), c.get("data-through").split())
            for c in root.iter(f"{SVG}polyline")]
  edges = [(e.get("data-from"), e.get("data-to")) for e in root.iter(f"{SVG}path")
           if "data-edge" in e.get("class")]
  return root, boxes, ids, chains, edges


def test_each_ordered_effect_has_one_chain_per_frame_through_its_equations_in_order():
  root, boxes, ids, chains, _ = _parse(picture(tapped, 1.))
  through = {}
  for effect, visited in chains:
    assert visited[0].endswith("-in") and visited[-1].endswith("-out")
    assert visited[0][:-3] == visited[-1][:-4]  # the in and out tokens of one frame
    through.setdefault(effect, []).append([boxes[i].get("data-primitive")
                                           for i in visited[1:-1]])
  assert sorted(through["OrderedTap"]) == [["id_tap"], ["id_tap", "scan"]]
  assert through["OrderedDebugEffect"] == [["debug_callback"]]
  colors = {c.get("data-effect"): c.get("stroke") for c in root.iter(f"{SVG}polyline")}
  assert len(set(colors.values())) == 2


def test_boxes_follow_program_order_and_data_edges_join_definitions_to_uses():
  f = lambda x, y: jnp.sin(x) * y + x
  root, boxes, ids, chains, edges = _parse(picture(f, 1., 2.))
  assert chains == []
  assert [b.get("data-primitive") for b in boxes.values()] == ["sin", "mul", "add"]
  assert all(src in ids and dst in ids for src, dst in edges)
  assert len(edges) == 6  # x->sin, sin->mul, y->mul, mul->add, x->add, add->out


def test_sow_sites_operations_and_bodies_are_drawn_as_their_own_kinds():
  reader = define_effect("reader")
  ask = reader.operation("ask", lambda: minijax.ShapeDtypeStruct((), jnp.float32))
  root, boxes, *_ = _parse(picture(lambda x: sow(x * ask(), tag="t", name="v"), 1.))
  kinds = {b.get("data-primitive"): b.get("class") for b in boxes.values()}
  assert "sow" in kinds["sow"].split() and "operation" in kinds["perform"].split()
  texts = " ".join(t.text for t in root.iter(f"{SVG}text"))
  assert "sow t:v (strict)" in texts and "reader.ask" in texts

  root, boxes, *_ = _parse(picture(tapped, 1.))
  outer = next(root.iter(f"{SVG}g"))
  assert outer.get("class") == "frame"
  nested = [g for g in outer.iter(f"{SVG}g") if g.get("class") == "frame" and g is not outer]
  assert len(nested) == 1


def test_cond_branches_are_side_by_side_frames():
  f = lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x)
  root, *_ = _parse(picture(f, True, 1.))
  frames = [g for g in root.iter(f"{SVG}g") if g.get("class") == "frame"]
  titles = [g.get("data-title") for g in frames]
  assert titles == ["jaxpr", "branches[0]", "branches[1]"]
  xs = [float(g.find(f"{SVG}rect").get("x")) for g in frames[1:]]
  assert xs[0] < xs[1]


def test_a_lowered_function_and_a_handled_one_draw_before_and_after_discharge():
  state = define_effect("state")
  get = state.operation("get", lambda: minijax.ShapeDtypeStruct((), jnp.float32))
  put = state.operation("put", lambda x: ())

  def f(x):
    put(get() + x)
    return get()
  before = _parse(picture(f, jnp.float32(1.)))[1]
  assert [b.get("data-primitive") for b in before.values()] == [
      "perform", "add", "perform", "perform"]
  cell = Handler(state, {get: lambda s: (s, s), put: lambda s, x: ((), x)}, state=0.)
  lowered = minijax.jit(handle(f, cell)).lower(jnp.float32(1.))
  after = _parse(draw(lowered, title="after"))[1]
  assert "perform" not in [b.get("data-primitive") for b in after.values()]
  pic = draw(lowered)
  assert pic._repr_svg_().startswith("<svg") and "<svg" in pic._repr_html_()


def test_ref_reads_and_writes_are_drawn_as_their_own_kinds_with_dashed_ref_edges():
  from minijax.core.avals import ShapedArray
  from minijax.core.jaxpr import Jaxpr, JaxprEqn, Var
  from minijax.core.primitive import Primitive

  class AbstractRef:  # what the state discharge's Refs look like to the picture
    def str_short(self, short_dtypes=False, mesh_axis_types=False):
      return "Ref{f32[]}"

  ref, x, y = Var(AbstractRef()), Var(ShapedArray((), np.float32)), Var(ShapedArray((), np.float32))
  jaxpr = Jaxpr([], [ref, x], [y], [
      JaxprEqn([ref], [y], Primitive("get"), {}, frozenset(), None),
      JaxprEqn([ref, x], [Var(ShapedArray((), np.float32))], Primitive("swap"), {},
               frozenset(), None)])
  root, boxes, ids, _, edges = _parse(draw(jaxpr))
  kinds = [b.get("class") for b in boxes.values()]
  assert kinds == ["eqn ref-read", "eqn ref-write"]
  dashed = [e for e in root.iter(f"{SVG}path") if "ref-edge" in e.get("class")]
  assert len(dashed) == 2 and all(e.get("stroke-dasharray") for e in dashed)
