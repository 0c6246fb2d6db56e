"""The import-cycle measure (tests/e2e/import_graph.py), checked on a package small enough to know
its answer by reading it: a lazy back edge closes a cycle, an annotation-only import does not."""

from __future__ import annotations

from pathlib import Path

from import_graph import Import, all_imports, cycles, graph, report

FILES = {
    "__init__.py": "from .a import f\n",
    "a.py": "import os\nfrom . import b\ndef f():\n    return b\n",
    # the back edge is lazy: still a cycle a <-> b
    "b.py": "def g():\n    from .a import f\n    return f\n",
    # annotation only: c -> d is no edge, so d -> c closes nothing
    "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
    "d.py": "from pkg.c import TYPE_CHECKING\nD = 1\n",
    # two levels up, and a class body (which runs at import time: not lazy)
    "sub/__init__.py": "from ..e import h\n",
    "e.py": "class K:\n    import pkg.sub as s\ndef h():\n    pass\n",
}


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_edges_name_modules_and_say_which_are_lazy(tmp_path):
    found = all_imports(_package(tmp_path))
    assert found["pkg.a"] == [Import("pkg.b", 2, False)]  # `from . import b` names the module pkg.b
    assert found["pkg.b"] == [Import("pkg.a", 2, True)]
    assert found["pkg.c"] == []
    assert found["pkg.sub"] == [Import("pkg.e", 1, False)]
    assert found["pkg.e"] == [Import("pkg.sub", 2, False)]
    assert graph(found)["pkg"] == {"pkg.a"}


def test_cycles_are_the_strongly_connected_components(tmp_path):
    comps = cycles(graph(all_imports(_package(tmp_path))))
    assert comps == [{"pkg.a", "pkg.b"}, {"pkg.e", "pkg.sub"}]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []  # a chain is no cycle


def test_a_long_chain_does_not_exhaust_the_stack():
    n = 5000
    edges = {f"m{k}": {f"m{k + 1}"} for k in range(n)} | {f"m{n}": {"m0"}}
    assert [len(c) for c in cycles(edges)] == [n + 1]


def test_report_counts_lazy_imports_per_package(tmp_path):
    text = report(_package(tmp_path))
    assert text.splitlines()[0] == "7 modules; lazy import statements naming a package module: 1"
    assert "  b: 1" in text
    assert "cycle of 2 modules" in text
