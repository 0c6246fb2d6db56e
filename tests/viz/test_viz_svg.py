"""SVG with and without Graphviz: ``dot`` is used when it is on PATH, tessel's own drawing
otherwise or when asked; a broken ``dot`` falls back (auto) or is reported (engine="dot")."""

from __future__ import annotations

import os
import shutil
import stat
import xml.etree.ElementTree as ET

import pytest
from viz_util import example_schedule

import tessel
from tessel import viz
from tessel.viz.views import View

OURS = 'font-family="DejaVu Sans Mono'


@pytest.fixture(scope="module")
def views() -> list[View]:
    s = example_schedule("seed001_rfactor.py")
    return [viz.dataflow_graph(s), viz.schedule_tree(s), viz.itervar_graph(s)]


def _fake_dot(tmp_path, body: str) -> str:
    d = tmp_path / "bin"
    d.mkdir()
    exe = d / "dot"
    exe.write_text("#!/bin/sh\nwhile read -r line; do :; done\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(d)


def test_without_dot_on_path_tessel_draws(views, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no dot
    for v in views:
        svg = v.to_svg()
        assert OURS in svg and v._repr_svg_() == svg
        root = ET.fromstring(svg)  # well-formed, standalone XML
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        titles = {t.text for t in root.iter("{http://www.w3.org/2000/svg}title")}
        assert set(v.graph.nodes) <= titles  # every node is drawn
        texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
        for node in v.graph.nodes.values():
            for line in node.label:
                assert line in texts
        assert "<defs" not in svg and " id=" not in svg  # nothing to clash when inlined together
    with pytest.raises(tessel.TesselError, match="no `dot` program is on PATH"):
        views[0].to_svg(engine="dot")


def test_dot_on_path_is_used(views, tmp_path, monkeypatch):
    path = _fake_dot(tmp_path, "echo '<?xml version=\"1.0\"?>'\necho '<svg xmlns=\"http://www.w3.org/2000/svg\"><!--fake--></svg>'\n")
    monkeypatch.setenv("PATH", path)
    svg = views[1].to_svg()
    assert svg.startswith("<svg") and "fake" in svg  # the XML prolog is cut, so it can be inlined
    assert OURS in views[1].to_svg(engine="python")


def test_broken_dot_falls_back_or_is_reported(views, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_dot(tmp_path, "echo 'syntax error in line 1' >&2\nexit 3\n"))
    assert OURS in views[0].to_svg()
    with pytest.raises(tessel.TesselError, match="exit code 3: syntax error in line 1"):
        views[0].to_svg(engine="dot")


def test_unknown_engine(views):
    with pytest.raises(tessel.TesselError, match="unknown drawing engine 'neato'.*auto, dot, python"):
        views[0].to_svg(engine="neato")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_real_graphviz(views):
    for v in views:
        svg = v.to_svg(engine="dot")
        root = ET.fromstring(svg)
        titles = {t.text for t in root.iter("{http://www.w3.org/2000/svg}title")}
        assert set(v.graph.nodes) <= titles


def test_save_by_suffix(views, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    v = views[2]
    assert v.save(tmp_path / "v.dot").read_text() == v.to_dot()
    assert v.save(tmp_path / "v.svg").read_text().startswith("<svg")
    assert os.path.getsize(tmp_path / "v.svg") > 1000
    assert repr(v).startswith("<itervar_graph view:")


def test_dot_text_escapes_quotes_and_backslashes():
    g = viz.Graph("g")
    g.add_node('a"b', ['say "hi"', "back\\slash"])
    g.add_edge('a"b', 'a"b', 'x"y')
    text = g.to_dot()
    assert '"a\\"b" [label="say \\"hi\\"\\nback\\\\slash"' in text
    assert '"a\\"b" -> "a\\"b" [label="x\\"y"];' in text
