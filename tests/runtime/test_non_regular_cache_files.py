"""Issue 30, item 5: a FIFO (or any file that is not a regular one) in place of a cache file is
refused at once as damage and the entry rebuilt, instead of blocking every build of the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from faults_util import BUILD_13, REPO, probe


def _build(cache: Path) -> None:
    assert probe(BUILD_13, cache, timeout=120).strip() == "ok"


def test_a_fifo_in_place_of_a_sidecar_or_plan_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    _build(cache)
    fifos = [*(cache / "kernels").glob("*.json"), *(cache / "lowered").glob("*.json"), cache / "compilers.json"]
    assert len(fifos) == 3
    for p in fifos:
        p.unlink()
        os.mkfifo(p)
    _build(cache)  # a blocked read would end in the timeout
    assert all(p.is_file() for p in fifos)  # replaced by whole files


def test_reading_a_fifo_is_refused_within_a_second(tmp_path):
    fifo = tmp_path / "k.json"
    os.mkfifo(fifo)
    code = (f"import time; from pathlib import Path; from tessel.runtime.files import read_json\n"
            f"t = time.monotonic()\ntry:\n    read_json(Path({str(fifo)!r}))\nexcept OSError as e:\n"
            f"    print(time.monotonic() - t < 1.0, 'not a regular file' in str(e))")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["True", "True"], proc.stderr[-2000:]
