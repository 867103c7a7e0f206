"""Pictures of jaxprs and their effects, as SVG written here (no external program).

`draw(x)` takes a jaxpr (a `ClosedJaxpr` or `Jaxpr`, what `make_jaxpr` returns) or a
lowered function (`jit(f).lower(...)`: its jaxpr) and returns a `Picture`, whose `svg` is
the text of the picture and which notebooks display by itself (`_repr_svg_`,
`_repr_html_`); `picture(f, *args)` draws `make_jaxpr(f)(*args)`.

A jaxpr is a frame: its inputs at the top, its equations in program order, one box each,
its outputs at the bottom.  Data edges run on the left, from the box that defines a value
to each box that uses it.  Each ordered effect gets a colour and one token chain on the
right of each frame that has it: from the frame's `in` token through every equation with
that effect, in order, to its `out` token (the order the lowering threads its token).
Sow sites, operations of user-defined effects and reads and writes of Refs have boxes of
their own kind (and Ref edges a dashed line); an equation with bodies (`scan`, `while`,
`cond`, `jit`) is a frame holding a frame per body (the branches of a `cond` side by side).

Every element carries what tests and tools read back: boxes `class="eqn <kind>"`,
`id`, `data-primitive`; edges `class="data-edge"` with `data-from`/`data-to`; chains
`class="token-chain"` with `data-effect` and `data-through` (the ids they visit, in order).
"""
from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape, quoteattr

from minijax.core import effects as effects_lib
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Var
from minijax.core.pretty import _Names

__all__ = ["Picture", "draw", "picture"]

ROW, GAP, PAD, CHAR = 24, 10, 14, 6.6
PALETTE = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf"]
FILL = {"eqn": "#f4f4f4", "sow": "#fff3c4", "operation": "#e6d9ff", "ref-read": "#d9f2ff",
        "ref-write": "#ffd9d9", "invar": "#ffffff", "outvars": "#ffffff", "body": "#fbfbfb"}
_REF_READS = {"get", "ref_get", "ref_read"}
_REF_WRITES = {"swap", "addupdate", "ref_set", "ref_swap", "ref_addupdate", "ref_write"}


class Picture:
  """An SVG picture (`svg`), displayed by notebooks."""

  def __init__(self, svg: str):
    self.svg = svg

  def _repr_svg_(self) -> str:
    return self.svg

  def _repr_html_(self) -> str:
    return f"<div style='overflow:auto'>{self.svg}</div>"

  def save(self, path: str) -> None:
    with open(path, "w") as f:
      f.write(self.svg)

  def __str__(self):
    return self.svg


def picture(f, *args, **kwargs) -> Picture:
  """`draw(make_jaxpr(f)(*args, **kwargs))`."""
  from minijax.api import make_jaxpr
  return draw(make_jaxpr(f)(*args, **kwargs))


def draw(x: Any, *, title: str | None = None) -> Picture:
  """The picture of a jaxpr, a ClosedJaxpr or a lowered function (see the module
  docstring)."""
  traced = getattr(x, "_traced", None)
  if traced is not None:  # a Lowered (or Traced) stage of jit
    x = traced.jaxpr
  if isinstance(x, ClosedJaxpr):
    x = x.jaxpr
  if not isinstance(x, Jaxpr):
    raise TypeError(f"draw() takes a jaxpr, a ClosedJaxpr or jit(f).lower(...), got "
                    f"{type(x).__name__}")
  canvas = _Canvas(x)
  parts, w, h = canvas.frame(x, PAD, PAD + (ROW if title else 0), "jaxpr")
  head = [f"<text x='{PAD}' y='{PAD + 14}' font-weight='bold'>{escape(title)}</text>"] \
      if title else []
  legend, lw, lh = canvas.legend(PAD, PAD * 2 + h + (ROW if title else 0))
  width = max(w, lw) + 2 * PAD
  height = h + lh + 3 * PAD + (ROW if title else 0)
  svg = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' "
         f"height='{height:.0f}' font-family='monospace' font-size='11'>\n"
         + "\n".join([*head, *parts, *legend]) + "\n</svg>\n")
  return Picture(svg)


