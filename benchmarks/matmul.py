"""fp32 matmul only: ``python benchmarks/matmul.py`` is ``python -m benchmarks --only matmul``.

Kept for the habit of running it by path; the schedule is examples/fast_matmul.py and the
harness (cold and cached builds, NumPy and the peers side by side) is benchmarks/__main__.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.__main__ import main

    sys.exit(main(["--only", "matmul", *sys.argv[1:]]))
