"""The data flows one way: te -> schedule -> bound -> lower -> passes -> codegen -> runtime.

Each package (or top-level module) may import only the packages listed for it, and this holds
for every import in the file: at module level or inside a function (a lazy import is still a
dependency; it only hides a cycle). The few lazy imports against the flow that are deliberate
are listed in :data:`EXCEPTIONS`, each with its reason. Imports under ``if TYPE_CHECKING:``
are annotations only, never executed, and are not counted.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import all_imports, cycles, graph, imports

import tessel

ROOT = Path(tessel.__file__).parent

_FRONT = {"errors", "tunables", "ir", "arith", "te", "schedule", "bound", "poly", "check", "lower", "passes"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    # the limits builds stop at, one frozen record that is part of every cache key
    "tunables": {"errors"},
    "ir": {"errors"},
    "arith": {"errors", "ir", "tunables"},
    "te": {"errors", "ir", "arith"},
    # s.dependences(), s.verify() and s.violations() walk the schedule's tree as deep as its
    # nest, so they run on a deeper stack when needed (deep.deep_stack, like the driver's entries)
    "schedule": {"errors", "ir", "arith", "te", "deep", "tunables"},
    "bound": {"errors", "ir", "arith", "te", "schedule"},
    # the polyhedral view (seed 004): derived from a schedule and InferBound's ranges; islpy only here
    "poly": {"errors", "ir", "arith", "te", "schedule", "bound", "tunables"},
    # legality of a schedule, judged on what is derived from it; the schedule asks it through the
    # interface it owns (schedule/checking.py), wired by the package's face
    "check": {"errors", "ir", "arith", "te", "schedule", "bound", "poly"},
    "lower": {"errors", "ir", "arith", "te", "schedule", "bound", "poly"},
    # the passes as data (FRONT_PASSES, FAST_PASSES) and the instruments that watch them
    "pipeline": {"errors", "tunables", "ir", "arith", "te", "schedule", "bound", "poly", "check", "lower", "passes"},
    "passes": {"errors", "ir", "arith", "tunables"},
    # generators produce source and a calling convention; compiling and loading is the runtime's;
    # they recurse over expressions with the calling thread's limit raised (deep.recursion_limit)
    "codegen": {"errors", "ir", "arith", "deep", "tunables", "passes"},
    "runtime": {"errors", "ir"},
    # a target knows its generator and runtime (backends) and probes the host's compiler; a GPU
    # target's backend runs the device passes (host/device split) before its generator
    "target": {"errors", "ir", "codegen", "runtime", "passes"},
    # running a pipeline on a deeper stack: driver's helper, knows nothing of the pipeline
    "deep": {"errors"},
    "driver": _FRONT | {"pipeline", "codegen", "runtime", "target", "deep"},
    # the tuner: templates over config spaces, measured by building and running candidates
    "tune": _FRONT | {"driver", "target", "runtime", "codegen"},
    "viz": {"errors", "ir", "arith", "te", "schedule", "bound", "poly", "driver"},
    "compat": _FRONT | {"driver", "target"},
    "demo": _FRONT | {"driver", "viz", "target", "autosched"},
    "cli": _FRONT | {"driver", "viz", "target", "runtime", "codegen", "demo", "tvm", "tune"},
    # TVM's spellings over everything a TVM user reaches: a face like the package's own __init__
    # (its PassContext adds a user's passes to the pipeline's lists)
    "tvm": _FRONT | {"pipeline", "driver", "viz", "target", "runtime", "tune"},
    # the automatic scheduler writes schedules from rules and the Target's model, lowers them to
    # check them, and hands its knobs to the tuner's search (a template of tessel.tune)
    "autosched": _FRONT | {"driver", "target", "tune"},
    # checks against NumPy and the differential fuzzer: build programs, run them on every target
    "testing": _FRONT | {"driver", "target", "runtime"},
    # distributed execution: the plan from the polyhedral model (poly/distribute.py), a rank's
    # program rebuilt over its boxes and scheduled by the user's replayed steps, built by the driver
    "distributed": {"errors", "ir", "arith", "te", "schedule", "poly", "driver"},
}
# modules that are the user's face on everything, and so may import any package
FACADES = {"__init__", "__main__"}

# (module, package it imports lazily) -> why this one goes against the flow
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("te/__init__.py", "schedule"):
        "te.create_schedule is the TVM spelling users (and the seeds) write; it only forwards to "
        "the schedule package at call time",
}


def _package(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def imported_packages(path: Path) -> dict[str, int]:
    """Every tessel package ``path`` imports (module level or lazily), with a line number."""
    out: dict[str, int] = {}
    for imp in imports(path, ROOT):
        if "." in imp.target:  # ``import tessel`` is the facade, which every layer may name
            out.setdefault(imp.target.split(".")[1], imp.line)
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


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycle_crosses_a_package():
    """Counting lazy imports, no two packages reach each other through their modules: legality,
    which needs InferBound and the polyhedral model, is judged in ``check`` after both, and the
    schedule asks it through the interface it owns (schedule/checking.py). Until that, te,
    schedule, bound and poly were one cycle of 37 modules."""
    crossing = [sorted(c) for c in cycles(graph(all_imports(ROOT))) if len({_package_of(m) for m in c}) > 1]
    assert not crossing, f"import cycles across packages: {crossing}"


def test_no_import_cycle_at_all():
    """Counting lazy imports, no module reaches itself, inside a package either. The last cycle
    (ir's five: an expression's operators built through op.py, which imported expr, and its repr
    was the printer's, which imported every node class) went when the nodes and their builders
    became one module (each needs the other) and the printer came to know the nodes by their
    class names only, as the visitors do. (schedule's 18, tvm's 19, poly's, te's and runtime's
    went in stop 18; arith's 2 in stop 19.)"""
    found = [" ".join(sorted(c)) for c in cycles(graph(all_imports(ROOT)))]
    assert not found, "import cycles:\n" + "\n".join(found)
