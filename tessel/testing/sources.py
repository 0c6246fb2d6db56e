"""Proof that a change leaves the generated code alone: record the source of every kernel a
run builds under a stable name, then compare two recordings.

A refactoring that claims to preserve behaviour (issue 32) is checked by what it produces, not
by what it is meant to produce: run the suite (or part of it) with ``TESSEL_DUMP_SOURCES=DIR``
on the old tree and on the new one, then ``python -m tessel.testing.sources OLD NEW`` lists the
kernels whose code differs and shows the first few diffs.

A kernel's name is where it was built and in which order: ``<test node id>/<NNN>-<target>-<kernel
name>.<ext>`` (a kernel built while a test module is collected is filed under the module). So
the names match between two runs of the same tests, whatever the cache held and whichever worker
ran the test. Two builds in different threads of one test may swap ordinals; kernels built in
forked children (the tuner's measuring processes) are not recorded: their parent's counter
cannot be shared with them.

This module is also the pytest plugin that records (``tests/conftest.py`` loads it when the
variable is set). It needs nothing of tessel but the ``Kernel`` class, so a tree that predates it
is recorded with a copy of this file: ``PYTHONPATH=/tmp/tool TESSEL_DUMP_SOURCES=/tmp/old python
-m pytest -p sources ...`` with the file copied to ``/tmp/tool/sources.py``.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tessel.runtime.module import Kernel  # absolute: a copy of this file works as a plugin

try:
    from pytest import hookimpl

    _wrapper = hookimpl(hookwrapper=True)
except ImportError:  # the comparison runs without pytest
    def _wrapper(fn):
        return fn

_EXTENSIONS = {"c": ".c", "python": ".py", "cuda-sim": ".py", "cuda": ".cu"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+\[\]-]")
_MAX_PART = 100


def safe_part(text: str) -> str:
    """One path component for ``text``: its safe characters, with a hash of the whole when any
    character was replaced or the text cut (so two texts never share a component)."""
    clean = _UNSAFE.sub("_", text)[:_MAX_PART].lstrip(".") or "_"
    if clean != text:
        clean += "~" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]  # a name is data: any str
    return clean


def label_path(label: str) -> Path:
    """A test node id as a directory: ``tests/a.py::C::test[x]`` -> ``tests/a.py/C/test[x]`` (a
    ``/`` in a parameter stays inside its component)."""
    file, *names = label.split("::")
    return Path(*(safe_part(p) for p in [*file.split("/"), *names] if p))


@dataclass
class Recorder:
    """Writes each kernel constructed while installed under ``directory``, filed under the
    current ``label`` (the running test's node id, set by the test harness)."""

    directory: Path
    label: str = "outside-tests"
    _counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pid: int = field(default_factory=os.getpid)

    def record(self, kernel: Kernel) -> Path | None:
        if os.getpid() != self._pid:
            return None  # a forked child: see the module's docstring
        with self._lock:
            label = self.label
            n = self._counts[label] = self._counts.get(label, 0) + 1
        target = str(getattr(kernel, "target", "?"))
        name = f"{n:03d}-{safe_part(target)}-{safe_part(kernel.name)}{_EXTENSIONS.get(target, '.txt')}"
        path = self.directory / label_path(label) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(kernel.source, encoding="utf-8", errors="backslashreplace")
        os.replace(tmp, path)  # two workers collecting the same module write the same file
        return path

    @contextmanager
    def installed(self) -> Iterator[Recorder]:
        """Record every kernel constructed inside the block (every target's kernel class calls
        ``Kernel.__init__``, whether its code was generated now or taken from a cache)."""
        original = Kernel.__init__

        def init(kernel, *args, **kwargs):
            original(kernel, *args, **kwargs)
            self.record(kernel)

        init.recorder = self  # type: ignore[attr-defined]
        Kernel.__init__ = init  # type: ignore[method-assign]
        try:
            yield self
        finally:
            Kernel.__init__ = original  # type: ignore[method-assign]


@dataclass
class Comparison:
    same: list[str]
    differ: list[str]
    only_old: list[str]
    only_new: list[str]

    @property
    def identical(self) -> bool:
        return not (self.differ or self.only_old or self.only_new)


def _files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def compare(old: Path, new: Path) -> Comparison:
    a, b = _files(old), _files(new)
    both = sorted(a.keys() & b.keys())
    same = {k for k in both if a[k].read_bytes() == b[k].read_bytes()}
    return Comparison([k for k in both if k in same], [k for k in both if k not in same],
                      sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys()))


def render(c: Comparison, old: Path, new: Path, diffs: int = 3, context: int = 3) -> str:
    """The summary, the names of the kernels that differ or exist on one side only, and the
    unified diffs of the first ``diffs`` that differ."""
    out = [f"{len(c.same) + len(c.differ)} kernels in both, {len(c.same)} identical, {len(c.differ)} differ; "
           f"{len(c.only_old)} only in {old}, {len(c.only_new)} only in {new}"]
    for title, names in (("differ", c.differ), (f"only in {old}", c.only_old), (f"only in {new}", c.only_new)):
        if names:
            out += [f"{title}:"] + [f"  {k}" for k in names]
    for k in c.differ[:diffs]:
        out += difflib.unified_diff((old / k).read_text().splitlines(), (new / k).read_text().splitlines(),
                                    f"{old}/{k}", f"{new}/{k}", n=context, lineterm="")
    return "\n".join(out)


# ---- the pytest plugin ------------------------------------------------------------------------------
_ACTIVE: list[Recorder] = []  # the recorder, while the session runs


def pytest_configure(config) -> None:
    directory = os.environ.get("TESSEL_DUMP_SOURCES")
    if not directory or hasattr(Kernel.__init__, "recorder"):
        return  # off, or another copy of this plugin records already
    stack = ExitStack()
    _ACTIVE.append(stack.enter_context(Recorder(Path(directory).resolve()).installed()))
    config.add_cleanup(stack.close)
    config.add_cleanup(_ACTIVE.clear)


@contextmanager
def _filed_under(label: str):
    if not _ACTIVE:
        yield
        return
    _ACTIVE[0].label = label
    try:
        yield
    finally:
        _ACTIVE[0].label = "outside-tests"


@_wrapper
def pytest_make_collect_report(collector):
    """A kernel built while a test module is imported is filed under the module."""
    with _filed_under(collector.nodeid or "collection"):
        yield


@_wrapper
def pytest_runtest_protocol(item, nextitem):
    """A kernel built in a test's set-up, call or tear-down is filed under the test."""
    with _filed_under(item.nodeid):
        yield


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tessel.testing.sources", description=(
        "Compare two recordings of generated kernel sources (made with TESSEL_DUMP_SOURCES=DIR "
        "python -m pytest ...). Exit status 0 when they are identical, 1 otherwise."))
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--diffs", type=int, default=3, help="how many unified diffs to show (default 3)")
    args = ap.parse_args(argv)
    for d in (args.old, args.new):
        if not d.is_dir():
            ap.error(f"{d} is not a directory (a recording made with TESSEL_DUMP_SOURCES={d})")
    c = compare(args.old, args.new)
    print(render(c, args.old, args.new, args.diffs))
    return 0 if c.identical else 1


if __name__ == "__main__":
    sys.exit(main())