def _kind(eqn) -> str:
  name = eqn.primitive.name
  if name == "sow":
    return "sow"
  if name == "perform":
    return "operation"
  effect_names = {type(e).__name__ for e in eqn.effects}
  if name in _REF_WRITES or effect_names & {"WriteEffect", "AccumEffect"}:
    return "ref-write"
  if name in _REF_READS or "ReadEffect" in effect_names:
    return "ref-read"
  return "eqn"


def _bodies(eqn) -> list[tuple[str, Jaxpr]]:
  out = []
  for key, value in eqn.params.items():
    values = value if isinstance(value, tuple) else (value,)
    for i, v in enumerate(values):
      if isinstance(v, (ClosedJaxpr, Jaxpr)):
        label = f"{key}[{i}]" if isinstance(value, tuple) else key
        out.append((label, v.jaxpr if isinstance(v, ClosedJaxpr) else v))
  return out


def _is_ref(aval) -> bool:
  return "Ref" in type(aval).__name__


class _Canvas:
  def __init__(self, jaxpr: Jaxpr):
    self.names = _Names()
    self.count = 0
    self.colors: dict = {}
    for e in _all_ordered(jaxpr):
      self.colors.setdefault(e, PALETTE[len(self.colors) % len(PALETTE)])

  def new_id(self) -> str:
    self.count += 1
    return f"n{self.count}"

  def label(self, eqn) -> str:
    outs = " ".join(self.names.binder(v) for v in eqn.outvars)
    ins = " ".join(self.names(v) for v in eqn.invars)
    head = eqn.primitive.name
    if head == "sow":
      head = f"sow {eqn.params['tag']}:{_show(eqn.params['name'])} ({eqn.params['mode']})"
    elif head == "perform":
      head = f"{eqn.params['operation']}"
    return f"{outs} = {head} {ins}".strip(" =") if outs else f"{head} {ins}"

  def frame(self, jaxpr: Jaxpr, x: float, y: float, title: str):
    """The parts of one frame at (x, y), its width and height."""
    rows, edges, defined = [], [], {}
    ids: list[tuple[str, Any, float, float, float]] = []  # (id, eqn, y_mid, right, left)
    cy = y + ROW
    frame_id = self.new_id()
    tokens_in, tokens_out = f"{frame_id}-in", f"{frame_id}-out"
    inner_x = x + 3 * GAP
    for v in [*jaxpr.constvars, *jaxpr.invars]:
      nid, text = self.new_id(), self.names.binder(v)
      w = _text_width(text)
      rows.append(_box(nid, inner_x, cy, w, ROW - 6, "invar", text, "invar"))
      defined[v] = (nid, inner_x, cy + (ROW - 6) / 2)
      cy += ROW
    widest = max([0] + [_text_width(self.names.binder(v)) for v in jaxpr.invars])
    for eqn in jaxpr.eqns:
      nid, kind = self.new_id(), _kind(eqn)
      text = self.label(eqn)
      bodies = _bodies(eqn)
      if bodies:
        bx, inner, bh = inner_x + GAP, [], 0
        for label, body in bodies:
          parts, w, h = self.frame(body, bx, cy + ROW, label)
          inner += parts
          bx += w + GAP
          bh = max(bh, h)
        w = max(_text_width(text), bx - inner_x)
        h = ROW + bh + GAP
        rows.append(_box(nid, inner_x, cy, w, h, f"eqn {kind} body", text, "body",
                         eqn.primitive.name, top_label=True))
        rows += inner
      else:
        w, h = _text_width(text), ROW - 6
        rows.append(_box(nid, inner_x, cy, w, h, f"eqn {kind}", text, kind,
                         eqn.primitive.name))
      mid = cy + (min(h, ROW - 6)) / 2
      for atom in eqn.invars:
        if type(atom) is Var and atom in defined:
          src, sx, sy = defined[atom]
          ref = _is_ref(atom.aval)
          edges.append(_edge(src, nid, sx, sy, inner_x, mid, ref))
      for v in eqn.outvars:
        defined[v] = (nid, inner_x, mid)
      ids.append((nid, eqn, mid, inner_x + w, inner_x))
      widest = max(widest, w)
      cy += h + 6
    out_text = "out: " + " ".join(self.names(v) for v in jaxpr.outvars)
    out_id = self.new_id()
    rows.append(_box(out_id, inner_x, cy, _text_width(out_text), ROW - 6, "outvars", out_text,
                     "outvars"))
    for v in jaxpr.outvars:
      if type(v) is Var and v in defined:
        src, sx, sy = defined[v]
        edges.append(_edge(src, out_id, sx, sy, inner_x, cy + (ROW - 6) / 2, False))
    widest = max(widest, _text_width(out_text))
    cy += ROW
    ordered = effects_lib.ordered_effects(jaxpr.effects)
    width = 3 * GAP + widest + GAP * (2 + 2 * len(ordered)) + GAP
    height = cy - y + GAP
    chains = []
    for k, effect in enumerate(ordered):
      cx = x + width - GAP * (2 + 2 * k)
      color = self.colors.get(effect, PALETTE[0])
      points = [(cx, y + 8)]
      through = [tokens_in]
      for nid, eqn, mid, right, _ in ids:
        if effect in eqn.effects:
          points += [(cx, mid - 4), (right, mid), (cx, mid + 4)]
          through.append(nid)
      points.append((cx, y + height - 8))
      through.append(tokens_out)
      chains.append(
          f"<polyline class='token-chain' data-effect={quoteattr(repr(effect))} "
          f"data-through='{' '.join(through)}' fill='none' stroke='{color}' "
          f"stroke-width='2' points='{' '.join(f'{px:.1f},{py:.1f}' for px, py in points)}'/>")
      chains.append(f"<circle id='{tokens_in}-{k}' cx='{cx:.1f}' cy='{y + 8:.1f}' r='3' "
                    f"fill='{color}'/>")
      chains.append(f"<circle id='{tokens_out}-{k}' cx='{cx:.1f}' cy='{y + height - 8:.1f}' "
                    f"r='3' fill='{color}'/>")
    frame = [f"<g class='frame' id='{frame_id}' data-title={quoteattr(title)}>",
             f"<rect x='{x:.1f}' y='{y:.1f}' width='{width:.1f}' height='{height:.1f}' "
             f"rx='6' fill='{FILL['body']}' stroke='#999'/>",
             f"<text x='{x + 6:.1f}' y='{y + 15:.1f}' fill='#555'>{escape(title)}</text>"]
    return [*frame, *rows, *edges, *chains, "</g>"], width, height

  def legend(self, x: float, y: float):
    parts, cy = [], y
    for effect, color in self.colors.items():
      parts.append(f"<g class='legend'><line x1='{x}' y1='{cy + 6}' x2='{x + 24}' "
                   f"y2='{cy + 6}' stroke='{color}' stroke-width='3'/><text x='{x + 30}' "
                   f"y='{cy + 10}'>{escape(repr(effect))} token</text></g>")
      cy += 16
    return parts, (200 if parts else 0), cy - y


