"""Helpers for the view tests: read DOT back, run the example scripts."""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tessel.cli import run_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

_Q = r'"((?:[^"\\]|\\.)*)"'
_NODE = re.compile(rf"^\s*{_Q} \[(.*)\];$")
_EDGE = re.compile(rf"^\s*{_Q} -> {_Q}(?: \[(.*)\])?;$")
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\s]+)')
_CLUSTER = re.compile(rf"^\s*subgraph {_Q} \{{$")


def _unq(text: str) -> str:
    if text.startswith('"'):
        text = text[1:-1]
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def _attrs(text: str | None) -> dict[str, str]:
    return {k: _unq(v) for k, v in _ATTR.findall(text or "")}


@dataclass
class Dot:
    """A DOT graph as written by tessel.viz.dot: one statement per line."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    clusters: dict[str, list[str]] = field(default_factory=dict)

    def label(self, node: str) -> list[str]:
        return self.nodes[node]["label"].split("\n")

    def has_edge(self, src: str, dst: str, label: str | None = None) -> bool:
        return any(s == src and d == dst and (label is None or a.get("label") == label) for s, d, a in self.edges)

    def children(self, node: str) -> list[str]:
        return [d for s, d, _ in self.edges if s == node]

    def parents(self, node: str) -> list[str]:
        return [s for s, d, _ in self.edges if d == node]


def parse_dot(text: str) -> Dot:
    dot = Dot()
    cluster = None
    for line in text.splitlines():
        if m := _CLUSTER.match(line):
            cluster = _unq('"' + m.group(1) + '"').removeprefix("cluster_")
            dot.clusters[cluster] = []
        elif line.strip() == "}":
            cluster = None
        elif m := _EDGE.match(line):
            dot.edges.append((_unq('"' + m.group(1) + '"'), _unq('"' + m.group(2) + '"'), _attrs(m.group(3))))
        elif m := _NODE.match(line):
            nid = _unq('"' + m.group(1) + '"')
            dot.nodes[nid] = _attrs(m.group(2))
            if cluster is not None:
                dot.clusters[cluster].append(nid)
    return dot


def example_schedule(name: str):
    """Run examples/<name> and return its (only) schedule, with its history."""
    run = run_script(EXAMPLES / name, stdout_to_stderr=True)
    assert run.failure is None, run.failure
    assert len(run.schedules) == 1
    return run.schedules[0]


def step(sch, primitive: str, nth: int = 0):
    """The schedule as it was right after the ``nth`` call of ``primitive``."""
    found = [r for r in sch.history if r.primitive == primitive]
    return found[nth].snapshot


def page_data(text: str) -> dict:
    """The data an explorer page carries (its JSON block)."""
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


CHROMIUM = os.environ.get("TESSEL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run"]


def need(what: str):
    """Skip without a browser, unless TESSEL_REQUIRE_BROWSER=1 (set by CI) makes that a failure."""
    if os.environ.get("TESSEL_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{what} is required (TESSEL_REQUIRE_BROWSER=1)")
    pytest.skip(f"{what} is not available")


def browser_page(report: Path, shots: Path, width: int = 1500, height: int = 1000):
    """A Playwright page on ``report`` in the system's headless Chromium (a generator for a
    fixture); ``page.problems`` collects console errors, page errors and any network fetch."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need("the playwright Python package")
    if not Path(CHROMIUM).exists():
        need(f"Chromium ({CHROMIUM})")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        pg = browser.new_page(viewport={"width": width, "height": height})
        problems: list[str] = []
        pg.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        pg.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else problems.append(f"fetched {r.url}"))
        pg.goto(report.as_uri())
        pg.wait_for_selector("#steps li")
        pg.problems = problems
        pg.shots = shots
        yield pg
        browser.close()
