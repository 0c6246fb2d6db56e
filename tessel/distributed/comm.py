"""The communicators a distributed kernel runs over: MPI (mpi4py), one process, or K ranks as
threads of one process (the simulator the tests use; no MPI needed).

All three offer the same few operations, each of which gives up with a
:class:`~tessel.errors.DistributedError` instead of waiting forever: a rank that fails tells
the others (MPI: a message on a tag of its own, then ``Abort`` after a grace period; threads: a
flag), and every wait polls for that notice and for its deadline (``timeout`` seconds). Only
point-to-point messages are used under MPI besides the optional ``MPI_Allreduce``, so that
every wait can be polled.

MPI is initialised lazily, by :func:`world`, after tessel's own imports: initialising it before
NumPy's import made every message 5-100x slower in the feasibility study.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import DistributedError, TesselWarning

#: seconds a rank waits for a message or a collective before it gives up
TIMEOUT = float(os.environ.get("TESSEL_MPI_TIMEOUT", "60"))
_ABORT_TAG, _COLL_TAG = 32000, 32001
_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class Comm:
    """What a distributed kernel needs of a communicator (see the module docstring)."""

    rank = 0
    size = 1
    timeout = TIMEOUT
    name = "one process"

    def send(self, buf: np.ndarray, dest: int, tag: int) -> Any:
        raise NotImplementedError

    def recv(self, buf: np.ndarray, source: int, tag: int, what: str) -> None:
        raise NotImplementedError

    def wait_sends(self, handles: list) -> None:
        """Block until the sends ``handles`` are done (their buffers may then be reused)."""

    def allgather(self, obj: Any) -> list:
        raise NotImplementedError

    def allreduce(self, arr: np.ndarray, op: str, deterministic: bool = False) -> np.ndarray:
        """Every rank's ``arr`` combined by ``op``; ``deterministic``: in rank order, so the
        result does not depend on how MPI groups them."""
        parts = self.allgather(arr)
        out = parts[0].copy()
        for p in parts[1:]:
            _REDUCE[op](out, p, out=out)
        return out

    def barrier(self) -> None:
        """Every rank waits until all have come here (``s.barrier()``): an allgather of nothing,
        so it is polled against the deadline and a failure notice like every other wait."""
        self.allgather(None)

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return self.allgather(obj if self.rank == root else None)[root]

    def gather(self, obj: Any, root: int = 0) -> list | None:
        got = self.allgather(obj)
        return got if self.rank == root else None

    def _deadline(self, what: str) -> Callable[[], None]:
        end = time.monotonic() + self.timeout

        def check() -> None:
            if time.monotonic() > end:
                raise DistributedError(f"rank {self.rank} of {self.size}: no {what} after {self.timeout:g} s "
                                       "(another rank failed or is stuck; raise TESSEL_MPI_TIMEOUT if it is slow)")
        return check


class SelfComm(Comm):
    """One rank: no message is ever sent (a plan for one rank has none)."""

    def allgather(self, obj: Any) -> list:
        return [obj]


# ---- K ranks as threads of one process --------------------------------------------------------
class _World:
    def __init__(self, size: int):
        self.size = size
        self.cond = threading.Condition()
        self.boxes: dict[tuple[int, int, int], list] = {}
        self.rounds: dict[int, dict[int, Any]] = {}
        self.taken: dict[int, int] = {}
        self.failed: str | None = None


class ThreadComm(Comm):
    """Rank ``rank`` of a simulated world whose ranks are threads (see :func:`run_ranks`)."""

    name = "threads"

    def __init__(self, world: _World, rank: int, timeout: float):
        self.world, self.rank, self.size, self.timeout = world, rank, world.size, timeout
        self._round = 0

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        check = self._deadline(what)
        w = self.world
        while not ready():
            if w.failed is not None:
                raise DistributedError(f"rank {self.rank} of {self.size} stopped waiting for {what}: {w.failed}")
            check()
            w.cond.wait(0.05)

    def send(self, buf: np.ndarray, dest: int, tag: int) -> None:
        with self.world.cond:
            self.world.boxes.setdefault((self.rank, dest, tag), []).append(np.array(buf, copy=True))
            self.world.cond.notify_all()

    def recv(self, buf: np.ndarray, source: int, tag: int, what: str) -> None:
        key = (source, self.rank, tag)
        with self.world.cond:
            self._wait(lambda: bool(self.world.boxes.get(key)), what)
            buf[...] = self.world.boxes[key].pop(0)

    def allgather(self, obj: Any) -> list:
        w, k = self.world, self._round
        self._round += 1
        with w.cond:
            slots = w.rounds.setdefault(k, {})
            slots[self.rank] = obj
            w.cond.notify_all()
            self._wait(lambda: len(slots) == self.size, "a collective operation")
            out = [slots[r] for r in range(self.size)]
            w.taken[k] = w.taken.get(k, 0) + 1
            if w.taken[k] == self.size:  # every rank has its copy: the round is forgotten
                del w.rounds[k], w.taken[k]
            return out


def run_ranks(fn: Callable[[Comm], Any], size: int, timeout: float = 30.0) -> list:
    """``fn(comm)`` on ``size`` ranks, each a thread of this process; their results in rank
    order. An error on one rank stops the others (a ``DistributedError`` there) and is raised
    here once every rank has ended. Kernels release the GIL, so ranks do run side by side."""
    world = _World(size)
    results: list[Any] = [None] * size
    errors: list[BaseException | None] = [None] * size

    def body(r: int) -> None:
        try:
            results[r] = fn(ThreadComm(world, r, timeout))
        except BaseException as err:
            errors[r] = err
            with world.cond:
                if world.failed is None:
                    world.failed = f"rank {r} failed: {type(err).__name__}: {err}"
                world.cond.notify_all()

    threads = [threading.Thread(target=body, args=(r,), name=f"tessel-rank-{r}") for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = next((e for e in errors if e is not None and not isinstance(e, DistributedError)), None)
    first = first or next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return results


# ---- MPI through mpi4py -----------------------------------------------------------------------
class MPIComm(Comm):
    """An mpi4py communicator (``MPI.COMM_WORLD`` unless given), polled so that no wait hangs."""

    name = "MPI"

    def __init__(self, comm: Any, MPI: Any, timeout: float = TIMEOUT):
        self.comm, self.MPI, self.timeout = comm, MPI, timeout
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def _wait(self, done: Callable[[], bool], what: str) -> None:
        """Poll ``done`` until it holds, raising if another rank said it failed or the deadline
        passed; a short wait spins, a long one yields the core now and then (a sleep's wake-up
        costs more than a halo message)."""
        check, st, spins = self._deadline(what), self.MPI.Status(), 0
        while not done():
            if self.comm.Iprobe(source=self.MPI.ANY_SOURCE, tag=_ABORT_TAG, status=st):
                msg = self.comm.recv(source=st.Get_source(), tag=_ABORT_TAG)
                raise DistributedError(f"rank {self.rank} of {self.size} stopped waiting for {what}: "
                                       f"rank {st.Get_source()} failed: {msg}")
            spins += 1
            if spins > 2000:
                check()
                time.sleep(0.0001)

    @contextmanager
    def _status(self, what: str) -> Iterator[None]:
        """An error MPI reports (mpi4py raises it, MPI's status checked) as a DistributedError."""
        try:
            yield
        except self.MPI.Exception as err:
            text = err.Get_error_string() if hasattr(err, "Get_error_string") else str(err)
            raise DistributedError(f"rank {self.rank} of {self.size}: MPI failed in {what}: {text}") from err

    def send(self, buf: np.ndarray, dest: int, tag: int) -> Any:
        data = np.ascontiguousarray(buf)
        with self._status(f"a send to rank {dest}"):
            return (self.comm.Isend(data, dest=dest, tag=tag), data)

    def wait_sends(self, handles: list) -> None:
        reqs = [h[0] for h in handles]
        with self._status("waiting for its sends"):
            self._wait(lambda: self.MPI.Request.Testall(reqs), "the end of its sends")

    def recv(self, buf: np.ndarray, source: int, tag: int, what: str) -> None:
        with self._status(f"receiving {what}"):
            self._wait(lambda: self.comm.Iprobe(source=source, tag=tag), what)
            tmp = np.empty(buf.shape, buf.dtype)
            self.comm.Recv(tmp, source=source, tag=tag)
        buf[...] = tmp

    def allgather(self, obj: Any) -> list:
        with self._status("a collective operation"):
            return self._allgather(obj)

    def _allgather(self, obj: Any) -> list:
        reqs = [self.comm.isend(obj, dest=q, tag=_COLL_TAG) for q in range(self.size) if q != self.rank]
        out = []
        for q in range(self.size):
            if q == self.rank:
                out.append(obj)
                continue
            self._wait(lambda q=q: self.comm.Iprobe(source=q, tag=_COLL_TAG), f"rank {q}'s part of a collective operation")
            out.append(self.comm.recv(source=q, tag=_COLL_TAG))
        self.wait_sends([(r, None) for r in reqs])
        return out

    def allreduce(self, arr: np.ndarray, op: str, deterministic: bool = False) -> np.ndarray:
        if deterministic:
            return super().allreduce(arr, op, True)
        src = np.ascontiguousarray(arr)
        out = np.empty_like(src)
        mop = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
        with self._status("an Allreduce"):
            req = self.comm.Iallreduce(src, out, op=mop)
            self._wait(req.Test, "an Allreduce")
        return out

    def notify_failure(self, text: str) -> None:
        """Tell every other rank this one failed (they raise DistributedError), then end the job."""
        for q in range(self.size):
            if q != self.rank:
                self.comm.isend(text[:2000], dest=q, tag=_ABORT_TAG)
        time.sleep(float(os.environ.get("TESSEL_MPI_GRACE", "2")))
        self.comm.Abort(1)


_WORLD: Comm | None = None
_LAUNCHED = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def world() -> Comm:
    """The communicator of this process: MPI's world under ``mpirun`` when mpi4py is present
    (initialised here, lazily), else one rank. Made once."""
    global _WORLD
    if _WORLD is not None:
        return _WORLD
    if not any(k in os.environ for k in _LAUNCHED):
        _WORLD = SelfComm()
        return _WORLD
    try:
        import mpi4py

        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = True
        from mpi4py import MPI
    except ImportError:
        warnings.warn("tessel.distributed: started by an MPI launcher but mpi4py is not installed "
                      "(pip install 'tessel[mpi]'); each process runs the whole program as one rank",
                      TesselWarning, stacklevel=2)
        _WORLD = SelfComm()
        return _WORLD
    if not MPI.Is_initialized():
        MPI.Init_thread(MPI.THREAD_FUNNELED)
    comm = MPIComm(MPI.COMM_WORLD, MPI)
    if comm.size > 1:
        _install_failure_hook(comm)
    _WORLD = comm
    return comm


def _install_failure_hook(comm: MPIComm) -> None:
    """An uncaught error on this rank ends every rank (a DistributedError there), not a hang."""
    previous = sys.excepthook

    def hook(kind, value, tb) -> None:
        previous(kind, value, tb)
        sys.stderr.flush()
        text = "".join(traceback.format_exception_only(kind, value)).strip()
        comm.notify_failure(text)

    sys.excepthook = hook
