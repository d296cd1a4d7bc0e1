"""An interactive teaching page: one self-contained HTML file with the forward graph and B.

The page draws the same picture as ``sg.draw`` (see :mod:`.scene`) as inline SVG, and an
inline script shows, for the node under the mouse (or the one clicked, which stays), its
definition, op, shape, forward value at ``at``, its adjoint's value and the row of the
backprop table that produced it (``P2 = P3·J(2→3) + P4·J(2→4) = 3·1 + 1·5 = 8``, as
``sg.explain`` computes it). Nothing is fetched from a network: no fonts, no scripts, no
styles from elsewhere; the file works offline and can be mailed.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..backends.interpreter import inputs_by_name, run
from ..base.describe import describe
from ..base.errors import SymgradError
from ..base.progress import step
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import fmt, is_float
from ..transforms.derivatives import grad
from .draw import BOX_STYLE, EDGE_STYLE, edge_points, label_point
from .explain import Table, at_item, explain, value_text
from .model import EDGE_LEGEND, LEGEND, LINE, Scene
from .scene import build_scene

PX = 100.0  # SVG pixels per inch of the scene (its 8 pt text becomes 11 px)


def to_html(exprs: Expr | str | Sequence[Expr], at: Mapping[Any, Any] | None = None,
            path: str | None = None, *, wrt: Any = None, title: str | None = None,
            collapse: bool | str = "auto") -> str:
    """A self-contained HTML page showing the forward graph and B side by side.

    Hovering over a node (or clicking it, to keep it) shows its definition, op, shape,
    its forward value at ``at``, and its adjoint's value with the row of the backprop table
    that produced it (``P2 = P3·J(2→3) + P4·J(2→4) = 3·1 + 1·5 = 8``).

    Parameters
    ----------
    exprs : Expr, str or list of Expr
        A scalar expression (or its text): its derivative subgraph B for ``wrt`` is built on
        a private copy (your graph is not changed). Or a list such as ``[f, *sg.grad(f,
        x)]``, drawn as it is.
    at : mapping, optional
        Input values by variable name; without it the page shows no numbers.
    path : str, optional
        Where to write the page (UTF-8). The text is returned either way.
    wrt : variable or list, optional
        The variables of the gradient (default: every float variable).

    Returns
    -------
    str
        The HTML text.

    Examples
    --------
    >>> import symgrad as sg
    >>> u1, u2 = sg.var("u1"), sg.var("u2")
    >>> page = sg.to_html(u2 * (u1 + u2), at={"u1": 2.0, "u2": 3.0})
    >>> "P2 = P3·J(2→3) + P4·J(2→4) = 3·1 + 1·5 = 8" in page
    True
    >>> "http" in page.replace("http-equiv", "")   # nothing from a network
    False
    """
    path = _page_path(path)
    with step("html page", unit="box") as s:
        if isinstance(exprs, str):
            from ..frontend.parse import parse

            exprs = parse(exprs)
        drawn, table = _drawn(exprs, wrt, at)
        scene = build_scene(drawn, title=title, collapse=collapse)
        s.update(len(scene.boxes))
        values = _values(scene, at)
        page = _page(scene, _details(scene, values, table), at, table)
    if path is not None:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(page)
        except OSError as e:
            raise SymgradError(f"cannot write {path}: {e.strerror or e}") from None
    return page


def _page_path(path: Any) -> str | None:
    """``path`` as an exact file name (a str or an os.PathLike of one), or None; a file
    descriptor (an int) is refused: the page is written to a named file."""
    if path is None:
        return None
    if isinstance(path, os.PathLike) and not isinstance(path, str):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise SymgradError(f"to_html: path must be a file name, got {describe(path)}")
    return str.__str__(path)


def _drawn(exprs: Any, wrt: Any, at: Any) -> tuple[list[Expr], Table | None]:
    """What to draw, and the backprop table of its output (when it is a scalar)."""
    if isinstance(exprs, Expr):
        f = exprs
        has_b = any(f.graph.nodes[i].role == "adjoint" for i in f.graph.ancestors([f.node]))
        if f.shape == () and not has_b and is_float(f.dtype):
            graph = Graph()
            out = Expr(graph, graph.import_node(f.graph, f.node))
            targets = wrt if wrt is not None else _float_variables(out)
            if not targets:
                return [out], None
            many = isinstance(targets, (list, tuple))
            grads = grad(out, targets)
            return [out, *(grads if many else [grads])], explain(f, targets, at=at)
        exprs = [f]
    if not isinstance(exprs, (list, tuple)) or not exprs:
        raise SymgradError("to_html needs an Expr, expression text or a list of Exprs")
    first = exprs[0]
    table = None
    if isinstance(first, Expr) and first.shape == () and first.data.role == "forward":
        record = next((t for t in reversed(first.graph.transforms) if t.output == first.node),
                      None)
        if record is not None:
            names = [first.graph.nodes[w].name for w in record.wrt]
            table = explain(first, names, at=at)
    return list(exprs), table


def _float_variables(f: Expr) -> list[str]:
    g = f.graph
    return [g.nodes[i].name for i in g.ancestors([f.node])
            if g.nodes[i].is_var and is_float(g.nodes[i].dtype)]


def _values(scene: Scene, at: Mapping[Any, Any] | None) -> dict[int, Any]:
    if at is None:
        return {}
    ids = sorted({b.node for b in scene.boxes.values() if b.node is not None})
    return run(scene.graph, ids, inputs_by_name(at))


# -- what the panel says about each box -------------------------------------------------------


def _details(scene: Scene, values: dict[int, Any], table: Table | None) -> dict[str, dict]:
    rows = {r["label"]: r for r in table.rows} if table is not None else {}
    nodes = scene.graph.nodes
    by_label = {b.label: b for b in scene.boxes.values()}
    out = {}
    for key, b in scene.boxes.items():
        n = nodes[b.node] if b.node is not None else None
        info: dict[str, Any] = {"title": b.lines[0], "kind": LEGEND[b.kind], "facts": []}
        facts = info["facts"]
        if n is not None:
            op = REGISTRY.get(n.op)
            kind = "input variable" if n.is_var else n.op + (
                "" if op is None or op.public else " (internal)")
            facts.append(["op", kind])
            facts.append(["shape", f"{fmt(n.shape)} {n.dtype}"])
        if b.kind in ("input", "forward"):
            number = b.label[1:]
            row = rows.get(f"P{number}")
            if b.node in values:
                facts.append(["value", value_text(values[b.node])])
            adjoint = _adjoint_box(scene, key)
            if row is not None:
                facts.append(["adjoint", _row_text(row)])
            elif adjoint is None:
                facts.append(["adjoint", "none: not on a path from the wrt variables"])
            if adjoint is not None:
                info["adjoint"] = adjoint
        elif b.kind in ("adjoint", "shared"):
            anchor = scene.boxes.get(b.anchor or "")
            for p in b.label.split(" = "):
                row = rows.get(p)
                if row is not None:
                    facts.append(["backprop", _row_text(row)])
            if b.kind == "shared":
                facts.append(["why", "hash-consing builds identical nodes once: this adjoint "
                                      "is the very node " + b.lines[0].split(" = ", 1)[1]
                                      + ", so B needs no node of its own"])
            node = b.node if b.node is not None else _shared_node(b, by_label)
            if node is not None and node in values:
                facts.append(["value", value_text(values[node])])
            if anchor is not None:
                info["adjoint"] = anchor.key
        elif b.kind in ("intermediate", "tangent"):
            origin = scene.boxes.get(b.origin or "")
            rule = "forward (JVP)" if n is not None and n.role == "tangent" else "backprop"
            if origin is not None:
                facts.append(["built by", f"the {rule} rule of {origin.label} "
                                           f"({origin.op or 'a collapsed chain'})"])
            if b.node in values:
                facts.append(["value", value_text(values[b.node])])
        elif b.kind == "note":
            facts.append(["why", "reverse mode recognised this idiom and differentiated it by "
                                 "its own rule, which goes from the adjoint of its root to that "
                                 "of its input in one step: the nodes inside get no adjoint "
                                 "(sg.explain lists the chain rule step by step)"])
        else:  # a group
            facts.append(["stands for", b.lines[1]])
        out[key] = info
    return out


def _adjoint_box(scene: Scene, key: str) -> str | None:
    for e in scene.edges:
        if e.kind == "link" and e.src == key:
            return e.dst
    return None


def _shared_node(b, by_label) -> int | None:
    what = b.lines[0].split(" = ", 1)[1]
    target = by_label.get(what)
    return None if target is None else target.node


def _row_text(row: dict) -> str:
    """``P2 = P3·J(2→3) + P4·J(2→4) = 3·1 + 1·5 = 8``."""
    parts = [row["label"], row["definition"].replace(" J(", "·J(").replace("->", "→")]
    if row["local terms"]:
        parts.append(row["local terms"].replace("*", "·"))
    if row["value"] is not None:
        parts.append(value_text(row["value"]))
    return " = ".join(parts)


# -- the page ---------------------------------------------------------------------------------


def _page(scene: Scene, details: dict[str, dict], at: Any, table: Table | None) -> str:
    svg = scene_svg(scene) + "\n</svg>"
    data = json.dumps(details, ensure_ascii=False).replace("<", "\\u003c")
    given = [at_item(k, v) for k, v in inputs_by_name(at).items() if k in scene.graph.variables] \
        if at is not None else []
    at_text = " at " + ", ".join(given) if given else (
        " (no input values given: pass at=... for numbers)" if at is None else "")
    legend = "".join(
        f'<li><span class="swatch" style="background:{BOX_STYLE[k][0]};'
        f'border:{1.5 * BOX_STYLE[k][3]:.1f}px {css_dash(BOX_STYLE[k][2])} '
        f'{BOX_STYLE[k][1]}"></span>'
        f"{html.escape(LEGEND[k])}</li>" for k in scene.kinds)
    legend += "".join(
        f'<li><span class="line" style="border-top:2px {css_dash(EDGE_STYLE[k][1])} '
        f'{EDGE_STYLE[k][0]}"></span>{html.escape(EDGE_LEGEND[k])}</li>'
        for k in scene.edge_kinds)
    note = (f"<p class=\"sub\">{scene.collapsed:,} nodes are inside collapsed chains "
            "(grey boxes).</p>" if scene.collapsed else "")
    return _TEMPLATE.format(
        title=html.escape(scene.title), subtitle=html.escape(scene.subtitle + at_text),
        note=note, svg=svg, legend=legend, data=data, script=_SCRIPT, style=_STYLE,
        script_hash=_SCRIPT_HASH,
    )


def css_dash(style: str) -> str:
    return {"-": "solid", "--": "dashed", ":": "dotted"}[style]


FONT_ATTRS = ('font-family="ui-monospace, \'DejaVu Sans Mono\', monospace" '
              'font-size="11.1"')


def scene_svg(scene: Scene, prefix: str = "", page: bool = True, head: float = 0.0,
         foot: float = 0.0, min_width: float = 0.0) -> str:
    """The picture as SVG, without its closing tag: for the page (boxes with ids the script
    finds) or, with ``page=False``, a standalone image (its marker ids start with
    ``prefix``; ``head`` and ``foot`` inches are left free above and below for a title and
    a legend; at least ``min_width`` pixels wide)."""
    left, right, bottom, top = scene.extent()
    pad = 0.4
    width = max((right - left + 2 * pad) * PX, min_width)
    height = (top - bottom + 2 * pad + head + foot) * PX

    def X(x: float) -> float:
        return round((x - left + pad) * PX, 1)

    def Y(y: float) -> float:
        return round((top + pad + head - y) * PX, 1)

    first = (f'<svg id="graph" width="{width:.0f}" height="{height:.0f}" '
             f'style="max-width: {width:.0f}px" ' if page else
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
             f'height="{height:.0f}" ')
    out = [f'{first}viewBox="0 0 {width:.0f} {height:.0f}" role="img" {FONT_ATTRS} '
           f'aria-label="{html.escape(scene.title)}">', "<defs>"]
    for kind, (colour, _, _) in EDGE_STYLE.items():
        out.append(f'<marker id="{prefix}head-{kind}" viewBox="0 0 10 10" refX="10" refY="5" '
                   f'markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" '
                   f'orient="auto-start-reverse">'
                   f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>')
    out.append("</defs>")
    if not page:
        out.append('<rect width="100%" height="100%" fill="#ffffff"/>')
    for e in scene.edges:
        colour, style, lw = EDGE_STYLE[e.kind]
        pts = edge_points(scene, e)
        d = "M" + " L".join(f"{X(x)},{Y(y)}" for x, y in pts)
        dash = {"-": "", "--": ' stroke-dasharray="6 3"', ":": ' stroke-dasharray="2 3"'}[style]
        ident = (f'class="edge {e.kind}" data-tail="{e.src}" data-head="{e.dst}" '
                 if page else "")
        out.append(f'<path {ident}d="{d}" '
                   f'fill="none" stroke="{colour}" stroke-width="{lw * 1.3:.1f}"{dash} '
                   f'marker-end="url(#{prefix}head-{e.kind})"/>')
        if e.label:
            x, y = label_point(scene, e, pts)
            out.append(f'<text class="elabel" x="{X(x)}" y="{Y(y) - 3}" fill="{colour}" '
                       f'font-size="9.7" text-anchor="middle">{html.escape(e.label)}</text>')
    for b in scene.boxes.values():
        face, edge, style, lw = BOX_STYLE[b.kind]
        dash = {"-": "", "--": ' stroke-dasharray="5 3"', ":": ' stroke-dasharray="2 2"'}[style]
        x0, y0 = X(b.x - b.width / 2), Y(b.y + b.height / 2)
        ident = f'class="box {b.kind}" id="{b.key}" data-key="{b.key}" tabindex="0"' \
            if page else ""
        out.append(f'<g {ident}>'
                   f'<rect x="{x0}" y="{y0}" width="{b.width * PX:.1f}" '
                   f'height="{b.height * PX:.1f}" rx="5" fill="{face}" stroke="{edge}" '
                   f'stroke-width="{lw * (2.4 if b.output else 1.2):.1f}"{dash}/>')
        step = LINE * PX
        first = Y(b.y) - (len(b.lines) - 1) * step / 2 + 4
        for k, line in enumerate(b.lines):
            out.append(f'<text x="{X(b.x)}" y="{first + step * k:.1f}" '
                       f'text-anchor="middle">{html.escape(line)}</text>')
        out.append("</g>")
    return "\n".join(out)  # the caller adds what goes above and below, and "</svg>"


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 12px 18px 4px; }
h1 { font: 600 18px ui-monospace, 'DejaVu Sans Mono', monospace; margin: 0 0 4px; }
.sub { color: #555; margin: 0 0 4px; }
main { display: flex; gap: 12px; padding: 0 18px 18px; align-items: flex-start; }
#canvas { overflow: auto; border: 1px solid #ddd; border-radius: 6px; max-height: 85vh;
          flex: 1 1 auto; min-width: 0; background: #fff; }
#canvas.fit svg { width: 100%; height: auto; display: block; }
#side { width: 340px; flex: 0 0 340px; position: sticky; top: 8px; }
@media (max-width: 900px) {
  main { flex-direction: column; align-items: stretch; }
  #side { position: static; width: auto; flex: none; }
}
#zoom { font: 12px system-ui, sans-serif; margin: 0 0 4px; }
#panel { border: 1px solid #ccc; border-radius: 6px; padding: 10px 12px; min-height: 120px;
         background: #fafafa; }
#panel h2 { font: 600 15px ui-monospace, 'DejaVu Sans Mono', monospace; margin: 0 0 2px; }
#panel .kind { color: #666; margin: 0 0 8px; font-size: 12px; }
#panel table { border-collapse: collapse; width: 100%; }
#panel td { vertical-align: top; padding: 2px 4px; }
#panel td:first-child { color: #666; white-space: nowrap; }
#panel td:last-child { font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
                       white-space: pre-wrap; word-break: break-word; }
ul.legend { list-style: none; padding: 0; margin: 10px 0 0; font-size: 12px; }
ul.legend li { margin: 3px 0; }
.swatch { display: inline-block; width: 26px; height: 12px; border-radius: 3px;
          vertical-align: middle; margin-right: 8px; }
.line { display: inline-block; width: 26px; vertical-align: middle; margin-right: 8px; }
svg text { font: 11.1px ui-monospace, 'DejaVu Sans Mono', monospace; fill: #111;
           pointer-events: none; }
svg text.elabel { font-size: 9.7px; }
g.box { cursor: pointer; }
g.box:hover rect, g.box:focus rect { filter: drop-shadow(0 0 3px #2f6fd0); }
g.box.picked rect { stroke: #2f6fd0 !important; stroke-width: 3 !important; }
g.box.partner rect { stroke: #2f6fd0 !important; stroke-width: 2.5 !important; }
path.edge.lit { stroke-width: 3 !important; }
.dim { opacity: 0.25; }
"""

