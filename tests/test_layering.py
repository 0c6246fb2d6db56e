"""The data flows one way: te -> schedule -> bound -> lower -> passes -> codegen -> runtime.

Each package may import (at module level) only the packages listed for it. A lazy import
inside a function (``te.create_schedule`` reaching the schedule package) is a deliberate
convenience and is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tessel

ROOT = Path(tessel.__file__).parent

ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "ir": {"errors"},
    "arith": {"errors", "ir"},
    "te": {"errors", "ir", "arith"},
    "schedule": {"errors", "ir", "arith", "te"},
    "bound": {"errors", "ir", "arith", "te", "schedule"},
    "lower": {"errors", "ir", "arith", "te", "schedule", "bound"},
    "passes": {"errors", "ir", "arith"},
    "runtime": {"errors", "ir"},
    "codegen": {"errors", "ir", "arith", "runtime"},
}


def _package(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _top_level_targets(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    here = list(path.relative_to(ROOT).parts[:-1])
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                mod = base + (node.module.split(".") if node.module else [])
                out.add(mod[0] if mod else node.names[0].name)
            elif node.module and node.module.startswith("tessel."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("tessel."):
                    out.add(a.name.split(".")[1])
    return out


def test_imports_follow_the_pipeline():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        pkg = _package(path)
        if pkg not in ALLOWED:
            continue  # driver, cli, viz, compat, demo may import anything
        for target in _top_level_targets(path) - {pkg}:
            if target not in ALLOWED[pkg]:
                bad.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not bad, "imports against the data flow:\n" + "\n".join(bad)
