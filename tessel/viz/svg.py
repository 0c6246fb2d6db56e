"""SVG text for a graph: drawn by Graphviz's ``dot`` when it is on PATH, else by tessel itself.

The pure-Python drawing uses only plain shapes and inline attributes (no style sheets, no
markers, no ids), so many pictures can sit in one HTML page, hidden or shown, without their
definitions clashing, and a saved file opens anywhere. Its only classes are the explorer's
hooks (``tsl-in-3``: inside stage 3's loops), which style nothing by themselves.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from itertools import pairwise

from ..errors import ViewError
from ..ir.names import html_text
from .dot import COLORS, Graph, tag_attr, to_dot
from .layout import LINE_H, Box, Layout, layout

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
ENGINES = ("auto", "dot", "python")


def esc(text: str) -> str:
    """Text of the picture as XML: names are data (see :mod:`tessel.ir.names`), so any string
    becomes valid XML characters, one line, with markup escaped."""
    return html_text(text)


def to_svg(graph: Graph, engine: str = "auto") -> str:
    """SVG text; ``engine`` is ``"auto"`` (Graphviz if on PATH), ``"dot"`` or ``"python"``."""
    if engine not in ENGINES:
        raise ViewError(f"unknown drawing engine {engine!r}: use one of {', '.join(ENGINES)}")
    if engine != "python":
        exe = shutil.which("dot")
        if exe is None and engine == "dot":
            raise ViewError("engine='dot' asks for Graphviz, but no `dot` program is on PATH; "
                            "install graphviz or use engine='python'")
        if exe is not None:
            try:
                return graphviz_svg(exe, to_dot(graph))
            except ViewError:
                if engine == "dot":
                    raise
    return render(graph, layout(graph))


def graphviz_svg(exe: str, dot_text: str) -> str:
    try:
        proc = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ViewError(f"Graphviz ({exe}) could not be run: {err}") from err
    text = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0 or "<svg" not in text:
        msg = proc.stderr.decode("utf-8", "replace").strip()[-500:]
        raise ViewError(f"Graphviz ({exe}) failed with exit code {proc.returncode}: {msg or 'no SVG produced'}")
    # keep only the <svg> element, so the text can be inlined into HTML
    return re.sub(r"^.*?(?=<svg)", "", text, flags=re.S).strip() + "\n"


def render(graph: Graph, lay: Layout) -> str:
    w, h = math.ceil(lay.width), math.ceil(lay.height)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           f'font-family="{FONT}" font-size="11">',
           f"<title>{esc(graph.name)}</title>",
           f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>']
    if graph.title:
        out.append(f'<text x="8" y="16" font-weight="bold" font-size="12">{esc(graph.title)}</text>')
    for cluster, box in lay.clusters:
        out.append(f'<g{_classes(cluster.tags)}><rect x="{box.left:.1f}" y="{box.top:.1f}" width="{box.w:.1f}" '
                   f'height="{box.h:.1f}" rx="6" fill="#fafafa" stroke="#999999"/>'
                   f'<text x="{box.left + 8:.1f}" y="{box.top + 14:.1f}" fill="#555555">{esc(cluster.label)}</text></g>')
    for edge, pts, curved in lay.routes:
        drawn = _edge(edge.label, edge.dashed, edge.color, pts, curved, lay.rankdir == "LR")
        if drawn:
            out.append(f"<g{_classes(edge.tags)}>" + "".join(drawn) + "</g>")
    for node in graph.nodes.values():
        out.extend(_node(node, lay.boxes[node.id]))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _node(node, box: Box) -> list[str]:
    fill = COLORS.get(node.role, "#ffffff")
    stroke = f'stroke="#333333" stroke-width="{2 if node.bold else 1}"'
    if node.dashed:
        stroke += ' stroke-dasharray="4 3"'
    if node.shape == "ellipse":
        shape = (f'<ellipse cx="{box.x:.1f}" cy="{box.y:.1f}" rx="{box.w / 2:.1f}" ry="{box.h / 2:.1f}" '
                 f'fill="{fill}" {stroke}/>')
    else:
        rx = 6 if node.role in ("stage", "root", "input", "inline", "error") else 0
        shape = (f'<rect x="{box.left:.1f}" y="{box.top:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
                 f'rx="{rx}" fill="{fill}" {stroke}/>')
    parts = [f"<g{_classes(node.tags)}><title>{esc(node.id)}</title>", shape]
    first = box.y - len(node.label) * LINE_H / 2 + LINE_H * 0.75
    for k, line in enumerate(node.label):
        weight = ' font-weight="bold"' if k == 0 and len(node.label) > 1 else ""
        parts.append(f'<text x="{box.x:.1f}" y="{first + k * LINE_H:.1f}" text-anchor="middle"{weight}>'
                     f"{esc(line)}</text>")
    parts.append("</g>")
    return ["".join(parts)]


def _classes(tags: tuple[str, ...]) -> str:
    return f' class="{tag_attr(tags)}"' if tags else ""


def _edge(label: str, dashed: bool, color: str, pts, curved: bool, lr: bool) -> list[str]:
    if len(pts) < 2:
        return []
    # stop the line short of the target so the arrowhead is not overdrawn
    (x0, y0), (x1, y1) = pts[-2], pts[-1]
    if curved:
        dx, dy = (1.0, 0.0) if lr else (0.0, 1.0)
    else:
        d = math.hypot(x1 - x0, y1 - y0) or 1.0
        dx, dy = (x1 - x0) / d, (y1 - y0) / d
    size = 7.0
    tip = pts[-1]
    pts = [*pts[:-1], (tip[0] - dx * size, tip[1] - dy * size)]
    if curved:
        d = f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"
        for (ax, ay), (bx, by) in pairwise(pts):
            if lr:
                mx = (ax + bx) / 2
                d += f" C{mx:.1f},{ay:.1f} {mx:.1f},{by:.1f} {bx:.1f},{by:.1f}"
            else:
                my = (ay + by) / 2
                d += f" C{ax:.1f},{my:.1f} {bx:.1f},{my:.1f} {bx:.1f},{by:.1f}"
    else:
        d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    dash = ' stroke-dasharray="5 3"' if dashed else ""
    color = esc(color)
    out = [f'<path d="{d}" fill="none" stroke="{color}" stroke-width="1.1"{dash}/>']
    nx, ny = -dy, dx
    a = (tip[0] - dx * size + nx * 3.5, tip[1] - dy * size + ny * 3.5)
    b = (tip[0] - dx * size - nx * 3.5, tip[1] - dy * size - ny * 3.5)
    out.append(f'<polygon points="{tip[0]:.1f},{tip[1]:.1f} {a[0]:.1f},{a[1]:.1f} {b[0]:.1f},{b[1]:.1f}" '
               f'fill="{color}"/>')
    if label:
        k = (len(pts) - 1) // 2
        (ax, ay), (bx, by) = pts[k], pts[k + 1]
        mx, my = (ax + bx) / 2, (ay + by) / 2
        # on the outer side of the bend, so labels of edges fanning out do not cross each other
        left = pts[-1][0] < pts[0][0] - 1
        anchor = ' text-anchor="end"' if left else ""
        out.append(f'<text x="{mx - 4 if left else mx + 4:.1f}" y="{my + 3:.1f}"{anchor} font-size="10" '
                   f'fill="#444444" stroke="#ffffff" '
                   f'stroke-width="3" paint-order="stroke">{esc(label)}</text>')
    return out
