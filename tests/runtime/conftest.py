from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "codegen"))  # cg_util


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A kernel cache of this test's own, so that hits and misses are this test's doing."""
    d = tmp_path / "cache"
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(d))
    return d
