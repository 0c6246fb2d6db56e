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
def replayed_lowering(sch, args) -> tuple[str, str]:
    """The lowered IR of ``sch`` and of the schedule its history rebuilds on fresh tensors.

    The fresh tensors are a deep copy of the operations the schedule was created for (the same
    program, other objects); the arguments are found there by their stage's position."""
    import copy

    import tessel
    from tessel.schedule.history import corresponding
    from tessel.te.tensor import Tensor

    want = str(tessel.lower(sch, args, simple_mode=True))
    fresh = copy.deepcopy(sch.history.origin.outputs)
    again = sch.history.replay(onto=fresh)
    rargs = [corresponding(a, sch, again) if isinstance(a, Tensor) else a for a in args]
    return want, str(tessel.lower(again, rargs, simple_mode=True))


@pytest.fixture(autouse=True, scope="session")
def _replay_every_lowered_schedule():
    """With TESSEL_REPLAY_CHECK=1, every schedule a test lowers or builds is also rebuilt with
    ``s.history.replay`` on fresh tensors, and the two lowered IRs must be identical."""
    if not os.environ.get("TESSEL_REPLAY_CHECK"):
        yield
        return
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
