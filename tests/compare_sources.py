"""List the kernels whose generated code differs between two test runs.

A refactoring that must not change what tessel generates is checked by running the same tests
on both checkouts with ``TESSEL_DUMP_SOURCE`` (tests/conftest.py writes every built kernel's
source, per test) and comparing the two directories::

    (cd OLD && TESSEL_DUMP_SOURCE=/tmp/old python -m pytest TESTS -p no:xdist -q)
    (cd NEW && TESSEL_DUMP_SOURCE=/tmp/new python -m pytest TESTS -p no:xdist -q)
    python tests/compare_sources.py /tmp/old /tmp/new

It prints each test whose kernels differ (with a unified diff of the first difference), each
test that built kernels in only one run, and the counts; the exit status is 1 if any differ.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path


def compare(old: Path, new: Path, context: int = 3) -> int:
    a = {p.name: p for p in old.glob("*.c")}
    b = {p.name: p for p in new.glob("*.c")}
    differ = 0
    for name in sorted(a.keys() & b.keys()):
        x, y = a[name].read_text().splitlines(), b[name].read_text().splitlines()
        if x != y:
            differ += 1
            print(f"DIFFERS {name}")
            print("\n".join(list(difflib.unified_diff(x, y, "old", "new", n=context, lineterm=""))[:60]))
    for name in sorted(a.keys() - b.keys()):
        print(f"ONLY OLD {name}")
    for name in sorted(b.keys() - a.keys()):
        print(f"ONLY NEW {name}")
    only = len(a.keys() ^ b.keys())
    print(f"{len(a.keys() & b.keys())} tests compared, {differ} differ, {only} in one run only")
    return 1 if differ or only else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tests/compare_sources.py OLD_DUMP_DIR NEW_DUMP_DIR")
    sys.exit(compare(Path(sys.argv[1]), Path(sys.argv[2])))