_SCRIPT = """
(function () {
  const data = JSON.parse(document.getElementById('symgrad-data').textContent);
  const panel = document.getElementById('panel');
  const edges = Array.from(document.querySelectorAll('path.edge'));
  let picked = null;
  function text(tag, cls, value) {
    const el = document.createElement(tag);
    if (cls) el.className = cls;
    el.textContent = value;
    return el;
  }
  function show(key) {
    const info = data[key];
    panel.replaceChildren();
    if (!info) { panel.append(text('p', 'kind', 'Point at a node, or click it to keep it.'));
                 return; }
    panel.append(text('h2', '', info.title), text('p', 'kind', info.kind));
    const table = document.createElement('table');
    for (const [name, value] of info.facts) {
      const tr = document.createElement('tr');
      tr.append(text('td', '', name), text('td', '', value));
      table.append(tr);
    }
    panel.append(table);
    document.querySelectorAll('g.box').forEach(g => {
      g.classList.toggle('partner', g.id === info.adjoint);
    });
    edges.forEach(p => p.classList.toggle('lit', p.dataset.tail === key ||
                                                  p.dataset.head === key));
  }
  document.querySelectorAll('g.box').forEach(g => {
    g.addEventListener('mouseenter', () => { if (!picked) show(g.id); });
    g.addEventListener('mouseleave', () => { if (!picked) show(null); });
    g.addEventListener('click', ev => {
      ev.stopPropagation();
      if (picked) picked.classList.remove('picked');
      picked = picked === g ? null : g;
      if (picked) picked.classList.add('picked');
      show(picked ? g.id : null);
    });
    g.addEventListener('keydown', ev => { if (ev.key === 'Enter') g.dispatchEvent(
      new MouseEvent('click')); });
  });
  const canvas = document.getElementById('canvas');
  const zoom = document.getElementById('zoom');
  zoom.addEventListener('click', () => {
    const fit = canvas.classList.toggle('fit');
    zoom.textContent = fit ? 'actual size' : 'fit to the window';
  });
  canvas.addEventListener('click', () => {
    if (picked) picked.classList.remove('picked');
    picked = null; show(null);
  });
  show(null);
})();
"""

# the page's one script, allowed by its hash (no 'unsafe-inline': nothing else can run)
_SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
style-src 'unsafe-inline'; script-src '{script_hash}'; img-src data:">
<title>symgrad: {title}</title>
<style>{style}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<p class="sub">{subtitle}</p>
{note}
<button id="zoom" type="button">actual size</button>
</header>
<main>
<div id="canvas" class="fit">
{svg}
</div>
<aside id="side">
<div id="panel" aria-live="polite"></div>
<ul class="legend">{legend}</ul>
</aside>
</main>
<script type="application/json" id="symgrad-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""

__all__ = ["to_html"]
