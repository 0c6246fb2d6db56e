"""The data flows one way: te -> schedule -> bound -> lower -> passes -> codegen -> runtime.

Each package (or top-level module) may import only the packages listed for it, and this holds
for every import in the file: at module level or inside a function (a lazy import is still a
dependency; it only hides a cycle). The few lazy imports against the flow that are deliberate
are listed in :data:`EXCEPTIONS`, each with its reason. Imports under ``if TYPE_CHECKING:``
are annotations only, never executed, and are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tessel

ROOT = Path(tessel.__file__).parent

_FRONT = {"errors", "ir", "arith", "te", "schedule", "bound", "poly", "lower", "passes"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "ir": {"errors"},
    "arith": {"errors", "ir"},
    "te": {"errors", "ir", "arith"},
    "schedule": {"errors", "ir", "arith", "te"},
    "bound": {"errors", "ir", "arith", "te", "schedule"},
    # the polyhedral view (seed 004): derived from a schedule and InferBound's ranges; islpy only here
    "poly": {"errors", "ir", "arith", "te", "schedule", "bound"},
    "lower": {"errors", "ir", "arith", "te", "schedule", "bound", "poly"},
    "passes": {"errors", "ir", "arith"},
    # generators produce source and a calling convention; compiling and loading is the runtime's;
    # they recurse over expressions with the calling thread's limit raised (deep.recursion_limit)
    "codegen": {"errors", "ir", "arith", "deep"},
    "runtime": {"errors", "ir"},
    # a target knows its generator and runtime (backends) and probes the host's compiler; a GPU
    # target's backend runs the device passes (host/device split) before its generator
    "target": {"errors", "ir", "codegen", "runtime", "passes"},
    # running a pipeline on a deeper stack: driver's helper, knows nothing of the pipeline
    "deep": {"errors"},
    "driver": _FRONT | {"codegen", "runtime", "target", "deep"},
    # the tuner: templates over config spaces, measured by building and running candidates
    "tune": _FRONT | {"driver", "target", "runtime", "codegen"},
    "viz": {"errors", "ir", "arith", "te", "schedule", "bound", "poly", "driver"},
    "compat": _FRONT | {"driver", "target"},
    "demo": _FRONT | {"driver", "viz", "target", "autosched"},
    "cli": _FRONT | {"driver", "viz", "target", "runtime", "codegen", "demo", "tvm", "tune"},
    # TVM's spellings over everything a TVM user reaches: a face like the package's own __init__
    "tvm": _FRONT | {"driver", "viz", "target", "runtime", "tune"},
    # the automatic scheduler writes schedules from rules and the Target's model, lowers them to
    # check them, and hands its knobs to the tuner's search (a template of tessel.tune)
    "autosched": _FRONT | {"driver", "target", "tune"},
    # checks against NumPy and the differential fuzzer: build programs, run them on every target
    "testing": _FRONT | {"driver", "target", "runtime"},
}
# modules that are the user's face on everything, and so may import any package
FACADES = {"__init__", "__main__"}

# (module, package it imports lazily) -> why this one goes against the flow
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("te/__init__.py", "schedule"):
        "te.create_schedule is the TVM spelling users (and the seeds) write; it only forwards to "
        "the schedule package at call time",
    ("schedule/legality.py", "poly"):
        "seed 004: parallel/vectorize legality is decided from the exact dependences of the "
        "polyhedral model, which is derived from the schedule (and InferBound) it judges",
    ("schedule/threads.py", "bound"):
        "bind's rules on extents (a declared thread range, one extent per thread in a launch) judge "
        "the loop extents InferBound derives from the schedule",
    ("schedule/schedule.py", "poly"):
        "s.dependences() is the user's spelling; it forwards to the polyhedral model at call time",
}


def _package(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Ids of the import nodes under ``if TYPE_CHECKING:`` (annotations only)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                skip.update(id(n) for n in ast.walk(inner))
    return skip


def imported_packages(path: Path) -> dict[str, int]:
    """Every tessel package ``path`` imports (module level or lazily), with a line number."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    here = list(path.relative_to(ROOT).parts[:-1]) if path.is_relative_to(ROOT) else []
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                mod = base + (node.module.split(".") if node.module else [])
                targets = [mod[0]] if mod else [a.name for a in node.names]
            elif node.module and node.module.startswith("tessel."):
                targets = [node.module.split(".")[1]]
            elif node.module == "tessel":
                targets = [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".")[1] for a in node.names if a.name.startswith("tessel.")]
        for t in targets:
            out.setdefault(t.removesuffix(".py"), node.lineno)
    return out


def _violations() -> list[str]:
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        pkg = _package(path)
        rel = str(path.relative_to(ROOT))
        if pkg in FACADES:
            continue
        assert pkg in ALLOWED, f"{rel}: package {pkg!r} has no place in the layering; add it to ALLOWED"
        for target, line in imported_packages(path).items():
            if target != pkg and target not in ALLOWED[pkg] and (rel, target) not in EXCEPTIONS:
                bad.append(f"{rel}:{line} imports {target}")
    return bad


def test_imports_follow_the_pipeline():
    bad = _violations()
    assert not bad, "imports against the data flow:\n" + "\n".join(bad)


def test_code_generators_never_import_the_runtime():
    for path in sorted((ROOT / "codegen").rglob("*.py")):
        assert "runtime" not in imported_packages(path), f"{path.relative_to(ROOT)} imports the runtime"


def test_lazy_imports_are_seen(tmp_path):
    """An import inside a function counts; one under TYPE_CHECKING does not."""
    fake = tmp_path / "x.py"
    fake.write_text("from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from tessel.target import Target\n"
                    "def f():\n    from tessel.runtime import cache\n    import tessel.viz.views\n")
    assert set(imported_packages(fake)) == {"runtime", "viz"}
    # the vectorize pass annotates with Target but never imports the target package
    assert "target" not in imported_packages(ROOT / "passes" / "vectorize.py")


def test_every_exception_is_still_needed():
    """An exception nothing uses any more is removed, so the list stays the truth."""
    for (rel, target), why in EXCEPTIONS.items():
        assert why
        assert target in imported_packages(ROOT / rel), f"{rel} no longer imports {target}: drop the exception"