def _all_ordered(jaxpr: Jaxpr) -> list:
  found = list(effects_lib.ordered_effects(jaxpr.effects))
  for eqn in jaxpr.eqns:
    for _, body in _bodies(eqn):
      found += [e for e in _all_ordered(body) if e not in found]
  return found


def _show(name) -> str:
  return "/".join(map(str, name)) if isinstance(name, tuple) else str(name)


def _text_width(text: str) -> float:
  return len(text) * CHAR + 12


def _box(nid, x, y, w, h, cls, text, kind, primitive=None, top_label=False) -> str:
  prim = f" data-primitive={quoteattr(primitive)}" if primitive else ""
  ty = y + 14 if top_label else y + h / 2 + 4
  return (f"<g class={quoteattr(cls)} id='{nid}'{prim}><rect x='{x:.1f}' y='{y:.1f}' "
          f"width='{w:.1f}' height='{h:.1f}' rx='3' fill='{FILL.get(kind, FILL['eqn'])}' "
          f"stroke='#666'/><text x='{x + 6:.1f}' y='{ty:.1f}'>{escape(text)}</text></g>")


def _edge(src, dst, x1, y1, x2, y2, ref: bool) -> str:
  bulge = 8 + min(40.0, abs(y2 - y1) / 6)
  dash = " stroke-dasharray='4 3'" if ref else ""
  cls = "data-edge ref-edge" if ref else "data-edge"
  return (f"<path class='{cls}' data-from='{src}' data-to='{dst}' fill='none' "
          f"stroke='#888'{dash} d='M{x1:.1f},{y1:.1f} C{x1 - bulge:.1f},{y1:.1f} "
          f"{x2 - bulge:.1f},{y2:.1f} {x2:.1f},{y2:.1f}'/>")
