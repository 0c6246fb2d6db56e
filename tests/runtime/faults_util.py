"""Probes in a subprocess, for faults that would end the test run itself (a signal, a hang)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import tessel

REPO = Path(tessel.__file__).resolve().parent.parent

BUILD_13 = """
import numpy as np
import tessel
from tessel import te
A = te.placeholder((13,), name="A")
B = te.compute((13,), lambda i: A[i] * 2.0 - 1.0, name="B")
f = tessel.build(te.create_schedule(B.op), [A, B])
a = np.random.default_rng(7).uniform(-3, 3, 13).astype("float32")
b = np.full(13, np.nan, "float32")
f(a, b)
np.testing.assert_allclose(b, a * 2 - 1, rtol=1e-6)
print("ok")
"""


def probe(code: str, cache: Path, timeout: float = 600) -> str:
    """Run ``code`` in a fresh interpreter with its own cache; its stdout, once it ended with 0."""
    env = dict(os.environ, TESSEL_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=str(REPO),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"ended with {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout
