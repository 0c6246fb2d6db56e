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

    from tessel import driver
    from tessel.errors import TesselError

    original = driver._lower_schedule
    busy = []

    def checked(sch, args, name, *rest, **kwargs):
        result = original(sch, args, name, *rest, **kwargs)  # raises first for an illegal schedule
        if busy:
            return result
        busy.append(True)
        try:
            again = replayed_schedule(sch, args)
            if again is not None:
                got = original(again[0], again[1], name, *rest)
                want_ir, got_ir = str(result[0].body), str(got[0].body)
                assert got_ir == want_ir, f"replay of {sch} lowers differently:\n{want_ir}\n---- replayed ----\n{got_ir}"
        except TesselError as err:
            raise AssertionError(f"replaying the schedule of {sch} failed: {err}") from err
        finally:
            busy.pop()
        return result

    driver._lower_schedule = checked
    try:
        yield
    finally:
        driver._lower_schedule = original


# ---- generated-code dump: compare the C of every kernel a run builds across two branches ---------
@pytest.fixture(autouse=True)
def _dump_kernel_sources(request):
    """With TESSEL_DUMP_SOURCE=DIR, every kernel a test builds appends its source to
    DIR/<test id>.c, so that two checkouts' runs can be diffed (a refactoring that must not
    change the generated code)."""
    out = os.environ.get("TESSEL_DUMP_SOURCE")
    if not out:
        yield
        return
    from tessel.runtime import module

    path = Path(out) / (request.node.nodeid.replace("/", "_").replace("::", "__")[:200] + ".c")
    original = module.Kernel.__init__

    def init(self, func, source, *rest, **kwargs):
        original(self, func, source, *rest, **kwargs)
        with open(path, "a") as f:
            f.write(f"/* ---- {type(self).__name__} {func.name} ---- */\n{source}\n")

    module.Kernel.__init__ = init
    try:
        yield
    finally:
        module.Kernel.__init__ = original
