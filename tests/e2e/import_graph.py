"""The module graph of a package as its import statements spell it, lazy imports included.

The layering test asks which *packages* a file imports; the import-cycle measure of issue 32
asks which *modules* reach which, because a lazy import (one inside a function) only delays a
dependency: two modules that import each other, one of them lazily, are one unit that cannot
be understood or moved apart. Both read imports here, so they count the same statements.

Only the modules an import names are edges: importing ``p.m`` also runs ``p/__init__.py``,
but that implicit edge would join every package with its own submodules and hide the cycles
that matter. Imports under ``if TYPE_CHECKING:`` never run and are skipped.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    target: str  # dotted module name, e.g. "tessel.schedule.stage"
    line: int
    lazy: bool  # inside a function: runs at call time, not at import time


def module_name(path: Path, root: Path) -> str:
    """``root/a/b.py`` -> ``"<root's name>.a.b"``; a package's ``__init__.py`` is the package."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _statements(tree: ast.AST):
    """Each import statement with whether it is lazy (inside a function: it runs when that is
    called); those under ``if TYPE_CHECKING:`` (annotations only, never run) left out."""
    work: list[tuple[ast.AST, bool]] = [(tree, False)]
    while work:
        node, lazy = work.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, lazy
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            work += [(n, lazy) for n in node.orelse]
        else:
            inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            # an import is a statement: expressions (lambdas included) hold none
            work += [(n, inner) for n in ast.iter_child_nodes(node)
                     if isinstance(n, ast.stmt | ast.excepthandler | ast.match_case)]


def _named(node: ast.AST, here: list[str], known: set[str], top: str) -> list[str]:
    """The modules of package ``top`` one import statement names (``here``: the importing
    module's package, as parts). ``from p import x`` names ``p.x`` when that is a module."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name == top or a.name.startswith(top + ".")]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        if not here:
            return []  # a file outside the package: a relative import names nothing we know
        base = here[: len(here) - (node.level - 1)]
        mod = ".".join(base + (node.module.split(".") if node.module else []))
    elif node.module and (node.module == top or node.module.startswith(top + ".")):
        mod = node.module
    else:
        return []
    return [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]


def imports(path: Path, root: Path, known: set[str] | None = None) -> list[Import]:
    """The imports of package ``root`` that the file ``path`` makes, lazy or not.
    ``path`` may lie outside ``root`` (then only its absolute imports are seen)."""
    known = set(modules(root)) if known is None else known
    here: list[str] = []
    if path.is_relative_to(root):
        name = module_name(path, root).split(".")
        here = name if path.name == "__init__.py" else name[:-1]
    out = [Import(t, node.lineno, lazy) for node, lazy in _statements(ast.parse(path.read_text()))
           for t in _named(node, here, known, root.name)]
    return sorted(out, key=lambda i: (i.line, i.target))


def all_imports(root: Path) -> dict[str, list[Import]]:
    """Module -> its imports of the package at ``root``."""
    mods = modules(root)
    known = set(mods)
    return {m: imports(p, root, known) for m, p in mods.items()}


def graph(found: dict[str, list[Import]]) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (lazily or not)."""
    return {m: {i.target for i in found[m] if i.target != m} for m in found}


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module, largest first (Tarjan's
    algorithm, iterative: a package's import chains may be deeper than Python's stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, succ = work[-1]
            nxt = next(succ, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.add(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return sorted(found, key=lambda c: (-len(c), sorted(c)))


def report(root: Path) -> str:
    """The figures issue 32 asks for: the cycles, and the lazy imports per package."""
    found = all_imports(root)
    lazy: dict[str, int] = {}
    for m, stmts in found.items():
        pkg = [*m.split("."), "__init__"][1]  # a package, or a top-level module
        lazy[pkg] = lazy.get(pkg, 0) + len({i.line for i in stmts if i.lazy})
    lines = [f"{len(found)} modules; lazy import statements naming a package module: {sum(lazy.values())}"]
    lines += [f"  {k}: {v}" for k, v in sorted(lazy.items(), key=lambda kv: -kv[1]) if v]
    for comp in cycles(graph(found)):
        pkgs = sorted({m.split(".")[1] for m in comp if m.count(".")})
        lines.append(f"cycle of {len(comp)} modules over {', '.join(pkgs)}:\n    " + " ".join(sorted(comp)))
    return "\n".join(lines)


if __name__ == "__main__":
    import tessel

    print(report(Path(tessel.__file__).parent))
