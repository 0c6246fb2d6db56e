"""Names are data in the pictures too (issue 10, item 11): whatever the names of a schedule and
the comments of the script that built it hold, the SVG is well-formed XML, the DOT keeps one
statement per line, and the explorer page keeps its structure (its data block is read back
whole, as a browser's HTML tokenizer would see it)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from viz_util import parse_dot

from tessel import te, viz

MARKUP = "<!--<script>\x01</script>\x0b]]>&amp;\"'\u2028\u202e\n"
# the same with lone surrogates (which no UTF-8 text can hold)
HOSTILE = [MARKUP, MARKUP + "\udfff\ud800"]


def _schedule(hostile: str):
    A = te.placeholder((8, 6), name="A" + hostile)
    k = te.reduce_axis((0, 6), name="k" + hostile)
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B" + hostile)
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], 4)  # <!--<script> in a comment of the user's script
    s[B].bind(xo, te.thread_axis("blockIdx.x" + hostile))
    return s, A, B


class _Page(HTMLParser):
    """The elements of a page and the text of each <script>, as an HTML tokenizer reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "script":
            self._in, self._text = dict(attrs), []

    def handle_data(self, data):
        if self._in is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in is not None:
            self.scripts.append((self._in, "".join(self._text)))
            self._in = None


@pytest.mark.parametrize("hostile", HOSTILE, ids=["markup", "surrogates"])
@pytest.mark.parametrize("view", ["dataflow_graph", "schedule_tree", "itervar_graph"])
def test_views_of_hostile_names_are_valid_svg_and_dot(view, hostile):
    s, _, _ = _schedule(hostile)
    v = getattr(viz, view)(s)
    root = ET.fromstring(v.to_svg(engine="python"))  # raises on a control character or bad markup
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("\\x01" in t and "</script>" in t for t in texts)  # shown, escaped, not dropped
    dot = v.to_dot()
    assert all(line.isprintable() for line in dot.splitlines())
    parsed = parse_dot(dot)  # every node and edge statement is still one line
    assert len(parsed.nodes) == len(v.graph.nodes) and len(parsed.edges) == len(v.graph.edges)


@pytest.mark.parametrize("hostile", HOSTILE, ids=["markup", "surrogates"])
def test_explorer_page_keeps_its_structure_with_hostile_names_and_comments(tmp_path, hostile):
    s, A, B = _schedule(hostile)
    out = tmp_path / "page.html"
    text = viz.explorer(s, args=[A, B], engine="python", path=out, title="t" + hostile)
    assert out.read_text(encoding="utf-8") == text
    page = _Page()
    page.feed(text)
    page.close()
    data_scripts = [body for attrs, body in page.scripts if attrs.get("id") == "data"]
    assert len(data_scripts) == 1 and len(page.scripts) == 2
    body = data_scripts[0]
    # in a script element a browser reacts only to "<" ("</script", "<!--" then "<script"):
    # the embedded data must hold none, whatever the strings inside it are
    assert "<" not in body and "\u2028" not in body
    data = json.loads(body)
    steps = data["schedules"][0]["steps"]
    assert any("<!--<script>" in (st["code"] or "") for st in steps)
    assert any(row[0] == "B" + hostile for st in steps for row in st["bounds"])  # data, as it was
    for svg in data["svgs"]:
        ET.fromstring(svg)
    assert page.tags.count("title") == 1 and "main" in page.tags
