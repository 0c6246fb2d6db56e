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


# ---- replay check: every schedule that reaches lowering is rebuilt from its steps ----------------
@pytest.fixture(autouse=True, scope="session")
def _replay_every_lowered_schedule():
    """With TESSEL_REPLAY_CHECK=1, every schedule a test lowers or builds is also rebuilt with
    ``s.history.replay`` on fresh tensors, and the two lowered IRs must be identical."""
    if not os.environ.get("TESSEL_REPLAY_CHECK"):
        yield
        return
    from replay_check import OriginalLoweringFailed, replayed_lowering

    from tessel import driver
    from tessel.errors import TesselError
    from tessel.schedule.history import History

    original = driver._lower_schedule
    busy = []

    def checked(sch, args, name):
        result = original(sch, args, name)  # raises first for an illegal schedule
        if not busy and isinstance(getattr(sch, "history", None), History) and sch.history:
            busy.append(True)
            try:
                want, got = replayed_lowering(sch, args)
            except OriginalLoweringFailed:
                return result  # the schedule's own lowering fails later on: the test is about that
            except TesselError as err:
                raise AssertionError(f"replaying the schedule of {sch} failed: {err}") from err
            finally:
                busy.pop()
            assert got == want, f"replay of {sch} lowers differently:\n{want}\n---- replayed ----\n{got}"
        return result

    driver._lower_schedule = checked
    try:
        yield
    finally:
        driver._lower_schedule = original
