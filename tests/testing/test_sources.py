"""The generated-source comparison (tessel/testing/sources.py) and the conftest hook that feeds it:
two recordings of the same tests are identical, and a changed flag shows in exactly the kernel
it changes, with its diff."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tessel.testing import sources
from tessel.testing.sources import compare, label_path, main, render, safe_part

TESTS = Path(__file__).resolve().parents[1]
SAMPLE = "tests/testing/sources_sample.py"


def _record(directory: Path, *options: str, **env: str) -> None:
    """Run the sample's tests in a fresh pytest with recording on (one process: no xdist)."""
    environ = {**os.environ, "TESSEL_DUMP_SOURCES": str(directory), **env}
    done = subprocess.run([sys.executable, "-m", "pytest", SAMPLE, "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           *options], cwd=TESTS.parent, env=environ, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_two_runs_compare_identical_and_a_flag_shows_where_it_acts(tmp_path, capsys):
    """The second run records as a tree without the hook would: no conftest, a copy of the
    plugin file on the path, so the tool can compare a branch with a main that predates it."""
    old, new, tool = tmp_path / "old", tmp_path / "new", tmp_path / "tool"
    _record(old)
    tool.mkdir()
    shutil.copy(sources.__file__, tool / "sources.py")
    _record(new, "--noconftest", "-p", "sources", SAMPLE_VECTOR_BYTES="16", TESSEL_CACHE_DIR=str(tmp_path / "cache"),
            PYTHONPATH=os.pathsep.join([str(tool), str(TESTS)]))
    # filed by test node id and ordinal; a kernel built while the module is collected, under the module
    assert sorted(str(p.relative_to(old)) for p in old.rglob("*.*") if p.is_file()) == [
        f"{SAMPLE}/001-c-main.c",
        f"{SAMPLE}/test_add_on_both_targets/001-python-main.py",
        f"{SAMPLE}/test_add_on_both_targets/002-c-main.c",
        f"{SAMPLE}/test_row_sum/001-c-main.c",
    ]
    c = compare(old, new)
    assert c.differ == [f"{SAMPLE}/test_add_on_both_targets/002-c-main.c"]  # the one kernel the flag reaches
    assert len(c.same) == 3 and not c.only_old and not c.only_new
    assert main([str(old), str(new), "--diffs", "1"]) == 1
    shown = capsys.readouterr().out
    assert "4 kernels in both, 3 identical, 1 differ" in shown
    assert "-typedef float tsl_f32x8" in shown  # the unified diff: 32-byte vectors gone
    assert main([str(old), str(old)]) == 0


def test_kernels_on_one_side_only_are_listed(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for d, names in ((old, ["t/001-c-main.c", "t/002-c-main.c"]), (new, ["t/001-c-main.c", "u/001-c-f.c"])):
        for n in names:
            (d / n).parent.mkdir(parents=True, exist_ok=True)
            (d / n).write_text("int x;\n")
    c = compare(old, new)
    assert (c.same, c.differ, c.only_old, c.only_new) == (["t/001-c-main.c"], [], ["t/002-c-main.c"], ["u/001-c-f.c"])
    assert not c.identical
    assert f"only in {old}:\n  t/002-c-main.c" in render(c, old, new)


def test_node_ids_become_distinct_safe_paths():
    assert label_path("tests/a.py::C::test[x-7]") == Path("tests/a.py/C/test[x-7]")
    odd = [label_path(f"tests/a.py::test[{p}]") for p in ("a/b", "a b", "a:b", "../x", "x" * 300)]
    assert len(set(odd)) == len(odd)
    assert all(".." not in p.parts and "/" not in p.name and len(p.name) < 120 for p in odd)
    assert safe_part("..") != safe_part(".")
    # a kernel named by a lone surrogate (the suite's hostile names) is a path like any other
    lone = [safe_part(x) for x in ("\ud800", "\udc80", "_")]
    assert len(set(lone)) == 3 and all(p.isascii() for p in lone)
