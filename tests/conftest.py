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
def pytest_configure(config):
    config.addinivalue_line("markers", "no_replay_check: the test changes a schedule behind the primitives' "
                            "back (not a step), so its replay is not expected to lower the same")
    _start_recording_sources(config)


@pytest.fixture(autouse=True)
def _replay_every_lowered_schedule(request):
    """Every schedule a test lowers or builds is also rebuilt with ``s.history.replay`` on fresh
    tensors, and the two must lower to identical loop IR (the IR after storage flattening and
    simplification: the later passes are a function of it and the target). Set
    TESSEL_REPLAY_CHECK=0 to switch it off while debugging something else."""
    if os.environ.get("TESSEL_REPLAY_CHECK") == "0" or request.node.get_closest_marker("no_replay_check"):
        yield
        return
    from replay_check import replayed_schedule

    from tessel import pipeline
    from tessel.errors import TesselError

    class ReplayCheck(pipeline.Instrument):
        def after_front(self, sch, args, func, lower_again):
            try:
                again = replayed_schedule(sch, args)
                if again is not None:
                    want_ir, got_ir = str(func.body), str(lower_again(*again).body)
                    assert got_ir == want_ir, f"replay of {sch} lowers differently:\n{want_ir}\n---- replayed ----\n{got_ir}"
            except TesselError as err:
                raise AssertionError(f"replaying the schedule of {sch} failed: {err}") from err

    check = ReplayCheck()
    pipeline.INSTRUMENTS.append(check)
    try:
        yield
    finally:
        pipeline.INSTRUMENTS.remove(check)


def _start_recording_sources(config) -> None:
    """TESSEL_DUMP_SOURCES=DIR: the source of every kernel built, filed by test; then
    `python -m tessel.testing.sources OLD NEW` compares two trees (see that module)."""
    name = "tessel.testing.sources"
    if os.environ.get("TESSEL_DUMP_SOURCES") and not config.pluginmanager.has_plugin(name):
        from tessel.testing import sources

        config.pluginmanager.register(sources, name)


@pytest.fixture
def limits():
    """``limits(name=value, ...)``: ``tessel.tunables.using`` for the rest of the test."""
    import contextlib

    import tessel.tunables

    with contextlib.ExitStack() as stack:
        yield lambda **changes: stack.enter_context(tessel.tunables.using(**changes))
