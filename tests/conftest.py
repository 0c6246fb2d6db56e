from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Every test session compiles into its own cache, so tests never see stale kernels."""
    old = os.environ.get("TESSEL_CACHE_DIR")
    os.environ["TESSEL_CACHE_DIR"] = str(tmp_path_factory.mktemp("tessel-cache"))
    yield
    if old is None:
        os.environ.pop("TESSEL_CACHE_DIR", None)
    else:
        os.environ["TESSEL_CACHE_DIR"] = old
