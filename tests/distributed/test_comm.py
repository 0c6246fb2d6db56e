"""Communicators: a failing rank ends the others with a DistributedError (threads and MPI), and
the cases of distributed_cases.py under a real ``mpirun`` (skipped where Open MPI or mpi4py is
missing; CI installs both)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from distributed_cases import CASES, CYCLIC, OVERLAP, heat2d

from tessel import DistributedError
from tessel import distributed as dist

TESTS = Path(__file__).resolve().parents[1]
MPI = shutil.which("mpirun") is not None and importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not MPI, reason="needs mpirun (Open MPI) and mpi4py: pip install 'tessel[mpi]'")


def test_a_failing_rank_ends_the_others_with_a_distributed_error():
    seen: dict[int, BaseException] = {}
    g = np.ones((8, 5))

    def run(c):
        s, (A, B) = heat2d(8, 5)
        k = dist.build(s, [A, B], c)
        a = k.scatter("A", g if c.rank == 0 else None)
        b = k.empty_like(a, "B")
        if c.rank == 1:
            raise ValueError("rank 1's own bug")
        try:
            k(a, b)
        except DistributedError as err:
            seen[c.rank] = err
            raise

    start = time.monotonic()
    with pytest.raises(ValueError, match="rank 1's own bug"):
        dist.run_ranks(run, 3, timeout=20)
    assert time.monotonic() - start < 15
    assert set(seen) == {0, 2}
    assert "rank 1 failed: ValueError: rank 1's own bug" in str(seen[0])


def test_a_missing_message_times_out_with_what_was_awaited():
    def run(c):
        if c.rank == 0:
            c.recv(np.zeros(3), 1, 5, "A[3, 0:3] from rank 1")

    with pytest.raises(DistributedError, match=r"rank 0 of 2: no A\[3, 0:3\] from rank 1 after 0.3 s"):
        dist.run_ranks(run, 2, timeout=0.3)


def test_an_error_mpi_reports_becomes_a_distributed_error():
    class Failed(Exception):
        def Get_error_string(self):
            return "MPI_ERR_RANK: invalid rank"

    class Comm:
        def Get_rank(self):
            return 0

        def Get_size(self):
            return 2

        def Isend(self, *args, **kwargs):
            raise Failed()

    fake = type("MPI", (), {"Exception": Failed})
    comm = dist.MPIComm(Comm(), fake)
    with pytest.raises(DistributedError, match=r"rank 0 of 2: MPI failed in a send to rank 7: MPI_ERR_RANK"):
        comm.send(np.zeros(2), 7, 1)


def test_world_without_a_launcher_is_one_rank(monkeypatch):
    for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(dist.comm, "_WORLD", None)
    w = dist.world()
    assert (w.rank, w.size) == (0, 1)


def _mpirun(ranks: int, script: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]), TESSEL_MPI_GRACE="4")
    return subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), sys.executable, str(script)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=TESTS)


@needs_mpi
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_cases_under_mpirun_match_numpy(ranks):
    got = _mpirun(ranks, TESTS / "distributed_cases.py")
    assert got.returncode == 0, got.stdout + got.stderr
    lines = [ln for ln in got.stdout.splitlines() if f"ranks={ranks}" in ln]
    assert len(lines) == len(CASES) + len(OVERLAP) + len(CYCLIC) and all(ln.endswith(" ok") for ln in lines), got.stdout


@needs_mpi
def test_a_failing_rank_under_mpirun_ends_every_rank_within_seconds(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from distributed_cases import CASES, CYCLIC, OVERLAP, heat2d
        from tessel import distributed as dist
        c = dist.world()
        s, (A, B) = heat2d(8, 5)
        k = dist.build(s, [A, B], c)
        a = k.scatter("A", np.ones((8, 5)) if c.rank == 0 else None)
        b = k.empty_like(a, "B")
        if c.rank == 1:
            raise ValueError("rank 1's own bug")
        k(a, b)
    """))
    start = time.monotonic()
    got = _mpirun(3, script, timeout=120)
    assert got.returncode != 0
    assert "DistributedError: rank 0 of 3 stopped waiting for" in got.stderr, got.stderr
    assert "rank 1 failed: ValueError: rank 1's own bug" in got.stderr
    assert time.monotonic() - start < 60
